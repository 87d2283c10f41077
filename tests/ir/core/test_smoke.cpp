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
  UOp s = simplify(c);  // x + 6, in whichever order the simplifier puts sums
  EXPECT_TRUE(s == x + 6 || s == 6 + x) << render(s);
}
