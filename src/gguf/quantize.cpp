// gguf: the block formats' table and the host quantizers, one function per format, writing
// llama.cpp's block layouts (ggml's block_q4_0 ... block_q6_K): little-endian float16 scales,
// 4-bit values two to a byte, high bits in their own bit planes. Each quantizer picks a block's
// scale (and minimum) from its values, stores the scale as float16 and quantizes the values
// against the stored scale, so rounding the scale costs no extra error. Depends on ir's
// float16/bfloat16 conversions and the public header.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vkgrad/error.hpp>
#include <vkgrad/gguf.hpp>

#include "gguf/formats.hpp"
#include "ir/scalar.hpp"

namespace vkgrad::gguf {

namespace {

constexpr Format kFormats[] = {
    {"F32", 0, 1, 4, false},      {"F16", 1, 1, 2, false},      {"Q4_0", 2, 32, 18, true},
    {"Q4_1", 3, 32, 20, true},    {"Q5_0", 6, 32, 22, true},    {"Q5_1", 7, 32, 24, true},
    {"Q8_0", 8, 32, 34, true},    {"Q2_K", 10, 256, 84, true},  {"Q3_K", 11, 256, 110, true},
    {"Q4_K", 12, 256, 144, true}, {"Q5_K", 13, 256, 176, true}, {"Q6_K", 14, 256, 210, true},
    {"BF16", 30, 1, 2, false},
};

// A float16 scale: written little-endian at p, and returned as the value a reader sees.
float put_half(uint8_t* p, float v) {
  const uint16_t h = float_to_half_bits(v);
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
  return half_bits_to_float(h);
}

int clamp_round(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::lround(v)), lo, hi);
}
// x / d rounded into [lo, hi]; 0 where the scale is 0 (an all-zero block).
int level(float x, float d, int lo, int hi) { return d == 0 ? 0 : clamp_round(x / d, lo, hi); }

// The value of largest magnitude, with its sign.
float signed_max(const float* x, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// Q4_0 and Q5_0: d = signed max / -2^(bits-1), values (x / d) + 2^(bits-1). Q5_0's fifth bits
// form a 32-bit mask after the scale.
void q_symmetric(const float* x, uint8_t* b, int bits) {
  const int half = 1 << (bits - 1);
  const float d = put_half(b, signed_max(x, 32) / -static_cast<float>(half));
  uint8_t* qs = b + (bits == 5 ? 6 : 2);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = level(x[j], d, -half, half - 1) + half;
    const int hi = level(x[j + 16], d, -half, half - 1) + half;
    qs[j] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
    qh |= static_cast<uint32_t>(lo >> 4) << j | static_cast<uint32_t>(hi >> 4) << (j + 16);
  }
  if (bits == 5) std::memcpy(b + 2, &qh, 4);
}

// Q4_1 and Q5_1: d = (max - min) / (2^bits - 1), m = min, values (x - m) / d.
void q_affine(const float* x, uint8_t* b, int bits) {
  const float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const int top = (1 << bits) - 1;
  const float d = put_half(b, (hi - lo) / static_cast<float>(top));
  const float m = put_half(b + 2, lo);
  uint8_t* qs = b + (bits == 5 ? 8 : 4);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int a = level(x[j] - m, d, 0, top), c = level(x[j + 16] - m, d, 0, top);
    qs[j] = static_cast<uint8_t>((a & 15) | (c & 15) << 4);
    qh |= static_cast<uint32_t>(a >> 4) << j | static_cast<uint32_t>(c >> 4) << (j + 16);
  }
  if (bits == 5) std::memcpy(b + 4, &qh, 4);
}

void q8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = put_half(b, amax / 127.0f);
  for (int j = 0; j < 32; ++j)
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(level(x[j], d, -128, 127)));
}

// A K-quant super-block's affine sub-blocks (Q2_K, Q4_K, Q5_K): each sub-block of `n` values
// gets scale (max - min) / top and minimum -min (min taken with 0, so the minimum is never
// negative); both are quantized to `sbits` bits against the super-block's float16 d and dmin.
// Writes d and dmin at `dp`, returns each value's level and each sub-block's two codes.
struct Affine {
  int q[256];
  int sc[16], mn[16];
};
Affine k_affine(const float* x, int n, int top, int sbits, uint8_t* dp) {
  const int subs = 256 / n, stop = (1 << sbits) - 1;
  float scale[16], minimum[16], smax = 0, mmax = 0;
  for (int s = 0; s < subs; ++s) {
    const float lo = std::min(0.0f, *std::min_element(x + s * n, x + s * n + n));
    const float hi = *std::max_element(x + s * n, x + s * n + n);
    scale[s] = (hi - lo) / static_cast<float>(top), minimum[s] = -lo;
    smax = std::max(smax, scale[s]), mmax = std::max(mmax, minimum[s]);
  }
  const float d = put_half(dp, smax / static_cast<float>(stop));
  const float dmin = put_half(dp + 2, mmax / static_cast<float>(stop));
  Affine a{};
  for (int s = 0; s < subs; ++s) {
    a.sc[s] = level(scale[s], d, 0, stop), a.mn[s] = level(minimum[s], dmin, 0, stop);
    const float dl = d * static_cast<float>(a.sc[s]), ml = dmin * static_cast<float>(a.mn[s]);
    for (int i = s * n; i < s * n + n; ++i) a.q[i] = level(x[i] + ml, dl, 0, top);
  }
  return a;
}

// Q4_K and Q5_K's twelve scale bytes: eight 6-bit scales and minimums, the first four of each
// in the low six bits of bytes 0-3 and 4-7, the last four split into a nibble of bytes 8-11 and
// the top two bits of bytes 0-7.
void pack_scales_k4(const Affine& a, uint8_t* p) {
  std::memset(p, 0, 12);
  for (int s = 0; s < 4; ++s) {
    p[s] = static_cast<uint8_t>(a.sc[s]), p[s + 4] = static_cast<uint8_t>(a.mn[s]);
  }
  for (int s = 4; s < 8; ++s) {
    p[s + 4] = static_cast<uint8_t>((a.sc[s] & 15) | (a.mn[s] & 15) << 4);
    p[s - 4] |= static_cast<uint8_t>((a.sc[s] >> 4) << 6);
    p[s] |= static_cast<uint8_t>((a.mn[s] >> 4) << 6);
  }
}

void q2_k(const float* x, uint8_t* b) {
  const Affine a = k_affine(x, 16, 3, 4, b + 80);
  for (int s = 0; s < 16; ++s) b[s] = static_cast<uint8_t>(a.sc[s] | a.mn[s] << 4);
  uint8_t* qs = b + 16;
  std::memset(qs, 0, 64);
  for (int i = 0; i < 256; ++i)
    qs[(i / 128) * 32 + i % 32] |= static_cast<uint8_t>(a.q[i] << (2 * ((i % 128) / 32)));
}

void q4_k(const float* x, uint8_t* b) {
  const Affine a = k_affine(x, 32, 15, 6, b);
  pack_scales_k4(a, b + 4);
  uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[c * 32 + l] = static_cast<uint8_t>(a.q[c * 64 + l] | a.q[c * 64 + 32 + l] << 4);
}

void q5_k(const float* x, uint8_t* b) {
  const Affine a = k_affine(x, 32, 31, 6, b);
  pack_scales_k4(a, b + 4);
  uint8_t *qh = b + 16, *qs = b + 48;
  std::memset(qh, 0, 32);
  for (int i = 0; i < 256; ++i) qh[i % 32] |= static_cast<uint8_t>((a.q[i] >> 4) << (i / 32));
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[c * 32 + l] =
          static_cast<uint8_t>((a.q[c * 64 + l] & 15) | (a.q[c * 64 + 32 + l] & 15) << 4);
}

// Q3_K and Q6_K's symmetric sub-blocks of 16: each sub-block's scale is its signed max over
// -2^(bits-1), quantized to a signed code against the super-block's d (the largest scale over
// the most negative code). Writes d at `dp`; returns each value's level (offset to unsigned)
// and each sub-block's code.
struct Symmetric {
  int q[256];
  int sc[16];
};
Symmetric k_symmetric(const float* x, int bits, int code_min, uint8_t* dp) {
  const int half = 1 << (bits - 1);
  float scale[16], big = 0;
  for (int s = 0; s < 16; ++s) {
    scale[s] = signed_max(x + 16 * s, 16) / -static_cast<float>(half);
    if (std::fabs(scale[s]) > std::fabs(big)) big = scale[s];
  }
  const float d = put_half(dp, big / static_cast<float>(code_min));
  Symmetric r{};
  for (int s = 0; s < 16; ++s) {
    r.sc[s] = level(scale[s], d, code_min, -code_min - 1);
    const float dl = d * static_cast<float>(r.sc[s]);
    for (int i = 16 * s; i < 16 * s + 16; ++i) r.q[i] = level(x[i], dl, -half, half - 1) + half;
  }
  return r;
}

void q3_k(const float* x, uint8_t* b) {
  const Symmetric r = k_symmetric(x, 3, -32, b + 108);
  uint8_t *hmask = b, *qs = b + 32, *scales = b + 96;
  std::memset(b, 0, 108);
  for (int i = 0; i < 256; ++i) {
    qs[(i / 128) * 32 + i % 32] |= static_cast<uint8_t>((r.q[i] & 3) << (2 * ((i % 128) / 32)));
    hmask[i % 32] |= static_cast<uint8_t>((r.q[i] >> 2) << (i / 32));
  }
  for (int k = 0; k < 16; ++k) {
    const int u = r.sc[k] + 32;
    scales[k % 8] |= static_cast<uint8_t>((u & 15) << (k < 8 ? 0 : 4));
    scales[8 + k % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (k / 4)));
  }
}

void q6_k(const float* x, uint8_t* b) {
  const Symmetric r = k_symmetric(x, 6, -128, b + 208);
  uint8_t *ql = b, *qh = b + 128;
  std::memset(b, 0, 192);
  for (int i = 0; i < 256; ++i) {
    const int n = i / 128, quarter = (i % 128) / 32, l = i % 32;
    ql[n * 64 + (quarter % 2) * 32 + l] |= static_cast<uint8_t>((r.q[i] & 15) << 4 * (quarter / 2));
    qh[n * 32 + l] |= static_cast<uint8_t>((r.q[i] >> 4) << (2 * quarter));
  }
  for (int k = 0; k < 16; ++k) b[192 + k] = static_cast<uint8_t>(static_cast<int8_t>(r.sc[k]));
}

void f32(const float* x, uint8_t* b) { std::memcpy(b, x, 4); }
void f16(const float* x, uint8_t* b) { put_half(b, *x); }
void bf16(const float* x, uint8_t* b) {
  const uint16_t h = float_to_bf16_bits(*x);
  b[0] = static_cast<uint8_t>(h & 0xff), b[1] = static_cast<uint8_t>(h >> 8);
}
void q4_0(const float* x, uint8_t* b) { q_symmetric(x, b, 4); }
void q5_0(const float* x, uint8_t* b) { q_symmetric(x, b, 5); }
void q4_1(const float* x, uint8_t* b) { q_affine(x, b, 4); }
void q5_1(const float* x, uint8_t* b) { q_affine(x, b, 5); }

// One block's quantizer, chosen once per call of quantize().
using Quantizer = void (*)(const float*, uint8_t*);
Quantizer quantizer_of(const Format& f) {
  const std::pair<std::string_view, Quantizer> table[] = {
      {"F32", f32},   {"F16", f16},   {"BF16", bf16}, {"Q4_0", q4_0}, {"Q5_0", q5_0},
      {"Q4_1", q4_1}, {"Q5_1", q5_1}, {"Q8_0", q8_0}, {"Q2_K", q2_k}, {"Q3_K", q3_k},
      {"Q4_K", q4_k}, {"Q5_K", q5_k}, {"Q6_K", q6_k},
  };
  for (const auto& [name, q] : table)
    if (name == f.name) return q;
  throw InternalError(fmt::format("gguf: no quantizer for {}", f.name));
}

}  // namespace

std::span<const Format> formats() { return kFormats; }

const Format& format(std::string_view type) {
  for (const Format& f : kFormats)
    if (f.name == type) return f;
  std::string names;
  for (const Format& f : kFormats) names += (names.empty() ? "" : ", ") + std::string(f.name);
  throw FormatError(fmt::format("gguf: unknown tensor type {} (supported: {})", type, names));
}

const Format* format_of_ggml_type(uint32_t ggml_type) {
  for (const Format& f : kFormats)
    if (f.ggml_type == ggml_type) return &f;
  return nullptr;
}

std::vector<uint8_t> quantize(std::span<const float> values, std::string_view type, int64_t row) {
  const Format& f = format(type);
  if (row <= 0 || row % f.block_values != 0 || values.size() % static_cast<size_t>(row) != 0)
    throw ShapeError(fmt::format(
        "gguf::quantize: {} values in rows of {} are not whole rows of whole {}-value {} blocks",
        values.size(), row, f.block_values, f.name));
  const size_t blocks = values.size() / static_cast<size_t>(f.block_values);
  std::vector<uint8_t> out(blocks * static_cast<size_t>(f.block_bytes));
  const Quantizer quantize_block = quantizer_of(f);
  for (size_t i = 0; i < blocks; ++i)
    quantize_block(values.data() + i * static_cast<size_t>(f.block_values),
                   out.data() + i * static_cast<size_t>(f.block_bytes));
  return out;
}

std::vector<uint8_t> tensor_bytes(const Tensor& value, const Format& f, const std::string& name) {
  const int64_t row = value.shape().back();
  if (row % f.block_values != 0)
    throw ShapeError(
        fmt::format("gguf::save: tensor {}: rows of {} are not whole {}-value "
                    "blocks of {}",
                    name, row, f.block_values, f.name));
  const std::vector<float> v = value.cast(dtypes::float32).to_vector<float>();
  return quantize(v, f.name, row);
}

}  // namespace vkgrad::gguf
