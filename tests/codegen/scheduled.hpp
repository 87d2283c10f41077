// tests/codegen: kernels from the scheduler for the pass tests — a tensor's only kernel as the
// scheduler hands it to codegen, and unrealized float32 inputs to build tensors from.
#pragma once

#include <gtest/gtest.h>

#include <vkgrad/vkgrad.hpp>

#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad {

// The kernel AST of `t`, whose schedule must be one kernel.
inline UOp scheduled_kernel(const Tensor& t) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  const Schedule s = build_schedule(g.key);
  EXPECT_EQ(s.kernels.size(), 1u);
  return s.kernels.at(0).ast;
}

inline Tensor input(const Shape& s) { return Tensor::empty(s, dtypes::float32, "CPU"); }

// How many nodes of `op` the kernel has.
inline int count_ops(const UOp& k, Ops op) {
  int n = 0;
  for (const UOp& u : toposort(k)) n += u.op() == op;
  return n;
}

}  // namespace vkgrad
