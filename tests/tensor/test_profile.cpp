// tests/tensor: kernel timing (set_kernel_timing / kernel_times): every kernel a realize runs is
// timed under the name Tensor::schedule() gives it, with the work its AST estimates.
#include <vkgrad/stats.hpp>

#include "harness.hpp"

namespace vkgrad::testing {
namespace {

class ProfileTest : public DeviceTest {
 protected:
  void TearDown() override {
    set_kernel_timing(false);
    DeviceTest::TearDown();
  }
};

TEST_P(ProfileTest, KernelTimesNameEveryKernelAsTheScheduleDoes) {
  constexpr int64_t M = 24, K = 40, N = 32;
  Tensor a = make_tensor(random_values(M * K, -1, 1, 1), {M, K}, dtypes::float32, dev());
  Tensor b = make_tensor(random_values(K * N, -1, 1, 2), {K, N}, dtypes::float32, dev());
  Tensor y = a.matmul(b).relu().sum(0);
  const std::vector<KernelInfo> planned = y.schedule();
  reset_runtime_stats();
  set_kernel_timing(true);
  y.realize();
  const std::vector<KernelTime> times = kernel_times();
  ASSERT_EQ(times.size(), planned.size());
  for (const KernelInfo& k : planned) {
    auto it = std::find_if(times.begin(), times.end(),
                           [&](const KernelTime& t) { return t.name == k.name; });
    ASSERT_NE(it, times.end()) << "no time for kernel " << k.name;
    EXPECT_EQ(it->runs, 1);
    EXPECT_GE(it->ms, 0);
    EXPECT_GT(it->gflop, 0);
    EXPECT_GT(it->gbyte, 0);
  }
  for (size_t i = 1; i < times.size(); ++i) EXPECT_GE(times[i - 1].ms, times[i].ms);

  // Timing off: nothing more is recorded; a reset forgets what was.
  set_kernel_timing(false);
  (a + 1).realize();
  EXPECT_EQ(kernel_times().size(), times.size());
  reset_runtime_stats();
  EXPECT_TRUE(kernel_times().empty());
}

TEST_P(ProfileTest, MatmulWorkIsTwoOpsPerMultiplyAddAndEachOperandOnce) {
  constexpr int64_t M = 16, K = 48, N = 20;
  Tensor a = make_tensor(random_values(M * K, -1, 1, 3), {M, K}, dtypes::float32, dev());
  Tensor b = make_tensor(random_values(K * N, -1, 1, 4), {K, N}, dtypes::float32, dev());
  Tensor y = a.matmul(b);
  reset_runtime_stats();
  set_kernel_timing(true);
  y.realize();
  y.assign(a.matmul(b));  // the same kernel again
  y.realize();
  const std::vector<KernelTime> times = kernel_times();
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].runs, 2);
  EXPECT_DOUBLE_EQ(times[0].gflop, 2 * (2.0 * M * K * N) * 1e-9);
  EXPECT_DOUBLE_EQ(times[0].gbyte, 2 * 4.0 * (M * K + K * N + M * N) * 1e-9);
}

VKGRAD_ALL_DEVICES(ProfileTest);

}  // namespace
}  // namespace vkgrad::testing
