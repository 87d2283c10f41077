// tensor: ranges and identity matrices built on tensor::iota (0, 1, ..., n-1): arange, linspace
// and eye. No data is uploaded; each is a small elementwise kernel over an iota.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vkgrad/tensor.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

// 0, 1, ..., n-1 as a 1-D tensor of `dtype`; an empty range is an empty (0,) tensor.
Tensor counting(int64_t n, DType dtype, const std::string& device) {
  const std::string dev = tensor::resolve_device(device);
  if (n == 0) return Tensor::zeros({0}, dtype, dev);
  const DType index = n - 1 > std::numeric_limits<int32_t>::max() ? dtypes::int64 : dtypes::int32;
  return tensor::iota(n, index, dev).cast(dtype);
}

// A 0-d constant of `dtype`: start and step are exact in the result dtype (int64 starts past
// 2^31, float64 steps), whatever the default dtype of a weak literal is.
Tensor constant_in(ConstValue v, DType dtype, const std::string& device) {
  return tensor::constant(v, dtype, {}, tensor::resolve_device(device));
}

void check_float_or_int(DType dtype, const char* op) {
  if (dtype.is_bool() || dtype.is_void() || dtype == dtypes::index)
    throw DTypeError(std::string(op) + ": dtype " + dtype.name() + " is not a number type");
}

}  // namespace

Tensor Tensor::arange(int64_t stop, std::optional<DType> dtype, const std::string& device) {
  return arange(int64_t{0}, stop, int64_t{1}, dtype, device);
}

Tensor Tensor::arange(int start, int stop, int step, std::optional<DType> dtype,
                      const std::string& device) {
  return arange(int64_t{start}, int64_t{stop}, int64_t{step}, dtype, device);
}

// start + i*step for i < ceil((stop - start) / step), computed in the result dtype.
Tensor Tensor::arange(int64_t start, int64_t stop, int64_t step, std::optional<DType> dtype,
                      const std::string& device) {
  if (step == 0) throw ShapeError("arange: step must be nonzero");
  const DType dt = dtype.value_or(dtypes::int32);
  check_float_or_int(dt, "arange");
  // Counted in uint64: stop - start overflows int64 for ranges spanning most of it.
  int64_t n = 0;
  if ((step > 0 && stop > start) || (step < 0 && stop < start)) {
    const uint64_t span = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                                   : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
    const uint64_t s = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
    const uint64_t count = span / s + (span % s != 0 ? 1 : 0);
    if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw ShapeError("arange: [" + std::to_string(start) + ", " + std::to_string(stop) +
                       ") in steps of " + std::to_string(step) +
                       " has more elements than int64 can count");
    n = static_cast<int64_t>(count);
  }
  tensor::checked_numel({n}, dt, "arange");
  return counting(n, dt, device) * constant_in(step, dt, device) + constant_in(start, dt, device);
}

// NumPy's arange: n = ceil((stop - start) / step) elements, start + i*step, computed in the
// result dtype (float32 by default) and not accumulated, so errors don't grow along the range.
Tensor Tensor::arange(double start, double stop, double step, std::optional<DType> dtype,
                      const std::string& device) {
  if (step == 0.0) throw ShapeError("arange: step must be nonzero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw ShapeError("arange: start, stop and step must be finite");
  const DType dt = dtype.value_or(dtypes::float32);
  check_float_or_int(dt, "arange");
  const double count = std::ceil((stop - start) / step);
  if (count > 9.0e15) throw ShapeError("arange: too many elements");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  tensor::checked_numel({n}, dt, "arange");
  const DType math = dt.is_float() ? dt : dtypes::float32;
  return (counting(n, math, device) * constant_in(step, math, device) +
          constant_in(start, math, device))
      .cast(dt);
}

// PyTorch's symmetric form: the first half counts up from start, the second half down from
// stop, so both ends are exact. Computed in float32 (float64 when asked for).
Tensor Tensor::linspace(double start, double stop, int64_t steps, std::optional<DType> dtype,
                        const std::string& device) {
  if (steps < 0) throw ShapeError("linspace: steps must be >= 0, got " + std::to_string(steps));
  const DType dt = dtype.value_or(dtypes::float32);
  check_float_or_int(dt, "linspace");
  tensor::checked_numel({steps}, dt, "linspace");
  const DType math = dt == dtypes::float64 ? dt : dtypes::float32;
  if (steps <= 1) return full({steps}, start, math, device).cast(dt);
  const double step = (stop - start) / static_cast<double>(steps - 1);
  const Tensor i = counting(steps, math, device);
  const Tensor up = i * constant_in(step, math, device) + constant_in(start, math, device);
  const Tensor down = (constant_in(static_cast<double>(steps - 1), math, device) - i) *
                          constant_in(-step, math, device) +
                      constant_in(stop, math, device);
  return (i < constant_in(static_cast<double>(steps / 2), math, device)).where(up, down).cast(dt);
}

Tensor Tensor::eye(int64_t n, std::optional<DType> dtype, const std::string& device) {
  if (n < 0) throw ShapeError("eye: n must be >= 0, got " + std::to_string(n));
  const DType dt = dtype.value_or(dtypes::float32);
  tensor::checked_numel({n, n}, dt, "eye");
  if (n == 0) return zeros({0, 0}, dt, device);
  const Tensor i = counting(n, dtypes::int32, device);
  return (i.reshape({n, 1}) == i.reshape({1, n})).cast(dt);
}

}  // namespace vkgrad
