// tensor: the library's side of a Tensor (its lazy node, shape, dtype, device) and the primitive
// operations every other Tensor method is composed of. Only src/tensor includes this.
// Depends on sched (lazy graph builders) and engine (realize).
#pragma once

#include <span>
#include <string>
#include <vector>
#include <vkgrad/tensor.hpp>

#include "ir/uop.hpp"
#include "sched/lazy.hpp"

namespace vkgrad {

struct Tensor::Impl {
  UOp uop;  // tensor-level node (sched/lazy.hpp); after realize, a view of its buffer
  Shape shape;
  // The shape with symbolic axes as the sched/lazy.hpp dimensions of their variables (the
  // graph's view of it); empty when no axis is symbolic. `shape` holds the bound sizes.
  Shape sym;
  DType dtype;
  std::string device;
  bool weak = false;  // a literal scalar: adopts the other operand's dtype (see tensor.hpp)
  // A weak literal's exact value, so adopting a wider dtype (float64, int64) loses nothing.
  std::optional<ConstValue> literal;
  // Autograd (autograd.cpp).
  bool requires_grad = false;
  std::optional<Tensor> grad;
  // realize() replaces `uop` with a view of the result; when the value depends on a tensor that
  // requires grad, the node it was computed from is kept here, so gradients still flow through
  // the realized value. It stands for `grad_view` only: once `uop` changes again, it is stale.
  UOp grad_graph, grad_view;
};

namespace tensor {

// A new tensor from a node the caller built (shape/dtype/device must describe it).
Tensor make(UOp uop, Shape shape, DType dtype, std::string device, bool weak = false);
const UOp& uop(const Tensor& t);
std::string resolve_device(const std::string& device);  // "" -> default device; validates

// autograd.cpp: every realize calls this first. Parameters (requires_grad_) still lazy that
// `roots`' graph reads are realized in place, and `roots` read their buffers instead: a
// parameter's initializer runs once, not once per computation.
void materialize_parameters(std::vector<UOp>& roots);

// autograd.cpp: realize() calls this once `impls[i]->uop` is the view of its result and
// `before[i]` the node it was computed from; keeps those nodes that gradients may flow through.
void keep_for_autograd(std::span<const std::shared_ptr<Tensor::Impl>> impls,
                       std::span<const UOp> before);
// autograd.cpp: Tensor::to calls this with the BUFFER on `device` it copied `src`'s value into;
// when the value depends on a tensor that requires grad, gradients reaching the buffer flow on
// to `src` (on its own device).
void keep_copy_for_autograd(const UOp& buffer, const Tensor& src, const std::string& device);

// The rules of GRAD_RULE nodes (sched/lazy.hpp): the arg's first element.
enum class GradRule : int64_t { conv2d = 0 };
// ops_nn.cpp: the gradient of conv2d's GRAD_RULE (its arg) with respect to its input x and its
// weights w, given the output's gradient g; each only where asked.
std::vector<std::optional<Tensor>> conv_gradient(const Tensor& x, const Tensor& w, const Tensor& g,
                                                 const IntTuple& arg, bool want_x, bool want_w);

// Symbolic shapes (Impl::sym): the graph's shape of t, and t with it set (left empty when
// `sym` has no symbolic axis).
const Shape& sym_shape(const Tensor& t);
Tensor with_sym(Tensor t, Shape sym);
// t reshaped to `shape` with the symbolic shape `sym` (empty: none), as the caller worked out.
Tensor reshaped(const Tensor& t, Shape shape, Shape sym);
// t reshaped to the symbolic shape `sym`, where each of t's variables stands for its axis: what
// library ops that insert or drop axes of size 1 use, since by sizes alone a variable bound to 1
// could be any axis of size 1.
Tensor reshape_sym(const Tensor& t, const Shape& sym);
// The symbolic shape a broadcast of tensors to `shape` has (their symbolic axes win).
Shape broadcast_sym(std::span<const Tensor> ts, const Shape& shape);
// The value of symbolic dimension d (sched/lazy.hpp), bound to `value`, as a 0-d tensor.
Tensor dim_value(int64_t d, int64_t value, DType dtype, const std::string& device);
// The number of elements over `axes` as a float32 0-d tensor (a variable's value where an axis
// is symbolic).
Tensor count_of(const Tensor& t, const std::vector<int>& axes, DType dtype);

// Float composites of float16/bfloat16 (and integer) inputs run in float32 (float64 stays):
// math_operand is the tensor the math runs on, math_result the dtype the result is cast to
// (ops_math.cpp).
Tensor math_operand(const Tensor& x);
DType math_result(const Tensor& x);

// Formatting for error messages: "(2, 3)", "float32".
std::string shape_str(const Shape& s);
// The element count of `shape` for an op building a tensor of `dtype` with it. ShapeError naming
// `op` and the shape when a dimension is negative, or when the count or the size in bytes does not
// fit in int64; with a zero dimension, the product of the others must still fit (index math and
// strides are computed from it). Every op that creates a shape or grows one checks it here.
int64_t checked_numel(const Shape& shape, DType dtype, const char* op);
// Normalizes a possibly negative axis; ShapeError naming `op` when out of range.
// (A 0-d tensor accepts axis 0 and -1, as PyTorch.) The message names the shape.
int normalize_axis(int axis, const Shape& shape, const char* op);
// Each axis normalized; ShapeError when one repeats.
std::vector<int> normalize_axes(const std::vector<int>& axes, const Shape& shape, const char* op);

// ---- primitives -------------------------------------------------------------------------------
// A tensor of `shape` filled with v (a broadcast constant: no memory).
Tensor constant(ConstValue v, DType dtype, const Shape& shape, const std::string& device);
// 0, 1, ..., n-1 as a 1-D tensor of an integer dtype (int32 unless n needs int64).
Tensor iota(int64_t n, DType dtype, const std::string& device);
// Elementwise op over sources of one shape and device (callers broadcast and cast first).
// `out` is the result dtype (bool for comparisons).
Tensor alu(Ops op, std::span<const Tensor> srcs, DType out);
Tensor alu(Ops op, const Tensor& a, DType out);
Tensor alu(Ops op, const Tensor& a, const Tensor& b, DType out);
// Reduce over `axes` (normalized) with ADD, MUL or MAX, keeping the reduced axes as size 1;
// the dtype is the input's (callers cast first).
Tensor reduce(const Tensor& x, Ops op, const std::vector<int>& axes, const char* name);

// ---- broadcasting and promotion (NumPy / tinygrad rules) --------------------------------------
Shape broadcast_shape(const Shape& a, const Shape& b, const char* op);
// `sym`: the target's symbolic shape (broadcast_sym), when one operand has symbolic axes.
Tensor broadcast_to(const Tensor& t, const Shape& shape, const char* op, const Shape& sym = {});
// EXPAND of `base` (same rank) to `shape`, whose symbolic shape is `sym` (or `shape`).
Tensor expand_to(const Tensor& base, Shape shape, Shape sym);
// The dtype of a binary op's operands after promotion (weak scalars adopt the other side).
DType promote(const Tensor& a, const Tensor& b);
// Both operands broadcast to one shape and cast to one dtype (promote, or `dtype` if given).
std::pair<Tensor, Tensor> binary_operands(const Tensor& a, const Tensor& b, const char* op);

// Reduction helper for the public overloads: axes as given ({} = all), normalized, sorted.
std::vector<int> reduce_axes(const Tensor& t, const std::vector<int>& axes, const char* op);
// Drop the reduced axes (for keepdim=false).
Tensor squeeze_axes(const Tensor& t, const std::vector<int>& axes);

}  // namespace tensor
}  // namespace vkgrad
