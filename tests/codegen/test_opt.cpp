// tests/codegen: Opt actions — what apply_opts does to a kernel's ranges, the heuristics' lists
// on each kind of target, and the Error every invalid action gives (naming the kernel and the
// action). No device: kernels come from the scheduler, programs from codegen.
#include <gtest/gtest.h>

#include <vkgrad/error.hpp>
#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "scheduled.hpp"
#include "symbolic_kernels.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

// Every range of the kernel as (type, size), in id order.
std::vector<std::pair<AxisType, int64_t>> ranges(const UOp& k) {
  std::vector<UOp> rs;
  for (const UOp& u : toposort(k))
    if (u.op() == Ops::RANGE) rs.push_back(u);
  std::sort(rs.begin(), rs.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
  });
  std::vector<std::pair<AxisType, int64_t>> out;
  for (const UOp& r : rs) out.emplace_back(r.arg_as<AxisArg>().type, range_size(r));
  return out;
}

std::string error_of(const UOp& k, const std::vector<Opt>& opts, const Target& t) {
  try {
    apply_opts(k, opts, t);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

using A = AxisType;

TEST(Opt, UpcastAndUnrollSplitTheirAxis) {
  const UOp k = scheduled_kernel(input({32, 64}).matmul(input({64, 48})));
  const Target cpu = cpu::host_target();
  ASSERT_EQ(ranges(k), (std::vector<std::pair<A, int64_t>>{
                           {A::global, 32}, {A::global, 48}, {A::reduce, 64}}));
  // A second UPCAST of an axis goes outside the first: 48 = 3 * (2 * 8).
  const UOp u =
      apply_opts(k, {{OptOp::UPCAST, 1, 8}, {OptOp::UPCAST, 1, 2}, {OptOp::UNROLL, 0, 4}}, cpu);
  EXPECT_EQ(ranges(u), (std::vector<std::pair<A, int64_t>>{{A::global, 32},
                                                           {A::global, 3},
                                                           {A::reduce, 16},
                                                           {A::upcast, 2},
                                                           {A::upcast, 8},
                                                           {A::unroll, 4}}));
  EXPECT_EQ(apply_opts(k, {}, cpu), k);
  // An axis split whole leaves no outer range, and its REDUCE lists the unroll range alone.
  const UOp whole = apply_opts(k, {{OptOp::UNROLL, 0, 64}}, cpu);
  EXPECT_EQ(ranges(whole), (std::vector<std::pair<A, int64_t>>{
                               {A::global, 32}, {A::global, 48}, {A::unroll, 64}}));
  for (const UOp& u : toposort(whole))
    if (u.op() == Ops::REDUCE) {
      ASSERT_EQ(u.src().size(), 2u);
      EXPECT_EQ(u.src(1).op(), Ops::RANGE);
    }
  for (const Target& t : {cpu, full_target()})
    EXPECT_NO_THROW(codegen(k, {.opts = std::vector<Opt>{{OptOp::UNROLL, 0, 64}}}, t));
}

TEST(Opt, GroupSplitsTheReductionIntoStepsAndLanes) {
  const UOp k = scheduled_kernel(input({4, 4096}).sum(1));
  const UOp g = apply_opts(k, {{OptOp::GROUP, 0, 128}}, full_target());
  EXPECT_EQ(ranges(g), (std::vector<std::pair<A, int64_t>>{
                           {A::global, 4}, {A::reduce, 32}, {A::group_reduce, 128}}));
  // Reduce axes flattened; where the lanes do not divide them, the last step is gated.
  const UOp odd = scheduled_kernel(input({4, 10, 100}).sum({1, 2}));
  const UOp h = apply_opts(odd, {{OptOp::GROUP, 0, 128}}, full_target());
  EXPECT_EQ(ranges(h), (std::vector<std::pair<A, int64_t>>{
                           {A::global, 4}, {A::reduce, 8}, {A::group_reduce, 128}}));
  const std::vector<UOp> nodes = toposort(h);
  EXPECT_TRUE(
      std::any_of(nodes.begin(), nodes.end(), [](const UOp& u) { return u.op() == Ops::WHERE; }));
  const Program p = codegen(k, {.opts = std::vector<Opt>{{OptOp::GROUP, 0, 128}}}, full_target());
  EXPECT_EQ(p.local_size[0], 128u);
  EXPECT_EQ(p.groups[0], 4u);
}

TEST(Opt, LocalSplitsAnAxisIntoTheWorkgroup) {
  const UOp k = scheduled_kernel(input({64, 64}) + input({64, 64}).transpose());
  EXPECT_EQ(ranges(apply_opts(k, {{OptOp::LOCAL, 1, 16}}, full_target())),
            (std::vector<std::pair<A, int64_t>>{{A::global, 64}, {A::global, 4}, {A::local, 16}}));
  const Program p = codegen(k, {.opts = std::vector<Opt>{{OptOp::LOCAL, 1, 16}}}, full_target());
  EXPECT_EQ(p.local_size, (std::array<uint32_t, 3>{16, 1, 1}));
  EXPECT_EQ(p.groups, (std::array<uint32_t, 3>{4, 64, 1}));  // the innermost global axis is x
  EXPECT_EQ(p.opts, (std::vector<Opt>{{OptOp::LOCAL, 1, 16}}));
  // Two axes: a 16 x 4 workgroup, the innermost axis's lanes x.
  const std::vector<Opt> two{{OptOp::LOCAL, 1, 16}, {OptOp::LOCAL, 0, 4}};
  const Program q = codegen(k, {.opts = two}, full_target());
  EXPECT_EQ(q.local_size, (std::array<uint32_t, 3>{16, 4, 1}));
  EXPECT_EQ(q.groups, (std::array<uint32_t, 3>{4, 16, 1}));
}

// A GPU that needs tens of thousands of invocations groups the reductions of kernels with fewer
// outputs than that: a matmul's few outputs over a subgroup's lanes (the encoder's FFN
// projection, 128 x 256 outputs of 1024 steps), short rows over two steps a lane at least.
TEST(Opt, GpuGroupsReductionsOfFewOutputs) {
  Target gpu = full_target();
  gpu.tuning.min_invocations = 65536;
  gpu.subgroup_size = 32;
  const UOp ffn = scheduled_kernel(input({128, 1024}).matmul(input({1024, 256})));
  EXPECT_EQ(heuristic_opts(ffn, gpu), (std::vector<Opt>{{OptOp::GROUP, 0, 32}}));
  const UOp rows = scheduled_kernel(input({4, 128, 128}).max(2));
  EXPECT_EQ(heuristic_opts(rows, gpu), (std::vector<Opt>{{OptOp::GROUP, 0, 64}}));
  // Enough outputs: register tiles (and staged ones where the target has them).
  const UOp big = scheduled_kernel(input({512, 256}).matmul(input({256, 512})));
  EXPECT_NE(heuristic_opts(big, gpu).front().op, OptOp::GROUP);
  // Without the minimum (a target that does not say), the 4096-output rule.
  EXPECT_NE(heuristic_opts(ffn, full_target()).front().op, OptOp::GROUP);
}

// The fold of a max pool's gradient back onto its input (the overlapping windows' view read
// backwards) divides in its index math; the channels, which only offset its indices, are upcast
// by 16 on the CPU, so each division and remainder serves 16 outputs.
TEST(Opt, FoldsShareTheirIndexMathAcrossChannels) {
  Tensor x = input({2, 32, 9, 9});
  x.requires_grad_();
  (x.max_pool2d(3, 2, 1) * input({2, 32, 5, 5})).sum().backward();
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(*x.grad())});
  int folds = 0;
  for (const ScheduleKernel& k : build_schedule(g.key).kernels) {
    if (count_ops(k.ast, Ops::MOD) == 0 || count_ops(k.ast, Ops::REDUCE) == 0) continue;
    ++folds;
    EXPECT_EQ(heuristic_opts(k.ast, cpu::host_target()),
              (std::vector<Opt>{{OptOp::UPCAST, 1, 16}}));
  }
  EXPECT_GE(folds, 1);
  // A long reduction with such index math (a batch norm's sum over 16 x 16 x 16 pixels, one term
  // a stride-2 gradient placed at every other pixel) splits its accumulators instead.
  const Tensor placed = input({16, 32, 8, 1, 8, 1})
                            .pad({{0, 0}, {0, 0}, {0, 0}, {0, 1}, {0, 0}, {0, 1}})
                            .reshape({16, 32, 16, 16});
  const UOp sum = scheduled_kernel((placed + input({16, 32, 16, 16})).sum({0, 2, 3}));
  ASSERT_GT(count_ops(sum, Ops::MOD) + count_ops(sum, Ops::IDIV), 0);
  const std::vector<Opt> opts = heuristic_opts(sum, cpu::host_target());
  ASSERT_FALSE(opts.empty());
  EXPECT_EQ(opts.front().op, OptOp::UNROLL);
}

TEST(Opt, HeuristicsPerTarget) {
  const Target cpu = cpu::host_target(), gpu = full_target();
  const UOp mm = scheduled_kernel(input({32, 64}).matmul(input({64, 48})));
  EXPECT_EQ(heuristic_opts(mm, cpu),
            (std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 8}}));
  // The GPU's register tile, k by 4 (A's vec4 loads along k), then the lanes along the columns,
  // which A's loads ignore.
  EXPECT_EQ(heuristic_opts(mm, gpu), (std::vector<Opt>{{OptOp::UPCAST, 1, 4},
                                                       {OptOp::UPCAST, 1, 2},
                                                       {OptOp::UPCAST, 0, 8},
                                                       {OptOp::UNROLL, 0, 4},
                                                       {OptOp::LOCAL, 1, 6}}));
  const UOp big = scheduled_kernel(input({256, 256}).matmul(input({256, 256})));
  EXPECT_EQ(heuristic_opts(big, cpu), (std::vector<Opt>{{OptOp::GEMM, 0, 0}}));
  // A stride-1 3 x 3 convolution runs as Winograd from the target's tiles per image: a 28 x 28
  // output has 196.
  const UOp conv28 =
      scheduled_kernel(input({1, 64, 28, 28}).conv2d(input({64, 64, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(conv28, cpu), (std::vector<Opt>{{OptOp::GEMM, 0, 0}}));
  Target zen4 = cpu;
  zen4.tuning.winograd_min_tiles = 14 * 14;
  EXPECT_EQ(heuristic_opts(conv28, zen4), (std::vector<Opt>{{OptOp::GEMM, 3, 0}}));
  // A batch's images together: 16 of 16 x 16 (64 tiles each) run as Winograd, 16 of 8 x 8 (16
  // each) do not.
  const UOp conv16 =
      scheduled_kernel(input({16, 64, 16, 16}).conv2d(input({64, 64, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(conv16, cpu), (std::vector<Opt>{{OptOp::GEMM, 3, 0}}));
  const UOp conv8 =
      scheduled_kernel(input({16, 128, 8, 8}).conv2d(input({128, 128, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(conv8, cpu), (std::vector<Opt>{{OptOp::GEMM, 0, 0}}));
  // A classifier at batch 1 (the weight read along k): split accumulators along k, two vectors,
  // and 8 rows of the weight at a time sharing each vector of the input, not a register tile
  // over rows that reads them a row apart. A row sum shares nothing across rows.
  const UOp matvec = scheduled_kernel(input({1, 1280}).matmul(input({1000, 1280}).transpose()));
  EXPECT_EQ(heuristic_opts(matvec, cpu),
            (std::vector<Opt>{{OptOp::UPCAST, 0, 8}, {OptOp::UNROLL, 0, 32}}));
  Target avx2 = cpu;
  avx2.vector_floats = 8;
  EXPECT_EQ(heuristic_opts(matvec, avx2),
            (std::vector<Opt>{{OptOp::UPCAST, 0, 8}, {OptOp::UNROLL, 0, 16}}));
  const UOp rows = scheduled_kernel(input({4, 4096}).sum(1));
  EXPECT_EQ(heuristic_opts(rows, cpu), (std::vector<Opt>{{OptOp::UNROLL, 0, 32}}));
  EXPECT_EQ(heuristic_opts(rows, gpu), (std::vector<Opt>{{OptOp::GROUP, 0, 256}}));
  // 16 steps of the split accumulators at least: a row of 128 by 8.
  const UOp short_rows = scheduled_kernel(input({64, 128}).sum(1));
  EXPECT_EQ(heuristic_opts(short_rows, cpu), (std::vector<Opt>{{OptOp::UNROLL, 0, 8}}));
  // A bias added before a row's sum (a LayerNorm's mean of x + b) is reused across the rows but
  // makes no matmul: no register tile of rows read 256 apart.
  const UOp biased = scheduled_kernel((input({128, 256}) + input({256})).mean(1));
  EXPECT_EQ(heuristic_opts(biased, cpu), (std::vector<Opt>{{OptOp::UNROLL, 0, 16}}));
  EXPECT_EQ(heuristic_opts(biased, gpu), (std::vector<Opt>{{OptOp::GROUP, 0, 256}}));
  const UOp ew = scheduled_kernel(input({64, 60}) * input({60, 64}).transpose());
  EXPECT_TRUE(heuristic_opts(ew, cpu).empty());  // the C compiler vectorizes the loop
  EXPECT_EQ(heuristic_opts(ew, gpu), (std::vector<Opt>{{OptOp::UPCAST, 1, 4}}));
  // A conv's register tile on a GPU: the output columns (innermost) and the output channels,
  // which the input's loads ignore, so each input and each weight load feeds 8 multiply-adds
  // (not the output rows, along which the input is read again). The workgroup's 64 lanes run
  // along the columns, rows and images, which the weights ignore: the channels stay on the grid.
  const UOp conv = scheduled_kernel(input({2, 8, 16, 16}).conv2d(input({16, 8, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(conv, gpu), (std::vector<Opt>{{OptOp::UPCAST, 3, 4},
                                                         {OptOp::UPCAST, 3, 2},
                                                         {OptOp::UPCAST, 1, 8},
                                                         {OptOp::LOCAL, 3, 2},
                                                         {OptOp::LOCAL, 2, 16},
                                                         {OptOp::LOCAL, 0, 2}}));
  // Output columns that 4 does not divide (a late ResNet stage's 7 x 7; the batch of 1 is no
  // axis): the columns by 7 without vec4 accesses, the channels by 8, the rows' lanes.
  const UOp late = scheduled_kernel(input({1, 16, 7, 7}).conv2d(input({32, 16, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(late, gpu),
            (std::vector<Opt>{{OptOp::UPCAST, 2, 7}, {OptOp::UPCAST, 0, 8}, {OptOp::LOCAL, 1, 7}}));
  // A device that runs on the CPU: lanes along one axis only, the rows' 16 rather than the 2
  // column tiles left; the window's 3 columns unrolled. Where the columns give only 4 values
  // (12 of them), the rows add 2 to the tile.
  Target lavapipe = gpu;
  lavapipe.tuning = on_the_cpu();
  EXPECT_EQ(heuristic_opts(conv, lavapipe), (std::vector<Opt>{{OptOp::UPCAST, 3, 4},
                                                              {OptOp::UPCAST, 3, 2},
                                                              {OptOp::UPCAST, 1, 8},
                                                              {OptOp::UNROLL, 2, 3},
                                                              {OptOp::LOCAL, 2, 16}}));
  const UOp narrow = scheduled_kernel(input({1, 8, 12, 12}).conv2d(input({16, 8, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(narrow, lavapipe), (std::vector<Opt>{{OptOp::UPCAST, 2, 4},
                                                                {OptOp::UPCAST, 0, 8},
                                                                {OptOp::UPCAST, 1, 2},
                                                                {OptOp::UNROLL, 2, 3},
                                                                {OptOp::LOCAL, 1, 6}}));
  // A GPU that wants 65536 invocations in flight: the late conv's 1568 outputs get one
  // invocation each, a 256 x 256 matmul (a sixteenth of that: operand reuse counts for more)
  // keeps 8 columns per invocation, the 16 x 16 conv's 4096 outputs keep nothing.
  Target big_gpu = gpu;
  big_gpu.tuning.min_invocations = 65536;
  const UOp mm256 = scheduled_kernel(input({256, 256}).matmul(input({256, 256})));
  EXPECT_EQ(heuristic_opts(late, big_gpu), std::vector<Opt>{});
  EXPECT_EQ(heuristic_opts(conv, big_gpu), std::vector<Opt>{});
  EXPECT_EQ(heuristic_opts(mm256, big_gpu), (std::vector<Opt>{{OptOp::UPCAST, 1, 4},
                                                              {OptOp::UPCAST, 1, 2},
                                                              {OptOp::UNROLL, 0, 4},
                                                              {OptOp::LOCAL, 1, 32}}));
  // Convolutions that few outputs leave with one per invocation: their input channels unrolled
  // by 8 from 64 channels, by 64 from 512 (separate accumulators).
  const UOp c256 =
      scheduled_kernel(input({1, 256, 14, 14}).conv2d(input({256, 256, 3, 3}), {}, 1, 1));
  const UOp c512 =
      scheduled_kernel(input({1, 512, 7, 7}).conv2d(input({512, 512, 3, 3}), {}, 1, 1));
  EXPECT_EQ(heuristic_opts(c256, big_gpu), (std::vector<Opt>{{OptOp::UNROLL, 0, 8}}));
  EXPECT_EQ(heuristic_opts(c512, big_gpu),
            (std::vector<Opt>{{OptOp::UNROLL, 0, 8}, {OptOp::UNROLL, 0, 8}}));
  EXPECT_NO_THROW(apply_opts(c512, heuristic_opts(c512, big_gpu), big_gpu));
  // A stride-2 1 x 1 conv (ResNet's downsampling shortcut): its columns are read 2 apart, so a
  // tile along them buys no vec4 loads; the output channels take the tile, each input load
  // feeding 4 multiply-adds, also where a residual read along the columns is added after the
  // sum. The same conv at stride 1 keeps the columns' vec4 tile.
  const Tensor x56 = input({1, 256, 56, 56}), w = input({512, 256, 1, 1});
  const UOp down = scheduled_kernel(x56.conv2d(w, {}, /*stride=*/2, /*padding=*/0));
  const UOp residual =
      scheduled_kernel(x56.conv2d(w, {}, /*stride=*/2, /*padding=*/0) + input({1, 512, 28, 28}));
  const UOp pointwise = scheduled_kernel(input({1, 256, 28, 28}).conv2d(w, {}, 1, 0));
  const std::vector<Opt> channels{
      {OptOp::UPCAST, 0, 4}, {OptOp::UNROLL, 0, 4}, {OptOp::LOCAL, 2, 28}, {OptOp::LOCAL, 1, 2}};
  EXPECT_EQ(heuristic_opts(down, big_gpu), channels);
  EXPECT_EQ(heuristic_opts(residual, big_gpu), channels);
  EXPECT_NO_THROW(apply_opts(residual, channels, big_gpu));
  EXPECT_EQ(heuristic_opts(pointwise, big_gpu), (std::vector<Opt>{{OptOp::UPCAST, 2, 4},
                                                                  {OptOp::UNROLL, 0, 4},
                                                                  {OptOp::LOCAL, 2, 7},
                                                                  {OptOp::LOCAL, 1, 7}}));
  // A device that runs on the CPU keeps the columns' tile (not measured otherwise there).
  EXPECT_EQ(heuristic_opts(down, lavapipe).front(), (Opt{OptOp::UPCAST, 2, 4}));
  // A pool's short window on a device that runs on the CPU: 4 neighbouring outputs an
  // invocation, their windows' loads overlapping; elsewhere one.
  const UOp pool = scheduled_kernel(input({1, 8, 16, 16}).max_pool2d(3, 2, 1));
  EXPECT_EQ(heuristic_opts(pool, lavapipe), (std::vector<Opt>{{OptOp::UPCAST, 2, 4}}));
  EXPECT_EQ(heuristic_opts(pool, gpu), std::vector<Opt>{});
  // Every heuristic list applies.
  for (const UOp& k : {mm, big, rows, short_rows, biased, ew, conv, late, mm256, narrow, pool}) {
    EXPECT_NO_THROW(apply_opts(k, heuristic_opts(k, cpu), cpu));
    EXPECT_NO_THROW(apply_opts(k, heuristic_opts(k, gpu), gpu));
    EXPECT_NO_THROW(apply_opts(k, heuristic_opts(k, lavapipe), lavapipe));
  }
}

// Where the lanes share uniform loads through shuffles (lavapipe 22: 8-wide subgroups), a
// convolution whose pixel lanes would leave a subgroup partial (7 or 14 lanes) takes a whole
// subgroup's 8: along the output channels for a 1 x 1 (the input's loads are then the shared
// ones), along the rows where 8 divide them; a stride-1 window at 28 x 28 keeps its 7 column
// lanes. A stride-2 3 x 3 window takes 4 times the output channels instead of its window's
// unrolled columns, and its lanes stay on the pixels. The lanes' rule holds for a 1 x 1 of few
// input channels too (64: ResNet-50's first 1 x 1).
TEST(Opt, SharingLanesFillWholeSubgroups) {
  Target lavapipe = full_target();
  lavapipe.tuning = on_the_cpu();
  Target sharing = lavapipe;
  sharing.tuning.share_uniform_loads = true;
  auto lanes = [](const std::vector<Opt>& opts) {
    std::vector<Opt> out;
    std::copy_if(opts.begin(), opts.end(), std::back_inserter(out),
                 [](const Opt& o) { return o.op == OptOp::LOCAL; });
    return out;
  };
  using L = std::vector<Opt>;
  auto conv = [](const Shape& x, const Shape& w, int64_t stride, int64_t padding) {
    return scheduled_kernel(input(x).conv2d(input(w), {}, stride, padding));
  };
  const UOp pointwise = conv({1, 256, 14, 14}, {512, 256, 1, 1}, 1, 0);
  const UOp narrow = conv({1, 64, 56, 56}, {256, 64, 1, 1}, 1, 0);
  const UOp rows56 = conv({1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1);
  const UOp cols28 = conv({1, 128, 28, 28}, {128, 128, 3, 3}, 1, 1);
  const UOp down28 = conv({1, 64, 56, 56}, {128, 64, 3, 3}, 2, 1);
  const UOp pointwise28 = conv({1, 512, 28, 28}, {128, 512, 1, 1}, 1, 0);
  const UOp down14 = conv({1, 256, 28, 28}, {256, 256, 3, 3}, 2, 1);
  const UOp down7 = conv({1, 256, 14, 14}, {512, 256, 3, 3}, 2, 1);
  EXPECT_EQ(lanes(heuristic_opts(pointwise, lavapipe)), (L{{OptOp::LOCAL, 1, 14}}));
  EXPECT_EQ(lanes(heuristic_opts(pointwise, sharing)), (L{{OptOp::LOCAL, 0, 8}}));
  EXPECT_EQ(lanes(heuristic_opts(narrow, sharing)), (L{{OptOp::LOCAL, 0, 8}}));
  EXPECT_EQ(lanes(heuristic_opts(rows56, lavapipe)), (L{{OptOp::LOCAL, 2, 7}}));
  EXPECT_EQ(lanes(heuristic_opts(rows56, sharing)), (L{{OptOp::LOCAL, 1, 8}}));
  EXPECT_EQ(lanes(heuristic_opts(cols28, sharing)), (L{{OptOp::LOCAL, 2, 7}}));
  EXPECT_EQ(heuristic_opts(down28, sharing), (L{{OptOp::UPCAST, 2, 4},
                                                {OptOp::UPCAST, 0, 8},
                                                {OptOp::UPCAST, 1, 2},
                                                {OptOp::UPCAST, 0, 4},
                                                {OptOp::LOCAL, 2, 7}}));
  // At 14 x 14 the 32 channels' 8 invocations would fill a subgroup; the rows take it instead.
  EXPECT_EQ(heuristic_opts(down14, sharing), (L{{OptOp::UPCAST, 2, 7},
                                                {OptOp::UPCAST, 0, 8},
                                                {OptOp::UPCAST, 0, 4},
                                                {OptOp::LOCAL, 1, 14}}));
  EXPECT_EQ(heuristic_opts(down7, sharing), (L{{OptOp::UPCAST, 2, 7},
                                               {OptOp::UPCAST, 0, 8},
                                               {OptOp::UPCAST, 0, 4},
                                               {OptOp::LOCAL, 1, 7}}));
  // Without sharing, and at stride 1, the window's columns stay unrolled.
  EXPECT_EQ(heuristic_opts(down28, lavapipe).back(), (Opt{OptOp::LOCAL, 2, 7}));
  EXPECT_EQ(heuristic_opts(down28, lavapipe).end()[-2], (Opt{OptOp::UNROLL, 2, 3}));
  EXPECT_EQ(heuristic_opts(cols28, sharing).end()[-2], (Opt{OptOp::UNROLL, 2, 3}));
  // A 1 x 1 whose columns give its tile only 4 values adds the rows by 2, as a window does.
  EXPECT_EQ(heuristic_opts(pointwise28, sharing), (L{{OptOp::UPCAST, 2, 4},
                                                     {OptOp::UPCAST, 0, 8},
                                                     {OptOp::UPCAST, 1, 2},
                                                     {OptOp::UNROLL, 0, 4},
                                                     {OptOp::LOCAL, 0, 8}}));
  EXPECT_EQ(heuristic_opts(pointwise28, lavapipe).size(), 4U);
  // A stem's 7 x 7 at stride 2 unrolls its window's columns, its channels' tile halved to fit.
  const UOp stem = conv({1, 3, 32, 32}, {64, 3, 7, 7}, 2, 3);
  EXPECT_EQ(heuristic_opts(stem, sharing), (L{{OptOp::UPCAST, 2, 4},
                                              {OptOp::UPCAST, 2, 2},
                                              {OptOp::UPCAST, 0, 4},
                                              {OptOp::UNROLL, 2, 7},
                                              {OptOp::LOCAL, 1, 16}}));
  EXPECT_EQ(heuristic_opts(stem, lavapipe), (L{{OptOp::UPCAST, 2, 4},
                                               {OptOp::UPCAST, 2, 2},
                                               {OptOp::UPCAST, 0, 8},
                                               {OptOp::LOCAL, 1, 16}}));
  // Only the lanes change: the register tile is the one without sharing.
  const std::vector<Opt> without = heuristic_opts(pointwise, lavapipe);
  std::vector<Opt> with = heuristic_opts(pointwise, sharing);
  ASSERT_EQ(with.size(), without.size());
  EXPECT_TRUE(std::equal(with.begin(), with.end() - 1, without.begin()));
  for (const UOp& k : {pointwise, narrow, rows56, cols28, down28, down14, down7, pointwise28, stem})
    EXPECT_NO_THROW(apply_opts(k, heuristic_opts(k, sharing), sharing));
}

TEST(Opt, InvalidActionsAreErrorsNamingTheKernelAndTheAction) {
  const Target cpu = cpu::host_target(), gpu = full_target();
  Target no_shared = gpu, no_grid = gpu;
  no_shared.local_memory = false;
  no_grid.grid = false;
  const UOp four = scheduled_kernel(input({2, 2, 2, 2}) + 1.0);
  const UOp mm = scheduled_kernel(input({32, 64}).matmul(input({64, 48})));
  const UOp ew = scheduled_kernel(input({64, 60}) + input({60, 64}).transpose());
  struct Bad {
    UOp kernel;
    std::vector<Opt> opts;
    Target target;
    std::string why;
  };
  const std::vector<Bad> bad = {
      {mm, {{OptOp::UPCAST, 2, 4}}, cpu, "no global axis 2 (2 of them)"},
      {mm, {{OptOp::UPCAST, -1, 4}}, cpu, "no global axis -1"},
      {mm, {{OptOp::UNROLL, 1, 4}}, cpu, "no reduce axis 1 (1 of them)"},
      {mm, {{OptOp::UPCAST, 1, 5}}, cpu, "divide the axis's size, 48"},
      {mm, {{OptOp::UPCAST, 1, 1}}, cpu, "at least 2"},
      {mm, {{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 1, 16}}, cpu, "divide the axis's size, 3"},
      {mm, {{OptOp::UPCAST, 0, 32}, {OptOp::UPCAST, 1, 16}}, cpu, "more than 256 values"},
      {ew, {{OptOp::LOCAL, 1, 16}}, cpu, "launches no workgroups"},
      {ew, {{OptOp::LOCAL, 1, 4}}, no_grid, "no grid of workgroups"},
      {ew, {{OptOp::LOCAL, 2, 4}}, gpu, "no global axis 2"},
      {ew, {{OptOp::LOCAL, 1, 7}}, gpu, "divide the axis's size, 60"},
      {ew, {{OptOp::LOCAL, 1, 30}, {OptOp::LOCAL, 0, 64}}, gpu, "more than 1024 invocations"},
      {ew, {{OptOp::LOCAL, 1, 2}, {OptOp::LOCAL, 1, 2}}, gpu, "already split by LOCAL"},
      {four,
       {{OptOp::LOCAL, 0, 2}, {OptOp::LOCAL, 1, 2}, {OptOp::LOCAL, 2, 2}, {OptOp::LOCAL, 3, 2}},
       gpu,
       "at most three dimensions"},
      {mm, {{OptOp::GROUP, 0, 64}}, no_shared, "no shared memory"},
      {ew, {{OptOp::GROUP, 0, 64}}, gpu, "no reduction"},
      {mm, {{OptOp::GROUP, 0, 64}, {OptOp::UPCAST, 1, 4}}, gpu, "takes no other action"},
      {mm, {{OptOp::LOCAL, 1, 4}, {OptOp::GROUP, 0, 64}}, gpu, "no other action"},
      {mm, {{OptOp::UPCAST, 1, 4}, {OptOp::GROUP, 0, 64}}, gpu, "no other action"},
      {mm, {{OptOp::GROUP, 0, 100}}, gpu, "power of two"},
      {mm,
       {{OptOp::GROUP, 0, 1024}},
       [&] {
         Target t = gpu;
         t.max_shared_bytes = 1024;
         return t;
       }(),
       "4096 bytes of shared memory, over the target's 1024"},
      {mm, {{OptOp::GEMM, 0, 0}}, gpu, "renders no packed GEMM"},
      {mm, {{OptOp::GEMM, 0, 0}}, cpu, "not a large float32 matmul-like kernel"},
      {ew, {{OptOp::GEMM, 0, 0}, {OptOp::UPCAST, 1, 4}}, cpu, "GEMM takes no other action"},
  };
  for (const Bad& b : bad) {
    const std::string what = error_of(b.kernel, b.opts, b.target);
    const std::string opts = to_string(b.opts);
    EXPECT_TRUE(contains(what, b.why)) << opts << ": " << what;
    EXPECT_TRUE(contains(what, kernel_name(b.kernel))) << what;
    EXPECT_TRUE(contains(what, opts)) << what;
    // opt_state makes the same checks, without the rewrite.
    try {
      opt_state(b.kernel, b.opts, b.target);
      ADD_FAILURE() << opts << ": opt_state took the list";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), what);
    }
  }
  // Through codegen too, and a symbolic axis is never split.
  EXPECT_THROW(codegen(mm, {.opts = std::vector<Opt>{{OptOp::UPCAST, 1, 5}}}, cpu), Error);
  const UOp rows = simplify(symbolic_kernels::row_sums().ast);
  const std::string sym = error_of(rows, {{OptOp::UPCAST, 0, 2}}, cpu);
  EXPECT_TRUE(contains(sym, "symbolic")) << sym;
}

TEST(Opt, StateSaysWhatAListLeavesOfEachAxis) {
  const UOp mm = scheduled_kernel(input({32, 64}).matmul(input({64, 48})));
  const Target gpu = full_target();
  const OptState none = opt_state(mm, {}, gpu);
  EXPECT_EQ(none.globals, 2);
  EXPECT_EQ(none.left, (std::vector<int64_t>{32, 48, 64}));
  EXPECT_EQ(none.upcast, 1);
  EXPECT_EQ(none.lanes, 1);
  EXPECT_TRUE(none.local_axes.empty());
  EXPECT_EQ(none.staged, -1);
  const OptState st = opt_state(mm,
                                {{OptOp::UPCAST, 1, 4},
                                 {OptOp::LOCAL, 1, 4},
                                 {OptOp::LOCAL, 0, 8},
                                 {OptOp::UNROLL, 0, 2},
                                 {OptOp::STAGE, 0, 8}},
                                gpu);
  EXPECT_EQ(st.left, (std::vector<int64_t>{4, 3, 4}));
  EXPECT_EQ(st.upcast, 8);  // UPCAST 4 and UNROLL 2; STAGE's inner steps are a loop
  EXPECT_EQ(st.lanes, 32);
  EXPECT_EQ(st.local_axes, (std::vector<int>{1, 0}));
  EXPECT_EQ(st.staged, 0);
  EXPECT_EQ(st.group_lanes, 0);
  EXPECT_FALSE(st.gemm);
  EXPECT_EQ(opt_state(mm, {{OptOp::GROUP, 0, 64}}, gpu).group_lanes, 64);
  // The staged axis must keep an outer loop: 64 / 2 / 32 leaves one step.
  EXPECT_THROW(
      opt_state(mm, {{OptOp::LOCAL, 1, 4}, {OptOp::UNROLL, 0, 2}, {OptOp::STAGE, 0, 32}}, gpu),
      Error);
}

TEST(Opt, ToStringSpellsTheList) {
  EXPECT_EQ(to_string(std::vector<Opt>{{OptOp::UPCAST, 1, 4}, {OptOp::GEMM, 0, 0}}),
            "[UPCAST(1, 4), GEMM(0, 0)]");
  EXPECT_EQ(to_string(std::vector<Opt>{}), "[]");
}

}  // namespace
}  // namespace vkgrad

namespace vkgrad {
namespace {

TEST(Opt, ListsReadBackAsTheyPrint) {
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 4},  {OptOp::UNROLL, 0, 8}, {OptOp::LOCAL, 2, 16},
                              {OptOp::GROUP, 0, 256}, {OptOp::GEMM, 0, 0},   {OptOp::STAGE, 1, 4},
                              {OptOp::BLOCK, 1, 128}};
  EXPECT_EQ(parse_opts(to_string(opts)), opts);
  EXPECT_EQ(to_string(opts[6]), "BLOCK(1, 128)");
  EXPECT_EQ(parse_opts("[]"), std::vector<Opt>{});
  for (const char* bad : {"", "[", "UPCAST(1, 4)", "[UPCAST(1, 4)", "[UPCAST(1,4)]",
                          "[UPCAST(1, 4) UNROLL(0, 8)]", "[SPLIT(1, 4)]", "[UPCAST(1, 4x)]"})
    EXPECT_FALSE(parse_opts(bad)) << bad;
  // The target's every field is in its key.
  Target a = full_target(), b = a;
  b.max_shared_bytes += 1;
  EXPECT_NE(target_key(a), target_key(b));
}

}  // namespace
}  // namespace vkgrad
