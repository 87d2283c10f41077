// ir/symbolic: the vocabulary the rule families share — the canonical order of operands, integer
// sums seen as coefficient*base terms, and integer arithmetic with floor semantics and overflow
// checks. Internal to src/ir/symbolic (and its tests). Depends on uop only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad::symbolic {

// The canonical order of operands: a strict weak order, the same in every run (never
// pointer-based). Non-constants come before constants. Nodes are ordered by the leaf they lead
// with (following first sources: `x*y`, `x//4` and `(x+1)%3` all lead with x): variables by name,
// then SPECIALs by name, then RANGEs by axis; a leaf comes before the nodes it leads; then by op;
// then by structural key. Distinct nodes that tie compare equal, and rules never reorder equals,
// so a tie can never make two rules undo each other.
int order_cmp(const UOp& a, const UOp& b);
inline bool order_less(const UOp& a, const UOp& b) { return order_cmp(a, b) < 0; }

// One term of an integer sum: coeff*base. `base` is never a CONST and never an ADD.
struct Term {
  UOp base;
  int64_t coeff;
};

// An integer sum as its terms and constant, `x*3 + y + 5` -> {[(x,3), (y,1)], 5}. Nested sums and
// sums scaled by a constant are flattened; terms keep their order of appearance and like terms
// are not merged. Coefficients wrap like the dtype (sums are exact in modular arithmetic).
struct Sum {
  std::vector<Term> terms;
  int64_t constant = 0;
};
Sum split_sum(const UOp& u);

// An integer product's factors, nested MULs flattened, in order of appearance (constants too):
// `(x*y)*(z*3)` -> [x, y, z, 3].
std::vector<UOp> split_product(const UOp& u);
// The factors as a left-leaning chain of MULs, ((f0*f1)*f2); null when there are none.
UOp build_product(const std::vector<UOp>& factors);

// base*coeff as a node: `base` when coeff is 1, else MUL(base, coeff).
UOp term_node(const UOp& base, int64_t coeff);
// The terms (in the given order, zero coefficients dropped) as a left-leaning chain of ADDs with
// the constant last: ((t0 + t1) + t2) + c. An empty sum is the constant.
UOp build_sum(DType dt, const std::vector<Term>& terms, int64_t constant);

// Inclusive bounds of coeff*base from the base's vmin/vmax, in 128 bits.
struct Bounds {
  __int128 lo = 0, hi = 0;
};
Bounds term_bounds(const Term& t);
// Bounds of a whole Sum (terms plus constant).
Bounds sum_bounds(const Sum& s);

// A scalar signed integer or index: the dtypes whose bounds-based rules assume no overflow.
bool is_signed_int(DType d);
// v as a constant of `d` if it is representable there.
bool fits(DType d, __int128 v);

// Integer division with floor semantics (b != 0): floor_div(-7, 2) == -4, floor_mod(-7, 2) == 1.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);
int64_t gcd(int64_t a, int64_t b);  // of absolute values; gcd(0, b) == |b|

// Nodes in a graph (a size measure for choosing between equivalent results).
size_t node_count(const UOp& u);

}  // namespace vkgrad::symbolic
