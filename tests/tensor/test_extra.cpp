// tests/tensor: the functions of src/tensor/ops_extra.cpp on every device — erf, the inverse and
// hyperbolic trig functions, isnan/isinf, tril/triu, cumprod, topk/sort/argsort,
// scatter/scatter_reduce, einsum, pad modes and interpolate — against values computed in double
// precision here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::make_tensor;
using testing::random_ints;
using testing::random_values;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

class ExtraTest : public testing::DeviceTest {};

std::vector<double> map(const std::vector<double>& x, double (*f)(double)) {
  std::vector<double> out;
  for (double v : x) out.push_back(f(v));
  return out;
}

TEST_P(ExtraTest, TranscendentalsMatchDoublePrecision) {
  const std::vector<double> x = random_values(64, -3.0, 3.0, 11);
  const std::vector<double> unit = random_values(64, -0.999, 0.999, 12);
  const std::vector<double> big = random_values(64, 1.0, 20.0, 13);
  const Tensor tx = make_tensor(x, {64}, dtypes::float32, dev());
  const Tensor tu = make_tensor(unit, {64}, dtypes::float32, dev());
  const Tensor tb = make_tensor(big, {64}, dtypes::float32, dev());
  // Reference on the float32-rounded inputs.
  auto f32 = [](std::vector<double> v) {
    for (double& d : v) d = static_cast<float>(d);
    return v;
  };
  const auto rx = f32(x), ru = f32(unit), rb = f32(big);
  expect_values(tx.erf(), {64}, dtypes::float32, map(rx, std::erf), 1e-5, 2e-7);
  expect_values(tx.atan(), {64}, dtypes::float32, map(rx, std::atan), 1e-5, 1e-6);
  expect_values(tu.asin(), {64}, dtypes::float32, map(ru, std::asin), 1e-4, 1e-6);
  expect_values(tu.acos(), {64}, dtypes::float32, map(ru, std::acos), 1e-4, 1e-6);
  expect_values(tx.sinh(), {64}, dtypes::float32, map(rx, std::sinh), 1e-5, 1e-6);
  expect_values(tx.cosh(), {64}, dtypes::float32, map(rx, std::cosh), 1e-5, 1e-6);
  expect_values(tx.asinh(), {64}, dtypes::float32, map(rx, std::asinh), 1e-5, 1e-6);
  expect_values(tb.acosh(), {64}, dtypes::float32, map(rb, std::acosh), 1e-5, 1e-6);
  expect_values(tu.atanh(), {64}, dtypes::float32, map(ru, std::atanh), 1e-4, 1e-6);
  // Large arguments of atan and the ends of asin.
  const Tensor ends = make_tensor({1e6, -1e6, 1.0, -1.0, 0.0}, {5}, dtypes::float32, dev());
  expect_values(ends.atan(), {5}, dtypes::float32,
                {std::atan(1e6), std::atan(-1e6), std::atan(1.0), std::atan(-1.0), 0.0}, 1e-6,
                1e-7);
  expect_values(ends.asin(), {5}, dtypes::float32,
                {kNaN, kNaN, std::asin(1.0), std::asin(-1.0), 0.0}, 1e-6, 1e-7);
}

TEST_P(ExtraTest, IsnanAndIsinf) {
  const Tensor x = make_tensor({1.0, kNaN, kInf, -kInf, 0.0}, {5}, dtypes::float32, dev());
  expect_values(x.isnan(), {5}, dtypes::bool_, {0, 1, 0, 0, 0});
  expect_values(x.isinf(), {5}, dtypes::bool_, {0, 0, 1, 1, 0});
  expect_values(x.isinf(true, false), {5}, dtypes::bool_, {0, 0, 1, 0, 0});
  expect_values(x.isinf(false, true), {5}, dtypes::bool_, {0, 0, 0, 1, 0});
  const Tensor i = make_tensor({1, 2}, {2}, dtypes::int32, dev());
  expect_values(i.isnan(), {2}, dtypes::bool_, {0, 0});
}

TEST_P(ExtraTest, TrilTriuKeepTheirTriangles) {
  std::vector<double> v(2 * 3 * 4);
  std::iota(v.begin(), v.end(), 1.0);
  const Tensor x = make_tensor(v, {2, 3, 4}, dtypes::int64, dev());
  for (int64_t k : {-1, 0, 2}) {
    std::vector<double> lo(v.size()), up(v.size());
    for (size_t f = 0; f < v.size(); f++) {
      const int64_t i = static_cast<int64_t>(f / 4 % 3), j = static_cast<int64_t>(f % 4);
      lo[f] = j - i <= k ? v[f] : 0;
      up[f] = j - i >= k ? v[f] : 0;
    }
    expect_values(x.tril(k), {2, 3, 4}, dtypes::int64, lo);
    expect_values(x.triu(k), {2, 3, 4}, dtypes::int64, up);
  }
  expect_error<ShapeError>(
      [&] {
        (void)make_tensor({1, 2}, {2}, dtypes::float32, dev()).tril();
      },
      {"tril", "(2,)"});
}

TEST_P(ExtraTest, CumprodAlongEachAxis) {
  const std::vector<double> v = random_values(12, 0.5, 1.5, 21);
  const Tensor x = make_tensor(v, {3, 4}, dtypes::float32, dev());
  std::vector<double> r0(12), r1(12);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      const float f = static_cast<float>(v[static_cast<size_t>(i * 4 + j)]);
      r1[static_cast<size_t>(i * 4 + j)] = (j ? r1[static_cast<size_t>(i * 4 + j - 1)] : 1.0) * f;
      r0[static_cast<size_t>(i * 4 + j)] = (i ? r0[static_cast<size_t>((i - 1) * 4 + j)] : 1.0) * f;
    }
  expect_values(x.cumprod(1), {3, 4}, dtypes::float32, r1, 1e-6);
  expect_values(x.cumprod(0), {3, 4}, dtypes::float32, r0, 1e-6);
  const Tensor n = make_tensor({2, -3, 0, 4}, {4}, dtypes::int32, dev());
  expect_values(n.cumprod(0), {4}, dtypes::int32, {2, -6, 0, 0});
}

TEST_P(ExtraTest, TopkSortArgsortWithTies) {
  const std::vector<double> v = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  const Tensor x = make_tensor(v, {2, 5}, dtypes::float32, dev());
  auto [vals, idx] = x.topk(3, 1);
  expect_values(vals, {2, 3}, dtypes::float32, {5, 4, 3, 9, 6, 5});
  expect_values(idx, {2, 3}, dtypes::int64, {4, 2, 0, 0, 2, 3});
  auto [svals, sidx] = x.sort(1);
  expect_values(svals, {2, 5}, dtypes::float32, {1, 1, 3, 4, 5, 2, 3, 5, 6, 9});
  expect_values(sidx, {2, 5}, dtypes::int64,
                {1, 3, 0, 2, 4, 1, 4, 3, 2, 0});  // ties: lower index first
  expect_values(x.argsort(0, true), {2, 5}, dtypes::int64, {1, 1, 1, 1, 0, 0, 0, 0, 0, 1});
  auto [small, sidx2] = x.topk(2, 1, false);
  expect_values(small, {2, 2}, dtypes::float32, {1, 1, 2, 3});
  expect_values(sidx2, {2, 2}, dtypes::int64, {1, 3, 1, 4});
  expect_error<ShapeError>([&] { (void)x.topk(6, 1); }, {"topk", "k = 6"});
}

TEST_P(ExtraTest, ScatterAndScatterReduce) {
  const Tensor base = make_tensor(std::vector<double>(3 * 4, 1.0), {3, 4}, dtypes::float32, dev());
  const Tensor index = make_tensor({0, 2, 1, 0, 2, 2, -1, 1}, {2, 4}, dtypes::int64, dev());
  const Tensor src = make_tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, dtypes::float32, dev());
  // dim 0: out[index[i][j]][j] = src[i][j] (rows 0..1 of index and src).
  expect_values(base.scatter(0, index.slice(0, 0, 1), src.slice(0, 0, 1)), {3, 4}, dtypes::float32,
                {1, 1, 1, 4, 1, 1, 3, 1, 1, 2, 1, 1});
  std::vector<double> sum(12, 1.0), amax(12, 1.0), prod(12, 1.0);
  const double iv[8] = {0, 2, 1, 0, 2, 2, 2, 1};  // -1 counts from the end
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      const size_t t = static_cast<size_t>(iv[i * 4 + j] * 4 + j);
      const double s = i * 4 + j + 1;
      sum[t] += s;
      prod[t] *= s;
      amax[t] = std::max(amax[t], s);
    }
  expect_values(base.scatter_reduce(0, index, src, "sum"), {3, 4}, dtypes::float32, sum);
  expect_values(base.scatter_reduce(0, index, src, "prod"), {3, 4}, dtypes::float32, prod);
  expect_values(base.scatter_reduce(0, index, src, "amax"), {3, 4}, dtypes::float32, amax);
  // Without the input's own value: positions no index hits keep it.
  std::vector<double> amin_excl(12, 1.0);
  std::vector<bool> hit(12, false);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      const size_t t = static_cast<size_t>(iv[i * 4 + j] * 4 + j);
      const double s = i * 4 + j + 1;
      amin_excl[t] = hit[t] ? std::min(amin_excl[t], s) : s;
      hit[t] = true;
    }
  expect_values(base.scatter_reduce(0, index, src, "amin", false), {3, 4}, dtypes::float32,
                amin_excl);
  expect_error<DTypeError>([&] { (void)base.scatter(0, src, src); }, {"scatter_reduce", "float32"});
}

TEST_P(ExtraTest, EinsumContractsTracesAndBroadcasts) {
  const std::vector<double> a = random_values(6, -1, 1, 31), b = random_values(12, -1, 1, 32);
  const Tensor ta = make_tensor(a, {2, 3}, dtypes::float32, dev());
  const Tensor tb = make_tensor(b, {3, 4}, dtypes::float32, dev());
  std::vector<double> mm(8, 0.0);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 3; k++)
        mm[static_cast<size_t>(i * 4 + j)] +=
            static_cast<float>(a[static_cast<size_t>(i * 3 + k)]) *
            static_cast<float>(b[static_cast<size_t>(k * 4 + j)]);
  expect_values(einsum("ij,jk->ik", {ta, tb}), {2, 4}, dtypes::float32, mm, 1e-5, 1e-6);
  expect_values(einsum("ij,jk", {ta, tb}), {2, 4}, dtypes::float32, mm, 1e-5, 1e-6);
  std::vector<double> t(6);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      t[static_cast<size_t>(j * 2 + i)] = static_cast<float>(a[static_cast<size_t>(i * 3 + j)]);
  expect_values(einsum("ij->ji", {ta}), {3, 2}, dtypes::float32, t);
  const Tensor sq = make_tensor({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, dtypes::float32, dev());
  expect_values(einsum("ii->i", {sq}), {3}, dtypes::float32, {1, 5, 9});
  expect_values(einsum("ii", {sq}), {}, dtypes::float32, {15});
  expect_values(einsum("...j,j->...", {sq, make_tensor({1, 0, -1}, {3}, dtypes::float32, dev())}),
                {3}, dtypes::float32, {-2, -2, -2});
  expect_error<Error>([&] { (void)einsum("ij,jk->ik", {ta}); }, {"einsum", "2 operands"});
}

TEST_P(ExtraTest, PadModes) {
  const Tensor x = make_tensor({1, 2, 3, 4}, {4}, dtypes::float32, dev());
  expect_values(x.pad({{2, 1}}, "reflect"), {7}, dtypes::float32, {3, 2, 1, 2, 3, 4, 3});
  expect_values(x.pad({{2, 1}}, "replicate"), {7}, dtypes::float32, {1, 1, 1, 2, 3, 4, 4});
  expect_values(x.pad({{2, 1}}, "circular"), {7}, dtypes::float32, {3, 4, 1, 2, 3, 4, 1});
  expect_values(x.pad({{1, 0}}, "constant", 9.0), {5}, dtypes::float32, {9, 1, 2, 3, 4});
  const Tensor m = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::int32, dev());
  expect_values(m.pad({{1, 1}, {0, 2}}, "reflect"), {4, 5}, dtypes::int32,
                {4, 5, 6, 5, 4, 1, 2, 3, 2, 1, 4, 5, 6, 5, 4, 1, 2, 3, 2, 1});
  expect_error<ShapeError>([&] { (void)x.pad({{4, 0}}, "reflect"); }, {"pad", "reflect", "(4,)"});
  expect_error<Error>([&] { (void)x.pad({{1, 0}}, "mirror"); }, {"pad", "mirror"});
}

TEST_P(ExtraTest, InterpolateLinearAndNearest) {
  const Tensor x = make_tensor({1, 2, 3, 4}, {1, 1, 4}, dtypes::float32, dev());
  expect_values(x.interpolate({8}), {1, 1, 8}, dtypes::float32,
                {1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4}, 1e-6);
  expect_values(x.interpolate({7}, "linear", true), {1, 1, 7}, dtypes::float32,
                {1, 1.5, 2, 2.5, 3, 3.5, 4}, 1e-6);
  expect_values(x.interpolate({8}, "nearest"), {1, 1, 8}, dtypes::float32,
                {1, 1, 2, 2, 3, 3, 4, 4});
  expect_values(x.interpolate({2}, "nearest"), {1, 1, 2}, dtypes::float32, {1, 3});
  expect_values(x.interpolate({2}, "nearest-exact"), {1, 1, 2}, dtypes::float32, {2, 4});
  // Two dims at once: bilinear 2x2 -> 3x3 with the corners aligned.
  const Tensor sq = make_tensor({0, 2, 4, 6}, {2, 2}, dtypes::float32, dev());
  expect_values(sq.interpolate({3, 3}, "linear", true), {3, 3}, dtypes::float32,
                {0, 1, 2, 2, 3, 4, 4, 5, 6}, 1e-6);
  expect_error<Error>([&] { (void)x.interpolate({3}, "cubic"); }, {"interpolate", "cubic"});
}

VKGRAD_ALL_DEVICES(ExtraTest);

}  // namespace
}  // namespace vkgrad
