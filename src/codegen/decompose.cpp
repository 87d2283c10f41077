// codegen: decompositions — the semantics every target shares, written once as UOp rules and
// rendered by every language as plain operators (see decompose in pipeline.hpp):
//   a / b, a % b on integers: by zero gives 0; signed MIN / -1 wraps to MIN and MIN % -1 is 0
//                  (x86 would trap on both, SPIR-V leaves them undefined):
//                    a / b -> where(b == 0, 0, where(b == -1, -a, a / where(bad, 1, b)))
//                    a % b -> where(bad, 0, a % where(bad, 1, b)),   bad = b == 0 | b == -1
//                  (unsigned: bad = b == 0); a constant divisor that is neither needs nothing,
//                  and index math (the kernel's own, in range by construction) is left alone.
//   a << s, a >> s: a shift by the type's width or more, or by a negative amount, gives 0, and
//                  -1 for a negative a shifted right (the interpreter's semantics, ir/interp.cpp):
//                    a << s -> where(ok, a << where(ok, s, 0), 0),   ok = 0 <= s < width
//                  (an amount whose bounds lie in [0, width) needs nothing).
//   max(a, b) on floats: NaN when either is (C's fmax and GLSL's max drop it, or may):
//                    max(a, b) -> where(a != a | b < a, a, b)
//   a / b on float32, where the target's division is not correctly rounded (!exact_division):
//                  b (and a with it) scaled by 2^-64 or 2^64 into [2^-85, 2^64], where 1 / b
//                  is a normal number; q = a * (1 / b), which is IEEE's answer for zeros,
//                  infinities and NaN; then one correction by the residual a - q b, computed
//                  exactly without fma (Dekker's product with Veltkamp's split):
//                    q' = q + (a - q b) * (1 / b),   kept where it is finite and the residual
//                  is not 0 (so an exact -0 stays -0); a quotient beyond 2^115 keeps q.
//   REDUCE(ADD, a * b) on float32, where the target fuses multiply-adds (fuse_multiply_add):
//                  REDUCE(MULACC, a * b), whose accumulator steps as MULACC(a, b, acc).
// A rewritten divisor or shift amount is where(_, 1, _) or where(_, _, 0), which the rules
// recognize as already guarded, so the rewrite reaches a fixed point.
#include <cmath>
#include <limits>
#include <utility>

#include "codegen/passes.hpp"
#include "ir/graph_rewrite.hpp"
#include "ir/upat.hpp"

namespace vkgrad {
namespace {

bool is_int(DType d) { return d.is_int() && d != dtypes::index; }

UOp guard_division(const Match& m) {
  const UOp& u = m.root();
  const DType d = u.dtype();
  const UOp &a = u.src(0), &b = u.src(1);
  if (!is_int(d)) return {};
  const bool is_signed = !d.is_unsigned();
  if (b.is_const() && !b.is_const(0) && !(is_signed && b.is_const(-1))) return {};
  if (b.op() == Ops::WHERE && b.src(1).is_const(1)) return {};  // guarded already
  const UOp zero = b.const_like(int64_t{0}), one = b.const_like(int64_t{1});
  const UOp is_zero = b.eq(zero);
  const UOp bad = is_signed ? is_zero.alu(Ops::OR, b.eq(b.const_like(int64_t{-1}))) : is_zero;
  const UOp safe = u.replace({a, bad.where(one, b)});
  if (u.op() == Ops::MOD) return bad.where(zero, safe);
  if (!is_signed) return is_zero.where(zero, safe);
  return is_zero.where(zero, b.eq(b.const_like(int64_t{-1})).where(a.alu(Ops::NEG), safe));
}

UOp guard_shift(const Match& m) {
  const UOp& u = m.root();
  const DType d = u.dtype();
  const UOp &a = u.src(0), &s = u.src(1);
  if (!is_int(d)) return {};
  if (s.op() == Ops::WHERE && s.src(2).is_const(0)) return {};  // guarded already
  const int64_t bits = d.itemsize() * 8;
  if (s.vmin() >= 0 && s.vmax() < bits) return {};
  const UOp zero = s.const_like(int64_t{0});
  UOp ok = s.lt(s.const_like(bits));
  if (!d.is_unsigned()) ok = ok.alu(Ops::AND, s.lt(zero).logical_not());
  const UOp shifted = u.replace({a, ok.where(s, zero)});
  UOp out_of_range = a.const_like(int64_t{0});
  if (u.op() == Ops::SHR && !d.is_unsigned())
    out_of_range = a.lt(a.const_like(int64_t{0})).where(a.const_like(int64_t{-1}), out_of_range);
  return ok.where(shifted, out_of_range);
}

// x = hi + lo exactly, hi with 12 significant bits (Veltkamp; |x| below 2^115).
std::pair<UOp, UOp> split(const UOp& x) {
  const UOp c = x * 4097.0;
  const UOp hi = c - (c - x);
  return {hi, x - hi};
}

UOp refine_division(const Match& m) {
  const UOp& u = m.root();
  if (u.dtype() != dtypes::float32) return {};
  const UOp &a = u.src(0), &b = u.src(1);
  const UOp mag = b.lt(0.0).where(-b, b);
  const UOp scale = b.scalar_like(std::ldexp(1.0, 64))
                        .lt(mag)
                        .where(b.scalar_like(std::ldexp(1.0, -64)),
                               mag.lt(std::ldexp(1.0, -64))
                                   .where(b.scalar_like(std::ldexp(1.0, 64)), b.scalar_like(1.0)));
  const UOp as = a * scale, bs = b * scale;
  const UOp y = bs.alu(Ops::RECIPROCAL);
  const UOp q = as * y;
  const UOp p = q * bs;
  const auto [qh, ql] = split(q);
  const auto [bh, bl] = split(bs);
  const UOp e = (((qh * bh - p) + qh * bl) + ql * bh) + ql * bl;  // q * bs = p + e exactly
  const UOp r = (as - p) - e;
  const UOp q1 = q + r * y;
  const double big = std::numeric_limits<float>::max();
  const UOp finite = q1.lt(big) & q1.scalar_like(-big).lt(q1);
  return (finite & r.ne(0.0)).where(q1, q);
}

UOp nan_max(const Match& m) {
  const UOp& u = m.root();
  if (u.dtype().count() != 1) return {};
  return float_max(u.src(0), u.src(1));
}

const PatternMatcher pm_decompose({
    rule(UPat::ops(OpSet{Ops::IDIV, Ops::MOD}), guard_division),
    rule(UPat::ops(OpSet{Ops::SHL, Ops::SHR}), guard_shift),
    rule(UPat::op(Ops::MAX).dtype(DTypeClass::floats), nan_max),
});

// For targets without Target::exact_division.
const PatternMatcher pm_refine_division({rule(UPat::op(Ops::FDIV), refine_division)});

UOp fuse_product_sum(const Match& m) {
  const UOp& r = m.root();
  const UOp& body = r.src(0);
  if (r.arg_as<Ops>() != Ops::ADD || r.dtype() != dtypes::float32 || body.op() != Ops::MUL)
    return {};
  return UOp::make(Ops::REDUCE, r.dtype(), {r.src().begin(), r.src().end()}, Ops::MULACC);
}

const PatternMatcher pm_fuse_multiply_add({rule(UPat::op(Ops::REDUCE), fuse_product_sum)});

}  // namespace

UOp float_max(const UOp& a, const UOp& b) { return (a.ne(a) | b.lt(a)).where(a, b); }

UOp decompose(const UOp& kernel, const Target& target) {
  const UOp guarded = graph_rewrite(kernel, pm_decompose, nullptr, {.name = "decompose"});
  if (target.exact_division) return guarded;
  return graph_rewrite(guarded, pm_refine_division, nullptr, {.name = "decompose division"});
}

UOp fuse_multiply_add(const UOp& kernel, const Target& target) {
  if (!target.fused_multiply_add) return kernel;
  return graph_rewrite(kernel, pm_fuse_multiply_add, nullptr, {.name = "fuse multiply-add"});
}

}  // namespace vkgrad
