// Constant folding and identities.
//   op(c0, c1, ...)  -> fold(op(c0, c1, ...))   (by the reference interpreter's exec_alu)
//   x + 0 -> x        x * 1 -> x        x * 0 -> 0 (integers only: NaN * 0 is NaN)
//   any integer or bool node whose bounds are one value -> that constant
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

const UPat x = UPat::var("x");
const UPat xi = UPat::var("x", DTypeClass::ints);

UOp fold(const UOp& u) {
  if (!is_alu(u.op()) && u.op() != Ops::CAST && u.op() != Ops::BITCAST) return {};
  if (u.dtype().count() != 1 || u.dtype().is_ptr()) return {};
  std::vector<ConstValue> vals;
  std::vector<DType> dts;
  for (const UOp& s : u.src()) {
    if (!s.is_const()) return {};
    vals.push_back(s.const_value());
    dts.push_back(s.dtype());
  }
  try {
    return UOp::const_(u.dtype(), exec_alu(u.op(), u.dtype(), vals, dts));
  } catch (const Error&) {
    return {};  // e.g. division by zero: leave it for run time
  }
}

const UPat any_alu = UPat::ops(OpSet::group(kAlu) | OpSet{Ops::CAST, Ops::BITCAST}).named("u");

}  // namespace

std::vector<Rule> rules_const() {
  return {
      rule(any_alu, [](const Match& m) { return fold(m[any_alu]); }),
      rule(x + 0, x),
      rule(x * 1, x),
      rule(xi * 0, UPat::const_(int64_t{0})),
  };
}

}  // namespace vkgrad
