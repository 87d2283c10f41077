// tests/codegen: golden C for canonical kernels. The renderer's output for each kernel below must
// match tests/codegen/golden/<name>.c byte for byte; regenerate with tools/regen_golden.sh
// (never edit the files by hand) and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

std::string golden_path(const std::string& name) {
  return std::string(VKGRAD_SOURCE_DIR) + "/tests/codegen/golden/" + name + ".c";
}

// Every kernel of the tensor's schedule, rendered (optimized) and concatenated.
std::string render_all(const Tensor& t) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  const Schedule s = build_schedule(g.key);
  std::string out;
  for (const ScheduleKernel& k : s.kernels) out += codegen_c(k.ast, {}).source;
  return out;
}

void check_golden(const std::string& name, const Tensor& t) {
  const std::string got = render_all(t);
  if (std::getenv("VKGRAD_REGEN_GOLDEN")) {
    std::ofstream(golden_path(name)) << got;
    GTEST_SKIP() << "regenerated " << golden_path(name);
  }
  std::ifstream f(golden_path(name));
  ASSERT_TRUE(f.good()) << "missing " << golden_path(name) << " (run tools/regen_golden.sh)";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(got, want.str()) << "rendered C for " << name << " changed; if intended, run "
                             << "tools/regen_golden.sh and review the diff";
}

Tensor input(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt, "CPU"); }

TEST(Golden, ElementwiseAdd) { check_golden("elementwise_add", input({25, 4}) + input({25, 4})); }
TEST(Golden, SumRows) { check_golden("sum_rows", input({16, 32}).sum(1)); }
TEST(Golden, Matmul) { check_golden("matmul", input({8, 32}).matmul(input({32, 16}))); }
TEST(Golden, PaddedFlippedView) {
  check_golden("padded_flipped_view",
               input({5, 3}).permute({1, 0}).pad({{1, 1}, {2, 0}}).flip(1).contiguous());
}
TEST(Golden, Softmax) { check_golden("softmax", input({4, 10}).softmax(-1)); }
TEST(Golden, IntDivision) {
  check_golden("int_division", input({7}, dtypes::int32).div(input({7}, dtypes::int32), "trunc"));
}

}  // namespace
}  // namespace vkgrad
