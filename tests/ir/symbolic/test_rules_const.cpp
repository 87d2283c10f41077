// Rules of rules_const.cpp: constant folding, bounds that decide a value, x+0, x*1, x*0 and the
// canonical order of commutative operands. Each rule: a positive check, commuted forms, and a
// negative test that breaks one precondition.
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class RulesConst : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);
  const UOp y = var("y", -5, 5);
  const UOp xf = var("x", 0, 10, dtypes::float32);  // takes integer values only in evaluate
};

TEST_F(RulesConst, FoldsIntegerArithmetic) {
  EXPECT_TRUE(check(idx(2) * 3 + 4, idx(10)));
  EXPECT_TRUE(check(idx(-7) / 2, idx(-3)));  // truncating
  EXPECT_TRUE(check(idx(-7) % 2, idx(-1)));  // the dividend's sign
  EXPECT_TRUE(check(idx(3).maximum(idx(-4)), idx(3)));
  EXPECT_TRUE(check(i32(2147483647) + i32(1), i32(-2147483648LL)));  // int32 wraps
}

TEST_F(RulesConst, FoldsFloatArithmeticInTheDtype) {
  EXPECT_TRUE(check(f32(1.5) * f32(2.0), f32(3.0)));
  EXPECT_TRUE(check(f32(0.1) + f32(0.2), f32(static_cast<float>(0.1f + 0.2f))));
}

TEST_F(RulesConst, FoldsComparisonsAndWhere) {
  EXPECT_TRUE(check(idx(3).lt(idx(4)), boolean(true)));
  EXPECT_TRUE(check(idx(3).ne(idx(3)), boolean(false)));
  EXPECT_TRUE(check(f32(1.0).lt(f32(0.5)), boolean(false)));
  EXPECT_TRUE(check(boolean(true).where(idx(1), idx(2)), idx(1)));
}

TEST_F(RulesConst, LeavesDivisionByZeroForRunTime) {
  UOp e = idx(1) / idx(0);
  EXPECT_TRUE(stays(e));
  EXPECT_TRUE(stays(idx(1) % idx(0)));
}

TEST_F(RulesConst, BoundsDecideIntegerAndBoolNodes) {
  // x in [0, 10]
  EXPECT_TRUE(check(x.lt(11), boolean(true)));
  EXPECT_TRUE(check(x.lt(0), boolean(false)));
  EXPECT_TRUE(check(x.ne(-1), boolean(true)));
  EXPECT_TRUE(check(x / 11, idx(0)));
  EXPECT_TRUE(check(x.maximum(-3) * 0 + (x % 1), idx(0)));
  EXPECT_TRUE(check(var("k", 4, 4), idx(4)));     // a variable of one value
  EXPECT_EQ(simplify(UOp::range(1, 0)), idx(0));  // a loop of one iteration
  EXPECT_TRUE(check((x.lt(3) & x.lt(11)).ne(x.lt(3)), boolean(false)));
}

TEST_F(RulesConst, BoundsDecideNothingWhenTheyAdmitTwoValues) {
  EXPECT_TRUE(stays(x.lt(10)));
  EXPECT_TRUE(stays(x / 10));
}

TEST_F(RulesConst, BoundsNeverDecideFloatValuedNodes) {
  // the same comparison on floats is not folded: float nodes have no bounds
  UOp c = x.cast(dtypes::float32).lt(f32(100.0));
  EXPECT_TRUE(stays(c));
  EXPECT_TRUE(check(x.lt(100), boolean(true)));  // the integer twin folds
}

TEST_F(RulesConst, AddZero) {
  EXPECT_TRUE(check(x + 0, x));
  EXPECT_TRUE(check(0 + x, x));  // commuted
  EXPECT_TRUE(check(var("b", 0, 1, dtypes::int32) + i32(0), var("b", 0, 1, dtypes::int32)));
}

TEST_F(RulesConst, AddZeroIsNotForFloats) {
  // -0.0 + 0.0 is +0.0: dropping the + 0 would change the sign of zero
  EXPECT_TRUE(stays(xf + f32(0.0)));
  EXPECT_TRUE(check(f32(-0.0) + f32(0.0), f32(0.0)));  // constants still fold, to +0.0
}

TEST_F(RulesConst, MulOne) {
  EXPECT_TRUE(check(x * 1, x));
  EXPECT_TRUE(check(1 * x, x));
  EXPECT_TRUE(check(xf * f32(1.0), xf));  // exact for floats, NaN included
  EXPECT_TRUE(check(f32(1.0) * xf, xf));
}

TEST_F(RulesConst, MulOneNeedsOne) { EXPECT_TRUE(stays(x * -1)); }

TEST_F(RulesConst, MulZero) {
  EXPECT_TRUE(check(y * 0, idx(0)));
  EXPECT_TRUE(check(0 * y, idx(0)));
}

TEST_F(RulesConst, MulZeroIsNotForFloats) {
  // NaN * 0 and Inf * 0 are NaN
  EXPECT_TRUE(stays(xf * f32(0.0)));
}

TEST_F(RulesConst, CommutativeOperandsInCanonicalOrder) {
  // constants last
  EXPECT_TRUE(check(f32(3.0) + xf, xf + f32(3.0)));
  EXPECT_TRUE(check(f32(2.0) * xf, xf * f32(2.0)));
  EXPECT_TRUE(check(idx(3).maximum(y), y.maximum(3)));
  EXPECT_TRUE(check(idx(3).ne(y), y.ne(3)));
  EXPECT_TRUE(check(idx(3).eq(y), y.eq(3)));
  // variables by name
  EXPECT_TRUE(check(y.maximum(x), x.maximum(y)));
  UOp b = var("b", 0, 1, dtypes::bool_), c = var("c", 0, 1, dtypes::bool_);
  EXPECT_TRUE(check(c & b, b & c));
  EXPECT_TRUE(check(c | b, b | c));
  EXPECT_TRUE(check(c ^ b, b ^ c));
  UOp yf = var("y", 0, 10, dtypes::float32);
  EXPECT_TRUE(check(yf + xf, xf + yf));  // swapping two float operands is exact
}

TEST_F(RulesConst, CanonicalOrderLeavesOrderedOperandsAndNonCommutativeOps) {
  EXPECT_TRUE(stays(x.maximum(y)));
  EXPECT_TRUE(stays(xf + f32(3.0)));
  EXPECT_TRUE(stays(idx(3).lt(y)));  // CMPLT is not commutative
  EXPECT_TRUE(stays(idx(3) / y.maximum(1)));
}

}  // namespace
