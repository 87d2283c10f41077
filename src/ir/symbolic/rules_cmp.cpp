// Comparisons and max. Comparisons that the operands' bounds decide fold in rules_const; these
// move constants and factors out of comparisons so that bounds (and later passes) see them. The
// rules that rely on ordering assume signed integers or index without overflow.
//   x < x -> False (every dtype: NaN < NaN is false)   x != x -> False, x == x -> True (not floats)
//   x + c0 < c1 -> x < c1-c0                  c0 < x + c1 -> c0-c1 < x
//   x*c0 < c1 -> x < ceil(c1/c0) (c0 > 0), floor(c1/c0) < x (c0 < 0)
//   c0 < x*c1 -> floor(c0/c1) < x (c1 > 0), x < ceil(c0/c1) (c1 < 0)
//   x//c0 < c1 -> x < c1*c0 (c1 > 0), x < (c1-1)*c0 + 1 (c1 <= 0)         c0 > 0, truncating
//   c0 < x//c1 -> (c0+1)*c1 - 1 < x (c0 >= 0), c0*c1 < x (c0 < 0)          c1 > 0, truncating
//   x*-1 < y*-1 -> y < x
//   d*q + p < c -> q < c/d when d divides c and every term of q's coefficients, 0 <= p < d
//   !(c < x) -> x < c+1
//   !(f0*v0 + f1*v1 + ... < 1) -> !(v0 + v1 + ... < 1) with f > 0, v >= 0 leaves (a simplex)
//   x + c0 != c1 -> x != c1-c0 (and ==; exact even where values wrap)
//   x*c0 != c1 -> x != c1/c0 when c0 divides c1, else True (and ==, giving False)
//   max(x, y) -> x when x >= y over their bounds            max(x, x) -> x
#include <limits>

#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/symbolic/terms.hpp"

namespace vkgrad {
namespace {

using i128 = __int128;
using symbolic::ceil_div;
using symbolic::fits;
using symbolic::floor_div;

const UPat x = UPat::var("x", DTypeClass::ints);
const UPat y = UPat::var("y", DTypeClass::ints);
const UPat xa = UPat::var("x");
const UPat xib = UPat::var("x", DTypeClass::ints_or_bool);
const UPat c0 = UPat::cvar("c0");
const UPat c1 = UPat::cvar("c1");
const UPat sum = UPat::op(Ops::ADD).named("sum");
// Results False and True, in the comparison's dtype (a vector compare gives a bool vector).
const UPat f = UPat::const_(false);
const UPat t = UPat::const_(true);

int64_t cval(const UOp& u) { return as_int(u.const_value()); }
DType operand(const Match& m) { return m.root().src(0).dtype(); }
bool signed_operands(const Match& m) { return symbolic::is_signed_int(operand(m)); }

// A comparison `lhs < rhs` of x against a constant k, if k fits x's dtype.
UOp lt_const(const UOp& x, i128 k) {
  return fits(x.dtype(), k) ? x.lt(x.const_like(int64_t(k))) : UOp();
}
UOp const_lt(i128 k, const UOp& x) {
  return fits(x.dtype(), k) ? x.const_like(int64_t(k)).lt(x) : UOp();
}

// x*c0 < c1 for integers: x < ceil(c1/c0) when c0 > 0; floor(c1/c0) < x when c0 < 0.
UOp mul_lt(const UOp& x, int64_t c0, int64_t c1) {
  if (c0 > 0) return lt_const(x, ceil_div(c1, c0));
  if (c0 == -1) return const_lt(-i128{c1}, x);
  if (c0 < 0) return const_lt(floor_div(c1, c0), x);
  return {};
}

// c0 < x*c1 for integers: floor(c0/c1) < x when c1 > 0; x < ceil(c0/c1) when c1 < 0.
UOp lt_mul(int64_t c0, const UOp& x, int64_t c1) {
  if (c1 > 0) return const_lt(floor_div(c0, c1), x);
  if (c1 == -1) return lt_const(x, -i128{c0});
  if (c1 < 0) return lt_const(x, ceil_div(c0, c1));
  return {};
}

// x//c0 < c1 with truncation, c0 > 0: for c1 > 0 it is x/c0 < c1; for c1 <= 0 it is
// ceil(x/c0) <= c1-1, i.e. x <= (c1-1)*c0.
UOp div_lt(const UOp& x, int64_t c0, int64_t c1) {
  if (c0 <= 0) return {};
  return lt_const(x, c1 > 0 ? i128{c1} * c0 : (i128{c1} - 1) * c0 + 1);
}

// c0 < x//c1 with truncation, c1 > 0: x//c1 >= c0+1; for c0 >= 0 that is x >= (c0+1)*c1, for
// c0 < 0 it is x/c1 > c0.
UOp lt_div(int64_t c0, const UOp& x, int64_t c1) {
  if (c1 <= 0) return {};
  return const_lt(c0 >= 0 ? (i128{c0} + 1) * c1 - 1 : i128{c0} * c1, x);
}

// d*q + p < c -> q < c/d (tinygrad's lt_folding): p are the terms with coefficient 1.
UOp lt_folding(const UOp& s, int64_t c) {
  symbolic::Sum sm = symbolic::split_sum(s);
  if (sm.constant != 0) return {};
  std::vector<symbolic::Term> p, q;
  int64_t d = c;
  for (const symbolic::Term& tm : sm.terms) {
    if (tm.coeff == 1) {
      p.push_back(tm);
    } else {
      q.push_back(tm);
      d = symbolic::gcd(d, tm.coeff);
    }
  }
  if (q.empty() || d <= 1) return {};
  symbolic::Bounds pb = symbolic::sum_bounds({p, 0});
  if (pb.lo < 0 || pb.hi >= d) return {};
  for (symbolic::Term& tm : q) tm.coeff /= d;
  return symbolic::build_sum(s.dtype(), q, 0).lt(s.const_like(c / d));
}

// !(X < 1) with X = f0*v0 + ... (f > 0, v >= 0 leaves) -> !(v0 + ... < 1): X > 0 iff some v > 0.
UOp simplex(const UOp& s) {
  symbolic::Sum sm = symbolic::split_sum(s);
  if (sm.constant != 0 || sm.terms.empty()) return {};
  bool changed = false;
  for (symbolic::Term& tm : sm.terms) {
    Ops op = tm.base.op();
    bool leaf = op == Ops::DEFINE_VAR || op == Ops::SPECIAL || op == Ops::RANGE;
    if (!leaf || tm.coeff <= 0 || tm.base.vmin() < 0) return {};
    changed |= tm.coeff != 1;
    tm.coeff = 1;
  }
  if (!changed) return {};
  return symbolic::build_sum(s.dtype(), sm.terms, 0).lt(s.const_like(int64_t{1})).logical_not();
}

// x*c0 (!= or ==) c1 -> x (!= or ==) c1/c0 when c0 divides c1; otherwise never equal.
UOp mul_eq(Ops op, const UOp& x, int64_t c0, int64_t c1) {
  if (c0 == 0 || (c0 == -1 && c1 == std::numeric_limits<int64_t>::min())) return {};
  if (c1 % c0 != 0) return UOp::const_(dtypes::bool_, op == Ops::CMPNE);
  return x.alu(op, x.const_like(c1 / c0));
}

// Conditions and computed replacements of the rules below.
bool moves_right(const Match& m) {
  return signed_operands(m) && fits(operand(m), i128{cval(m[c1])} - cval(m[c0]));
}
bool moves_left(const Match& m) {
  return signed_operands(m) && fits(operand(m), i128{cval(m[c0])} - cval(m[c1]));
}
bool below_max(const Match& m) {
  return symbolic::is_signed_int(m[x].dtype()) && cval(m[c0]) < dtypes::max_int(m[x].dtype());
}
bool signed_sum(const Match& m) { return symbolic::is_signed_int(m[sum].dtype()); }
bool above_bound(const Match& m) {
  return symbolic::is_signed_int(m[x].dtype()) && m[x].vmin() >= m[y].vmax();
}
UOp mul_lt_rule(const Match& m) { return mul_lt(m[x], cval(m[c0]), cval(m[c1])); }
UOp lt_mul_rule(const Match& m) { return lt_mul(cval(m[c0]), m[x], cval(m[c1])); }
UOp div_lt_rule(const Match& m) { return div_lt(m[x], cval(m[c0]), cval(m[c1])); }
UOp lt_div_rule(const Match& m) { return lt_div(cval(m[c0]), m[x], cval(m[c1])); }
UOp lt_folding_rule(const Match& m) { return lt_folding(m[sum], cval(m[c1])); }
UOp simplex_rule(const Match& m) { return simplex(m[sum]); }
UOp mul_ne_rule(const Match& m) { return mul_eq(Ops::CMPNE, m[x], cval(m[c0]), cval(m[c1])); }
UOp mul_eq_rule(const Match& m) { return mul_eq(Ops::CMPEQ, m[x], cval(m[c0]), cval(m[c1])); }

const UPat one = UPat::const_(int64_t{1});

}  // namespace

std::vector<Rule> rules_cmp() {
  return {
      // x < x -> False
      rule(xa.lt(xa), f),
      // x != x -> False ; x == x -> True
      rule(xib.ne(xib), f),
      rule(xib.eq(xib), t),
      // x + c0 < c1 -> x < c1-c0
      rule((x + c0).lt(c1), x.lt(c1 - c0), moves_right),
      // c0 < x + c1 -> c0-c1 < x
      rule(c0.lt(x + c1), (c0 - c1).lt(x), moves_left),
      // x*c0 < c1 -> x < ceil(c1/c0) or floor(c1/c0) < x
      rule((x * c0).lt(c1), mul_lt_rule, signed_operands),
      // c0 < x*c1 -> floor(c0/c1) < x or x < ceil(c0/c1)
      rule(c0.lt(x * c1), lt_mul_rule, signed_operands),
      // x//c0 < c1 -> x < c1*c0 or x < (c1-1)*c0 + 1
      rule((x / c0).lt(c1), div_lt_rule, signed_operands),
      // c0 < x//c1 -> (c0+1)*c1 - 1 < x or c0*c1 < x
      rule(c0.lt(x / c1), lt_div_rule, signed_operands),
      // x*-1 < y*-1 -> y < x
      rule((x * -1).lt(y * -1), y.lt(x), signed_operands),
      // d*q + p < c -> q < c/d
      rule(sum.lt(c1), lt_folding_rule, signed_operands),
      // !(c < x) -> x < c+1
      rule(c0.lt(x).logical_not(), x.lt(c0 + 1), below_max),
      // !(f0*v0 + ... < 1) -> !(v0 + ... < 1)
      rule(sum.lt(one).logical_not(), simplex_rule, signed_sum),
      // x + c0 != c1 -> x != c1-c0 ; x + c0 == c1 -> x == c1-c0
      rule((x + c0).ne(c1), x.ne(c1 - c0)),
      rule((x + c0).eq(c1), x.eq(c1 - c0)),
      // x*c0 != c1 -> x != c1/c0 or True ; x*c0 == c1 -> x == c1/c0 or False
      rule((x * c0).ne(c1), mul_ne_rule, signed_operands),
      rule((x * c0).eq(c1), mul_eq_rule, signed_operands),
      // max(x, y) -> x when x >= y
      rule(x.maximum(y), x, above_bound),
      // max(x, x) -> x
      rule(xa.maximum(xa), xa),
  };
}

}  // namespace vkgrad
