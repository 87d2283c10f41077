// The entry points of symbolic.hpp: simplify, substitute and resolve.
#include <vkgrad/error.hpp>

#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

// Variables live in the fixture, not at namespace scope, so no UOp outlives main().
class Vars : public ::testing::Test {
 protected:
  const UOp x = var("x", 0, 10);
  const UOp y = var("y", -5, 5);
};
class Simplify : public Vars {};
class Substitute : public Vars {};
class Resolve : public Vars {};

TEST_F(Simplify, IsIdempotent) {
  UOp e = ((x * 4 + y + 3) / 2 + (x + 1) % 3).maximum(y * 2) - x;
  UOp s = simplify(e);
  EXPECT_EQ(simplify(s), s);
  EXPECT_TRUE(equivalent(e, s));
}

TEST_F(Simplify, LeavesNonIndexGraphsAlone) {
  UOp buf = UOp::define_global(dtypes::float32.ptr(16), 0);
  UOp ld = buf.index(x + 0).load();
  EXPECT_EQ(simplify(ld), buf.index(x).load());  // only the index math changes
  UOp st = buf.index(x).store(ld * f32(1.0));
  EXPECT_EQ(simplify(st), buf.index(x).store(buf.index(x).load()));
}

TEST_F(Simplify, HandlesDeepChains) {
  // 5000 nested additions: no recursion, and a canonical result
  UOp e = x;
  for (int i = 0; i < 5000; ++i) e = e + 1;
  EXPECT_EQ(simplify(e), x + 5000);
}

TEST_F(Simplify, HandlesLongSumsOfVariables) {
  std::vector<UOp> vs;
  for (int i = 0; i < 64; ++i) vs.push_back(var(fmt::format("v{:02}", i), 0, 3));
  UOp e = vs.back();
  for (int i = 62; i >= 0; --i) e = e + vs[i] * 2 + vs[i] * -1;  // reversed, with like terms
  UOp want = vs[0];
  for (int i = 1; i < 64; ++i) want = want + vs[i];
  EXPECT_EQ(simplify(e), want);
}

TEST_F(Substitute, ReplacesNodesEverywhere) {
  UOp e = x * 2 + y;
  EXPECT_EQ(substitute(e, {{x, idx(3)}}), idx(3) * 2 + y);
  EXPECT_EQ(simplify(substitute(e, {{x, idx(3)}})), y + 6);
  EXPECT_EQ(substitute(e, {{x, y}, {y, x}}), y * 2 + x);  // simultaneous, not one after another
}

TEST_F(Substitute, ReplacesWholeSubgraphsFirst) {
  UOp e = (x + y) * 2;
  EXPECT_EQ(substitute(e, {{x + y, idx(1)}, {x, idx(5)}}), idx(1) * 2);
}

TEST_F(Substitute, MayUseTheReplacedNodeInItsReplacement) {
  UOp e = x + y;
  EXPECT_EQ(substitute(e, {{x, x * 2}}), x * 2 + y);
}

TEST_F(Substitute, EmptyMapIsIdentity) {
  UOp e = x + y;
  EXPECT_EQ(substitute(e, {}), e);
}

TEST_F(Resolve, BoundsDecide) {
  EXPECT_TRUE(resolve(x.lt(11)));
  EXPECT_FALSE(resolve(x.lt(0)));
  EXPECT_TRUE(resolve((x * 4 + 3).lt(44)));
  EXPECT_FALSE(resolve(((x + y) * 2 - y * 2 - x * 2).ne(0)));  // simplified first: 0 != 0
}

TEST_F(Resolve, UndecidedGivesTheDefault) {
  EXPECT_TRUE(resolve(x.lt(5)));
  EXPECT_TRUE(resolve(x.lt(5), true));
  EXPECT_FALSE(resolve(x.lt(5), false));
}

TEST_F(Resolve, NeedsABool) { EXPECT_THROW(resolve(x + 1), DTypeError); }

}  // namespace
