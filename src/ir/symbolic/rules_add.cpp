// Sums. Integer addition and multiplication form a ring even where values wrap, so every rule
// here is exact for any integer dtype; float sums are never reassociated (only their two operands
// are put in canonical order, by rules_const).
//   x - y -> x + y*-1                 (SUB is not canonical; sums are)
//   an integer sum -> its canonical form: flattened into terms base*coeff, like terms combined,
//   terms ordered by their bases' canonical order, the constant last, as a left-leaning chain:
//   (x+3) + (y+x) -> ((x*2)+y)+3. The one computed rule implements, for sums of any length:
//     x + x -> x*2          x*c0 + x*c1 -> x*(c0+c1)          x + x*c -> x*(c+1), so x - x -> 0
//     (x + c0) + c1 -> x + (c0+c1)      (x + c) + y -> (x + y) + c      x + (y + z) -> (x + y) + z
//     b + a -> a + b when a's base comes first in the canonical order
//   (Written as one-line rules these would each match every ADD again; the computed form is
//   one pass.)
#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/symbolic/terms.hpp"

namespace vkgrad {
namespace {

using symbolic::Term;

const UPat x = UPat::var("x", DTypeClass::ints);
const UPat y = UPat::var("y", DTypeClass::ints);
const UPat int_add = UPat::op(Ops::ADD).dtype(DTypeClass::ints).named("root");

// A term node of a canonical sum as base and coefficient (constants are last in products).
Term as_term(const UOp& t) {
  if (t.op() == Ops::MUL && t.src(1).is_const() && !t.src(0).is_const())
    return {t.src(0), as_int(t.src(1).const_value())};
  return {t, 1};
}

// `u = a + t` with `a` and `t` already simplified (so canonical): u is canonical when `a` holds
// no constant, `t` is a constant or a term whose base comes strictly after a's last base.
bool already_canonical(const UOp& u) {
  const UOp& a = u.src(0);
  const UOp& t = u.src(1);
  if (a.is_const() || (a.op() == Ops::ADD && a.src(1).is_const()) || t.op() == Ops::ADD)
    return false;
  if (t.is_const()) return true;
  Term tt = as_term(t);
  if (tt.base.op() == Ops::ADD) return false;
  Term last = as_term(a.op() == Ops::ADD ? a.src(1) : a);
  return last.base.op() != Ops::ADD && symbolic::order_less(last.base, tt.base);
}

UOp canonical_sum(const UOp& root) {
  if (root.dtype().count() != 1 || already_canonical(root)) return {};
  DType dt = root.dtype();
  symbolic::Sum s = symbolic::split_sum(root);
  // Combine like terms (same base node), keeping the first appearance of each base.
  std::vector<Term> terms;
  std::unordered_map<const UOpNode*, size_t> at;
  for (Term& t : s.terms) {
    auto [it, fresh] = at.emplace(t.base.get(), terms.size());
    if (fresh) {
      terms.push_back(std::move(t));
    } else {
      int64_t& k = terms[it->second].coeff;
      k = wrap_int(dt,
                   static_cast<int64_t>(static_cast<uint64_t>(k) + static_cast<uint64_t>(t.coeff)));
    }
  }
  std::stable_sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    return symbolic::order_less(a.base, b.base);
  });
  UOp out = symbolic::build_sum(dt, terms, s.constant);
  return out == root ? UOp() : out;
}

UOp canonical_sum_rule(const Match& m) { return canonical_sum(m[int_add]); }

}  // namespace

std::vector<Rule> rules_add() {
  return {
      // x - y -> x + y*-1
      rule(UPat::op(Ops::SUB, {x, y}), x + y * -1),
      // a sum -> its canonical form (flattened, like terms combined, ordered, constant last)
      rule(int_add, canonical_sum_rule),
  };
}

}  // namespace vkgrad
