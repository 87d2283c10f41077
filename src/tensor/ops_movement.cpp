// tensor: the movement ops composed from the six view primitives (reshape, permute, expand, pad,
// shrink, flip): transpose, flatten, squeeze, slice, select, repeat, split, chunk, cat, stack —
// all views or pads, never copies — plus gather and one_hot, which are tinygrad's one-hot compare
// and sum (the scheduler fuses the compare into the reduction: one kernel, no index buffer).
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <string>
#include <vector>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {

using tensor::normalize_axis;
using tensor::shape_str;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Bounds that keep every dimension whole; callers narrow one of them.
PadList whole(const Shape& s) {
  PadList b;
  b.reserve(s.size());
  for (int64_t n : s) b.emplace_back(0, n);
  return b;
}

// The 0-d tensor's axis rule (PyTorch): dims -1 and 0 name the tensor itself.
bool is_scalar_dim(int ndim, int dim) { return ndim == 0 && (dim == 0 || dim == -1); }

// Ops that index into a dimension: a 0-d tensor has none (normalize_axis accepts 0 and -1 for it).
int dim_of(const Tensor& t, int dim, const char* op) {
  if (t.ndim() == 0)
    throw ShapeError(std::string(op) + ": dim " + std::to_string(dim) +
                     " out of range for a 0-d tensor");
  return normalize_axis(dim, t.shape(), op);
}

// `num_classes` bools per element of `index` laid out along a new axis at `dim` of the result:
// index.unsqueeze(dim) == arange(n) shaped (n, 1, ..., 1).
// The compare runs in the index's dtype when it is 32 or 64 bits wide (so uint64 indices never
// meet a signed type), otherwise in int32 (so n never overflows an int8 class counter).
Tensor one_hot_along(const Tensor& index, int64_t n, int dim) {
  const DType wide = n > INT32_MAX ? dtypes::int64 : dtypes::int32;
  Tensor idx = index;
  if (idx.dtype().itemsize() < wide.itemsize()) idx = idx.cast(wide);
  Tensor classes = tensor::iota(n, wide, index.device());
  if (classes.dtype() != idx.dtype()) classes = classes.cast(idx.dtype());
  Shape s(static_cast<size_t>(index.ndim() + 1 - dim), 1);
  s[0] = n;
  return idx.unsqueeze(dim).eq(classes.reshape(s));
}

}  // namespace

Tensor Tensor::transpose(int a, int b) const {
  const int n = ndim();
  a = normalize_axis(a, shape(), "transpose");
  b = normalize_axis(b, shape(), "transpose");
  if (a == b) return *this;
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[static_cast<size_t>(a)], order[static_cast<size_t>(b)]);
  return permute(order);
}

Tensor Tensor::T() const {
  if (ndim() != 2)
    throw ShapeError("T: expected a 2-D tensor, got shape " + shape_str(shape()) +
                     " (use transpose(a, b) or permute)");
  return permute({1, 0});
}

Tensor Tensor::flip(int axis) const { return flip(std::vector<int>{axis}); }

Tensor Tensor::flatten(int start, int end) const {
  const int n = ndim();
  if (n == 0) {
    if (!is_scalar_dim(0, start) || !is_scalar_dim(0, end))
      throw ShapeError("flatten: dims (" + std::to_string(start) + ", " + std::to_string(end) +
                       ") out of range for a 0-d tensor");
    return reshape({1});
  }
  const int s = normalize_axis(start, shape(), "flatten");
  const int e = normalize_axis(end, shape(), "flatten");
  if (s > e)
    throw ShapeError("flatten: start dim " + std::to_string(start) + " comes after end dim " +
                     std::to_string(end) + " for shape " + shape_str(shape()));
  const Shape& in = shape();
  Shape out(in.begin(), in.begin() + s);
  int64_t merged = 1;
  for (int i = s; i <= e; ++i) merged *= in[static_cast<size_t>(i)];
  out.push_back(merged);
  out.insert(out.end(), in.begin() + e + 1, in.end());
  return reshape(out);
}

Tensor Tensor::unflatten(int dim, Shape sizes) const {
  const int d = dim_of(*this, dim, "unflatten");
  const int64_t n = shape()[static_cast<size_t>(d)];
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      throw ShapeError("unflatten: invalid sizes " + shape_str(sizes) + " for dim " +
                       std::to_string(dim) + " of shape " + shape_str(shape()));
    } else {
      known *= sizes[i];
    }
  }
  if (infer >= 0 && known != 0 && n % known == 0) sizes[static_cast<size_t>(infer)] = n / known;
  if (sizes.empty() || (infer >= 0 && sizes[static_cast<size_t>(infer)] < 0) ||
      (infer < 0 && known != n))
    throw ShapeError("unflatten: sizes " + shape_str(sizes) + " do not multiply to " +
                     std::to_string(n) + ", dim " + std::to_string(dim) + " of shape " +
                     shape_str(shape()));
  const Shape& in = shape();
  Shape out(in.begin(), in.begin() + d);
  out.insert(out.end(), sizes.begin(), sizes.end());
  out.insert(out.end(), in.begin() + d + 1, in.end());
  return reshape(out);
}

Tensor Tensor::squeeze() const {
  Shape out;
  for (int64_t n : tensor::sym_shape(*this))
    if (n != 1) out.push_back(n);  // a symbolic axis stays, whatever it is bound to
  return tensor::reshape_sym(*this, out);
}

Tensor Tensor::squeeze(int dim) const {
  if (is_scalar_dim(ndim(), dim)) return *this;
  const int d = normalize_axis(dim, shape(), "squeeze");
  if (shape()[static_cast<size_t>(d)] != 1) return *this;  // PyTorch: a no-op, not an error
  Shape out = tensor::sym_shape(*this);
  if (lazy::is_sym(out[static_cast<size_t>(d)])) return *this;  // varies: not an axis of 1
  out.erase(out.begin() + d);
  return tensor::reshape_sym(*this, out);
}

Tensor Tensor::unsqueeze(int dim) const {
  const int n = ndim();
  if (dim < -n - 1 || dim > n)
    throw ShapeError("unsqueeze: dim " + std::to_string(dim) + " out of range for shape " +
                     shape_str(shape()) + " (expected in [" + std::to_string(-n - 1) + ", " +
                     std::to_string(n) + "])");
  const int d = dim < 0 ? dim + n + 1 : dim;
  Shape out = tensor::sym_shape(*this);
  out.insert(out.begin() + d, 1);
  return tensor::reshape_sym(*this, out);
}

// Python slicing: negative indices count from the end, out-of-range bounds clamp, an empty
// range gives size 0. A step s > 1 keeps every s-th element: pad the range to a multiple of s,
// split the axis into (n, s), keep column 0 — views only.
Tensor Tensor::slice(int dim, int64_t start, int64_t end, int64_t step) const {
  if (step <= 0)
    throw ShapeError("slice: step must be positive, got " + std::to_string(step) + " (dim " +
                     std::to_string(dim) + " of shape " + shape_str(shape()) +
                     "; use flip for reversed order)");
  const int d = dim_of(*this, dim, "slice");
  const auto ud = static_cast<size_t>(d);
  const int64_t n = shape()[ud];
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t s = clamp(start);
  const int64_t e = std::max(s, clamp(end));
  const int64_t count = ceil_div(e - s, step);
  PadList bounds = whole(shape());
  if (step == 1 || count <= 1) {  // a plain shrink: [s, e), or the one element at s
    bounds[ud] = {s, step == 1 ? e : s + count};
    return shrink(bounds);
  }
  const int64_t span = count * step;  // may run past the end: padded, then dropped
  bounds[ud] = {s, std::min(n, s + span)};
  Tensor x = shrink(bounds);
  if (const int64_t missing = s + span - std::min(n, s + span); missing > 0) {
    PadList pads(static_cast<size_t>(ndim()), {0, 0});
    pads[ud] = {0, missing};
    x = x.pad(pads);
  }
  Shape split = x.shape();
  split[ud] = count;
  split.insert(split.begin() + d + 1, step);
  PadList keep = whole(split);
  keep[ud + 1] = {0, 1};
  Shape out = x.shape();
  out[ud] = count;
  return x.reshape(split).shrink(keep).reshape(out);
}

Tensor Tensor::slice(int dim, const Variable& end) const {
  const int d = dim_of(*this, dim, "slice");
  const auto ud = static_cast<size_t>(d);
  if (!end.value())
    throw Error(
        fmt::format("slice: {} is not bound to a value (use {}.bind(n))", end.name(), end.name()));
  if (end.max() > shape()[ud])
    throw ShapeError(fmt::format("slice: {} reaches {}, past dimension {} of {}", end.name(),
                                 end.max(), d, shape_str(shape())));
  Shape sym = tensor::sym_shape(*this);
  if (lazy::is_sym(sym[ud]))
    throw ShapeError(fmt::format("slice: dimension {} of {} is already the symbolic {}", d,
                                 shape_str(shape()), lazy::sym_var(sym[ud]).name));
  const int64_t v = lazy::sym_dim({end.name(), end.min(), end.max()});
  for (int64_t other : sym)
    if (other == v)
      throw ShapeError(fmt::format("slice: {} already stands for a dimension of {}", end.name(),
                                   shape_str(shape())));
  // (0, the variable) on `dim`; other symbolic dimensions are kept whole as their variables.
  PadList bounds;
  for (size_t i = 0; i < sym.size(); ++i) bounds.emplace_back(0, i == ud ? v : sym[i]);
  Shape s = shape();
  s[ud] = *end.value();
  sym[ud] = v;
  UOp node = lazy::reshape_bound(lazy::shrink(impl()->uop, bounds), sym, lazy::values_at(sym, s));
  return tensor::with_sym(tensor::make(std::move(node), std::move(s), dtype(), device(), is_weak()),
                          std::move(sym));
}

Tensor Tensor::select(int dim, int64_t index) const {
  const int d = dim_of(*this, dim, "select");
  const auto ud = static_cast<size_t>(d);
  const int64_t n = shape()[ud];
  if (index < -n || index >= n)
    throw ShapeError("select: index " + std::to_string(index) + " out of range for dim " +
                     std::to_string(dim) + " of shape " + shape_str(shape()));
  const int64_t i = index < 0 ? index + n : index;
  PadList bounds = whole(shape());
  bounds[ud] = {i, i + 1};
  Shape out = shape();
  out.erase(out.begin() + d);
  return shrink(bounds).reshape(out);
}

// Tile: (s) -> reshape (1, s) -> expand (r, s) -> reshape (r*s), for every dimension at once.
Tensor Tensor::repeat(Shape times) const {
  const int n = ndim();
  if (static_cast<int>(times.size()) < n)
    throw ShapeError("repeat: " + std::to_string(times.size()) + " repeat counts " +
                     shape_str(times) + " for a " + std::to_string(n) + "-d tensor of shape " +
                     shape_str(shape()) + " (need at least one per dimension)");
  for (int64_t r : times)
    if (r < 0)
      throw ShapeError("repeat: negative repeat count in " + shape_str(times) + " for shape " +
                       shape_str(shape()));
  Shape base(times.size() - static_cast<size_t>(n), 1);
  base.insert(base.end(), shape().begin(), shape().end());
  Shape unsqueezed, expanded, out;
  for (size_t i = 0; i < times.size(); ++i) {
    unsqueezed.insert(unsqueezed.end(), {1, base[i]});
    expanded.insert(expanded.end(), {times[i], base[i]});
  }
  try {  // the result has as many elements as `expanded`; each of its dimensions then fits
    tensor::checked_numel(expanded, dtype(), "repeat");
  } catch (const ShapeError&) {
    throw ShapeError("repeat: " + shape_str(shape()) + " repeated " + shape_str(times) +
                     " times has more elements than int64 can count");
  }
  for (size_t i = 0; i < times.size(); ++i) out.push_back(times[i] * base[i]);
  return reshape(unsqueezed).expand(expanded).reshape(out);
}

std::vector<Tensor> Tensor::split(int64_t size, int dim) const {
  const int d = dim_of(*this, dim, "split");
  if (size <= 0)
    throw ShapeError("split: size must be positive, got " + std::to_string(size) + " for shape " +
                     shape_str(shape()));
  const int64_t n = shape()[static_cast<size_t>(d)];
  std::vector<Tensor> out;
  int64_t start = 0;
  do {  // a size-0 dimension still gives one (empty) piece, as PyTorch and tinygrad
    out.push_back(slice(d, start, std::min(n, start + size)));
    start += size;
  } while (start < n);
  return out;
}

// PyTorch's chunk: pieces of ceil(n / chunks), so there may be fewer than `chunks` of them;
// a size-0 dimension gives `chunks` empty pieces.
std::vector<Tensor> Tensor::chunk(int64_t chunks, int dim) const {
  const int d = dim_of(*this, dim, "chunk");
  if (chunks <= 0)
    throw ShapeError("chunk: number of chunks must be positive, got " + std::to_string(chunks) +
                     " for shape " + shape_str(shape()));
  const int64_t n = shape()[static_cast<size_t>(d)];
  if (n == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), *this);
  return split(ceil_div(n, chunks), d);
}

// out[i][j] = self[i][index[i][j]] (for dim 1): index is one-hot encoded along a new last axis,
// matched against self with `dim` moved to that axis, and summed. Index values outside
// [0, shape[dim]) match nothing and give 0 (PyTorch raises; checking would need a sync).
Tensor Tensor::gather(int dim, const Tensor& index) const {
  if (!index.dtype().is_int())
    throw DTypeError("gather: index must be an integer tensor, got " + index.dtype().name() +
                     " (index shape " + shape_str(index.shape()) + ", input shape " +
                     shape_str(shape()) + ")");
  if (index.device() != device())
    throw DeviceError("gather: index is on " + index.device() + ", input on " + device());
  if (index.ndim() != ndim())
    throw ShapeError("gather: index shape " + shape_str(index.shape()) + " and input shape " +
                     shape_str(shape()) + " differ in number of dimensions");
  if (ndim() == 0) {  // PyTorch: a 0-d gather reads self[index] with index 0
    if (!is_scalar_dim(0, dim))
      throw ShapeError("gather: dim " + std::to_string(dim) + " out of range for a 0-d tensor");
    return index.eq(Tensor(0)).where(*this, Tensor(0)).cast(dtype());
  }
  const int d = normalize_axis(dim, shape(), "gather");
  PadList bounds = whole(shape());
  for (int i = 0; i < ndim(); ++i) {
    if (i == d) continue;
    const auto ui = static_cast<size_t>(i);
    if (index.shape()[ui] > shape()[ui])
      throw ShapeError("gather: index shape " + shape_str(index.shape()) +
                       " is larger than input shape " + shape_str(shape()) + " in dim " +
                       std::to_string(i) + " (dim " + std::to_string(dim) + " is gathered)");
    bounds[ui] = {0, index.shape()[ui]};
  }
  const int64_t n = shape()[static_cast<size_t>(d)];
  Tensor x = shrink(bounds).unsqueeze(-1).transpose(-1, d);
  Tensor picked = one_hot_along(index, n, ndim()).where(x, Tensor(0));
  Tensor out = picked.sum(-1);
  return out.dtype() == dtype() ? out : out.cast(dtype());
}

// tinygrad's one_hot: int32 0/1 along a new last axis. Values outside [0, num_classes) give a
// row of zeros.
Tensor Tensor::one_hot(int64_t num_classes) const {
  if (!dtype().is_int())
    throw DTypeError("one_hot: expected an integer tensor, got " + dtype().name() + " of shape " +
                     shape_str(shape()));
  if (num_classes < 0)
    throw ShapeError("one_hot: num_classes must be non-negative, got " +
                     std::to_string(num_classes) + " for shape " + shape_str(shape()));
  Shape hot_shape = shape();
  hot_shape.push_back(num_classes);
  tensor::checked_numel(hot_shape, dtypes::int32, "one_hot");
  Tensor hot = one_hot_along(*this, num_classes, ndim());
  return hot.cast(dtypes::int32);
}

// Each input padded with zeros to the full extent along `dim`, then summed (tinygrad's cat):
// one elementwise kernel reading every input through a masked view. Bools are or-ed instead.
// (The one visible effect of the adds: a -0.0 input reads back as +0.0.)
Tensor cat(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) throw ShapeError("cat: expected at least one tensor");
  const Tensor& first = tensors.front();
  if (first.ndim() == 0)
    throw ShapeError("cat: 0-d tensors cannot be concatenated (use stack), got shape ()");
  const int d = normalize_axis(dim, first.shape(), "cat");
  const auto ud = static_cast<size_t>(d);
  DType dt = first.dtype();
  int64_t total = 0;
  for (const Tensor& t : tensors) {
    bool ok = t.ndim() == first.ndim();
    for (size_t i = 0; ok && i < ud; ++i) ok = t.shape()[i] == first.shape()[i];
    for (size_t i = ud + 1; ok && i < first.shape().size(); ++i)
      ok = t.shape()[i] == first.shape()[i];
    if (!ok)
      throw ShapeError("cat: shapes " + shape_str(first.shape()) + " and " + shape_str(t.shape()) +
                       " differ outside dim " + std::to_string(dim));
    if (t.device() != first.device())
      throw DeviceError("cat: tensors on " + first.device() + " and " + t.device());
    dt = dtypes::least_upper_dtype(dt, t.dtype());
    if (__builtin_add_overflow(total, t.shape()[ud], &total))
      throw ShapeError("cat: the sizes along dim " + std::to_string(dim) + " of " +
                       std::to_string(tensors.size()) + " tensors of shape " +
                       shape_str(first.shape()) + " add up to more than int64 can count");
  }
  Shape joined = first.shape();
  joined[ud] = total;
  tensor::checked_numel(joined, dt, "cat");
  if (tensors.size() == 1) return first.dtype() == dt ? first : first.cast(dt);
  std::optional<Tensor> out;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.shape()[ud];
    PadList pads(first.shape().size(), {0, 0});
    pads[ud] = {offset, total - offset - n};
    offset += n;
    Tensor piece = (t.dtype() == dt ? t : t.cast(dt)).pad(pads);
    if (!out)
      out = piece;
    else
      out = dt.is_bool() ? out->logical_or(piece) : out->add(piece);
  }
  return *out;
}

Tensor stack(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) throw ShapeError("stack: expected at least one tensor");
  const Shape& s = tensors.front().shape();
  const int n = tensors.front().ndim();
  if (dim < -n - 1 || dim > n)
    throw ShapeError("stack: dim " + std::to_string(dim) + " out of range for shape " +
                     shape_str(s) + " (expected in [" + std::to_string(-n - 1) + ", " +
                     std::to_string(n) + "])");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    if (t.shape() != s)
      throw ShapeError("stack: every tensor must have the same shape, got " + shape_str(s) +
                       " and " + shape_str(t.shape()));
    parts.push_back(t.unsqueeze(dim));
  }
  Shape joined = parts.front().shape();
  joined[static_cast<size_t>(dim < 0 ? dim + n + 1 : dim)] = static_cast<int64_t>(parts.size());
  tensor::checked_numel(joined, tensors.front().dtype(), "stack");
  return cat(parts, dim < 0 ? dim + n + 1 : dim);
}

}  // namespace vkgrad
