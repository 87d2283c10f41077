#include <gtest/gtest.h>

#include "ir/print.hpp"
#include "ir/symbolic/symbolic.hpp"

using namespace vkgrad;

TEST(Smoke, InternAndFold) {
  UOp x = UOp::variable("x", 0, 10);
  UOp a = x + 3;
  UOp b = x + 3;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.vmin(), 3);
  EXPECT_EQ(a.vmax(), 13);
  UOp c = UOp::const_(dtypes::index, 2) * 3 + x * 1 + 0;
  EXPECT_EQ(render(simplify(c)), "(6+x)");
}
