// tests/sched: graphs for the scheduler suites — float32 inputs seen in a shape, a root's
// schedule, and what the assertions compare of it (kernel shapes, reduction trip counts).
#pragma once

#include <span>
#include <vector>

#include "sched/lazy.hpp"
#include "sched/schedule.hpp"

namespace vkgrad {

// An input of `shape`: a buffer seen in that shape.
inline UOp input(const Shape& shape) {
  const UOp b = lazy::buffer(dtypes::float32, lazy::prod(shape), "CPU");
  return shape.size() == 1 ? b : lazy::reshape(b, shape);
}

inline UOp key_of(const UOp& root) { return normalize_graph(std::span<const UOp>(&root, 1)).key; }
inline Schedule schedule_of(const UOp& root) { return build_schedule(key_of(root)); }

inline std::vector<Shape> kernel_shapes(const Schedule& s) {
  std::vector<Shape> out;
  for (const ScheduleKernel& k : s.kernels) out.push_back(k.global_shape);
  return out;
}

// Per kernel: the trip counts of the ranges its reductions run over.
inline std::vector<std::vector<int64_t>> reduce_trips(const Schedule& s) {
  std::vector<std::vector<int64_t>> out;
  for (const ScheduleKernel& k : s.kernels) {
    std::vector<int64_t>& trips = out.emplace_back();
    for (const UOp& u : toposort(k.ast))
      if (u.op() == Ops::REDUCE)
        for (size_t i = 1; i < u.src().size(); ++i)
          trips.push_back(std::get<int64_t>(u.src(i).src(0).const_value()));
  }
  return out;
}

}  // namespace vkgrad
