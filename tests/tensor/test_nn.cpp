// tests/tensor: matmul, linear, conv2d, conv_transpose2d, the pools, the normalizations, the losses
// and attention (ops_nn.cpp) against plain double-precision loops written here, on every device:
// odd sizes, size 0, non-contiguous and broadcast operands, and every error the ops raise.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad::testing {
namespace {

using Index = std::vector<int64_t>;

class NnTest : public DeviceTest {};

constexpr double kInf = std::numeric_limits<double>::infinity();

// Float32-exact random values (what the device holds), for the references.
std::vector<double> rand32(int64_t n, double lo, double hi, uint64_t seed) {
  std::vector<double> v = random_values(n, lo, hi, seed);
  for (double& x : v) x = round_to(x, dtypes::float32);
  return v;
}

std::vector<double> build(const Shape& shape, const std::function<double(const Index&)>& f) {
  std::vector<double> out(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = f(unflatten_index(static_cast<int64_t>(i), shape));
  return out;
}

std::string str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

double at(const std::vector<double>& v, const Shape& shape, const Index& idx) {
  const std::vector<int64_t> st = strides_of(shape);
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
  return v[static_cast<size_t>(off)];
}

void expect_still_works(const std::string& dev) {
  Tensor a = make_tensor({1, 2, 3, 4}, {2, 2}, dtypes::float32, dev);
  expect_values(a.matmul(a), {2, 2}, dtypes::float32, {7, 10, 15, 22});
}

// ---- matmul -------------------------------------------------------------------------------------

// (M, K) @ (K, N) in double.
std::vector<double> ref_mm(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                           int64_t k, int64_t n) {
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        out[static_cast<size_t>(i * n + j)] +=
            a[static_cast<size_t>(i * k + p)] * b[static_cast<size_t>(p * n + j)];
  return out;
}

TEST_P(NnTest, Matmul2d) {
  struct Case {
    int64_t m, k, n;
  };
  // The last three are large enough for the CPU's GEMM: 40 columns read A where it lies (100
  // rows: a last panel of 4), 200 pack it, and 9 columns are one vector wide.
  for (const Case c : {Case{3, 17, 5}, Case{1, 1, 1}, Case{4, 257, 3}, Case{100, 300, 40},
                       Case{64, 160, 200}, Case{300, 400, 9}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n));
    const std::vector<double> a = rand32(c.m * c.k, -1, 1, 10), b = rand32(c.k * c.n, -1, 1, 11);
    Tensor ta = make_tensor(a, {c.m, c.k}, dtypes::float32, dev());
    Tensor tb = make_tensor(b, {c.k, c.n}, dtypes::float32, dev());
    expect_values(ta.matmul(tb), {c.m, c.n}, dtypes::float32, ref_mm(a, b, c.m, c.k, c.n), 1e-5,
                  1e-5);
  }
  // Integers are exact; float64 stays float64.
  const std::vector<double> ai = random_ints(12, -50, 50, 12), bi = random_ints(8, -50, 50, 13);
  expect_values(make_tensor(ai, {3, 4}, dtypes::int32, dev())
                    .matmul(make_tensor(bi, {4, 2}, dtypes::int32, dev())),
                {3, 2}, dtypes::int32, ref_mm(ai, bi, 3, 4, 2));
  const std::vector<double> ad = random_values(6, -1, 1, 14), bd = random_values(6, -1, 1, 15);
  expect_values(make_tensor(ad, {2, 3}, dtypes::float64, dev())
                    .matmul(make_tensor(bd, {3, 2}, dtypes::float64, dev())),
                {2, 2}, dtypes::float64, ref_mm(ad, bd, 2, 3, 2), 1e-12);
  // Mixed dtypes promote (int32 @ float32 -> float32).
  expect_values(make_tensor(ai, {3, 4}, dtypes::int32, dev())
                    .matmul(make_tensor(bi, {4, 2}, dtypes::float32, dev())),
                {3, 2}, dtypes::float32, ref_mm(ai, bi, 3, 4, 2));
}

TEST_P(NnTest, MatmulSize0) {
  // A size-0 inner dimension sums nothing: zeros. Size-0 outer dimensions give empty results.
  expect_values(Tensor::ones({2, 0}, {}, dev()).matmul(Tensor::ones({0, 3}, {}, dev())), {2, 3},
                dtypes::float32, std::vector<double>(6, 0.0));
  EXPECT_EQ(Tensor::ones({0, 4}, {}, dev()).matmul(Tensor::ones({4, 3}, {}, dev())).shape(),
            (Shape{0, 3}));
}

TEST_P(NnTest, MatmulVectors) {
  const std::vector<double> u = rand32(5, -1, 1, 20), w = rand32(15, -1, 1, 21);
  Tensor tu = make_tensor(u, {5}, dtypes::float32, dev());
  Tensor tw = make_tensor(w, {5, 3}, dtypes::float32, dev());
  double dot = 0;
  for (size_t i = 0; i < 5; ++i) dot += u[i] * u[i];
  expect_values(tu.dot(tu), {}, dtypes::float32, {dot}, 1e-6, 1e-6);
  expect_values(tu.matmul(tw), {3}, dtypes::float32, ref_mm(u, w, 1, 5, 3), 1e-6, 1e-6);
  // (3, 5) @ (5): the transposed view of tw.
  std::vector<double> wt(15);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      wt[static_cast<size_t>(i * 5 + j)] = w[static_cast<size_t>(j * 3 + i)];
  expect_values(tw.T().matmul(tu), {3}, dtypes::float32, ref_mm(wt, u, 3, 5, 1), 1e-6, 1e-6);
  // Batched with a vector on either side.
  Tensor batch = make_tensor(w, {1, 3, 5}, dtypes::float32, dev()).expand({2, 3, 5});
  std::vector<double> bv = ref_mm(w, u, 3, 5, 1);
  bv.insert(bv.end(), bv.begin(), bv.end());
  expect_values(batch.matmul(tu), {2, 3}, dtypes::float32, bv, 1e-6, 1e-6);
  std::vector<double> vb = ref_mm(u, w, 1, 5, 3);
  vb.insert(vb.end(), vb.begin(), vb.end());
  expect_values(tu.matmul(tw.reshape({1, 5, 3}).expand({2, 5, 3})), {2, 3}, dtypes::float32, vb,
                1e-6, 1e-6);
}

TEST_P(NnTest, MatmulBatchedBroadcastNonContiguous) {
  // a: (2, 1, 3, 4) built as a permuted (2, 1, 4, 3); b: (3, 4, 5) flipped along its batch.
  const std::vector<double> a = rand32(24, -1, 1, 30), b = rand32(60, -1, 1, 31);
  Tensor ta = make_tensor(a, {2, 1, 4, 3}, dtypes::float32, dev()).transpose();
  Tensor tb = make_tensor(b, {3, 4, 5}, dtypes::float32, dev()).flip(0);
  Tensor out = matmul(ta, tb);
  expect_values(out, {2, 3, 3, 5}, dtypes::float32,
                build({2, 3, 3, 5},
                      [&](const Index& i) {
                        double acc = 0;
                        for (int64_t p = 0; p < 4; ++p)
                          acc += at(a, {2, 1, 4, 3}, {i[0], 0, p, i[2]}) *
                                 at(b, {3, 4, 5}, {2 - i[1], p, i[3]});
                        return acc;
                      }),
                1e-5, 1e-6);
  // The relu epilogue (fused into the matmul kernel) gives the same numbers, clamped.
  std::vector<double> relu = values_of(out);
  for (double& x : relu) x = std::max(x, 0.0);
  expect_values(matmul(ta, tb).relu(), {2, 3, 3, 5}, dtypes::float32, relu);
}

TEST_P(NnTest, Linear) {
  const std::vector<double> x = rand32(6, -1, 1, 40), w = rand32(12, -1, 1, 41),
                            b = rand32(4, -1, 1, 42);
  Tensor tx = make_tensor(x, {2, 3}, dtypes::float32, dev());
  Tensor tw = make_tensor(w, {3, 4}, dtypes::float32, dev());
  Tensor tb = make_tensor(b, {4}, dtypes::float32, dev());
  std::vector<double> want = ref_mm(x, w, 2, 3, 4);
  for (size_t i = 0; i < want.size(); ++i) want[i] += b[i % 4];
  expect_values(tx.linear(tw, tb), {2, 4}, dtypes::float32, want, 1e-6, 1e-6);
  expect_values(tx.linear(tw), {2, 4}, dtypes::float32, ref_mm(x, w, 2, 3, 4), 1e-6, 1e-6);
  // A 1-D weight scales elementwise (tinygrad).
  Tensor w1 = make_tensor({2, 3, 4}, {3}, dtypes::float32, dev());
  expect_values(tx.linear(w1), {2, 3}, dtypes::float32,
                build({2, 3},
                      [&](const Index& i) {
                        return x[static_cast<size_t>(i[0] * 3 + i[1])] *
                               (2.0 + static_cast<double>(i[1]));
                      }),
                1e-6);
}

TEST_P(NnTest, MatmulErrors) {
  Tensor a = Tensor::zeros({2, 3}, {}, dev());
  Tensor b = Tensor::zeros({4, 5}, dtypes::int32, dev());
  expect_error<ShapeError>([&] { a.matmul(b); }, {"matmul", "(2, 3) float32", "(4, 5) int32"});
  expect_error<ShapeError>(
      [&] { matmul(Tensor::zeros({3}, {}, dev()), Tensor::zeros({4}, {}, dev())); },
      {"matmul", "(3,)", "(4,)"});
  expect_error<ShapeError>([&] { a.matmul(Tensor::scalar(2.0, {}, dev())); },
                           {"matmul", "(2, 3)", "()"});
  expect_error<ShapeError>(
      [&] {
        Tensor::zeros({2, 2, 3}, {}, dev()).matmul(Tensor::zeros({3, 3, 4}, {}, dev()));
      },
      {"matmul", "(2, 2, 3)", "(3, 3, 4)"});
  expect_error<ShapeError>(
      [&] {
        a.linear(Tensor::zeros({2, 3}, {}, dev()));
      },
      {"matmul", "(2, 3)"});
  expect_still_works(dev());
}

// ---- convolutions -------------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;  // (N, C, H, W), (O, C/g, kh, kw)
  Int2 stride = 1, padding = 0, dilation = 1;
  int64_t groups = 1;
  bool bias = false;
};

std::vector<double> ref_conv2d(const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b, const ConvCase& c, Shape& out) {
  const int64_t n = c.x[0], cin = c.x[1], h = c.x[2], wd = c.x[3];
  const int64_t o = c.w[0], cg = c.w[1], kh = c.w[2], kw = c.w[3], og = o / c.groups;
  const int64_t oh = (h + 2 * c.padding.h - c.dilation.h * (kh - 1) - 1) / c.stride.h + 1;
  const int64_t ow = (wd + 2 * c.padding.w - c.dilation.w * (kw - 1) - 1) / c.stride.w + 1;
  out = {n, o, oh, ow};
  return build(out, [&](const Index& i) {
    const int64_t g = i[1] / og;
    double acc = c.bias ? b[static_cast<size_t>(i[1])] : 0.0;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t iy = i[2] * c.stride.h - c.padding.h + ky * c.dilation.h;
          const int64_t ix = i[3] * c.stride.w - c.padding.w + kx * c.dilation.w;
          if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
          // Row-major offsets written out (at() per element dominated the sanitizer build).
          const int64_t xo = ((i[0] * cin + g * cg + ci) * h + iy) * wd + ix;
          const int64_t wo = ((i[1] * cg + ci) * kh + ky) * kw + kx;
          acc += x[static_cast<size_t>(xo)] * w[static_cast<size_t>(wo)];
        }
    return acc;
  });
}

// Each case's conv2d on `device` against ref_conv2d, from random inputs seeded from `seed` on.
void expect_conv2d(std::span<const ConvCase> cases, uint64_t seed, const std::string& device) {
  for (const ConvCase& c : cases) {
    SCOPED_TRACE("conv2d x" + str(c.x) + " w" + str(c.w) + " stride " + std::to_string(c.stride.h) +
                 " padding " + std::to_string(c.padding.h) + " dilation " +
                 std::to_string(c.dilation.h) + " groups " + std::to_string(c.groups));
    const std::vector<double> x = rand32(numel_of(c.x), -1, 1, seed++);
    const std::vector<double> w = rand32(numel_of(c.w), -1, 1, seed++);
    const std::vector<double> b = rand32(c.w[0], -1, 1, seed++);
    Shape out;
    const std::vector<double> want = ref_conv2d(x, w, b, c, out);
    std::optional<Tensor> bias;
    if (c.bias) bias = make_tensor(b, {c.w[0]}, dtypes::float32, device);
    Tensor got = make_tensor(x, c.x, dtypes::float32, device)
                     .conv2d(make_tensor(w, c.w, dtypes::float32, device), bias, c.stride,
                             c.padding, c.dilation, c.groups);
    expect_values(got, out, dtypes::float32, want, 1e-5, 1e-5);
  }
}

TEST_P(NnTest, Conv2d) {
  const ConvCase cases[] = {
      // stride, padding, dilation and groups together, pairs differing per dimension, bias
      {{2, 4, 7, 6}, {6, 2, 3, 2}, {2, 1}, {1, 2}, {1, 2}, 2, true},
      // 1x1 kernel, one channel, odd size
      {{1, 1, 5, 3}, {3, 1, 1, 1}, 1, 0, 1, 1, false},
      // depthwise (groups = channels), stride 3 larger than the kernel (non-overlapping windows)
      {{1, 3, 8, 7}, {3, 1, 2, 2}, 3, 0, 1, 3, true},
      // kernel as large as the padded input
      {{2, 2, 3, 3}, {1, 2, 5, 5}, 1, 1, 1, 1, false},
  };
  expect_conv2d(cases, 50, dev());
}

TEST_P(NnTest, Conv2dEveryShapeKind) {
  // Together the cases cover stride 1/2/3, padding 0-3, dilation 1/2, groups 1/2/C (depthwise),
  // kernels 1/3/5/7 and batch 1/3/32, each at a small size.
  const ConvCase cases[] = {
      {{1, 3, 11, 11}, {4, 3, 7, 7}, 2, 3, 1, 1, true},   // a stem: 7x7 stride 2 pad 3
      {{3, 4, 9, 9}, {6, 2, 3, 3}, 1, 1, 2, 2, false},    // dilated, two groups, batch 3
      {{32, 2, 5, 5}, {3, 2, 1, 1}, 2, 0, 1, 1, true},    // strided 1x1, batch 32
      {{1, 6, 8, 8}, {6, 1, 3, 3}, 1, 1, 1, 6, true},     // depthwise 3x3
      {{2, 4, 10, 10}, {4, 1, 5, 5}, 3, 2, 1, 4, false},  // depthwise 5x5 stride 3
      {{1, 2, 12, 12}, {2, 2, 5, 5}, 1, 0, 2, 1, false},  // dilated 5x5, no padding
      {{3, 4, 6, 6}, {4, 2, 3, 3}, 2, 2, 1, 2, true},     // padding 2, stride 2, groups 2
      {{1, 8, 7, 7}, {16, 8, 1, 1}, 1, 0, 1, 1, false},   // pointwise
      {{1, 3, 8, 8}, {2, 3, 3, 3}, 3, 1, 1, 1, true},     // stride 3
      {{2, 2, 6, 6}, {3, 2, 3, 3}, 1, 3, 1, 1, false},    // padding 3, wider than the kernel
      {{1, 6, 9, 9}, {6, 1, 3, 3}, 2, 1, 1, 6, false},    // depthwise stride 2
      // Large enough for the CPU's GEMM: 7 x 7 outputs read the weights where they lie (40
      // rows: a last panel of 4), 14 x 14 pack them; a stem-like 7x7 stride 2.
      {{1, 64, 7, 7}, {40, 64, 3, 3}, 1, 1, 1, 1, true},
      {{1, 32, 14, 14}, {24, 32, 3, 3}, 1, 1, 1, 1, false},
      {{1, 3, 40, 40}, {16, 3, 7, 7}, 2, 3, 1, 1, false},
  };
  expect_conv2d(cases, 150, dev());
}

TEST_P(NnTest, Conv2dWholeSubgroupLanes) {
  // Where a device's lanes share uniform loads through shuffles (lavapipe 22), the heuristics
  // give these a whole subgroup of lanes instead of 7 or 14 pixel lanes: a 1 x 1 along its
  // output channels (the input's loads are then shared), a stride-2 3 x 3 along its output
  // channels, a 3 x 3 with 48 rows along them. (Elsewhere they are ordinary convolutions.)
  const ConvCase cases[] = {
      {{1, 128, 14, 14}, {64, 128, 1, 1}, 1, 0, 1, 1, true},
      {{1, 32, 20, 20}, {64, 32, 1, 1}, 1, 0, 1, 1, false},  // 4 columns a tile: rows by 2
      {{1, 16, 28, 28}, {64, 16, 3, 3}, 2, 1, 1, 1, false},
      {{1, 8, 48, 28}, {16, 8, 3, 3}, 1, 1, 1, 1, true},
      {{1, 3, 32, 32}, {64, 3, 7, 7}, 2, 3, 1, 1, true},  // a stem: its window's columns unrolled
  };
  expect_conv2d(cases, 185, dev());
}

TEST_P(NnTest, Conv2dGemmSizedWithPadding) {
  // The CPU's GEMM packs each convolution's im2col with the padding masked: stride 1, 2 and 3,
  // padding 1, 2 and 3, dilation 2, a 5x5 kernel, each just large enough for the GEMM. (On
  // other devices these are ordinary reductions, covered above at small sizes.)
  if (dev() != "CPU") GTEST_SKIP() << "the packed GEMM is the CPU's";
  const ConvCase cases[] = {
      {{1, 8, 30, 30}, {32, 8, 3, 3}, 1, 1, 1, 1, false},
      {{1, 16, 33, 33}, {32, 16, 3, 3}, 2, 3, 1, 1, true},
      {{1, 32, 29, 29}, {64, 32, 3, 3}, 3, 2, 2, 1, false},
      {{1, 4, 26, 26}, {32, 4, 5, 5}, 1, 2, 1, 1, true},
  };
  expect_conv2d(cases, 190, dev());
}

TEST_P(NnTest, Conv2dGemmSizedWindows) {
  // Convolutions the CPU's GEMM reads from a padded copy of the input (a plane per input channel
  // and stride phase) instead of packing the im2col: valid and padded, a 3 x 5 kernel on a wide
  // input, a single input channel, padding wider than the kernel needs, a batch the threads
  // split, bias; strides 2 and 3 (a stem's 7 x 7, a valid conv whose phase planes reach past its
  // last tap), different strides along rows and columns.
  if (dev() != "CPU") GTEST_SKIP() << "the packed GEMM is the CPU's";
  const ConvCase cases[] = {
      {{1, 8, 30, 30}, {32, 8, 3, 3}, 1, 0, 1, 1, false},
      {{1, 6, 17, 41}, {24, 6, 3, 5}, 1, {1, 2}, 1, 1, true},
      {{1, 1, 64, 40}, {32, 1, 5, 5}, 1, 2, 1, 1, false},
      {{1, 8, 20, 20}, {16, 8, 3, 3}, 1, 3, 1, 1, true},
      {{8, 4, 18, 18}, {16, 4, 3, 3}, 1, 1, 1, 1, false},
      {{1, 3, 46, 46}, {32, 3, 7, 7}, 2, 3, 1, 1, true},
      {{1, 16, 45, 45}, {32, 16, 3, 3}, 2, 1, 1, 1, false},
      {{1, 8, 50, 50}, {32, 8, 5, 5}, 3, 0, 1, 1, false},
      {{1, 8, 41, 29}, {32, 8, 3, 3}, {2, 1}, {0, 1}, 1, 1, false},
  };
  expect_conv2d(cases, 195, dev());
}

TEST_P(NnTest, Conv2dGemmWindowOfAConcatenation) {
  // Two inputs concatenated along the channels and convolved: the concatenation's masks (on the
  // channel, each input's the other's negation) join the padding's among the window copy's row
  // masks, which then never all hold, so every row copies the masked value. Stride 1 and 2.
  if (dev() != "CPU") GTEST_SKIP() << "the packed GEMM is the CPU's";
  const ConvCase cases[] = {
      {{1, 8, 30, 30}, {32, 8, 3, 3}, 1, 1, 1, 1, false},
      {{1, 16, 33, 33}, {32, 16, 3, 3}, 2, 2, 1, 1, true},
  };
  uint64_t seed = 197;
  for (const ConvCase& c : cases) {
    const std::vector<double> x = rand32(numel_of(c.x), -1, 1, seed++);
    const std::vector<double> w = rand32(numel_of(c.w), -1, 1, seed++);
    const std::vector<double> b = rand32(c.w[0], -1, 1, seed++);
    Shape out;
    const std::vector<double> want = ref_conv2d(x, w, b, c, out);
    const int64_t half = numel_of(c.x) / 2;
    Shape part = c.x;
    part[1] /= 2;
    const Tensor first = make_tensor({x.begin(), x.begin() + half}, part, dtypes::float32, dev()),
                 second = make_tensor({x.begin() + half, x.end()}, part, dtypes::float32, dev());
    std::optional<Tensor> bias;
    if (c.bias) bias = make_tensor(b, {c.w[0]}, dtypes::float32, dev());
    const Tensor got = cat({first, second}, 1)
                           .conv2d(make_tensor(w, c.w, dtypes::float32, dev()), bias, c.stride,
                                   c.padding, c.dilation);
    expect_values(got, out, dtypes::float32, want, 1e-5, 1e-5);
  }
}

TEST_P(NnTest, Conv2dFusedEpilogues) {
  // A ResNet stem and a downsampling block as a network builds them: conv, per-channel scale
  // and shift (BatchNorm in eval mode), an activation, a max-pool with padding, a residual add
  // of a strided 1x1 conv. The conv's reduction stays unpadded and the block's two convs are
  // separate reductions; the values match double precision.
  const ConvCase stem{{1, 3, 12, 12}, {4, 3, 7, 7}, 2, 3, 1, 1, false};
  const ConvCase conv2{{1, 4, 3, 3}, {8, 4, 3, 3}, 1, 1, 1, 1, false};
  const ConvCase down{{1, 4, 3, 3}, {8, 4, 1, 1}, 1, 0, 1, 1, false};
  const std::vector<double> x = rand32(numel_of(stem.x), -1, 1, 170);
  const std::vector<double> w1 = rand32(numel_of(stem.w), -1, 1, 171);
  const std::vector<double> w2 = rand32(numel_of(conv2.w), -1, 1, 172);
  const std::vector<double> wd = rand32(numel_of(down.w), -1, 1, 173);
  const std::vector<double> scale = rand32(8, 0.5, 1.5, 174), shift = rand32(8, -0.5, 0.5, 175);
  // Reference: stem -> scale/shift -> relu -> max-pool 3x3 stride 2 pad 1 -> (conv2 -> gelu)
  // + down.
  Shape s1;
  std::vector<double> y = ref_conv2d(x, w1, {}, stem, s1);  // (1, 4, 6, 6)
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t ch = (i / 36) % 4;
    y[i] = std::max(0.0, y[i] * scale[ch] + shift[ch]);
  }
  const Shape pooled{1, 4, 3, 3};
  const std::vector<double> p = build(pooled, [&](const Index& i) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t ky = 0; ky < 3; ++ky)
      for (int64_t kx = 0; kx < 3; ++kx) {
        const int64_t iy = i[2] * 2 - 1 + ky, ix = i[3] * 2 - 1 + kx;
        if (iy >= 0 && iy < 6 && ix >= 0 && ix < 6) m = std::max(m, at(y, s1, {0, i[1], iy, ix}));
      }
    return m;
  });
  Shape s2, sd;
  const std::vector<double> a = ref_conv2d(p, w2, {}, conv2, s2),
                            r = ref_conv2d(p, wd, {}, down, sd);
  std::vector<double> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double v = a[i];
    want[i] = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))) + r[i];
  }

  auto t = [&](const std::vector<double>& v, const Shape& s) {
    return make_tensor(v, s, dtypes::float32, dev());
  };
  Tensor ty = t(x, stem.x).conv2d(t(w1, stem.w), std::nullopt, 2, 3);
  ty = (ty * t({scale.begin(), scale.begin() + 4}, {1, 4, 1, 1}) +
        t({shift.begin(), shift.begin() + 4}, {1, 4, 1, 1}))
           .relu()
           .max_pool2d(3, 2, 1);
  Tensor out = ty.conv2d(t(w2, conv2.w), std::nullopt, 1, 1).gelu() +
               ty.conv2d(t(wd, down.w), std::nullopt, 1, 0);
  // The stem conv with its scale, shift and relu over its own 6x6 outputs, the pool (reading
  // them with the -inf border as masks: no padded copy), the 1x1 conv stored, the 3x3 conv with
  // the gelu and the residual add as its epilogue.
  std::vector<std::string> names;
  for (const KernelInfo& k : out.schedule()) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"r_4_6_6_3_7_7", "r_4_3_3_3_3", "r_8_3_3_4",
                                             "r_8_3_3_4_3_3"}));
  expect_values(out, s2, dtypes::float32, want, 1e-4, 1e-4);
}

TEST_P(NnTest, Conv2dNonContiguousUnbatchedInt) {
  // Input given channels-last (N, H, W, C) and permuted to NCHW; weight flipped in its kernel.
  const ConvCase c{{1, 3, 5, 4}, {2, 3, 3, 3}, 1, 1, 1, 1, false};
  const std::vector<double> nhwc = rand32(60, -1, 1, 60), wf = rand32(54, -1, 1, 61);
  const std::vector<double> x = build(c.x, [&](const Index& i) {
    return at(nhwc, {1, 5, 4, 3}, {i[0], i[2], i[3], i[1]});
  });
  const std::vector<double> w = build(c.w, [&](const Index& i) {
    return at(wf, c.w, {i[0], i[1], 2 - i[2], i[3]});
  });
  Shape out;
  const std::vector<double> want = ref_conv2d(x, w, {}, c, out);
  Tensor tx = make_tensor(nhwc, {1, 5, 4, 3}, dtypes::float32, dev()).permute({0, 3, 1, 2});
  Tensor tw = make_tensor(wf, c.w, dtypes::float32, dev()).flip(2);
  expect_values(tx.conv2d(tw, std::nullopt, 1, 1), out, dtypes::float32, want, 1e-5, 1e-5);
  // Unbatched (C, H, W) input gives (O, oh, ow).
  Shape unbatched(out.begin() + 1, out.end());
  expect_values(tx.squeeze(0).conv2d(tw, std::nullopt, 1, 1), unbatched, dtypes::float32, want,
                1e-5, 1e-5);
  // Integer convolution is exact.
  const ConvCase ci{{1, 2, 4, 4}, {2, 1, 2, 2}, 2, 1, 1, 2, false};
  const std::vector<double> xi = random_ints(32, -9, 9, 62), wi = random_ints(8, -9, 9, 63);
  Shape outi;
  const std::vector<double> wanti = ref_conv2d(xi, wi, {}, ci, outi);
  expect_values(make_tensor(xi, ci.x, dtypes::int32, dev())
                    .conv2d(make_tensor(wi, ci.w, dtypes::int32, dev()), std::nullopt, 2, 1, 1, 2),
                outi, dtypes::int32, wanti);
}

struct ConvTCase {
  Shape x, w;  // (N, Cin, H, W), (Cin, Cout/g, kh, kw)
  Int2 stride = 1, padding = 0, output_padding = 0;
  int64_t groups = 1;
  Int2 dilation = 1;
};

std::vector<double> ref_conv_transpose2d(const std::vector<double>& x, const std::vector<double>& w,
                                         const std::vector<double>& b, const ConvTCase& c,
                                         Shape& out) {
  const int64_t n = c.x[0], cin = c.x[1], h = c.x[2], wd = c.x[3];
  const int64_t cog = c.w[1], kh = c.w[2], kw = c.w[3], cig = cin / c.groups;
  const int64_t oh =
      (h - 1) * c.stride.h - 2 * c.padding.h + c.dilation.h * (kh - 1) + c.output_padding.h + 1;
  const int64_t ow =
      (wd - 1) * c.stride.w - 2 * c.padding.w + c.dilation.w * (kw - 1) + c.output_padding.w + 1;
  out = {n, cog * c.groups, oh, ow};
  std::vector<double> r(static_cast<size_t>(numel_of(out)), 0.0);
  for (int64_t i = 0; i < numel_of(out); ++i)
    r[static_cast<size_t>(i)] =
        b.empty() ? 0.0 : b[static_cast<size_t>((i / (oh * ow)) % (cog * c.groups))];
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < wd; ++ix)
          for (int64_t co = 0; co < cog; ++co)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t oy = iy * c.stride.h - c.padding.h + ky * c.dilation.h;
                const int64_t ox = ix * c.stride.w - c.padding.w + kx * c.dilation.w;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const int64_t oc = (ci / cig) * cog + co;
                r[static_cast<size_t>(((bn * out[1] + oc) * oh + oy) * ow + ox)] +=
                    at(x, c.x, {bn, ci, iy, ix}) * at(w, c.w, {ci, co, ky, kx});
              }
  return r;
}

TEST_P(NnTest, ConvTranspose2d) {
  const ConvTCase cases[] = {
      // stride 2 with padding, output_padding and groups; bias
      {{2, 4, 3, 4}, {4, 3, 3, 3}, 2, 1, 1, 2, 1},
      // stride and dilation differing per dimension, padding larger than (k-1)*d (a crop)
      {{1, 2, 6, 3}, {2, 1, 2, 3}, {1, 3}, {3, 1}, 0, 1, {2, 1}},
      // plain: a 1x1 input spreads the kernel
      {{1, 1, 1, 1}, {1, 2, 3, 2}, 1, 0, 0, 1, 1},
      // the sub-pixel form (stride above 1, dilation 1): a decoder's k 4, s 2, p 1
      {{1, 3, 5, 6}, {3, 4, 4, 4}, 2, 1, 0, 1, 1},
      // stride 3 over k 3 (one tap per phase) with output_padding past the uncropped end
      {{1, 2, 4, 3}, {2, 3, 3, 3}, 3, 0, 2, 1, 1},
      // strides differing per dimension (phases along the rows only), groups
      {{2, 4, 3, 4}, {4, 2, 3, 2}, {2, 1}, {1, 0}, {1, 0}, 2, 1},
      // a padding of k or more: the spread form
      {{1, 1, 4, 4}, {1, 1, 2, 2}, 2, 2, 0, 1, 1},
  };
  uint64_t seed = 70;
  bool with_bias = true;
  for (const ConvTCase& c : cases) {
    SCOPED_TRACE("conv_transpose2d x" + str(c.x) + " w" + str(c.w));
    const std::vector<double> x = rand32(numel_of(c.x), -1, 1, seed++);
    const std::vector<double> w = rand32(numel_of(c.w), -1, 1, seed++);
    const int64_t cout = c.w[1] * c.groups;
    const std::vector<double> b = with_bias ? rand32(cout, -1, 1, seed++) : std::vector<double>{};
    Shape out;
    const std::vector<double> want = ref_conv_transpose2d(x, w, b, c, out);
    std::optional<Tensor> bias;
    if (with_bias) bias = make_tensor(b, {cout}, dtypes::float32, dev());
    Tensor got = make_tensor(x, c.x, dtypes::float32, dev())
                     .conv_transpose2d(make_tensor(w, c.w, dtypes::float32, dev()), bias, c.stride,
                                       c.padding, c.output_padding, c.groups, c.dilation);
    expect_values(got, out, dtypes::float32, want, 1e-5, 1e-5);
    with_bias = false;
  }
}

TEST_P(NnTest, ConvErrors) {
  Tensor x = Tensor::zeros({1, 4, 5, 5}, {}, dev());
  Tensor w = Tensor::zeros({6, 3, 3, 3}, {}, dev());
  expect_error<ShapeError>([&] { x.conv2d(w); },
                           {"conv2d", "(1, 4, 5, 5)", "(6, 3, 3, 3)", "groups=1"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 2, 3, 3}, {}, dev()), {}, 1, 0, 1, 3);
      },
      {"conv2d", "(1, 4, 5, 5)", "groups=3"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({5, 2, 3, 3}, {}, dev()), {}, 1, 0, 1, 2);
      },
      {"conv2d", "(5, 2, 3, 3)", "groups=2"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 3, 3}, {}, dev()), {}, 1, 0, 1, 0);
      },
      {"conv2d", "groups", "(1, 4, 5, 5)"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 7, 3}, {}, dev()));
      },
      {"conv2d", "(7, 3)", "(1, 4, 5, 5)"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 3, 3}, {}, dev()), {}, 1, 0, 3);
      },
      {"conv2d", "dilation", "(1, 4, 5, 5)"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 3, 3}, {}, dev()), {}, 0);
      },
      {"conv2d", "stride", "(1, 4, 5, 5)"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 3, 3}, {}, dev()), {}, 1, -1);
      },
      {"conv2d", "padding", "(1, 4, 5, 5)"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 3, 3}, {}, dev()), Tensor::zeros({5}, {}, dev()));
      },
      {"conv2d", "bias", "(5,)", "(6, 4, 3, 3)"});
  expect_error<ShapeError>(
      [&] {
        Tensor::zeros({4, 5}, {}, dev()).conv2d(w);
      },
      {"conv2d", "(4, 5)"});
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::zeros({6, 4, 3}, {}, dev()));
      },
      {"conv2d", "(6, 4, 3)"});
  Tensor wt = Tensor::zeros({4, 2, 3, 3}, {}, dev());
  expect_error<ShapeError>(
      [&] {
        x.conv_transpose2d(Tensor::zeros({3, 2, 3, 3}, {}, dev()));
      },
      {"conv_transpose2d", "(1, 4, 5, 5)", "(3, 2, 3, 3)"});
  expect_error<ShapeError>([&] { x.conv_transpose2d(wt, {}, 1, 0, 0, 3); },
                           {"conv_transpose2d", "groups=3"});
  expect_error<ShapeError>([&] { x.conv_transpose2d(wt, {}, 2, 0, 2); },
                           {"conv_transpose2d", "output_padding", "(2, 2)"});
  expect_error<ShapeError>([&] { x.conv_transpose2d(wt, Tensor::zeros({4}, {}, dev())); },
                           {"conv_transpose2d", "bias", "(4,)"});
  expect_error<ShapeError>([&] { x.conv_transpose2d(wt, {}, 1, 4); },
                           {"conv_transpose2d", "larger than the padded input"});
  expect_still_works(dev());
}

// ---- pools --------------------------------------------------------------------------------------

// Max or average over windows of the last two dims of a (B, H, W) view of `x`.
std::vector<double> ref_pool(const std::vector<double>& x, const Shape& xs, Int2 k, Int2 s, Int2 p,
                             bool is_max, Shape& out) {
  const int64_t h = xs[xs.size() - 2], w = xs.back(), b = numel_of(xs) / (h * w);
  const int64_t oh = (h + 2 * p.h - k.h) / s.h + 1, ow = (w + 2 * p.w - k.w) / s.w + 1;
  out = xs;
  out[out.size() - 2] = oh;
  out.back() = ow;
  return build({b, oh, ow}, [&](const Index& i) {
    double acc = is_max ? -kInf : 0.0;
    for (int64_t ky = 0; ky < k.h; ++ky)
      for (int64_t kx = 0; kx < k.w; ++kx) {
        const int64_t iy = i[1] * s.h - p.h + ky, ix = i[2] * s.w - p.w + kx;
        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
        const double v = at(x, {b, h, w}, {i[0], iy, ix});
        acc = is_max ? std::max(acc, v) : acc + v;
      }
    return is_max ? acc : acc / static_cast<double>(k.h * k.w);
  });
}

TEST_P(NnTest, MaxPool2d) {
  const Shape xs{2, 3, 7, 9};
  const std::vector<double> x = rand32(numel_of(xs), -5, 5, 80);
  Tensor tx = make_tensor(x, xs, dtypes::float32, dev());
  Shape out;
  std::vector<double> want = ref_pool(x, xs, 3, 2, 1, true, out);
  expect_values(tx.max_pool2d(3, 2, 1), out, dtypes::float32, want);
  want = ref_pool(x, xs, 2, 2, 0, true, out);  // default stride = kernel, odd size drops the edge
  expect_values(tx.max_pool2d(), out, dtypes::float32, want);
  want = ref_pool(x, xs, {3, 2}, {1, 3}, {1, 0}, true, out);
  expect_values(tx.max_pool2d({3, 2}, Int2{1, 3}, Int2{1, 0}), out, dtypes::float32, want);
  // Integers (negative values: the padding must not win), 3-D input.
  const Shape xi{2, 5, 5};
  const std::vector<double> vi = random_ints(50, -100, -1, 81);
  want = ref_pool(vi, xi, 2, 1, 1, true, out);
  expect_values(make_tensor(vi, xi, dtypes::int32, dev()).max_pool2d(2, 1, 1), out, dtypes::int32,
                want);
  // 8 output columns (a device that runs on the CPU computes 4 neighbours an invocation), padded,
  // max and average.
  const Shape xw{1, 4, 9, 15};
  const std::vector<double> w = rand32(numel_of(xw), -5, 5, 82);
  const Tensor tw = make_tensor(w, xw, dtypes::float32, dev());
  want = ref_pool(w, xw, 3, 2, 1, true, out);
  expect_values(tw.max_pool2d(3, 2, 1), out, dtypes::float32, want);
  want = ref_pool(w, xw, 3, 2, 1, false, out);
  expect_values(tw.avg_pool2d(3, 2, 1), out, dtypes::float32, want, 1e-6, 1e-6);
}

TEST_P(NnTest, AvgPool2d) {
  const Shape xs{1, 2, 5, 7};
  const std::vector<double> x = rand32(numel_of(xs), -5, 5, 90);
  Tensor tx = make_tensor(x, xs, dtypes::float32, dev());
  Shape out;
  std::vector<double> want = ref_pool(x, xs, 3, 2, 1, false, out);  // padding counts
  expect_values(tx.avg_pool2d(3, 2, 1), out, dtypes::float32, want, 1e-6, 1e-6);
  want = ref_pool(x, xs, {2, 3}, {1, 2}, 0, false, out);
  expect_values(tx.avg_pool2d({2, 3}, Int2{1, 2}), out, dtypes::float32, want, 1e-6, 1e-6);
  // Of a transposed view.
  const std::vector<double> xt = build({1, 2, 7, 5}, [&](const Index& i) {
    return at(x, xs, {i[0], i[1], i[3], i[2]});
  });
  want = ref_pool(xt, {1, 2, 7, 5}, 2, 2, 0, false, out);
  expect_values(tx.transpose().avg_pool2d(), out, dtypes::float32, want, 1e-6, 1e-6);
}

TEST_P(NnTest, PoolErrors) {
  Tensor x = Tensor::zeros({1, 1, 4, 4}, {}, dev());
  expect_error<ShapeError>([&] { x.max_pool2d(2, 2, 2); },
                           {"max_pool2d", "padding", "(1, 1, 4, 4)"});
  expect_error<ShapeError>([&] { x.avg_pool2d(5); }, {"avg_pool2d", "(5, 5)", "(1, 1, 4, 4)"});
  expect_error<ShapeError>([&] { x.max_pool2d(0); }, {"max_pool2d", "kernel", "(1, 1, 4, 4)"});
  expect_error<ShapeError>([&] { x.max_pool2d(2, Int2{0}); }, {"max_pool2d", "stride"});
  expect_error<ShapeError>([&] { Tensor::zeros({4}, {}, dev()).max_pool2d(); },
                           {"max_pool2d", "(4,)"});
  expect_still_works(dev());
}

// ---- normalization ------------------------------------------------------------------------------

TEST_P(NnTest, LayerNormAndBatchNorm) {
  const Shape xs{2, 3, 5};
  const std::vector<double> x = rand32(30, -3, 3, 100);
  Tensor tx = make_tensor(x, xs, dtypes::float32, dev());
  auto norm = [&](bool last_only) {
    return build(xs, [&](const Index& i) {
      double mean = 0, var = 0;
      int64_t n = 0;
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 5; ++b)
          if (!last_only || a == i[1]) mean += at(x, xs, {i[0], a, b}), ++n;
      mean /= static_cast<double>(n);
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 5; ++b)
          if (!last_only || a == i[1]) var += std::pow(at(x, xs, {i[0], a, b}) - mean, 2);
      var /= static_cast<double>(n);
      return (at(x, xs, i) - mean) / std::sqrt(var + 1e-5);
    });
  };
  expect_values(tx.layernorm(), xs, dtypes::float32, norm(true), 1e-5, 1e-5);
  expect_values(tx.layernorm({1, -1}), xs, dtypes::float32, norm(false), 1e-5, 1e-5);
  // batchnorm over axis 1 with per-channel parameters.
  const std::vector<double> w{0.5, -2, 1.5}, b{0.1, 0.2, -0.3}, mu{1, -1, 0.5}, inv{2, 0.5, 1};
  auto ch = [&](const std::vector<double>& v) {
    return make_tensor(v, {3}, dtypes::float32, dev());
  };
  expect_values(tx.batchnorm(ch(w), ch(b), ch(mu), ch(inv)), xs, dtypes::float32,
                build(xs,
                      [&](const Index& i) {
                        const size_t c = static_cast<size_t>(i[1]);
                        return (at(x, xs, i) - mu[c]) * w[c] * inv[c] + b[c];
                      }),
                1e-6, 1e-6);
  expect_values(tx.batchnorm(std::nullopt, std::nullopt, ch(mu), ch(inv)), xs, dtypes::float32,
                build(xs,
                      [&](const Index& i) {
                        const size_t c = static_cast<size_t>(i[1]);
                        return (at(x, xs, i) - mu[c]) * inv[c];
                      }),
                1e-6, 1e-6);
  expect_error<ShapeError>(
      [&] { tx.batchnorm(std::nullopt, std::nullopt, ch(mu).slice(0, 0, 2), ch(inv)); },
      {"batchnorm", "mean", "(2,)", "(2, 3, 5)"});
  expect_error<ShapeError>(
      [&] { Tensor::zeros({3}, {}, dev()).batchnorm({}, {}, ch(mu), ch(inv)); },
      {"batchnorm", "(3,)"});
}

// ---- losses -------------------------------------------------------------------------------------

// log_softmax of row `r` (length c, stride `stride` between classes) at class k.
double log_softmax_at(const std::vector<double>& x, int64_t base, int64_t stride, int64_t c,
                      int64_t k) {
  double m = -kInf;
  for (int64_t j = 0; j < c; ++j) m = std::max(m, x[static_cast<size_t>(base + j * stride)]);
  double s = 0;
  for (int64_t j = 0; j < c; ++j) s += std::exp(x[static_cast<size_t>(base + j * stride)] - m);
  return x[static_cast<size_t>(base + k * stride)] - m - std::log(s);
}

TEST_P(NnTest, CrossEntropy) {
  // (N, C) with class indices.
  const std::vector<double> x = rand32(12, -3, 3, 110);
  const std::vector<double> t{2, 0, 3};
  double want = 0;
  for (int64_t n = 0; n < 3; ++n)
    want -= log_softmax_at(x, n * 4, 1, 4, static_cast<int64_t>(t[static_cast<size_t>(n)]));
  Tensor tx = make_tensor(x, {3, 4}, dtypes::float32, dev());
  expect_values(tx.cross_entropy(make_tensor(t, {3}, dtypes::int32, dev())), {}, dtypes::float32,
                {want / 3}, 1e-5);
  // Class probabilities of the input's shape.
  const std::vector<double> q = rand32(12, 0, 1, 111);
  double wq = 0;
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k)
      wq -= q[static_cast<size_t>(n * 4 + k)] * log_softmax_at(x, n * 4, 1, 4, k);
  expect_values(tx.cross_entropy(make_tensor(q, {3, 4}, dtypes::float32, dev())), {},
                dtypes::float32, {wq / 3}, 1e-5);
  // (N, C, d) with (N, d) int64 indices: classes on axis 1.
  const std::vector<double> y = rand32(2 * 3 * 5, -2, 2, 112), ty = random_ints(10, 0, 2, 113);
  double wy = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < 5; ++d)
      wy -= log_softmax_at(y, n * 15 + d, 5, 3,
                           static_cast<int64_t>(ty[static_cast<size_t>(n * 5 + d)]));
  expect_values(make_tensor(y, {2, 3, 5}, dtypes::float32, dev())
                    .cross_entropy(make_tensor(ty, {2, 5}, dtypes::int64, dev())),
                {}, dtypes::float32, {wy / 10}, 1e-5);
  // sparse_categorical_crossentropy: classes last.
  expect_values(tx.sparse_categorical_crossentropy(make_tensor(t, {3}, dtypes::int32, dev())), {},
                dtypes::float32, {want / 3}, 1e-5);
}

TEST_P(NnTest, BinaryCrossEntropy) {
  const std::vector<double> p{0.1, 0.9, 0.5, 1.0, 0.0, 0.3}, y{0, 1, 1, 1, 0, 0.25};
  double want = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pp = round_to(p[i], dtypes::float32);
    want -= y[i] * std::max(std::log(pp), -100.0) + (1 - y[i]) * std::max(std::log(1 - pp), -100.0);
  }
  Tensor tp = make_tensor(p, {2, 3}, dtypes::float32, dev()),
         ty = make_tensor(y, {2, 3}, dtypes::float32, dev());
  expect_values(tp.binary_crossentropy(ty), {}, dtypes::float32, {want / 6}, 1e-5);
  expect_values(tp.binary_cross_entropy(ty), {}, dtypes::float32, {want / 6}, 1e-5);
  const std::vector<double> z{-3, 0.5, 40, -40, 0, 2};
  double wz = 0;
  for (size_t i = 0; i < z.size(); ++i)
    wz += std::max(z[i], 0.0) - z[i] * y[i] + std::log1p(std::exp(-std::fabs(z[i])));
  expect_values(make_tensor(z, {2, 3}, dtypes::float32, dev()).binary_crossentropy_logits(ty), {},
                dtypes::float32, {wz / 6}, 1e-5);
}

TEST_P(NnTest, LossErrors) {
  Tensor x = Tensor::zeros({3, 4}, {}, dev());
  expect_error<ShapeError>([&] { x.cross_entropy(Tensor::zeros({4}, dtypes::int32, dev())); },
                           {"cross_entropy", "(4,)", "(3, 4)"});
  expect_error<ShapeError>(
      [&] {
        x.cross_entropy(Tensor::zeros({3, 5}, {}, dev()));
      },
      {"cross_entropy", "(3, 5)", "(3, 4)"});
  expect_error<DTypeError>([&] { x.cross_entropy(Tensor::zeros({3}, dtypes::bool_, dev())); },
                           {"cross_entropy", "bool", "(3, 4)"});
  expect_error<DTypeError>(
      [&] { x.sparse_categorical_crossentropy(Tensor::zeros({3}, {}, dev())); },
      {"sparse_categorical_crossentropy", "float32", "(3, 4)"});
  expect_error<ShapeError>(
      [&] { x.sparse_categorical_crossentropy(Tensor::zeros({4}, dtypes::int32, dev())); },
      {"sparse_categorical_crossentropy", "(4,)", "(3, 4)"});
  expect_error<ShapeError>([&] { x.binary_crossentropy(Tensor::zeros({4}, {}, dev())); },
                           {"binary_crossentropy", "(4,)", "(3, 4)"});
  expect_error<ShapeError>(
      [&] {
        x.binary_crossentropy_logits(Tensor::zeros({3, 1}, {}, dev()));
      },
      {"binary_crossentropy_logits", "(3, 1)", "(3, 4)"});
  expect_still_works(dev());
}

// ---- attention ----------------------------------------------------------------------------------

// softmax(q k^T / sqrt(e) masked) v for one (l, e) x (s, e) x (s, ev) head; keep(i, j) masks.
std::vector<double> ref_attention(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int64_t l, int64_t s, int64_t e,
                                  int64_t ev, const std::function<bool(int64_t, int64_t)>& keep) {
  std::vector<double> out(static_cast<size_t>(l * ev), 0.0);
  for (int64_t i = 0; i < l; ++i) {
    std::vector<double> w(static_cast<size_t>(s));
    double m = -kInf;
    for (int64_t j = 0; j < s; ++j) {
      double d = 0;
      for (int64_t p = 0; p < e; ++p)
        d += q[static_cast<size_t>(i * e + p)] * k[static_cast<size_t>(j * e + p)];
      w[static_cast<size_t>(j)] = keep(i, j) ? d / std::sqrt(static_cast<double>(e)) : -kInf;
      m = std::max(m, w[static_cast<size_t>(j)]);
    }
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(x - m));
    for (int64_t j = 0; j < s; ++j)
      for (int64_t p = 0; p < ev; ++p)
        out[static_cast<size_t>(i * ev + p)] +=
            w[static_cast<size_t>(j)] / sum * v[static_cast<size_t>(j * ev + p)];
  }
  return out;
}

TEST_P(NnTest, ScaledDotProductAttention) {
  const int64_t b = 2, l = 5, s = 6, e = 4, ev = 3;
  const std::vector<double> q = rand32(b * l * e, -1, 1, 120), k = rand32(b * s * e, -1, 1, 121),
                            v = rand32(b * s * ev, -1, 1, 122);
  Tensor tq = make_tensor(q, {b, l, e}, dtypes::float32, dev());
  Tensor tk = make_tensor(k, {b, s, e}, dtypes::float32, dev());
  Tensor tv = make_tensor(v, {b, s, ev}, dtypes::float32, dev());
  auto per_batch = [&](const std::function<bool(int64_t, int64_t)>& keep) {
    std::vector<double> out;
    for (int64_t n = 0; n < b; ++n) {
      auto slice = [n](const std::vector<double>& x, int64_t len) {
        return std::vector<double>(x.begin() + n * len, x.begin() + (n + 1) * len);
      };
      std::vector<double> r =
          ref_attention(slice(q, l * e), slice(k, s * e), slice(v, s * ev), l, s, e, ev, keep);
      out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  };
  expect_values(tq.scaled_dot_product_attention(tk, tv), {b, l, ev}, dtypes::float32,
                per_batch([](int64_t, int64_t) { return true; }), 1e-5, 1e-6);
  expect_values(tq.scaled_dot_product_attention(tk, tv, std::nullopt, true), {b, l, ev},
                dtypes::float32, per_batch([](int64_t i, int64_t j) { return j <= i; }), 1e-5,
                1e-6);
  // A bool keep-mask (l, s) broadcast over the batch: keep j != (i % s) and j < 4.
  std::vector<double> m(static_cast<size_t>(l * s));
  auto keep = [s](int64_t i, int64_t j) { return j != i % s && j < 4; };
  for (int64_t i = 0; i < l; ++i)
    for (int64_t j = 0; j < s; ++j) m[static_cast<size_t>(i * s + j)] = keep(i, j);
  expect_values(
      tq.scaled_dot_product_attention(tk, tv, make_tensor(m, {l, s}, dtypes::bool_, dev())),
      {b, l, ev}, dtypes::float32, per_batch(keep), 1e-5, 1e-6);
  Tensor mask = make_tensor(m, {l, s}, dtypes::bool_, dev());
  expect_error<Error>([&] { tq.scaled_dot_product_attention(tk, tv, mask, true); },
                      {"scaled_dot_product_attention", "(2, 5, 4)"});
  expect_error<ShapeError>([&] { tq.scaled_dot_product_attention(tv, tv); },
                           {"scaled_dot_product_attention", "(2, 5, 4)", "(2, 6, 3)"});
  expect_error<ShapeError>([&] { tq.scaled_dot_product_attention(tk, tv.slice(1, 0, 5)); },
                           {"scaled_dot_product_attention", "(2, 5, 3)"});
  expect_error<ShapeError>(
      [&] { Tensor::zeros({4}, {}, dev()).scaled_dot_product_attention(tk, tv); },
      {"scaled_dot_product_attention", "(4,)"});
  expect_still_works(dev());
}

VKGRAD_ALL_DEVICES(NnTest);

}  // namespace
}  // namespace vkgrad::testing
