// ir: UOp, the one node type of vkgrad's IR, and its argument type `Arg`.
// Exports UOp (a counted handle to an immutable, interned node), builder sugar, cached bounds.
// Depends on dtype and ops only; knows nothing of tensors, kernels or devices.
//
// Semantics (the reference interpreter in interp.hpp is the executable definition):
// - Integer ALU ops wrap modulo 2^bits (two's complement); `index` is 64-bit. The symbolic
//   simplifier assumes index math does not overflow (as tinygrad's does).
// - IDIV truncates toward zero and MOD takes the sign of the dividend, exactly like C:
//   -7 / 2 == -3 and -7 % 2 == -1. Division by zero is an error in the interpreter.
// - Float ALU ops are IEEE in the node's dtype (float32 math rounds each result to float32);
//   NaN and Inf propagate, nothing assumes fast-math.
// - Comparisons (CMPLT, CMPNE, CMPEQ) give bool; WHERE(c, a, b) picks a where c is true.
//
// Identity and memory: building the same (op, dtype, src, arg) twice returns the same node, so
// `a == b` is pointer equality (comparison *ops* are built with lt/eq/ne). A node lives while a
// UOp handle (or a parent node) refers to it; the intern table holds no reference, and a
// dropped graph of any depth is freed iteratively.
//
// Threads: creating nodes is thread-safe (the intern table is sharded, each shard under its own
// mutex; a node found dying is replaced, never revived). Nodes are immutable; their lazily
// computed bounds are published with atomics. A single UOp handle object is not safe to assign
// from two threads at once (like std::shared_ptr); copies of it may be used freely.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>
#include <vkgrad/dtype.hpp>

#include "ir/ops.hpp"

namespace vkgrad {

// DEFINE_VAR's argument: a named integer with inclusive bounds.
struct VarArg {
  std::string name;
  int64_t min = 0, max = 0;
  bool operator==(const VarArg&) const = default;
};

// What a loop (RANGE) or parallel axis is for; the optimizer and renderers read it. stage: the
// outer loop of a reduction whose inner steps read operand tiles a workgroup staged in shared
// memory (Opt STAGE).
enum class AxisType : uint8_t { global, local, loop, reduce, upcast, unroll, group_reduce, stage };
std::string_view axis_type_name(AxisType t);

// RANGE's argument: an axis number unique within a kernel, and its kind.
struct AxisArg {
  int64_t id = 0;
  AxisType type = AxisType::loop;
  bool operator==(const AxisArg&) const = default;
};

using IntTuple = std::vector<int64_t>;
using PairTuple = std::vector<std::pair<int64_t, int64_t>>;

// The closed set of node arguments. Doubles compare (and hash) by bit pattern, so NaN equals
// itself and -0.0 differs from 0.0 — interning must not merge values that behave differently.
using Arg = std::variant<std::monostate, bool, int64_t, double, Ops, std::string, IntTuple,
                         PairTuple, VarArg, AxisArg>;
bool arg_equal(const Arg& a, const Arg& b);
uint64_t arg_hash(const Arg& a);  // deterministic across runs (no pointers, no std::hash)

// A constant's value before it is given a dtype.
using ConstValue = std::variant<bool, int64_t, double>;

class UOpNode;

class UOp {
 public:
  UOp() noexcept = default;
  UOp(const UOp& o) noexcept : p_(o.p_) { retain(); }
  UOp(UOp&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  UOp& operator=(const UOp& o) noexcept {
    UOp(o).swap(*this);
    return *this;
  }
  UOp& operator=(UOp&& o) noexcept {
    UOp(std::move(o)).swap(*this);
    return *this;
  }
  ~UOp() { release(); }
  void swap(UOp& o) noexcept { std::swap(p_, o.p_); }

  explicit operator bool() const { return p_ != nullptr; }
  const UOpNode* get() const { return p_; }
  bool operator==(const UOp& o) const { return p_ == o.p_; }

  Ops op() const;
  DType dtype() const;
  const std::vector<UOp>& src() const;
  const UOp& src(size_t i) const;
  const Arg& arg() const;
  template <class T>
  const T& arg_as() const;
  // Structural hash: the same for the same structure in every run (used for canonical order).
  uint64_t key() const;

  // --- creation (interned) ---
  static UOp make(Ops op, DType dtype, std::vector<UOp> src = {}, Arg arg = {});
  // A constant of `dtype`; the value is converted to the dtype (wrapped for integers, rounded
  // for floats) so that equal constants intern to one node.
  static UOp const_(DType dtype, ConstValue v);
  UOp const_like(ConstValue v) const { return const_(dtype(), v); }
  static UOp variable(std::string name, int64_t min, int64_t max, DType dtype = dtypes::index);
  static UOp range(UOp end, int64_t id, AxisType type = AxisType::loop);
  static UOp range(int64_t end, int64_t id, AxisType type = AxisType::loop);
  static UOp special(std::string name, UOp size);
  static UOp sink(std::vector<UOp> src);
  static UOp define_global(DType ptr_dtype, int64_t slot);
  // Tensor-level view: INDEX(buf, idx[, valid]); LOAD(index); STORE(index, value).
  UOp index(UOp idx) const;
  UOp index(UOp idx, UOp valid) const;
  UOp load() const;
  UOp store(UOp value) const;
  UOp end(std::vector<UOp> ranges) const;
  UOp bind(int64_t value) const;  // BIND(DEFINE_VAR, CONST)
  UOp cast(DType dt) const;
  UOp bitcast(DType dt) const;
  UOp alu(Ops op, UOp other) const;
  UOp alu(Ops op) const;
  UOp where(UOp a, UOp b) const;  // this ? a : b
  UOp replace(std::vector<UOp> new_src) const;
  UOp replace(Ops op, DType dtype, std::vector<UOp> new_src, Arg arg) const;

  // Comparison and logic builders (== and != stay identity).
  UOp lt(const UOp& o) const;
  UOp le(const UOp& o) const;
  UOp gt(const UOp& o) const;
  UOp ge(const UOp& o) const;
  UOp eq(const UOp& o) const;
  UOp ne(const UOp& o) const;
  UOp logical_not() const;
  UOp maximum(const UOp& o) const;
  UOp minimum(const UOp& o) const;
  template <class T>
  requires std::is_arithmetic_v<T> UOp lt(T v)
  const { return lt(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp le(T v)
  const { return le(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp gt(T v)
  const { return gt(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp ge(T v)
  const { return ge(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp eq(T v)
  const { return eq(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp ne(T v)
  const { return ne(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp maximum(T v)
  const { return maximum(scalar_like(v)); }
  template <class T>
  requires std::is_arithmetic_v<T> UOp minimum(T v)
  const { return minimum(scalar_like(v)); }

  // A constant of this node's dtype (for `x + 3`).
  template <class T>
  requires std::is_arithmetic_v<T> UOp scalar_like(T v)
  const {
    if constexpr (std::is_same_v<T, bool>)
      return const_like(ConstValue{v});
    else if constexpr (std::is_floating_point_v<T>)
      return const_like(ConstValue{static_cast<double>(v)});
    else
      return const_like(ConstValue{static_cast<int64_t>(v)});
  }

  // --- constants ---
  bool is_const() const;
  ConstValue const_value() const;  // requires CONST
  // True when this is a CONST equal to v (compared in this node's dtype).
  bool is_const(int64_t v) const;

  // --- bounds (cached in the node): inclusive range of the value; integers and bool only.
  // Float dtypes report the int64 range (unknown). ---
  int64_t vmin() const;
  int64_t vmax() const;

  static size_t live_count();  // nodes alive right now, in all threads

 private:
  friend class UOpNode;
  friend struct InternTable;
  explicit UOp(const UOpNode* p) noexcept : p_(p) {}  // adopts one reference
  void retain() const noexcept;
  void release() noexcept;
  const UOpNode* p_ = nullptr;
};

// The node itself: fields are immutable once interned.
class UOpNode {
 public:
  const Ops op;
  const DType dtype;
  const std::vector<UOp> src;
  const Arg arg;
  const uint64_t key;

  UOpNode(const UOpNode&) = delete;
  UOpNode& operator=(const UOpNode&) = delete;

 private:
  friend class UOp;
  friend struct InternTable;
  friend struct BoundsCache;
  UOpNode(Ops op, DType dtype, std::vector<UOp> src, Arg arg, uint64_t key)
      : op(op), dtype(dtype), src(std::move(src)), arg(std::move(arg)), key(key) {}
  mutable std::atomic<uint32_t> refs_{1};
  mutable std::atomic<bool> bounds_ready_{false};
  mutable std::atomic<int64_t> vmin_{0}, vmax_{0};
};

inline void UOp::retain() const noexcept {
  if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
}
inline Ops UOp::op() const { return p_->op; }
inline DType UOp::dtype() const { return p_->dtype; }
inline const std::vector<UOp>& UOp::src() const { return p_->src; }
inline const UOp& UOp::src(size_t i) const { return p_->src[i]; }
inline const Arg& UOp::arg() const { return p_->arg; }
inline uint64_t UOp::key() const { return p_->key; }
template <class T>
const T& UOp::arg_as() const {
  return std::get<T>(p_->arg);
}
inline bool UOp::is_const() const { return p_ && p_->op == Ops::CONST; }

// Arithmetic builders. Integers divide with IDIV (truncating), floats with FDIV. `a - b` is
// built as a + b*-1 and `-a` as a*-1 (tinygrad's forms, which the simplifier understands).
UOp operator+(const UOp& a, const UOp& b);
UOp operator-(const UOp& a, const UOp& b);
UOp operator*(const UOp& a, const UOp& b);
UOp operator/(const UOp& a, const UOp& b);
UOp operator%(const UOp& a, const UOp& b);
UOp operator&(const UOp& a, const UOp& b);
UOp operator|(const UOp& a, const UOp& b);
UOp operator^(const UOp& a, const UOp& b);
UOp operator<<(const UOp& a, const UOp& b);
UOp operator>>(const UOp& a, const UOp& b);
UOp operator-(const UOp& a);

#define VKGRAD_UOP_SCALAR_OPERATOR(OP)                                  \
  template <class T>                                                    \
  requires std::is_arithmetic_v<T> UOp operator OP(const UOp& a, T b) { \
    return a OP a.scalar_like(b);                                       \
  }                                                                     \
  template <class T>                                                    \
  requires std::is_arithmetic_v<T> UOp operator OP(T a, const UOp& b) { \
    return b.scalar_like(a) OP b;                                       \
  }
VKGRAD_UOP_SCALAR_OPERATOR(+)
VKGRAD_UOP_SCALAR_OPERATOR(-)
VKGRAD_UOP_SCALAR_OPERATOR(*)
VKGRAD_UOP_SCALAR_OPERATOR(/)
VKGRAD_UOP_SCALAR_OPERATOR(%)
VKGRAD_UOP_SCALAR_OPERATOR(&)
VKGRAD_UOP_SCALAR_OPERATOR(|)
VKGRAD_UOP_SCALAR_OPERATOR(^)
VKGRAD_UOP_SCALAR_OPERATOR(<<)
VKGRAD_UOP_SCALAR_OPERATOR(>>)
#undef VKGRAD_UOP_SCALAR_OPERATOR

// Called (on the releasing thread, outside any lock) just before a BUFFER node is freed, so the
// engine can release the storage that node names. Must not throw.
using BufferFreeHook = void (*)(const UOpNode& buffer) noexcept;
void set_buffer_free_hook(BufferFreeHook hook);

struct UOpHash {
  size_t operator()(const UOp& u) const { return std::hash<const void*>()(u.get()); }
};

// Children before parents, each node once, in a deterministic order (sources left to right).
// Iterative: graphs of any depth.
std::vector<UOp> toposort(const UOp& root);
std::vector<UOp> toposort(std::span<const UOp> roots);

}  // namespace vkgrad
