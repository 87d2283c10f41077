// tests/sched: lowering a kernel's views to index expressions (indexing.cpp) — a reshape that
// adds or drops dimensions of size 1, or splits one axis, keeps the other axes' indices: the
// kernel computes no division or modulo it does not need.
#include <gtest/gtest.h>

#include <span>

#include "sched/lazy.hpp"
#include "sched/schedule.hpp"
#include "schedules.hpp"

namespace vkgrad {
namespace {

int divisions(const UOp& ast) {
  int n = 0;
  for (const UOp& u : toposort(ast)) n += u.op() == Ops::IDIV || u.op() == Ops::MOD;
  return n;
}

TEST(Indexing, AReshapeOfOnesNeedsNoDivision) {
  // A keepdim result (2, 8, 5, 5, 1, 1), viewed as (2, 8, 5, 5) and padded: every axis keeps its
  // index, even where the padding makes the flat index negative.
  const UOp pooled = lazy::reduce(input({2, 8, 5, 5, 2, 2}), Ops::MAX, {4, 5});
  const UOp view = lazy::pad(lazy::reshape(pooled, {2, 8, 5, 5}), {{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  const Schedule s = schedule_of(lazy::contiguous(lazy::reshape(view, {2, 8, 49})));
  ASSERT_EQ(s.kernels.size(), 2u);
  // The padded copy reads the pooled buffer by (n, c, y, x); only its own output's split of
  // 49 into 7 x 7 divides.
  EXPECT_EQ(divisions(s.kernels[1].ast), 2);
}

TEST(Indexing, ASplitAxisDividesOnlyItself) {
  // (4, 6, 10) viewed as (4, 2, 3, 10): the run 6 -> (2, 3) is the only one that needs
  // arithmetic, and it flattens two indices into one (no division).
  const UOp x = input({4, 6, 10});
  const UOp y = lazy::reshape(lazy::permute(x, {2, 1, 0}), {10, 6, 4});
  const UOp split = lazy::reshape(y, {10, 2, 3, 4});
  const Schedule s = schedule_of(lazy::contiguous(lazy::permute(split, {3, 1, 2, 0})));
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(divisions(s.kernels[0].ast), 0);
}

}  // namespace
}  // namespace vkgrad
