// sched: lowering one kernel — movement ops become index expressions over the output's ranges
// (padding becomes a valid mask that gates loads and selects the pad value), reductions become
// REDUCE over fresh reduce ranges, and reads of buffers become LOADs. Depends on ir only.
#pragma once

#include <functional>
#include <vector>

#include "ir/uop.hpp"
#include "sched/lazy.hpp"

namespace vkgrad {

struct LoweredKernel {
  UOp ast;                  // SINK(STORE(...)), simplified (see schedule.hpp)
  std::vector<UOp> inputs;  // tensor nodes read through DEFINE_GLOBAL slots 1, 2, ...
};

// The value a reduction starts from (and gives when empty): 0 for ADD, 1 for MUL, the dtype's
// lowest value for MAX.
UOp reduce_identity(Ops op, DType d);

// Lower the kernel that computes `root`. `is_input(u)` says whether node u is read from a buffer
// (an input BUFFER or another kernel's result) rather than computed here.
LoweredKernel lower_kernel(const UOp& root, lazy::ShapeMap& shapes,
                           const std::function<bool(const UOp&)>& is_input);

}  // namespace vkgrad
