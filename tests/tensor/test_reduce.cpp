// tests/tensor: the reductions of src/tensor/ops_reduce.cpp on every device — mean, min, any,
// all, var, std, argmax/argmin, softmax, log_softmax, logsumexp, cumsum — over axes, keepdim,
// dtypes, empty and non-contiguous inputs, against references computed in double precision.
// Same-shaped results of one dtype are packed into one tensor (rows()) to share a kernel.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_values;
using testing::make_tensor;
using testing::random_ints;
using testing::random_values;
using testing::round_to;
using testing::values_of;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

using testing::expect_rows;
using testing::Row;

std::vector<double> rounded(std::vector<double> v, DType d) {
  for (double& x : v) x = round_to(x, d);
  return v;
}

// A reference reduction of a row-major (r, c) matrix along `axis` (0 or 1), or over both (-1).
using Fold = std::function<double(const std::vector<double>&)>;
std::vector<double> fold2d(const std::vector<double>& v, int64_t r, int64_t c, int axis,
                           const Fold& f) {
  std::vector<double> out;
  if (axis == -1) return {f(v)};
  const int64_t outer = axis == 0 ? c : r, inner = axis == 0 ? r : c;
  for (int64_t o = 0; o < outer; ++o) {
    std::vector<double> line;
    for (int64_t i = 0; i < inner; ++i)
      line.push_back(v[static_cast<size_t>(axis == 0 ? i * c + o : o * c + i)]);
    out.push_back(f(line));
  }
  return out;
}

double ref_mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double ref_var(const std::vector<double>& v) {
  const double m = ref_mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}
double ref_min(const std::vector<double>& v) {
  double m = v[0];
  for (double x : v) m = std::min(m, x);
  return m;
}
double ref_argmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (std::isnan(v[i]) ? !std::isnan(v[best]) : (!std::isnan(v[best]) && v[i] > v[best]))
      best = i;
  return static_cast<double>(best);
}
double ref_argmin(const std::vector<double>& v) {
  std::vector<double> neg(v.size());
  for (size_t i = 0; i < v.size(); ++i) neg[i] = -v[i];
  return ref_argmax(neg);
}
double ref_logsumexp(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::max(m, x);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return std::log(s) + m;
}

class ReduceTest : public testing::DeviceTest {};

// mean, var, std and min over one axis, a negative axis, keepdim, a list of axes and all axes.
TEST_P(ReduceTest, MeanVarStdMin) {
  const int64_t r = 3, c = 17;
  const std::vector<double> v = rounded(random_values(r * c, -4, 4, 1), dtypes::float32);
  const Tensor x = make_tensor(v, {r, c}, dtypes::float32, dev());
  const double rt = 1e-5, at = 1e-6;  // sums of 17..51 float32 values
  auto pack = [&](const Tensor& mean, const Tensor& var, const Tensor& sd, const Tensor& mn,
                  int axis) {
    expect_rows(
        {{"mean", mean, fold2d(v, r, c, axis, ref_mean), rt, at},
         {"var", var, fold2d(v, r, c, axis, ref_var), rt, at},
         {"std", sd, fold2d(v, r, c, axis, [](auto& l) { return std::sqrt(ref_var(l)); }), rt, at},
         {"min", mn, fold2d(v, r, c, axis, ref_min)}});
  };
  pack(x.mean(1), x.var(1), x.std(1), x.min(1), 1);
  pack(x.mean(-2, true), x.var(-2, true), x.std(-2, true), x.min(-2, true), 0);
  EXPECT_EQ(x.mean(-2, true).shape(), (Shape{1, c}));
  pack(x.mean(), x.var(), x.std(), x.min(), -1);
  EXPECT_EQ(x.var().shape(), Shape{});
  pack(x.mean({0, 1}, true), x.var({1, 0}, true), x.std(std::vector<int>{}, true),
       x.min({-1, 0}, true), -1);
  EXPECT_EQ(x.std(std::vector<int>{}, true).shape(), (Shape{1, 1}));
}

// Integer and bool inputs: mean/var/std in float32, min in the input dtype at its extremes.
TEST_P(ReduceTest, IntegerAndHalfInputs) {
  const std::vector<double> v = {INT32_MIN, 5, -3, INT32_MAX, 0, 7};
  const Tensor x = make_tensor(v, {2, 3}, dtypes::int32, dev());
  expect_values(x.min(1), {2}, dtypes::int32, {INT32_MIN, 0});
  expect_values(x.min(), {}, dtypes::int32, {INT32_MIN});
  const Tensor s = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::int8, dev());
  expect_rows({{"mean", s.mean(1), {2, 5}}, {"var", s.var(1), {1, 1}}, {"std", s.std(1), {1, 1}}});
  EXPECT_EQ(s.mean().dtype(), dtypes::float32);
  const Tensor u = make_tensor({200, 3, 255, 0}, {4}, dtypes::uint8, dev());
  expect_values(u.min(), {}, dtypes::uint8, {0});
  expect_values(u.reshape({2, 2}).min(1), {2}, dtypes::uint8, {3, 0});
  const Tensor b = make_tensor({1, 1, 0, 1}, {2, 2}, dtypes::bool_, dev());
  expect_values(b.min(1), {2}, dtypes::bool_, {1, 0});
  expect_values(b.mean(), {}, dtypes::float32, {0.75});

  // float16 keeps its dtype; the sums run in float32.
  const std::vector<double> h = rounded(random_values(257, 0, 8, 2), dtypes::float16);
  const Tensor th = make_tensor(h, {257}, dtypes::float16, dev());
  expect_rows({{"mean", th.mean(), {round_to(ref_mean(h), dtypes::float16)}, 2e-3},
               {"var", th.var(), {round_to(ref_var(h), dtypes::float16)}, 2e-3},
               {"std", th.std(), {round_to(std::sqrt(ref_var(h)), dtypes::float16)}, 2e-3},
               {"min", th.min(), {ref_min(h)}}});
}

TEST_P(ReduceTest, AnyAll) {
  const Tensor b = make_tensor({0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, {3, 4}, dtypes::bool_, dev());
  expect_rows({{"any", b.any(1), {0, 1, 1}}, {"all", b.all(1), {0, 0, 1}}});
  expect_rows({{"any", b.any(0, true), {1, 1, 1, 1}}, {"all", b.all(0, true), {0, 0, 0, 0}}});
  expect_rows({{"any", b.any(), {1}}, {"all", b.all(), {0}}});
  // Numbers: nonzero is true, NaN included.
  const Tensor f = make_tensor({0, kNaN, 0, 0, -0.0, 2}, {3, 2}, dtypes::float32, dev());
  expect_rows({{"any", f.any(1), {1, 0, 1}}, {"all", f.all(1), {0, 0, 0}}});
  const Tensor i = make_tensor({3, -1, 0, 7}, {4}, dtypes::int32, dev());
  expect_rows({{"any", i.any(), {1}}, {"all", i.all(), {0}}});
}

// Reductions over nothing: sums are 0, mean/var NaN, min +inf, any false, all true.
TEST_P(ReduceTest, EmptyReductions) {
  const Tensor e = Tensor::zeros({2, 0}, dtypes::float32, dev());
  expect_rows({{"mean", e.mean(1), {kNaN, kNaN}},
               {"var", e.var(1), {kNaN, kNaN}},
               {"min", e.min(1), {kInf, kInf}}});
  expect_rows({{"any", e.any(1), {0, 0}}, {"all", e.all(1), {1, 1}}});
  EXPECT_EQ(e.mean(0).shape(), (Shape{0}));
  // One element: var with correction 1 is NaN (0 / 0), as PyTorch.
  expect_values(make_tensor({3}, {1}, dtypes::float32, dev()).var(), {}, dtypes::float32, {kNaN});
  // 0-d tensors reduce over no axes.
  const Tensor s = Tensor::full({}, 2.5, dtypes::float32, dev());
  expect_rows({{"mean", s.mean(), {2.5}}, {"min", s.min(0), {2.5}}});
}

TEST_P(ReduceTest, ArgmaxArgmin) {
  // Ties resolve to the first index along each axis and in the flattened tensor.
  const std::vector<double> v = {3, 1, 3, 0, 2, 2, -1, 5, 5, 0, 1, 1};
  const Tensor x = make_tensor(v, {3, 4}, dtypes::float32, dev());
  expect_rows({{"argmax", x.argmax(1), fold2d(v, 3, 4, 1, ref_argmax)},
               {"argmin", x.argmin(1), fold2d(v, 3, 4, 1, ref_argmin)}});
  expect_rows({{"argmax", x.argmax(0, true), fold2d(v, 3, 4, 0, ref_argmax)},
               {"argmin", x.argmin(-2, true), fold2d(v, 3, 4, 0, ref_argmin)}});
  EXPECT_EQ(x.argmax(0, true).shape(), (Shape{1, 4}));
  EXPECT_EQ(x.argmax().dtype(), dtypes::int32);

  // Flattened, in one pack: ties (x), NaN as the extreme for both (PyTorch), integers at their
  // limits, uint8 (argmin through ~x) and bool (through logical not), and a 0-d tensor.
  const Tensor n = make_tensor({1, kNaN, 3, kNaN}, {4}, dtypes::float32, dev());
  const Tensor i =
      make_tensor({0, INT32_MIN, INT32_MAX, INT32_MAX, INT32_MIN}, {5}, dtypes::int32, dev());
  const Tensor u = make_tensor({7, 255, 0, 255, 0}, {5}, dtypes::uint8, dev());
  const Tensor b = make_tensor({0, 1, 1, 0}, {4}, dtypes::bool_, dev());
  const Tensor s = Tensor::full({}, 4.0, dtypes::float32, dev());
  expect_rows({{"x argmax", x.argmax(), {7}},
               {"x argmin", x.argmin(), {6}},
               {"NaN argmax", n.argmax(), {1}},
               {"NaN argmin", n.argmin(), {1}},
               {"int32 argmax", i.argmax(), {2}},
               {"int32 argmin", i.argmin(), {1}},
               {"uint8 argmin", u.argmin(), {2}},
               {"bool argmax", b.argmax(), {1}},
               {"bool argmin", b.argmin(), {0}},
               {"0-d argmax(0)", s.argmax(0), {0}}});
  EXPECT_EQ(s.argmin(-1, true).shape(), Shape{});

  // A long odd-sized axis and a non-contiguous (transposed, flipped) input.
  std::vector<double> big = rounded(random_values(1023, -1, 1, 3), dtypes::float32);
  big[777] = 2;
  expect_values(make_tensor(big, {1023}, dtypes::float32, dev()).argmax(), {}, dtypes::int32,
                {777});
  const Tensor t = x.permute({1, 0}).flip(std::vector<int>{1});  // (4, 3): t[j][i] = x[2-i][j]
  std::vector<double> tv;
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 3; ++k) tv.push_back(v[static_cast<size_t>((2 - k) * 4 + j)]);
  expect_values(t.argmax(1), {4}, dtypes::int32, fold2d(tv, 4, 3, 1, ref_argmax));
  EXPECT_THROW((void)Tensor::zeros({0}, dtypes::float32, dev()).argmax(), ShapeError);
  EXPECT_THROW((void)Tensor::zeros({2, 0}, dtypes::float32, dev()).argmin(1), ShapeError);
  EXPECT_THROW((void)x.argmax(2), ShapeError);
}

TEST_P(ReduceTest, SoftmaxFamily) {
  const int64_t r = 3, c = 17;
  std::vector<double> v = rounded(random_values(r * c, -5, 5, 4), dtypes::float32);
  for (int64_t j = 0; j < c; ++j) v[static_cast<size_t>(2 * c + j)] += 1000;  // exp would overflow
  v = rounded(v, dtypes::float32);
  const Tensor x = make_tensor(v, {r, c}, dtypes::float32, dev());
  auto softmax_rows = [&](bool log) {
    std::vector<double> out;
    for (int64_t i = 0; i < r; ++i) {
      const std::vector<double> line(v.begin() + i * c, v.begin() + (i + 1) * c);
      const double lse = ref_logsumexp(line);
      for (double a : line) out.push_back(log ? a - lse : std::exp(a - lse));
    }
    return out;
  };
  expect_rows({{"softmax", x.softmax(), softmax_rows(false), 1e-5, 1e-7},
               {"softmax(1)", x.softmax(1), softmax_rows(false), 1e-5, 1e-7},
               {"log_softmax", x.log_softmax(-1), softmax_rows(true), 1e-5, 1e-5}});
  expect_values(x.logsumexp(1), {r}, dtypes::float32, fold2d(v, r, c, 1, ref_logsumexp), 1e-6,
                1e-5);

  // Along axis 0 of a small matrix; infinite rows in logsumexp give +-inf, not NaN.
  const std::vector<double> w = {0, 1, -kInf, kInf, 2, -1, -kInf, 1};
  const Tensor tw = make_tensor(w, {2, 4}, dtypes::float32, dev());
  expect_values(tw.logsumexp(0), {4}, dtypes::float32, fold2d(w, 2, 4, 0, ref_logsumexp), 1e-6,
                1e-6);
  const Tensor m = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::int32, dev());
  const double e3 = std::exp(3.0);
  expect_values(
      m.softmax(0), {2, 3}, dtypes::float32,
      {1 / (1 + e3), 1 / (1 + e3), 1 / (1 + e3), e3 / (1 + e3), e3 / (1 + e3), e3 / (1 + e3)}, 1e-6,
      1e-7);
  // float16 in, float16 out (computed in float32).
  const Tensor h = make_tensor({0, 1, 2}, {3}, dtypes::float16, dev());
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  expect_values(h.softmax(), {3}, dtypes::float16,
                rounded({1 / z, std::exp(1.0) / z, std::exp(2.0) / z}, dtypes::float16), 2e-3);
  expect_values(Tensor::full({}, 7.0, dtypes::float32, dev()).softmax(), {}, dtypes::float32, {1});
}

TEST_P(ReduceTest, Cumsum) {
  const int64_t r = 3, c = 17;
  const std::vector<double> v = random_ints(r * c, -50, 50, 5);
  const Tensor x = make_tensor(v, {r, c}, dtypes::int32, dev());
  std::vector<double> along1 = v, along0 = v;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 1; j < c; ++j) along1[i * c + j] += along1[i * c + j - 1];
  for (int64_t i = 1; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) along0[i * c + j] += along0[(i - 1) * c + j];
  expect_rows({{"cumsum(1)", x.cumsum(1), along1},
               {"cumsum(-1)", x.cumsum(-1), along1},
               {"cumsum(0)", x.cumsum(0), along0}});
  const Tensor f = make_tensor(v, {r, c}, dtypes::float32, dev());
  expect_values(f.cumsum(0), {r, c}, dtypes::float32, along0);

  // Longer than one block (256): blocks, their totals, and a padded tail. Exact in int32.
  const std::vector<double> l = random_ints(600, -1000, 1000, 6);
  std::vector<double> pre = l;
  for (size_t k = 1; k < pre.size(); ++k) pre[k] += pre[k - 1];
  expect_values(make_tensor(l, {600}, dtypes::int32, dev()).cumsum(0), {600}, dtypes::int32, pre);
  const std::vector<double> fl = rounded(random_values(600, -1, 1, 7), dtypes::float32);
  std::vector<double> fpre = fl;
  for (size_t k = 1; k < fpre.size(); ++k) fpre[k] += fpre[k - 1];
  expect_values(
      make_tensor(fl, {2, 300}, dtypes::float32, dev()).flip(std::vector<int>{0}).cumsum(1),
      {2, 300}, dtypes::float32,
      [&] {
        std::vector<double> out(600);
        for (int k = 0; k < 300; ++k) {
          out[k] = fpre[300 + k] - fpre[299];  // the second row comes first
          out[300 + k] = fpre[k];
        }
        return out;
      }(),
      0, 1e-4);

  // bool counts in int32; empty axes stay empty; a 0-d tensor is its own cumsum.
  const Tensor b = make_tensor({1, 0, 1, 1}, {4}, dtypes::bool_, dev());
  expect_values(b.cumsum(0), {4}, dtypes::int32, {1, 1, 2, 3});
  expect_values(Tensor::zeros({2, 0}, dtypes::float32, dev()).cumsum(1), {2, 0}, dtypes::float32,
                {});
  expect_values(Tensor::full({}, 3, dtypes::int32, dev()).cumsum(0), {}, dtypes::int32, {3});
  EXPECT_THROW((void)x.cumsum(2), ShapeError);
}

VKGRAD_ALL_DEVICES(ReduceTest);

}  // namespace
}  // namespace vkgrad
