// ir: the operation enum `Ops` (generated from ops.def) and its groups (unary, binary, ALU,
// commutative, ...). Depends on nothing.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace vkgrad {

enum OpGroup : uint32_t {
  kUnary = 1u << 0,
  kBinary = 1u << 1,
  kTernary = 1u << 2,
  kAlu = 1u << 3,
  kCommutative = 1u << 4,
  kAssociative = 1u << 5,
  kComparison = 1u << 6,
  kMovement = 1u << 7,
  kIdempotent = 1u << 8,
};

enum class Ops : uint8_t {
#define VKGRAD_OP(name, groups) name,
#include "ir/ops.def"
#undef VKGRAD_OP
};

inline constexpr int kNumOps = 0
#define VKGRAD_OP(name, groups) +1
#include "ir/ops.def"
#undef VKGRAD_OP
    ;

namespace detail {
inline constexpr std::array<uint32_t, kNumOps> kOpGroups = {
#define VKGRAD_OP(name, groups) static_cast<uint32_t>(groups),
#include "ir/ops.def"
#undef VKGRAD_OP
};
inline constexpr std::array<std::string_view, kNumOps> kOpNames = {
#define VKGRAD_OP(name, groups) #name,
#include "ir/ops.def"
#undef VKGRAD_OP
};
}  // namespace detail

constexpr std::string_view op_name(Ops op) { return detail::kOpNames[static_cast<size_t>(op)]; }
constexpr bool in_group(Ops op, uint32_t group) {
  return (detail::kOpGroups[static_cast<size_t>(op)] & group) != 0;
}
constexpr bool is_unary(Ops op) { return in_group(op, kUnary); }
constexpr bool is_binary(Ops op) { return in_group(op, kBinary); }
constexpr bool is_ternary(Ops op) { return in_group(op, kTernary); }
constexpr bool is_alu(Ops op) { return in_group(op, kAlu); }
constexpr bool is_commutative(Ops op) { return in_group(op, kCommutative); }
constexpr bool is_associative(Ops op) { return in_group(op, kAssociative); }
constexpr bool is_comparison(Ops op) { return in_group(op, kComparison); }
constexpr bool is_movement(Ops op) { return in_group(op, kMovement); }
constexpr bool is_idempotent(Ops op) { return in_group(op, kIdempotent); }

// A set of ops, for patterns that match several (e.g. any comparison).
class OpSet {
 public:
  constexpr OpSet() = default;
  OpSet(std::initializer_list<Ops> ops) {
    for (Ops o : ops) bits_.set(static_cast<size_t>(o));
  }
  static OpSet group(uint32_t g) {
    OpSet s;
    for (int i = 0; i < kNumOps; ++i)
      if (detail::kOpGroups[i] & g) s.bits_.set(i);
    return s;
  }
  static OpSet all() {
    OpSet s;
    s.bits_.set();
    return s;
  }
  bool contains(Ops o) const { return bits_.test(static_cast<size_t>(o)); }
  bool empty() const { return bits_.none(); }
  OpSet operator|(const OpSet& o) const {
    OpSet s;
    s.bits_ = bits_ | o.bits_;
    return s;
  }
  bool operator==(const OpSet&) const = default;

 private:
  std::bitset<kNumOps> bits_;
};

}  // namespace vkgrad
