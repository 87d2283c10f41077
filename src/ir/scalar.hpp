// ir: scalar value semantics shared by constants, constant folding and the reference
// interpreter: integer wrapping per dtype, float rounding per dtype (float16, bfloat16, float32),
// and conversion of a ConstValue to a dtype. Depends on dtype and uop (for ConstValue) only.
#pragma once

#include <cstdint>
#include <vkgrad/dtype.hpp>

#include "ir/uop.hpp"

namespace vkgrad {

// Wrap v to the dtype's width (two's complement; unsigned values of uint64 keep their bits).
int64_t wrap_int(DType d, int64_t v);
// Round v to the dtype's precision (float16/bfloat16 round to nearest even via float32).
double round_float(DType d, double v);
// Convert a value to `d` as a C cast would (float→int truncates; out-of-range saturates).
ConstValue convert_value(ConstValue v, DType d);
// The same for a value known to be of dtype `from`: a uint64 above INT64_MAX (held as its bits)
// converts by its unsigned value.
ConstValue cast_value(ConstValue v, DType from, DType to);

double as_double(const ConstValue& v);
int64_t as_int(const ConstValue& v);
bool as_bool(const ConstValue& v);

uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t h);

}  // namespace vkgrad
