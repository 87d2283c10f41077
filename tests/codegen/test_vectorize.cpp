// tests/codegen: the fold_vectors pass — which loads and stores become vec4 accesses, and what
// stays scalar (a misaligned read, a mask that differs per lane, a target without 4-wide vectors,
// a grouped reduction). Kernels come from the scheduler; no device.
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

// The kernel of `t` after `op` on its innermost global axis by 4 (UPCAST) or on its reduction.
UOp optimized(const Tensor& t, OptOp op, int64_t amount, const Target& target) {
  const UOp k = scheduled_kernel(t);
  const int last = static_cast<int>(kernel_axes(k).globals.size()) - 1;
  return apply_opts(k, {{op, op == OptOp::UPCAST ? last : 0, amount}}, target);
}

struct Counts {
  int vector_loads = 0, scalar_loads = 0;
  bool vector_store = false;
};
Counts count(const UOp& k) {
  Counts c;
  for (const UOp& u : toposort(k))
    if (u.op() == Ops::LOAD) (u.dtype().count() == 4 ? c.vector_loads : c.scalar_loads)++;
  c.vector_store = k.src(0).src().size() == 3;
  return c;
}

TEST(Vectorize, ContiguousLoadsAndTheStoreBecomeVec4) {
  const Target gpu = full_target();
  const UOp k = optimized(input({8, 64}) + input({8, 64}).exp2(), OptOp::UPCAST, 4, gpu);
  const UOp v = fold_vectors(k, gpu);
  const Counts c = count(v);
  EXPECT_EQ(c.vector_loads, 2);
  EXPECT_EQ(c.scalar_loads, 0);
  EXPECT_TRUE(c.vector_store);
  // Each lane reads its element of the vector: GEP(vector load, the upcast range).
  for (const UOp& u : toposort(v))
    if (u.op() == Ops::GEP) {
      EXPECT_EQ(u.src(0).op(), Ops::LOAD);
      EXPECT_EQ(u.src(1).op(), Ops::RANGE);
    }
  EXPECT_NO_THROW(verify(v, "fold_vectors"));
  EXPECT_EQ(fold_vectors(v, gpu), v);  // nothing more to fold
}

TEST(Vectorize, WhatStaysScalar) {
  const Target gpu = full_target();
  // A read shifted by one element is not aligned to 4.
  const UOp shifted =
      optimized(input({1, 65}).shrink({{0, 1}, {1, 65}}) * 2.0, OptOp::UPCAST, 4, gpu);
  EXPECT_EQ(count(fold_vectors(shifted, gpu)).vector_loads, 0);
  EXPECT_TRUE(count(fold_vectors(shifted, gpu)).vector_store);
  // A padded read's mask differs per lane.
  const UOp padded = optimized(input({4, 62}).pad({{0, 0}, {1, 1}}) + 1.0, OptOp::UPCAST, 4, gpu);
  EXPECT_EQ(count(fold_vectors(padded, gpu)).vector_loads, 0);
  // A transposed read walks the upcast axis with a stride.
  const UOp transposed = optimized(input({64, 8}).transpose() + 1.0, OptOp::UPCAST, 4, gpu);
  EXPECT_EQ(count(fold_vectors(transposed, gpu)).vector_loads, 0);
  // The CPU's C has no vec4 accesses; a grouped reduction keeps its loads.
  const Target cpu = cpu::host_target();
  const UOp c = optimized(input({8, 64}) * 3.0, OptOp::UPCAST, 4, cpu);
  EXPECT_EQ(fold_vectors(c, cpu), c);
  const UOp grouped = optimized(input({4, 4096}).sum(1), OptOp::GROUP, 64, gpu);
  EXPECT_EQ(fold_vectors(grouped, gpu), grouped);
}

}  // namespace
}  // namespace vkgrad
