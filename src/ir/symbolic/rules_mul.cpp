// Products. Integer multiplication is exact in modular arithmetic (as for sums in rules_add), so
// these hold for any integer dtype; float products are never reassociated.
//   (x + y)*c -> x*c + y*c            (constants distribute over integer sums, as in tinygrad's
//                                      symbolic_flat, so like terms can meet: (x+3)*2 -> x*2+6)
//   an integer product -> its canonical form: flattened, factors in canonical order, the
//   constants folded into one, last: (y*3)*(x*2) -> (x*y)*6. It implements (x*c0)*c1 ->
//   x*(c0*c1), (x*c)*y -> (x*y)*c and b*a -> a*b when a comes first in the canonical order.
#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/symbolic/terms.hpp"

namespace vkgrad {
namespace {

const UPat x = UPat::var("x", DTypeClass::ints);
const UPat y = UPat::var("y", DTypeClass::ints);
const UPat c = UPat::cvar("c");
const UPat int_mul = UPat::op(Ops::MUL).dtype(DTypeClass::ints).named("root");

bool holds_const(const UOp& a) {
  return a.is_const() || (a.op() == Ops::MUL && a.src(1).is_const());
}

// `u = a * t` with `a` and `t` already canonical: u is canonical when `a` holds no constant and
// `t` is a constant, or a factor that comes strictly after a's last factor.
bool already_canonical(const UOp& u) {
  const UOp& a = u.src(0);
  const UOp& t = u.src(1);
  if (holds_const(a) || a.op() == Ops::ADD || t.op() == Ops::MUL) return false;
  if (t.is_const()) return true;
  const UOp& last = a.op() == Ops::MUL ? a.src(1) : a;
  return symbolic::order_less(last, t);
}

UOp canonical_product(const UOp& root) {
  if (root.dtype().count() != 1 || already_canonical(root)) return {};
  DType dt = root.dtype();
  std::vector<UOp> factors;
  uint64_t k = 1;
  for (UOp& f : symbolic::split_product(root)) {
    if (f.is_const())
      k *= static_cast<uint64_t>(as_int(f.const_value()));
    else
      factors.push_back(std::move(f));
  }
  int64_t kc = wrap_int(dt, static_cast<int64_t>(k));
  if (kc == 0) return root.const_like(int64_t{0});
  std::stable_sort(factors.begin(), factors.end(), symbolic::order_less);
  UOp out = symbolic::build_product(factors);
  if (!out) return root.const_like(kc);
  if (kc != 1) out = out * root.const_like(kc);
  return out == root ? UOp() : out;
}

UOp canonical_product_rule(const Match& m) { return canonical_product(m[int_mul]); }

}  // namespace

std::vector<Rule> rules_mul() {
  return {
      // (x + y)*c -> x*c + y*c
      rule((x + y) * c, x * c + y * c),
      // a product -> its canonical form (flattened, ordered, one constant last)
      rule(int_mul, canonical_product_rule),
  };
}

}  // namespace vkgrad
