// CPU runtime: kernels with symbolic sizes run for each value of their variable (compared with
// values computed in double), across the thread pool, from a graph replayed with other values,
// and refuse values outside the variable's bounds.
#include <gtest/gtest.h>

#include <vkgrad/error.hpp>

#include "../codegen/symbolic_kernels.hpp"
#include "cpu/runtime.hpp"

namespace vkgrad::cpu {
namespace {

using namespace symbolic_kernels;

class CpuSymbolicTest : public ::testing::Test {
 protected:
  std::unique_ptr<Runtime> rt = make_runtime();
};

TEST_F(CpuSymbolicTest, EveryCaseRunsForEveryValue) { expect_every_case_for_every_value(*rt); }

// Enough work for the thread pool: the outermost trip count it splits is the launch's value.
TEST_F(CpuSymbolicTest, ALargeLaunchSplitsTheEvaluatedSize) {
  const int64_t max = int64_t{1} << 20;
  const UOp i = UOp::range(UOp::variable("n", 1, max), 0, AxisType::global);
  const Case c{"large",
               UOp::sink({buffer(0, max).index(i).store(buffer(1, max).index(i).load() + 1.0)}),
               {max, max},
               [](int64_t n) {
                 std::vector<double> out;
                 for (int64_t k = 0; k < n; ++k) out.push_back(value(1, k) + 1.0);
                 return out;
               }};
  Launcher l(*rt, c);
  const int64_t n = 300001;
  const KernelLaunch launch = l.launch({n});
  rt->run({&launch, 1}, nullptr);
  l.expect_output(n);
  // The output starts as NaN: the elements past n stay untouched.
  std::vector<float> tail(5);
  rt->copy_out(tail.data(), static_cast<const float*>(l.buffers[0]) + n, sizeof(float) * 5);
  for (float v : tail) EXPECT_TRUE(std::isnan(v));
}

TEST_F(CpuSymbolicTest, ZeroIsAValueLikeAnyOther) { expect_zero_sized_launches(*rt); }

TEST_F(CpuSymbolicTest, AGraphReplaysWithOtherValues) {
  const std::vector<Case> cases = all_cases();
  std::vector<std::unique_ptr<Launcher>> ls;
  std::vector<KernelLaunch> launches;
  for (const Case& c : cases) {
    ls.push_back(std::make_unique<Launcher>(*rt, c));
    launches.push_back(ls.back()->launch({5}));
  }
  const std::unique_ptr<Graph> g = rt->capture(launches);
  for (int64_t n : {int64_t{5}, kMax, kMin, int64_t{77}}) {
    for (KernelLaunch& l : launches) l.vars = {n};
    g->replay(launches);
    for (const auto& l : ls) l->expect_output(n);
  }
}

TEST_F(CpuSymbolicTest, ValuesOutsideTheBoundsAreErrors) {
  const Case c = elementwise();
  Launcher l(*rt, c);
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{kMax + 1}, std::vector<int64_t>{kMin - 1}, std::vector<int64_t>{},
        std::vector<int64_t>{5, 5}}) {
    const KernelLaunch launch = l.launch(bad);
    try {
      rt->run({&launch, 1}, nullptr);
      ADD_FAILURE() << "no error for " << bad.size() << " values";
    } catch (const InternalError& e) {
      ADD_FAILURE() << "an internal error: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(l.program.name), std::string::npos) << e.what();
    }
  }
  const KernelLaunch good = l.launch({3});
  const std::unique_ptr<Graph> g = rt->capture({&good, 1});
  const KernelLaunch bad = l.launch({kMax + 1});
  try {
    g->replay({&bad, 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkgrad::cpu
