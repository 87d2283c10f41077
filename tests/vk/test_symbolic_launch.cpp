// tests/vk: kernels with symbolic sizes on the device — push-constant values and a grid sized per
// launch, compared with values computed in double for each value of the variable; graphs
// replayed with other values (re-recorded, counted); out-of-range values refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vkgrad/error.hpp>

#include "../codegen/symbolic_kernels.hpp"
#include "vk_test_util.hpp"

namespace vkgrad::vk::testing {
namespace {

using namespace symbolic_kernels;
using ::testing::HasSubstr;

TEST_F(VulkanTest, SymbolicKernelsRunForEveryValue) { expect_every_case_for_every_value(*rt); }

// A grid of several workgroups sized per launch: the elements past n stay untouched.
TEST_F(VulkanTest, SymbolicGridStopsAtTheValue) {
  const Case c = elementwise();
  Launcher l(*rt, c);
  for (int64_t n : {int64_t{65}, int64_t{130}}) {
    const KernelLaunch launch = l.launch({n});
    rt->run({&launch, 1}, nullptr);
    l.expect_output(n);
  }
  std::vector<float> all(kMax);
  rt->copy_out(all.data(), l.buffers[0], all.size() * sizeof(float));
  for (int64_t k = 130; k < kMax; ++k) ASSERT_TRUE(std::isnan(all[k])) << k;
}

// More workgroups than one grid dimension holds (65535 on lavapipe): the launch splits them
// into a 2-D grid, which the shader reads from gl_NumWorkGroups.
TEST_F(VulkanTest, SymbolicGridSplitsIntoTwoDimensions) {
  const int64_t max = int64_t{1} << 23;
  const UOp i = UOp::range(UOp::variable("n", 1, max), 0, AxisType::global);
  const Case c{"wide",
               UOp::sink({buffer(0, max).index(i).store(buffer(1, max).index(i).load() - 1.0)}),
               {max, max},
               [](int64_t n) {
                 std::vector<double> out;
                 for (int64_t k = 0; k < n; ++k) out.push_back(value(1, k) - 1.0);
                 return out;
               }};
  Launcher l(*rt, c);
  for (int64_t n : {(int64_t{1} << 22) + 5, int64_t{1000}}) {
    const KernelLaunch launch = l.launch({n});
    rt->run({&launch, 1}, nullptr);
    l.expect_output(n);
  }
}

TEST_F(VulkanTest, SymbolicZeroIsAValueLikeAnyOther) { expect_zero_sized_launches(*rt); }

TEST_F(VulkanTest, SymbolicGraphReplaysWithOtherValues) {
  const std::vector<Case> cases = all_cases();
  std::vector<std::unique_ptr<Launcher>> ls;
  std::vector<KernelLaunch> launches;
  for (const Case& c : cases) {
    ls.push_back(std::make_unique<Launcher>(*rt, c));
    launches.push_back(ls.back()->launch({5}));
  }
  const std::unique_ptr<Graph> g = rt->capture(launches);
  g->replay(launches);
  for (const auto& l : ls) l->expect_output(5);
  for (int64_t n : {kMax, kMin, int64_t{77}}) {
    for (KernelLaunch& l : launches) l.vars = {n};
    const Counters before = counters();
    g->replay(launches);
    EXPECT_EQ(counters().graph_rerecords - before.graph_rerecords, 1) << n;
    for (const auto& l : ls) l->expect_output(n);
  }
  // The same values again: nothing to record.
  const Counters before = counters();
  g->replay(launches);
  EXPECT_EQ(counters().graph_rerecords - before.graph_rerecords, 0);
  for (const auto& l : ls) l->expect_output(77);
}

// An input beyond maxStorageBufferRange (128 MiB on lavapipe) makes the launch use the
// device-address variant: the variable's value follows the addresses in the push constants.
TEST_F(VulkanTest, SymbolicKernelWithDeviceAddresses) {
  const int64_t offset = int64_t{34} << 20;  // 136 MiB of floats before the part read
  const UOp i = UOp::range(var_n(), 0, AxisType::global);
  const UOp v = buffer(1, offset + kMax).index(i + offset).load() * 2.0;
  const Case c{"device_address",
               UOp::sink({buffer(0, kMax).index(i).store(v)}),
               {kMax, offset + kMax},
               [&](int64_t n) {
                 std::vector<double> out;
                 for (int64_t k = 0; k < n; ++k) out.push_back(double{value(1, offset + k)} * 2);
                 return out;
               }};
  Launcher l(*rt, c);
  for (int64_t n : {int64_t{100}, kMax}) {
    const KernelLaunch launch = l.launch({n});
    rt->run({&launch, 1}, nullptr);
    l.expect_output(n);
  }
  KernelLaunch launch = l.launch({7});
  const std::unique_ptr<Graph> g = rt->capture({&launch, 1});
  launch.vars = {333};
  g->replay({&launch, 1});
  l.expect_output(333);
}

TEST_F(VulkanTest, SymbolicValuesOutsideTheBoundsAreErrors) {
  const Case c = elementwise();
  Launcher l(*rt, c);
  const KernelLaunch high = l.launch({kMax + 1}), none = l.launch({});
  try {
    rt->run({&high, 1}, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const InternalError& e) {
    ADD_FAILURE() << "an internal error: " << e.what();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(l.program.name));
    EXPECT_THAT(e.what(), HasSubstr("'n'"));
  }
  EXPECT_THROW(rt->run({&none, 1}, nullptr), Error);
  const KernelLaunch good = l.launch({3});
  const std::unique_ptr<Graph> g = rt->capture({&good, 1});
  EXPECT_THROW(g->replay({&high, 1}), Error);
  g->replay({&good, 1});
  l.expect_output(3);
}

}  // namespace
}  // namespace vkgrad::vk::testing
