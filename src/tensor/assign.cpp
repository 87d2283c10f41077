// tensor: assign, the functional in-place update (see tensor.hpp). The tensor's Impl, shared by
// every copy of the handle, takes the value's node; nothing runs until something realizes it.
// Graphs built from the old value still point at the old node, and nodes are immutable, so they
// keep the old value (value semantics) at no cost. assign_slice is the exception: an ASSIGN node
// (sched/lazy.hpp) whose kernel writes a region of the tensor's buffer in place.
#include "tensor/assign.hpp"

#include <fmt/format.h>

#include <utility>

#include "engine/realize.hpp"

namespace vkgrad {
namespace tensor {
namespace {
thread_local std::vector<AssignRecord>* t_assign_log = nullptr;
}  // namespace

std::vector<AssignRecord>* set_assign_log(std::vector<AssignRecord>* log) {
  return std::exchange(t_assign_log, log);
}

// assign_slice with its start as a dimension (a constant, or a variable's dimension bound to
// `start_value`).
Tensor& assign_region(Tensor& self, int dim, int64_t start, int64_t start_value,
                      const Tensor& value) {
  const Tensor::Impl& t = *self.impl();
  const Tensor::Impl& v = *value.impl();
  const int d = normalize_axis(dim, t.shape, "assign_slice");
  const auto ud = static_cast<size_t>(d);
  const Shape& vsym = sym_shape(value);
  bool fits = v.shape.size() == t.shape.size() && t.sym.empty();
  for (size_t i = 0; fits && i < t.shape.size(); ++i)
    fits = i == ud || (v.shape[i] == t.shape[i] && !lazy::is_sym(vsym[i]));
  const int64_t length = fits ? v.shape[ud] : 0;
  if (!fits || start_value < 0 || start_value + length > t.shape[ud])
    throw ShapeError(fmt::format(
        "assign_slice: a value of shape {} at {} of dimension {} of a tensor of shape {}",
        shape_str(v.shape), start_value, d, shape_str(t.shape)));
  if (v.dtype != t.dtype)
    throw DTypeError(fmt::format("assign_slice: a {} value to a {} tensor of shape {}",
                                 v.dtype.name(), t.dtype.name(), shape_str(t.shape)));
  if (v.device != t.device)
    throw DeviceError(fmt::format("assign_slice: a value on {} to a tensor on {} (shape {}, {})",
                                  v.device, t.device, shape_str(t.shape), t.dtype.name()));
  // The target is a buffer (or an earlier write to one), so the kernel can write it in place.
  if (!engine::as_buffer(t.uop) && t.uop.op() != Ops::ASSIGN) self.realize();
  const std::shared_ptr<Tensor::Impl>& impl = self.impl();
  Shape offsets(t.shape.size(), 0);
  offsets[ud] = start;
  lazy::VarValues values;
  if (lazy::is_sym(start)) values[lazy::sym_var(start).name] = start_value;
  if (t_assign_log) t_assign_log->push_back({impl, impl->uop});
  notify_jits(impl, impl->uop);
  impl->uop = lazy::assign(impl->uop, v.uop, offsets, values);
  return self;
}

}  // namespace tensor

Tensor& Tensor::assign_slice(int dim, int64_t start, const Tensor& value) {
  return tensor::assign_region(*this, dim, start, start, value);
}

Tensor& Tensor::assign_slice(int dim, const Variable& start, const Tensor& value) {
  if (!start.value())
    throw Error(fmt::format("assign_slice: {} is not bound to a value (use {}.bind(n))",
                            start.name(), start.name()));
  return tensor::assign_region(*this, dim, lazy::sym_dim({start.name(), start.min(), start.max()}),
                               *start.value(), value);
}

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
