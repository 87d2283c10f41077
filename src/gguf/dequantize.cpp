// gguf: each block format's dequantization, written once as a lazy Tensor expression over the
// blocks' bytes (slices, shifts, masks, a float16 bitcast per scale), so the scheduler fuses it
// into the kernel that reads the weight and no full-precision copy is stored. A block's fields
// are slices of a {blocks, block_bytes} view; packed fields are spread by unpack(), which puts
// each byte's 8 / width fields on a new axis. Depends on tensor and the public header.
#include <fmt/format.h>

#include <vkgrad/error.hpp>
#include <vkgrad/gguf.hpp>

#include "gguf/formats.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::gguf {

namespace {

// The {blocks, block_bytes} bytes of one format, read as int32 fields.
struct Blocks {
  Tensor bytes;  // uint8 {blocks, block_bytes}
  int64_t n;     // blocks

  // Bytes [at, at + count) of every block: int32 {n, count}.
  Tensor u8(int64_t at, int64_t count) const {
    return bytes.shrink({{0, n}, {at, at + count}}).cast(dtypes::int32);
  }
  // The same bytes as signed: int32 {n, count}.
  Tensor i8(int64_t at, int64_t count) const {
    return bytes.shrink({{0, n}, {at, at + count}}).bitcast(dtypes::int8).cast(dtypes::int32);
  }
  // The little-endian float16 at byte `at`: float32 {n, 1}.
  Tensor half(int64_t at) const {
    const Tensor h = u8(at, 1) | (u8(at + 1, 1) << 8);
    return h.cast(dtypes::uint16).bitcast(dtypes::float16).cast(dtypes::float32);
  }
};

// Each byte of `t` (int32 values 0..255) as its 8 / width fields of `width` bits, lowest first,
// on a new axis inserted at `axis`.
Tensor unpack(const Tensor& t, int width, int axis) {
  const int64_t fields = 8 / width;
  Shape s = t.shape();
  Shape shifts_shape(s.size() + 1, 1);
  const int a = axis < 0 ? axis + static_cast<int>(s.size()) + 1 : axis;
  shifts_shape[static_cast<size_t>(a)] = fields;
  s.insert(s.begin() + a, fields);
  const Tensor shifts = (Tensor::arange(0, static_cast<int>(fields)) * width).reshape(shifts_shape);
  return (t.unsqueeze(a).expand(s) >> shifts) & ((1 << width) - 1);
}

// One scale per `per` consecutive values: {n, k} spread to {n, k * per}.
Tensor spread(const Tensor& t, int64_t per) {
  const Shape s = t.shape();
  return t.unsqueeze(2).expand({s[0], s[1], per}).reshape({s[0], s[1] * per});
}

Tensor f32(const Tensor& t) { return t.cast(dtypes::float32); }

// Q4_0 / Q5_0: (q - 2^(bits-1)) * d, low nibbles for values 0-15 and high nibbles for 16-31,
// Q5_0's fifth bits from a 32-bit mask (bit j for value j).
Tensor q_symmetric(const Blocks& b, int bits) {
  const int64_t qs_at = bits == 5 ? 6 : 2;
  Tensor q = unpack(b.u8(qs_at, 16), 4, 1).reshape({b.n, 32});
  if (bits == 5) q = q | (unpack(b.u8(2, 4), 1, 2).reshape({b.n, 32}) << 4);
  return f32(q - (1 << (bits - 1))) * b.half(0);
}

// Q4_1 / Q5_1: q * d + m.
Tensor q_affine(const Blocks& b, int bits) {
  const int64_t qs_at = bits == 5 ? 8 : 4;
  Tensor q = unpack(b.u8(qs_at, 16), 4, 1).reshape({b.n, 32});
  if (bits == 5) q = q | (unpack(b.u8(4, 4), 1, 2).reshape({b.n, 32}) << 4);
  return f32(q) * b.half(0) + b.half(2);
}

Tensor q8_0(const Blocks& b) { return f32(b.i8(2, 32)) * b.half(0); }

// Q2_K: 16 sub-blocks of 16; scales byte s holds sub-block s's scale (low nibble) and minimum
// (high nibble); value i's two bits are in byte (i / 128) * 32 + i % 32 at shift 2 * (i % 128 /
// 32).
Tensor q2_k(const Blocks& b) {
  const Tensor scales = b.u8(0, 16);
  const Tensor q = unpack(b.u8(16, 64).reshape({b.n, 2, 32}), 2, 2).reshape({b.n, 256});
  const Tensor dl = b.half(80) * f32(spread(scales & 15, 16));
  const Tensor ml = b.half(82) * f32(spread(scales >> 4, 16));
  return dl * f32(q) - ml;
}

// Q3_K: value i's low two bits as Q2_K's, its third bit in hmask byte i % 32 at bit i / 32;
// the level is (low | third << 2) - 4. The 16 signed 6-bit scales: low nibbles in bytes 0-7
// (sub-blocks 0-7 low, 8-15 high), top two bits in bytes 8-11 (byte 8 + k % 4 at 2 * (k / 4)).
Tensor q3_k(const Blocks& b) {
  const Tensor low = unpack(b.u8(32, 64).reshape({b.n, 2, 32}), 2, 2).reshape({b.n, 256});
  const Tensor third = unpack(b.u8(0, 32), 1, 1).reshape({b.n, 256});
  const Tensor sc_low = unpack(b.u8(96, 8), 4, 1).reshape({b.n, 16});
  const Tensor sc_high = unpack(b.u8(104, 4), 2, 1).reshape({b.n, 16});
  const Tensor scales = (sc_low | (sc_high << 4)) - 32;
  return b.half(108) * f32(spread(scales, 16)) * f32((low | (third << 2)) - 4);
}

// Q4_K / Q5_K's eight 6-bit scales and minimums (see pack_scales_k4 in quantize.cpp): {n, 8}.
std::pair<Tensor, Tensor> scales_k4(const Blocks& b) {
  const Tensor a = b.u8(4, 4), m = b.u8(8, 4), c = b.u8(12, 4);
  const Tensor sc = cat({a & 63, (c & 15) | ((a >> 6) << 4)}, 1);
  const Tensor mn = cat({m & 63, (c >> 4) | ((m >> 6) << 4)}, 1);
  return {sc, mn};
}

// Q4_K / Q5_K: 8 sub-blocks of 32, d * sc * q - dmin * m; value i's nibble in byte
// (i / 64) * 32 + i % 32 (high nibble for odd sub-blocks), Q5_K's fifth bit in qh byte i % 32
// at bit i / 32.
Tensor q_k_affine(const Blocks& b, int bits) {
  const int64_t qs_at = bits == 5 ? 48 : 16;
  Tensor q = unpack(b.u8(qs_at, 128).reshape({b.n, 4, 32}), 4, 2).reshape({b.n, 256});
  if (bits == 5) q = q | (unpack(b.u8(16, 32), 1, 1).reshape({b.n, 256}) << 4);
  const auto [sc, mn] = scales_k4(b);
  return b.half(0) * f32(spread(sc, 32)) * f32(q) - b.half(2) * f32(spread(mn, 32));
}

// Q6_K: value i = n * 128 + quarter * 32 + l has its low nibble in ql byte
// n * 64 + (quarter % 2) * 32 + l (high nibble for quarters 2, 3) and its top two bits in qh
// byte n * 32 + l at 2 * quarter; the level is q - 32, scaled by the signed byte 192 + i / 16.
Tensor q6_k(const Blocks& b) {
  const Tensor low = unpack(b.u8(0, 128).reshape({b.n, 2, 2, 32}), 4, 2).reshape({b.n, 256});
  const Tensor high = unpack(b.u8(128, 64).reshape({b.n, 2, 32}), 2, 2).reshape({b.n, 256});
  const Tensor q = (low | (high << 4)) - 32;
  return b.half(208) * f32(spread(b.i8(192, 16), 16)) * f32(q);
}

Tensor dequantize_blocks(const Blocks& b, std::string_view n) {
  if (n == "Q4_0") return q_symmetric(b, 4);
  if (n == "Q5_0") return q_symmetric(b, 5);
  if (n == "Q4_1") return q_affine(b, 4);
  if (n == "Q5_1") return q_affine(b, 5);
  if (n == "Q8_0") return q8_0(b);
  if (n == "Q2_K") return q2_k(b);
  if (n == "Q3_K") return q3_k(b);
  if (n == "Q4_K") return q_k_affine(b, 4);
  if (n == "Q5_K") return q_k_affine(b, 5);
  if (n == "Q6_K") return q6_k(b);
  throw InternalError(fmt::format("gguf: no dequantization for {}", n));
}

// The dtype a float format's values are stored in.
DType float_dtype(const Format& f) {
  return f.name == "F32" ? dtypes::float32 : f.name == "F16" ? dtypes::float16 : dtypes::bfloat16;
}

}  // namespace

Tensor dequantize(const Tensor& blocks, std::string_view type, const Shape& shape) {
  const Format& f = format(type);
  int64_t values = 1;
  for (int64_t d : shape) values *= d;
  const int64_t n = values / f.block_values;
  if (shape.empty() || shape.back() % f.block_values != 0 || blocks.ndim() != 1 ||
      blocks.dtype() != dtypes::uint8 || blocks.numel() != n * f.block_bytes)
    throw ShapeError(fmt::format(
        "gguf::dequantize: {} values of shape {} in {} ({}-value blocks of {} bytes) need a "
        "uint8 tensor of {} bytes with whole blocks per row, not {} {}",
        values, tensor::shape_str(shape), f.name, f.block_values, f.block_bytes, n * f.block_bytes,
        blocks.dtype().name(), tensor::shape_str(blocks.shape())));
  if (!f.quantized) {
    const Tensor v = blocks.reshape({values, f.block_bytes});
    Tensor word = v.shrink({{0, values}, {0, 1}}).cast(dtypes::int32);
    for (int64_t i = 1; i < f.block_bytes; ++i)
      word = word | (v.shrink({{0, values}, {i, i + 1}}).cast(dtypes::int32) << (8 * i));
    const DType bits = f.block_bytes == 4 ? dtypes::int32 : dtypes::uint16;
    return word.cast(bits).bitcast(float_dtype(f)).cast(dtypes::float32).reshape(shape);
  }
  const Blocks b{blocks.reshape({n, f.block_bytes}), n};
  return dequantize_blocks(b, f.name).reshape(shape);
}

Tensor tensor_from_bytes(std::span<const uint8_t> bytes, const Format& f, const Shape& shape,
                         const std::string& device) {
  if (f.quantized)
    return dequantize(
        Tensor::from_bytes(bytes.data(), bytes.size(), {static_cast<int64_t>(bytes.size())},
                           dtypes::uint8, device),
        f.name, shape);
  return Tensor::from_bytes(bytes.data(), bytes.size(), shape, float_dtype(f), device);
}

}  // namespace vkgrad::gguf
