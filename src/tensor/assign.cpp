// tensor: assign, the functional in-place update (see tensor.hpp). The tensor's Impl, shared by
// every copy of the handle, takes the value's node; nothing runs until something realizes it.
// Graphs built from the old value still point at the old node, and nodes are immutable, so they
// keep the old value (value semantics) at no cost.
#include "tensor/assign.hpp"

#include <fmt/format.h>

#include <utility>

namespace vkgrad {
namespace tensor {
namespace {
thread_local std::vector<AssignRecord>* t_assign_log = nullptr;
}  // namespace

std::vector<AssignRecord>* set_assign_log(std::vector<AssignRecord>* log) {
  return std::exchange(t_assign_log, log);
}

}  // namespace tensor

Tensor& Tensor::assign(const Tensor& value) {
  const std::shared_ptr<Impl>& self = impl();
  const Impl& v = *value.impl();
  const std::string shape = tensor::shape_str(self->shape);
  if (v.shape != self->shape)
    throw ShapeError(fmt::format("assign: a value of shape {} to a tensor of shape {}",
                                 tensor::shape_str(v.shape), shape));
  // A literal (a weak scalar such as Tensor(0.5)) has no dtype or device of its own yet: it is
  // converted to the target's, as tinygrad converts a Python number.
  const bool literal = v.weak && v.literal;
  const Tensor adopted =
      literal ? tensor::constant(*v.literal, self->dtype, self->shape, self->device) : value;
  const Impl& src = *adopted.impl();
  if (src.dtype != self->dtype)
    throw DTypeError(fmt::format("assign: a {} value to a {} tensor of shape {}", src.dtype.name(),
                                 self->dtype.name(), shape));
  if (src.device != self->device)
    throw DeviceError(fmt::format("assign: a value on {} to a tensor on {} (shape {}, {})",
                                  src.device, self->device, shape, self->dtype.name()));
  if (tensor::t_assign_log) tensor::t_assign_log->push_back({self, self->uop});
  tensor::notify_jits(self, self->uop);
  self->uop = src.uop;
  // The tensor now holds a value, not a literal: it no longer adapts to the other operand.
  self->weak = false;
  self->literal.reset();
  return *this;
}

}  // namespace vkgrad
