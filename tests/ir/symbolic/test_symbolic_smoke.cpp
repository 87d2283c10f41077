#include <gtest/gtest.h>

#include "ir/print.hpp"
#include "ir/symbolic/symbolic.hpp"

using namespace vkgrad;

TEST(SymbolicSmoke, FoldsConstants) {
  UOp two = UOp::const_(dtypes::index, 2);
  EXPECT_EQ(simplify(two * 3 + 4), UOp::const_(dtypes::index, 10));
}
