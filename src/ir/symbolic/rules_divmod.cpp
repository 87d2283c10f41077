// Division and modulo. IDIV truncates toward zero and MOD takes the dividend's sign (C), so most
// floor-division identities hold only for a nonnegative dividend: each rule states the bounds it
// needs, and the ones that hold for any sign say so. Rules that reason with bounds apply to
// signed integers and index only (they assume no overflow, as tinygrad's do).
//   x // 1 -> x        x % 1 -> 0        x // -1 -> -x        x % -1 -> 0
//   x // x -> 1        x % x -> 0        (x*y) // y -> x      (x*y) % y -> 0      (x%y) % y -> x%y
//   x // y -> q, x % y -> x - q*y        when x/y truncates to one q over all of x's and y's bounds
//   x // y -> -(x // -y), x % y -> x % -y                          when y < 0
//   x // y -> -((-x) // y), x % y -> -((-x) % y)                   when x <= 0 < y
//   (x // c0) // c1 -> x // (c0*c1)                                c0, c1 > 0 (any sign of x)
//   (x % c0) // c1 -> (x // c1) % (c0 // c1)                       c1 | c0 (any sign of x)
//   (x % c0) % c1 -> x % c1                                        c1 | c0 (any sign of x)
//   (x // c0 + a) // c1 -> (x + a*c0) // (c0*c1)                   x >= 0, x//c0 + a >= 0
// Sums divided by a constant c > 0, x = f0*v0 + f1*v1 + ... + C (tinygrad's divandmod):
//   exact:    (g*a) // (g*b) -> a // b, (g*a) % (g*b) -> (a % b)*g, g = gcd(f.., C, c) (any sign)
//   binary:   a single term v that takes two values: x op c is linear in v (any sign)
//   nested:   (a%(k*c) + b) % c -> (a + b) % c                     both sums >= 0
//   congruence: x is congruent to r0*v0 + r1*v1 + ... + C%c (r = f mod c, the smaller in size);
//             when that stays in one bucket [k*c, k*c+c), x % c and x // c have no division left
//                                                                  x >= 0
//   gcd:      (g*a + C) op c with g = gcd(f.., c): (a + C/g) op (c/g) with the remainder C%g
//             carried outside                                       x >= 0
//   factor:   x // c -> (x // f) // (c/f) for a factor f | c of some term when x // f folds;
//             x % c -> ((x // f) % (c/f))*f + x%f when x%f folds    x >= 0
//   remainder: (a*y + b) // y -> a + b // y, (a*y + b) % y -> b % y (y a constant or a variable
//             divisor, coefficients split by floor division)        x >= 0, b >= 0, y > 0
// Sums holding both halves of a division (any sign, any integer dtype; C's definition of %):
//   (x // c)*(c*k) + (x % c)*k -> x*k        (x // y)*y*k + (x % y)*k -> x*k
#include <limits>
#include <set>

#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/symbolic/terms.hpp"

namespace vkgrad {
namespace {

using i128 = __int128;
using symbolic::Bounds;
using symbolic::build_sum;
using symbolic::floor_div;
using symbolic::floor_mod;
using symbolic::Sum;
using symbolic::Term;

const UPat x = UPat::var("x", DTypeClass::ints);
const UPat y = UPat::var("y", DTypeClass::ints);
const UPat a = UPat::var("a", DTypeClass::ints);
const UPat c0 = UPat::cvar("c0");
const UPat c1 = UPat::cvar("c1");
const UPat zero = UPat::const_(int64_t{0});
const UPat one = UPat::const_(int64_t{1});
const UPat div_mod = UPat::ops(OpSet{Ops::IDIV, Ops::MOD}, {x, y}).named("d");
const UPat int_add = UPat::op(Ops::ADD).dtype(DTypeClass::ints).named("root");
const UPat n = (x / c0 + a).named("n");

int64_t cval(const UOp& u) { return as_int(u.const_value()); }
bool signed_int(const Match& m) { return symbolic::is_signed_int(m.root().dtype()); }

i128 floor_div128(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// x op y (IDIV or MOD), built; the rewriter simplifies what a rule returns.
UOp divmod(Ops op, const UOp& x, const UOp& y) { return x.alu(op, y); }
UOp divmod(Ops op, const UOp& x, int64_t c) { return x.alu(op, x.const_like(c)); }

// ---------------------------------------------------------------- bounds decide the quotient

UOp cancel_divmod(const UOp& d) {
  const UOp& x = d.src(0);
  const UOp& y = d.src(1);
  int64_t xlo = x.vmin(), xhi = x.vmax(), ylo = y.vmin(), yhi = y.vmax();
  if (ylo <= 0 && yhi >= 0) return {};
  if (xlo == std::numeric_limits<int64_t>::min() && (ylo == -1 || yhi == -1)) return {};
  // Truncating division is monotonic in x for a fixed y, and in y (of one sign) for a fixed x,
  // so equal quotients at the four corners mean one quotient over the whole box.
  int64_t q = xlo / ylo;
  if (xlo / yhi != q || xhi / ylo != q || xhi / yhi != q) return {};
  if (d.op() == Ops::IDIV) return d.const_like(q);
  return q == 0 ? x : x - y * q;
}

// ---------------------------------------------------------------- sums over a constant

// x op c with c > 0 a constant, x split into terms.
struct Division {
  Ops op;
  UOp x;
  int64_t c;
  DType dt;
  Sum s;
};

std::optional<Division> const_division(const UOp& d) {
  if (!symbolic::is_signed_int(d.dtype()) || !d.src(1).is_const()) return std::nullopt;
  int64_t c = cval(d.src(1));
  if (c <= 1) return std::nullopt;
  return Division{d.op(), d.src(0), c, d.dtype(), symbolic::split_sum(d.src(0))};
}

bool fits_all(DType dt, std::initializer_list<i128> vs) {
  for (i128 v : vs)
    if (!symbolic::fits(dt, v)) return false;
  return true;
}

// exact: every factor, the constant and c share g.
UOp fold_exact(const Division& v) {
  int64_t g = symbolic::gcd(v.c, v.s.constant);
  for (const Term& t : v.s.terms) g = symbolic::gcd(g, t.coeff);
  if (g <= 1 || v.s.terms.empty()) return {};
  std::vector<Term> terms;
  for (const Term& t : v.s.terms) terms.push_back({t.base, t.coeff / g});
  UOp nx = build_sum(v.dt, terms, v.s.constant / g);
  if (v.op == Ops::IDIV) return g == v.c ? nx : divmod(Ops::IDIV, nx, v.c / g);
  return g == v.c ? v.x.const_like(int64_t{0}) : divmod(Ops::MOD, nx, v.c / g) * g;
}

// binary: one term f*v with v in {lo, lo+1}: x op c = (y1 - y0)*(v - lo) + y0.
UOp fold_binary(const Division& v) {
  if (v.s.terms.size() != 1) return {};
  const Term& t = v.s.terms[0];
  i128 lo = t.base.vmin(), hi = t.base.vmax();
  if (hi - lo != 1) return {};
  i128 n0 = t.coeff * lo + v.s.constant, n1 = t.coeff * hi + v.s.constant;
  if (!fits_all(v.dt, {n0, n1})) return {};
  auto at = [&](i128 n) {
    int64_t k = static_cast<int64_t>(n);
    return v.op == Ops::IDIV ? k / v.c : k % v.c;
  };
  i128 y0 = at(n0), y1 = at(n1), slope = y1 - y0, constant = y0 - slope * lo;
  if (!fits_all(v.dt, {slope, constant})) return {};
  return build_sum(v.dt, {{t.base, static_cast<int64_t>(slope)}}, static_cast<int64_t>(constant));
}

// nested: a%k inside a sum taken % c, with c | k, is a modulo c.
UOp fold_nested_mod(const Division& v) {
  if (v.op != Ops::MOD || v.x.vmin() < 0) return {};
  Sum ns = v.s;
  bool changed = false;
  for (Term& t : ns.terms) {
    const UOp& b = t.base;
    if (b.op() == Ops::MOD && b.src(1).is_const() && cval(b.src(1)) != 0 &&
        cval(b.src(1)) % v.c == 0) {
      t.base = b.src(0);
      changed = true;
    }
  }
  if (!changed || symbolic::sum_bounds(ns).lo < 0) return {};
  return divmod(Ops::MOD, build_sum(v.dt, ns.terms, ns.constant), v.c);
}

// congruence: rem = sum r_i*v_i + C mod c within one bucket [k*c, k*c + c).
UOp fold_congruence(const Division& v) {
  if (v.x.vmin() < 0) return {};
  const size_t n = v.s.terms.size();
  std::vector<int64_t> pick(n);
  std::vector<size_t> ties;  // terms where r and r - c are the same size: try both
  for (size_t i = 0; i < n; ++i) {
    int64_t r = floor_mod(v.s.terms[i].coeff, v.c);
    if (2 * static_cast<i128>(r) == v.c) ties.push_back(i);
    pick[i] = 2 * static_cast<i128>(r) <= v.c ? r : r - v.c;
  }
  const int64_t cm = floor_mod(v.s.constant, v.c);
  const size_t combos = size_t{1} << std::min<size_t>(ties.size(), 6);
  for (size_t combo = 0; combo < combos; ++combo) {
    std::vector<int64_t> r = pick;
    for (size_t b = 0; b < ties.size() && b < 6; ++b)
      if (combo >> b & 1) r[ties[b]] -= v.c;
    Bounds rb{cm, cm};
    for (size_t i = 0; i < n; ++i) {
      Bounds tb = symbolic::term_bounds({v.s.terms[i].base, r[i]});
      rb.lo += tb.lo;
      rb.hi += tb.hi;
    }
    i128 k = floor_div128(rb.lo, v.c);
    if (k != floor_div128(rb.hi, v.c)) continue;
    std::vector<Term> terms;
    i128 constant;
    if (v.op == Ops::MOD) {
      for (size_t i = 0; i < n; ++i) terms.push_back({v.s.terms[i].base, r[i]});
      constant = cm - k * v.c;
    } else {
      for (size_t i = 0; i < n; ++i)
        terms.push_back({v.s.terms[i].base, (v.s.terms[i].coeff - r[i]) / v.c});
      constant = floor_div(v.s.constant, v.c) + k;
    }
    if (!symbolic::fits(v.dt, constant)) return {};
    return build_sum(v.dt, terms, static_cast<int64_t>(constant));
  }
  return {};
}

// gcd: x = g*a + C with g = gcd(f.., c) > 1; (a + (C div g) mod (c/g)) op (c/g), C mod g outside.
UOp fold_gcd_remainder(const Division& v) {
  if (v.x.vmin() < 0 || v.s.terms.empty()) return {};
  int64_t g = v.c;
  for (const Term& t : v.s.terms) g = symbolic::gcd(g, t.coeff);
  if (g <= 1) return {};
  const int64_t m = v.c / g, c1 = floor_div(v.s.constant, g), c0 = floor_mod(v.s.constant, g);
  Sum ns{{}, floor_mod(c1, m)};
  for (const Term& t : v.s.terms) ns.terms.push_back({t.base, t.coeff / g});
  if (symbolic::sum_bounds(ns).lo < 0) return {};
  UOp nx = build_sum(v.dt, ns.terms, ns.constant);
  if (v.op == Ops::MOD) return divmod(Ops::MOD, nx, m) * g + c0;
  return divmod(Ops::IDIV, nx, m) + floor_div(v.s.constant, v.c);
}

UOp fold_factor_remainder(Ops op, const UOp& x, const UOp& y);
UOp fold_const_div(const Division& v);

// Does `q` hold a division or modulo term that x's sum did not? nest_by_factor must not use such
// an inner result: (x + a*c0) // (c0*c1) would become (x//c0 + a) // c1, which the rule
// (x // c0 + a) // c1 turns back.
bool adds_division_terms(const UOp& q, const Sum& x) {
  for (const Term& t : symbolic::split_sum(q).terms) {
    if (t.base.op() != Ops::IDIV && t.base.op() != Ops::MOD) continue;
    bool old = std::any_of(x.terms.begin(), x.terms.end(),
                           [&](const Term& u) { return u.base == t.base; });
    if (!old) return true;
  }
  return false;
}

// factor: go through a smaller divisor f that divides c, when x // f folds.
UOp fold_nest_by_factor(const Division& v) {
  if (v.x.vmin() < 0) return {};
  std::set<int64_t> factors;
  for (const Term& t : v.s.terms) {
    int64_t f = t.coeff < 0 ? -t.coeff : t.coeff;
    if (f > 1 && f < v.c && v.c % f == 0) factors.insert(f);
  }
  UOp best;
  size_t best_size = 0;
  for (int64_t f : factors) {
    Division inner{Ops::IDIV, v.x, f, v.dt, v.s};
    UOp q = fold_const_div(inner);
    if (!q || q.vmin() < 0 || adds_division_terms(q, v.s)) continue;
    UOp cand;
    if (v.op == Ops::IDIV) {
      cand = divmod(Ops::IDIV, q, v.c / f);
    } else {
      Sum b{{}, floor_mod(v.s.constant, f)};
      for (const Term& t : v.s.terms) b.terms.push_back({t.base, floor_mod(t.coeff, f)});
      Bounds bb = symbolic::sum_bounds(b);
      if (bb.lo < 0 || bb.hi >= f) continue;
      cand = divmod(Ops::MOD, q, v.c / f) * f + build_sum(v.dt, b.terms, b.constant);
    }
    size_t size = symbolic::node_count(cand);
    if (!best || size < best_size) {
      best = cand;
      best_size = size;
    }
  }
  return best;
}

// x // c by the sum rules above, for nest_by_factor's inner division.
UOp fold_const_div(const Division& v) {
  for (auto fold :
       {fold_exact, fold_binary, fold_congruence, fold_gcd_remainder, fold_nest_by_factor})
    if (UOp r = fold(v)) return r;
  return fold_factor_remainder(v.op, v.x, v.x.const_like(v.c));
}

// `base` with one factor `y` taken out of its product; null if y is not a factor. A base equal
// to y leaves the constant 1.
UOp without_factor(const UOp& base, const UOp& y) {
  if (base == y) return base.const_like(int64_t{1});
  if (base.op() != Ops::MUL) return {};
  std::vector<UOp> factors = symbolic::split_product(base);
  auto it = std::find(factors.begin(), factors.end(), y);
  if (it == factors.end()) return {};
  factors.erase(it);
  return symbolic::build_product(factors);
}

// remainder: x = y*q + b with b >= 0 (x >= 0, y > 0): x // y = q + b // y, x % y = b % y.
UOp fold_factor_remainder(Ops op, const UOp& x, const UOp& y) {
  if (!symbolic::is_signed_int(x.dtype()) || x.vmin() < 0 || y.vmin() <= 0) return {};
  DType dt = x.dtype();
  Sum s = symbolic::split_sum(x);
  std::vector<Term> quo, rem;
  int64_t qc = 0, rc = s.constant;
  if (y.is_const()) {
    int64_t c = cval(y);
    for (const Term& t : s.terms) {
      if (int64_t q = floor_div(t.coeff, c)) quo.push_back({t.base, q});
      rem.push_back({t.base, floor_mod(t.coeff, c)});
    }
    qc = floor_div(s.constant, c);
    rc = floor_mod(s.constant, c);
  } else {
    for (const Term& t : s.terms) {
      if (UOp q = without_factor(t.base, y)) {
        if (q.is_const())
          qc += t.coeff;
        else
          quo.push_back({q, t.coeff});
      } else {
        rem.push_back(t);
      }
    }
  }
  if (quo.empty() && qc == 0) return {};
  Sum ns{rem, rc};
  if (symbolic::sum_bounds(ns).lo < 0) return {};
  UOp nx = build_sum(dt, rem, rc);
  if (op == Ops::MOD) return divmod(Ops::MOD, nx, y);
  return divmod(Ops::IDIV, nx, y) + build_sum(dt, quo, qc);
}

// ---------------------------------------------------------------- both halves in one sum

// (x // y) and (x % y) as the base of a term: the pair (x, y) and, for a base (x // y)*y, true.
struct Half {
  Ops op;
  UOp x, y;
  bool times_y;
};
std::optional<Half> as_half(const UOp& base) {
  if (base.op() == Ops::IDIV || base.op() == Ops::MOD)
    return Half{base.op(), base.src(0), base.src(1), false};
  if (base.op() == Ops::MUL)
    for (int i : {0, 1}) {
      const UOp& q = base.src(i);
      if (q.op() == Ops::IDIV && base.src(1 - i) == q.src(1) && !q.src(1).is_const())
        return Half{Ops::IDIV, q.src(0), q.src(1), true};
    }
  return std::nullopt;
}

// Does a canonical sum hold a term whose base is a MOD? (A cheap look before splitting it.)
bool holds_mod_term(const UOp& root) {
  auto is_mod_term = [](const UOp& t) {
    return t.op() == Ops::MOD || (t.op() == Ops::MUL && t.src(0).op() == Ops::MOD);
  };
  const UOp* n = &root;
  for (; n->op() == Ops::ADD; n = &n->src(0))
    if (is_mod_term(n->src(1)) || n->src(1).op() == Ops::ADD) return true;
  return is_mod_term(*n);
}

UOp fold_div_mod_pairs(const UOp& root) {
  if (!holds_mod_term(root)) return {};
  Sum s = symbolic::split_sum(root);
  for (size_t i = 0; i < s.terms.size(); ++i) {
    auto q = as_half(s.terms[i].base);
    if (!q || q->op != Ops::IDIV) continue;
    for (size_t j = 0; j < s.terms.size(); ++j) {
      auto r = as_half(s.terms[j].base);
      if (!r || r->op != Ops::MOD || r->x != q->x || r->y != q->y) continue;
      // quotient coefficient must be y times the remainder's
      const int64_t k = s.terms[j].coeff;
      bool match = q->times_y ? s.terms[i].coeff == k
                              : q->y.is_const() && static_cast<i128>(k) * cval(q->y) ==
                                                       static_cast<i128>(s.terms[i].coeff);
      if (!match) continue;
      std::vector<Term> terms;
      for (size_t t = 0; t < s.terms.size(); ++t)
        if (t != i && t != j) terms.push_back(s.terms[t]);
      terms.push_back({q->x, k});
      return build_sum(root.dtype(), terms, s.constant);
    }
  }
  // (x // a % b) * a k + (x % a) * k -> (x % (a b)) * k for constants a, b > 0 (C's truncating
  // division keeps it for either sign of x): two digits of a flat index put back together (a
  // GEMM's column split into a conv weight's c, ky, kx), which the pairs above then meet with
  // x // (a b).
  for (size_t i = 0; i < s.terms.size(); ++i) {
    const UOp& digit = s.terms[i].base;
    if (digit.op() != Ops::MOD || !digit.src(1).is_const() || digit.src(0).op() != Ops::IDIV ||
        !digit.src(0).src(1).is_const())
      continue;
    const UOp& x = digit.src(0).src(0);
    const int64_t a = cval(digit.src(0).src(1)), b = cval(digit.src(1));
    if (a <= 0 || b <= 0 || !symbolic::fits(root.dtype(), i128{a} * b)) continue;
    for (size_t j = 0; j < s.terms.size(); ++j) {
      const UOp& low = s.terms[j].base;
      const int64_t k = s.terms[j].coeff;
      if (j == i || low.op() != Ops::MOD || low.src(0) != x || !low.src(1).is_const() ||
          cval(low.src(1)) != a || i128{k} * a != i128{s.terms[i].coeff})
        continue;
      std::vector<Term> terms;
      for (size_t t = 0; t < s.terms.size(); ++t)
        if (t != i && t != j) terms.push_back(s.terms[t]);
      terms.push_back({divmod(Ops::MOD, x, a * b), k});
      return build_sum(root.dtype(), terms, s.constant);
    }
  }
  return {};
}

// ---------------------------------------------------------------- the rules

// The sum rules, in the order they are tried (one rule, so the sum is split once).
UOp fold_sum_by_const(const Match& m) {
  auto v = const_division(m[div_mod]);
  if (!v) return {};
  for (auto fold : {fold_exact, fold_binary, fold_nested_mod, fold_congruence, fold_gcd_remainder,
                    fold_nest_by_factor})
    if (UOp r = fold(*v)) return r;
  return {};
}

bool divisor_negative(const Match& m) { return signed_int(m) && m[y].vmax() < 0; }
bool dividend_nonpositive(const Match& m) {
  return signed_int(m) && !m[x].is_const() && m[x].vmax() <= 0 && m[y].vmin() > 0;
}
bool positive_pair(const Match& m) {
  int64_t a = cval(m[c0]), b = cval(m[c1]);
  return signed_int(m) && a > 0 && b > 0 && symbolic::fits(m.root().dtype(), i128{a} * b);
}
bool divides_first(const Match& m) {
  int64_t a = cval(m[c0]), b = cval(m[c1]);
  return signed_int(m) && a > 0 && b > 0 && a % b == 0;
}
bool nonnegative_nested(const Match& m) {
  return positive_pair(m) && m[x].vmin() >= 0 && m[n].vmin() >= 0;
}
UOp cancel_rule(const Match& m) { return cancel_divmod(m[div_mod]); }
UOp remainder_rule(const Match& m) { return fold_factor_remainder(m.root().op(), m[x], m[y]); }
UOp pairs_rule(const Match& m) { return fold_div_mod_pairs(m[int_add]); }

}  // namespace

std::vector<Rule> rules_divmod() {
  return {
      // x // 1 -> x ; x % 1 -> 0
      rule(x / 1, x),
      rule(x % 1, zero),
      // x // -1 -> -x ; x % -1 -> 0
      rule(x / -1, -x, signed_int),
      rule(x % -1, zero, signed_int),
      // x // x -> 1 ; x % x -> 0
      rule(x / x, one),
      rule(x % x, zero),
      // (x*y) // y -> x ; (x*y) % y -> 0
      rule((x * y) / y, x, signed_int),
      rule((x * y) % y, zero, signed_int),
      // (x % y) % y -> x % y
      rule((x % y).named("m") % y, (x % y).named("m")),
      // x op y -> q or x - q*y when the bounds give one quotient
      rule(div_mod, cancel_rule, signed_int),
      // x // y -> -(x // -y) ; x % y -> x % -y   (y < 0)
      rule(x / y, -(x / -y), divisor_negative),
      rule(x % y, x % -y, divisor_negative),
      // x // y -> -((-x) // y) ; x % y -> -((-x) % y)   (x <= 0 < y)
      rule(x / y, -((-x) / y), dividend_nonpositive),
      rule(x % y, -((-x) % y), dividend_nonpositive),
      // (x // c0) // c1 -> x // (c0*c1)
      rule((x / c0) / c1, x / (c0 * c1), positive_pair),
      // (x % c0) // c1 -> (x // c1) % (c0 // c1)   (c1 | c0)
      rule((x % c0) / c1, (x / c1) % (c0 / c1), divides_first),
      // (x % c0) % c1 -> x % c1   (c1 | c0)
      rule((x % c0) % c1, x % c1, divides_first),
      // (x // c0 + a) // c1 -> (x + a*c0) // (c0*c1)   (x >= 0, x//c0 + a >= 0)
      rule(n / c1, (x + a * c0) / (c0 * c1), nonnegative_nested),
      // sums over a constant: exact, binary, nested, congruence, gcd, factor (in that order)
      rule(div_mod, fold_sum_by_const),
      // remainder: (a*y + b) op y, a constant or variable y
      rule(div_mod, remainder_rule),
      // (x // c)*(c*k) + (x % c)*k -> x*k
      rule(int_add, pairs_rule),
  };
}

}  // namespace vkgrad
