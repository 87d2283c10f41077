// Rules of rules_where.cpp: WHERE folding and boolean identities.
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class RulesWhere : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);
  const UOp y = var("y", -5, 5);
  const UOp z = var("z", 0, 3);
  const UOp p = x.lt(5);  // a condition bounds cannot decide
  const UOp q = y.lt(1);
  const UOp b = var("b", 0, 1, dtypes::bool_);  // a bool variable
  const UOp xf = var("x", 0, 10, dtypes::float32);
  const UOp t = boolean(true);
  const UOp f = boolean(false);
};

TEST_F(RulesWhere, ConstantCondition) {
  EXPECT_TRUE(check(t.where(x, y), x));
  EXPECT_TRUE(check(f.where(x, y), y));
  EXPECT_TRUE(check(t.where(xf, xf * f32(2.0)), xf));
}
TEST_F(RulesWhere, ConditionThatMayGoEitherWayStays) { EXPECT_TRUE(stays(p.where(x, y))); }

TEST_F(RulesWhere, SameBranches) {
  EXPECT_TRUE(check(p.where(y, y), y));
  EXPECT_TRUE(check(p.where(xf, xf), xf));
}
TEST_F(RulesWhere, DifferentBranchesStay) { EXPECT_TRUE(stays(p.where(y, y + 1))); }

TEST_F(RulesWhere, BoolBranchesAreTheCondition) {
  EXPECT_TRUE(check(p.where(t, f), p));
  EXPECT_TRUE(check(p.where(f, t), p.logical_not()));
}
TEST_F(RulesWhere, IntegerOneAndZeroAreNotTheCondition) {
  // where(c, 1, 0) is an integer: it must not become the bool c
  EXPECT_TRUE(stays(p.where(idx(1), idx(0))));
  EXPECT_TRUE(stays(p.where(idx(0), idx(1))));
}

TEST_F(RulesWhere, NegatedConditionSwapsBranches) {
  EXPECT_TRUE(check(p.logical_not().where(x, y), p.where(y, x)));
  EXPECT_TRUE(check(x.ge(5).where(x, y), p.where(y, x)));  // x >= 5 is !(x < 5)
}
TEST_F(RulesWhere, OtherConditionsKeepTheirBranches) { EXPECT_TRUE(stays(p.ne(q).where(x, y))); }

TEST_F(RulesWhere, NestedWhereOnTheSameCondition) {
  EXPECT_TRUE(check(p.where(p.where(x, y), z), p.where(x, z)));
  EXPECT_TRUE(check(p.where(x, p.where(y, z)), p.where(x, z)));
}
TEST_F(RulesWhere, NestedWhereOnAnotherConditionStays) {
  EXPECT_TRUE(stays(p.where(q.where(x, y), z)));
}

TEST_F(RulesWhere, NestedWhereSharingTheElseBranch) {
  EXPECT_TRUE(check(p.where(q.where(x, y), y), (p & q).where(x, y)));
}
TEST_F(RulesWhere, NestedWhereWithOtherElseBranchesStays) {
  EXPECT_TRUE(stays(p.where(q.where(x, y), z)));
}

TEST_F(RulesWhere, DoubleNegation) {
  EXPECT_TRUE(check(b.logical_not().logical_not(), b));
  EXPECT_TRUE(check(p.logical_not().logical_not(), p));
}
TEST_F(RulesWhere, DoubleNegationIsForBools) {
  // (x != 1) != True is !(x != 1), i.e. x == 1 as a bool: not the integer x
  EXPECT_TRUE(avoids(x.ne(1).logical_not(), x));
}

TEST_F(RulesWhere, AndOrWithConstants) {
  EXPECT_TRUE(check(b & t, b));
  EXPECT_TRUE(check(t & b, b));
  EXPECT_TRUE(check(b & f, f));
  EXPECT_TRUE(check(b | f, b));
  EXPECT_TRUE(check(f | b, b));
  EXPECT_TRUE(check(b | t, t));
}
TEST_F(RulesWhere, AndOrWithIntegerConstantsAreNotBoolean) {
  UOp k = var("k", 0, 10);
  EXPECT_TRUE(stays(k & idx(1)));  // k & 1 is the low bit, not k
  EXPECT_TRUE(avoids(k | idx(1), idx(1)));
}

TEST_F(RulesWhere, XorWithConstants) {
  EXPECT_TRUE(check(b ^ f, b));
  EXPECT_TRUE(check(b ^ t, b.logical_not()));
}
TEST_F(RulesWhere, XorWithIntegerConstantsIsNotBoolean) {
  UOp k = var("k", 0, 10);
  EXPECT_TRUE(stays(k ^ idx(1)));
}

TEST_F(RulesWhere, ComparisonsWithBoolConstants) {
  EXPECT_TRUE(check(b.ne(f), b));
  EXPECT_TRUE(check(b.eq(t), b));
  EXPECT_TRUE(check(b.eq(f), b.logical_not()));
}
TEST_F(RulesWhere, ComparisonsWithIntegerConstantsAreNotBoolean) {
  UOp k = var("k", 0, 1);
  EXPECT_TRUE(stays(k.ne(idx(0))));  // a bool, not the integer k
  EXPECT_TRUE(stays(k.eq(idx(1))));
}

TEST_F(RulesWhere, ComplementaryOperands) {
  EXPECT_TRUE(check(b & b.logical_not(), f));
  EXPECT_TRUE(check(b | b.logical_not(), t));
  EXPECT_TRUE(check(p.logical_not() & p, f));  // commuted
}
TEST_F(RulesWhere, ComplementaryVectorOperandsGiveAVector) {
  UOp bv = var("bv", 0, 1, dtypes::bool_.vec(4));
  EXPECT_EQ(simplify(bv & bv.logical_not()), UOp::const_(dtypes::bool_.vec(4), false));
  EXPECT_EQ(simplify(bv | bv.logical_not()), UOp::const_(dtypes::bool_.vec(4), true));
}
TEST_F(RulesWhere, NonComplementaryOperandsStay) { EXPECT_TRUE(stays(p & q.logical_not())); }

TEST_F(RulesWhere, Idempotent) {
  EXPECT_TRUE(check(b & b, b));
  EXPECT_TRUE(check(b | b, b));
  EXPECT_TRUE(check(x & x, x));
  EXPECT_TRUE(check(x | x, x));
}
TEST_F(RulesWhere, XorSelf) {
  EXPECT_TRUE(check(b ^ b, f));
  EXPECT_TRUE(check(x ^ x, idx(0)));
}
TEST_F(RulesWhere, DifferentOperandsStay) {
  EXPECT_TRUE(stays(p & q));
  EXPECT_TRUE(stays(p ^ q));
}

TEST_F(RulesWhere, Absorption) {
  EXPECT_TRUE(check(p | (p & q), p));
  EXPECT_TRUE(check((q & p) | p, p));  // commuted
  EXPECT_TRUE(check(p & (p | q), p));
  EXPECT_TRUE(check(x | (x & z), x));
}
TEST_F(RulesWhere, AbsorptionNeedsTheSameOperand) { EXPECT_TRUE(stays((b & q) | p)); }

}  // namespace
