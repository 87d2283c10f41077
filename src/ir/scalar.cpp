// Scalar value semantics: wrapping, rounding and conversions per dtype.
#include "ir/scalar.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace vkgrad {

int64_t wrap_int(DType d, int64_t v) {
  switch (d.scalar_type()) {
    case ScalarType::bool_:
      return v != 0;
    case ScalarType::int8:
      return static_cast<int8_t>(v);
    case ScalarType::uint8:
      return static_cast<uint8_t>(v);
    case ScalarType::int16:
      return static_cast<int16_t>(v);
    case ScalarType::uint16:
      return static_cast<uint16_t>(v);
    case ScalarType::int32:
      return static_cast<int32_t>(v);
    case ScalarType::uint32:
      return static_cast<uint32_t>(v);
    default:
      return v;
  }
}

uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u)  // Inf or NaN (keep NaN quiet)
    return static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (mag < 0x38800000u) {                                               // subnormal or zero
    if (mag < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(mag >> 23);  // half subnormals count in units of 2^-24
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((mag - 0x38000000u) >> 13);
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

float bf16_bits_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

namespace {

// A double rounded to float "to odd": when bits are dropped, the float's last bit is set. A
// second rounding to a type at least two bits narrower (float16, bfloat16) then gives what one
// rounding of the double would have; plain rounding to float first can land on a tie instead.
float to_float_round_odd(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

// The integer -m (negative) or m rounded once to a float dtype, as a C cast of the integer would.
double integer_to_float(DType d, uint64_t m, bool negative) {
  double r;
  switch (d.scalar_type()) {
    case ScalarType::float64:
      r = static_cast<double>(m);
      break;
    case ScalarType::float32:
      r = static_cast<float>(m);
      break;
    default: {
      // Keep 24 significant bits with a sticky last bit (exact in float), then round once.
      int shift = std::max(0, static_cast<int>(std::bit_width(m)) - 24);
      uint64_t kept = m >> shift;
      if (shift > 0 && (m & ((uint64_t{1} << shift) - 1))) kept |= 1;
      r = round_float(d, std::ldexp(static_cast<double>(kept), shift));
    }
  }
  return negative ? -r : r;
}

}  // namespace

double round_float(DType d, double v) {
  switch (d.scalar_type()) {
    case ScalarType::float32:
      return static_cast<float>(v);
    case ScalarType::float16:
      return half_bits_to_float(float_to_half_bits(to_float_round_odd(v)));
    case ScalarType::bfloat16:
      return bf16_bits_to_float(float_to_bf16_bits(to_float_round_odd(v)));
    default:
      return v;
  }
}

double as_double(const ConstValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

bool as_bool(const ConstValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* i = std::get_if<int64_t>(&v)) return *i != 0;
  return std::get<double>(v) != 0.0;
}

int64_t as_int(const ConstValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  double d = std::trunc(std::get<double>(v));
  if (std::isnan(d)) return 0;
  if (d >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (d <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

ConstValue convert_value(ConstValue v, DType d) {
  if (d.is_bool()) return as_bool(v);
  if (d.is_float()) {
    // An int64 beyond 2^53 would be rounded twice on its way through double.
    if (auto* i = std::get_if<int64_t>(&v))
      return integer_to_float(d, *i < 0 ? 0 - static_cast<uint64_t>(*i) : *i, *i < 0);
    return round_float(d, as_double(v));
  }
  if (d.scalar_type() == ScalarType::uint64 && std::holds_alternative<double>(v)) {
    double x = std::trunc(std::get<double>(v));
    if (!(x > 0)) return int64_t{0};
    if (x >= 1.8446744073709552e19) return int64_t{-1};
    return static_cast<int64_t>(static_cast<uint64_t>(x));
  }
  if (std::holds_alternative<double>(v)) {
    // Saturate to the target range, as a C cast does for in-range values.
    double x = std::trunc(std::get<double>(v));
    if (std::isnan(x)) return int64_t{0};
    x = std::fmax(static_cast<double>(dtypes::min_int(d)),
                  std::fmin(static_cast<double>(dtypes::max_int(d)), x));
    return wrap_int(d, as_int(ConstValue{x}));
  }
  return wrap_int(d, as_int(v));
}

ConstValue cast_value(ConstValue v, DType from, DType to) {
  // A uint64 above INT64_MAX is held as its bits, i.e. as a negative int64.
  if (from.scalar_type() == ScalarType::uint64 && to.is_float())
    if (auto* i = std::get_if<int64_t>(&v))
      return integer_to_float(to, static_cast<uint64_t>(*i), false);
  return convert_value(v, to);
}

}  // namespace vkgrad
