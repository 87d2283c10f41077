// Constant folding, identities that hold for every dtype, and canonical operand order.
//   op(c0, c1, ...) -> fold(op(c0, c1, ...))   (by the reference interpreter's exec_alu)
//   any integer or bool node whose bounds hold one value -> that value
//   x + 0 -> x (integers and bools: -0.0 + 0.0 is +0.0)     x * 1 -> x
//   x * 0 -> 0 (integers only: NaN * 0 is NaN)
//   b op a -> a op b for commutative ops when a comes first in the canonical order (constants
//   last). Integer sums and products are ordered as whole chains (rules_add, rules_mul).
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/symbolic/terms.hpp"

namespace vkgrad {
namespace {

const UPat x = UPat::var("x");
const UPat xi = UPat::var("x", DTypeClass::ints);
const UPat xib = UPat::var("x", DTypeClass::ints_or_bool);

UOp fold(const UOp& u) {
  if (u.dtype().count() != 1 || u.dtype().is_ptr()) return {};
  for (const UOp& s : u.src())
    if (!s.is_const()) return {};
  std::vector<ConstValue> vals;
  std::vector<DType> dts;
  for (const UOp& s : u.src()) {
    vals.push_back(s.const_value());
    dts.push_back(s.dtype());
  }
  try {
    return UOp::const_(u.dtype(), exec_alu(u.op(), u.dtype(), vals, dts));
  } catch (const Error&) {
    return {};  // e.g. division by zero: leave it for run time
  }
}

// Bounds decide only for integer and bool values computed from integers and bools: a float
// compare reports {0, 1}, but nothing here may rely on float bounds.
bool bounds_decide(const UOp& u) {
  if (u.dtype().count() != 1 || !(u.dtype().is_int() || u.dtype().is_bool())) return false;
  for (const UOp& s : u.src())
    if (s.dtype().is_float() || s.dtype().is_ptr()) return false;
  return u.vmin() == u.vmax();
}

// Integer ADD and MUL chains are put in order by rules_add / rules_mul.
bool ordered_as_chain(const UOp& u) {
  return (u.op() == Ops::ADD || u.op() == Ops::MUL) && u.dtype().is_int();
}

const UPat any_alu = UPat::ops(OpSet::group(kAlu) | OpSet{Ops::CAST, Ops::BITCAST}).named("u");
const UPat bounded =
    UPat::ops(OpSet::group(kAlu) | OpSet{Ops::DEFINE_VAR, Ops::SPECIAL, Ops::RANGE}).named("u");
const UPat commutative = UPat::ops(OpSet::group(kCommutative)).named("u");
const UPat zero = UPat::const_(int64_t{0});

UOp fold_rule(const Match& m) { return fold(m[any_alu]); }
bool one_value(const Match& m) { return bounds_decide(m[bounded]); }
UOp the_value(const Match& m) { return m[bounded].const_like(m[bounded].vmin()); }
bool unordered(const Match& m) {
  const UOp& u = m[commutative];
  return u.src().size() == 2 && !ordered_as_chain(u) && symbolic::order_less(u.src(1), u.src(0));
}
UOp swapped(const Match& m) {
  const UOp& u = m[commutative];
  return u.replace({u.src(1), u.src(0)});
}

}  // namespace

std::vector<Rule> rules_const() {
  return {
      // op(c0, c1, ...) -> its value
      rule(any_alu, fold_rule),
      // a node whose bounds hold one value v -> v
      rule(bounded, the_value, one_value),
      // x + 0 -> x
      rule(xib + 0, xib),
      // x * 1 -> x
      rule(x * 1, x),
      // x * 0 -> 0
      rule(xi * 0, zero),
      // b op a -> a op b when a < b in the canonical order
      rule(commutative, swapped, unordered),
  };
}

}  // namespace vkgrad
