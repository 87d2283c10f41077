// tests/tensor: the harness's helpers (see harness.hpp).
#include "harness.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace vkgrad::testing {
namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint16_t float_to_half_bits(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
double half_bits_to_double(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<double>(h);
}
uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
double bf16_bits_to_double(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <class T>
Tensor typed(const std::vector<double>& v, const Shape& shape, DType dt, const std::string& dev) {
  std::vector<T> data(v.size());
  for (size_t i = 0; i < v.size(); ++i) data[i] = static_cast<T>(v[i]);
  return Tensor::from_vector<T>(data, shape, dt, dev);
}

template <class T>
std::vector<double> untyped(const Tensor& t) {
  std::vector<T> data = t.to_vector<T>();
  return std::vector<double>(data.begin(), data.end());
}

}  // namespace

std::vector<std::string> test_devices() {
  if (const char* env = std::getenv("VKGRAD_TEST_DEVICES"); env && *env) {
    std::vector<std::string> out;
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(item);
    return out;
  }
  return devices();
}

std::vector<double> random_values(int64_t n, double lo, double hi, uint64_t seed) {
  std::vector<double> out(static_cast<size_t>(n));
  uint64_t s = seed;
  for (auto& x : out) x = lo + (hi - lo) * static_cast<double>(splitmix(s) >> 11) * 0x1.0p-53;
  return out;
}

std::vector<double> random_ints(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::vector<double> out(static_cast<size_t>(n));
  uint64_t s = seed;
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  for (auto& x : out) x = static_cast<double>(lo + static_cast<int64_t>(splitmix(s) % span));
  return out;
}

double round_to(double v, DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::bool_:
      return v != 0 ? 1 : 0;
    case ScalarType::int8:
      return static_cast<int8_t>(static_cast<int64_t>(v));
    case ScalarType::uint8:
      return static_cast<uint8_t>(static_cast<int64_t>(v));
    case ScalarType::int16:
      return static_cast<int16_t>(static_cast<int64_t>(v));
    case ScalarType::uint16:
      return static_cast<uint16_t>(static_cast<int64_t>(v));
    case ScalarType::int32:
      return static_cast<int32_t>(static_cast<int64_t>(v));
    case ScalarType::uint32:
      return static_cast<uint32_t>(static_cast<int64_t>(v));
    case ScalarType::int64:
      return static_cast<double>(static_cast<int64_t>(v));
    case ScalarType::uint64:
      return static_cast<double>(static_cast<uint64_t>(v));
    case ScalarType::float16:
      return half_bits_to_double(float_to_half_bits(static_cast<float>(v)));
    case ScalarType::bfloat16:
      return bf16_bits_to_double(float_to_bf16_bits(static_cast<float>(v)));
    case ScalarType::float32:
      return static_cast<float>(v);
    default:
      return v;
  }
}

Tensor random_tensor(const Shape& shape, uint64_t seed, const std::string& device) {
  return make_tensor(random_values(numel_of(shape), -1, 1, seed), shape, dtypes::float32, device);
}

Tensor make_tensor(const std::vector<double>& v, const Shape& shape, DType dt,
                   const std::string& dev) {
  switch (dt.scalar_type()) {
    case ScalarType::bool_: {
      std::vector<bool> data(v.size());
      for (size_t i = 0; i < v.size(); ++i) data[i] = v[i] != 0;
      return Tensor::from_vector<bool>(data, shape, dt, dev);
    }
    case ScalarType::int8:
      return typed<int8_t>(v, shape, dt, dev);
    case ScalarType::uint8:
      return typed<uint8_t>(v, shape, dt, dev);
    case ScalarType::int16:
      return typed<int16_t>(v, shape, dt, dev);
    case ScalarType::uint16:
      return typed<uint16_t>(v, shape, dt, dev);
    case ScalarType::int32:
      return typed<int32_t>(v, shape, dt, dev);
    case ScalarType::uint32:
      return typed<uint32_t>(v, shape, dt, dev);
    case ScalarType::int64:
      return typed<int64_t>(v, shape, dt, dev);
    case ScalarType::uint64:
      return typed<uint64_t>(v, shape, dt, dev);
    case ScalarType::float16:
    case ScalarType::bfloat16: {
      std::vector<uint16_t> bits(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        bits[i] = dt == dtypes::float16 ? float_to_half_bits(static_cast<float>(v[i]))
                                        : float_to_bf16_bits(static_cast<float>(v[i]));
      return Tensor::from_vector<uint16_t>(bits, shape, dt, dev);
    }
    case ScalarType::float32:
      return typed<float>(v, shape, dt, dev);
    case ScalarType::float64:
      return typed<double>(v, shape, dt, dev);
    default:
      throw Error("make_tensor: unsupported dtype " + dt.name());
  }
}

std::vector<double> values_of(const Tensor& t) {
  const DType dt = t.dtype();
  switch (dt.scalar_type()) {
    case ScalarType::bool_: {
      std::vector<bool> b = t.to_vector<bool>();
      return std::vector<double>(b.begin(), b.end());
    }
    case ScalarType::int8:
      return untyped<int8_t>(t);
    case ScalarType::uint8:
      return untyped<uint8_t>(t);
    case ScalarType::int16:
      return untyped<int16_t>(t);
    case ScalarType::uint16:
      return untyped<uint16_t>(t);
    case ScalarType::int32:
      return untyped<int32_t>(t);
    case ScalarType::uint32:
      return untyped<uint32_t>(t);
    case ScalarType::int64:
      return untyped<int64_t>(t);
    case ScalarType::uint64:
      return untyped<uint64_t>(t);
    case ScalarType::float16:
    case ScalarType::bfloat16: {
      std::vector<uint16_t> bits = t.to_vector<uint16_t>();
      std::vector<double> out(bits.size());
      for (size_t i = 0; i < bits.size(); ++i)
        out[i] =
            dt == dtypes::float16 ? half_bits_to_double(bits[i]) : bf16_bits_to_double(bits[i]);
      return out;
    }
    case ScalarType::float32:
      return untyped<float>(t);
    case ScalarType::float64:
      return untyped<double>(t);
    default:
      throw Error("values_of: unsupported dtype " + dt.name());
  }
}

double default_rtol(DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::float16:
      return 2e-3;
    case ScalarType::bfloat16:
      return 1.6e-2;
    case ScalarType::float32:
      return 2e-6;
    case ScalarType::float64:
      return 1e-12;
    default:
      return 0.0;
  }
}

void expect_values(const Tensor& t, const Shape& shape, DType dtype,
                   const std::vector<double>& expected, double rtol, double atol) {
  ASSERT_EQ(t.shape(), shape) << "shape";
  ASSERT_EQ(t.dtype(), dtype) << "dtype " << t.dtype().name() << " vs " << dtype.name();
  ASSERT_EQ(static_cast<size_t>(numel_of(shape)), expected.size()) << "test's expected size";
  const std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!value_matches(got[i], expected[i], rtol, atol) && reported++ < 8)
      ADD_FAILURE() << "at flat index " << i << ": got " << got[i] << ", expected " << expected[i]
                    << " (rtol " << rtol << ", atol " << atol << ", dtype " << dtype.name() << ")";
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> unflatten_index(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return idx;
}

bool value_matches(double g, double e, double rtol, double atol) {
  if (std::isnan(e)) return std::isnan(g);
  if (std::isinf(e)) return g == e;
  return std::fabs(g - e) <= atol + rtol * std::fabs(e);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& expected, double rtol,
                 double atol, const std::string& what, int max_reports) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!value_matches(got[i], expected[i], rtol, atol) && reported++ < max_reports)
      ADD_FAILURE() << what << ": at flat index " << i << " got " << got[i] << ", expected "
                    << expected[i] << " (rtol " << rtol << ", atol " << atol << ")";
}

double value_from_bits(uint64_t bits, DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::bool_:
      return bits != 0 ? 1 : 0;
    case ScalarType::int8:
      return static_cast<int8_t>(bits);
    case ScalarType::uint8:
      return static_cast<uint8_t>(bits);
    case ScalarType::int16:
      return static_cast<int16_t>(bits);
    case ScalarType::uint16:
      return static_cast<uint16_t>(bits);
    case ScalarType::int32:
      return static_cast<int32_t>(bits);
    case ScalarType::uint32:
      return static_cast<uint32_t>(bits);
    case ScalarType::int64:
      return static_cast<double>(static_cast<int64_t>(bits));
    case ScalarType::uint64:
      return static_cast<double>(bits);
    case ScalarType::float16:
      return half_bits_to_double(static_cast<uint16_t>(bits));
    case ScalarType::bfloat16:
      return bf16_bits_to_double(static_cast<uint16_t>(bits));
    case ScalarType::float32: {
      const auto u = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case ScalarType::float64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    default:
      throw Error("value_from_bits: unsupported dtype " + dt.name());
  }
}

namespace {
// The unsigned integer dtype of `dt`'s size (bool stays bool: it is or-ed, not added).
DType bits_dtype(DType dt) {
  if (dt.is_bool()) return dt;
  switch (dt.itemsize()) {
    case 1:
      return dtypes::uint8;
    case 2:
      return dtypes::uint16;
    case 4:
      return dtypes::uint32;
    default:
      return dtypes::uint64;
  }
}

// A realized tensor's elements as raw bits, one uint64 each.
std::vector<uint64_t> raw_bits(const Tensor& t) {
  auto widen = [](const auto& v) { return std::vector<uint64_t>(v.begin(), v.end()); };
  switch (t.dtype().scalar_type()) {
    case ScalarType::bool_:
      return widen(t.to_vector<bool>());
    case ScalarType::uint8:
      return widen(t.to_vector<uint8_t>());
    case ScalarType::uint16:
      return widen(t.to_vector<uint16_t>());
    case ScalarType::uint32:
      return widen(t.to_vector<uint32_t>());
    default:
      return t.to_vector<uint64_t>();
  }
}
}  // namespace

Batch::~Batch() {
  if (!items_.empty()) ADD_FAILURE() << "Batch: " << items_.size() << " results never checked";
}

void Batch::add(const Tensor& t, const Shape& shape, DType dtype, std::vector<double> expected,
                double rtol, double atol, std::source_location loc) {
  const std::string label =
      "line " + std::to_string(loc.line()) + (context.empty() ? "" : " (" + context + ")");
  EXPECT_EQ(t.shape(), shape) << label << ": shape";
  EXPECT_EQ(t.dtype().name(), dtype.name()) << label << ": dtype";
  const int64_t n = numel_of(shape);
  EXPECT_EQ(static_cast<size_t>(n), expected.size()) << label << ": the test's expected size";
  if (t.shape() != shape || static_cast<size_t>(n) != expected.size() || n == 0) return;
  items_.push_back({label, t.reshape({n}).bitcast(bits_dtype(t.dtype())), t.dtype(),
                    std::move(expected), rtol, atol});
}

void Batch::check() {
  std::vector<Item> items = std::move(items_);
  items_.clear();
  // One concatenation per element size, in the order the sizes first appear.
  std::vector<DType> sizes;
  for (const Item& it : items)
    if (std::find(sizes.begin(), sizes.end(), it.bits.dtype()) == sizes.end())
      sizes.push_back(it.bits.dtype());
  for (DType size : sizes) {
    int64_t total = 0;
    for (const Item& it : items)
      if (it.bits.dtype() == size) total += static_cast<int64_t>(it.expected.size());
    Tensor all;
    int64_t off = 0;
    for (const Item& it : items) {
      if (it.bits.dtype() != size) continue;
      const int64_t n = static_cast<int64_t>(it.expected.size());
      Tensor p = it.bits.pad({{off, total - off - n}});
      all = !all.defined() ? p : size.is_bool() ? all.logical_or(p) : all + p;
      off += n;
    }
    const std::vector<uint64_t> got = raw_bits(all);
    ASSERT_EQ(got.size(), static_cast<size_t>(total));
    off = 0;
    for (const Item& it : items) {
      if (it.bits.dtype() != size) continue;
      std::vector<double> values(it.expected.size());
      for (double& v : values) v = value_from_bits(got[static_cast<size_t>(off++)], it.dtype);
      expect_near(values, it.expected, it.rtol, it.atol, it.label);
    }
  }
}

Tensor rows(const std::vector<Tensor>& ts) {
  const int64_t k = static_cast<int64_t>(ts.size());
  Tensor out;
  for (int64_t i = 0; i < k; ++i) {
    Shape s = ts[static_cast<size_t>(i)].shape();
    s.insert(s.begin(), 1);
    PadList p(s.size(), {0, 0});
    p[0] = {i, k - 1 - i};
    Tensor r = ts[static_cast<size_t>(i)].reshape(s).pad(p);
    if (!out.defined())
      out = r;
    else
      out = r.dtype().is_bool() ? out.logical_or(r) : out + r;
  }
  return out;
}

void expect_rows(const std::vector<Row>& rs) {
  ASSERT_FALSE(rs.empty());
  std::vector<Tensor> ts;
  for (const Row& r : rs) {
    ASSERT_EQ(r.got.shape(), rs[0].got.shape()) << r.name;
    ASSERT_EQ(r.got.dtype(), rs[0].got.dtype()) << r.name << ": " << r.got.dtype().name();
    ASSERT_EQ(static_cast<int64_t>(r.expected.size()), r.got.numel()) << r.name;
    ts.push_back(r.got);
  }
  const std::vector<double> got = values_of(rows(ts));
  const size_t n = rs[0].expected.size();
  for (size_t k = 0; k < rs.size(); ++k)
    expect_near(std::vector<double>(got.begin() + k * n, got.begin() + (k + 1) * n), rs[k].expected,
                rs[k].rtol, rs[k].atol, rs[k].name + " (" + rs[0].got.dtype().name() + ")", 4);
}

}  // namespace vkgrad::testing
