// tensor: reductions composed from the core's sum and max: mean, min, any, all, var, std,
// argmax/argmin, softmax, log_softmax, logsumexp and cumsum. Each reduction has the three
// public overloads (all axes, one axis, a list of axes where {} means all).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>
#include <vkgrad/tensor.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

const std::vector<int> kAllAxes{};

int64_t reduced_count(const Tensor& t, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int a : axes) n *= t.shape()[static_cast<size_t>(a)];
  return n;
}

// Whether one of `axes` is symbolic: its count is then a variable's value, read when the kernel
// runs (tensor::count_of), not a constant.
bool symbolic_count(const Tensor& t, const std::vector<int>& axes) {
  const Shape& sym = tensor::sym_shape(t);
  return std::any_of(axes.begin(), axes.end(), [&](int a) { return lazy::is_sym(sym[a]); });
}

// Float math of the reductions that divide runs in float32 for ints and bool (the result dtype,
// as tinygrad) and for float16/bfloat16 (accumulated in float32, cast back at the end).
DType compute_dtype(DType dt) {
  return dt == dtypes::float32 || dt == dtypes::float64 ? dt : dtypes::float32;
}
DType float_result_dtype(DType dt) { return dt.is_float() ? dt : dtypes::float32; }

// max(f(x)) == f(min(x)) for an order-reversing f: negation for floats, ~x for integers
// (signed and unsigned alike), logical not for bool.
Tensor order_reversed(const Tensor& x) {
  if (x.dtype().is_float()) return -x;
  if (x.dtype().is_bool()) return x.logical_not();
  return x.bitwise_not();
}

// A 0-d tensor accepts axis 0 or -1 (PyTorch): the op runs on its (1,) reshape and the result
// goes back to 0-d. Otherwise the axis is normalized as usual.
template <class F>
Tensor along_axis(const Tensor& t, int axis, const char* op, F&& f) {
  if (t.ndim() == 0) {
    if (axis != 0 && axis != -1)
      throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) +
                       " out of range for a 0-d tensor");
    return f(t.reshape({1}), 0).reshape({});
  }
  return f(t, tensor::normalize_axis(axis, t.shape(), op));
}

// The first index of the maximum along `axis` (tinygrad): mark the maxima, weight them by
// n, n-1, ..., 1 so the first has the largest weight, take the max, and turn it back into an
// index. NaN counts as a maximum (PyTorch returns the index of the first NaN).
Tensor argmax_along(const Tensor& x, int axis, bool keepdim, const char* op) {
  const int64_t n = x.shape(axis);
  if (n == 0)
    throw ShapeError(std::string(op) + ": cannot reduce the empty axis " + std::to_string(axis) +
                     " of a tensor of shape " + tensor::shape_str(x.shape()));
  Tensor is_max = x == x.max(axis, true);
  if (x.dtype().is_float()) is_max = is_max.logical_or(x != x);
  Shape weight_shape(static_cast<size_t>(x.ndim() - axis), 1);
  weight_shape[0] = n;
  const Tensor weight =
      (n - tensor::iota(n, dtypes::int32, x.device()).cast(dtypes::int32)).reshape(weight_shape);
  const Tensor best = is_max.where(weight, 0).max(axis, keepdim);
  return (n - best).cast(dtypes::int32);
}

// Inclusive prefix sums along the last axis. Up to kBlock elements: a masked sum over a
// (n, n) triangle. Longer axes split into blocks of kBlock (tinygrad's two-level split), so the
// work stays O(n * kBlock): prefix sums inside each block, plus the exclusive prefix sums of the
// block totals.
constexpr int64_t kBlock = 256;
Tensor cumsum_last(const Tensor& x) {
  const Shape& s = x.shape();
  const int64_t n = s.back();
  if (n <= kBlock) {
    const Tensor i = tensor::iota(n, dtypes::int32, x.device());
    const Tensor mask = i.reshape({1, n}) <= i.reshape({n, 1});  // [out, in]: in <= out
    Shape rows = s, square = s;
    rows.insert(rows.end() - 1, 1);
    square.insert(square.end() - 1, n);
    return mask.where(x.reshape(rows).expand(square), 0).sum(-1);
  }
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  PadList pad(static_cast<size_t>(x.ndim()), {0, 0});
  pad.back() = {0, blocks * kBlock - n};
  Shape split = s;
  split.back() = blocks;
  split.push_back(kBlock);
  const Tensor xb = x.pad(pad).reshape(split);  // [..., block, element]
  const Tensor inner = cumsum_last(xb);
  const Tensor totals = xb.sum(-1);  // [..., block]
  // Exclusive prefix of the totals: the inclusive one shifted right by one.
  PadList shift(static_cast<size_t>(totals.ndim()), {0, 0});
  shift.back() = {1, 0};
  PadList keep;
  for (int64_t d : totals.shape()) keep.push_back({0, d});
  const Tensor offsets = cumsum_last(totals).pad(shift).shrink(keep);
  Shape offsets_shape = offsets.shape();
  offsets_shape.push_back(1);
  Shape joined = s;
  joined.back() = blocks * kBlock;
  PadList trim;
  for (int64_t d : s) trim.push_back({0, d});
  return (inner + offsets.reshape(offsets_shape)).reshape(joined).shrink(trim);
}

}  // namespace

// ---- mean, min, any, all, var, std --------------------------------------------------------------

Tensor Tensor::mean() const { return mean(kAllAxes, false); }
Tensor Tensor::mean(int axis, bool keepdim) const { return mean(std::vector<int>{axis}, keepdim); }
// sum / count; ints and bool sum in their accumulation dtype (int32, ...) and divide as float32
// (tinygrad); a mean over zero elements is NaN.
Tensor Tensor::mean(const std::vector<int>& axes, bool keepdim) const {
  const std::vector<int> ax = tensor::reduce_axes(*this, axes, "mean");
  const double n = static_cast<double>(reduced_count(*this, ax));
  const DType out = float_result_dtype(dtype());
  const Tensor x = dtype().is_float() ? cast(compute_dtype(dtype())) : *this;
  const Tensor sum = x.sum(ax, keepdim).cast(compute_dtype(out));
  if (symbolic_count(*this, ax))
    return (sum / tensor::count_of(*this, ax, compute_dtype(out))).cast(out);
  return (sum / n).cast(out);
}

Tensor Tensor::min() const { return min(kAllAxes, false); }
Tensor Tensor::min(int axis, bool keepdim) const { return min(std::vector<int>{axis}, keepdim); }
Tensor Tensor::min(const std::vector<int>& axes, bool keepdim) const {
  return order_reversed(
      order_reversed(*this).max(tensor::reduce_axes(*this, axes, "min"), keepdim));
}

Tensor Tensor::any() const { return any(kAllAxes, false); }
Tensor Tensor::any(int axis, bool keepdim) const { return any(std::vector<int>{axis}, keepdim); }
// max over bool: false for an empty reduction.
Tensor Tensor::any(const std::vector<int>& axes, bool keepdim) const {
  return cast(dtypes::bool_).max(tensor::reduce_axes(*this, axes, "any"), keepdim);
}

Tensor Tensor::all() const { return all(kAllAxes, false); }
Tensor Tensor::all(int axis, bool keepdim) const { return all(std::vector<int>{axis}, keepdim); }
// not any(not x): true for an empty reduction.
Tensor Tensor::all(const std::vector<int>& axes, bool keepdim) const {
  return cast(dtypes::bool_)
      .logical_not()
      .max(tensor::reduce_axes(*this, axes, "all"), keepdim)
      .logical_not();
}

Tensor Tensor::var() const { return var(kAllAxes, false); }
Tensor Tensor::var(int axis, bool keepdim) const { return var(std::vector<int>{axis}, keepdim); }
// Two-pass sum((x - mean)^2) / (n - 1) (correction 1): NaN for n <= 1, as PyTorch.
Tensor Tensor::var(const std::vector<int>& axes, bool keepdim) const {
  const std::vector<int> ax = tensor::reduce_axes(*this, axes, "var");
  const double n = static_cast<double>(reduced_count(*this, ax));
  const DType out = float_result_dtype(dtype());
  const Tensor x = cast(compute_dtype(dtype()));
  const Tensor squares = (x - x.mean(ax, true)).square();
  if (symbolic_count(*this, ax))
    return (squares.sum(ax, keepdim) / (tensor::count_of(*this, ax, x.dtype()) - 1.0)).cast(out);
  const double divisor = n > 1 ? n - 1 : 0.0;
  return (squares.sum(ax, keepdim) / divisor).cast(out);
}

Tensor Tensor::std() const { return std(kAllAxes, false); }
Tensor Tensor::std(int axis, bool keepdim) const { return std(std::vector<int>{axis}, keepdim); }
Tensor Tensor::std(const std::vector<int>& axes, bool keepdim) const {
  const DType out = float_result_dtype(dtype());
  return cast(compute_dtype(dtype())).var(axes, keepdim).sqrt().cast(out);
}

// ---- argmax, argmin -----------------------------------------------------------------------------

Tensor Tensor::argmax() const {
  if (numel() == 0) throw ShapeError("argmax: empty tensor of shape " + tensor::shape_str(shape()));
  return argmax_along(reshape({numel()}), 0, false, "argmax");
}
Tensor Tensor::argmax(int axis, bool keepdim) const {
  return along_axis(*this, axis, "argmax",
                    [&](const Tensor& t, int a) { return argmax_along(t, a, keepdim, "argmax"); });
}
Tensor Tensor::argmin() const {
  if (numel() == 0) throw ShapeError("argmin: empty tensor of shape " + tensor::shape_str(shape()));
  return order_reversed(*this).argmax();
}
Tensor Tensor::argmin(int axis, bool keepdim) const {
  return along_axis(*this, axis, "argmin", [&](const Tensor& t, int a) {
    return argmax_along(order_reversed(t), a, keepdim, "argmin");
  });
}

// ---- softmax family, cumsum ---------------------------------------------------------------------

// exp(x - max) / sum(exp(x - max)); the max is detached (it cancels in value and gradient).
Tensor Tensor::softmax(int axis) const {
  const DType out = float_result_dtype(dtype());
  return along_axis(cast(compute_dtype(dtype())), axis, "softmax", [&](const Tensor& x, int a) {
    const Tensor e = (x - x.max(a, true).detach()).exp();
    return (e / e.sum(a, true)).cast(out);
  });
}

Tensor Tensor::log_softmax(int axis) const {
  const DType out = float_result_dtype(dtype());
  return along_axis(cast(compute_dtype(dtype())), axis, "log_softmax", [&](const Tensor& x, int a) {
    const Tensor shifted = x - x.max(a, true).detach();
    return (shifted - shifted.exp().sum(a, true).log()).cast(out);
  });
}

// log(sum(exp(x - m))) + m with m the max, taken as 0 where it is infinite (PyTorch), so
// all -inf gives -inf and any +inf gives +inf instead of NaN.
Tensor Tensor::logsumexp(int axis) const {
  const DType out = float_result_dtype(dtype());
  return along_axis(cast(compute_dtype(dtype())), axis, "logsumexp", [&](const Tensor& x, int a) {
    const Tensor m = x.max(a, true).detach();
    const Tensor shift = (m.abs() == std::numeric_limits<double>::infinity()).where(0.0, m);
    const Tensor r = (x - shift).exp().sum(a, true).log() + shift;
    return tensor::squeeze_axes(r, {a}).cast(out);
  });
}

// Prefix sums in sum's result dtype (int32 for bool and small ints, as sum).
Tensor Tensor::cumsum(int axis) const {
  return along_axis(*this, axis, "cumsum", [&](const Tensor& x, int a) {
    if (x.shape(a) == 0) return Tensor::zeros(x.shape(), x.sum(a).dtype(), x.device());
    const int last = x.ndim() - 1;
    if (a == last) return cumsum_last(x);
    std::vector<int> order(static_cast<size_t>(x.ndim()));
    for (int i = 0; i < x.ndim(); ++i) order[static_cast<size_t>(i)] = i;
    std::swap(order[static_cast<size_t>(a)], order.back());
    return cumsum_last(x.permute(order)).permute(order);  // a swap is its own inverse
  });
}

}  // namespace vkgrad
