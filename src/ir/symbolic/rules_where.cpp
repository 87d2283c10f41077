// WHERE and boolean logic. Every rule here is exact for every dtype of the branches.
//   where(True, a, b) -> a            where(False, a, b) -> b          where(c, a, a) -> a
//   where(c, True, False) -> c        where(c, False, True) -> !c
//   where(!c, a, b) -> where(c, b, a)
//   where(c, where(c, a, b), d) -> where(c, a, d)      where(c, a, where(c, b, d)) -> where(c, a,
//   d) where(c, where(e, a, b), b) -> where(c & e, a, b)
//   !!x -> x       x & True -> x      x & False -> False      x | False -> x      x | True -> True
//   x ^ False -> x        x ^ True -> !x        x != False -> x     x == True -> x
//   x == False -> !x      x & !x -> False       x | !x -> True
//   x & x -> x     x | x -> x     x ^ x -> 0     x | (x & y) -> x     x & (x | y) -> x
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

const UPat c = UPat::var("c", DTypeClass::bool_);
const UPat e = UPat::var("e", DTypeClass::bool_);
const UPat a = UPat::var("a");
const UPat b = UPat::var("b");
const UPat d = UPat::var("d");
const UPat xb = UPat::var("x", DTypeClass::bool_);
const UPat xib = UPat::var("x", DTypeClass::ints_or_bool);
const UPat yib = UPat::var("y", DTypeClass::ints_or_bool);
// True and False to match (a bool constant: not the integers 1 and 0) ...
const UPat t = UPat::const_(true).dtype(dtypes::bool_);
const UPat f = UPat::const_(false).dtype(dtypes::bool_);
// ... and to build, in the dtype of the node they replace (a bool vector stays one).
const UPat new_t = UPat::const_(true);
const UPat new_f = UPat::const_(false);
const UPat zero = UPat::const_(int64_t{0});

}  // namespace

std::vector<Rule> rules_where() {
  return {
      // where(True, a, b) -> a ; where(False, a, b) -> b
      rule(t.where(a, b), a),
      rule(f.where(a, b), b),
      // where(c, a, a) -> a
      rule(c.where(a, a), a),
      // where(c, True, False) -> c ; where(c, False, True) -> !c
      rule(c.where(t, f), c),
      rule(c.where(f, t), c.logical_not()),
      // where(!c, a, b) -> where(c, b, a)
      rule(c.logical_not().where(a, b), c.where(b, a)),
      // where(c, where(c, a, b), d) -> where(c, a, d)
      rule(c.where(c.where(a, b), d), c.where(a, d)),
      // where(c, a, where(c, b, d)) -> where(c, a, d)
      rule(c.where(a, c.where(b, d)), c.where(a, d)),
      // where(c, where(e, a, b), b) -> where(c & e, a, b)
      rule(c.where(e.where(a, b), b), (c & e).where(a, b)),
      // !!x -> x
      rule(xb.logical_not().logical_not(), xb),
      // x & True -> x ; x & False -> False ; x | False -> x ; x | True -> True
      rule(xb & t, xb),
      rule(xb & f, new_f),
      rule(xb | f, xb),
      rule(xb | t, new_t),
      // x ^ False -> x ; x ^ True -> !x
      rule(xb ^ f, xb),
      rule(xb ^ t, xb.logical_not()),
      // x != False -> x ; x == True -> x ; x == False -> !x
      rule(xb.ne(f), xb),
      rule(xb.eq(t), xb),
      rule(xb.eq(f), xb.logical_not()),
      // x & !x -> False ; x | !x -> True
      rule(xb & xb.logical_not(), new_f),
      rule(xb | xb.logical_not(), new_t),
      // x & x -> x ; x | x -> x ; x ^ x -> 0
      rule(xib & xib, xib),
      rule(xib | xib, xib),
      rule(xib ^ xib, zero),
      // x | (x & y) -> x ; x & (x | y) -> x
      rule(xib | (xib & yib), xib),
      rule(xib & (xib | yib), xib),
  };
}

}  // namespace vkgrad
