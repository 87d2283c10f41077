// tests/tensor: arange, linspace, eye (src/tensor/creation.cpp) and the random numbers of
// src/tensor/random.cpp on every device. Random values are checked bit for bit against a plain
// host implementation of Threefry-2x32-20 (itself checked against the published known-answer
// vectors), so one seed gives the same numbers on every device and in every process.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_values;
using testing::round_to;
using testing::values_of;

class CreationTest : public testing::DeviceTest {};

// ---- arange, linspace, eye ----------------------------------------------------------------------

TEST_P(CreationTest, ArangeIntegers) {
  expect_values(Tensor::arange(5, {}, dev()), {5}, dtypes::int32, {0, 1, 2, 3, 4});
  expect_values(Tensor::arange(2, 11, 3, {}, dev()), {3}, dtypes::int32, {2, 5, 8});
  expect_values(Tensor::arange(10, 0, -3, {}, dev()), {4}, dtypes::int32, {10, 7, 4, 1});
  expect_values(Tensor::arange(-3, 2, 1, dtypes::int8, dev()), {5}, dtypes::int8,
                {-3, -2, -1, 0, 1});
  expect_values(Tensor::arange(0, 10, 4, dtypes::float32, dev()), {3}, dtypes::float32, {0, 4, 8});
  const int64_t big = int64_t{1} << 40;
  expect_values(
      Tensor::arange(big, big + 3 * 7, int64_t{7}, dtypes::int64, dev()), {3}, dtypes::int64,
      {static_cast<double>(big), static_cast<double>(big + 7), static_cast<double>(big + 14)});
  // Empty ranges have size 0, whichever way they point.
  EXPECT_EQ(Tensor::arange(5, 5, 1, {}, dev()).shape(), Shape{0});
  EXPECT_EQ(Tensor::arange(5, 0, 1, {}, dev()).shape(), Shape{0});
  EXPECT_EQ(Tensor::arange(0, 5, -1, {}, dev()).shape(), Shape{0});
  EXPECT_EQ(Tensor::arange(-4, {}, dev()).numel(), 0);
  EXPECT_EQ(Tensor::arange(0, 10, 3, {}, dev()).numel(), 4);
  EXPECT_EQ(Tensor::arange(INT64_MIN, INT64_MAX, INT64_MAX, {}, dev()).numel(), 3);
  EXPECT_THROW((void)Tensor::arange(0, 5, 0), ShapeError);
  EXPECT_THROW((void)Tensor::arange(0, 5, 1, dtypes::bool_), DTypeError);
}

TEST_P(CreationTest, ArangeDoubles) {
  std::vector<double> tenths;
  for (int i = 0; i < 10; ++i) tenths.push_back(static_cast<float>(i * static_cast<float>(0.1)));
  expect_values(Tensor::arange(0.0, 1.0, 0.1, {}, dev()), {10}, dtypes::float32, tenths, 1e-7);
  expect_values(Tensor::arange(1.0, -1.0, -0.25, {}, dev()), {8}, dtypes::float32,
                {1, 0.75, 0.5, 0.25, 0, -0.25, -0.5, -0.75});
  expect_values(Tensor::arange(0.5, 3.0, 1.0, dtypes::float64, dev()), {3}, dtypes::float64,
                {0.5, 1.5, 2.5});
  EXPECT_EQ(Tensor::arange(0.0, 0.0, 1.0, {}, dev()).shape(), Shape{0});
  EXPECT_EQ(Tensor::arange(0.0, -1.0, 0.5, {}, dev()).shape(), Shape{0});
  EXPECT_EQ(Tensor::arange(0.0, 1.0, 0.3, {}, dev()).numel(), 4);  // ceil(3.33)
  EXPECT_THROW((void)Tensor::arange(0.0, 1.0, 0.0), ShapeError);
}

TEST_P(CreationTest, Linspace) {
  expect_values(Tensor::linspace(0, 1, 5, {}, dev()), {5}, dtypes::float32,
                {0, 0.25, 0.5, 0.75, 1});
  // Both ends are exact (the second half counts down from stop).
  const std::vector<double> got = values_of(Tensor::linspace(-1.3, 2.7, 7, {}, dev()));
  ASSERT_EQ(got.size(), 7u);
  EXPECT_EQ(got.front(), static_cast<float>(-1.3));
  EXPECT_EQ(got.back(), static_cast<float>(2.7));
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(got[i], -1.3 + i * (4.0 / 6), 1e-6) << i;
  expect_values(Tensor::linspace(1, 0, 3, dtypes::float64, dev()), {3}, dtypes::float64,
                {1, 0.5, 0});
  expect_values(Tensor::linspace(0, 10, 6, dtypes::int32, dev()), {6}, dtypes::int32,
                {0, 2, 4, 6, 8, 10});
  expect_values(Tensor::linspace(2, 5, 1, {}, dev()), {1}, dtypes::float32, {2});
  EXPECT_EQ(Tensor::linspace(2, 5, 0, {}, dev()).shape(), Shape{0});
  EXPECT_THROW((void)Tensor::linspace(0, 1, -1), ShapeError);
}

TEST_P(CreationTest, Eye) {
  expect_values(Tensor::eye(3, {}, dev()), {3, 3}, dtypes::float32, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  expect_values(Tensor::eye(2, dtypes::int32, dev()), {2, 2}, dtypes::int32, {1, 0, 0, 1});
  expect_values(Tensor::eye(1, dtypes::bool_, dev()), {1, 1}, dtypes::bool_, {1});
  EXPECT_EQ(Tensor::eye(0, {}, dev()).shape(), (Shape{0, 0}));
  EXPECT_THROW((void)Tensor::eye(-1), ShapeError);
}

// ---- random -------------------------------------------------------------------------------------

// Threefry-2x32 with 20 rounds, as in Random123 (the construction random.cpp documents).
std::pair<uint32_t, uint32_t> threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  const int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  x0 += ks[0];
  x1 += ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = (x1 << rotations[r % 8]) | (x1 >> (32 - rotations[r % 8]));
    x1 ^= x0;
    if (r % 4 == 3) {
      const uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

// The words of element j of the c-th call after manual_seed(seed).
std::pair<uint32_t, uint32_t> words(uint64_t seed, uint32_t call, uint32_t j) {
  return threefry2x32(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), j, call);
}

std::vector<double> expected_rand(uint64_t seed, uint32_t call, int64_t n, DType dt) {
  std::vector<double> out;
  for (int64_t j = 0; j < n; ++j) {
    const auto [y0, y1] = words(seed, call, static_cast<uint32_t>(j));
    if (dt == dtypes::float64)
      out.push_back((static_cast<double>(y0) * 0x1p21 + static_cast<double>(y1 >> 11)) * 0x1p-53);
    else if (dt == dtypes::float16)
      out.push_back(static_cast<double>(y0 >> 21) * 0x1p-11);
    else if (dt == dtypes::bfloat16)
      out.push_back(static_cast<double>(y0 >> 24) * 0x1p-8);
    else
      out.push_back(static_cast<double>(y0 >> 8) * 0x1p-24);
  }
  return out;
}

// Random123's known-answer vectors for threefry2x32_20 (also in JAX's tests).
TEST(Threefry, KnownAnswers) {
  EXPECT_EQ(threefry2x32(0, 0, 0, 0), std::make_pair(0x6b200159u, 0x99ba4efeu));
  EXPECT_EQ(threefry2x32(~0u, ~0u, ~0u, ~0u), std::make_pair(0x1cb996fcu, 0xbb002be7u));
  EXPECT_EQ(threefry2x32(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3),
            std::make_pair(0xc4923a9cu, 0x483df7a0u));
}

std::pair<double, double> mean_and_variance(const std::vector<double>& v) {
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return {m, s / static_cast<double>(v.size())};
}

// 10^5 samples each, compared value for value with the host construction, and their moments
// (deterministic for the seed; the bounds are over 5 standard errors).
TEST_P(CreationTest, RandMatchesHostThreefry) {
  const uint64_t seed = 0x123456789abcdefull;  // both key words nonzero
  const int64_t n = 100000;
  Tensor::manual_seed(seed);
  const Tensor a = Tensor::rand({n}, {}, dev());
  const Tensor b = Tensor::rand({n}, {}, dev());  // the next call: a fresh stream
  const Tensor h = Tensor::rand({17}, dtypes::float16, dev());
  const Tensor bf = Tensor::rand({17}, dtypes::bfloat16, dev());
  const Tensor d = Tensor::rand({17}, dtypes::float64, dev());
  expect_values(a, {n}, dtypes::float32, expected_rand(seed, 0, n, dtypes::float32));
  expect_values(b, {n}, dtypes::float32, expected_rand(seed, 1, n, dtypes::float32));
  expect_values(h, {17}, dtypes::float16, expected_rand(seed, 2, 17, dtypes::float16));
  expect_values(bf, {17}, dtypes::bfloat16, expected_rand(seed, 3, 17, dtypes::bfloat16));
  expect_values(d, {17}, dtypes::float64, expected_rand(seed, 4, 17, dtypes::float64));
  const std::vector<double> av = values_of(a);
  for (double x : av) ASSERT_TRUE(x >= 0 && x < 1) << x;
  const auto [am, avar] = mean_and_variance(av);
  EXPECT_NEAR(am, 0.5, 0.005);
  EXPECT_NEAR(avar, 1.0 / 12, 0.002);

  // Reseeding repeats the stream; another seed gives other numbers.
  Tensor::manual_seed(seed);
  EXPECT_EQ(values_of(Tensor::rand({n}, {}, dev())), av);
  Tensor::manual_seed(seed + 1);
  EXPECT_NE(values_of(Tensor::rand({n}, {}, dev())), av);

  // randn: Box-Muller of both words in float32 (log, sqrt, cos: a few ulp).
  Tensor::manual_seed(7);
  const Tensor z = Tensor::randn({n}, {}, dev());
  std::vector<double> expected_z;
  for (uint32_t j = 0; j < n; ++j) {
    const auto [y0, y1] = words(7, 0, j);
    const double u1 = static_cast<double>((y0 >> 8) + 1) * 0x1p-24;
    const double u2 = static_cast<double>(y1 >> 8) * 0x1p-24;
    expected_z.push_back(std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
  }
  expect_values(z, {n}, dtypes::float32, expected_z, 1e-5, 1e-5);
  const auto [zm, zvar] = mean_and_variance(values_of(z));
  EXPECT_NEAR(zm, 0.0, 0.02);
  EXPECT_NEAR(zvar, 1.0, 0.03);

  // randint: low + y0 mod (high - low); 64-bit words past 2^32; the full int32 range.
  const Tensor k = Tensor::randint({n}, -3, 7, {}, dev());
  const Tensor w = Tensor::randint({4}, 3, (int64_t{1} << 40) + 3, dtypes::int64, dev());
  const Tensor full = Tensor::randint({4}, INT32_MIN, int64_t{1} << 31, {}, dev());
  std::vector<double> ek, ew, ef;
  for (uint32_t j = 0; j < n; ++j)
    ek.push_back(-3 + static_cast<double>(words(7, 1, j).first % 10));
  for (uint32_t j = 0; j < 4; ++j) {
    const auto [y0, y1] = words(7, 2, j);
    const uint64_t v = ((static_cast<uint64_t>(y0) << 32) | y1) % (uint64_t{1} << 40);
    ew.push_back(3 + static_cast<double>(v));
    ef.push_back(static_cast<double>(static_cast<int32_t>(words(7, 3, j).first + 0x80000000u)));
  }
  expect_values(k, {n}, dtypes::int32, ek);
  expect_values(w, {4}, dtypes::int64, ew);
  expect_values(full, {4}, dtypes::int32, ef);
  std::map<double, int64_t> counts;
  for (double x : ek) ++counts[x];
  ASSERT_EQ(counts.size(), 10u);
  for (const auto& [value, count] : counts)
    EXPECT_NEAR(static_cast<double>(count), 10000, 600) << value;

  // uniform: low + rand * (high - low), in float32.
  const Tensor u = Tensor::uniform({9}, -2.0, 3.0, {}, dev());
  std::vector<double> eu = expected_rand(7, 4, 9, dtypes::float32);
  for (double& x : eu) x = -2.0 + x * 5.0;
  expect_values(u, {9}, dtypes::float32, eu, 1e-6, 1e-6);
}

TEST_P(CreationTest, RandShapesAndErrors) {
  EXPECT_EQ(Tensor::rand({0, 3}, {}, dev()).shape(), (Shape{0, 3}));
  expect_values(Tensor::randn({2, 0}, {}, dev()), {2, 0}, dtypes::float32, {});
  const Tensor s = Tensor::rand({}, {}, dev());
  EXPECT_EQ(s.shape(), Shape{});
  const double v = s.item<float>();
  EXPECT_TRUE(v >= 0 && v < 1);
  EXPECT_THROW((void)Tensor::rand({2}, dtypes::int32), DTypeError);
  EXPECT_THROW((void)Tensor::randn({2}, dtypes::bool_), DTypeError);
  EXPECT_THROW((void)Tensor::rand({-1, 2}), ShapeError);
  EXPECT_THROW((void)Tensor::randint({2}, 5, 5), ShapeError);
  EXPECT_THROW((void)Tensor::randint({2}, 5, 1), Error);
  EXPECT_THROW((void)Tensor::randint({2}, 0, 300, dtypes::int8), DTypeError);
  EXPECT_THROW((void)Tensor::randint({2}, 0, 3, dtypes::float32), DTypeError);
  EXPECT_EQ(Tensor::randint({2}, 0, 3, dtypes::uint8, dev()).dtype(), dtypes::uint8);
}

VKGRAD_ALL_DEVICES(CreationTest);

}  // namespace
}  // namespace vkgrad
