// tests/codegen: the CPU GEMM's plan for convolutions — which read B from a window copy of the
// input (any stride, padding and kernel shape: a plane per phase) and which pack it (dilations,
// 1 x 1).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "codegen/gemm/plan.hpp"
#include "cpu/runtime.hpp"
#include "scheduled.hpp"

namespace vkgrad {
namespace {

std::optional<GemmPlan> conv_plan(const Shape& x, const Shape& w, Int2 stride, Int2 padding,
                                  Int2 dilation) {
  return plan_gemm(scheduled_kernel(input(x).conv2d(input(w), {}, stride, padding, dilation)),
                   cpu::host_target());
}

TEST(Gemm, StrideOneConvolutionsReadAWindowCopy) {
  const auto padded = conv_plan({1, 16, 30, 30}, {32, 16, 3, 3}, 1, 1, 1);
  ASSERT_TRUE(padded && padded->window);
  // The copy: the output's 30 x 30 plus the kernel's 3 - 1 in each direction, per channel.
  EXPECT_EQ(padded->window->rows, 32);
  EXPECT_EQ(padded->window->cols, 32);
  EXPECT_EQ(padded->window->plane, 16 * 32 * 32);
  EXPECT_EQ(padded->window->rest.size(), 1u);
  // The columns run over the copy's: 30 rows of 32.
  EXPECT_EQ(padded->share, 30 * 32);
  const auto wide = conv_plan({1, 8, 17, 41}, {24, 8, 3, 5}, 1, {1, 2}, 1);
  ASSERT_TRUE(wide && wide->window);
  EXPECT_EQ(wide->window->rows, 17 + 2);
  EXPECT_EQ(wide->window->cols, 41 + 4);
}

TEST(Gemm, StridedConvolutionsReadPhasePlanes) {
  // Stride 2: a plane per phase (py, px) of 17 + 2 - 1 rows (taps 0, 2 in phase 0, 1 in phase 1).
  const auto s2 = conv_plan({1, 16, 33, 33}, {32, 16, 3, 3}, 2, 1, 1);
  ASSERT_TRUE(s2 && s2->window);
  EXPECT_EQ(s2->window->sy, 2);
  EXPECT_EQ(s2->window->sx, 2);
  EXPECT_EQ(s2->window->rows, 17 + 1);
  EXPECT_EQ(s2->window->plane, 16 * 4 * 18 * 18);
  // A ResNet stem: 7 x 7 taps at stride 2 are 4 x 4 per phase.
  const auto stem = conv_plan({1, 3, 64, 64}, {16, 3, 7, 7}, 2, 3, 1);
  ASSERT_TRUE(stem && stem->window);
  EXPECT_EQ(stem->window->rows, 32 + 3);
  // Different strides along the rows and the columns.
  const auto mixed = conv_plan({1, 8, 40, 30}, {32, 8, 3, 3}, {2, 1}, 1, 1);
  ASSERT_TRUE(mixed && mixed->window);
  EXPECT_EQ(mixed->window->sy, 2);
  EXPECT_EQ(mixed->window->sx, 1);
}

// Whether `u` still holds a mask: a WHERE or a gated load.
bool masked(const UOp& u) {
  for (const UOp& n : toposort(u))
    if (n.op() == Ops::WHERE || (n.op() == Ops::INDEX && n.src().size() > 2)) return true;
  return false;
}

TEST(Gemm, WindowCopiesReadTheirInteriorUnmasked) {
  // Padding 1 on a 30-wide input: columns 1 to 30 of the 32 read the input, without masks.
  const auto padded = conv_plan({1, 16, 30, 30}, {32, 16, 3, 3}, 1, 1, 1);
  ASSERT_TRUE(padded && padded->window);
  const GemmWindow& w = *padded->window;
  EXPECT_EQ(w.lo, std::vector<int64_t>{1});
  EXPECT_EQ(w.hi, std::vector<int64_t>{31});
  EXPECT_TRUE(masked(w.value));
  EXPECT_FALSE(masked(w.interior));
  EXPECT_NE(w.row_mask.op(), Ops::CONST);  // rows 0 and 31 are pad
  // Stride 2, padding 1, 33 wide: phase 0 reads input column 2x - 1 (x = 1..16), phase 1 reads
  // 2x (x = 0..16); past that the plane extends beyond the last tap.
  const auto s2 = conv_plan({1, 16, 33, 33}, {32, 16, 3, 3}, 2, 1, 1);
  ASSERT_TRUE(s2 && s2->window);
  EXPECT_EQ(s2->window->lo, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(s2->window->hi, (std::vector<int64_t>{17, 17}));
  EXPECT_FALSE(masked(s2->window->interior));
  // A valid convolution has nothing masked along its columns.
  const auto valid = conv_plan({1, 8, 30, 30}, {32, 8, 3, 3}, 1, 0, 1);
  ASSERT_TRUE(valid && valid->window);
  EXPECT_TRUE(valid->window->lo.empty() || valid->window->lo == std::vector<int64_t>{0});
}

TEST(Gemm, PointwiseConvolutionsPackB) {
  const auto plan = conv_plan({1, 64, 30, 30}, {64, 64, 1, 1}, 1, 0, 1);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->window);
}

TEST(Gemm, DilatedConvolutionsCopyAWindow) {
  // Dilation 2 with padding 2 over 33 x 33: the plane is 33 + 2 * 2 wide, its taps 2 apart;
  // columns 2 to 34 read the input.
  const auto plan = conv_plan({1, 16, 33, 33}, {32, 16, 3, 3}, 1, 2, 2);
  ASSERT_TRUE(plan && plan->window);
  const GemmWindow& w = *plan->window;
  EXPECT_EQ(w.sy, 1);
  EXPECT_EQ(w.dy, 2);
  EXPECT_EQ(w.dx, 2);
  EXPECT_EQ(w.cols, 37);
  EXPECT_EQ(w.lo, std::vector<int64_t>{2});
  EXPECT_EQ(w.hi, std::vector<int64_t>{35});
  EXPECT_EQ(winograd_tiles(*plan), 0);
}

TEST(Gemm, ALongReductionStaysOnTheGemm) {
  // k = 40000: B's one strip of 32 columns over all of k (5 MB) is past the 4 MiB panel budget,
  // still within the plan's limit (a conv's weight gradient at batch 32 sums over 100K).
  const int64_t M = 16, K = 40000, N = 32;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  const Tensor ta = Tensor::from_vector(a, {M, K}, {}, "CPU"),
               tb = Tensor::from_vector(b, {K, N}, {}, "CPU");
  const auto plan = plan_gemm(scheduled_kernel(ta.matmul(tb)), cpu::host_target());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->nc, plan->nr);
  const std::vector<float> got = ta.matmul(tb).to_vector<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(a[size_t(i * K + k)]) * double(b[size_t(k * N + j)]);
        want += p;
        scale += std::fabs(p);
      }
      EXPECT_NEAR(got[size_t(i * N + j)], want, 1e-5 * scale) << i << ", " << j;
    }
}

}  // namespace
}  // namespace vkgrad
