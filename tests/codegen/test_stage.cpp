// tests/codegen: stage_tiles on scheduler-built kernels, no device — a matmul's operand tiles
// staged in shared memory (Opt STAGE): one tile per operand the workgroup's lanes share, double
// buffered, copied by the lanes before one barrier per stage step; the heuristics' choice on a
// target with shared tiles; STAGE's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vkgrad/vkgrad.hpp>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "ir/spec.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

Target tiles_target() {
  Target t = full_target();
  t.tuning.stage_tiles = true;
  t.max_shared_bytes = 49152;
  t.tuning.min_invocations = 65536;
  return t;
}

// A 64 x 64 matmul as a 2 x 2 grid of 8 x 8 lanes with 4 x 4 tiles, k (32) staged 8 at a time.
const std::vector<Opt> kStaged{{OptOp::UPCAST, 1, 4}, {OptOp::UPCAST, 0, 4}, {OptOp::UNROLL, 0, 4},
                               {OptOp::LOCAL, 1, 8},  {OptOp::LOCAL, 0, 8},  {OptOp::STAGE, 0, 2}};

UOp staged_kernel(const UOp& k, const std::vector<Opt>& opts, const Target& t) {
  return stage_tiles(fold_vectors(apply_opts(k, opts, t), t), t);
}

TEST(Stage, AMatmulsOperandsGoThroughSharedMemory) {
  const Target t = tiles_target();
  const UOp k = scheduled_kernel(input({64, 32}).matmul(input({32, 64})));
  const UOp s = staged_kernel(k, kStaged, t);
  EXPECT_NO_THROW(verify(s, "stage_tiles"));
  EXPECT_EQ(count_ops(s, Ops::DEFINE_LOCAL), 2);  // A's tile and B's
  EXPECT_EQ(count_ops(s, Ops::BARRIER), 1);       // one per stage step (double buffered)
  // A's tile: 2 steps of 4 rows of a vec4 along k, for 8 lanes of rows; twice (the parity).
  // B's: 2 steps x 4 k of one vec4 of columns for 8 lanes of columns.
  std::vector<DType> tiles;
  for (const UOp& u : toposort(s))
    if (u.op() == Ops::DEFINE_LOCAL) tiles.push_back(u.dtype());
  ASSERT_EQ(tiles.size(), 2u);
  for (const DType& d : tiles) {
    EXPECT_EQ(d.base(), dtypes::float32.vec(4));
    EXPECT_EQ(d.size(), 2 * 64);
  }
  // 64 lanes copy 64 vec4s of each tile per step: one store each, all before the barrier.
  for (const UOp& u : toposort(s)) {
    if (u.op() == Ops::BARRIER) {
      EXPECT_EQ(u.src().size(), 2u);
    }
  }
  // The stage loop is the reduction's first range; no buffer is read inside the steps but the
  // copies (loads whose source is the barrier read shared memory).
  for (const UOp& u : toposort(s)) {
    if (u.op() == Ops::REDUCE) {
      ASSERT_GE(u.src().size(), 2u);
      EXPECT_EQ(u.src(1).arg_as<AxisArg>().type, AxisType::stage);
    }
    if (u.op() == Ops::LOAD && u.src(0).src(0).op() == Ops::DEFINE_LOCAL) {
      EXPECT_EQ(u.src().size(), 2u);
    }
  }
  // It prints, compiles and validates as GLSL.
  const Program p = codegen(k, {.opts = kStaged}, t);
  EXPECT_EQ(p.local_size, (std::array<uint32_t, 3>{8, 8, 1}));
  EXPECT_NE(p.source.find("barrier();"), std::string::npos);
  EXPECT_NE(p.source.find("shared vec4 vkg_shared1[128];"), std::string::npos);
  if (!have_glsl_tools()) GTEST_SKIP() << "glslangValidator/spirv-val not installed";
  EXPECT_EQ(validate_glsl_all({{p.name, p.source}}), "");
}

TEST(Stage, TilesThatTheLanesDoNotDivideAreCopiedWithGatedStores) {
  const Target t = tiles_target();
  // A transposed (read along its rows, not k): scalar tiles, 8 k x 4 rows x 8 lanes = 256 slots
  // per step for 48 lanes (6 x 8): 6 copies, the last gated.
  const UOp k = scheduled_kernel(input({32, 48}).transpose().matmul(input({32, 64})));
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 4},
                              {OptOp::UPCAST, 0, 4},
                              {OptOp::LOCAL, 1, 8},
                              {OptOp::LOCAL, 0, 6},
                              {OptOp::STAGE, 0, 8}};
  const UOp s = staged_kernel(k, opts, t);
  EXPECT_NO_THROW(verify(s, "stage_tiles"));
  int gated = 0;
  for (const UOp& u : toposort(s))
    if (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::DEFINE_LOCAL)
      gated += u.src(0).src().size() > 2;
  EXPECT_GT(gated, 0);
  const Program p = codegen(k, {.opts = opts}, t);
  if (!have_glsl_tools()) GTEST_SKIP() << "glslangValidator/spirv-val not installed";
  EXPECT_EQ(validate_glsl_all({{p.name, p.source}}), "");
}

TEST(Stage, HeuristicsStageLargeMatmulsWhereTheTargetWantsIt) {
  const UOp mm = scheduled_kernel(input({2048, 2048}).matmul(input({2048, 2048})));
  Target t = tiles_target();
  // 8 x 8 values per lane, 16 x 16 lanes, k staged 16 at a time.
  EXPECT_EQ(heuristic_opts(mm, t), (std::vector<Opt>{{OptOp::UPCAST, 1, 4},
                                                     {OptOp::UPCAST, 1, 2},
                                                     {OptOp::UPCAST, 0, 8},
                                                     {OptOp::UNROLL, 0, 4},
                                                     {OptOp::LOCAL, 1, 16},
                                                     {OptOp::LOCAL, 0, 16},
                                                     {OptOp::STAGE, 0, 4}}));
  // Shared memory for 8 steps only: 8 at a time.
  t.max_shared_bytes = 16384;
  EXPECT_EQ(heuristic_opts(mm, t).back(), (Opt{OptOp::STAGE, 0, 2}));
  t.max_shared_bytes = 49152;
  // Fewer outputs: 8 x 8 lanes keep enough workgroups.
  const UOp mid = scheduled_kernel(input({1024, 1024}).matmul(input({1024, 1024})));
  const std::vector<Opt> o = heuristic_opts(mid, t);
  ASSERT_EQ(o.size(), 7u);
  EXPECT_EQ(o[4], (Opt{OptOp::LOCAL, 1, 8}));
  EXPECT_EQ(o[5], (Opt{OptOp::LOCAL, 0, 8}));
  // 784 columns by 8 leave 98: 7 lanes along them (an MLP's layer, 8 x 7 lanes).
  const UOp mlp = scheduled_kernel(input({256, 512}).matmul(input({512, 784})));
  const std::vector<Opt> m = heuristic_opts(mlp, t);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back().op, OptOp::STAGE);
  EXPECT_NE(std::find(m.begin(), m.end(), Opt{OptOp::LOCAL, 1, 7}), m.end()) << to_string(m);
  // Without shared tiles (a device that runs on the CPU, unless forced): no STAGE.
  for (const Opt& x : heuristic_opts(mm, full_target())) EXPECT_NE(x.op, OptOp::STAGE);
}

TEST(Stage, InvalidStagesAreErrors) {
  const Target t = tiles_target();
  const UOp k = scheduled_kernel(input({64, 32}).matmul(input({32, 64})));
  auto fails = [&](const std::vector<Opt>& opts, const std::string& why) {
    try {
      apply_opts(k, opts, t);
      ADD_FAILURE() << to_string(opts) << " applied";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  fails({{OptOp::STAGE, 0, 8}}, "staging needs a workgroup (LOCAL)");
  fails({{OptOp::LOCAL, 1, 8}, {OptOp::STAGE, 0, 32}}, "outer loop of 2 or more");
  fails({{OptOp::LOCAL, 1, 8}, {OptOp::STAGE, 0, 2}, {OptOp::STAGE, 0, 2}}, "stages one reduce");
  fails({{OptOp::LOCAL, 1, 8}, {OptOp::STAGE, 1, 2}}, "no reduce axis 1");
  EXPECT_THROW(apply_opts(k, {{OptOp::LOCAL, 1, 8}, {OptOp::STAGE, 0, 2}}, cpu::host_target()),
               Error);
  // Tiles over the target's shared memory: an Error from the pass (a search drops the list).
  Target small = t;
  small.max_shared_bytes = 1024;
  EXPECT_THROW(codegen(k, {.opts = kStaged}, small), Error);
  // The list is spelled and parsed like the others.
  EXPECT_EQ(parse_opts(to_string(kStaged)), kStaged);
}

}  // namespace
}  // namespace vkgrad
