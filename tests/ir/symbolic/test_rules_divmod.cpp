// Rules of rules_divmod.cpp. IDIV truncates and MOD takes the dividend's sign, so most rules need
// a nonnegative dividend: their negative tests use a dividend that may be negative, and where it
// matters also show that the rewrite they must not do would change a value.
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class RulesDivmod : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);    // nonnegative
  const UOp y = var("y", 0, 10);    // nonnegative
  const UOp s = var("s", -5, 5);    // small, both signs
  const UOp n = var("n", -30, 30);  // both signs
  const UOp m = var("m", -10, 0);   // nonpositive
  const UOp w = var("w", 1, 8);     // a positive divisor
  const UOp v = var("v", -8, -1);   // a negative divisor
  const UOp b = var("b", 0, 1);     // two values
  const UOp r3 = var("r", 0, 3);    // below 4
  const UOp u = var("u", 0, 10, dtypes::uint32);
};

TEST_F(RulesDivmod, DivByOne) {
  EXPECT_TRUE(check(n / 1, n));
  EXPECT_TRUE(check(u / UOp::const_(dtypes::uint32, 1), u));
}
TEST_F(RulesDivmod, DivByOneNeedsOne) { EXPECT_TRUE(stays(n / 2)); }

TEST_F(RulesDivmod, ModOne) { EXPECT_TRUE(check(n % 1, idx(0))); }
TEST_F(RulesDivmod, ModOneNeedsOne) { EXPECT_TRUE(stays(n % 3)); }

TEST_F(RulesDivmod, DivByMinusOne) {
  EXPECT_TRUE(check(n / -1, n * -1));
  EXPECT_TRUE(check(n % -1, idx(0)));
}
TEST_F(RulesDivmod, DivByMinusOneIsForSignedTypes) {
  // for uint32, -1 is 4294967295: u // 4294967295 is 0, not -u
  UOp minus_one = UOp::const_(dtypes::uint32, int64_t{-1});
  EXPECT_TRUE(avoids(u / minus_one, u * minus_one));
  EXPECT_TRUE(check(u / minus_one, UOp::const_(dtypes::uint32, 0)));  // bounds decide it
  EXPECT_TRUE(avoids(u % minus_one, UOp::const_(dtypes::uint32, 0)));
}

TEST_F(RulesDivmod, DivAndModBySelf) {
  EXPECT_TRUE(check(w / w, idx(1)));
  EXPECT_TRUE(check(w % w, idx(0)));
  EXPECT_TRUE(check((x + w) / (w + x), idx(1)));  // commuted sum, the same node once canonical
}
TEST_F(RulesDivmod, DivAndModBySelfNeedTheSameNode) {
  EXPECT_TRUE(stays(x / (x + 1)));
  EXPECT_TRUE(stays(x % (x + 1)));
}

TEST_F(RulesDivmod, ProductDividedByAFactor) {
  EXPECT_TRUE(check((n * w) / w, n));
  EXPECT_TRUE(check((w * n) / w, n));
  EXPECT_TRUE(check((n * w) % w, idx(0)));
}
TEST_F(RulesDivmod, ProductDividedByAFactorIsForSignedTypes) {
  // uint32 products wrap, so (u*k) // k is u only without overflow; the rule is not used there
  UOp k = var("k", 1, 8, dtypes::uint32);
  EXPECT_TRUE(avoids((u * k) / k, u));
  EXPECT_TRUE(stays((n * w) / (w + 1)));
}

TEST_F(RulesDivmod, ModOfModBySameDivisor) { EXPECT_TRUE(check((n % w) % w, n % w)); }
TEST_F(RulesDivmod, ModOfModNeedsTheSameDivisor) { EXPECT_TRUE(avoids((n % w) % (w + 1), n % w)); }

TEST_F(RulesDivmod, BoundsGiveTheQuotient) {
  UOp x10 = var("x", 10, 13);
  EXPECT_TRUE(check(x10 / 5, idx(2)));
  EXPECT_TRUE(check(x10 % 5, x10 + -10));
  UOp x20 = var("x", 20, 23), y8 = var("y", 8, 9);
  EXPECT_TRUE(check(x20 / y8, idx(2)));
  EXPECT_TRUE(check(x20 % y8, x20 + y8 * -2));
  // truncation makes -4..4 one bucket of 5: any sign works
  UOp s4 = var("s", -4, 4);
  EXPECT_TRUE(check(s4 / 5, idx(0)));
  EXPECT_TRUE(check(s4 % 5, s4));
}
TEST_F(RulesDivmod, BoundsGiveNoQuotientAcrossBuckets) {
  UOp x10 = var("x", 10, 15);
  EXPECT_TRUE(stays(x10 / 5));
  EXPECT_TRUE(stays(x10 % 5));
  EXPECT_TRUE(stays(x10 / w));
}

TEST_F(RulesDivmod, NegativeDivisorFlips) {
  EXPECT_TRUE(check(n / -3, (n / 3) * -1));
  EXPECT_TRUE(check(n % -3, n % 3));
  EXPECT_TRUE(check(n / v, (n / (v * -1)) * -1));
  EXPECT_TRUE(check(n % v, n % (v * -1)));
}
TEST_F(RulesDivmod, DivisorOfBothSignsDoesNotFlip) {
  UOp d = var("d", -4, 4);
  EXPECT_TRUE(stays(n / d));
  EXPECT_TRUE(stays(n % d));
}

TEST_F(RulesDivmod, NonpositiveDividendFlips) {
  EXPECT_TRUE(check(m / 3, ((m * -1) / 3) * -1));
  EXPECT_TRUE(check(m % 3, ((m * -1) % 3) * -1));
  EXPECT_TRUE(check(m / w, ((m * -1) / w) * -1));
}
TEST_F(RulesDivmod, DividendOfBothSignsDoesNotFlip) {
  EXPECT_TRUE(stays(n / 3));
  EXPECT_TRUE(stays(n % 3));
}

TEST_F(RulesDivmod, DivOfDiv) {
  EXPECT_TRUE(check((n / 2) / 3, n / 6));  // truncation composes, any sign
  UOp big = var("x", 0, 100);
  EXPECT_TRUE(check((big / 4) / 4, big / 16));
}
TEST_F(RulesDivmod, DivOfDivNeedsConstantDivisors) { EXPECT_TRUE(stays((n / 2) / w)); }

TEST_F(RulesDivmod, DivOfMod) {
  EXPECT_TRUE(check((n % 12) / 4, (n / 4) % 3));  // any sign
}
TEST_F(RulesDivmod, DivOfModNeedsADivisor) { EXPECT_TRUE(stays((n % 12) / 5)); }

TEST_F(RulesDivmod, ModOfMod) {
  EXPECT_TRUE(check((n % 12) % 4, n % 4));  // any sign
  EXPECT_TRUE(check((x % 12) % 6, x % 6));
}
TEST_F(RulesDivmod, ModOfModNeedsADivisor) {
  EXPECT_TRUE(stays((n % 12) % 5));
  EXPECT_FALSE(equivalent((n % 12) % 5, n % 5));
}

TEST_F(RulesDivmod, DivOfDivPlusTerm) {
  UOp a = var("a", 0, 5);
  EXPECT_TRUE(check((x / 2 + a) / 3, (a * 2 + x) / 6));
  EXPECT_TRUE(check((a + x / 2) / 3, (a * 2 + x) / 6));  // commuted
}
TEST_F(RulesDivmod, DivOfDivPlusTermNeedsANonnegativeSum) {
  EXPECT_TRUE(avoids((x / 2 + s) / 3, (x + s * 2) / 6));
  EXPECT_FALSE(equivalent((x / 2 + s) / 3, (x + s * 2) / 6));
}

TEST_F(RulesDivmod, SumDividesExactly) {
  // (g*a) // (g*c) -> a // c and (g*a) % (g*c) -> (a % c)*g, for any sign
  EXPECT_TRUE(check((n * 6 + s * 4 + 2) / 2, (n * 3 + s * 2) + 1));
  EXPECT_TRUE(check((n * 6 + s * 4) / 4, (n * 3 + s * 2) / 2));
  EXPECT_TRUE(check((n * 6 + s * 4) % 4, ((n * 3 + s * 2) % 2) * 2));
  EXPECT_TRUE(check((n * 6 + s * 4 + 2) % 2, idx(0)));
}
TEST_F(RulesDivmod, SumDividesExactlyOnlyWithACommonFactor) {
  EXPECT_TRUE(stays((n * 6 + s * 4 + 1) / 2));
  EXPECT_TRUE(stays((n * 6 + s * 4 + 1) % 2));
}

TEST_F(RulesDivmod, TwoValuedTermIsLinear) {
  EXPECT_TRUE(check((b * 3 + 1) / 2, b * 2));
  EXPECT_TRUE(check((b * 3 + 1) % 2, b * -1 + 1));
  UOp bn = var("b", -1, 0);  // any sign
  EXPECT_TRUE(check((bn * 3 + 1) / 2, bn));
  EXPECT_TRUE(check((bn * 3 + 1) % 2, bn + 1));
}
TEST_F(RulesDivmod, ThreeValuedTermIsNotLinear) {
  UOp t = var("t", -1, 1);
  EXPECT_TRUE(stays((t * 3 + 1) / 2));
  EXPECT_TRUE(stays((t * 3 + 1) % 2));
}

TEST_F(RulesDivmod, NestedModInASum) {
  EXPECT_TRUE(check((x % 8 + y) % 4, (x + y) % 4));
  EXPECT_TRUE(check((y + x % 8) % 4, (x + y) % 4));  // commuted
}
TEST_F(RulesDivmod, NestedModInASumNeedsNonnegativeSums) {
  EXPECT_TRUE(avoids((n % 8 + y) % 4, (n + y) % 4));
  EXPECT_FALSE(equivalent((n % 8 + y) % 4, (n + y) % 4));
}

TEST_F(RulesDivmod, CongruentRemainderInOneBucket) {
  EXPECT_TRUE(check((x * 4 + r3) % 4, r3));
  EXPECT_TRUE(check((x * 4 + r3) / 4, x));
  // a remainder coefficient of 7 counts as -1: 8x + 7a + 8 is congruent to 8 - a, in [5, 7]
  UOp a = var("a", 1, 3);
  EXPECT_TRUE(check((x * 8 + a * 7 + 8) % 8, a * -1 + 8));
  EXPECT_TRUE(check((x * 8 + a * 7 + 8) / 8, a + x));
}
TEST_F(RulesDivmod, CongruenceNeedsANonnegativeDividend) {
  EXPECT_TRUE(stays((n * 4 + r3) % 4));
  EXPECT_TRUE(stays((n * 4 + r3) / 4));
  EXPECT_FALSE(equivalent((n * 4 + r3) % 4, r3));
  EXPECT_FALSE(equivalent((n * 4 + r3) / 4, n));
}

TEST_F(RulesDivmod, CommonFactorWithARemainder) {
  EXPECT_TRUE(check((x * 4 + y * 2 + 1) % 8, ((x * 2 + y) % 4) * 2 + 1));
  EXPECT_TRUE(check((x * 4 + y * 2 + 1) / 8, (x * 2 + y) / 4));
}
TEST_F(RulesDivmod, CommonFactorWithARemainderNeedsANonnegativeDividend) {
  EXPECT_TRUE(stays((n * 4 + s * 2 + 1) % 8));
  EXPECT_TRUE(stays((n * 4 + s * 2 + 1) / 8));
}

TEST_F(RulesDivmod, NestThroughAFactorOfTheDivisor) {
  EXPECT_TRUE(check((x * 4 + r3) / 8, x / 2));
  EXPECT_TRUE(check((x * 4 + r3) % 8, r3 + (x % 2) * 4));
}
TEST_F(RulesDivmod, NestThroughAFactorNeedsANonnegativeDividend) {
  EXPECT_TRUE(stays((n * 4 + r3) / 8));
  EXPECT_FALSE(equivalent((n * 4 + r3) / 8, n / 2));
}

TEST_F(RulesDivmod, QuotientTermsLeaveTheDivision) {
  EXPECT_TRUE(check((x * 5 + y) / 4, x + (x + y) / 4));
  EXPECT_TRUE(check((x * 5 + y) % 4, (x + y) % 4));
  EXPECT_TRUE(check((x * w + y) / w, x + y / w));
  EXPECT_TRUE(check((x * w + y) % w, y % w));
  EXPECT_TRUE(check((y + w * x) / w, x + y / w));  // commuted
}
TEST_F(RulesDivmod, QuotientTermsNeedNonnegativeRemainders) {
  EXPECT_TRUE(stays((s + w * x) / w));
  EXPECT_TRUE(stays((s + w * x) % w));
  EXPECT_FALSE(equivalent((x * w + s) / w, x + s / w));
}

TEST_F(RulesDivmod, DivAndModRecombine) {
  EXPECT_TRUE(check((x / 4) * 4 + x % 4, x));
  EXPECT_TRUE(check(n % 4 + (n / 4) * 4, n));  // any sign: C's definition of %
  EXPECT_TRUE(check((n / 4) * 8 + (n % 4) * 2 + s, n * 2 + s));
  EXPECT_TRUE(check((n / w) * w + n % w, n));
}
// A flat index split into digits (a GEMM's column into a conv weight's c, ky, kx) and put
// back: the two low digits make one remainder, which meets the quotient.
TEST_F(RulesDivmod, DigitsOfAFlatIndexRecombine) {
  const UOp col = var("col", 0, 4607);
  EXPECT_TRUE(check((col / 9) * 9 + ((col / 3) % 3) * 3 + col % 3, col));
  EXPECT_TRUE(check(((col / 3) % 3) * 6 + (col % 3) * 2 + s, (col % 9) * 2 + s));
  EXPECT_TRUE(check(((n / 3) % 4) * 3 + n % 3, n % 12));        // any sign
  EXPECT_TRUE(avoids(((col / 3) % 3) * 2 + col % 3, col % 9));  // not the digit's place value
  EXPECT_TRUE(avoids(((col / 3) % 3) * 3 + col % 2, col % 9));
}
TEST_F(RulesDivmod, DivAndModRecombineNeedMatchingFactors) {
  EXPECT_TRUE(stays((n / 4) * 3 + n % 4));
  EXPECT_TRUE(stays((n / 4) * 4 + n % 3));
}

TEST_F(RulesDivmod, Int32DividendsFoldToo) {
  UOp a = var("a", 0, 100, dtypes::int32), r = var("r", 0, 3, dtypes::int32);
  EXPECT_TRUE(check((a * 4 + r) / 4, a));
  EXPECT_TRUE(check((a * 4 + r) % 4, r));
}

TEST_F(RulesDivmod, RendersCanonically) {
  EXPECT_EQ(render(simplify((x * 4 + y) / 2)), "((x*2)+(y//2))");
  EXPECT_EQ(render(simplify((y + x * 4) % 2)), "(y%2)");
}

}  // namespace
