// tests/codegen: each of the heuristics' rules (src/codegen/heuristics.cpp lists them) on a
// kernel of its class: the rule that chooses the kernel's list, and the list. No device.
#include <gtest/gtest.h>

#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "cpu/runtime.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

using V = std::vector<Opt>;

void expect_rule(const UOp& k, const Target& t, const std::string& rule, const V& opts) {
  const HeuristicChoice c = choose_heuristic(k, t);
  EXPECT_EQ(c.rule, rule);
  EXPECT_EQ(c.opts, opts) << "rule " << rule << ": " << to_string(c.opts);
}

Target c_without_gemm() {
  Target t = cpu::host_target();
  t.host.gemm = false;
  return t;
}

Target gpu_target() {
  Target t = full_target();
  t.tuning.min_invocations = 65536;
  t.tuning.stage_tiles = true;
  t.subgroup_size = 32;
  t.max_shared_bytes = 49152;
  return t;
}

Target loop_target() {
  Target t = full_target();
  t.tuning = on_the_cpu();
  return t;
}

TEST(Heuristics, GemmOrWinograd) {
  const Target cpu = cpu::host_target();
  expect_rule(scheduled_kernel(input({256, 256}).matmul(input({256, 256}))), cpu,
              "gemm_or_winograd", V{{OptOp::GEMM, 0, 0}});
  // 16 x 16 2 x 2 tiles of a 32 x 32 output: the profile's 256.
  expect_rule(scheduled_kernel(input({1, 64, 32, 32}).conv2d(input({64, 64, 3, 3}), {}, 1, 1)), cpu,
              "gemm_or_winograd", V{{OptOp::GEMM, 3, 0}});
}

TEST(Heuristics, ShortElementwiseAxes) {
  const Tensor w = input({3, 3, 128}).permute({2, 0, 1}).contiguous();
  expect_rule(scheduled_kernel(w), cpu::host_target(), "short_elementwise_axes",
              V{{OptOp::UPCAST, 2, 3}, {OptOp::UPCAST, 1, 3}});
  expect_rule(scheduled_kernel(input({64, 64}) + 1.0), cpu::host_target(), "short_elementwise_axes",
              V{});
}

TEST(Heuristics, RegisterTile) {
  expect_rule(scheduled_kernel(input({64, 64}).matmul(input({64, 64}))), c_without_gemm(),
              "register_tile", V{{OptOp::UPCAST, 1, 32}, {OptOp::UPCAST, 0, 8}});
}

TEST(Heuristics, SharedIndexMath) {
  Tensor x = input({2, 32, 9, 9});
  x.requires_grad_();
  (x.max_pool2d(3, 2, 1) * input({2, 32, 5, 5})).sum().backward();
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(*x.grad())});
  int folds = 0;
  for (const ScheduleKernel& k : build_schedule(g.key).kernels)
    if (choose_heuristic(k.ast, cpu::host_target()).rule == std::string("shared_index_math")) {
      ++folds;
      EXPECT_EQ(heuristic_opts(k.ast, cpu::host_target()), (V{{OptOp::UPCAST, 1, 16}}));
    }
  EXPECT_EQ(folds, 1);
}

TEST(Heuristics, Matvec) {
  expect_rule(scheduled_kernel(input({1, 2048}).matmul(input({1000, 2048}).T())),
              cpu::host_target(), "matvec", V{{OptOp::UPCAST, 0, 8}, {OptOp::UNROLL, 0, 32}});
}

TEST(Heuristics, SplitAccumulators) {
  // A row sum splits its accumulators along the row; a column sum keeps one per column.
  expect_rule(scheduled_kernel(input({64, 1024}).sum(1)), cpu::host_target(), "split_accumulators",
              V{{OptOp::UNROLL, 0, 32}});
  expect_rule(scheduled_kernel(input({1024, 64}).sum(0)), cpu::host_target(), "split_accumulators",
              V{{OptOp::UPCAST, 0, 32}});
}

TEST(Heuristics, ElementwiseVectors) {
  const UOp add = scheduled_kernel(input({4096}) + input({4096}));
  expect_rule(add, gpu_target(), "elementwise_vectors", V{{OptOp::UPCAST, 0, 4}});
  // Where a workgroup runs as a loop: 32 values an invocation, vec4s 16 lanes apart.
  expect_rule(add, loop_target(), "elementwise_vectors",
              V{{OptOp::UPCAST, 0, 4},
                {OptOp::LOCAL, 0, 16},
                {OptOp::UPCAST, 0, 4},
                {OptOp::UPCAST, 0, 2}});
}

TEST(Heuristics, GroupedReduction) {
  const UOp rows = scheduled_kernel(input({4, 128, 128}).max(2));
  expect_rule(rows, gpu_target(), "grouped_reduction", V{{OptOp::GROUP, 0, 64}});
  // Where a workgroup runs as a loop, 512 rows are enough invocations.
  expect_rule(rows, loop_target(), "plain_reduction",
              V{{OptOp::UNROLL, 0, 4}, {OptOp::UNROLL, 0, 2}});
}

TEST(Heuristics, PlainReduction) {
  // Outputs enough for the GPU's invocations: vec4 loads along each row.
  expect_rule(scheduled_kernel(input({131072, 64}).sum(1)), gpu_target(), "plain_reduction",
              V{{OptOp::UNROLL, 0, 4}});
}

TEST(Heuristics, MatmulTile) {
  const UOp mm = scheduled_kernel(input({1024, 1024}).matmul(input({1024, 1024})));
  // A GPU that stages tiles: 8 x 8 values an invocation, 8 x 8 lanes (the grid keeps fewer than
  // min_invocations / 512 workgroups of 256), k staged 16 steps at a time.
  expect_rule(mm, gpu_target(), "matmul_tile",
              V{{OptOp::UPCAST, 1, 4},
                {OptOp::UPCAST, 1, 2},
                {OptOp::UPCAST, 0, 8},
                {OptOp::UNROLL, 0, 4},
                {OptOp::LOCAL, 1, 8},
                {OptOp::LOCAL, 0, 8},
                {OptOp::STAGE, 0, 4}});
  // Without staging: the lanes along the columns.
  expect_rule(mm, full_target(), "matmul_tile",
              V{{OptOp::UPCAST, 1, 4},
                {OptOp::UPCAST, 1, 2},
                {OptOp::UPCAST, 0, 8},
                {OptOp::UNROLL, 0, 4},
                {OptOp::LOCAL, 1, 64}});
}

// Every rule of both tables chooses some kernel above; the tables' names as DEBUG=3 prints them.
TEST(Heuristics, RuleNames) {
  EXPECT_EQ(heuristic_rules(false),
            (std::vector<std::string>{"gemm_or_winograd", "short_elementwise_axes", "register_tile",
                                      "shared_index_math", "matvec", "split_accumulators"}));
  EXPECT_EQ(heuristic_rules(true),
            (std::vector<std::string>{"elementwise_vectors", "grouped_reduction", "plain_reduction",
                                      "matmul_tile"}));
}

}  // namespace
}  // namespace vkgrad
