// tensor: random numbers from a counter-based generator, Threefry-2x32 with 20 rounds
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011; Random123's
// threefry2x32_20, also JAX's), written with uint32 tensor ops so that every device computes
// the same bits.
//
// The exact construction (tests/tensor/test_creation.cpp recomputes it on the host):
//   key      (k0, k1) = (seed & 0xffffffff, seed >> 32)
//   counter  (j, c)   for element j (row-major, j < 2^32) of the c-th random call since the last
//                     manual_seed (c counts from 0; the default seed is 0, so a fresh process
//                     repeats too). Each rand / randn / randint / uniform call that draws at
//                     least one number takes one c.
//   (y0, y1) = threefry2x32_20(key, counter):
//     ks = (k0, k1, 0x1BD11BDA ^ k0 ^ k1); x0 = j + ks[0]; x1 = c + ks[1];
//     round r = 0..19: x0 += x1; x1 = rotl(x1, R[r % 8]) ^ x0, R = 13 15 26 6 17 29 16 24;
//     after round r with r % 4 == 3, s = r / 4 + 1: x0 += ks[s % 3]; x1 += ks[(s + 1) % 3] + s.
//   rand     float32: (y0 >> 8) * 2^-24; float16: (y0 >> 21) * 2^-11; bfloat16: (y0 >> 24) * 2^-8
//            (exact in each dtype, in [0, 1)); float64: (y0 * 2^21 + (y1 >> 11)) * 2^-53.
//   randn    Box-Muller in float32: sqrt(-2 ln u1) * cos(2 pi u2) with u1 = ((y0 >> 8) + 1) * 2^-24
//            in (0, 1] and u2 = (y1 >> 8) * 2^-24, then cast to the dtype.
//   randint  low + (y0 mod (high - low)) when high - low <= 2^32 (bias below (high-low) / 2^32),
//            else low + (((y0 << 32) | y1) mod (high - low)) in uint64.
//   uniform  low + rand * (high - low), in the dtype (float32 then cast for integer dtypes).
// The key and counter c reach the kernel as a 3-word uint32 buffer, not as constants, so every
// call and every seed reuses one compiled kernel per shape.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include <vkgrad/tensor.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct RngState {
  std::mutex mu;
  uint64_t seed = 0;
  uint32_t calls = 0;
};
RngState& rng_state() {
  static RngState state;
  return state;
}

// (k0, k1, c) for the next call.
std::array<uint32_t, 3> next_key() {
  RngState& s = rng_state();
  std::lock_guard lock(s.mu);
  return {static_cast<uint32_t>(s.seed), static_cast<uint32_t>(s.seed >> 32), s.calls++};
}

int64_t draw_count(const Shape& shape, DType dtype, const char* op) {
  const int64_t n = tensor::checked_numel(shape, dtype, op);
  if (n > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    throw ShapeError(std::string(op) + ": shape " + tensor::shape_str(shape) +
                     " has more than 2^32 - 1 elements, the most one random call can draw");
  return n;
}

Tensor rotl(const Tensor& x, int r) { return (x << r) | (x >> (32 - r)); }

// Element j of a (0-d) uint32 buffer tensor of 3 words.
Tensor word(const Tensor& key, int64_t j) { return key.shrink({{j, j + 1}}).reshape({}); }

// Threefry-2x32-20 of the counters (j, c), j = 0..n-1, under the call's key: (y0, y1), each (n,).
std::pair<Tensor, Tensor> random_words(int64_t n, const std::string& device) {
  const std::array<uint32_t, 3> k = next_key();
  const Tensor key = Tensor::from_vector<uint32_t>(std::vector<uint32_t>(k.begin(), k.end()), {3},
                                                   dtypes::uint32, device);
  const Tensor k0 = word(key, 0), k1 = word(key, 1), c = word(key, 2);
  const Tensor ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDA};
  const DType index = n - 1 > std::numeric_limits<int32_t>::max() ? dtypes::int64 : dtypes::int32;
  Tensor x0 = tensor::iota(n, index, device).cast(dtypes::uint32) + ks[0];
  Tensor x1 = tensor::broadcast_to(c + ks[1], {n}, "rand");
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  for (int r = 0; r < 20; ++r) {
    x0 = x0 + x1;
    x1 = rotl(x1, kRotations[r % 8]) ^ x0;
    if (r % 4 == 3) {
      const int s = r / 4 + 1;
      x0 = x0 + ks[s % 3];
      x1 = x1 + (ks[(s + 1) % 3] + s);
    }
  }
  return {x0, x1};
}

DType float_dtype(std::optional<DType> dtype, const char* op) {
  const DType dt = dtype.value_or(dtypes::float32);
  if (!dt.is_float())
    throw DTypeError(std::string(op) + ": dtype must be a float type, got " + dt.name());
  return dt;
}

// Uniform [0, 1) in `dt` from the words (see the top of the file).
Tensor unit_interval(const Tensor& y0, const Tensor& y1, DType dt) {
  if (dt == dtypes::float64)
    return (y0.cast(dtypes::float64) * 0x1p21 + (y1 >> 11).cast(dtypes::float64)) * 0x1p-53;
  const int bits = dt == dtypes::float16 ? 11 : dt == dtypes::bfloat16 ? 8 : 24;
  return ((y0 >> (32 - bits)).cast(dtypes::float32) * std::ldexp(1.0, -bits)).cast(dt);
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) {
  RngState& s = rng_state();
  std::lock_guard lock(s.mu);
  s.seed = seed;
  s.calls = 0;
}

Tensor Tensor::rand(Shape shape, std::optional<DType> dtype, const std::string& device) {
  const DType dt = float_dtype(dtype, "rand");
  const std::string dev = tensor::resolve_device(device);
  const int64_t n = draw_count(shape, dt, "rand");
  if (n == 0) return zeros(std::move(shape), dt, dev);
  const auto [y0, y1] = random_words(n, dev);
  return unit_interval(y0, y1, dt).reshape(std::move(shape));
}

Tensor Tensor::randn(Shape shape, std::optional<DType> dtype, const std::string& device) {
  const DType dt = float_dtype(dtype, "randn");
  const std::string dev = tensor::resolve_device(device);
  const int64_t n = draw_count(shape, dt, "randn");
  if (n == 0) return zeros(std::move(shape), dt, dev);
  const auto [y0, y1] = random_words(n, dev);
  const Tensor u1 = ((y0 >> 8) + 1).cast(dtypes::float32) * 0x1p-24;
  const Tensor u2 = (y1 >> 8).cast(dtypes::float32) * 0x1p-24;
  const Tensor z = (-2.0 * u1.log()).sqrt() * (u2 * (2 * kPi)).cos();
  return z.cast(dt).reshape(std::move(shape));
}

Tensor Tensor::randint(Shape shape, int64_t low, int64_t high, std::optional<DType> dtype,
                       const std::string& device) {
  const DType dt = dtype.value_or(dtypes::int32);
  if (!dt.is_int() || dt == dtypes::index)
    throw DTypeError("randint: dtype must be an integer type, got " + dt.name());
  if (high <= low)
    throw ShapeError("randint: empty range [" + std::to_string(low) + ", " + std::to_string(high) +
                     ")");
  if (low < dtypes::min_int(dt) || high - 1 > dtypes::max_int(dt))
    throw DTypeError("randint: range [" + std::to_string(low) + ", " + std::to_string(high) +
                     ") does not fit " + dt.name());
  const std::string dev = tensor::resolve_device(device);
  const int64_t n = draw_count(shape, dt, "randint");
  if (n == 0) return zeros(std::move(shape), dt, dev);
  const auto [y0, y1] = random_words(n, dev);
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  Tensor v;
  if (range == (uint64_t{1} << 32)) {
    v = y0;
  } else if (range < (uint64_t{1} << 32)) {
    const Tensor r = tensor::constant(static_cast<int64_t>(range), dtypes::uint32, {n}, dev);
    v = tensor::alu(Ops::MOD, y0, r, dtypes::uint32);
  } else {
    const Tensor w = (y0.cast(dtypes::uint64) << 32) | y1.cast(dtypes::uint64);
    // The range's bits as an int64 constant; the uint64 constant wraps it back.
    const Tensor r = tensor::constant(static_cast<int64_t>(range), dtypes::uint64, {n}, dev);
    v = tensor::alu(Ops::MOD, w, r, dtypes::uint64);
  }
  // Wrapping addition in the result dtype gives low + v exactly, since it fits.
  return (v.cast(dt) + tensor::constant(low, dt, {}, dev)).reshape(std::move(shape));
}

Tensor Tensor::uniform(Shape shape, double low, double high, std::optional<DType> dtype,
                       const std::string& device) {
  const DType dt = dtype.value_or(dtypes::float32);
  if (dt.is_bool() || dt == dtypes::index || dt.is_void())
    throw DTypeError("uniform: dtype must be a number type, got " + dt.name());
  const DType math = dt.is_float() ? dt : dtypes::float32;
  const std::string dev = tensor::resolve_device(device);
  const Tensor scale = tensor::constant(high - low, math, {}, dev);
  return (rand(std::move(shape), math, dev) * scale + tensor::constant(low, math, {}, dev))
      .cast(dt);
}

}  // namespace vkgrad
