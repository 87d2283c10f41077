// tests/tensor: the core's ops on every device — creation, inspection, casts, elementwise math
// with weak scalars, promotion and broadcasting, and the sum/max/prod reductions — each against
// values computed in double precision (or exact integer arithmetic) in the test.
// Compiling a kernel costs ~50 ms, so small results are checked in batches (Batch: one kernel
// reads them all back as float64) and results of one dtype are stacked with rows(); a few tests
// keep one kernel per dtype so that every dtype is also stored by a kernel of its own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <source_location>
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
// One rounding of float32 (2^-24), for error bounds.
const double kU32 = 0x1p-24;

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
// (k, ...), add (logical_or for bool).
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

using testing::Batch;
using testing::expect_near;

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

// Reference reduction over `axes` ({} = all) of a row-major array; `op` folds from `init`.
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
  Tensor f = 1.5f;
  expect_dtype(f, dtypes::float32);
  Tensor i = 3;
  expect_dtype(i, dtypes::int32);
  EXPECT_TRUE(i.is_weak());
  Tensor l = int64_t{-5};
  EXPECT_TRUE(l.is_weak());
  EXPECT_TRUE(l.dtype().is_int()) << l.dtype().name();
  Tensor b = true;
  expect_dtype(b, dtypes::bool_);
  EXPECT_TRUE(b.is_weak());
  // Values, read through item() once (item of a literal needs no kernel of its own).
  EXPECT_EQ(d.item<float>(), 2.5f);
  EXPECT_EQ(f.item<float>(), 1.5f);
  EXPECT_EQ(i.item<int32_t>(), 3);
  EXPECT_EQ(values_of(l), std::vector<double>{-5});
  EXPECT_EQ(b.item<bool>(), true);
}

TEST_P(CoreTest, ScalarFactoryIsNotWeak) {
  Tensor s = Tensor::scalar(2.5, {}, dev());
  expect_dtype(s, dtypes::float32);
  EXPECT_FALSE(s.is_weak());
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.device(), dev());
  Batch b;
  b.add(s, {}, dtypes::float32, {2.5});
  b.add(Tensor::scalar(-3, dtypes::int8, dev()), {}, dtypes::int8, {-3});
  b.add(Tensor::scalar(0.1, dtypes::float64, dev()), {}, dtypes::float64, {0.1});
  // A non-weak int64 scalar wins promotion over int8 (it is a tensor, not a literal).
  b.add(make1({1, 2}, dtypes::int8) + Tensor::scalar(1 << 20, dtypes::int64, dev()), {2},
        dtypes::int64, {1 + (1 << 20), 2 + (1 << 20)});
  b.check();
  EXPECT_EQ(Tensor::scalar(1.0, dtypes::float16, dev()).item<uint16_t>(), 0x3c00);
  EXPECT_EQ(Tensor::scalar(-2.0, dtypes::bfloat16, dev()).item<uint16_t>(), 0xc000);
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

  Batch b;
  b.add(Tensor::zeros({2, 3}, {}, dev()), {2, 3}, dtypes::float32, {0, 0, 0, 0, 0, 0});
  b.add(Tensor::zeros({3}, dtypes::int8, dev()), {3}, dtypes::int8, {0, 0, 0});
  b.add(Tensor::ones({5}, {}, dev()), {5}, dtypes::float32, {1, 1, 1, 1, 1});
  b.add(Tensor::ones({2}, dtypes::float16, dev()), {2}, dtypes::float16, {1, 1});
  b.add(Tensor::ones({2}, dtypes::bool_, dev()), {2}, dtypes::bool_, {1, 1});
  b.add(Tensor::ones({1}, dtypes::uint64, dev()), {1}, dtypes::uint64, {1});
  b.add(Tensor::full({2, 2}, 7, {}, dev()), {2, 2}, dtypes::int32, {7, 7, 7, 7});
  b.add(Tensor::full({3}, 7.0, {}, dev()), {3}, dtypes::float32, {7, 7, 7});
  b.add(Tensor::full({2}, true, {}, dev()), {2}, dtypes::bool_, {1, 1});
  b.add(Tensor::full({2}, 2.5, dtypes::float16, dev()), {2}, dtypes::float16, {2.5, 2.5});
  b.add(Tensor::full({2}, -3, dtypes::int8, dev()), {2}, dtypes::int8, {-3, -3});
  b.add(Tensor::full({2}, int64_t{1} << 40, dtypes::int64, dev()), {2}, dtypes::int64,
        {std::ldexp(1.0, 40), std::ldexp(1.0, 40)});
  b.add(Tensor::full({}, 3, {}, dev()), {}, dtypes::int32, {3});
  b.add(Tensor::full({1, 3, 1}, 0.1, dtypes::float64, dev()), {1, 3, 1}, dtypes::float64,
        {0.1, 0.1, 0.1});
  b.check();
  // A fill realized on its own (not fused into anything else).
  expect_values(Tensor::full({3, 5}, 0.25, {}, dev()), {3, 5}, dtypes::float32,
                std::vector<double>(15, 0.25));
  EXPECT_EQ(Tensor::zeros({2}, {}, dev()).device(), dev());
}

TEST_P(CoreTest, LikeConstructorsKeepShapeDTypeDevice) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {3, 2}, dtypes::int8);
  Tensor h = make({1, 2}, {2}, dtypes::float16);
  EXPECT_EQ(x.zeros_like().device(), dev());
  Batch b;
  b.add(x.zeros_like(), {3, 2}, dtypes::int8, {0, 0, 0, 0, 0, 0});
  b.add(h.ones_like(), {2}, dtypes::float16, {1, 1});
  b.add(h.full_like(2.5), {2}, dtypes::float16, {2.5, 2.5});
  b.add(make({1, 2, 3}, {3}, dtypes::int32).full_like(3.0), {3}, dtypes::int32, {3, 3, 3});
  b.add(make({1, 2, 3}, {3}, dtypes::float32).full_like(-0.25), {3}, dtypes::float32,
        {-0.25, -0.25, -0.25});
  b.add(make({1, 2}, {2}, dtypes::float64).full_like(0.1), {2}, dtypes::float64, {0.1, 0.1});
  b.check();
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

TEST_P(CoreTest, SizeZeroElementwise) {
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
  expect_values(b.sum(0), {0}, dtypes::float32, {});
}

// Reducing over an empty axis gives the reduction's identity, as NumPy, PyTorch and tinygrad.
TEST_P(CoreTest, SizeZeroReductionsGiveTheIdentity) {
  Tensor a = make({}, {0}, dtypes::float32);
  Tensor b = Tensor::zeros({3, 0}, {}, dev());
  expect_values(a.sum(), {}, dtypes::float32, {0});
  expect_values(make({}, {0}, dtypes::int32).sum(), {}, dtypes::int32, {0});
  expect_values(b.sum(1), {3}, dtypes::float32, {0, 0, 0});
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
  // 13 x 13 casts, checked through float64 in one batch. Float sources stay in [0, 127] so that
  // float -> any int is defined in C; negative floats are CastFloatToIntTruncatesTowardZero's.
  Batch batch;
  for (DType from : kAllDTypes) {
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
    for (DType to : kAllDTypes) {
      batch.context = from.name() + " -> " + to.name();
      batch.add(x.cast(to), {static_cast<int64_t>(v.size())}, to,
                map1(v, [&](double e) { return cast_ref(e, from, to); }));
    }
  }
  batch.check();
}

TEST_P(CoreTest, CastsStoredByTheirOwnKernels) {
  // Casts whose result is stored in its own dtype (not read through float64).
  const std::vector<double> v = {0, 1, 2.7, 100.5, 127, 64.25};
  Tensor x = make1(v, dtypes::float32);
  for (DType to : {dtypes::int8, dtypes::uint16, dtypes::float16, dtypes::bfloat16}) {
    SCOPED_TRACE(to.name());
    expect_values(x.cast(to), {6}, to,
                  map1(v, [&](double e) { return cast_ref(e, dtypes::float32, to); }));
  }
}

TEST_P(CoreTest, CastSemantics) {
  Batch b;
  // float -> int truncates toward zero.
  Tensor x = make1({2.7, -2.7, 0.5, -0.5, 100.99, -100.99, -0.0, 7}, dtypes::float32);
  b.add(x.cast(dtypes::int32), {8}, dtypes::int32, {2, -2, 0, 0, 100, -100, 0, 7});
  b.add(x.cast(dtypes::int8), {8}, dtypes::int8, {2, -2, 0, 0, 100, -100, 0, 7});
  b.add(x.cast(dtypes::int64), {8}, dtypes::int64, {2, -2, 0, 0, 100, -100, 0, 7});
  b.add(make1({-2.5, 3.75}, dtypes::float16).cast(dtypes::int16), {2}, dtypes::int16, {-2, 3});
  b.add(make1({3e9, 255.9}, dtypes::float64).cast(dtypes::uint32), {2}, dtypes::uint32, {3e9, 255});
  // Integers wrap.
  Tensor w = make1({300, -1, 128, 255, 256, -129, 65537}, dtypes::int32);
  b.add(w.cast(dtypes::int8), {7}, dtypes::int8, {44, -1, -128, -1, 0, 127, 1});
  b.add(w.cast(dtypes::uint8), {7}, dtypes::uint8, {44, 255, 128, 255, 0, 127, 1});
  b.add(w.cast(dtypes::uint16), {7}, dtypes::uint16, {300, 65535, 128, 255, 256, 65407, 1});
  b.add(make1({4294967301.0, -4294967296.0}, dtypes::int64).cast(dtypes::int32), {2}, dtypes::int32,
        {5, 0});
  b.add(make1({-2}, dtypes::int8).cast(dtypes::uint64), {1}, dtypes::uint64,
        {18446744073709551614.0});
  // Any nonzero value is true, including NaN and ints whose low byte is zero.
  b.add(make1({0, -0.0, 0.5, -3, kNaN, kInf}, dtypes::float32).cast(dtypes::bool_), {6},
        dtypes::bool_, {0, 0, 1, 1, 1, 1});
  b.add(make1({0, 256, -1, 65536}, dtypes::int32).cast(dtypes::bool_), {4}, dtypes::bool_,
        {0, 1, 1, 1});
  Tensor t = make1({1, 0, 1}, dtypes::bool_);
  b.add(t.cast(dtypes::int32), {3}, dtypes::int32, {1, 0, 1});
  b.add(t.cast(dtypes::float16), {3}, dtypes::float16, {1, 0, 1});
  // Float specials and rounding: to float16/bfloat16 round to nearest even, overflow to inf.
  const std::vector<double> s = {kNaN, kInf, -kInf, 1e6, 65504, 65520, 1e-8, -0.0, 1.0 / 3};
  Tensor fs = make1(s, dtypes::float32);
  for (DType to : {dtypes::float16, dtypes::bfloat16, dtypes::float64})
    b.add(fs.cast(to), {9}, to,
          map1(s, [&](double a) { return round_to(round_to(a, dtypes::float32), to); }));
  b.add(make1({0.1, 1e40, -1e-50}, dtypes::float64).cast(dtypes::float32), {3}, dtypes::float32,
        {round_to(0.1, dtypes::float32), kInf, -0.0});
  b.add(make1({0.333251953125}, dtypes::float16).cast(dtypes::float32), {1}, dtypes::float32,
        {0.333251953125});
  b.check();
}

TEST_P(CoreTest, Bitcast) {
  Tensor x = make1({1.0, -2.0, 0.0, kInf}, dtypes::float32);
  // Stored as int32 by a kernel of its own, then the rest in one batch.
  expect_values(x.bitcast(dtypes::int32), {4}, dtypes::int32,
                {1065353216, -1073741824, 0, 2139095040});
  Batch b;
  b.add(x.bitcast(dtypes::uint32), {4}, dtypes::uint32, {1065353216, 3221225472.0, 0, 2139095040});
  b.add(make1({1065353216, -1073741824}, dtypes::int32).bitcast(dtypes::float32), {2},
        dtypes::float32, {1.0, -2.0});
  b.add(make1({3212836864.0}, dtypes::uint32).bitcast(dtypes::float32), {1}, dtypes::float32,
        {-1.0});
  // Of a computed value, and round trip.
  b.add((x * 2.0).bitcast(dtypes::int32), {4}, dtypes::int32,
        {1073741824, -1065353216, 0, 2139095040});
  b.add(x.bitcast(dtypes::int32).bitcast(dtypes::float32), {4}, dtypes::float32,
        {1.0, -2.0, 0.0, kInf});
  b.add(make1({1.0, -2.0}, dtypes::float16).bitcast(dtypes::uint16), {2}, dtypes::uint16,
        {0x3c00, 0xc000});
  b.check();
}

TEST_P(CoreTest, ContiguousCloneDetach) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::float32);
  expect_values(x.permute({1, 0}).contiguous(), {3, 2}, dtypes::float32, {1, 4, 2, 5, 3, 6});
  Tensor c = x.clone();
  EXPECT_NE(c.impl().get(), x.impl().get());
  EXPECT_EQ(c.device(), dev());
  expect_dtype(make1({1, 2}, dtypes::uint8).contiguous(), dtypes::uint8);
  Batch b;
  b.add(x.contiguous(), {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  b.add(c, {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  b.add((x + 1.0).clone(), {2, 3}, dtypes::float32, {2, 3, 4, 5, 6, 7});
  b.add(x.detach(), {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  b.add((x * 2.0).detach() + 1.0, {2, 3}, dtypes::float32, {3, 5, 7, 9, 11, 13});
  b.check();
}

// ---- elementwise ----------------------------------------------------------------------------

TEST_P(CoreTest, ArithmeticEveryDType) {
  // add sub mul maximum minimum neg on 257 elements, one kernel per dtype storing that dtype.
  // Integers wrap (reference in 64-bit two's complement); float results are exactly rounded
  // (double has more than twice the bits of every float dtype).
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

TEST_P(CoreTest, OddSizes) {
  // a * b + 1 and a sum, each size its own kernels (sizes are not batched together).
  for (int64_t n : {1, 3, 17, 257, 1023}) {
    SCOPED_TRACE(n);
    const auto a = sample(dtypes::float32, n, 5), b = sample(dtypes::float32, n, 6);
    expect_values(make1(a, dtypes::float32) * make1(b, dtypes::float32) + 1.0, {n}, dtypes::float32,
                  map2(a, b, [](double x, double y) {
                    return round_to(round_to(x * y, dtypes::float32) + 1, dtypes::float32);
                  }));
    double s = 0, abs_sum = 0;
    for (double v : a) s += v, abs_sum += std::fabs(v);
    // Any summation order is within (n - 1) * u * sum|x| of the exact sum.
    expect_values(make1(a, dtypes::float32).sum(), {}, dtypes::float32, {s}, kU32,
                  static_cast<double>(n) * kU32 * abs_sum);
  }
}

TEST_P(CoreTest, CompoundAssignmentKeepsValueSemantics) {
  Tensor a = make1({1, 2, 3}, dtypes::float32);
  Tensor keep = a;
  a += make1({10, 20, 30}, dtypes::float32);
  a *= 2.0;
  a -= 1.0;
  a /= 4.0;
  Batch b;
  b.add(a, {3}, dtypes::float32, {21.0 / 4, 43.0 / 4, 65.0 / 4});
  b.add(keep, {3}, dtypes::float32, {1, 2, 3});
  b.check();
}

TEST_P(CoreTest, TrueDivision) {
  Batch batch;
  // Every integer dtype divides into float32 (int / int is true division). x / y may be
  // computed as x * (1 / y): allow 3 float32 ulp.
  for (DType d : kIntDTypes) {
    batch.context = d.name();
    const auto a = sample(d, 17, 7);
    auto b = sample(d, 17, 8);
    for (double& y : b)
      if (y == 0) y = 3;
    batch.add(make1(a, d) / make1(b, d), {17}, dtypes::float32,
              map2(a, b,
                   [](double x, double y) {
                     return round_to(round_to(x, dtypes::float32) / round_to(y, dtypes::float32),
                                     dtypes::float32);
                   }),
              3 * 2 * kU32);
  }
  batch.context.clear();
  batch.add(make1({7, -7, 1, 10}, dtypes::int32) / make1({2, 2, 3, -4}, dtypes::int32), {4},
            dtypes::float32, {3.5, -3.5, round_to(1.0 / 3, dtypes::float32), -2.5}, 6 * kU32);
  batch.add(make1({1, 0}, dtypes::bool_) / make1({1, 1}, dtypes::bool_), {2}, dtypes::float32,
            {1, 0});
  batch.add(make1({7, 9}, dtypes::uint8) / 2, {2}, dtypes::float32, {3.5, 4.5});
  batch.add(3 / make1({2, 4}, dtypes::int32), {2}, dtypes::float32, {1.5, 0.75});
  // Floats keep their dtype.
  for (DType d : kFloatDTypes) {
    batch.context = d.name();
    const auto a = sample(d, 33, 9);
    auto b = sample(d, 33, 10);
    for (double& y : b)
      if (std::fabs(y) < 0.25) y = 0.5;
    batch.add(make1(a, d).div(make1(b, d)), {33}, d,
              map2(a, b, [&](double x, double y) { return round_to(x / y, d); }),
              testing::default_rtol(d));
  }
  batch.check();
  // One quotient stored by its own kernel.
  expect_values(make1({1, 2, 3}, dtypes::int16) / make1({4, 4, 4}, dtypes::int16), {3},
                dtypes::float32, {0.25, 0.5, 0.75});
}

TEST_P(CoreTest, DivisionRoundingModesAndMod) {
  Tensor a = make1({7, -7, 7, -7, 6, 0}, dtypes::int32);
  Tensor b = make1({2, 2, -2, -2, 3, 5}, dtypes::int32);
  Batch batch;
  batch.add(a.div(b, "trunc"), {6}, dtypes::int32, {3, -3, -3, 3, 2, 0});
  batch.add(a.div(b, "floor"), {6}, dtypes::int32, {3, -4, -4, 3, 2, 0});
  batch.add(a.mod(b), {6}, dtypes::int32, {1, 1, -1, -1, 0, 0});
  batch.add(a.div(b, ""), {6}, dtypes::float32, {3.5, -3.5, -3.5, 3.5, 2, 0}, 6 * kU32);
  batch.check();
}

TEST_P(CoreTest, DivisionByZeroAndNaN) {
  Batch batch;
  Tensor a = make1({1, -1, 0, kInf, kNaN, 5}, dtypes::float32);
  Tensor b = make1({0, 0, 0, kInf, 1, -kInf}, dtypes::float32);
  batch.add(a / b, {6}, dtypes::float32, {kInf, -kInf, kNaN, kNaN, kNaN, -0.0});
  batch.add(make1({1, 0}, dtypes::float16) / make1({0, 0}, dtypes::float16), {2}, dtypes::float16,
            {kInf, kNaN});
  batch.add(make1({1}, dtypes::int32) / make1({0}, dtypes::int32), {1}, dtypes::float32, {kInf});
  batch.check();
}

TEST_P(CoreTest, WeakScalarPromotion) {
  Batch b;
  Tensor i32 = make1({1, -2, 3}, dtypes::int32);
  b.add(i32 + 3, {3}, dtypes::int32, {4, 1, 6});
  b.add(3 + i32, {3}, dtypes::int32, {4, 1, 6});
  b.add(i32 * 2.5, {3}, dtypes::float32, {2.5, -5, 7.5});
  b.add(2.5 * i32, {3}, dtypes::float32, {2.5, -5, 7.5});
  b.add(make1({10, 255, 0}, dtypes::uint8) + 1, {3}, dtypes::uint8, {11, 0, 1});
  b.add(make1({0, 5}, dtypes::uint8) - 1, {2}, dtypes::uint8, {255, 4});
  b.add(make1({127, -128}, dtypes::int8) + 1, {2}, dtypes::int8, {-128, -127});
  b.add(make1({1, 2}, dtypes::int8) * 2.5, {2}, dtypes::float32, {2.5, 5});
  b.add(make1({1.5, -3}, dtypes::float16) * 2.0, {2}, dtypes::float16, {3, -6});
  b.add(make1({1.5, -3}, dtypes::bfloat16) * 2.0, {2}, dtypes::bfloat16, {3, -6});
  b.add(make1({1.5, -3}, dtypes::float16) + 1, {2}, dtypes::float16, {2.5, -2});
  b.add(make1({2.5}, dtypes::float32) + 1.5f, {1}, dtypes::float32, {4});
  // A literal adopting float64 or int64 keeps its full value (not rounded through float32/int32).
  b.add(make1({0.1}, dtypes::float64) + 0.2, {1}, dtypes::float64, {0.1 + 0.2});
  b.add(make1({1, 2}, dtypes::int64) + (int64_t{1} << 40), {2}, dtypes::int64,
        {std::ldexp(1.0, 40) + 1, std::ldexp(1.0, 40) + 2});
  // bool with an int literal is int32 (tinygrad: the literal's dtype joins with bool); with a
  // float literal float32; a bool literal leaves an integer tensor's dtype alone.
  Tensor t = make1({1, 0}, dtypes::bool_);
  b.add(t + 1, {2}, dtypes::int32, {2, 1});
  b.add(t * 1.5, {2}, dtypes::float32, {1.5, 0});
  b.add(make1({7, 200}, dtypes::uint8) + true, {2}, dtypes::uint8, {8, 201});
  // Shifts and comparisons with literals.
  b.add(make1({1, 3, -1}, dtypes::int8) << 3, {3}, dtypes::int8, {8, 24, -8});
  b.add(make1({1, 32}, dtypes::uint8) << 3, {2}, dtypes::uint8, {8, 0});
  b.add(make1({1, 5, -3}, dtypes::int8) < 3, {3}, dtypes::bool_, {1, 0, 1});
  b.add(make1({0.25, 1}, dtypes::float16) > 0.5, {2}, dtypes::bool_, {0, 1});
  b.check();
  // Weak literals are created on the default device but follow the tensor's.
  EXPECT_EQ((i32 + 3).device(), dev());
  EXPECT_EQ((2.5 * i32).device(), dev());
}

TEST_P(CoreTest, MixedDTypePromotionFollowsTheLattice) {
  // Result dtypes only (nothing runs): every pair joins as least_upper_dtype says.
  for (DType a : kAllDTypes)
    for (DType b : kAllDTypes) {
      Tensor x = Tensor::zeros({2}, a, dev()), y = Tensor::zeros({2}, b, dev());
      EXPECT_EQ((x * y).dtype().name(), dtypes::least_upper_dtype(a, b).name())
          << a.name() << " * " << b.name();
      EXPECT_EQ(x.maximum(y).dtype().name(), dtypes::least_upper_dtype(a, b).name())
          << "maximum(" << a.name() << ", " << b.name() << ")";
    }
  Batch batch;
  batch.add(make1({-3, 100}, dtypes::int8) + make1({200, 100}, dtypes::uint8), {2}, dtypes::int16,
            {197, 200});
  batch.add(make1({3, -5}, dtypes::int32) + make1({0.5, 0.25}, dtypes::float16), {2},
            dtypes::float16, {3.5, -4.75});
  batch.add(make1({4000000000.0}, dtypes::uint32) - make1({-5}, dtypes::int32), {1}, dtypes::int64,
            {4000000005.0});
  batch.add(make1({1.5}, dtypes::float16) * make1({2}, dtypes::bfloat16), {1}, dtypes::float32,
            {3});
  batch.add(make1({1, 0}, dtypes::bool_) + make1({-3, 4}, dtypes::int8), {2}, dtypes::int8,
            {-2, 4});
  batch.add(make1({0.1}, dtypes::float32) + make1({0.2}, dtypes::float64), {1}, dtypes::float64,
            {round_to(0.1, dtypes::float32) + 0.2});
  batch.check();
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
  Batch batch;
  for (const Case& c : cases) {
    batch.context = ::testing::PrintToString(c.a) + " with " + ::testing::PrintToString(c.b);
    const auto a = random_values(numel_of(c.a), -4, 4, 11),
               b = random_values(numel_of(c.b), -4, 4, 12);
    const auto af = map1(a, [](double x) { return round_to(x, dtypes::float32); });
    const auto bf = map1(b, [](double x) { return round_to(x, dtypes::float32); });
    Tensor ta = make(af, c.a, dtypes::float32), tb = make(bf, c.b, dtypes::float32);
    batch.add(ta + tb, c.out, dtypes::float32,
              ref_broadcast(af, c.a, bf, c.b, c.out,
                            [](double x, double y) { return round_to(x + y, dtypes::float32); }));
    batch.add(
        tb.maximum(ta), c.out, dtypes::float32,
        ref_broadcast(af, c.a, bf, c.b, c.out, [](double x, double y) { return std::max(x, y); }));
  }
  // Broadcasting and promotion together: int8 (3,1) * float16 (4,).
  batch.context.clear();
  batch.add(make({1, 2, 3}, {3, 1}, dtypes::int8) * make({0.5, 1, 2, -1}, {4}, dtypes::float16),
            {3, 4}, dtypes::float16, {0.5, 1, 2, -1, 1, 2, 4, -2, 1.5, 3, 6, -3});
  batch.check();
  // (2,1,5) + (4,1) stored by a kernel of its own.
  const auto a = sample(dtypes::float32, 10, 13), b = sample(dtypes::float32, 4, 14);
  expect_values(make(a, {2, 1, 5}, dtypes::float32) * make(b, {4, 1}, dtypes::float32), {2, 4, 5},
                dtypes::float32,
                ref_broadcast(a, {2, 1, 5}, b, {4, 1}, {2, 4, 5},
                              [](double x, double y) { return round_to(x * y, dtypes::float32); }));
}

TEST_P(CoreTest, MaximumMinimumPropagateNaNAndHandleInf) {
  // As PyTorch's maximum/minimum (and IEEE 754-2019 maximum): a NaN on either side gives NaN.
  Tensor a = make1({1, kNaN, -kInf, 2, kNaN, -0.5}, dtypes::float32);
  Tensor b = make1({kNaN, 3, 5, kInf, kNaN, -0.25}, dtypes::float32);
  Batch batch;
  batch.add(a.maximum(b), {6}, dtypes::float32, {kNaN, kNaN, 5, kInf, kNaN, -0.25});
  batch.add(a.minimum(b), {6}, dtypes::float32, {kNaN, kNaN, -kInf, 2, kNaN, -0.5});
  batch.add(make1({-kInf, 1}, dtypes::float16).maximum(0), {2}, dtypes::float16, {0, 1});
  batch.check();
}

TEST_P(CoreTest, WhereFreeAndMember) {
  Tensor c = make1({1, 0, 1, 0}, dtypes::bool_);
  Tensor a = make1({1, 2, 3, 4}, dtypes::float32), b = make1({-1, -2, -3, -4}, dtypes::float32);
  Batch batch;
  batch.add(where(c, a, b), {4}, dtypes::float32, {1, -2, 3, -4});
  batch.add(c.where(a, b), {4}, dtypes::float32, {1, -2, 3, -4});
  // Broadcast condition and branches; literals on either side.
  Tensor c2 = make({1, 0, 1}, {3, 1}, dtypes::bool_);
  batch.add(where(c2, make1({1, 2, 3, 4}, dtypes::float32), 0.5), {3, 4}, dtypes::float32,
            {1, 2, 3, 4, 0.5, 0.5, 0.5, 0.5, 1, 2, 3, 4});
  batch.add(c2.where(7, make1({1, 2}, dtypes::int8)), {3, 2}, dtypes::int8, {7, 7, 1, 2, 7, 7});
  // Promotion across branches.
  batch.add(
      where(c, make1({1, 2, 3, 4}, dtypes::int32), make1({0.5, 0.5, 0.5, 0.5}, dtypes::float16)),
      {4}, dtypes::float16, {1, 0.5, 3, 0.5});
  // A condition computed from a comparison; NaN in the unselected branch does not leak.
  Tensor x = make1({-1, 4, kNaN, 9}, dtypes::float32);
  batch.add((x > 0).where(x.sqrt(), 0.0), {4}, dtypes::float32, {0, 2, 0, 3});
  batch.check();
}

TEST_P(CoreTest, ComparisonsEveryDType) {
  // < <= > >= == != for every dtype; a third of b equals a. Each dtype's results are stacked
  // with rows() (bool), and all dtypes checked in one batch.
  Batch batch;
  for (DType d : kAllDTypes) {
    batch.context = d.name();
    const auto a = sample(d, 33, 13);
    auto b = sample(d, 33, 14);
    for (size_t i = 0; i < b.size(); i += 3) b[i] = a[i];
    Tensor ta = make1(a, d), tb = make1(b, d);
    auto cmp = [&](auto op) {
      return map2(a, b, [&](double x, double y) { return op(x, y) ? 1.0 : 0.0; });
    };
    batch.add(
        rows({ta<tb, ta <= tb, ta> tb, ta >= tb, ta == tb, ta != tb}), {6, 33}, dtypes::bool_,
        concat({cmp(std::less<>()), cmp(std::less_equal<>()), cmp(std::greater<>()),
                cmp(std::greater_equal<>()), cmp(std::equal_to<>()), cmp(std::not_equal_to<>())}));
  }
  batch.check();
}

TEST_P(CoreTest, ComparisonMethodsNaNAndMixedSigns) {
  // IEEE comparisons: every ordered comparison with NaN is false, != is true.
  Tensor a = make1({1, kNaN, kNaN, -kInf, 2}, dtypes::float32);
  Tensor b = make1({kNaN, 1, kNaN, -kInf, 2}, dtypes::float32);
  expect_values(rows({a.lt(b), a.le(b), a.gt(b), a.ge(b), a.eq(b), a.ne(b)}), {6, 5}, dtypes::bool_,
                {0, 0, 0, 0, 0,  //
                 0, 0, 0, 1, 1,  //
                 0, 0, 0, 0, 0,  //
                 0, 0, 0, 1, 1,  //
                 0, 0, 0, 1, 1,  //
                 1, 1, 1, 0, 0});
  Batch batch;
  // uint8 200 vs int8 -1 compare as int16, not as bytes; uint32 vs int32 as int64.
  batch.add(make1({200, 0}, dtypes::uint8) > make1({-1, -1}, dtypes::int8), {2}, dtypes::bool_,
            {1, 1});
  batch.add(make1({4000000000.0}, dtypes::uint32) > make1({-1}, dtypes::int32), {1}, dtypes::bool_,
            {1});
  batch.check();
}

TEST_P(CoreTest, LogicalOps) {
  Tensor a = make1({1, 0, 1, 0}, dtypes::bool_), b = make1({1, 1, 0, 0}, dtypes::bool_);
  Batch batch;
  batch.add(a.logical_not(), {4}, dtypes::bool_, {0, 1, 0, 1});
  batch.add(a.logical_and(b), {4}, dtypes::bool_, {1, 0, 0, 0});
  batch.add(a.logical_or(b), {4}, dtypes::bool_, {1, 1, 1, 0});
  batch.add(make1({0, 3, -1}, dtypes::int32).logical_not(), {3}, dtypes::bool_, {1, 0, 0});
  batch.add(make1({0, 2.5, kNaN}, dtypes::float32).logical_not(), {3}, dtypes::bool_, {1, 0, 0});
  batch.check();
}

TEST_P(CoreTest, BitwiseAndShiftsEveryIntDType) {
  // & | ^ ~ << >> (by a tensor and by a literal) for every integer dtype, all in one batch. >> of
  // a negative is arithmetic (floor), as in C++20 and PyTorch.
  Batch batch;
  for (DType d : kIntDTypes) {
    batch.context = d.name();
    const int nb = bits_of(d);
    const auto a = sample(d, 31, 15), b = sample(d, 31, 16);
    const auto s = testing::random_ints(31, 0, nb - 1, 17);
    Tensor ta = make1(a, d), tb = make1(b, d), ts = make1(s, d);
    auto w = [&](auto f) {
      return map2(a, b, [&](double x, double y) { return wrap(f(to_bits(x), to_bits(y)), d); });
    };
    auto shl = [&](double x, double sh) { return wrap(to_bits(x) << static_cast<int>(sh), d); };
    auto shr = [&](double x, double sh) {
      const int k = static_cast<int>(sh);
      return d.is_unsigned() ? wrap(to_bits(x) >> k, d)
                             : static_cast<double>(static_cast<int64_t>(to_bits(x)) >> k);
    };
    batch.add(rows({ta & tb, ta | tb, ta ^ tb, ~ta, ta << ts, ta >> ts, ta << 3, ta >> 2}), {8, 31},
              d,
              concat({w(std::bit_and<>()), w(std::bit_or<>()), w(std::bit_xor<>()),
                      map1(a, [&](double x) { return wrap(~to_bits(x), d); }), map2(a, s, shl),
                      map2(a, s, shr), map1(a, [&](double x) { return shl(x, 3); }),
                      map1(a, [&](double x) { return shr(x, 2); })}));
  }
  batch.context.clear();
  Tensor p = make1({1, 1, 0, 0}, dtypes::bool_), q = make1({1, 0, 1, 0}, dtypes::bool_);
  batch.add(rows({p & q, p | q, p ^ q}), {3, 4}, dtypes::bool_,
            {1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0});
  batch.add(p.bitwise_and(q), {4}, dtypes::bool_, {1, 0, 0, 0});
  batch.add(make1({12}, dtypes::int32).bitwise_or(make1({3}, dtypes::int32)), {1}, dtypes::int32,
            {15});
  batch.add(make1({12}, dtypes::int32).bitwise_xor(10).lshift(1).rshift(2), {1}, dtypes::int32,
            {3});
  batch.add(make1({0}, dtypes::uint16).bitwise_not(), {1}, dtypes::uint16, {65535});
  batch.check();
  // uint8 results stored by a kernel of their own.
  expect_values(make1({0xF0, 0x0F}, dtypes::uint8) ^ make1({0xFF, 0xFF}, dtypes::uint8), {2},
                dtypes::uint8, {0x0F, 0xF0});
}

// Tolerances for transcendental results: float32 a few ulp plus 1e-6 absolute near the zeros of
// sin and log2; the half types a few ulp of their own; float64 1e-12.
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
  // exp2 log2 sin sqrt reciprocal trunc, one kernel per float dtype storing that dtype.
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

TEST_P(CoreTest, UnaryMathOfIntsIsFloat32AndSpecialValues) {
  Batch batch;
  // Integer inputs to float math give float32 (tinygrad's least_upper_float).
  Tensor x = make1({1, 4, 9, 16}, dtypes::int32);
  std::vector<double> e;
  for (auto f : {+[](double v) { return std::sqrt(v); }, +[](double v) { return std::exp2(v); },
                 +[](double v) { return std::log2(v); }, +[](double v) { return 1 / v; },
                 +[](double v) { return std::sin(v); }})
    for (double v : {1, 4, 9, 16}) e.push_back(round_to(f(v), dtypes::float32));
  batch.add(rows({x.sqrt(), x.exp2(), x.log2(), x.reciprocal(), x.sin()}), {5, 4}, dtypes::float32,
            e, 1e-5, 1e-6);
  batch.add(make1({-3, 7}, dtypes::int8).trunc(), {2}, dtypes::int8, {-3, 7});
  // NaN, Inf, signed zero and overflow.
  const std::vector<double> v = {-1, 0, -0.0, kInf, -kInf, kNaN, 200, -200, -0.5};
  Tensor s = make1(v, dtypes::float32);
  auto f32 = [](double a) { return round_to(a, dtypes::float32); };
  batch.add(rows({s.sqrt(), s.log2(), s.exp2(), s.reciprocal(), s.trunc(), s.sin()}), {6, 9},
            dtypes::float32,
            concat({{kNaN, 0, -0.0, kInf, kNaN, kNaN, f32(std::sqrt(200.0)), kNaN, kNaN},
                    {kNaN, -kInf, -kInf, kInf, kNaN, kNaN, f32(std::log2(200.0)), kNaN, kNaN},
                    {0.5, 1, 1, kInf, 0, kNaN, kInf, 0, f32(std::exp2(-0.5))},
                    {-1, kInf, -kInf, 0, -0.0, kNaN, f32(1 / 200.0), f32(-1 / 200.0), -2},
                    {-1, 0, -0.0, kInf, -kInf, kNaN, 200, -200, -0.0},
                    {f32(std::sin(-1.0)), 0, -0.0, kNaN, kNaN, kNaN, f32(std::sin(200.0)),
                     f32(std::sin(-200.0)), f32(std::sin(-0.5))}}),
            1e-5, 1e-6);
  // exp2 overflows float16 early.
  batch.add(make1({16, 20, -30}, dtypes::float16).exp2(), {3}, dtypes::float16,
            {kInf, kInf, round_to(std::exp2(-30.0), dtypes::float16)});
  batch.check();
}

// A float16/bfloat16 result widened by a cast is the float16/bfloat16 value, not the float32
// value it was computed from: the rounding to the narrow dtype happens even when nothing stores it.
TEST_P(CoreTest, HalfResultsRoundBeforeAWideningCast) {
  Tensor h = make1({2048, 16, -30, 0.1}, dtypes::float16);
  Tensor one = make1({1, 1, 1, 1}, dtypes::float16);
  // 2048 + 1 = 2049 rounds to 2048 in float16; exp2(16) overflows it; exp2(-30) underflows it.
  expect_values((h + one).cast(dtypes::float32), {4}, dtypes::float32,
                {2048, 17, -29, round_to(round_to(0.1, dtypes::float16) + 1, dtypes::float16)});
  expect_values(
      h.exp2().cast(dtypes::float32), {4}, dtypes::float32,
      {kInf, kInf, 0, round_to(std::exp2(round_to(0.1, dtypes::float16)), dtypes::float16)}, 2e-3);
  // bfloat16: 256 + 1 rounds to 256.
  expect_values((make1({256}, dtypes::bfloat16) + 1).cast(dtypes::float64), {1}, dtypes::float64,
                {256});
}

TEST_P(CoreTest, IntegerWraparound) {
  Batch b;
  b.add(make1({127}, dtypes::int8) + make1({1}, dtypes::int8), {1}, dtypes::int8, {-128});
  b.add(make1({0}, dtypes::uint8) - make1({1}, dtypes::uint8), {1}, dtypes::uint8, {255});
  b.add(make1({32767}, dtypes::int16) + 1, {1}, dtypes::int16, {-32768});
  b.add(make1({INT32_MAX}, dtypes::int32) + 1, {1}, dtypes::int32, {INT32_MIN});
  b.add(make1({0}, dtypes::uint32) - 1, {1}, dtypes::uint32, {4294967295.0});
  b.add(make1({100}, dtypes::int8) * 3, {1}, dtypes::int8, {44});
  b.add(make1({-128}, dtypes::int8).neg(), {1}, dtypes::int8, {-128});
  b.add(make1({5}, dtypes::uint8).neg(), {1}, dtypes::uint8, {251});
  // uint16 * uint16 must not go through (overflowing) int arithmetic.
  b.add(make1({65535}, dtypes::uint16) * make1({65535}, dtypes::uint16), {1}, dtypes::uint16, {1});
  b.check();
}

// ---- reductions -----------------------------------------------------------------------------

DType sum_dtype(DType d) {
  if (d.is_bool() || d == dtypes::int8 || d == dtypes::int16 || d == dtypes::int32)
    return dtypes::int32;
  if (d == dtypes::uint8 || d == dtypes::uint16 || d == dtypes::uint32) return dtypes::uint32;
  return d;
}

TEST_P(CoreTest, SumMaxProdEveryDType) {
  // (3, 7) reduced over axis 1 for every dtype, result dtypes per API.md, all in one batch.
  const Shape s = {3, 7};
  Batch batch;
  for (DType d : kAllDTypes) {
    batch.context = d.name();
    std::vector<double> x = sample(d, 21, 20);
    if (d.is_float())
      for (double& v : x) v = round_to(v / 4, d);  // |x| < 2: products stay in range
    Tensor t = make(x, s, d);
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
    // Float sums: any summation order is within 7 u sum|x| of the exact sum, plus the final
    // rounding to the dtype; products: 7 roundings.
    const double u = d.is_float() ? testing::default_rtol(d) : 0;
    const double amax = *std::max_element(abs_sum.begin(), abs_sum.end());
    batch.add(t.sum(1), {3}, sum_dtype(d), esum, u, 7 * u * amax);
    batch.add(t.max(1), {3}, d, emax);
    batch.add(t.prod(1), {3}, d, eprod, 7 * u);
  }
  batch.check();
  // One reduction stored by a kernel of its own per result kind.
  expect_values(make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::int8).sum(1), {2}, dtypes::int32, {6, 15});
  expect_values(make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::uint8).max(0), {3}, dtypes::uint8,
                {4, 5, 6});
}

TEST_P(CoreTest, SumWidensSmallIntsProdKeepsDType) {
  Batch b;
  b.add(make1({100, 100, 100}, dtypes::int8).sum(), {}, dtypes::int32, {300});
  b.add(make1({200, 200}, dtypes::uint8).sum(), {}, dtypes::uint32, {400});
  b.add(make1({30000, 30000}, dtypes::int16).sum(), {}, dtypes::int32, {60000});
  b.add(make1({60000, 60000}, dtypes::uint16).sum(), {}, dtypes::uint32, {120000});
  b.add(make1({1, 1, 1, 0}, dtypes::bool_).sum(), {}, dtypes::int32, {3});
  b.add(make1({std::ldexp(1.0, 40), std::ldexp(1.0, 40), 3}, dtypes::int64).sum(), {},
        dtypes::int64, {std::ldexp(1.0, 41) + 3});
  b.add(make1({std::ldexp(1.0, 62), std::ldexp(1.0, 62)}, dtypes::uint64).sum(), {}, dtypes::uint64,
        {std::ldexp(1.0, 63)});
  // float16 sums accumulate wider than float16: 2048 + 1 + 1 + ... stays exact.
  std::vector<double> h(9, 1.0);
  h[0] = 2048;
  b.add(make1(h, dtypes::float16).sum(), {}, dtypes::float16, {2056});
  // prod keeps the dtype and wraps.
  b.add(make1({2, 3, 50}, dtypes::int8).prod(), {}, dtypes::int8, {44});
  b.add(make1({16, 16}, dtypes::uint8).prod(), {}, dtypes::uint8, {0});
  b.check();
}

TEST_P(CoreTest, ReductionOverloadsAndKeepdim) {
  const Shape s = {2, 3, 5};
  auto x = testing::random_values(30, 0.5, 1.5, 21);
  for (double& v : x) v = round_to(v, dtypes::float32);
  Tensor t = make(x, s, dtypes::float32);
  using V = std::vector<int>;
  const auto plus = [](double a, double b) { return a + b; };
  const auto mx = [](double a, double b) { return std::max(a, b); };
  const auto mul = [](double a, double b) { return a * b; };
  Batch batch;
  auto sum = [&](const Tensor& r, V axes, bool keepdim, int line) {
    batch.context = "sum at line " + std::to_string(line);
    Reduced e = ref_reduce(x, s, axes, keepdim, 0, plus);
    // At most 30 terms of at most 1.5: any order is within 30 u 45.
    batch.add(r, e.shape, dtypes::float32, e.v, kU32, 30 * kU32 * 45);
  };
  sum(t.sum(), {}, false, __LINE__);
  sum(t.sum(0), {0}, false, __LINE__);
  sum(t.sum(1), {1}, false, __LINE__);
  sum(t.sum(2, true), {2}, true, __LINE__);
  sum(t.sum(-1), {2}, false, __LINE__);
  sum(t.sum(-3, true), {0}, true, __LINE__);
  sum(t.sum(V{0, 2}), {0, 2}, false, __LINE__);
  sum(t.sum(V{-1, 0}, true), {0, 2}, true, __LINE__);
  sum(t.sum(V{1}, true), {1}, true, __LINE__);
  sum(t.sum(V{}), {}, false, __LINE__);
  sum(t.sum(V{}, true), {}, true, __LINE__);
  sum(t.sum(V{0, 1, 2}), {}, false, __LINE__);
  auto other = [&](const Tensor& r, V axes, bool keepdim, bool is_max, int line) {
    batch.context = "reduction at line " + std::to_string(line);
    Reduced e = is_max ? ref_reduce(x, s, axes, keepdim, -kInf, mx)
                       : ref_reduce(x, s, axes, keepdim, 1, mul);
    batch.add(r, e.shape, dtypes::float32, e.v, is_max ? 0 : 30 * kU32);
  };
  other(t.max(), {}, false, true, __LINE__);
  other(t.max(1), {1}, false, true, __LINE__);
  other(t.max(V{0, 2}, true), {0, 2}, true, true, __LINE__);
  other(t.max(V{}), {}, false, true, __LINE__);
  other(t.max(-2, true), {1}, true, true, __LINE__);
  other(t.prod(), {}, false, false, __LINE__);
  other(t.prod(2), {2}, false, false, __LINE__);
  other(t.prod(V{0, 1}, true), {0, 1}, true, false, __LINE__);
  other(t.prod(V{}, true), {}, true, false, __LINE__);
  batch.check();
  // Two reductions stored by kernels of their own.
  Reduced e = ref_reduce(x, s, {0, 2}, true, 0, plus);
  expect_values(t.sum(V{0, 2}, true), e.shape, dtypes::float32, e.v, kU32, 10 * kU32 * 15);
  e = ref_reduce(x, s, {1}, false, -kInf, mx);
  expect_values(t.max(1), e.shape, dtypes::float32, e.v);
}

// API.md: "an empty vector reduces all axes". Users write that as `{}`, which C++ overload
// resolution gives to f(int axis) (an empty braced list converts to int by identity, a better
// match than the user-defined conversion to std::vector<int>) unless the int overload cannot
// take it.
TEST_P(CoreTest, SumOfEmptyBracesReducesAllAxes) {
  Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::float32);
  EXPECT_EQ(t.sum({}).shape(), Shape{});
  EXPECT_EQ(t.max({}, true).shape(), (Shape{1, 1}));
}

TEST_P(CoreTest, ReductionsOfOddSizes) {
  Batch batch;
  for (int64_t n : {1, 3, 17, 257, 1023}) {
    batch.context = "n=" + std::to_string(n);
    auto x = testing::random_values(n, -1, 1, 22 + n);
    for (double& v : x) v = round_to(v, dtypes::float32);
    Tensor t = make1(x, dtypes::float32);
    double s = 0, a = 0, m = -kInf;
    for (double v : x) s += v, a += std::fabs(v), m = std::max(m, v);
    // Any summation order is within n u sum|x| of the exact sum.
    batch.add(t.sum(), {}, dtypes::float32, {s}, kU32, static_cast<double>(n) * kU32 * a);
    batch.add(t.max(), {}, dtypes::float32, {m});
    auto iv = testing::random_ints(n, -1000, 1000, 23 + n);
    double is = 0;
    for (double v : iv) is += v;
    batch.add(make1(iv, dtypes::int32).sum(0), {}, dtypes::int32, {is});
  }
  batch.context = "prod";
  auto p = testing::random_values(257, 0.95, 1.05, 24);
  for (double& v : p) v = round_to(v, dtypes::float32);
  double e = 1;
  for (double v : p) e *= v;
  batch.add(make1(p, dtypes::float32).prod(), {}, dtypes::float32, {e}, 257 * kU32);
  batch.check();
}

TEST_P(CoreTest, MaxReductionNaNAndInf) {
  // A NaN anywhere in the reduced range gives NaN (as PyTorch's max and amax).
  Batch b;
  Tensor x = make({1, kNaN, 3, -kInf, -kInf, -kInf, 2, 5, kNaN}, {3, 3}, dtypes::float32);
  b.add(x.max(1), {3}, dtypes::float32, {kNaN, -kInf, kNaN});
  b.add(make1({-kInf, -kInf}, dtypes::float32).max(), {}, dtypes::float32, {-kInf});
  b.add(make1({1, kInf}, dtypes::float32).sum(), {}, dtypes::float32, {kInf});
  b.add(make1({kInf, -kInf}, dtypes::float32).sum(), {}, dtypes::float32, {kNaN});
  b.add(make1({-5, -3, -100}, dtypes::int8).max(), {}, dtypes::int8, {-3});
  b.add(make1({0, 0, 1}, dtypes::bool_).max(), {}, dtypes::bool_, {1});
  b.check();
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

// Every dtype prints from its own bytes, converted on the host: integers exactly (beyond what a
// double holds), half floats through the host's conversion, and no float64 on the device.
TEST_P(CoreTest, ToStringPrintsEveryDTypeFromItsOwnBytes) {
  auto values = [](const Tensor& t) {
    const std::string s = t.to_string();
    return s.substr(s.find('\n') + 1);
  };
  EXPECT_EQ(values(make1({1.5, -2, 65504}, dtypes::float16) * 1.0), "[1.5, -2, 65504]");
  EXPECT_EQ(values(make1({0.5, -256, 1.5}, dtypes::bfloat16) + 0.0), "[0.5, -256, 1.5]");
  EXPECT_EQ(values(make1({0.1, -0.0, kInf, kNaN}, dtypes::float32)), "[0.1, -0, inf, nan]");
  EXPECT_EQ(values(make1({0.1, 1e300}, dtypes::float64)), "[0.1, 1e+300]");
  EXPECT_EQ(values(make1({-128, 127}, dtypes::int8) + 0), "[-128, 127]");
  EXPECT_EQ(values(make1({255, 0}, dtypes::uint8)), "[255, 0]");
  EXPECT_EQ(values(make1({-32768, 7}, dtypes::int16)), "[-32768, 7]");
  EXPECT_EQ(values(make1({65535}, dtypes::uint16)), "[65535]");
  EXPECT_EQ(values(make1({-2147483648.0, 5}, dtypes::int32)), "[-2147483648, 5]");
  EXPECT_EQ(values(make1({4294967295.0}, dtypes::uint32)), "[4294967295]");
  const int64_t odd = (int64_t{1} << 53) + 1;  // a double would print 9.0072e+15
  EXPECT_EQ(values(Tensor::from_vector<int64_t>({odd, -odd}, {2}, {}, dev()) + 0),
            "[9007199254740993, -9007199254740993]");
  EXPECT_EQ(values(Tensor::from_vector<uint64_t>({~uint64_t{0}}, {1}, {}, dev())),
            "[18446744073709551615]");
  EXPECT_EQ(values(make1({1, 0}, dtypes::bool_).logical_not()), "[false, true]");
  EXPECT_EQ(values(make({1, 2, 3, 4}, {2, 2}, dtypes::int32).T()), "[[1, 3],\n[2, 4]]");
  EXPECT_EQ(values(Tensor::scalar(2.5, dtypes::float16, dev())), "2.5");
}

VKGRAD_ALL_DEVICES(CoreTest);

}  // namespace
}  // namespace vkgrad
