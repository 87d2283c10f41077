// Rules of rules_cmp.cpp: comparisons that move constants and factors out, lt folding by a
// common factor, the simplex and !(c < x) shapes, equality with constants, and max.
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class RulesCmp : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);
  const UOp y = var("y", 0, 10);
  const UOp n = var("n", -30, 30);
  const UOp s = var("s", -5, 5);
  const UOp r3 = var("r", 0, 3);
  const UOp xf = var("x", 0, 10, dtypes::float32);
  const UOp u = var("u", 0, 10, dtypes::uint32);
  const UOp t = boolean(true);
  const UOp f = boolean(false);
};

TEST_F(RulesCmp, LessThanSelf) {
  EXPECT_TRUE(check(n.lt(n), f));
  EXPECT_TRUE(check(xf.lt(xf), f));  // also for floats: NaN < NaN is false
}
TEST_F(RulesCmp, LessThanSelfOfAVectorIsAVector) {
  UOp v = var("v", 0, 3, dtypes::int32.vec(4));
  EXPECT_EQ(simplify(v.lt(v)), UOp::const_(dtypes::bool_.vec(4), false));
  EXPECT_EQ(simplify(v.eq(v)), UOp::const_(dtypes::bool_.vec(4), true));
}
TEST_F(RulesCmp, LessThanSelfNeedsTheSameNode) { EXPECT_TRUE(stays(n.lt(n + s))); }

TEST_F(RulesCmp, NotEqualSelf) {
  EXPECT_TRUE(check(n.ne(n), f));
  EXPECT_TRUE(check(n.eq(n), t));
}
TEST_F(RulesCmp, NotEqualSelfIsNotForFloats) {
  EXPECT_TRUE(stays(xf.ne(xf)));  // NaN != NaN
  EXPECT_TRUE(stays(xf.eq(xf)));
}

TEST_F(RulesCmp, AddedConstantMovesRight) {
  EXPECT_TRUE(check((n + 3).lt(7), n.lt(4)));
  EXPECT_TRUE(check((3 + n).lt(7), n.lt(4)));  // commuted
  EXPECT_TRUE(check((n + s + 3).lt(-2), (n + s).lt(-5)));
}
TEST_F(RulesCmp, AddedConstantMovesOnlyForSignedIntegers) {
  // for uint32, u + 4294967295 is u - 1 (wrapping): u - 1 < 5 is not u < 6
  UOp minus_one = UOp::const_(dtypes::uint32, int64_t{-1});
  UOp e = (u + minus_one).lt(UOp::const_(dtypes::uint32, 5));
  EXPECT_TRUE(stays(e));
  EXPECT_FALSE(equivalent(e, u.lt(UOp::const_(dtypes::uint32, 6))));
  EXPECT_TRUE(stays((xf + f32(3.0)).lt(f32(7.0))));
}

TEST_F(RulesCmp, AddedConstantMovesLeft) { EXPECT_TRUE(check(idx(7).lt(n + 3), idx(4).lt(n))); }
TEST_F(RulesCmp, AddedConstantMovesLeftOnlyForSignedIntegers) {
  UOp one = UOp::const_(dtypes::uint32, 1);
  EXPECT_TRUE(stays(UOp::const_(dtypes::uint32, 7).lt(u + one)));
}

TEST_F(RulesCmp, ScaledVariableAgainstAConstant) {
  EXPECT_TRUE(check((x * 4).lt(9), x.lt(3)));         // ceil(9/4)
  EXPECT_TRUE(check((x * 4).lt(8), x.lt(2)));         // exact
  EXPECT_TRUE(check((n * 4).lt(-9), n.lt(-2)));       // ceil(-9/4) = -2
  EXPECT_TRUE(check((4 * n).lt(-9), n.lt(-2)));       // commuted
  EXPECT_TRUE(check((n * -4).lt(9), idx(-3).lt(n)));  // floor(9/-4) = -3 < n
  EXPECT_TRUE(check((n * -1).lt(9), idx(-9).lt(n)));
}
TEST_F(RulesCmp, ScaledVariableIsNotForFloats) { EXPECT_TRUE(stays((xf * f32(4.0)).lt(f32(9.0)))); }

TEST_F(RulesCmp, ConstantAgainstAScaledVariable) {
  EXPECT_TRUE(check(idx(9).lt(n * 4), idx(2).lt(n)));    // floor(9/4)
  EXPECT_TRUE(check(idx(-9).lt(n * 4), idx(-3).lt(n)));  // floor(-9/4)
  EXPECT_TRUE(check(idx(9).lt(n * -4), n.lt(-2)));       // ceil(9/-4)
}
TEST_F(RulesCmp, ConstantAgainstAScaledVariableIsNotForFloats) {
  EXPECT_TRUE(stays(f32(9.0).lt(xf * f32(4.0))));
}

TEST_F(RulesCmp, QuotientAgainstAConstant) {
  EXPECT_TRUE(check((n / 4).lt(2), n.lt(8)));
  EXPECT_TRUE(check((n / 4).lt(0), n.lt(-3)));   // truncation: -3//4 is 0
  EXPECT_TRUE(check((n / 4).lt(-1), n.lt(-7)));  // n//4 <= -2 iff n <= -8
}
TEST_F(RulesCmp, QuotientAgainstAConstantNeedsAPositiveDivisor) {
  UOp e = (n / -4).lt(2);  // the divisor flips first; what is left is still correct
  EXPECT_TRUE(avoids(e, n.lt(-8)));
}

TEST_F(RulesCmp, ConstantAgainstAQuotient) {
  EXPECT_TRUE(check(idx(1).lt(n / 4), idx(7).lt(n)));    // n//4 >= 2 iff n >= 8
  EXPECT_TRUE(check(idx(-1).lt(n / 4), idx(-4).lt(n)));  // n//4 >= 0 iff n > -4
  EXPECT_TRUE(check(idx(-2).lt(n / 4), idx(-8).lt(n)));
}

TEST_F(RulesCmp, ConstantAgainstAQuotientNeedsAConstantDivisor) {
  UOp w = var("w", 1, 8);
  EXPECT_TRUE(stays(idx(1).lt(n / w)));
}

TEST_F(RulesCmp, NegatedSidesSwap) { EXPECT_TRUE(check((n * -1).lt(s * -1), s.lt(n))); }
TEST_F(RulesCmp, NegatedSidesSwapOnlyForSignedIntegers) {
  UOp k = var("k", 0, 10, dtypes::uint32);
  UOp minus_one = UOp::const_(dtypes::uint32, int64_t{-1});
  EXPECT_TRUE(avoids((u * minus_one).lt(k * minus_one), k.lt(u)));
}

TEST_F(RulesCmp, CommonFactorDividesAComparison) {
  EXPECT_TRUE(check((x * 4 + r3).lt(8), x.lt(2)));
  EXPECT_TRUE(check((n * 4 + s * 6).lt(8), (n * 2 + s * 3).lt(4)));
  EXPECT_TRUE(check((r3 + n * 4).lt(-8), n.lt(-2)));  // any sign of the quotient
}
TEST_F(RulesCmp, CommonFactorNeedsTheRestBelowIt) {
  UOp r4 = var("r", 0, 4);
  EXPECT_TRUE(stays((r4 + x * 4).lt(8)));
  EXPECT_TRUE(stays((s + x * 4).lt(8)));      // s may be negative
  EXPECT_TRUE(stays((n * 4 + s * 6).lt(7)));  // 2 does not divide 7
}

TEST_F(RulesCmp, NotConstantLessThanX) {
  EXPECT_TRUE(check(n.le(4), n.lt(5)));  // !(4 < n)
  EXPECT_TRUE(check(idx(4).lt(n).logical_not(), n.lt(5)));
}
TEST_F(RulesCmp, NotConstantLessThanXNeedsRoomAbove) {
  // with c the dtype's max, c < x is always false and bounds decide it; c+1 would overflow
  UOp big = var("n", 0, 2147483647, dtypes::int32);
  EXPECT_TRUE(check(UOp::const_(dtypes::int32, 2147483647).lt(big).logical_not(), t));
  EXPECT_TRUE(stays(n.ge(4)));  // !(n < 4) keeps its shape
}

TEST_F(RulesCmp, SimplexDropsPositiveFactors) {
  EXPECT_TRUE(check((x * 2 + y * 3).ge(1), (x + y).ge(1)));
}
TEST_F(RulesCmp, SimplexNeedsNonnegativeTermsAndPositiveFactors) {
  EXPECT_TRUE(stays((s * 3 + x * 2).ge(1)));
  EXPECT_TRUE(stays((x * 2 + y * -3).ge(1)));
}

TEST_F(RulesCmp, EqualityMovesAConstant) {
  EXPECT_TRUE(check((n + 3).ne(7), n.ne(4)));
  EXPECT_TRUE(check((n + 3).eq(7), n.eq(4)));
  // exact even where values wrap: u + c is a bijection
  UOp all = var("u", 0, 4294967295, dtypes::uint32);
  UOp one = UOp::const_(dtypes::uint32, 1);
  EXPECT_TRUE(check((all + one).ne(UOp::const_(dtypes::uint32, 0)),
                    all.ne(UOp::const_(dtypes::uint32, int64_t{-1}))));
}
TEST_F(RulesCmp, EqualityMovesOnlyConstants) { EXPECT_TRUE(stays((n + s).ne(7))); }

TEST_F(RulesCmp, EqualityDividesAFactor) {
  EXPECT_TRUE(check((n * 4).ne(8), n.ne(2)));
  EXPECT_TRUE(check((n * 4).eq(8), n.eq(2)));
  EXPECT_TRUE(check((n * 4).ne(6), t));
  EXPECT_TRUE(check((n * 4).eq(6), f));
}
TEST_F(RulesCmp, EqualityDividesAFactorOnlyForSignedIntegers) {
  // uint32 products wrap (u*2 == 6 also holds for u = 2^31 + 3), so the rule stays out
  UOp two = UOp::const_(dtypes::uint32, 2);
  EXPECT_TRUE(stays((u * two).ne(UOp::const_(dtypes::uint32, 6))));
}

TEST_F(RulesCmp, MaxOfOrderedOperands) {
  UOp hi = var("h", 10, 20);
  EXPECT_TRUE(check(hi.maximum(x), hi));
  EXPECT_TRUE(check(x.maximum(hi), hi));  // commuted
  EXPECT_TRUE(check(x.maximum(-1), x));
}
TEST_F(RulesCmp, MaxOfOverlappingOperandsStays) {
  EXPECT_TRUE(stays(x.maximum(y)));
  EXPECT_TRUE(stays(n.maximum(3)));
}

TEST_F(RulesCmp, MaxOfSelf) {
  EXPECT_TRUE(check(n.maximum(n), n));
  EXPECT_TRUE(check(xf.maximum(xf), xf));
}
TEST_F(RulesCmp, MaxOfSelfNeedsTheSameNode) { EXPECT_TRUE(stays(n.maximum(s))); }

}  // namespace
