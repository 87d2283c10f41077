// tests/gguf: the GGUF reader and writer, and every block format. Each format's dequantization
// is checked against a reference written here from the format's definition (ggml's block
// structs and dequantize_row loops), on random blocks and on our quantizer's output; the
// quantizers round-trip within each format's error bound; a dequantized weight fuses into the
// kernel that reads it; malformed files are FormatErrors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "../tensor/harness.hpp"

namespace vkgrad::testing {
namespace {

using Bytes = std::vector<uint8_t>;

// float16 bits to a value, from IEEE 754's binary16 definition.
double half_value(const uint8_t* p) {
  const int h = p[0] | p[1] << 8;
  const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

// ---- Reference dequantizers: one block of each format, in the order ggml's loops write it. ----

void ref_q4_0(const uint8_t* b, double* y) {
  const double d = half_value(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * ((b[2 + j] & 0x0F) - 8);
    y[j + 16] = d * ((b[2 + j] >> 4) - 8);
  }
}
void ref_q4_1(const uint8_t* b, double* y) {
  const double d = half_value(b), m = half_value(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (b[4 + j] & 0x0F) + m;
    y[j + 16] = d * (b[4 + j] >> 4) + m;
  }
}
void ref_q5_0(const uint8_t* b, double* y) {
  const double d = half_value(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
    y[j] = d * (((b[6 + j] & 0x0F) | h0) - 16);
    y[j + 16] = d * (((b[6 + j] >> 4) | h1) - 16);
  }
}
void ref_q5_1(const uint8_t* b, double* y) {
  const double d = half_value(b), m = half_value(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
    y[j] = d * ((b[8 + j] & 0x0F) | h0) + m;
    y[j + 16] = d * ((b[8 + j] >> 4) | h1) + m;
  }
}
void ref_q8_0(const uint8_t* b, double* y) {
  const double d = half_value(b);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<int8_t>(b[2 + j]);
}
// block_q2_K: scales[16], qs[64], d, dmin.
void ref_q2_k(const uint8_t* b, double* y) {
  const uint8_t* q = b + 16;
  const double d = half_value(b + 80), dmin = half_value(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const int sc = b[is++];
        for (int l = 0; l < 16; ++l)
          *y++ = d * (sc & 0xF) * ((q[l + 16 * half] >> shift) & 3) - dmin * (sc >> 4);
      }
    }
    q += 32;
  }
}
// block_q3_K: hmask[32], qs[64], scales[12], d.
void ref_q3_k(const uint8_t* b, double* y) {
  const uint8_t *hm = b, *q = b + 32, *s = b + 96;
  const double d = half_value(b + 108);
  int scales[16];
  for (int k = 0; k < 16; ++k) {
    const int low = k < 8 ? s[k] & 0xF : s[k - 8] >> 4;
    const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
    scales[k] = (low | high << 4) - 32;
  }
  int is = 0, m = 1;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const double dl = d * scales[is++];
        for (int l = 16 * half; l < 16 * half + 16; ++l)
          *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      }
      m <<= 1;
    }
    q += 32;
  }
}
void scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63, *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
// block_q4_K: d, dmin, scales[12], qs[128]; block_q5_K adds qh[32] before qs.
void ref_q45_k(const uint8_t* b, double* y, bool five) {
  const double d = half_value(b), dmin = half_value(b + 2);
  const uint8_t *ql = b + (five ? 48 : 16), *qh = b + 16;
  int u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2) {
    int sc, mn;
    scale_min_k4(is, b + 4, &sc, &mn);
    for (int l = 0; l < 32; ++l)
      *y++ = d * sc * ((ql[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - dmin * mn;
    scale_min_k4(is + 1, b + 4, &sc, &mn);
    for (int l = 0; l < 32; ++l)
      *y++ = d * sc * ((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - dmin * mn;
    ql += 32, u1 <<= 2, u2 <<= 2;
  }
}
void ref_q4_k(const uint8_t* b, double* y) { ref_q45_k(b, y, false); }
void ref_q5_k(const uint8_t* b, double* y) { ref_q45_k(b, y, true); }
// block_q6_K: ql[128], qh[64], scales[16] (int8), d.
void ref_q6_k(const uint8_t* b, double* y) {
  const uint8_t *ql = b, *qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const double d = half_value(b + 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * sc[is] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
    y += 128, ql += 64, qh += 32, sc += 8;
  }
}

struct Case {
  std::string type;
  int values, bytes;
  void (*ref)(const uint8_t*, double*);
  std::vector<int> halves;  // byte offsets of the block's float16 scales
  double bound;             // round-trip error bound, in units of the block's largest |x|
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"Q4_0", 32, 18, ref_q4_0, {0}, 1.0 / 8},   {"Q4_1", 32, 20, ref_q4_1, {0, 2}, 1.0 / 15},
      {"Q5_0", 32, 22, ref_q5_0, {0}, 1.0 / 16},  {"Q5_1", 32, 24, ref_q5_1, {0, 2}, 1.0 / 31},
      {"Q8_0", 32, 34, ref_q8_0, {0}, 1.0 / 127}, {"Q2_K", 256, 84, ref_q2_k, {80, 82}, 0.5},
      {"Q3_K", 256, 110, ref_q3_k, {108}, 0.25},  {"Q4_K", 256, 144, ref_q4_k, {0, 2}, 0.1},
      {"Q5_K", 256, 176, ref_q5_k, {0, 2}, 0.05}, {"Q6_K", 256, 210, ref_q6_k, {208}, 0.03},
  };
  return c;
}

const Case& case_of(const std::string& type) {
  for (const Case& c : cases())
    if (c.type == type) return c;
  throw Error("no test case for " + type);
}

std::vector<double> ref_dequantize(const Case& c, const Bytes& b) {
  std::vector<double> y(b.size() / c.bytes * c.values);
  for (size_t i = 0; i < b.size() / c.bytes; ++i) c.ref(b.data() + i * c.bytes, &y[i * c.values]);
  return y;
}

// Random blocks: every bit random except the float16 scales, set to finite values of either sign.
Bytes random_blocks(const Case& c, int blocks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(static_cast<size_t>(blocks * c.bytes));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int i = 0; i < blocks; ++i)
    for (int at : c.halves) {
      Tensor h = Tensor::full({1}, static_cast<double>(u(rng)), dtypes::float16, "CPU");
      const uint16_t bits = h.to_vector<uint16_t>()[0];
      b[i * c.bytes + at] = static_cast<uint8_t>(bits & 0xff);
      b[i * c.bytes + at + 1] = static_cast<uint8_t>(bits >> 8);
    }
  return b;
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  std::vector<float> v;
  for (double x : random_values(n, -1.0, 1.0, seed)) v.push_back(static_cast<float>(x));
  return v;
}

class GgufTest : public DeviceTest {};

TEST_P(GgufTest, EveryFormatDequantizesAsItsDefinition) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.type);
    const int rows = 3, blocks_per_row = 2;
    const Bytes b = random_blocks(c, rows * blocks_per_row, 7);
    const Tensor raw =
        Tensor::from_vector<uint8_t>(b, {static_cast<int64_t>(b.size())}, dtypes::uint8, dev());
    const Tensor w = gguf::dequantize(raw, c.type, {rows, blocks_per_row * c.values});
    expect_values(w, {rows, blocks_per_row * c.values}, dtypes::float32, ref_dequantize(c, b), 1e-6,
                  1e-6);
  }
}

TEST_P(GgufTest, QuantizersRoundTripWithinTheirBounds) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.type);
    const std::vector<float> x = random_floats(4 * c.values, 11);
    const Bytes q = gguf::quantize(x, c.type, 2 * c.values);
    ASSERT_EQ(q.size(), static_cast<size_t>(4 * c.bytes));
    const std::vector<double> y = ref_dequantize(c, q);
    for (int blk = 0; blk < 4; ++blk) {
      double amax = 0, err = 0;
      for (int i = blk * c.values; i < (blk + 1) * c.values; ++i) {
        amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
        err = std::max(err, std::fabs(y[i] - x[i]));
      }
      EXPECT_LE(err, c.bound * amax + 1e-6) << "block " << blk;
    }
    // The device reads our quantizer's bytes as the reference does.
    const Tensor raw =
        Tensor::from_vector<uint8_t>(q, {static_cast<int64_t>(q.size())}, dtypes::uint8, dev());
    expect_values(gguf::dequantize(raw, c.type, {2, 2 * c.values}), {2, 2 * c.values},
                  dtypes::float32, y, 1e-6, 1e-6);
  }
}

TEST_P(GgufTest, ZeroBlocksQuantizeToZeros) {
  for (const Case& c : cases()) {
    const std::vector<float> x(static_cast<size_t>(c.values), 0.0f);
    for (double v : ref_dequantize(c, gguf::quantize(x, c.type, c.values)))
      EXPECT_EQ(v, 0.0) << c.type;
  }
}

TEST_P(GgufTest, ADequantizedWeightFusesIntoItsMatvec) {
  for (const std::string type : {"Q4_0", "Q8_0", "Q4_K", "Q6_K"}) {
    SCOPED_TRACE(type);
    const gguf::Format& f = gguf::format(type);
    const int64_t n = 8, k = 2 * f.block_values;
    const std::vector<float> wv = random_floats(n * k, 3);
    const Bytes q = gguf::quantize(wv, type, k);
    const Tensor raw =
        Tensor::from_vector<uint8_t>(q, {static_cast<int64_t>(q.size())}, dtypes::uint8, dev())
            .realize();
    const Tensor w = gguf::dequantize(raw, type, {n, k});
    const std::vector<float> xv = random_floats(k, 4);
    const Tensor x = Tensor::from_vector<float>(xv, {1, k}, dtypes::float32, dev()).realize();
    const Tensor y = x.matmul(w.transpose());
    const std::vector<KernelInfo> kernels = y.schedule();
    std::string names;
    for (const KernelInfo& ki : kernels) names += ki.name + " ";
    ASSERT_EQ(kernels.size(), 1u) << "the dequantization is a kernel of its own: " << names;
    std::vector<double> expected(n, 0.0);
    const std::vector<double> wd = ref_dequantize(case_of(type), q);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) expected[i] += xv[j] * wd[i * k + j];
    expect_values(y, {1, n}, dtypes::float32, expected, 1e-4, 1e-4);
  }
}

VKGRAD_ALL_DEVICES(GgufTest);

// ---- Files ----------------------------------------------------------------------------------

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("vkgrad_gguf_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::map<std::string, gguf::Value> every_value_type() {
  using gguf::Value;
  const std::vector<int32_t> ints = {1, -2, 3};
  const std::vector<float> floats = {0.5f, -1.25f};
  return {
      {"u8", Value(uint8_t{200})},
      {"i8", Value(int8_t{-100})},
      {"u16", Value(uint16_t{60000})},
      {"i16", Value(int16_t{-30000})},
      {"u32", Value(uint32_t{4000000000u})},
      {"i32", Value(int32_t{-2000000000})},
      {"f32", Value(1.5f)},
      {"bool", Value(true)},
      {"str", Value("llama")},
      {"u64", Value(uint64_t{1} << 60)},
      {"i64", Value(-(int64_t{1} << 60))},
      {"f64", Value(0.1)},
      {"strings", Value::array({"a", "", "ünï"})},
      {"ints", Value::array(std::span<const int32_t>(ints))},
      {"floats", Value::array(std::span<const float>(floats))},
  };
}

TEST(GgufFile, MetadataOfEveryTypeRoundTrips) {
  const std::string path = temp_path("meta.gguf");
  gguf::save(path, every_value_type(), {});
  const gguf::File f = gguf::open(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.at("u8").as_uint(), 200u);
  EXPECT_EQ(f.at("i8").as_int(), -100);
  EXPECT_EQ(f.at("u16").as_int(), 60000);
  EXPECT_EQ(f.at("i16").as_int(), -30000);
  EXPECT_EQ(f.at("u32").as_uint(), 4000000000u);
  EXPECT_EQ(f.at("i32").as_int(), -2000000000);
  EXPECT_EQ(f.at("f32").as_float(), 1.5);
  EXPECT_EQ(f.at("f32").type(), gguf::ValueType::float32);
  EXPECT_TRUE(f.at("bool").as_bool());
  EXPECT_EQ(f.at("str").as_string(), "llama");
  EXPECT_EQ(f.at("u64").as_uint(), uint64_t{1} << 60);
  EXPECT_EQ(f.at("i64").as_int(), -(int64_t{1} << 60));
  EXPECT_EQ(f.at("f64").as_float(), 0.1);
  EXPECT_EQ(f.at("strings").as_strings(), (std::vector<std::string>{"a", "", "ünï"}));
  EXPECT_EQ(f.at("ints").as_ints(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.at("floats").as_floats(), (std::vector<float>{0.5f, -1.25f}));
  EXPECT_EQ(f.at("strings").element_type(), gguf::ValueType::string);
  EXPECT_EQ(f.find("missing"), nullptr);
  expect_error<Error>([&] { f.at("missing"); }, {"missing"});
  expect_error<FormatError>([&] { f.at("str").as_int(); }, {"string", "integer"});
  expect_error<FormatError>([&] { f.at("i8").as_uint(); }, {"negative"});
  expect_error<FormatError>([&] { f.at("u32").as_float(); }, {"uint32", "float"});
  std::filesystem::remove(path);
}

// A small file: one tensor of each stored type, shapes of 1 to 3 dimensions.
std::vector<gguf::SaveTensor> small_tensors() {
  std::vector<gguf::SaveTensor> t;
  const char* types[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"};
  int i = 0;
  for (const char* type : types) {
    const int64_t row = gguf::format(type).block_values * 2;
    const std::vector<float> v = random_floats(3 * row, 20 + i);
    Shape shape = i % 3 == 0 ? Shape{3 * row} : i % 3 == 1 ? Shape{3, row} : Shape{3, 1, row};
    t.push_back({std::string("t.") + type, Tensor::from_vector<float>(v, shape, {}, "CPU"), type});
    ++i;
  }
  return t;
}

TEST_P(GgufTest, TensorsRoundTripThroughAFile) {
  const std::string path = temp_path("tensors_" + dev() + ".gguf");
  const std::vector<gguf::SaveTensor> saved = small_tensors();
  gguf::save(path, {{"general.architecture", gguf::Value("test")}}, saved);
  const gguf::File f = gguf::open(path);
  ASSERT_EQ(f.tensors().size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    const gguf::TensorInfo& info = f.tensors()[i];
    SCOPED_TRACE(info.name);
    EXPECT_EQ(info.name, saved[i].name);
    EXPECT_EQ(info.type, saved[i].type);
    EXPECT_EQ(info.shape, saved[i].value.shape());
    EXPECT_EQ(info.offset % f.alignment(), 0u);
    const std::vector<float> v = saved[i].value.to_vector<float>();
    const gguf::Format& fmt = gguf::format(info.type);
    const Bytes q = gguf::quantize(v, info.type, info.shape.back());
    EXPECT_TRUE(std::equal(q.begin(), q.end(), f.data(info.name).begin()));
    const Tensor t = f.tensor(info.name, dev());
    EXPECT_EQ(t.shape(), info.shape);
    std::vector<double> expected;
    if (!fmt.quantized) {
      for (float x : v) expected.push_back(round_to(x, t.dtype()));
    } else {
      expected = ref_dequantize(case_of(info.type), q);
    }
    expect_values(t.cast(dtypes::float32), info.shape, dtypes::float32, expected, 1e-6, 1e-6);
  }
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
  expect_error<Error>([&] { f.tensor("nope", dev()); }, {"nope"});
  std::filesystem::remove(path);
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST(GgufFile, MalformedFilesAreFormatErrors) {
  const std::string good = temp_path("good.gguf"), bad = temp_path("bad.gguf");
  std::vector<gguf::SaveTensor> one = {
      {"w", Tensor::from_vector<float>(random_floats(64, 1), {2, 32}, {}, "CPU"), "Q8_0"}};
  gguf::save(good, every_value_type(), one);
  const Bytes b = read_file(good);
  const gguf::File f = gguf::open(good);
  const uint64_t bytes = f.tensors()[0].bytes, align = f.alignment();
  // The file ends with the tensor's data and its padding to the alignment.
  const auto data_end = static_cast<size_t>(b.size() - (align - bytes % align) % align);
  const auto data_start = static_cast<size_t>(data_end - bytes);
  // Truncated anywhere: in the header, the metadata, the tensor table, the data.
  for (size_t cut : {size_t{0}, size_t{3}, size_t{10}, size_t{30}, b.size() / 3, b.size() / 2,
                     data_start - 1, data_start + 1, data_end - 1}) {
    write_file(bad, Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(cut)));
    expect_error<FormatError>([&] { gguf::open(bad); }, {bad});
  }
  Bytes m = b;
  m[0] = 'X';
  write_file(bad, m);
  expect_error<FormatError>([&] { gguf::open(bad); }, {"bad magic"});
  m = b;
  m[4] = 9;
  write_file(bad, m);
  expect_error<FormatError>([&] { gguf::open(bad); }, {"version 9"});
  // The tensor's type field: the 4 bytes before its offset (the table's last 12 bytes before
  // the data's alignment padding hold type and offset).
  size_t type_at = 0;
  for (size_t i = data_start - 12; i > 0; --i)
    if (b[i] == 8 && b[i + 1] == 0 && b[i + 2] == 0 && b[i + 3] == 0) {
      type_at = i;
      break;
    }
  ASSERT_GT(type_at, 0u);
  m = b;
  m[type_at] = 99;
  write_file(bad, m);
  expect_error<FormatError>([&] { gguf::open(bad); }, {"w", "unknown", "99"});
  // An offset past the end.
  m = b;
  m[type_at + 4 + 3] = 1;
  write_file(bad, m);
  expect_error<FormatError>([&] { gguf::open(bad); }, {"w"});
  expect_error<FormatError>([&] { gguf::open(temp_path("absent.gguf")); }, {"absent"});
  // A working file still opens and runs afterwards.
  const Tensor w = gguf::open(good).tensor("w", "CPU");
  EXPECT_EQ(w.shape(), (Shape{2, 32}));
  EXPECT_EQ(w.sum().to_vector<float>().size(), 1u);
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST(GgufFile, BadArgumentsAreNamedErrors) {
  expect_error<FormatError>([] { gguf::format("Q9_9"); }, {"Q9_9", "Q4_K"});
  const std::vector<float> x(48, 1.0f);
  expect_error<ShapeError>([&] { gguf::quantize(x, "Q4_0", 48); }, {"Q4_0", "48"});
  const Tensor raw = Tensor::zeros({18}, dtypes::uint8, "CPU");
  expect_error<ShapeError>([&] { gguf::dequantize(raw, "Q4_0", {2, 32}); }, {"Q4_0", "36"});
  std::vector<gguf::SaveTensor> twice = {{"a", Tensor::zeros({32}), "F32"},
                                         {"a", Tensor::zeros({32}), "F32"}};
  expect_error<Error>([&] { gguf::save(temp_path("twice.gguf"), {}, twice); }, {"a", "twice"});
  expect_error<FormatError>([] { gguf::Value::array(gguf::ValueType::int32, {gguf::Value(1.0)}); },
                            {"int32", "float64"});
}

}  // namespace
}  // namespace vkgrad::testing
