// tests/codegen: the pipeline's contract — every pass runs through run_pass, whose spec check
// names the pass and the invalid node; with SPEC=1 in the environment (the codegen_spec ctest)
// every pass of every kernel here is verified.
#include <gtest/gtest.h>

#include <sstream>
#include <vkgrad/error.hpp>
#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "ir/spec.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

// A pass that breaks the kernel: the stored value becomes float32 + int32, which the spec
// refuses (ADD takes operands of its own dtype).
UOp break_store(const UOp& k) {
  const UOp& st = k.src(0);
  const UOp bad =
      UOp::make(Ops::ADD, dtypes::float32, {st.src(1), UOp::const_(dtypes::int32, int64_t{1})});
  return UOp::sink({st.src(0).store(bad)});
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(Pipeline, SpecNamesThePassAndTheNode) {
  const UOp k = scheduled_kernel(Tensor::empty({8, 8}, dtypes::float32, "CPU").exp2());
  const std::string what = error_of([&] { run_pass("break_store", k, break_store, true); });
  EXPECT_NE(what.find("spec failed after break_store"), std::string::npos) << what;
  EXPECT_NE(what.find("invalid ADD"), std::string::npos) << what;
  EXPECT_NE(what.find("dtypes.int"), std::string::npos) << what;  // the node, printed
  // A valid pass passes.
  EXPECT_EQ(error_of([&] {
              run_pass(
                  "identity", k, [](const UOp& u) { return u; }, true);
            }),
            "");
}

TEST(Pipeline, SpecFromTheEnvironmentChecksEveryPass) {
  const UOp k = scheduled_kernel(Tensor::empty({8, 8}, dtypes::float32, "CPU").exp2());
  const std::string what = error_of([&] { run_pass("break_store", k, break_store); });
  if (spec_enabled()) {
    EXPECT_NE(what.find("spec failed after break_store"), std::string::npos) << what;
  } else {
    EXPECT_EQ(what, "");  // without SPEC=1 nothing is verified
  }
}

TEST(Pipeline, EveryKindOfKernelPassesEveryPass) {
  // Under SPEC=1 each codegen() below verifies simplify and apply_opts on both targets.
  const Target cpu = cpu::host_target(), gpu = full_target();
  const std::vector<Tensor> kernels = {
      input({64, 60}) * input({60, 64}).transpose(),   // elementwise
      input({256, 256}).matmul(input({256, 256})),     // GEMM on the CPU
      input({32, 64}).matmul(input({64, 48})).relu(),  // register tiles
      input({4, 4096}).sum(1),                         // grouped on the GPU
      input({4096, 4}).sum(0),                         // a column sum
      input({1, 8, 16, 16}).conv2d(input({4, 8, 3, 3}), std::nullopt, 1, 1),
  };
  for (const Tensor& t : kernels) {
    const UOp k = scheduled_kernel(t);
    EXPECT_FALSE(codegen(k, {}, cpu).source.empty());
    EXPECT_FALSE(codegen(k, {}, gpu).source.empty());
    EXPECT_FALSE(codegen(k, {.optimize = false}, gpu).source.empty());
  }
}

// The lines of `src` that open a loop over uidx<id>, each with whether the line before it asks
// GCC to unroll the loop.
std::vector<std::pair<int, bool>> upcast_loops(const std::string& src) {
  std::vector<std::pair<int, bool>> out;
  std::string prev, line;
  for (std::istringstream in(src); std::getline(in, line); prev = line) {
    const size_t at = line.find("for (int64_t uidx");
    if (at == std::string::npos) continue;
    out.emplace_back(std::stoi(line.substr(at + 17)),
                     prev.find("#pragma GCC unroll") != std::string::npos);
  }
  return out;
}

TEST(Pipeline, CUnrollsUpcastsButLeavesGatedRowsToTheVectorizer) {
  const Target cpu = cpu::host_target();
  // A depthwise conv with padding: its input loads are gated; the innermost upcast loop (along
  // the output columns) stays a loop, which GCC vectorizes with masked loads, the outer one is
  // unrolled.
  const UOp dw =
      scheduled_kernel(input({1, 8, 32, 32}).conv2d(input({8, 1, 3, 3}), std::nullopt, 1, 1, 1, 8));
  const auto loops = upcast_loops(codegen(dw, {}, cpu).source);
  int innermost = -1;
  for (const auto& [id, unrolled] : loops) innermost = std::max(innermost, id);
  ASSERT_GT(innermost, 0);
  for (const auto& [id, unrolled] : loops) EXPECT_EQ(unrolled, id != innermost) << id;
  EXPECT_NE(codegen(dw, {}, cpu).source.find("#pragma clang loop vectorize(enable)"),
            std::string::npos);
  // At stride 2 the gated loads along the columns are not contiguous (a vector of them would be a
  // gather): every upcast loop stays unrolled.
  const UOp dw2 =
      scheduled_kernel(input({1, 8, 64, 64}).conv2d(input({8, 1, 3, 3}), std::nullopt, 2, 1, 1, 8));
  const auto loops2 = upcast_loops(codegen(dw2, {}, cpu).source);
  ASSERT_FALSE(loops2.empty());
  for (const auto& [id, unrolled] : loops2) EXPECT_TRUE(unrolled) << id;
  // Without gated loads every upcast loop is unrolled (a register tile).
  const UOp mm = scheduled_kernel(input({32, 64}).matmul(input({64, 48})));
  const auto mm_loops = upcast_loops(codegen(mm, {}, cpu).source);
  ASSERT_FALSE(mm_loops.empty());
  for (const auto& [id, unrolled] : mm_loops) EXPECT_TRUE(unrolled) << id;
}

}  // namespace
}  // namespace vkgrad
