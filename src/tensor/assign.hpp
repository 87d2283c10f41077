// tensor: the record assign() keeps of updates, read by the Jit (src/tensor/jit.cpp) to learn
// which tensors a call updates (optimizer steps) and so which buffers carry state across calls.
// Depends on tensor_impl.hpp only.
#pragma once

#include <memory>
#include <vector>

#include "tensor/tensor_impl.hpp"

namespace vkgrad::tensor {

struct AssignRecord {
  std::weak_ptr<Tensor::Impl> impl;  // the updated tensor (weak: a local may die in the call)
  UOp before;                        // its node before the update
};
// While a log is set on this thread, assign() appends one record per update. Returns the log
// it replaces; nullptr removes it.
std::vector<AssignRecord>* set_assign_log(std::vector<AssignRecord>* log);
// Every assign, on any thread, tells the Jits (jit.cpp) so that a tensor a capture reads from
// outside (a learning rate, a weight) and the caller later assigns is read at its new value.
void notify_jits(const std::shared_ptr<Tensor::Impl>& impl, const UOp& before);

}  // namespace vkgrad::tensor
