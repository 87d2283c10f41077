// Rules of rules_mul.cpp: a constant distributes over an integer sum, and integer products take
// their canonical form (flattened, factors ordered, one constant last).
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class RulesMul : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);
  const UOp y = var("y", -5, 5);
  const UOp z = var("z", -3, 7);
  const UOp xf = var("x", 0, 10, dtypes::float32);
  const UOp yf = var("y", 0, 10, dtypes::float32);
};

TEST_F(RulesMul, ConstantDistributesOverASum) {
  EXPECT_TRUE(check((x + 3) * 2, x * 2 + 6));
  EXPECT_TRUE(check(2 * (x + 3), x * 2 + 6));  // commuted
  EXPECT_TRUE(check((x + y) * -1, x * -1 + y * -1));
  EXPECT_TRUE(check(-(x - y), x * -1 + y));
}

TEST_F(RulesMul, DistributionNeedsAConstantAndIntegers) {
  EXPECT_TRUE(stays((x + y) * z));           // not a constant
  EXPECT_TRUE(stays((xf + yf) * f32(2.0)));  // floats: x*2 + y*2 rounds differently
}

TEST_F(RulesMul, ConstantsFoldAndGoLast) {
  EXPECT_TRUE(check((x * 2) * 3, x * 6));
  EXPECT_TRUE(check(3 * x, x * 3));
  EXPECT_TRUE(check((x * 2) * y, (x * y) * 2));
  EXPECT_TRUE(check((y * 3) * (x * 2), (x * y) * 6));
  EXPECT_TRUE(check((x * 2) * (y * 0), idx(0)));
  EXPECT_TRUE(check((x * -1) * -1, x));
}

TEST_F(RulesMul, FactorsInCanonicalOrder) {
  EXPECT_TRUE(check(y * x, x * y));
  EXPECT_TRUE(check(z * (y * x), (x * y) * z));
  EXPECT_TRUE(check((z * x) * y, (x * y) * z));
}

TEST_F(RulesMul, FloatProductsAreNotReassociated) {
  EXPECT_TRUE(stays((xf * f32(2.0)) * f32(3.0)));
  EXPECT_TRUE(check(f32(2.0) * xf, xf * f32(2.0)));  // only the two operands are ordered
}

TEST_F(RulesMul, CanonicalProductsStay) {
  EXPECT_TRUE(stays(x * y));
  EXPECT_TRUE(stays((x * y) * 3));
  EXPECT_TRUE(stays(((x * y) * z) * -2));
  EXPECT_TRUE(stays(x * x));
}

}  // namespace
