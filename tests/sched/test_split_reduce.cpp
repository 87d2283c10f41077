// tests/sched: the split of a large reduction (split_reduce.cpp) — it gives exactly the graph of
// the split written by hand, two kernels of the right shapes, for every axis or the last axes of
// a few rows; each precondition broken on its own leaves the reduction whole, in one kernel.
#include <gtest/gtest.h>

#include <numeric>
#include <span>

#include "sched/lazy.hpp"
#include "sched/schedule.hpp"
#include "sched/split_reduce.hpp"
#include "schedules.hpp"

namespace vkgrad {
namespace {

std::vector<int64_t> every_axis(const UOp& x) {
  std::vector<int64_t> axes(lazy::shape_of(x).size());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

UOp sum(const UOp& x) { return lazy::reduce(x, Ops::ADD, every_axis(x)); }

using Shapes = std::vector<Shape>;
using Trips = std::vector<std::vector<int64_t>>;

TEST(SplitReduce, IsTheSplitWrittenByHand) {
  // (64, 32, 64) is a view of a buffer: the rows are one view of the buffer, not a view of the
  // view.
  const UOp x = input({64, 32, 64});
  for (Ops op : {Ops::ADD, Ops::MAX, Ops::MUL}) {
    const UOp rows = lazy::reshape(x.src(0), {kSplitReduceRows, 512});
    const UOp by_hand =
        lazy::reshape(lazy::reduce(lazy::reduce(rows, op, {1}), op, {0}), {1, 1, 1});
    EXPECT_EQ(split_reduceop(key_of(lazy::reduce(x, op, every_axis(x)))), key_of(by_hand))
        << op_name(op);
  }
  // Two axes already: the reduction of the rows has the reduction's shape, and no view follows.
  const UOp y = input({1024, 128});
  const UOp whole =
      lazy::reduce(lazy::reduce(lazy::reshape(y.src(0), {256, 512}), Ops::ADD, {1}), Ops::ADD, {0});
  EXPECT_EQ(split_reduceop(key_of(sum(y))), key_of(whole));
  // A buffer that already has the rows' shape is read as it is.
  const UOp z = input({256, 1024});
  EXPECT_EQ(split_reduceop(key_of(sum(z))),
            key_of(lazy::reduce(lazy::reduce(z, Ops::ADD, {1}), Ops::ADD, {0})));
}

TEST(SplitReduce, ALargeFullReductionIsTwoKernels) {
  const Schedule s = schedule_of(sum(input({int64_t{1} << 20})));
  EXPECT_EQ(kernel_shapes(s), (Shapes{{256, 1}, {1}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{4096}, {256}}));
  // The second kernel reads the first's 256 partial results.
  ASSERT_EQ(s.kernels.size(), 2u);
  ASSERT_EQ(s.kernels[1].buffers.size(), 2u);
  EXPECT_EQ(s.kernels[1].buffers[1], s.kernels[0].buffers[0]);
  EXPECT_EQ(s.buffers[s.kernels[0].buffers[0]].kind, ScheduleBuffer::Kind::intermediate);
  EXPECT_EQ(s.buffers[s.kernels[0].buffers[0]].count, 256);

  // Over several axes, the output keeps its axes of size 1; MAX splits the same way.
  const UOp x = input({64, 32, 64});
  const Schedule m = schedule_of(lazy::reduce(x, Ops::MAX, {0, 1, 2}));
  EXPECT_EQ(kernel_shapes(m), (Shapes{{256, 1}, {1, 1, 1}}));
  EXPECT_EQ(reduce_trips(m), (Trips{{512}, {256}}));
}

TEST(SplitReduce, ASplitReductionBehindAnExpand) {
  // x - sum(x): the partial sums, the sum (stored as the reduction of the rows, whose view in
  // the shape (1,) the difference reads), then the difference.
  const UOp x = input({int64_t{1} << 17});
  const UOp centered = x - lazy::expand(sum(x), {int64_t{1} << 17});
  EXPECT_EQ(kernel_shapes(schedule_of(centered)), (Shapes{{256, 1}, {1, 1}, {int64_t{1} << 17}}));
}

TEST(SplitReduce, TheSmallestSplitAndTheLargestWhole) {
  EXPECT_EQ(schedule_of(sum(input({kSplitReduceMin}))).kernels.size(), 2u);
  const Schedule s = schedule_of(sum(input({kSplitReduceMin - kSplitReduceRows})));
  EXPECT_EQ(kernel_shapes(s), (Shapes{{1}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{kSplitReduceMin - kSplitReduceRows}}));
}

TEST(SplitReduce, NotWholeRowsIsNotSplit) {
  const int64_t n = kSplitReduceMin + kSplitReduceRows / 2;
  const UOp r = sum(input({n}));
  EXPECT_EQ(split_reduceop(key_of(r)), key_of(r));
  EXPECT_EQ(reduce_trips(schedule_of(r)), (Trips{{n}}));
}

TEST(SplitReduce, ASymbolicAxisIsNotSplit) {
  // (n, 1024) with n up to 256: as many elements as a split needs at every size from 64 on.
  const int64_t n = lazy::sym_dim(VarArg{"split_reduce_n", 1, 256});
  const UOp b = lazy::buffer(dtypes::float32, 256 * 1024, "CPU");
  const UOp x = lazy::reshape_bound(b, {n, 1024}, {{"split_reduce_n", 128}});
  const UOp r = lazy::reduce(x, Ops::ADD, {0, 1});
  EXPECT_EQ(split_reduceop(key_of(r)), key_of(r));
  EXPECT_EQ(schedule_of(r).kernels.size(), 1u);
}

TEST(SplitReduce, AFewRowsSplitAlongTheirLastAxes) {
  // sum over axis 1 of (4, 2^16): 256 partial results per row, then the rows' sums.
  const UOp x = input({4, kSplitReduceMin});
  const UOp r = lazy::reduce(x, Ops::ADD, {1});
  const UOp rows = lazy::reshape(x.src(0), {4, kSplitReduceRows, 256});
  const UOp by_hand =
      lazy::reshape(lazy::reduce(lazy::reduce(rows, Ops::ADD, {2}), Ops::ADD, {1}), {4, 1});
  EXPECT_EQ(split_reduceop(key_of(r)), key_of(by_hand));
  const Schedule s = schedule_of(r);
  EXPECT_EQ(kernel_shapes(s), (Shapes{{4, 256, 1}, {4, 1}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{256}, {256}}));
  // Over the last two axes of (2, 512, 256), with MAX.
  const UOp y = input({2, 512, 256});
  const Schedule m = schedule_of(lazy::reduce(y, Ops::MAX, {1, 2}));
  EXPECT_EQ(kernel_shapes(m), (Shapes{{2, 256, 1}, {2, 1, 1}}));
  EXPECT_EQ(reduce_trips(m), (Trips{{512}, {256}}));
}

TEST(SplitReduce, ManyRowsAreNotSplit) {
  // As many outputs as a split makes partial results: the output axis has the threads.
  const UOp r = lazy::reduce(input({kSplitReduceRows, kSplitReduceMin}), Ops::ADD, {1});
  EXPECT_EQ(split_reduceop(key_of(r)), key_of(r));
  EXPECT_EQ(kernel_shapes(schedule_of(r)), (Shapes{{256, 1}}));
  const UOp few = lazy::reduce(input({kSplitReduceRows - 1, kSplitReduceMin}), Ops::ADD, {1});
  EXPECT_EQ(schedule_of(few).kernels.size(), 2u);
}

TEST(SplitReduce, AReductionOfLeadingAxesIsNotSplit) {
  // Rows of the reduced axes would not be a plain reshape of (2^16, 4).
  const UOp r = lazy::reduce(input({kSplitReduceMin, 4}), Ops::ADD, {0});
  EXPECT_EQ(split_reduceop(key_of(r)), key_of(r));
  EXPECT_EQ(kernel_shapes(schedule_of(r)), (Shapes{{1, 4}}));
  const UOp middle = lazy::reduce(input({2, kSplitReduceMin, 2}), Ops::ADD, {1});
  EXPECT_EQ(split_reduceop(key_of(middle)), key_of(middle));
}

}  // namespace
}  // namespace vkgrad
