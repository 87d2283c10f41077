// tests/sched: the fusion rules that keep work from multiplying and reductions on their fast
// path — a reduction read through a broadcast, a window or several shifted views is stored once; a
// reduction read through a PAD is stored at its own shape, unmasked; a kernel holds one reduction,
// the one with the most work; a kernel binds at most kMaxKernelBuffers buffers. Each is pinned by
// the kernel count, the kernels' shapes and which nodes are stored.
#include <gtest/gtest.h>

#include <limits>
#include <span>

#include "sched/lazy.hpp"
#include "sched/schedule.hpp"
#include "schedules.hpp"

namespace vkgrad {
namespace {

// Whether a kernel gates any load with a valid mask (a padded read).
bool has_masked_load(const ScheduleKernel& k) {
  for (const UOp& u : toposort(k.ast))
    if (u.op() == Ops::INDEX && u.src().size() > 2) return true;
  return false;
}

using Shapes = std::vector<Shape>;
using Trips = std::vector<std::vector<int64_t>>;

TEST(FusionRules, AReductionBehindABroadcastIsStoredOnce) {
  // x - sum(x) over a row: the row sum is read at every element of the row, so it is its own
  // kernel; the subtraction reads it.
  const UOp x = input({6, 40});
  const UOp centered = x - lazy::expand(lazy::reduce(x, Ops::ADD, {1}), {6, 40});
  const Schedule s = schedule_of(centered);
  EXPECT_EQ(kernel_shapes(s), (Shapes{{6, 1}, {6, 40}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{40}, {}}));
}

TEST(FusionRules, AReductionReadThroughWindowsIsStoredOnce) {
  // A max over overlapping windows of a row sum: the windows repeat every element (an EXPAND),
  // so the sum is computed once, not once per window it falls in.
  const UOp x = input({8, 16});
  const UOp sums = lazy::reshape(lazy::reduce(x, Ops::ADD, {1}), {1, 8});
  const UOp windows = lazy::shrink(lazy::reshape(lazy::expand(sums, {3, 8}), {24}), {{0, 18}});
  const UOp rows = lazy::reshape(windows, {2, 9});  // rows of 9 starting 9 apart: a strided view
  const UOp m = lazy::reduce(lazy::shrink(rows, {{0, 2}, {0, 3}}), Ops::MAX, {1});
  const Schedule s = schedule_of(m);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(reduce_trips(s), (Trips{{16}, {3}}));
}

TEST(FusionRules, AReductionReadThroughShiftedViewsIsStoredOnce) {
  // The sum of three shifted views of a row-sum (a 3-tap average pool written with slices):
  // each view reads the sums at other indices, so they are stored once, not summed three
  // times over per output.
  const UOp x = input({10, 16});
  const UOp sums = lazy::reshape(lazy::reduce(x, Ops::ADD, {1}), {10});
  UOp acc;
  for (int64_t k = 0; k < 3; k++) {
    const UOp view = lazy::shrink(sums, {{k, k + 8}});
    acc = acc ? acc + view : view;
  }
  const Schedule s = schedule_of(acc);
  EXPECT_EQ(kernel_shapes(s), (Shapes{{10, 1}, {8}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{16}, {}}));
}

TEST(FusionRules, AReductionReadTwiceThroughOneViewStaysFused) {
  // sums * sums reads the same node at the same indices: one kernel computes it once.
  const UOp x = input({10, 16});
  const UOp sums = lazy::reshape(lazy::reduce(x, Ops::ADD, {1}), {10});
  const Schedule s = schedule_of(sums * sums);
  EXPECT_EQ(s.kernels.size(), 1u);
}

TEST(FusionRules, APaddedReductionIsStoredAtItsOwnShape) {
  // A row sum padded by one on each side (a max-pool's padding after a conv): the sum runs as
  // its own unmasked kernel of 4 x 8 outputs, and only the cheap padding sees the mask.
  const UOp x = input({4, 8, 8});
  const UOp sums = lazy::reshape(lazy::reduce(x, Ops::ADD, {2}), {4, 8});
  const UOp padded = lazy::pad(sums, {{0, 0}, {1, 1}});
  const UOp root = padded * padded;
  const Schedule s = schedule_of(root);
  EXPECT_EQ(kernel_shapes(s), (Shapes{{4, 8, 1}, {4, 10}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{8}, {}}));
  EXPECT_FALSE(has_masked_load(s.kernels[0]));
  EXPECT_TRUE(has_masked_load(s.kernels[1]));
}

TEST(FusionRules, AnEpiloguePaddedWithAValueIsStoredUnpaddedAndReadMasked) {
  // Windows of 3 over row sums with an epilogue, padded with -inf (a conv with its scale and
  // ReLU, then a max-pool's padding): the sums and their epilogue are one unmasked kernel at
  // their own shape, and the max reads them through the padding's masks. The pad is a view with
  // a fill: no kernel of its own copies the padded rows.
  const UOp x = input({8, 8});
  const UOp sums = lazy::reshape(lazy::reduce(x, Ops::ADD, {1}), {8});
  const UOp act = sums * sums + sums;
  auto filled = [](DType dt, ConstValue v, const Shape& shape) {
    return lazy::expand(lazy::reshape(UOp::const_(dt, v), Shape(shape.size(), 1)), shape);
  };
  const UOp mask = lazy::pad(filled(dtypes::bool_, true, {8}), {{1, 1}});
  const UOp padded =
      UOp::make(Ops::WHERE, dtypes::float32,
                {mask, lazy::pad(act, {{1, 1}}),
                 filled(dtypes::float32, -std::numeric_limits<double>::infinity(), {10})});
  // Rows of 11 over 8 copies of the 10 values: row o starts at value o, its first 3 are the
  // window at o (a read through a broadcast of 8, as a pool's).
  const UOp copies = lazy::reshape(lazy::expand(lazy::reshape(padded, {1, 10}), {8, 10}), {80});
  const UOp rows = lazy::reshape(lazy::shrink(copies, {{0, 77}}), {7, 11});
  const UOp m = lazy::reduce(lazy::shrink(rows, {{0, 7}, {0, 3}}), Ops::MAX, {1});
  const Schedule s = schedule_of(m);
  EXPECT_EQ(kernel_shapes(s), (Shapes{{8}, {7, 1}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{8}, {3}}));
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_FALSE(has_masked_load(s.kernels[0]));
  EXPECT_TRUE(has_masked_load(s.kernels[1]));
}

TEST(FusionRules, AnUnpaddedReductionStaysFusedWithItsEpilogue) {
  // The rule above is about PAD only: a reduction with an elementwise epilogue is one kernel.
  const UOp x = input({4, 8, 8});
  const UOp sums = lazy::reshape(lazy::reduce(x, Ops::ADD, {2}), {4, 8});
  const Schedule s = schedule_of(sums * sums);
  EXPECT_EQ(s.kernels.size(), 1u);
}

TEST(FusionRules, AStoredReductionIsStoredWithItsElementwiseEpilogue) {
  // A linear layer (x @ w + b) whose output is read by a matmul with itself: the matmul is
  // stored because it is read behind a broadcast, and the bias add is stored with it, so the
  // second kernel reads one buffer and adds no bias in its inner loop.
  const UOp x = input({4, 8}), w = input({8, 6}), b = input({6});
  const UOp mm =
      lazy::reshape(lazy::reduce(lazy::expand(lazy::reshape(x, {4, 8, 1}), {4, 8, 6}) *
                                     lazy::expand(lazy::reshape(w, {1, 8, 6}), {4, 8, 6}),
                                 Ops::ADD, {1}),
                    {4, 6});
  const UOp y = mm + lazy::expand(lazy::reshape(b, {1, 6}), {4, 6});
  const UOp yyt = lazy::reduce(lazy::expand(lazy::reshape(y, {4, 1, 6}), {4, 4, 6}) *
                                   lazy::expand(lazy::reshape(y, {1, 4, 6}), {4, 4, 6}),
                               Ops::ADD, {2});
  const Schedule s = schedule_of(yyt);
  ASSERT_EQ(kernel_shapes(s), (Shapes{{4, 6}, {4, 4, 1}}));
  EXPECT_EQ(reduce_trips(s), (Trips{{8}, {6}}));
  auto inputs_read = [&](const ScheduleKernel& k) {
    int n = 0;
    for (int i : k.buffers) n += s.buffers[i].kind == ScheduleBuffer::Kind::input;
    return n;
  };
  EXPECT_EQ(inputs_read(s.kernels[0]), 3);  // x, w and b
  EXPECT_EQ(inputs_read(s.kernels[1]), 0);  // y alone, bias included
  EXPECT_EQ(s.kernels[1].buffers.size(), 2u);
}

TEST(FusionRules, OfTwoReductionsSideBySideTheLargerStaysFused) {
  // A residual block's conv plus its downsample conv: two reductions added. The one with less
  // work (over 8) is stored; the one over 32 stays fused with the add.
  const UOp a = input({16, 32}), b = input({16, 8});
  const UOp big = lazy::reduce(a, Ops::ADD, {1}), small = lazy::reduce(b, Ops::ADD, {1});
  for (const UOp& root : {big + small, small + big}) {
    const Schedule s = schedule_of(root);
    EXPECT_EQ(kernel_shapes(s), (Shapes{{16, 1}, {16, 1}}));
    EXPECT_EQ(reduce_trips(s), (Trips{{8}, {32}}));
  }
}

TEST(FusionRules, AReductionThatIsTheOutputKeepsItsKernel) {
  // The output is a reduction whose input adds another reduction's broadcast: the inner one is
  // stored (it sits inside a reduction), the outer stays the output's kernel.
  const UOp a = input({16, 32});
  const UOp inner = lazy::expand(lazy::reduce(a, Ops::MAX, {1}), {16, 32});
  const Schedule s = schedule_of(lazy::reduce(a - inner, Ops::ADD, {1}));
  EXPECT_EQ(reduce_trips(s), (Trips{{32}, {32}}));
}

TEST(FusionRules, AKernelBindsAtMostTheBufferLimit) {
  // The sum of 40 inputs would bind 41 buffers: it is cut into kernels that each bind at most
  // kMaxKernelBuffers, and every input is still read exactly once.
  UOp total;
  for (int i = 0; i < 40; ++i) {
    const UOp x = input({5});
    total = i == 0 ? x : total + x;
  }
  const Schedule s = schedule_of(total);
  EXPECT_EQ(s.kernels.size(), 2u);
  int input_reads = 0;
  for (const ScheduleKernel& k : s.kernels) {
    EXPECT_LE(k.buffers.size(), kMaxKernelBuffers);
    for (int b : k.buffers) input_reads += s.buffers[b].kind == ScheduleBuffer::Kind::input;
  }
  EXPECT_EQ(input_reads, 40);
  // A few inputs fit in one kernel.
  UOp few = input({5});
  for (int i = 0; i < 10; ++i) few = few + input({5});
  EXPECT_EQ(schedule_of(few).kernels.size(), 1u);
}

}  // namespace
}  // namespace vkgrad
