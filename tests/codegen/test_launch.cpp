// tests/codegen: the launch passes on scheduler-built kernels, no device — plan_launch's
// workgroup size and grid, and gpu_dims's global ranges as digits of SPECIAL("gid").
#include <gtest/gtest.h>

#include <vkgrad/vkgrad.hpp>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

TEST(Launch, GlobalRangesBecomeDigitsOfTheInvocationIndex) {
  const Target gpu = full_target();
  const UOp k = scheduled_kernel(input({5, 7}).transpose() * 2.0);  // (7, 5): two global axes
  const UOp d = simplify(gpu_dims(k, gpu));  // as the pipeline's next pass does
  EXPECT_EQ(count_ops(d, Ops::SPECIAL), 1);
  for (const UOp& u : toposort(d))
    if (u.op() == Ops::RANGE) ADD_FAILURE() << "a range is left";
  for (const UOp& u : toposort(d))
    if (u.op() == Ops::SPECIAL) {
      EXPECT_EQ(u.arg_as<std::string>(), "gid");
      EXPECT_TRUE(u.src(0).is_const(35));
    }
  // Simplified, the contiguous store is at gid itself.
  EXPECT_EQ(d.src(0).src(0).src(1).op(), Ops::SPECIAL);
  // The CPU keeps its loops; a kernel without global axes has nothing to map.
  EXPECT_EQ(gpu_dims(k, cpu::host_target()), k);
  const UOp scalar = scheduled_kernel(input({64}).sum());
  EXPECT_EQ(gpu_dims(scalar, gpu), scalar);
}

TEST(Launch, PlanLaunchPicksTheWorkgroupAndTheGrid) {
  const Target gpu = full_target();
  const UOp small = scheduled_kernel(input({5, 7}) + 1.0);
  Program p;
  plan_launch(small, gpu, p);
  EXPECT_EQ(p.local_size[0], 64u);  // 35 invocations: 64 is the smallest that halves past 35
  EXPECT_EQ(p.groups[0], 1u);
  const UOp big = scheduled_kernel(input({1 << 12, 1 << 12}) + 1.0);
  plan_launch(big, gpu, p);
  EXPECT_EQ(p.local_size[0], 64u);
  // 262144 groups, over 65535: a 2-D grid covering them (padding invocations return early).
  EXPECT_GT(p.groups[1], 1u);
  EXPECT_GE(int64_t{p.groups[0]} * p.groups[1] * p.groups[2], (int64_t{1} << 24) / 64);
  EXPECT_LE(p.groups[0], 65535u);
}

TEST(Launch, LocalAxesMakeAGridOfWorkgroups) {
  const Target gpu = full_target();
  // (3, 5, 8, 12): LOCAL 4 of the last axis and 2 of the third; the global axes left are the
  // grid, the innermost x, the next y, the two outer ones z's digits.
  const UOp k = scheduled_kernel(input({3, 5, 8, 12}) * 2.0);
  const std::vector<Opt> opts{{OptOp::LOCAL, 3, 4}, {OptOp::LOCAL, 2, 2}};
  const UOp split = apply_opts(k, opts, gpu);
  Program p;
  plan_launch(split, gpu, p);
  EXPECT_EQ(p.local_size, (std::array<uint32_t, 3>{4, 2, 1}));
  EXPECT_EQ(p.groups, (std::array<uint32_t, 3>{3, 4, 15}));
  std::vector<std::string> names;
  for (const UOp& u : toposort(gpu_dims(split, gpu)))
    if (u.op() == Ops::SPECIAL) names.push_back(u.arg_as<std::string>());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"gidx0", "gidx1", "gidx2", "lidx0", "lidx1"}));
  // Where the grid exceeds the device's limits, the flat index covers every range.
  Target small = gpu;
  small.max_group_count[2] = 8;
  Program q;
  plan_launch(split, small, q);
  EXPECT_EQ(q.local_size, (std::array<uint32_t, 3>{64, 1, 1}));
  int specials = 0;
  for (const UOp& u : toposort(gpu_dims(split, small)))
    if (u.op() == Ops::SPECIAL) specials += u.arg_as<std::string>() == "gid" ? 1 : 100;
  EXPECT_EQ(specials, 1);
}

}  // namespace
}  // namespace vkgrad
