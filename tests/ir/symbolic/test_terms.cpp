// The shared vocabulary of terms.hpp: the canonical order, sums as terms, floor arithmetic.
#include "check.hpp"
#include "ir/symbolic/terms.hpp"

using namespace vkgrad;
using namespace vkgrad::test;
using namespace vkgrad::symbolic;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class Vars : public ::testing::Test {
 protected:
  const UOp a = var("a", 0, 10);
  const UOp b = var("b", -5, 5);
};
class CanonicalOrder : public Vars {};
class SplitSum : public Vars {};
class BuildSum : public Vars {};
class SumBounds : public Vars {};

TEST_F(CanonicalOrder, VariablesByNameConstantsLast) {
  EXPECT_TRUE(order_less(a, b));
  EXPECT_FALSE(order_less(b, a));
  EXPECT_TRUE(order_less(b, idx(-100)));
  EXPECT_FALSE(order_less(idx(-100), b));
  EXPECT_EQ(order_cmp(a, a), 0);
}

TEST_F(CanonicalOrder, NodesFollowTheLeafTheyLeadWith) {
  // a, then the nodes that lead with a, then b
  EXPECT_TRUE(order_less(a, a * 2));
  EXPECT_TRUE(order_less(a * 2, b));
  EXPECT_TRUE(order_less(a / 2, b));
  EXPECT_TRUE(order_less((a + 1) % 3, b * 4));
  // among nodes leading with a: by op (MUL before IDIV before MOD), then by structure
  EXPECT_TRUE(order_less(a * b, a / 2));
  EXPECT_TRUE(order_less(a / 2, a % 2));
}

TEST_F(CanonicalOrder, LeafKinds) {
  UOp g = UOp::special("gidx0", idx(16));
  UOp r0 = UOp::range(8, 0), r1 = UOp::range(8, 1);
  EXPECT_TRUE(order_less(b, g));   // variables, then SPECIALs
  EXPECT_TRUE(order_less(g, r0));  // then RANGEs, by axis
  EXPECT_TRUE(order_less(r0, r1));
}

TEST_F(CanonicalOrder, DoesNotDependOnCreationOrder) {
  // nodes built in another order (and so at other addresses) compare the same
  UOp z2 = var("zz", 0, 9) * 3, y2 = var("yy", 0, 9) / 2;
  EXPECT_TRUE(order_less(y2, z2));
  EXPECT_EQ(render(simplify(z2 + y2)), "((yy//2)+(zz*3))");
}

TEST_F(SplitSum, TermsAndConstant) {
  Sum s = split_sum((a * 3 + b) + 5);
  ASSERT_EQ(s.terms.size(), 2u);
  EXPECT_EQ(s.terms[0].base, a);
  EXPECT_EQ(s.terms[0].coeff, 3);
  EXPECT_EQ(s.terms[1].base, b);
  EXPECT_EQ(s.terms[1].coeff, 1);
  EXPECT_EQ(s.constant, 5);
}

TEST_F(SplitSum, FlattensScaledSumsAndKeepsLikeTermsApart) {
  Sum s = split_sum((a + b) * 2 + (a + 1) * -3);
  ASSERT_EQ(s.terms.size(), 3u);
  EXPECT_EQ(s.terms[0].coeff, 2);
  EXPECT_EQ(s.terms[1].coeff, 2);
  EXPECT_EQ(s.terms[2].base, a);
  EXPECT_EQ(s.terms[2].coeff, -3);
  EXPECT_EQ(s.constant, -3);
}

TEST_F(SplitSum, NonSumIsOneTerm) {
  Sum s = split_sum(a / 2);
  ASSERT_EQ(s.terms.size(), 1u);
  EXPECT_EQ(s.terms[0].base, a / 2);
  EXPECT_EQ(split_sum(idx(7)).terms.size(), 0u);
  EXPECT_EQ(split_sum(idx(7)).constant, 7);
}

TEST_F(BuildSum, LeftChainConstantLastZerosDropped) {
  EXPECT_EQ(build_sum(dtypes::index, {{a, 2}, {b, 0}, {b * b, 1}}, -4), (a * 2 + b * b) + -4);
  EXPECT_EQ(build_sum(dtypes::index, {{a, 0}}, 0), idx(0));
  EXPECT_EQ(build_sum(dtypes::index, {}, 3), idx(3));
}

TEST_F(SumBounds, FromTermBounds) {
  Bounds r = sum_bounds(split_sum(a * 2 + b * -3 + 1));
  EXPECT_EQ(static_cast<int64_t>(r.lo), 0 - 15 + 1);
  EXPECT_EQ(static_cast<int64_t>(r.hi), 20 + 15 + 1);
}

TEST(FloorArithmetic, Values) {
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_div(7, -2), -4);
  EXPECT_EQ(floor_div(-7, -2), 3);
  EXPECT_EQ(floor_div(-8, 2), -4);
  EXPECT_EQ(floor_mod(-7, 2), 1);
  EXPECT_EQ(floor_mod(7, -2), -1);
  EXPECT_EQ(floor_mod(-8, 4), 0);
  EXPECT_EQ(ceil_div(7, 2), 4);
  EXPECT_EQ(ceil_div(-7, 2), -3);
  EXPECT_EQ(ceil_div(8, 2), 4);
  EXPECT_EQ(ceil_div(7, -2), -3);
  EXPECT_EQ(gcd(12, -18), 6);
  EXPECT_EQ(gcd(0, -5), 5);
  EXPECT_EQ(gcd(std::numeric_limits<int64_t>::min(), 4), 4);
}

TEST(SignedIntegers, WhichDtypes) {
  EXPECT_TRUE(is_signed_int(dtypes::index));
  EXPECT_TRUE(is_signed_int(dtypes::int32));
  EXPECT_FALSE(is_signed_int(dtypes::uint32));
  EXPECT_FALSE(is_signed_int(dtypes::float32));
  EXPECT_FALSE(is_signed_int(dtypes::bool_));
  EXPECT_FALSE(is_signed_int(dtypes::int32.vec(4)));
  EXPECT_TRUE(fits(dtypes::int32, 2147483647));
  EXPECT_FALSE(fits(dtypes::int32, 2147483648LL));
}

}  // namespace
