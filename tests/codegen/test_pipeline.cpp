// tests/codegen: the pipeline's contract — every pass runs through run_pass, whose spec check
// names the pass and the invalid node; with SPEC=1 in the environment (the codegen_spec ctest)
// every pass of every kernel here is verified.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vkgrad
