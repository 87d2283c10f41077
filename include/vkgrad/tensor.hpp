// Public: Tensor, the lazy n-dimensional array users build expressions with, and the free
// functions over tensors (where, cat, stack). A Tensor is a cheap handle: copies share one
// node of the lazy graph; realize() / to_vector() compile and run what is needed.
// Depends on dtype.hpp and error.hpp only (the IR stays private to the library).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <vkgrad/dtype.hpp>
#include <vkgrad/error.hpp>
#include <vkgrad/variable.hpp>

namespace vkgrad {

using Shape = std::vector<int64_t>;
// (before, after) per dimension for pad; (start, end) per dimension for shrink.
using PadList = std::vector<std::pair<int64_t, int64_t>>;

// An int that applies to both spatial dimensions, or an explicit (height, width) pair:
// conv2d(w, {}, 2) and conv2d(w, {}, {2, 1}) both work.
struct Int2 {
  int64_t h = 0, w = 0;
  Int2(int64_t v) : h(v), w(v) {}  // NOLINT(google-explicit-constructor): ints are pairs
  Int2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
};

// What a realize would run: one entry per kernel (Tensor::schedule()).
struct KernelInfo {
  std::string name;         // e.g. "E_25_4", "r_16_32"
  std::string device;       // "CPU", "VULKAN"
  int64_t num_buffers = 0;  // output first, then inputs
  Shape global_size;        // the kernel's output (global) axes
};

// The host type that holds one element of `dtype` in from_vector / to_vector / item.
// float16 and bfloat16 are held as their raw bits (uint16_t).
template <class T>
constexpr bool host_type_matches(DType dtype);

class Tensor {
 public:
  struct Impl;  // the library's side of a tensor (src/tensor/tensor_impl.hpp)

  // ---- creation -----------------------------------------------------------------------------
  // Scalars are "weak" like Python literals in tinygrad: int32 + 3 stays int32, uint8 + 1 stays
  // uint8, float16 * 2.0 stays float16, int32 * 2.5 becomes float32.
  Tensor(double v);   // NOLINT(google-explicit-constructor): literals mix with tensors
  Tensor(int v);      // NOLINT(google-explicit-constructor)
  Tensor(int64_t v);  // NOLINT(google-explicit-constructor)
  // Exactly bool (a pointer must not convert to a tensor).
  template <class B>
  requires std::is_same_v<B, bool> Tensor(B v)  // NOLINT(google-explicit-constructor)
      : Tensor(bool_scalar(v)) {}
  Tensor(float v) : Tensor(static_cast<double>(v)) {}  // NOLINT(google-explicit-constructor)
  // A default-constructed Tensor is empty: any use other than assignment throws Error.
  Tensor() = default;
  bool defined() const { return impl_ != nullptr; }

  // A 0-d tensor of `dtype` (not weak).
  static Tensor scalar(double v, std::optional<DType> dtype = {}, const std::string& device = {});
  // A bound variable's value as a 0-d tensor (int32 unless `dtype`); kernels read the value
  // when they run (see variable.hpp).
  static Tensor variable(const Variable& v, std::optional<DType> dtype = {},
                         const std::string& device = {});

  // Copies `data` (row-major) into a new tensor. T must match the dtype (uint16_t carries the
  // bits of float16/bfloat16); the dtype defaults to the natural one for T.
  template <class T>
  static Tensor from_vector(std::span<const T> data, Shape shape, std::optional<DType> dtype = {},
                            const std::string& device = {});
  template <class E>
  static Tensor from_vector(const std::vector<E>& data, Shape shape,
                            std::optional<DType> dtype = {}, const std::string& device = {}) {
    if constexpr (std::is_same_v<E, bool>) {  // std::vector<bool> has no data()
      std::vector<uint8_t> raw(data.begin(), data.end());
      return from_host(raw.data(), raw.size(), dtypes::bool_, false, std::move(shape), dtype,
                       device);
    } else {
      return from_vector<E>(std::span<const E>(data.data(), data.size()), std::move(shape), dtype,
                            device);
    }
  }
  // From raw bytes (numel * itemsize of `dtype`).
  static Tensor from_bytes(const void* data, size_t nbytes, Shape shape, DType dtype,
                           const std::string& device = {});

  static Tensor empty(Shape shape, std::optional<DType> dtype = {}, const std::string& device = {});
  static Tensor zeros(Shape shape, std::optional<DType> dtype = {}, const std::string& device = {});
  static Tensor ones(Shape shape, std::optional<DType> dtype = {}, const std::string& device = {});
  // `value` int → int32 by default, double → float32, bool → bool.
  static Tensor full(Shape shape, double value, std::optional<DType> dtype = {},
                     const std::string& device = {});
  static Tensor full(Shape shape, int value, std::optional<DType> dtype = {},
                     const std::string& device = {});
  static Tensor full(Shape shape, int64_t value, std::optional<DType> dtype = {},
                     const std::string& device = {});
  static Tensor full(Shape shape, bool value, std::optional<DType> dtype = {},
                     const std::string& device = {});
  Tensor zeros_like() const;
  Tensor ones_like() const;
  Tensor full_like(double value) const;
  // Integers give int32, doubles float32 (unless dtype says otherwise).
  static Tensor arange(int64_t stop, std::optional<DType> dtype = {},
                       const std::string& device = {});
  static Tensor arange(int start, int stop, int step = 1, std::optional<DType> dtype = {},
                       const std::string& device = {});
  static Tensor arange(int64_t start, int64_t stop, int64_t step = 1,
                       std::optional<DType> dtype = {}, const std::string& device = {});
  static Tensor arange(double start, double stop, double step = 1.0,
                       std::optional<DType> dtype = {}, const std::string& device = {});
  static Tensor linspace(double start, double stop, int64_t steps, std::optional<DType> dtype = {},
                         const std::string& device = {});
  static Tensor eye(int64_t n, std::optional<DType> dtype = {}, const std::string& device = {});

  // Random numbers: counter-based (Threefry-2x32), so one seed gives the same numbers on every
  // device and in every process. Each call draws a fresh stream.
  static void manual_seed(uint64_t seed);
  static Tensor rand(Shape shape, std::optional<DType> dtype = {}, const std::string& device = {});
  static Tensor randn(Shape shape, std::optional<DType> dtype = {}, const std::string& device = {});
  static Tensor randint(Shape shape, int64_t low, int64_t high, std::optional<DType> dtype = {},
                        const std::string& device = {});
  static Tensor uniform(Shape shape, double low = 0.0, double high = 1.0,
                        std::optional<DType> dtype = {}, const std::string& device = {});

  // ---- inspection and data ------------------------------------------------------------------
  const Shape& shape() const;
  int64_t shape(int dim) const;  // negative dims count from the end
  int ndim() const;
  int64_t numel() const;
  DType dtype() const;
  const std::string& device() const;
  bool is_weak() const;  // a Python-literal-like scalar (see the constructors)

  // Runs the graph (if not yet run) and keeps the result; returns *this.
  Tensor& realize();
  const Tensor& realize() const;
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;
  // The raw bytes of the realized tensor, row-major.
  std::vector<uint8_t> to_bytes() const;

  // A copy on `device`, made now (through host memory). Gradients cross it: backward copies the
  // gradient back to this tensor's device.
  Tensor to(const std::string& device) const;
  Tensor cast(DType dtype) const;
  Tensor bitcast(DType dtype) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor detach() const;
  // A summary, and the values of tensors of up to 256 elements, read in the tensor's own dtype
  // and converted on the host (printing needs nothing of the device beyond that dtype).
  std::string to_string() const;
  // The kernels realize() would run now (nothing runs).
  std::vector<KernelInfo> schedule() const;

  // ---- autograd (src/tensor/autograd.cpp) -----------------------------------------------------
  // Gradients are lazy tensors built by rewrite rules over the graph, so backward graphs fuse
  // and schedule like any other.
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  // d(this)/d(t) for every tensor t this scalar depends on with requires_grad(), added to t's
  // grad(). ShapeError unless this is a scalar (one element).
  void backward() const;
  std::optional<Tensor> grad() const;            // std::nullopt before any backward
  Tensor& set_grad(std::optional<Tensor> grad);  // optimizers' zero_grad passes std::nullopt

  // ---- in-place update --------------------------------------------------------------------------
  // Gives this tensor (and every copy of this handle) the value of `value`, which must have the
  // same shape, dtype and device (ShapeError/DTypeError/DeviceError). Tensors built from the old
  // value keep the old value.
  Tensor& assign(const Tensor& value);
  // Writes `value` into positions [start, start + value.shape()[dim]) of dimension `dim`, in
  // place: when realized, one kernel writes that region of this tensor's buffer and nothing
  // else (a KV cache's new rows). `value` has this tensor's shape except along `dim`, where it
  // may be symbolic; its dtype and device are this tensor's (ShapeError/DTypeError/
  // DeviceError). A Variable start is read when the kernel runs, so a Jit capture serves every
  // position; a region running past the end is a ShapeError for the bound value and is not
  // written past the buffer for others. This tensor is realized first if it is lazy. Unlike
  // assign(), lazy tensors that read the old value and are realized after the write read the
  // new region (realize or clone them first); in one realize, such a read after the write is an
  // Error. The buffer written is the tensor's own: tensors realized together from one
  // expression share one, so give each its own (empty(), or a realize of its own). Not
  // differentiable.
  Tensor& assign_slice(int dim, int64_t start, const Tensor& value);
  Tensor& assign_slice(int dim, const Variable& start, const Tensor& value);

  // ---- elementwise --------------------------------------------------------------------------
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;  // true division: int / int gives float32
  // rounding_mode "trunc" or "floor" (integers stay integers); "" is true division.
  Tensor div(const Tensor& o, const std::string& rounding_mode) const;
  Tensor mod(const Tensor& o) const;  // floor modulo (Python's %)
  Tensor neg() const;
  Tensor pow(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor where(const Tensor& a, const Tensor& b) const;  // this ? a : b
  Tensor clip(const Tensor& lo, const Tensor& hi) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor bitwise_not() const;
  Tensor lshift(const Tensor& o) const;
  Tensor rshift(const Tensor& o) const;

  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor reciprocal() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half to even
  Tensor trunc() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu() const;  // tanh approximation
  Tensor silu() const;
  Tensor softplus(double beta = 1.0) const;
  Tensor elu(double alpha = 1.0) const;
  Tensor leaky_relu(double slope = 0.01) const;
  Tensor hardtanh(double min_val = -1.0, double max_val = 1.0) const;
  Tensor mish() const;
  Tensor square() const;
  Tensor erf() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor isnan() const;  // bool; false everywhere for integer dtypes
  Tensor isinf(bool detect_positive = true, bool detect_negative = true) const;

  // ---- reductions ---------------------------------------------------------------------------
#define VKGRAD_REDUCTION(NAME)                                                   \
  Tensor NAME() const;                                                           \
  Tensor NAME(int axis, bool keepdim = false) const;                             \
  Tensor NAME(const std::vector<int>& axes, bool keepdim = false) const;         \
  /* {} and {0, 1} pick this (an empty list reduces every axis, never axis 0) */ \
  Tensor NAME(std::initializer_list<int> axes, bool keepdim = false) const {     \
    return NAME(std::vector<int>(axes), keepdim);                                \
  }
  VKGRAD_REDUCTION(sum)
  VKGRAD_REDUCTION(mean)
  VKGRAD_REDUCTION(max)
  VKGRAD_REDUCTION(min)
  VKGRAD_REDUCTION(prod)
  VKGRAD_REDUCTION(any)
  VKGRAD_REDUCTION(all)
  VKGRAD_REDUCTION(var)
  VKGRAD_REDUCTION(std)
#undef VKGRAD_REDUCTION
  Tensor argmax() const;  // over the flattened tensor
  Tensor argmax(int axis, bool keepdim = false) const;
  Tensor argmin() const;
  Tensor argmin(int axis, bool keepdim = false) const;
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;
  Tensor logsumexp(int axis) const;
  Tensor cumsum(int axis) const;
  Tensor cumprod(int axis) const;
  // (values, int64 indices) of the k largest (smallest) along dim, sorted, ties to the lower
  // index; NaN counts as the largest.
  std::pair<Tensor, Tensor> topk(int64_t k, int dim = -1, bool largest = true,
                                 bool sorted = true) const;
  std::pair<Tensor, Tensor> sort(int dim = -1, bool descending = false) const;
  Tensor argsort(int dim = -1, bool descending = false) const;

  // ---- movement (views: no copy) ------------------------------------------------------------
  Tensor reshape(Shape shape) const;  // one -1 allowed
  Tensor permute(std::vector<int> order) const;
  Tensor transpose(int a = -2, int b = -1) const;
  Tensor T() const;                  // 2-D transpose
  Tensor expand(Shape shape) const;  // -1 keeps a dimension
  Tensor pad(const PadList& padding, double value = 0.0) const;
  // mode "constant" (value), "reflect" (mirror, edge not repeated), "replicate" (edge repeated)
  // or "circular" (wrap around).
  Tensor pad(const PadList& padding, const std::string& mode, double value = 0.0) const;
  // Resizes the last size.size() dims: mode "linear" (half-pixel centers, or the corners
  // aligned), "nearest" or "nearest-exact" (tinygrad's interpolate).
  Tensor interpolate(const Shape& size, const std::string& mode = "linear",
                     bool align_corners = false) const;
  Tensor shrink(const PadList& bounds) const;
  Tensor flip(std::vector<int> axes) const;
  // The same values with axis `axis` symbolic: its size is `v` (bound to the axis's size when
  // unbound; ShapeError when bound to another size or the size is outside v's bounds). What is
  // computed from the tensor follows the symbol: elementwise ops, broadcasting, reductions
  // (sum, max, mean, ... over it or other axes), matmul, permute, expand, flip, and reshapes
  // that keep the axis whole; pad or shrink of the axis, or a reshape merging or splitting it,
  // is a ShapeError. Backward through a symbolic shape is not supported (Error).
  Tensor symbolic(int axis, const Variable& v) const;
  // Per axis: the variable it stands for (bound to its size), or nothing for a fixed size.
  std::vector<std::optional<Variable>> symbolic_shape() const;
  Tensor flip(int axis) const;
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor unflatten(int dim, Shape sizes) const;
  Tensor squeeze() const;
  Tensor squeeze(int dim) const;
  Tensor unsqueeze(int dim) const;
  Tensor slice(int dim, int64_t start, int64_t end, int64_t step = 1) const;
  // The first `end` entries of dimension `dim` (end bound, within the dimension's size; the
  // variable's maximum too), the dimension now symbolic: kernels computed from it read end's
  // value when they run (attention over the filled part of a cache).
  Tensor slice(int dim, const Variable& end) const;
  Tensor select(int dim, int64_t index) const;
  Tensor repeat(Shape times) const;
  std::vector<Tensor> split(int64_t size, int dim = 0) const;
  std::vector<Tensor> chunk(int64_t n, int dim = 0) const;
  Tensor gather(int dim, const Tensor& index) const;
  Tensor one_hot(int64_t num_classes) const;
  // A copy with src's values written at `index` along dim (PyTorch's scatter; negative indices
  // count from the end). scatter_reduce combines instead: reduce is "sum", "prod", "mean",
  // "amax" or "amin" (also "add", "mul", "max", "min"), with the input's value when
  // include_self; "none" replaces.
  Tensor scatter(int dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_reduce(int dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  // The lower (upper) triangle of the last two dims from `diagonal` on; the rest zero.
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;

  // ---- linear algebra and nn functions ------------------------------------------------------
  Tensor matmul(const Tensor& o) const;
  Tensor dot(const Tensor& o) const { return matmul(o); }
  Tensor linear(const Tensor& weight, const std::optional<Tensor>& bias = {}) const;
  Tensor conv2d(const Tensor& weight, const std::optional<Tensor>& bias = {}, Int2 stride = 1,
                Int2 padding = 0, Int2 dilation = 1, int64_t groups = 1) const;
  Tensor conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias = {},
                          Int2 stride = 1, Int2 padding = 0, Int2 output_padding = 0,
                          int64_t groups = 1, Int2 dilation = 1) const;
  Tensor max_pool2d(Int2 kernel = 2, std::optional<Int2> stride = {}, Int2 padding = 0) const;
  Tensor avg_pool2d(Int2 kernel = 2, std::optional<Int2> stride = {}, Int2 padding = 0) const;
  Tensor layernorm(int axis = -1, double eps = 1e-5) const;
  Tensor layernorm(const std::vector<int>& axes, double eps = 1e-5) const;
  Tensor batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                   const Tensor& mean, const Tensor& invstd) const;
  Tensor dropout(double p = 0.5) const;
  Tensor cross_entropy(const Tensor& target) const;
  Tensor binary_crossentropy(const Tensor& target) const;
  Tensor binary_crossentropy_logits(const Tensor& target) const;
  Tensor binary_cross_entropy(const Tensor& target) const { return binary_crossentropy(target); }
  Tensor sparse_categorical_crossentropy(const Tensor& target) const;
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                      const std::optional<Tensor>& mask = {},
                                      bool is_causal = false) const;

  // Realizes several tensors in one schedule (one command buffer on Vulkan).
  static void realize_all(std::vector<Tensor>& tensors);

  // Dropout and batchnorm statistics follow this flag; false by default.
  static inline bool training = false;

  // ---- library side -------------------------------------------------------------------------
  explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<Impl>& impl() const;  // throws Error on an empty tensor

 private:
  std::shared_ptr<Impl> impl_;
  static Tensor bool_scalar(bool v);
  static Tensor from_host(const void* data, size_t count, DType host_dtype, bool raw16, Shape shape,
                          std::optional<DType> dtype, const std::string& device);
  void copy_out(void* dst, size_t count, DType host_dtype, bool raw16, const char* what) const;
};

// ---- free functions -------------------------------------------------------------------------
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cat(const std::vector<Tensor>& tensors, int dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);
Tensor matmul(const Tensor& a, const Tensor& b);
// Einstein summation over the operands: "ij,jk->ik", "bij,bjk->bik", "ii->i", "...ij->...ji".
Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- templates ------------------------------------------------------------------------------
namespace detail {
template <class T>
constexpr DType natural_dtype() {
  if constexpr (std::is_same_v<T, bool>)
    return dtypes::bool_;
  else if constexpr (std::is_same_v<T, float>)
    return dtypes::float32;
  else if constexpr (std::is_same_v<T, double>)
    return dtypes::float64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return dtypes::int8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return dtypes::uint8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return dtypes::int16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return dtypes::uint16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtypes::int32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return dtypes::uint32;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>)
    return dtypes::int64;
  else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, unsigned long long>)
    return dtypes::uint64;
  else
    static_assert(sizeof(T) == 0, "vkgrad: no dtype holds this host type");
}
}  // namespace detail

template <class T>
constexpr bool host_type_matches(DType dtype) {
  constexpr DType n = detail::natural_dtype<T>();
  if (n == dtype) return true;
  return std::is_same_v<T, uint16_t> && (dtype == dtypes::float16 || dtype == dtypes::bfloat16);
}

template <class E>
Tensor Tensor::from_vector(std::span<const E> data, Shape shape, std::optional<DType> dtype,
                           const std::string& device) {
  return from_host(data.data(), data.size(), detail::natural_dtype<E>(),
                   std::is_same_v<E, uint16_t>, std::move(shape), dtype, device);
}

template <class E>
std::vector<E> Tensor::to_vector() const {
  std::vector<E> out(static_cast<size_t>(numel()));
  copy_out(out.data(), out.size(), detail::natural_dtype<E>(), std::is_same_v<E, uint16_t>,
           "to_vector");
  return out;
}

template <class E>
E Tensor::item() const {
  if (numel() != 1)
    throw ShapeError("item: tensor of " + std::to_string(numel()) +
                     " elements, expected exactly 1");
  E out{};
  copy_out(&out, 1, detail::natural_dtype<E>(), std::is_same_v<E, uint16_t>, "item");
  return out;
}

// std::vector<bool> has no data(): bools go through a byte copy.
template <>
inline std::vector<bool> Tensor::to_vector<bool>() const {
  std::vector<uint8_t> raw(static_cast<size_t>(numel()));
  copy_out(raw.data(), raw.size(), dtypes::bool_, false, "to_vector");
  return std::vector<bool>(raw.begin(), raw.end());
}

}  // namespace vkgrad
