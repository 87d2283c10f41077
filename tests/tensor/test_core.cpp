// tests/tensor: the core's ops on every device — creation, inspection, casts, elementwise math
// with weak scalars, promotion and broadcasting, and the sum/max/prod reductions — each against
// values computed in double precision (or exact integer arithmetic) in the test.
// Many results of one dtype are packed into one tensor (rows()) so that a dtype costs one kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_values;
using testing::make_tensor;
using testing::numel_of;
using testing::round_to;
using testing::values_of;

const std::vector<DType> kAllDTypes = {
    dtypes::bool_,    dtypes::int8,    dtypes::uint8,  dtypes::int16,  dtypes::uint16,
    dtypes::int32,    dtypes::uint32,  dtypes::int64,  dtypes::uint64, dtypes::float16,
    dtypes::bfloat16, dtypes::float32, dtypes::float64};
const std::vector<DType> kIntDTypes = {dtypes::int8,   dtypes::uint8, dtypes::int16,
                                       dtypes::uint16, dtypes::int32, dtypes::uint32,
                                       dtypes::int64,  dtypes::uint64};
const std::vector<DType> kFloatDTypes = {dtypes::float16, dtypes::bfloat16, dtypes::float32,
                                         dtypes::float64};
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

void expect_dtype(const Tensor& t, DType d) { EXPECT_EQ(t.dtype().name(), d.name()); }

int bits_of(DType d) { return d.itemsize() * 8; }

// An exact integer (as a double) to its two's-complement bits.
uint64_t to_bits(double v) {
  return v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
}
// Two's-complement bits narrowed to integer dtype `d` (wrapping), as a double.
double wrap(uint64_t b, DType d) {
  switch (d.scalar_type()) {
    case ScalarType::int8:
      return static_cast<int8_t>(b);
    case ScalarType::uint8:
      return static_cast<uint8_t>(b);
    case ScalarType::int16:
      return static_cast<int16_t>(b);
    case ScalarType::uint16:
      return static_cast<uint16_t>(b);
    case ScalarType::int32:
      return static_cast<int32_t>(b);
    case ScalarType::uint32:
      return static_cast<uint32_t>(b);
    case ScalarType::int64:
      return static_cast<double>(static_cast<int64_t>(b));
    case ScalarType::uint64:
      return static_cast<double>(b);
    default:
      ADD_FAILURE() << "wrap: not an integer dtype " << d.name();
      return 0;
  }
}

// Values that `d` holds exactly: full range for 8/16/32-bit ints, +-2^40 for 64-bit ints (so
// doubles stay exact), [-8, 8) rounded to the dtype for floats.
std::vector<double> sample(DType d, int64_t n, uint64_t seed) {
  using testing::random_ints;
  switch (d.scalar_type()) {
    case ScalarType::bool_:
      return random_ints(n, 0, 1, seed);
    case ScalarType::int8:
      return random_ints(n, -128, 127, seed);
    case ScalarType::uint8:
      return random_ints(n, 0, 255, seed);
    case ScalarType::int16:
      return random_ints(n, -32768, 32767, seed);
    case ScalarType::uint16:
      return random_ints(n, 0, 65535, seed);
    case ScalarType::int32:
      return random_ints(n, INT32_MIN, INT32_MAX, seed);
    case ScalarType::uint32:
      return random_ints(n, 0, UINT32_MAX, seed);
    case ScalarType::int64:
      return random_ints(n, -(int64_t{1} << 40), int64_t{1} << 40, seed);
    case ScalarType::uint64:
      return random_ints(n, 0, int64_t{1} << 40, seed);
    default: {
      std::vector<double> v = testing::random_values(n, -8, 8, seed);
      for (double& x : v) x = round_to(x, d);
      return v;
    }
  }
}

// Stacks tensors of one shape and dtype along a new first axis: reshape to (1, ...), pad to
// (k, ...), add (logical_or for bool). Lets one kernel check many results.
Tensor rows(const std::vector<Tensor>& ts) {
  const int64_t k = static_cast<int64_t>(ts.size());
  Tensor out;
  for (int64_t i = 0; i < k; ++i) {
    Shape s = ts[i].shape();
    s.insert(s.begin(), 1);
    PadList p(s.size(), {0, 0});
    p[0] = {i, k - 1 - i};
    Tensor r = ts[i].reshape(s).pad(p);
    if (!out.defined())
      out = r;
    else
      out = r.dtype().is_bool() ? out.logical_or(r) : out + r;
  }
  return out;
}

// Concatenation of row vectors (the expected values of rows()).
std::vector<double> concat(const std::vector<std::vector<double>>& vs) {
  std::vector<double> out;
  for (const auto& v : vs) out.insert(out.end(), v.begin(), v.end());
  return out;
}

std::vector<double> map1(const std::vector<double>& a, const std::function<double(double)>& f) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = f(a[i]);
  return out;
}
std::vector<double> map2(const std::vector<double>& a, const std::vector<double>& b,
                         const std::function<double(double, double)>& f) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = f(a[i], b[i]);
  return out;
}

// Like expect_values on plain vectors: NaN matches NaN, Inf matches Inf of the same sign.
void expect_near(const std::vector<double>& got, const std::vector<double>& expected, double rtol,
                 double atol, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], e = expected[i];
    bool ok;
    if (std::isnan(e))
      ok = std::isnan(g);
    else if (std::isinf(e))
      ok = g == e;
    else
      ok = std::fabs(g - e) <= atol + rtol * std::fabs(e);
    if (!ok && reported++ < 8)
      ADD_FAILURE() << what << ": at index " << i << " got " << g << ", expected " << e;
  }
}

// Multi-index helpers for broadcasting references (shapes aligned at the right).
double at_broadcast(const std::vector<double>& v, const Shape& s, const std::vector<int64_t>& idx) {
  int64_t flat = 0, stride = 1;
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    const int64_t i = idx[idx.size() - s.size() + d];
    flat += (s[d] == 1 ? 0 : i) * stride;
    stride *= s[d];
  }
  return v[flat];
}
std::vector<double> ref_broadcast(const std::vector<double>& a, const Shape& as,
                                  const std::vector<double>& b, const Shape& bs, const Shape& out,
                                  const std::function<double(double, double)>& f) {
  std::vector<double> r(numel_of(out));
  for (int64_t i = 0; i < numel_of(out); ++i) {
    auto idx = testing::unflatten_index(i, out);
    r[i] = f(at_broadcast(a, as, idx), at_broadcast(b, bs, idx));
  }
  return r;
}

// Reference reduction over `axes` of a row-major array; `op` folds from `init`.
struct Reduced {
  Shape shape;
  std::vector<double> v;
};
Reduced ref_reduce(const std::vector<double>& x, const Shape& s, std::vector<int> axes,
                   bool keepdim, double init, const std::function<double(double, double)>& op) {
  const int nd = static_cast<int>(s.size());
  if (axes.empty())
    for (int d = 0; d < nd; ++d) axes.push_back(d);
  std::vector<bool> red(nd, false);
  for (int a : axes) red[a < 0 ? a + nd : a] = true;
  Shape kept;
  for (int d = 0; d < nd; ++d) kept.push_back(red[d] ? 1 : s[d]);
  std::vector<double> out(numel_of(kept), init);
  for (int64_t i = 0; i < numel_of(s); ++i) {
    auto idx = testing::unflatten_index(i, s);
    int64_t flat = 0;
    for (int d = 0; d < nd; ++d) flat = flat * kept[d] + (red[d] ? 0 : idx[d]);
    out[flat] = op(out[flat], x[i]);
  }
  Shape shape;
  for (int d = 0; d < nd; ++d)
    if (!red[d] || keepdim) shape.push_back(kept[d]);
  return {shape, out};
}

class CoreTest : public testing::DeviceTest {
 protected:
  Tensor make(const std::vector<double>& v, const Shape& s, DType d) const {
    return make_tensor(v, s, d, dev());
  }
  Tensor make1(const std::vector<double>& v, DType d) const {
    return make_tensor(v, {static_cast<int64_t>(v.size())}, d, dev());
  }
};

// ---- creation -------------------------------------------------------------------------------

TEST_P(CoreTest, ScalarConstructorsAreWeakLiterals) {
  Tensor d = 2.5;
  expect_dtype(d, dtypes::float32);
  EXPECT_TRUE(d.is_weak());
  EXPECT_EQ(d.ndim(), 0);
  EXPECT_EQ(d.numel(), 1);
  EXPECT_EQ(d.shape(), Shape{});
  EXPECT_EQ(d.item<float>(), 2.5f);

  Tensor f = 1.5f;
  expect_dtype(f, dtypes::float32);
  EXPECT_EQ(f.item<float>(), 1.5f);

  Tensor i = 3;
  expect_dtype(i, dtypes::int32);
  EXPECT_TRUE(i.is_weak());
  EXPECT_EQ(i.item<int32_t>(), 3);

  Tensor l = int64_t{-5};
  EXPECT_TRUE(l.is_weak());
  EXPECT_TRUE(l.dtype().is_int()) << l.dtype().name();
  EXPECT_EQ(values_of(l), std::vector<double>{-5});

  Tensor b = true;
  expect_dtype(b, dtypes::bool_);
  EXPECT_TRUE(b.is_weak());
  EXPECT_EQ(b.item<bool>(), true);
}

TEST_P(CoreTest, ScalarFactoryIsNotWeak) {
  Tensor s = Tensor::scalar(2.5, {}, dev());
  expect_dtype(s, dtypes::float32);
  EXPECT_FALSE(s.is_weak());
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.device(), dev());
  EXPECT_EQ(s.item<float>(), 2.5f);
  EXPECT_EQ(Tensor::scalar(-3, dtypes::int8, dev()).item<int8_t>(), -3);
  EXPECT_EQ(Tensor::scalar(1.0, dtypes::float16, dev()).item<uint16_t>(), 0x3c00);
  EXPECT_EQ(Tensor::scalar(-2.0, dtypes::bfloat16, dev()).item<uint16_t>(), 0xc000);
  EXPECT_EQ(Tensor::scalar(0.1, dtypes::float64, dev()).item<double>(), 0.1);
  // A non-weak int64 scalar wins promotion over int8 (it is a tensor, not a literal).
  Tensor x = make1({1, 2}, dtypes::int8);
  expect_values(x + Tensor::scalar(1 << 20, dtypes::int64, dev()), {2}, dtypes::int64,
                {1 + (1 << 20), 2 + (1 << 20)});
}

TEST_P(CoreTest, FromVectorRoundTripsEveryDTypeAndSize) {
  for (DType d : kAllDTypes) {
    for (int64_t n : {1, 3, 17, 257, 1023}) {
      SCOPED_TRACE(d.name() + " n=" + std::to_string(n));
      const std::vector<double> v = sample(d, n, 100 + n);
      Tensor t = make1(v, d);
      EXPECT_EQ(t.device(), dev());
      EXPECT_EQ(t.numel(), n);
      expect_values(t, {n}, d, v);
    }
  }
  // Multi-dimensional, row-major.
  expect_values(make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::int16), {2, 3}, dtypes::int16,
                {1, 2, 3, 4, 5, 6});
}

TEST_P(CoreTest, FromVectorNaturalDTypes) {
  expect_dtype(Tensor::from_vector<float>({1}, {1}, {}, dev()), dtypes::float32);
  expect_dtype(Tensor::from_vector<double>({1}, {1}, {}, dev()), dtypes::float64);
  expect_dtype(Tensor::from_vector<int8_t>({1}, {1}, {}, dev()), dtypes::int8);
  expect_dtype(Tensor::from_vector<uint8_t>({1}, {1}, {}, dev()), dtypes::uint8);
  expect_dtype(Tensor::from_vector<int16_t>({1}, {1}, {}, dev()), dtypes::int16);
  expect_dtype(Tensor::from_vector<uint16_t>({1}, {1}, {}, dev()), dtypes::uint16);
  expect_dtype(Tensor::from_vector<int32_t>({1}, {1}, {}, dev()), dtypes::int32);
  expect_dtype(Tensor::from_vector<uint32_t>({1}, {1}, {}, dev()), dtypes::uint32);
  expect_dtype(Tensor::from_vector<int64_t>({1}, {1}, {}, dev()), dtypes::int64);
  expect_dtype(Tensor::from_vector<uint64_t>({1}, {1}, {}, dev()), dtypes::uint64);
  expect_dtype(Tensor::from_vector<bool>(std::vector<bool>{true}, {1}, {}, dev()), dtypes::bool_);
}

TEST_P(CoreTest, FromVectorHalfBitsAndBool) {
  // float16: 1, -2, +inf, 65504 (max), 2^-24 (smallest subnormal), NaN.
  const std::vector<uint16_t> h = {0x3c00, 0xc000, 0x7c00, 0x7bff, 0x0001, 0x7e00};
  Tensor th = Tensor::from_vector<uint16_t>(h, {6}, dtypes::float16, dev());
  expect_values(th, {6}, dtypes::float16, {1, -2, kInf, 65504, std::ldexp(1.0, -24), kNaN});
  EXPECT_EQ(th.to_vector<uint16_t>(), h);
  // bfloat16: 1, -3, 2^100, -inf.
  const std::vector<uint16_t> b = {0x3f80, 0xc040, 0x7180, 0xff80};
  Tensor tb = Tensor::from_vector<uint16_t>(b, {2, 2}, dtypes::bfloat16, dev());
  expect_values(tb, {2, 2}, dtypes::bfloat16, {1, -3, std::ldexp(1.0, 100), -kInf});
  EXPECT_EQ(tb.to_vector<uint16_t>(), b);

  const std::vector<bool> bits = {true, false, true, true, false};
  Tensor tbool = Tensor::from_vector<bool>(bits, {5}, {}, dev());
  EXPECT_EQ(tbool.to_vector<bool>(), bits);
}

TEST_P(CoreTest, EmptyZerosOnesFullDefaults) {
  Tensor e = Tensor::empty({2, 3}, {}, dev());
  EXPECT_EQ(e.shape(), (Shape{2, 3}));
  expect_dtype(e, dtypes::float32);
  expect_dtype(Tensor::empty({4}, dtypes::int16, dev()), dtypes::int16);

  expect_values(Tensor::zeros({2, 3}, {}, dev()), {2, 3}, dtypes::float32, {0, 0, 0, 0, 0, 0});
  expect_values(Tensor::zeros({3}, dtypes::int8, dev()), {3}, dtypes::int8, {0, 0, 0});
  expect_values(Tensor::ones({5}, {}, dev()), {5}, dtypes::float32, {1, 1, 1, 1, 1});
  expect_values(Tensor::ones({2}, dtypes::float16, dev()), {2}, dtypes::float16, {1, 1});
  expect_values(Tensor::ones({2}, dtypes::bool_, dev()), {2}, dtypes::bool_, {1, 1});
  expect_values(Tensor::ones({1}, dtypes::uint64, dev()), {1}, dtypes::uint64, {1});

  expect_values(Tensor::full({2, 2}, 7, {}, dev()), {2, 2}, dtypes::int32, {7, 7, 7, 7});
  expect_values(Tensor::full({3}, 7.0, {}, dev()), {3}, dtypes::float32, {7, 7, 7});
  expect_values(Tensor::full({2}, true, {}, dev()), {2}, dtypes::bool_, {1, 1});
  expect_values(Tensor::full({2}, 2.5, dtypes::float16, dev()), {2}, dtypes::float16, {2.5, 2.5});
  expect_values(Tensor::full({2}, -3, dtypes::int8, dev()), {2}, dtypes::int8, {-3, -3});
  expect_values(Tensor::full({2}, int64_t{1} << 40, dtypes::int64, dev()), {2}, dtypes::int64,
                {std::ldexp(1.0, 40), std::ldexp(1.0, 40)});
  expect_values(Tensor::full({}, 3, {}, dev()), {}, dtypes::int32, {3});
  expect_values(Tensor::full({1, 3, 1}, 0.5, dtypes::float64, dev()), {1, 3, 1}, dtypes::float64,
                {0.5, 0.5, 0.5});
}

TEST_P(CoreTest, LikeConstructorsKeepShapeDTypeDevice) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {3, 2}, dtypes::int8);
  Tensor z = x.zeros_like();
  EXPECT_EQ(z.device(), dev());
  expect_values(z, {3, 2}, dtypes::int8, {0, 0, 0, 0, 0, 0});
  Tensor h = make({1, 2}, {2}, dtypes::float16);
  expect_values(h.ones_like(), {2}, dtypes::float16, {1, 1});
  expect_values(h.full_like(2.5), {2}, dtypes::float16, {2.5, 2.5});
  expect_values(make({1, 2, 3}, {3}, dtypes::int32).full_like(3.0), {3}, dtypes::int32, {3, 3, 3});
  expect_values(make({1, 2, 3}, {3}, dtypes::float32).full_like(-0.25), {3}, dtypes::float32,
                {-0.25, -0.25, -0.25});
}

TEST_P(CoreTest, Inspection) {
  Tensor t = Tensor::zeros({2, 3, 5}, dtypes::int16, dev());
  EXPECT_EQ(t.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(t.shape(0), 2);
  EXPECT_EQ(t.shape(2), 5);
  EXPECT_EQ(t.shape(-1), 5);
  EXPECT_EQ(t.shape(-3), 2);
  EXPECT_EQ(t.ndim(), 3);
  EXPECT_EQ(t.numel(), 30);
  expect_dtype(t, dtypes::int16);
  EXPECT_EQ(t.device(), dev());
  EXPECT_TRUE(t.defined());
  EXPECT_FALSE(t.is_weak());
  EXPECT_FALSE(Tensor().defined());

  Tensor s = Tensor::scalar(1.0, {}, dev());
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.numel(), 1);
  // Lazy results know their shape and dtype without running anything.
  Tensor l = (t + 1).reshape({6, 5});
  EXPECT_EQ(l.shape(), (Shape{6, 5}));
  expect_dtype(l, dtypes::int16);
  EXPECT_EQ(l.device(), dev());
}

TEST_P(CoreTest, ItemAndToVector) {
  EXPECT_EQ(make({42}, {1}, dtypes::int32).item<int32_t>(), 42);
  EXPECT_EQ(make({-7}, {1, 1}, dtypes::int64).item<int64_t>(), -7);
  EXPECT_EQ(make({0.125}, {}, dtypes::float64).item<double>(), 0.125);
  EXPECT_EQ(make({200}, {1}, dtypes::uint8).item<uint8_t>(), 200);
  EXPECT_EQ(make({1}, {1}, dtypes::bool_).item<bool>(), true);
  EXPECT_EQ((make({1.5}, {1}, dtypes::float32) * 2.0).item<float>(), 3.0f);
  EXPECT_EQ(make({1, 2, 3, 4}, {2, 2}, dtypes::int32).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ((make({1, 2, 3, 4}, {2, 2}, dtypes::float32) + 0.5).to_vector<float>(),
            (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
}

TEST_P(CoreTest, SizeZeroTensors) {
  Tensor a = make({}, {0}, dtypes::float32);
  EXPECT_EQ(a.numel(), 0);
  EXPECT_TRUE(a.to_vector<float>().empty());
  Tensor b = Tensor::zeros({3, 0}, {}, dev());
  EXPECT_EQ(b.numel(), 0);
  EXPECT_EQ(b.shape(), (Shape{3, 0}));
  expect_values(a + 1.0, {0}, dtypes::float32, {});
  expect_values(b * b, {3, 0}, dtypes::float32, {});
  expect_values(b + make({1, 2, 3}, {3, 1}, dtypes::float32), {3, 0}, dtypes::float32, {});
  expect_values(make({}, {0}, dtypes::int32).cast(dtypes::float16), {0}, dtypes::float16, {});
  // Reducing an empty axis gives the identity; reducing over a non-empty axis keeps size 0.
  expect_values(a.sum(), {}, dtypes::float32, {0});
  expect_values(make({}, {0}, dtypes::int32).sum(), {}, dtypes::int32, {0});
  expect_values(b.sum(1), {3}, dtypes::float32, {0, 0, 0});
  expect_values(b.sum(0), {0}, dtypes::float32, {});
  expect_values(b.prod(1), {3}, dtypes::float32, {1, 1, 1});
  expect_values(b.sum(std::vector<int>{}, true), {1, 1}, dtypes::float32, {0});
}

// ---- casts ----------------------------------------------------------------------------------

// Expected value of casting `v` (held exactly by `from`) to `to`, as C casts do: floats truncate
// toward zero into ints, ints wrap, anything nonzero is true.
double cast_ref(double v, DType from, DType to) {
  if (to.is_bool()) return v != 0 ? 1 : 0;
  if (to.is_float()) return round_to(v, to);
  const double t = from.is_float() ? std::trunc(v) : v;
  return wrap(to_bits(t), to);
}

TEST_P(CoreTest, CastBetweenAllDTypePairs) {
  // Each source dtype casts to all 13 dtypes in one kernel: cast(to).cast(float64), rows().
  // Float sources stay in [0, 127] so that float -> any int is defined in C.
  for (DType from : kAllDTypes) {
    SCOPED_TRACE("from " + from.name());
    std::vector<double> v;
    if (from.is_bool())
      v = {0, 1, 1, 0, 1};
    else if (from.is_float())
      v = {0, 1, 2.7, 100.5, 0.4, 127, 3.5, 64.25, 0.999};
    else if (from.is_unsigned())
      v = {0, 1, 255, 5, 7, 100, 127, 128, 42};
    else
      v = {0, 1, -1, 5, -7, 100, 127, -128, 42};
    for (double& x : v) x = round_to(x, from);
    Tensor x = make1(v, from);
    std::vector<Tensor> casts;
    std::vector<std::vector<double>> expected;
    for (DType to : kAllDTypes) {
      Tensor c = x.cast(to);
      expect_dtype(c, to);
      casts.push_back(c.cast(dtypes::float64));
      expected.push_back(map1(v, [&](double e) { return cast_ref(e, from, to); }));
    }
    const std::vector<double> got = values_of(rows(casts));
    for (size_t k = 0; k < kAllDTypes.size(); ++k) {
      std::vector<double> row(got.begin() + k * v.size(), got.begin() + (k + 1) * v.size());
      expect_near(row, expected[k], 0, 0, from.name() + " -> " + kAllDTypes[k].name());
    }
  }
}

TEST_P(CoreTest, CastFloatToIntTruncatesTowardZero) {
  Tensor x = make1({2.7, -2.7, 0.5, -0.5, 100.99, -100.99, -0.0, 7}, dtypes::float32);
  expect_values(x.cast(dtypes::int32), {8}, dtypes::int32, {2, -2, 0, 0, 100, -100, 0, 7});
  expect_values(x.cast(dtypes::int8), {8}, dtypes::int8, {2, -2, 0, 0, 100, -100, 0, 7});
  expect_values(x.cast(dtypes::int64), {8}, dtypes::int64, {2, -2, 0, 0, 100, -100, 0, 7});
  expect_values(make1({-2.5, 3.75}, dtypes::float16).cast(dtypes::int16), {2}, dtypes::int16,
                {-2, 3});
  expect_values(make1({3e9, 255.9}, dtypes::float64).cast(dtypes::uint32), {2}, dtypes::uint32,
                {3e9, 255});
}

TEST_P(CoreTest, CastIntegersWrap) {
  Tensor x = make1({300, -1, 128, 255, 256, -129, 65537}, dtypes::int32);
  expect_values(x.cast(dtypes::int8), {7}, dtypes::int8, {44, -1, -128, -1, 0, 127, 1});
  expect_values(x.cast(dtypes::uint8), {7}, dtypes::uint8, {44, 255, 128, 255, 0, 127, 1});
  expect_values(x.cast(dtypes::uint16), {7}, dtypes::uint16, {300, 65535, 128, 255, 256, 65407, 1});
  expect_values(make1({4294967301.0, -4294967296.0}, dtypes::int64).cast(dtypes::int32), {2},
                dtypes::int32, {5, 0});
  expect_values(make1({-2}, dtypes::int8).cast(dtypes::uint64), {1}, dtypes::uint64,
                {18446744073709551614.0});
}

TEST_P(CoreTest, CastToAndFromBool) {
  // Any nonzero value is true, including NaN and ints whose low byte is zero.
  expect_values(make1({0, -0.0, 0.5, -3, kNaN, kInf}, dtypes::float32).cast(dtypes::bool_), {6},
                dtypes::bool_, {0, 0, 1, 1, 1, 1});
  expect_values(make1({0, 256, -1, 65536}, dtypes::int32).cast(dtypes::bool_), {4}, dtypes::bool_,
                {0, 1, 1, 1});
  Tensor b = make1({1, 0, 1}, dtypes::bool_);
  expect_values(b.cast(dtypes::int32), {3}, dtypes::int32, {1, 0, 1});
  expect_values(b.cast(dtypes::float16), {3}, dtypes::float16, {1, 0, 1});
  expect_values(b.cast(dtypes::uint8), {3}, dtypes::uint8, {1, 0, 1});
}

TEST_P(CoreTest, CastFloatSpecialsAndRounding) {
  const std::vector<double> v = {kNaN, kInf, -kInf, 1e6, 65504, 65520, 1e-8, -0.0, 1.0 / 3};
  Tensor x = make1(v, dtypes::float32);
  for (DType to : {dtypes::float16, dtypes::bfloat16, dtypes::float64}) {
    SCOPED_TRACE(to.name());
    std::vector<double> e =
        map1(v, [&](double a) { return round_to(round_to(a, dtypes::float32), to); });
    expect_values(x.cast(to), {9}, to, e);
  }
  // float64 -> float32 rounds to nearest; float16 -> float32 is exact.
  expect_values(make1({0.1, 1e40, -1e-50}, dtypes::float64).cast(dtypes::float32), {3},
                dtypes::float32, {round_to(0.1, dtypes::float32), kInf, -0.0});
  expect_values(make1({0.333251953125}, dtypes::float16).cast(dtypes::float32), {1},
                dtypes::float32, {0.333251953125});
}

TEST_P(CoreTest, Bitcast) {
  Tensor x = make1({1.0, -2.0, 0.0, kInf}, dtypes::float32);
  expect_values(x.bitcast(dtypes::int32), {4}, dtypes::int32,
                {1065353216, -1073741824, 0, 2139095040});
  expect_values(x.bitcast(dtypes::uint32), {4}, dtypes::uint32,
                {1065353216, 3221225472.0, 0, 2139095040});
  expect_values(make1({1065353216, -1073741824}, dtypes::int32).bitcast(dtypes::float32), {2},
                dtypes::float32, {1.0, -2.0});
  expect_values(make1({3212836864.0}, dtypes::uint32).bitcast(dtypes::float32), {1},
                dtypes::float32, {-1.0});
  // Of a computed value, and round trip.
  expect_values((x * 2.0).bitcast(dtypes::int32), {4}, dtypes::int32,
                {1073741824, -1065353216, 0, 2139095040});
  expect_values(x.bitcast(dtypes::int32).bitcast(dtypes::float32), {4}, dtypes::float32,
                {1.0, -2.0, 0.0, kInf});
  expect_values(make1({1.0, -2.0}, dtypes::float16).bitcast(dtypes::uint16), {2}, dtypes::uint16,
                {0x3c00, 0xc000});
}

TEST_P(CoreTest, ContiguousCloneDetach) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::float32);
  expect_values(x.contiguous(), {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  expect_values(x.permute({1, 0}).contiguous(), {3, 2}, dtypes::float32, {1, 4, 2, 5, 3, 6});
  expect_values(x.clone(), {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  expect_values((x + 1.0).clone(), {2, 3}, dtypes::float32, {2, 3, 4, 5, 6, 7});
  expect_values(x.detach(), {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  expect_values((x * 2.0).detach() + 1.0, {2, 3}, dtypes::float32, {3, 5, 7, 9, 11, 13});
  Tensor c = x.clone();
  EXPECT_NE(c.impl().get(), x.impl().get());
  EXPECT_EQ(c.device(), dev());
  expect_dtype(make1({1, 2}, dtypes::uint8).contiguous(), dtypes::uint8);
}

// ---- elementwise ----------------------------------------------------------------------------

TEST_P(CoreTest, ArithmeticEveryDType) {
  // add sub mul maximum minimum neg, 257 elements, one kernel per dtype. Integers wrap
  // (reference in 64-bit two's complement); floats are exactly rounded (double has enough bits).
  const int64_t n = 257;
  for (DType d : kIntDTypes) {
    SCOPED_TRACE(d.name());
    const auto a = sample(d, n, 1), b = sample(d, n, 2);
    Tensor ta = make1(a, d), tb = make1(b, d);
    Tensor r = rows({ta + tb, ta - tb, ta * tb, ta.maximum(tb), ta.minimum(tb), -ta});
    auto w = [&](auto f) {
      return map2(a, b, [&](double x, double y) { return wrap(f(to_bits(x), to_bits(y)), d); });
    };
    expect_values(r, {6, n}, d,
                  concat({w([](uint64_t x, uint64_t y) { return x + y; }),
                          w([](uint64_t x, uint64_t y) { return x - y; }),
                          w([](uint64_t x, uint64_t y) { return x * y; }),
                          map2(a, b, [](double x, double y) { return std::max(x, y); }),
                          map2(a, b, [](double x, double y) { return std::min(x, y); }),
                          map1(a, [&](double x) { return wrap(0 - to_bits(x), d); })}));
  }
  for (DType d : kFloatDTypes) {
    SCOPED_TRACE(d.name());
    const auto a = sample(d, n, 3), b = sample(d, n, 4);
    Tensor ta = make1(a, d), tb = make1(b, d);
    Tensor r = rows({ta.add(tb), ta.sub(tb), ta.mul(tb), ta.maximum(tb), ta.minimum(tb), ta.neg()});
    auto f = [&](auto op) {
      return map2(a, b, [&](double x, double y) { return round_to(op(x, y), d); });
    };
    expect_values(r, {6, n}, d,
                  concat({f(std::plus<>()), f(std::minus<>()), f(std::multiplies<>()),
                          f([](double x, double y) { return std::max(x, y); }),
                          f([](double x, double y) { return std::min(x, y); }),
                          map1(a, [](double x) { return -x; })}));
  }
}

TEST_P(CoreTest, AddOddSizes) {
  for (int64_t n : {1, 3, 17, 257, 1023}) {
    SCOPED_TRACE(n);
    const auto a = sample(dtypes::float32, n, 5), b = sample(dtypes::float32, n, 6);
    expect_values(make1(a, dtypes::float32) * make1(b, dtypes::float32) + 1.0, {n}, dtypes::float32,
                  map2(a, b, [](double x, double y) {
                    return round_to(round_to(x * y, dtypes::float32) + 1, dtypes::float32);
                  }));
  }
}

TEST_P(CoreTest, CompoundAssignmentKeepsValueSemantics) {
  Tensor a = make1({1, 2, 3}, dtypes::float32);
  Tensor keep = a;
  a += make1({10, 20, 30}, dtypes::float32);
  a *= 2.0;
  a -= 1.0;
  a /= 4.0;
  expect_values(a, {3}, dtypes::float32, {21.0 / 4, 43.0 / 4, 65.0 / 4});
  expect_values(keep, {3}, dtypes::float32, {1, 2, 3});
}

TEST_P(CoreTest, TrueDivision) {
  // Every integer dtype divides into float32 (int / int is true division); one kernel.
  std::vector<Tensor> quotients;
  std::vector<double> expected;
  for (DType d : kIntDTypes) {
    const auto a = sample(d, 17, 7);
    auto b = sample(d, 17, 8);
    for (double& y : b)
      if (y == 0) y = 3;
    Tensor q = make1(a, d) / make1(b, d);
    expect_dtype(q, dtypes::float32);
    quotients.push_back(q);
    const auto e = map2(a, b, [](double x, double y) {
      return round_to(round_to(x, dtypes::float32) / round_to(y, dtypes::float32), dtypes::float32);
    });
    expected.insert(expected.end(), e.begin(), e.end());
  }
  expect_values(rows(quotients), {static_cast<int64_t>(kIntDTypes.size()), 17}, dtypes::float32,
                expected, 4e-7);
  expect_values(make1({7, -7, 1, 10}, dtypes::int32) / make1({2, 2, 3, -4}, dtypes::int32), {4},
                dtypes::float32, {3.5, -3.5, round_to(1.0 / 3, dtypes::float32), -2.5}, 4e-7);
  expect_values(make1({1, 0}, dtypes::bool_) / make1({1, 1}, dtypes::bool_), {2}, dtypes::float32,
                {1, 0});
  expect_values(make1({7, 9}, dtypes::uint8) / 2, {2}, dtypes::float32, {3.5, 4.5});
  expect_values(3 / make1({2, 4}, dtypes::int32), {2}, dtypes::float32, {1.5, 0.75});
  // Floats keep their dtype; x / y may be computed as x * (1 / y): allow 2 ulp.
  for (DType d : kFloatDTypes) {
    SCOPED_TRACE(d.name());
    const auto a = sample(d, 33, 9);
    auto b = sample(d, 33, 10);
    for (double& y : b)
      if (std::fabs(y) < 0.25) y = 0.5;
    const auto e = map2(a, b, [&](double x, double y) { return round_to(x / y, d); });
    expect_values(make1(a, d).div(make1(b, d)), {33}, d, e, testing::default_rtol(d));
  }
}

TEST_P(CoreTest, DivisionRoundingModesAndMod) {
  Tensor a = make1({7, -7, 7, -7, 6, 0}, dtypes::int32);
  Tensor b = make1({2, 2, -2, -2, 3, 5}, dtypes::int32);
  expect_values(a.div(b, "trunc"), {6}, dtypes::int32, {3, -3, -3, 3, 2, 0});
  expect_values(a.div(b, "floor"), {6}, dtypes::int32, {3, -4, -4, 3, 2, 0});
  expect_values(a.mod(b), {6}, dtypes::int32, {1, 1, -1, -1, 0, 0});
  expect_values(a.div(b, ""), {6}, dtypes::float32, {3.5, -3.5, -3.5, 3.5, 2, 0}, 4e-7);
}

TEST_P(CoreTest, DivisionByZeroAndNaN) {
  Tensor a = make1({1, -1, 0, kInf, kNaN, 5}, dtypes::float32);
  Tensor b = make1({0, 0, 0, kInf, 1, -kInf}, dtypes::float32);
  expect_values(a / b, {6}, dtypes::float32, {kInf, -kInf, kNaN, kNaN, kNaN, -0.0});
  expect_values(make1({1, 0}, dtypes::float16) / make1({0, 0}, dtypes::float16), {2},
                dtypes::float16, {kInf, kNaN});
  expect_values(make1({1}, dtypes::int32) / make1({0}, dtypes::int32), {1}, dtypes::float32,
                {kInf});
}

TEST_P(CoreTest, WeakScalarPromotion) {
  Tensor i32 = make1({1, -2, 3}, dtypes::int32);
  expect_values(i32 + 3, {3}, dtypes::int32, {4, 1, 6});
  expect_values(3 + i32, {3}, dtypes::int32, {4, 1, 6});
  expect_values(i32 * 2.5, {3}, dtypes::float32, {2.5, -5, 7.5});
  expect_values(2.5 * i32, {3}, dtypes::float32, {2.5, -5, 7.5});
  expect_values(make1({10, 255, 0}, dtypes::uint8) + 1, {3}, dtypes::uint8, {11, 0, 1});
  expect_values(make1({0, 5}, dtypes::uint8) - 1, {2}, dtypes::uint8, {255, 4});
  expect_values(make1({127, -128}, dtypes::int8) + 1, {2}, dtypes::int8, {-128, -127});
  expect_values(make1({1, 2}, dtypes::int8) * 2.5, {2}, dtypes::float32, {2.5, 5});
  expect_values(make1({1.5, -3}, dtypes::float16) * 2.0, {2}, dtypes::float16, {3, -6});
  expect_values(make1({1.5, -3}, dtypes::bfloat16) * 2.0, {2}, dtypes::bfloat16, {3, -6});
  expect_values(make1({1.5, -3}, dtypes::float16) + 1, {2}, dtypes::float16, {2.5, -2});
  expect_values(make1({0.1}, dtypes::float64) + 0.2, {1}, dtypes::float64, {0.1 + 0.2});
  expect_values(make1({1, 2}, dtypes::int64) + (int64_t{1} << 40), {2}, dtypes::int64,
                {std::ldexp(1.0, 40) + 1, std::ldexp(1.0, 40) + 2});
  expect_values(make1({2.5}, dtypes::float32) + 1.5f, {1}, dtypes::float32, {4});
  // bool with an int literal is int32 (tinygrad: the literal's dtype joins with bool); with a
  // float literal float32; a bool literal leaves an integer tensor's dtype alone.
  Tensor b = make1({1, 0}, dtypes::bool_);
  expect_values(b + 1, {2}, dtypes::int32, {2, 1});
  expect_values(b * 1.5, {2}, dtypes::float32, {1.5, 0});
  expect_values(make1({7, 200}, dtypes::uint8) + true, {2}, dtypes::uint8, {8, 201});
  // Shifts and comparisons with literals.
  expect_values(make1({1, 3, -1}, dtypes::int8) << 3, {3}, dtypes::int8, {8, 24, -8});
  expect_values(make1({1, 32}, dtypes::uint8) << 3, {2}, dtypes::uint8, {8, 0});
  expect_values(make1({1, 5, -3}, dtypes::int8) < 3, {3}, dtypes::bool_, {1, 0, 1});
  expect_values(make1({0.25, 1}, dtypes::float16) > 0.5, {2}, dtypes::bool_, {0, 1});
  // Weak literals are created on the default device but follow the tensor's.
  EXPECT_EQ((i32 + 3).device(), dev());
  EXPECT_EQ((2.5 * i32).device(), dev());
}

TEST_P(CoreTest, MixedDTypePromotionFollowsTheLattice) {
  // Result dtypes only (no kernels): every pair joins as least_upper_dtype says.
  for (DType a : kAllDTypes)
    for (DType b : kAllDTypes) {
      Tensor x = Tensor::zeros({2}, a, dev()), y = Tensor::zeros({2}, b, dev());
      EXPECT_EQ((x * y).dtype().name(), dtypes::least_upper_dtype(a, b).name())
          << a.name() << " * " << b.name();
      EXPECT_EQ(x.maximum(y).dtype().name(), dtypes::least_upper_dtype(a, b).name())
          << "maximum(" << a.name() << ", " << b.name() << ")";
    }
  expect_values(make1({-3, 100}, dtypes::int8) + make1({200, 100}, dtypes::uint8), {2},
                dtypes::int16, {197, 200});
  expect_values(make1({3, -5}, dtypes::int32) + make1({0.5, 0.25}, dtypes::float16), {2},
                dtypes::float16, {3.5, -4.75});
  expect_values(make1({4000000000.0}, dtypes::uint32) - make1({-5}, dtypes::int32), {1},
                dtypes::int64, {4000000005.0});
  expect_values(make1({1.5}, dtypes::float16) * make1({2}, dtypes::bfloat16), {1}, dtypes::float32,
                {3});
  expect_values(make1({1, 0}, dtypes::bool_) + make1({-3, 4}, dtypes::int8), {2}, dtypes::int8,
                {-2, 4});
  expect_values(make1({0.1}, dtypes::float32) + make1({0.2}, dtypes::float64), {1}, dtypes::float64,
                {round_to(0.1, dtypes::float32) + 0.2});
}

TEST_P(CoreTest, Broadcasting) {
  using testing::random_values;
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {{{3, 4}, {}, {3, 4}},     {{}, {2, 3}, {2, 3}},
                                   {{3, 1}, {1, 4}, {3, 4}}, {{2, 1, 5}, {4, 1}, {2, 4, 5}},
                                   {{5}, {3, 1}, {3, 5}},    {{1, 1, 1}, {7}, {1, 1, 7}},
                                   {{3, 1}, {1, 0}, {3, 0}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.a) + " with " + ::testing::PrintToString(c.b));
    const auto a = random_values(numel_of(c.a), -4, 4, 11),
               b = random_values(numel_of(c.b), -4, 4, 12);
    const auto af = map1(a, [](double x) { return round_to(x, dtypes::float32); });
    const auto bf = map1(b, [](double x) { return round_to(x, dtypes::float32); });
    Tensor ta = make(af, c.a, dtypes::float32), tb = make(bf, c.b, dtypes::float32);
    expect_values(ta + tb, c.out, dtypes::float32,
                  ref_broadcast(af, c.a, bf, c.b, c.out, [](double x, double y) {
                    return round_to(x + y, dtypes::float32);
                  }));
    expect_values(
        tb.maximum(ta), c.out, dtypes::float32,
        ref_broadcast(af, c.a, bf, c.b, c.out, [](double x, double y) { return std::max(x, y); }));
  }
  // Broadcasting and promotion together: int8 (3,1) * float16 (4,).
  expect_values(make({1, 2, 3}, {3, 1}, dtypes::int8) * make({0.5, 1, 2, -1}, {4}, dtypes::float16),
                {3, 4}, dtypes::float16, {0.5, 1, 2, -1, 1, 2, 4, -2, 1.5, 3, 6, -3});
}

TEST_P(CoreTest, MaximumMinimumPropagateNaNAndHandleInf) {
  // As PyTorch's maximum/minimum: a NaN on either side gives NaN.
  Tensor a = make1({1, kNaN, -kInf, 2, kNaN, -0.5}, dtypes::float32);
  Tensor b = make1({kNaN, 3, 5, kInf, kNaN, -0.25}, dtypes::float32);
  expect_values(a.maximum(b), {6}, dtypes::float32, {kNaN, kNaN, 5, kInf, kNaN, -0.25});
  expect_values(a.minimum(b), {6}, dtypes::float32, {kNaN, kNaN, -kInf, 2, kNaN, -0.5});
  expect_values(make1({-kInf, 1}, dtypes::float16).maximum(0), {2}, dtypes::float16, {0, 1});
}

TEST_P(CoreTest, WhereFreeAndMember) {
  Tensor c = make1({1, 0, 1, 0}, dtypes::bool_);
  Tensor a = make1({1, 2, 3, 4}, dtypes::float32), b = make1({-1, -2, -3, -4}, dtypes::float32);
  expect_values(where(c, a, b), {4}, dtypes::float32, {1, -2, 3, -4});
  expect_values(c.where(a, b), {4}, dtypes::float32, {1, -2, 3, -4});
  // Broadcast condition and branches; literals on either side.
  Tensor c2 = make({1, 0, 1}, {3, 1}, dtypes::bool_);
  expect_values(where(c2, make1({1, 2, 3, 4}, dtypes::float32), 0.5), {3, 4}, dtypes::float32,
                {1, 2, 3, 4, 0.5, 0.5, 0.5, 0.5, 1, 2, 3, 4});
  expect_values(c2.where(7, make1({1, 2}, dtypes::int8)), {3, 2}, dtypes::int8, {7, 7, 1, 2, 7, 7});
  // Promotion across branches.
  expect_values(
      where(c, make1({1, 2, 3, 4}, dtypes::int32), make1({0.5, 0.5, 0.5, 0.5}, dtypes::float16)),
      {4}, dtypes::float16, {1, 0.5, 3, 0.5});
  // A condition computed from a comparison; NaN in the unselected branch does not leak.
  Tensor x = make1({-1, 4, kNaN, 9}, dtypes::float32);
  expect_values((x > 0).where(x.sqrt(), 0.0), {4}, dtypes::float32, {0, 2, 0, 3});
}

TEST_P(CoreTest, ComparisonsEveryDType) {
  // < <= > >= == != in one kernel per dtype; a third of b equals a.
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(d.name());
    const auto a = sample(d, 33, 13);
    auto b = sample(d, 33, 14);
    for (size_t i = 0; i < b.size(); i += 3) b[i] = a[i];
    Tensor ta = make1(a, d), tb = make1(b, d);
    Tensor r = rows({ta<tb, ta <= tb, ta> tb, ta >= tb, ta == tb, ta != tb});
    auto cmp = [&](auto op) {
      return map2(a, b, [&](double x, double y) { return op(x, y) ? 1.0 : 0.0; });
    };
    expect_values(
        r, {6, 33}, dtypes::bool_,
        concat({cmp(std::less<>()), cmp(std::less_equal<>()), cmp(std::greater<>()),
                cmp(std::greater_equal<>()), cmp(std::equal_to<>()), cmp(std::not_equal_to<>())}));
  }
}

TEST_P(CoreTest, ComparisonMethodsNaNAndMixedSigns) {
  Tensor a = make1({1, kNaN, kNaN, -kInf, 2}, dtypes::float32);
  Tensor b = make1({kNaN, 1, kNaN, -kInf, 2}, dtypes::float32);
  expect_values(rows({a.lt(b), a.le(b), a.gt(b), a.ge(b), a.eq(b), a.ne(b)}), {6, 5}, dtypes::bool_,
                {0, 0, 0, 0, 0,  //
                 0, 0, 0, 1, 1,  //
                 0, 0, 0, 0, 0,  //
                 0, 0, 0, 1, 1,  //
                 0, 0, 0, 1, 1,  //
                 1, 1, 1, 0, 0});
  // uint8 200 vs int8 -1 compare as int16, not as bytes.
  expect_values(make1({200, 0}, dtypes::uint8) > make1({-1, -1}, dtypes::int8), {2}, dtypes::bool_,
                {1, 1});
  expect_values(make1({4000000000.0}, dtypes::uint32) > make1({-1}, dtypes::int32), {1},
                dtypes::bool_, {1});
}

TEST_P(CoreTest, LogicalOps) {
  Tensor a = make1({1, 0, 1, 0}, dtypes::bool_), b = make1({1, 1, 0, 0}, dtypes::bool_);
  expect_values(a.logical_not(), {4}, dtypes::bool_, {0, 1, 0, 1});
  expect_values(a.logical_and(b), {4}, dtypes::bool_, {1, 0, 0, 0});
  expect_values(a.logical_or(b), {4}, dtypes::bool_, {1, 1, 1, 0});
  expect_values(make1({0, 3, -1}, dtypes::int32).logical_not(), {3}, dtypes::bool_, {1, 0, 0});
  expect_values(make1({0, 2.5, kNaN}, dtypes::float32).logical_not(), {3}, dtypes::bool_,
                {1, 0, 0});
}

TEST_P(CoreTest, BitwiseAndShiftsEveryIntDType) {
  // & | ^ ~ << >> (by a tensor and by a literal) in one kernel per dtype. >> of a negative is
  // arithmetic (floor), as in C++20 and PyTorch.
  for (DType d : kIntDTypes) {
    SCOPED_TRACE(d.name());
    const int nb = bits_of(d);
    const auto a = sample(d, 31, 15), b = sample(d, 31, 16);
    const auto s = testing::random_ints(31, 0, nb - 1, 17);
    Tensor ta = make1(a, d), tb = make1(b, d), ts = make1(s, d);
    Tensor r = rows({ta & tb, ta | tb, ta ^ tb, ~ta, ta << ts, ta >> ts, ta << 3, ta >> 2});
    auto w = [&](auto f) {
      return map2(a, b, [&](double x, double y) { return wrap(f(to_bits(x), to_bits(y)), d); });
    };
    auto shl = [&](double x, double sh) { return wrap(to_bits(x) << static_cast<int>(sh), d); };
    auto shr = [&](double x, double sh) {
      const int k = static_cast<int>(sh);
      return d.is_unsigned() ? wrap(to_bits(x) >> k, d)
                             : static_cast<double>(static_cast<int64_t>(to_bits(x)) >> k);
    };
    expect_values(r, {8, 31}, d,
                  concat({w(std::bit_and<>()), w(std::bit_or<>()), w(std::bit_xor<>()),
                          map1(a, [&](double x) { return wrap(~to_bits(x), d); }), map2(a, s, shl),
                          map2(a, s, shr), map1(a, [&](double x) { return shl(x, 3); }),
                          map1(a, [&](double x) { return shr(x, 2); })}));
  }
  Tensor p = make1({1, 1, 0, 0}, dtypes::bool_), q = make1({1, 0, 1, 0}, dtypes::bool_);
  expect_values(rows({p & q, p | q, p ^ q}), {3, 4}, dtypes::bool_,
                {1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0});
  expect_values(p.bitwise_and(q), {4}, dtypes::bool_, {1, 0, 0, 0});
  expect_values(make1({12}, dtypes::int32).bitwise_or(make1({3}, dtypes::int32)), {1},
                dtypes::int32, {15});
  expect_values(make1({12}, dtypes::int32).bitwise_xor(10).lshift(1).rshift(2), {1}, dtypes::int32,
                {3});
  expect_values(make1({0}, dtypes::uint16).bitwise_not(), {1}, dtypes::uint16, {65535});
}

// Per-dtype tolerances for transcendental results: float32 a few ulp plus 1e-6 absolute near
// zeros of sin/log2; half types a few ulp of their own.
struct Tol {
  double rtol, atol;
};
Tol unary_tol(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::float16:
      return {4e-3, 2e-3};
    case ScalarType::bfloat16:
      return {3e-2, 1.6e-2};
    case ScalarType::float64:
      return {1e-12, 1e-12};
    default:
      return {1e-5, 1e-6};
  }
}

TEST_P(CoreTest, UnaryMathEveryFloatDType) {
  for (DType d : kFloatDTypes) {
    SCOPED_TRACE(d.name());
    auto x = testing::random_values(129, -10, 10, 18);
    auto p = testing::random_values(129, 0.01, 100, 19);
    for (double& v : x) v = round_to(v, d);
    for (double& v : p) v = round_to(v, d);
    Tensor tx = make1(x, d), tp = make1(p, d);
    Tensor r = rows({tx.exp2(), tp.log2(), tx.sin(), tp.sqrt(), tx.reciprocal(), tx.trunc()});
    auto rd = [&](std::vector<double> v) {
      for (double& e : v) e = round_to(e, d);
      return v;
    };
    const Tol t = unary_tol(d);
    expect_values(r, {6, 129}, d,
                  concat({rd(map1(x, [](double v) { return std::exp2(v); })),
                          rd(map1(p, [](double v) { return std::log2(v); })),
                          rd(map1(x, [](double v) { return std::sin(v); })),
                          rd(map1(p, [](double v) { return std::sqrt(v); })),
                          rd(map1(x, [](double v) { return 1 / v; })),
                          map1(x, [](double v) { return std::trunc(v); })}),
                  t.rtol, t.atol);
  }
}

TEST_P(CoreTest, UnaryMathOfIntsIsFloat32) {
  Tensor x = make1({1, 4, 9, 16}, dtypes::int32);
  Tensor r = rows({x.sqrt(), x.exp2(), x.log2(), x.reciprocal(), x.sin()});
  EXPECT_EQ(x.sqrt().dtype().name(), "float32");
  std::vector<double> e;
  for (auto f : {+[](double v) { return std::sqrt(v); }, +[](double v) { return std::exp2(v); },
                 +[](double v) { return std::log2(v); }, +[](double v) { return 1 / v; },
                 +[](double v) { return std::sin(v); }})
    for (double v : {1, 4, 9, 16}) e.push_back(round_to(f(v), dtypes::float32));
  expect_values(r, {5, 4}, dtypes::float32, e, 1e-5, 1e-6);
  expect_values(make1({-3, 7}, dtypes::int8).trunc(), {2}, dtypes::int8, {-3, 7});
}

TEST_P(CoreTest, UnarySpecialValues) {
  const std::vector<double> v = {-1, 0, -0.0, kInf, -kInf, kNaN, 200, -200, -0.5};
  Tensor x = make1(v, dtypes::float32);
  Tensor r = rows({x.sqrt(), x.log2(), x.exp2(), x.reciprocal(), x.trunc(), x.sin()});
  expect_values(
      r, {6, 9}, dtypes::float32,
      concat(
          {{kNaN, 0, -0.0, kInf, kNaN, kNaN, round_to(std::sqrt(200.0), dtypes::float32), kNaN,
            kNaN},
           {kNaN, -kInf, -kInf, kInf, kNaN, kNaN, round_to(std::log2(200.0), dtypes::float32), kNaN,
            kNaN},
           {0.5, 1, 1, kInf, 0, kNaN, kInf, 0, round_to(std::exp2(-0.5), dtypes::float32)},
           {-1, kInf, -kInf, 0, -0.0, kNaN, round_to(1 / 200.0, dtypes::float32),
            round_to(-1 / 200.0, dtypes::float32), -2},
           {-1, 0, -0.0, kInf, -kInf, kNaN, 200, -200, -0.0},
           {round_to(std::sin(-1.0), dtypes::float32), 0, -0.0, kNaN, kNaN, kNaN,
            round_to(std::sin(200.0), dtypes::float32), round_to(std::sin(-200.0), dtypes::float32),
            round_to(std::sin(-0.5), dtypes::float32)}}),
      1e-5, 1e-6);
  // exp2 overflows float16 early.
  expect_values(make1({16, 20, -30}, dtypes::float16).exp2(), {3}, dtypes::float16,
                {kInf, kInf, round_to(std::exp2(-30.0), dtypes::float16)});
}

TEST_P(CoreTest, IntegerWraparound) {
  expect_values(make1({127}, dtypes::int8) + make1({1}, dtypes::int8), {1}, dtypes::int8, {-128});
  expect_values(make1({0}, dtypes::uint8) - make1({1}, dtypes::uint8), {1}, dtypes::uint8, {255});
  expect_values(make1({32767}, dtypes::int16) + 1, {1}, dtypes::int16, {-32768});
  expect_values(make1({INT32_MAX}, dtypes::int32) + 1, {1}, dtypes::int32, {INT32_MIN});
  expect_values(make1({0}, dtypes::uint32) - 1, {1}, dtypes::uint32, {4294967295.0});
  expect_values(make1({100}, dtypes::int8) * 3, {1}, dtypes::int8, {44});
  expect_values(make1({-128}, dtypes::int8).neg(), {1}, dtypes::int8, {-128});
  expect_values(make1({5}, dtypes::uint8).neg(), {1}, dtypes::uint8, {251});
  expect_values(make1({65535}, dtypes::uint16) * make1({65535}, dtypes::uint16), {1},
                dtypes::uint16, {1});
}

// ---- reductions -----------------------------------------------------------------------------

DType sum_dtype(DType d) {
  if (d.is_bool() || d == dtypes::int8 || d == dtypes::int16 || d == dtypes::int32)
    return dtypes::int32;
  if (d == dtypes::uint8 || d == dtypes::uint16 || d == dtypes::uint32) return dtypes::uint32;
  return d;
}

TEST_P(CoreTest, SumMaxProdEveryDType) {
  // (3, 7) reduced over axis 1. Result dtypes per API.md; values packed as float64, one kernel.
  const Shape s = {3, 7};
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(d.name());
    std::vector<double> x = sample(d, 21, 20);
    if (d.is_float())
      for (double& v : x) v = round_to(v / 4, d);  // |x| < 2: products stay in range
    Tensor t = make(x, s, d);
    Tensor sum = t.sum(1), mx = t.max(1), pr = t.prod(1);
    expect_dtype(sum, sum_dtype(d));
    expect_dtype(mx, d);
    expect_dtype(pr, d);
    EXPECT_EQ(sum.shape(), Shape{3});
    const std::vector<double> got = values_of(
        rows({sum.cast(dtypes::float64), mx.cast(dtypes::float64), pr.cast(dtypes::float64)}));
    std::vector<double> esum(3), emax(3, -kInf), eprod(3), abs_sum(3);
    for (int r = 0; r < 3; ++r) {
      uint64_t bs = 0, bp = 1;
      double fs = 0, fp = 1;
      for (int c = 0; c < 7; ++c) {
        const double v = x[r * 7 + c];
        bs += to_bits(v);
        bp *= to_bits(v);
        fs += v;
        fp *= v;
        abs_sum[r] += std::fabs(v);
        emax[r] = std::max(emax[r], v);
      }
      if (d.is_bool()) {
        esum[r] = fs;
        eprod[r] = fp;
      } else if (d.is_int()) {
        esum[r] = wrap(bs, sum_dtype(d));
        eprod[r] = wrap(bp, d);
      } else {
        esum[r] = round_to(fs, d);
        eprod[r] = round_to(fp, d);
      }
    }
    std::vector<double> g(got.begin(), got.begin() + 3);
    // Float sums: any summation order is within 7 * u * sum|x| of the exact sum, plus the final
    // rounding to the dtype; products: 7 roundings of u each.
    const double u = d.is_float() ? testing::default_rtol(d) : 0;
    std::vector<double> tol_sum(3);
    for (int r = 0; r < 3; ++r) tol_sum[r] = 7 * u * abs_sum[r];
    for (int r = 0; r < 3; ++r)
      expect_near({g[r]}, {esum[r]}, u, tol_sum[r], "sum row " + std::to_string(r));
    expect_near(std::vector<double>(got.begin() + 3, got.begin() + 6), emax, 0, 0, "max");
    expect_near(std::vector<double>(got.begin() + 6, got.begin() + 9), eprod, 7 * u, 0, "prod");
  }
}

TEST_P(CoreTest, SumWidensSmallInts) {
  expect_values(make1({100, 100, 100}, dtypes::int8).sum(), {}, dtypes::int32, {300});
  expect_values(make1({200, 200}, dtypes::uint8).sum(), {}, dtypes::uint32, {400});
  expect_values(make1({30000, 30000}, dtypes::int16).sum(), {}, dtypes::int32, {60000});
  expect_values(make1({60000, 60000}, dtypes::uint16).sum(), {}, dtypes::uint32, {120000});
  expect_values(make1({1, 1, 1, 0}, dtypes::bool_).sum(), {}, dtypes::int32, {3});
  expect_values(make1({std::ldexp(1.0, 40), std::ldexp(1.0, 40), 3}, dtypes::int64).sum(), {},
                dtypes::int64, {std::ldexp(1.0, 41) + 3});
  expect_values(make1({std::ldexp(1.0, 62), std::ldexp(1.0, 62)}, dtypes::uint64).sum(), {},
                dtypes::uint64, {std::ldexp(1.0, 63)});
  // float16 sums accumulate wider than float16: 2048 + 1 + 1 + ... stays exact.
  std::vector<double> h(9, 1.0);
  h[0] = 2048;
  expect_values(make1(h, dtypes::float16).sum(), {}, dtypes::float16, {2056});
  // prod keeps the dtype and wraps.
  expect_values(make1({2, 3, 50}, dtypes::int8).prod(), {}, dtypes::int8, {44});
  expect_values(make1({16, 16}, dtypes::uint8).prod(), {}, dtypes::uint8, {0});
}

TEST_P(CoreTest, ReductionOverloadsAndKeepdim) {
  const Shape s = {2, 3, 5};
  auto x = testing::random_values(30, 0.5, 1.5, 21);
  for (double& v : x) v = round_to(v, dtypes::float32);
  Tensor t = make(x, s, dtypes::float32);
  struct Call {
    std::string name;
    std::function<Tensor(const Tensor&)> f;
    std::vector<int> axes;
    bool keepdim;
  };
  using V = std::vector<int>;
  const std::vector<Call> sums = {
      {"sum()", [](const Tensor& a) { return a.sum(); }, {}, false},
      {"sum(0)", [](const Tensor& a) { return a.sum(0); }, {0}, false},
      {"sum(1)", [](const Tensor& a) { return a.sum(1); }, {1}, false},
      {"sum(2, true)", [](const Tensor& a) { return a.sum(2, true); }, {2}, true},
      {"sum(-1)", [](const Tensor& a) { return a.sum(-1); }, {2}, false},
      {"sum(-3, true)", [](const Tensor& a) { return a.sum(-3, true); }, {0}, true},
      {"sum({0, 2})",
       [](const Tensor& a) {
         return a.sum(V{0, 2});
       },
       {0, 2},
       false},
      {"sum({-1, 0}, true)",
       [](const Tensor& a) {
         return a.sum(V{-1, 0}, true);
       },
       {0, 2},
       true},
      {"sum({1}, true)", [](const Tensor& a) { return a.sum(V{1}, true); }, {1}, true},
      {"sum({})", [](const Tensor& a) { return a.sum(V{}); }, {}, false},
      {"sum({}, true)", [](const Tensor& a) { return a.sum(V{}, true); }, {}, true},
      {"sum({0, 1, 2})",
       [](const Tensor& a) {
         return a.sum(V{0, 1, 2});
       },
       {},
       false},
  };
  for (const Call& c : sums) {
    SCOPED_TRACE(c.name);
    Reduced r = ref_reduce(x, s, c.axes, c.keepdim, 0, std::plus<>());
    // 30 terms of at most 1.5: any order is within 30 * 2^-24 * 45.
    expect_values(c.f(t), r.shape, dtypes::float32, r.v, 2e-6, 30 * 6e-8 * 45);
  }
  auto mx = [](double a, double b) { return std::max(a, b); };
  const std::vector<std::pair<Call, bool>> others = {
      {{"max()", [](const Tensor& a) { return a.max(); }, {}, false}, true},
      {{"max(1)", [](const Tensor& a) { return a.max(1); }, {1}, false}, true},
      {{"max({0, 2}, true)",
        [](const Tensor& a) {
          return a.max(V{0, 2}, true);
        },
        {0, 2},
        true},
       true},
      {{"max({})", [](const Tensor& a) { return a.max(V{}); }, {}, false}, true},
      {{"max(-2, true)", [](const Tensor& a) { return a.max(-2, true); }, {1}, true}, true},
      {{"prod()", [](const Tensor& a) { return a.prod(); }, {}, false}, false},
      {{"prod(2)", [](const Tensor& a) { return a.prod(2); }, {2}, false}, false},
      {{"prod({0, 1}, true)",
        [](const Tensor& a) {
          return a.prod(V{0, 1}, true);
        },
        {0, 1},
        true},
       false},
      {{"prod({}, true)", [](const Tensor& a) { return a.prod(V{}, true); }, {}, true}, false},
  };
  for (const auto& [c, is_max] : others) {
    SCOPED_TRACE(c.name);
    Reduced r = is_max ? ref_reduce(x, s, c.axes, c.keepdim, -kInf, mx)
                       : ref_reduce(x, s, c.axes, c.keepdim, 1, std::multiplies<>());
    expect_values(c.f(t), r.shape, dtypes::float32, r.v, is_max ? 0 : 30 * 6e-8);
  }
}

// API.md: "an empty vector reduces all axes". Users write that as `{}`, which C++ overload
// resolution gives to f(int axis = 0) (an empty braced list converts to int by identity) unless
// the int overload cannot take it.
TEST_P(CoreTest, SumOfEmptyBracesReducesAllAxes) {
  Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::float32);
  expect_values(t.sum({}), {}, dtypes::float32, {21});
  expect_values(t.max({}, true), {1, 1}, dtypes::float32, {6});
}

TEST_P(CoreTest, ReductionsOfOddSizes) {
  for (int64_t n : {1, 3, 17, 257, 1023}) {
    SCOPED_TRACE(n);
    auto x = testing::random_values(n, -1, 1, 22 + n);
    for (double& v : x) v = round_to(v, dtypes::float32);
    Tensor t = make1(x, dtypes::float32);
    double s = 0, a = 0, m = -kInf;
    for (double v : x) s += v, a += std::fabs(v), m = std::max(m, v);
    // Any summation order is within n * 2^-24 * sum|x| of the exact sum.
    expect_values(t.sum(), {}, dtypes::float32, {s}, 0, static_cast<double>(n) * 6e-8 * a + 1e-7);
    expect_values(t.max(), {}, dtypes::float32, {m});
    auto iv = testing::random_ints(n, -1000, 1000, 23 + n);
    double is = 0;
    for (double v : iv) is += v;
    expect_values(make1(iv, dtypes::int32).sum(0), {}, dtypes::int32, {is});
  }
  auto p = testing::random_values(257, 0.95, 1.05, 24);
  for (double& v : p) v = round_to(v, dtypes::float32);
  double e = 1;
  for (double v : p) e *= v;
  expect_values(make1(p, dtypes::float32).prod(), {}, dtypes::float32, {e}, 257 * 6e-8);
}

TEST_P(CoreTest, MaxReductionNaNAndInf) {
  // A NaN anywhere in the reduced range gives NaN (as PyTorch).
  Tensor x = make({1, kNaN, 3, -kInf, -kInf, -kInf, 2, 5, kNaN}, {3, 3}, dtypes::float32);
  expect_values(x.max(1), {3}, dtypes::float32, {kNaN, -kInf, kNaN});
  expect_values(make1({-kInf, -kInf}, dtypes::float32).max(), {}, dtypes::float32, {-kInf});
  expect_values(make1({1, kInf}, dtypes::float32).sum(), {}, dtypes::float32, {kInf});
  expect_values(make1({kInf, -kInf}, dtypes::float32).sum(), {}, dtypes::float32, {kNaN});
  expect_values(make1({-5, -3, -100}, dtypes::int8).max(), {}, dtypes::int8, {-3});
  expect_values(make1({0, 0, 1}, dtypes::bool_).max(), {}, dtypes::bool_, {1});
}

// ---- printing -------------------------------------------------------------------------------

TEST_P(CoreTest, ToStringAndStream) {
  Tensor t = make1({1.5, -2, 3}, dtypes::float32);
  const std::string s = t.to_string();
  EXPECT_FALSE(s.empty());
  for (const char* part : {"1.5", "-2", "3", "float32"})
    EXPECT_NE(s.find(part), std::string::npos) << "\"" << s << "\" lacks " << part;
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), s);
  const std::string si = (make({7, -8, 9, 10}, {2, 2}, dtypes::int32) + 0).to_string();
  for (const char* part : {"7", "-8", "9", "10", "int32"})
    EXPECT_NE(si.find(part), std::string::npos) << "\"" << si << "\" lacks " << part;
  EXPECT_FALSE(Tensor::zeros({3, 0}, {}, dev()).to_string().empty());
  EXPECT_FALSE(Tensor::scalar(2, dtypes::int8, dev()).to_string().empty());
}

VKGRAD_ALL_DEVICES(CoreTest);

}  // namespace
}  // namespace vkgrad
