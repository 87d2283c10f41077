// Rules of rules_add.cpp: SUB as a sum, and the canonical form of integer sums (flattened, like
// terms combined, terms in canonical order, constant last). Negative tests use floats (never
// reassociated) and sums that are canonical already.
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class RulesAdd : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);
  const UOp y = var("y", -5, 5);
  const UOp z = var("z", -3, 7);
  const UOp xf = var("x", 0, 10, dtypes::float32);
  const UOp yf = var("y", 0, 10, dtypes::float32);
};

TEST_F(RulesAdd, SubIsASum) {
  EXPECT_TRUE(check(UOp::make(Ops::SUB, dtypes::index, {x, y}), x + y * -1));
}

TEST_F(RulesAdd, SubOfFloatsStays) {
  EXPECT_TRUE(stays(UOp::make(Ops::SUB, dtypes::float32, {xf, yf})));
}

TEST_F(RulesAdd, XPlusXIsTwoX) {
  EXPECT_TRUE(check(x + x, x * 2));
  UOp a = var("a", -9, 9, dtypes::int32);
  EXPECT_TRUE(check(a + a, a * 2));
}

TEST_F(RulesAdd, LikeTermsCombine) {
  EXPECT_TRUE(check(x * 3 + x * 5, x * 8));
  EXPECT_TRUE(check(3 * x + x * 5, x * 8));  // commuted
  EXPECT_TRUE(check(x + x * 3, x * 4));
  EXPECT_TRUE(check(x * 3 + x, x * 4));
  EXPECT_TRUE(check(x * 3 + y + x * -3, y));
}

TEST_F(RulesAdd, XMinusXIsZero) {
  EXPECT_TRUE(check(x - x, idx(0)));
  EXPECT_TRUE(check((x + y) - (y + x), idx(0)));
  EXPECT_TRUE(check(x * 2 - x - x, idx(0)));
}

TEST_F(RulesAdd, FloatsAreNeverReassociatedOrCancelled) {
  // x - x is NaN for x = Inf or NaN; x + x is exact but not rewritten
  EXPECT_TRUE(stays(xf - xf));
  EXPECT_TRUE(stays(xf + xf));
  // (x + 1) + 2 rounds twice; x + 3 rounds once
  EXPECT_TRUE(stays((xf + f32(1.0)) + f32(2.0)));
}

TEST_F(RulesAdd, ConstantsFoldAndGoLast) {
  EXPECT_TRUE(check((x + 3) + 4, x + 7));
  EXPECT_TRUE(check(3 + x, x + 3));
  EXPECT_TRUE(check((x + 3) + y, (x + y) + 3));
  EXPECT_TRUE(check((3 + x) + (y + 4), (x + y) + 7));
  EXPECT_TRUE(check((x + 3) - 3, x));
  EXPECT_TRUE(check(idx(2) * 3 + x * 1 + 0, x + 6));
}

TEST_F(RulesAdd, TermsInCanonicalOrder) {
  EXPECT_TRUE(check(y + x, x + y));
  EXPECT_TRUE(check((z + y) + x, (x + y) + z));
  EXPECT_TRUE(check(z + (y + x), (x + y) + z));
  EXPECT_TRUE(check((x + 3) + (y + x), (x * 2 + y) + 3));
  // a term is ordered by its base: x*4 and x//2 both lead with x, and come before y
  EXPECT_TRUE(check(y + x / 2 + x * 4, (x * 4 + x / 2) + y));
}

TEST_F(RulesAdd, ScaledSumsFlattenIntoTheirTerms) {
  EXPECT_TRUE(check((x + y) * 2 + x, x * 3 + y * 2));
  EXPECT_TRUE(check(z - (x + y), (x * -1 + y * -1) + z));
}

TEST_F(RulesAdd, CanonicalSumsStay) {
  EXPECT_TRUE(stays(x + y));
  EXPECT_TRUE(stays((x * 2 + y) + 3));
  EXPECT_TRUE(stays(((x * 2 + y * -1) + z) + -4));
}

TEST_F(RulesAdd, SumsOfInt32WrapLikeTheDtype) {
  // the ring identities hold modulo 2^32
  UOp a = var("a", -9, 9, dtypes::int32);
  EXPECT_TRUE(check(a * 2147483647 + a, a * i32(-2147483648LL)));
}

}  // namespace
