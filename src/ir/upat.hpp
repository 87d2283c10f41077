// ir: UPat patterns and PatternMatcher, the one mechanism behind simplification, verification
// (spec) and lowering. Rules read `rule(pattern, replacement[, condition])`; a replacement is a
// template built from the pattern's captures, or a lambda where it must be computed. Commutative
// ops match their sources in any order, so commuted twins of a rule are never written.
// Depends on uop only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad {

enum class DTypeClass : uint8_t { any, ints, floats, bool_, ints_or_bool };
bool in_class(DType d, DTypeClass c);

struct UPatNode;

// An immutable pattern tree. Build them once, at namespace scope.
class UPat {
 public:
  // How a pattern's sources are matched against a node's.
  enum class SrcMode : uint8_t {
    exact,      // same count, in order
    any_order,  // same count, in some order (for commutative ops)
    prefix,     // the given ones in order, then anything
    each,       // any count, every source matches the one given pattern
    ignore,     // sources are not looked at
  };

  static UPat any();
  static UPat op(Ops op, std::vector<UPat> src);
  static UPat op(Ops op);  // any sources
  static UPat ops(OpSet ops, std::vector<UPat> src);
  static UPat ops(OpSet ops);
  // Any node, captured under `name`.
  static UPat var(std::string name, DTypeClass c = DTypeClass::any);
  // A CONST node, captured under `name`.
  static UPat cvar(std::string name, DTypeClass c = DTypeClass::any);
  // A CONST equal to v once v is converted to the node's dtype.
  static UPat const_(ConstValue v);

  UPat named(std::string name) const;
  UPat dtype(DType d) const;
  UPat dtype(DTypeClass c) const;
  UPat arg(Arg a) const;
  UPat any_order() const;                  // sources may match in any order
  UPat prefix() const;                     // extra trailing sources allowed
  static UPat op_each(Ops op, UPat each);  // any number of sources, all matching `each`

  // Pattern builders mirroring UOp's (templates use the same forms).
  UPat cast(DType d) const;
  UPat lt(const UPat& o) const;
  UPat ne(const UPat& o) const;
  UPat eq(const UPat& o) const;
  UPat maximum(const UPat& o) const;
  UPat where(const UPat& a, const UPat& b) const;
  UPat logical_not() const;
  UPat alu(Ops op, const UPat& o) const;

  const UPatNode& node() const { return *n_; }

 private:
  explicit UPat(std::shared_ptr<const UPatNode> n) : n_(std::move(n)) {}
  UPat with(const std::function<void(UPatNode&)>& f) const;
  std::shared_ptr<const UPatNode> n_;
};

struct UPatNode {
  std::optional<OpSet> ops;  // empty: any op
  std::optional<DType> dtype;
  DTypeClass dtype_class = DTypeClass::any;
  std::optional<Arg> arg;
  std::optional<ConstValue> value;  // CONST with this value
  std::vector<UPat> src;
  UPat::SrcMode mode = UPat::SrcMode::ignore;
  std::string name;  // capture name, empty if none
};

UPat operator+(const UPat& a, const UPat& b);
UPat operator-(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);
UPat operator/(const UPat& a, const UPat& b);  // IDIV (patterns are for integer math)
UPat operator%(const UPat& a, const UPat& b);
UPat operator&(const UPat& a, const UPat& b);
UPat operator|(const UPat& a, const UPat& b);
UPat operator^(const UPat& a, const UPat& b);
UPat operator<<(const UPat& a, const UPat& b);
UPat operator>>(const UPat& a, const UPat& b);
UPat operator-(const UPat& a);

#define VKGRAD_UPAT_SCALAR_OPERATOR(OP)                                   \
  template <class T>                                                      \
  requires std::is_arithmetic_v<T> UPat operator OP(const UPat& a, T b) { \
    return a OP UPat::const_(detail_upat::to_const(b));                   \
  }                                                                       \
  template <class T>                                                      \
  requires std::is_arithmetic_v<T> UPat operator OP(T a, const UPat& b) { \
    return UPat::const_(detail_upat::to_const(a)) OP b;                   \
  }
namespace detail_upat {
template <class T>
ConstValue to_const(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v;
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<double>(v);
  else
    return static_cast<int64_t>(v);
}
}  // namespace detail_upat
VKGRAD_UPAT_SCALAR_OPERATOR(+)
VKGRAD_UPAT_SCALAR_OPERATOR(-)
VKGRAD_UPAT_SCALAR_OPERATOR(*)
VKGRAD_UPAT_SCALAR_OPERATOR(/)
VKGRAD_UPAT_SCALAR_OPERATOR(%)
VKGRAD_UPAT_SCALAR_OPERATOR(&)
VKGRAD_UPAT_SCALAR_OPERATOR(|)
VKGRAD_UPAT_SCALAR_OPERATOR(^)
#undef VKGRAD_UPAT_SCALAR_OPERATOR

struct Rule;

// What a rule's lambda or condition sees: the captured nodes, the matched root, the context.
class Match {
 public:
  Match(const Rule& rule, const UOp& root, const UOp* const* slots, void* ctx)
      : rule_(rule), root_(root), slots_(slots), ctx_(ctx) {}
  // The node captured under the pattern's name (the pattern must be one with a name).
  const UOp& operator[](const UPat& named) const;
  const UOp& root() const { return root_; }
  template <class T>
  T& ctx() const {
    return *static_cast<T*>(ctx_);
  }
  void* raw_ctx() const { return ctx_; }

 private:
  const Rule& rule_;
  const UOp& root_;
  const UOp* const* slots_;
  void* ctx_;
};

using RewriteFn = std::function<UOp(const Match&)>;
using CondFn = std::function<bool(const Match&)>;

// A compiled pattern (or template): a flat tree whose captures are rule-local slot numbers.
struct CompiledPat {
  const UPatNode* node;
  int slot = -1;
  std::vector<int> children;  // indices into the rule's pattern vector
  bool choices = false;       // an any-order node in this subtree: it may match more than one way
};

struct Rule {
  std::string name;                      // "file.cpp:line" unless named
  std::vector<CompiledPat> pattern;      // [0] is the root
  std::vector<CompiledPat> replacement;  // template, or empty when `fn` is used
  std::vector<UPat> keep_alive;          // the UPat trees the compiled form points into
  std::vector<std::string> slot_names;
  std::vector<std::pair<const UPatNode*, int>> slot_nodes;  // fast lookup for Match::operator[]
  RewriteFn fn;
  CondFn cond;
  int slot_of(const UPatNode& named) const;
  Rule& named(std::string n) {
    name = std::move(n);
    return *this;
  }
};

inline constexpr int kMaxCaptures = 16;
// An any-order pattern tries every permutation of its sources: at most this many (8! tries).
inline constexpr size_t kMaxAnyOrder = 8;

Rule rule(const UPat& pattern, const UPat& replacement, CondFn cond = {},
          std::source_location loc = std::source_location::current());
Rule rule(const UPat& pattern, RewriteFn fn, CondFn cond = {},
          std::source_location loc = std::source_location::current());

class PatternMatcher {
 public:
  PatternMatcher() = default;
  explicit PatternMatcher(std::vector<Rule> rules);
  PatternMatcher operator+(const PatternMatcher& o) const;

  // The first rule (in list order) that matches `u` and produces a node different from `u`;
  // null when none does. `rule_index` (optional) receives which rule fired.
  UOp rewrite(const UOp& u, void* ctx = nullptr, int* rule_index = nullptr) const;
  // The result of the first rule that matches, even when it is `u` itself (for checkers).
  UOp first_match(const UOp& u, void* ctx = nullptr, int* rule_index = nullptr) const;
  const Rule& rule_at(int i) const { return rules_[i]; }
  size_t size() const { return rules_.size(); }

 private:
  void index();
  UOp apply(const UOp& u, void* ctx, int* rule_index, bool allow_same) const;
  std::vector<Rule> rules_;
  std::vector<std::vector<int>> by_op_;  // op -> rules whose root may match it, in order
};

}  // namespace vkgrad
