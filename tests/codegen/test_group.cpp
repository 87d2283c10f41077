// tests/codegen: group_reductions on scheduler-built kernels, no device — a grouped reduction
// written out as shared memory, stores, barriers and loads (a tree of them, or one barrier after
// subgroup sums), its lanes SPECIAL("lidx0"), its result stored by lane 0.
#include <gtest/gtest.h>

#include <vkgrad/vkgrad.hpp>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "ir/spec.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

// The kernel of `t` grouped over `lanes`, as the pipeline lowers it up to this pass.
UOp grouped(const Tensor& t, int64_t lanes, const Target& target) {
  const UOp k = apply_opts(scheduled_kernel(t), {{OptOp::GROUP, 0, lanes}}, target);
  return group_reductions(gpu_dims(k, target), target);
}

TEST(Group, LanesFoldThroughSharedMemoryInATree) {
  Target gpu = full_target();
  gpu.subgroup_arithmetic = false;
  const UOp k = grouped(input({4, 4096}).sum(1), 128, gpu);
  for (const UOp& u : toposort(k)) {
    if (u.op() == Ops::RANGE) {
      EXPECT_NE(u.arg_as<AxisArg>().type, AxisType::group_reduce);
    }
    if (u.op() == Ops::SPECIAL) {
      const std::string& n = u.arg_as<std::string>();
      EXPECT_TRUE(n == "wgid" || n == "lidx0") << n;
    }
    if (u.op() == Ops::DEFINE_LOCAL) {
      EXPECT_EQ(u.dtype(), dtypes::float32.ptr(128, AddrSpace::local));
    }
  }
  EXPECT_EQ(count_ops(k, Ops::DEFINE_LOCAL), 1);
  EXPECT_EQ(count_ops(k, Ops::BARRIER), 8);  // after the lanes' stores and after each of 7 steps
  EXPECT_EQ(count_ops(k, Ops::REDUCE), 1);   // each lane's own part
  // Lane 0 stores the result.
  const UOp& index = k.src(0).src(0);
  ASSERT_EQ(index.src().size(), 3u);
  EXPECT_EQ(index.src(2),
            UOp::special("lidx0", UOp::const_(dtypes::index, int64_t{128})).eq(int64_t{0}));
  EXPECT_NO_THROW(verify(k, "group_reductions"));
}

TEST(Group, SumsFoldWithinSubgroupsFirst) {
  const Target gpu = full_target();
  ASSERT_TRUE(gpu.subgroup_arithmetic);
  const UOp k = grouped(input({4, 4096}).sum(1), 256, gpu);
  EXPECT_EQ(count_ops(k, Ops::BARRIER), 1);
  EXPECT_EQ(count_ops(k, Ops::REDUCE), 2);  // the lane's part, then the subgroups' sums
  bool add = false;
  for (const UOp& u : toposort(k))
    if (u.op() == Ops::CUSTOM) add = add || u.arg_as<std::string>() == "subgroupAdd({0})";
  EXPECT_TRUE(add);
  // A max keeps the tree: its NaN rule is ours, not subgroupMax's.
  EXPECT_EQ(count_ops(grouped(input({4, 4096}).max(1), 256, gpu), Ops::BARRIER), 9);
}

TEST(Group, OnlyGroupedKernelsChange) {
  const UOp k = scheduled_kernel(input({64, 64}).sum(1));
  EXPECT_EQ(group_reductions(k, full_target()), k);
  EXPECT_EQ(group_reductions(k, cpu::host_target()), k);
}

}  // namespace
}  // namespace vkgrad
