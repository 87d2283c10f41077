// Matmul-like kernels rendered as packed, blocked GEMMs (codegen's plan_gemm and render_c): every
// operand layout, ragged tile edges, k longer than one block, a batch, fused operands and a fused
// epilogue, on the CPU against products computed in double precision.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>
#include <vkgrad/vkgrad.hpp>

#include "codegen/gemm/plan.hpp"
#include "codegen/opt.hpp"
#include "codegen/pipeline.hpp"
#include "cpu/runtime.hpp"
#include "engine/internal.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

using namespace vkgrad;

namespace {

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint64_t s = seed;
  for (float& x : out) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(s >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
  return out;
}

// A row-major (rows, cols) matrix, or its transpose stored as (cols, rows) and viewed back.
struct Matrix {
  std::vector<float> values;  // row-major (rows, cols)
  Tensor tensor;
};
Matrix matrix(int64_t rows, int64_t cols, bool stored_transposed, uint64_t seed) {
  Matrix m{random_floats(rows * cols, seed), {}};
  if (!stored_transposed) {
    m.tensor = Tensor::from_vector(m.values, {rows, cols}, {}, "CPU");
    return m;
  }
  std::vector<float> t(m.values.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[static_cast<size_t>(j * rows + i)] = m.values[static_cast<size_t>(i * cols + j)];
  m.tensor = Tensor::from_vector(t, {cols, rows}, {}, "CPU").T();
  return m;
}

std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t k, int64_t n) {
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        out[static_cast<size_t>(i * n + j)] +=
            static_cast<double>(a[static_cast<size_t>(i * k + p)]) *
            b[static_cast<size_t>(p * n + j)];
  return out;
}

void expect_near(const Tensor& t, const std::vector<double>& want) {
  const std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << "element " << i;
}

// Every kernel of t's schedule rendered as C, as the CPU runtime would (optimized or not).
std::string rendered(const Tensor& t, bool optimize) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  std::string out;
  for (const ScheduleKernel& k : build_schedule(g.key).kernels)
    out += codegen(k.ast, {.optimize = optimize}, cpu::host_target()).source;
  return out;
}

// a x b (m x k by k x n) renders as a GEMM and matches the double reference.
void expect_gemm(const Matrix& a, const Matrix& b, int64_t m, int64_t k, int64_t n) {
  const Tensor c = a.tensor.matmul(b.tensor);
  EXPECT_NE(rendered(c, true).find("pack_a"), std::string::npos);
  expect_near(c, reference(a.values, b.values, m, k, n));
}

// 100 x 300 x 70: no tile divides m or n, and k spans two blocks of 256.
constexpr int64_t M = 100, K = 300, N = 70;

TEST(Gemm, EveryOperandLayout) {
  for (const bool a_t : {false, true})
    for (const bool b_t : {false, true}) {
      SCOPED_TRACE(std::string(a_t ? "T" : "N") + (b_t ? "T" : "N"));
      expect_gemm(matrix(M, K, a_t, 1), matrix(K, N, b_t, 2), M, K, N);
    }
}

// Runs a x b's one kernel (a stored transposed where asked) with `opts` on the CPU runtime, on
// buffers of our own (a's and b's told apart by their sizes), against the double reference.
void expect_with_opts(int64_t m, int64_t k, int64_t n, bool a_t, const std::vector<Opt>& opts) {
  SCOPED_TRACE(std::string(a_t ? "A transposed " : "") + to_string(opts));
  const Matrix a = matrix(m, k, a_t, 21), b = matrix(k, n, false, 22);
  const Tensor c = a.tensor.matmul(b.tensor);
  const Schedule s = build_schedule(normalize_graph(std::vector<UOp>{tensor::uop(c)}).key);
  ASSERT_EQ(s.kernels.size(), 1u);
  Runtime& rt = engine::runtime_of("CPU");
  const std::shared_ptr<CompiledKernel> kernel =
      rt.compile(codegen(s.kernels[0].ast, {.opts = opts}, rt.target()));
  std::vector<float> a_stored = a.values;
  if (a_t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p)
        a_stored[static_cast<size_t>(p * m + i)] = a.values[static_cast<size_t>(i * k + p)];
  std::vector<void*> bufs;
  for (int index : s.kernels[0].buffers) {
    const size_t count = static_cast<size_t>(s.buffers.at(static_cast<size_t>(index)).count);
    bufs.push_back(rt.alloc(count * sizeof(float)));
    if (bufs.size() == 1) continue;
    const std::vector<float>& v = count == a_stored.size() ? a_stored : b.values;
    ASSERT_EQ(v.size(), count);
    rt.copy_in(bufs.back(), v.data(), count * sizeof(float));
  }
  const KernelLaunch launch{kernel.get(), bufs};
  rt.run({&launch, 1}, nullptr);
  std::vector<float> got(static_cast<size_t>(m * n));
  rt.copy_out(got.data(), bufs[0], got.size() * sizeof(float));
  for (void* h : bufs) rt.free(h);
  const std::vector<double> want = reference(a.values, b.values, m, k, n);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << "element " << i;
}

// The schedule's one kernel of a x b.
UOp kernel_of(const Matrix& a, const Matrix& b) {
  const Tensor c = a.tensor.matmul(b.tensor);
  return build_schedule(normalize_graph(std::vector<UOp>{tensor::uop(c)}).key).kernels.at(0).ast;
}

TEST(Gemm, EveryVariantOfTheOpt) {
  // GEMM(a, rows): A as planned, packed or read in place, and register tiles of the plan's rows,
  // 5, 8 and the most this CPU's target allows. A transposed A cannot be read in place along k: an
  // Error (a search drops the candidate), as are the most rows plus one and an unknown way of
  // reading A.
  const Target host = cpu::host_target();
  const int64_t most = gemm_max_rows(host);
  // The runtime renders for this CPU (Zen 4 takes 8 rows at most, a CPU without AVX-512 6).
  const int64_t most_here = gemm_max_rows(cpu::tuned_host_target());
  for (const bool a_t : {false, true})
    for (int a : {0, 1, 2})
      for (int64_t rows : {int64_t{0}, int64_t{5}, std::min<int64_t>(8, most_here), most_here}) {
        const std::vector<Opt> opts{{OptOp::GEMM, a, rows}};
        if (a_t && a == 2)
          EXPECT_THROW(codegen(kernel_of(matrix(M, K, true, 21), matrix(K, N, false, 22)),
                               {.opts = opts}, host),
                       Error);
        else
          expect_with_opts(M, K, N, a_t, opts);
      }
  // The variants are what they say: A's row pointers in place, its panels packed.
  const UOp plain = kernel_of(matrix(M, K, false, 21), matrix(K, N, false, 22));
  auto source = [&](int a_read, int64_t rows) {
    return codegen(plain, {.opts = std::vector<Opt>{{OptOp::GEMM, a_read, rows}}}, host).source;
  };
  EXPECT_NE(source(2, 5).find("const float* ar[5];"), std::string::npos);
  EXPECT_EQ(source(1, 8).find("const float* ar["), std::string::npos);
  EXPECT_NE(source(1, 8).find("pa[kk * 8 + w]"), std::string::npos);
  for (const Opt& bad :
       {Opt{OptOp::GEMM, 0, most + 1}, Opt{OptOp::GEMM, 3, 0}, Opt{OptOp::GEMM, 0, -1}}) {
    const std::vector<Opt> opts{bad};
    EXPECT_THROW(codegen(plain, {.opts = opts}, host), Error) << to_string(opts);
  }
}

TEST(Gemm, EveryBlockingOfTheOpt) {
  // BLOCK after GEMM: register tiles 1 to 4 vectors wide (their most rows and the plan's), k in
  // blocks of 64 steps (five blocks, the last short) or the plan's, A packed or as planned,
  // against double precision. Its sizes show in the source: the tile's accumulators and the k
  // loop's block.
  constexpr int64_t m = 100, k = 300, n = 200;
  const Target here = cpu::tuned_host_target();
  for (int64_t v = 1; v <= kMaxTileVectors; ++v)
    for (const int64_t kc : {int64_t{0}, int64_t{64}})
      for (const int64_t rows : {int64_t{0}, gemm_max_rows(here, v)}) {
        std::vector<Opt> opts{{OptOp::GEMM, 1, rows}, {OptOp::BLOCK, 0, v}};
        if (kc) opts.push_back({OptOp::BLOCK, 1, kc});
        expect_with_opts(m, k, n, false, opts);
      }
  expect_with_opts(m, k, n, true, {{OptOp::GEMM, 0, 0}, {OptOp::BLOCK, 1, 128}});
  const UOp plain = kernel_of(matrix(m, k, false, 21), matrix(k, n, false, 22));
  const Target host = cpu::host_target();
  const std::string wide =
      codegen(plain, {.opts = std::vector<Opt>{{OptOp::GEMM, 1, 6}, {OptOp::BLOCK, 0, 4}}}, host)
          .source;
  EXPECT_NE(wide.find("acc[6][4];"), std::string::npos) << wide;
  const std::string blocked =
      codegen(plain, {.opts = std::vector<Opt>{{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 1, 64}}}, host)
          .source;
  EXPECT_NE(blocked.find("pc += 60)"), std::string::npos) << blocked;  // 300 in 5 blocks of 60
  // What does not apply is an Error naming BLOCK: A read in place (all of k at once), a block of
  // all of k, a tile wider than the output or than the registers for the rows asked, a size
  // chosen twice, BLOCK without GEMM.
  const UOp narrow = kernel_of(matrix(m, k, false, 21), matrix(k, 40, false, 22));
  for (const auto& [ast, opts] : std::vector<std::pair<UOp, std::vector<Opt>>>{
           {plain, {{OptOp::GEMM, 2, 0}, {OptOp::BLOCK, 1, 64}}},
           {plain, {{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 1, k}}},
           {plain, {{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 1, 8}}},
           {narrow, {{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 0, 4}}},
           {plain, {{OptOp::GEMM, 1, gemm_max_rows(host)}, {OptOp::BLOCK, 0, 4}}},
           {plain, {{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 0, 1}, {OptOp::BLOCK, 0, 3}}},
           {plain, {{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 2, 1}}},
           {plain, {{OptOp::BLOCK, 0, 1}}}}) {
    try {
      (void)codegen(ast, {.opts = opts}, host);
      ADD_FAILURE() << to_string(opts) << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("BLOCK"), std::string::npos) << e.what();
    }
  }
}

TEST(Gemm, TheTileIsFourVectorsWideWhereThatPadsNoMoreColumns) {
  // The plan's register tile on AVX-512: 6 x 4 vectors where 64 columns pad the output no more
  // than 32 do (512 columns), with the k block that keeps B's micro panel in L1 (kc x 64 floats
  // of 32 KiB: 300 in 3 blocks of 100); two vectors where they pad fewer (784 columns: 800
  // against 832), where four would be wider than the output (48), and where the target keeps
  // fewer than 6 rows of four vectors (Zen 4's 8 x 2). A read in place as planned up to 256
  // columns, counted in strips of two vectors whatever the tile's width: 8 wide strips (512
  // columns, as many as 16 narrow ones) pack it. The wide tile against double precision, A
  // packed and A read in place.
  const Target host = cpu::host_target();
  auto plan = [&](int64_t n, const Target& t) {
    const std::optional<GemmPlan> p = plan_gemm(
        kernel_of(matrix(100, 300, false, 21), matrix(300, n, false, 22)), t, {GemmA::packed});
    EXPECT_TRUE(p) << n << " columns";
    return p ? *p : GemmPlan{};
  };
  const GemmPlan wide = plan(512, host);
  EXPECT_EQ(wide.nr, 4 * host.vector_floats);
  EXPECT_LE(wide.mr, 6);
  EXPECT_EQ(wide.kc, 100);
  EXPECT_EQ(plan(784, host).nr, 2 * host.vector_floats);
  EXPECT_EQ(plan(48, host).nr, 2 * host.vector_floats);
  EXPECT_EQ(plan(784, host).kc, 300 / 2);  // kc x 32 floats in 32 KiB: 256 steps at most
  Target eight_rows = host;
  eight_rows.tuning.gemm_rows = 8;
  EXPECT_EQ(plan(512, eight_rows).nr, 2 * host.vector_floats);
  auto planned = [&](int64_t n) {
    const std::optional<GemmPlan> p =
        plan_gemm(kernel_of(matrix(100, 300, false, 21), matrix(300, n, false, 22)), host, {});
    EXPECT_TRUE(p) << n << " columns";
    return p ? *p : GemmPlan{};
  };
  EXPECT_EQ(planned(256).nr, 4 * host.vector_floats);
  EXPECT_TRUE(planned(256).a_rows);
  EXPECT_EQ(planned(512).nr, 4 * host.vector_floats);
  EXPECT_FALSE(planned(512).a_rows);
  constexpr int64_t m = 100, k = 300, n = 512;
  for (const bool a_t : {false, true})
    expect_gemm(matrix(m, k, a_t, 23), matrix(k, n, false, 24), m, k, n);
  expect_gemm(matrix(m, k, false, 25), matrix(k, 256, false, 26), m, k, 256);
  EXPECT_NE(rendered(matrix(m, k, false, 23).tensor.matmul(matrix(k, n, false, 24).tensor), true)
                .find(fmt::format("acc[{}][4];", wide.mr)),
            std::string::npos);
}

TEST(Gemm, NarrowOutput) {
  // Ten columns (a classifier's): one vector of 16 per row, six of its lanes padding.
  constexpr int64_t m = 300, k = 520, n = 10;
  expect_gemm(matrix(m, k, false, 10), matrix(k, n, true, 11), m, k, n);
}

TEST(Gemm, SeveralColumnBlocks) {
  // More columns than one packed block of B holds (1024): A is packed again for the second.
  constexpr int64_t m = 16, k = 64, n = 1100;
  expect_gemm(matrix(m, k, false, 12), matrix(k, n, false, 13), m, k, n);
}

TEST(Gemm, ConvolutionSplitsItsBatch) {
  // A 3x3 convolution with padding 1: k is the channels and the window (64 x 3 x 3 flattened),
  // the columns are the output's rows and columns (32 x 32), the zero padding is packed, and the
  // threads split the batch of 8 images.
  constexpr int64_t B = 8, C = 64, O = 64, H = 32, W = 32;
  const std::vector<float> x = random_floats(B * C * H * W, 14), w = random_floats(O * C * 9, 15);
  const Tensor c = Tensor::from_vector(x, {B, C, H, W}, {}, "CPU")
                       .conv2d(Tensor::from_vector(w, {O, C, 3, 3}, {}, "CPU"), {}, 1, 1);
  std::vector<double> want(static_cast<size_t>(B * O * H * W), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            const double wv = w[static_cast<size_t>(((o * C + ch) * 3 + ky) * 3 + kx)];
            for (int64_t y = 0; y < H; ++y) {
              const int64_t iy = y + ky - 1;
              if (iy < 0 || iy >= H) continue;
              for (int64_t xx = 0; xx < W; ++xx) {
                const int64_t ix = xx + kx - 1;
                if (ix < 0 || ix >= W) continue;
                want[static_cast<size_t>(((b * O + o) * H + y) * W + xx)] +=
                    wv * x[static_cast<size_t>(((b * C + ch) * H + iy) * W + ix)];
              }
            }
          }
  const std::string src = rendered(c, true);
  EXPECT_NE(src.find("pack_a"), std::string::npos);
  EXPECT_NE(src.find("= start; gidx0 < end;"), std::string::npos) << src;
  expect_near(c, want);
}

// relu(conv2d(x, w, bias)) of 3 x 3 windows, stride 1, in double precision.
std::vector<double> conv3x3_relu(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& bias, int64_t B, int64_t C, int64_t O,
                                 int64_t H, int64_t W, int64_t pad) {
  const int64_t HO = H + 2 * pad - 2, WO = W + 2 * pad - 2;
  std::vector<double> out(static_cast<size_t>(B * O * HO * WO));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t y = 0; y < HO; ++y)
        for (int64_t xx = 0; xx < WO; ++xx) {
          double acc = bias[static_cast<size_t>(o)];
          for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = y + ky - pad, ix = xx + kx - pad;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc +=
                    static_cast<double>(w[static_cast<size_t>(((o * C + ch) * 3 + ky) * 3 + kx)]) *
                    x[static_cast<size_t>(((b * C + ch) * H + iy) * W + ix)];
              }
          out[static_cast<size_t>(((b * O + o) * HO + y) * WO + xx)] = std::max(acc, 0.0);
        }
  return out;
}

TEST(Gemm, WinogradConvolutions) {
  // GEMM(3, 0): F(2 x 2, 3 x 3) with the bias and ReLU as its epilogue. One image (the threads
  // split the rows: 7 rows in a panel of 8), a batch of 3 (the threads split it), no padding,
  // and several blocks of tile rows (the last one short), against double precision.
  struct Case {
    int64_t B, C, O, H, W, pad;
  };
  const Target host = cpu::host_target();
  for (const Case& k : {Case{1, 24, 7, 24, 32, 1}, Case{3, 32, 20, 16, 14, 1},
                        Case{2, 32, 16, 18, 18, 0}, Case{1, 16, 6, 64, 24, 1}}) {
    SCOPED_TRACE(fmt::format("batch {}, {} -> {} channels, {} x {}, padding {}", k.B, k.C, k.O, k.H,
                             k.W, k.pad));
    const std::vector<float> x = random_floats(k.B * k.C * k.H * k.W, 31),
                             w = random_floats(k.O * k.C * 9, 32), bias = random_floats(k.O, 33);
    const Tensor y = Tensor::from_vector(x, {k.B, k.C, k.H, k.W}, {}, "CPU")
                         .conv2d(Tensor::from_vector(w, {k.O, k.C, 3, 3}, {}, "CPU"),
                                 Tensor::from_vector(bias, {k.O}, {}, "CPU"), 1, k.pad)
                         .relu();
    const Schedule s = build_schedule(normalize_graph(std::vector<UOp>{tensor::uop(y)}).key);
    ASSERT_EQ(s.kernels.size(), 1u);
    Runtime& rt = engine::runtime_of("CPU");
    // Winograd as planned and with register tiles of one and three vectors; the window's plain
    // GEMM (A packed) with a tile of three vectors and k blocks of 64.
    for (const std::vector<Opt>& opts :
         {std::vector<Opt>{{OptOp::GEMM, 3, 0}},
          {{OptOp::GEMM, 3, 0}, {OptOp::BLOCK, 0, 1}},
          {{OptOp::GEMM, 3, 0}, {OptOp::BLOCK, 0, 3}},
          {{OptOp::GEMM, 1, 0}, {OptOp::BLOCK, 0, 3}, {OptOp::BLOCK, 1, 64}}}) {
      SCOPED_TRACE(to_string(opts));
      const Program p = codegen(s.kernels[0].ast, {.opts = opts}, rt.target());
      EXPECT_EQ(p.source.find("Winograd") != std::string::npos, opts[0].axis == 3);
      const std::shared_ptr<CompiledKernel> kernel = rt.compile(p);
      std::vector<void*> bufs;
      for (int index : s.kernels[0].buffers) {
        const size_t count = static_cast<size_t>(s.buffers.at(static_cast<size_t>(index)).count);
        bufs.push_back(rt.alloc(count * sizeof(float)));
        if (bufs.size() == 1) continue;
        const std::vector<float>& v = count == x.size() ? x : count == w.size() ? w : bias;
        ASSERT_EQ(v.size(), count);
        rt.copy_in(bufs.back(), v.data(), count * sizeof(float));
      }
      const KernelLaunch launch{kernel.get(), bufs};
      rt.run({&launch, 1}, nullptr);
      const std::vector<double> want = conv3x3_relu(x, w, bias, k.B, k.C, k.O, k.H, k.W, k.pad);
      std::vector<float> got(want.size());
      rt.copy_out(got.data(), bufs[0], got.size() * sizeof(float));
      for (void* h : bufs) rt.free(h);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << "element " << i;
    }
  }
  // An odd output size, a stride of 2 or a 5 x 5 window is no Winograd kernel: an Error naming it.
  for (const auto& [size, stride, taps] : {std::tuple{9, 1, 3}, {12, 2, 3}, {12, 1, 5}}) {
    const Tensor y =
        Tensor::empty({1, 64, size, size}, dtypes::float32, "CPU")
            .conv2d(Tensor::empty({64, 64, taps, taps}, dtypes::float32, "CPU"), {}, stride, 1);
    const UOp ast =
        build_schedule(normalize_graph(std::vector<UOp>{tensor::uop(y)}).key).kernels.at(0).ast;
    try {
      (void)codegen(ast, {.opts = std::vector<Opt>{{OptOp::GEMM, 3, 0}}}, host);
      ADD_FAILURE() << "GEMM(3, 0) accepted for size " << size << ", stride " << stride;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Winograd"), std::string::npos) << e.what();
    }
  }
}

TEST(Gemm, DepthwiseConvolutionsAreStencilsOverTheWindowCopy) {
  // groups = channels: both operands read the channel, so there are no rows; each channel is a
  // batch element of one row, its taps read from the window copy (stride 1, and stride 2 from
  // 256 columns), the bias and ReLU its epilogue. Against double precision.
  for (const auto& [C, H, stride] : {std::tuple{32, 40, 1}, {24, 64, 2}}) {
    SCOPED_TRACE(fmt::format("{} channels, {} x {}, stride {}", C, H, H, stride));
    const int64_t HO = (H + 2 - 3) / stride + 1;
    const std::vector<float> x = random_floats(C * H * H, 41), w = random_floats(C * 9, 42),
                             bias = random_floats(C, 43);
    const Tensor y = Tensor::from_vector(x, {1, C, H, H}, {}, "CPU")
                         .conv2d(Tensor::from_vector(w, {C, 1, 3, 3}, {}, "CPU"),
                                 Tensor::from_vector(bias, {C}, {}, "CPU"), stride, 1, 1, C)
                         .relu();
    const std::string src = rendered(y, true);
    EXPECT_NE(src.find("pack_b"), std::string::npos);
    std::vector<double> want(static_cast<size_t>(C * HO * HO));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < HO; ++oy)
        for (int64_t ox = 0; ox < HO; ++ox) {
          double acc = bias[static_cast<size_t>(c)];
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy * stride + ky - 1, ix = ox * stride + kx - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= H) continue;
              acc += static_cast<double>(w[static_cast<size_t>(c * 9 + ky * 3 + kx)]) *
                     x[static_cast<size_t>((c * H + iy) * H + ix)];
            }
          want[static_cast<size_t>((c * HO + oy) * HO + ox)] = std::max(acc, 0.0);
        }
    expect_near(y, want);
  }
}

TEST(Gemm, NooptKeepsThePlainLoops) {
  const Matrix a = matrix(M, K, false, 1), b = matrix(K, N, false, 2);
  EXPECT_EQ(rendered(a.tensor.matmul(b.tensor), false).find("pack_a"), std::string::npos);
}

TEST(Gemm, FusedOperandsAndEpilogue) {
  // relu(relu(a) @ b^T + bias): the relu on a is packed, the bias and relu run on the block.
  const Matrix a = matrix(M, K, false, 3), b = matrix(K, N, true, 4);
  const std::vector<float> bias = random_floats(N, 5);
  const Tensor c =
      (a.tensor.relu().matmul(b.tensor) + Tensor::from_vector(bias, {N}, {}, "CPU")).relu();
  std::vector<float> a_relu = a.values;
  for (float& x : a_relu) x = x > 0 ? x : 0;
  std::vector<double> want = reference(a_relu, b.values, M, K, N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double& w = want[static_cast<size_t>(i * N + j)];
      w = std::max(0.0, w + bias[static_cast<size_t>(j)]);
    }
  EXPECT_NE(rendered(c, true).find("pack_a"), std::string::npos);
  expect_near(c, want);
}

TEST(Gemm, PointwiseConvolutionEpiloguesRunAlongTheFlatColumns) {
  // relu(conv1x1(x) + bias + r) over the output's rows and columns flattened: the epilogue reads
  // the residual r at the flat column (one vectorized loop) where r lies like the output, and
  // through its rows and columns where it is transposed. Stride 1 (30 x 30: column blocks end
  // mid-row) and stride 2 (15 x 15).
  constexpr int64_t C = 64, O = 96, H = 30, W = 30;
  const std::vector<float> x = random_floats(C * H * W, 21), w = random_floats(O * C, 22),
                           bias = random_floats(O, 23);
  const Tensor xt = Tensor::from_vector(x, {1, C, H, W}, {}, "CPU");
  const Tensor wt = Tensor::from_vector(w, {O, C, 1, 1}, {}, "CPU");
  const Tensor bt = Tensor::from_vector(bias, {O}, {}, "CPU");
  for (const int64_t s : {1, 2})
    for (const bool transposed : {false, true}) {
      SCOPED_TRACE(fmt::format("stride {}, residual {}", s, transposed ? "transposed" : "flat"));
      const int64_t HO = (H - 1) / s + 1, WO = (W - 1) / s + 1;
      const std::vector<float> r = random_floats(O * HO * WO, 24 + s);
      Tensor rt = Tensor::from_vector(r, {1, O, HO, WO}, {}, "CPU");
      if (transposed) rt = rt.transpose(2, 3);
      const Tensor c = (xt.conv2d(wt, bt, s) + rt).relu();
      std::vector<double> want(static_cast<size_t>(O * HO * WO));
      for (int64_t o = 0; o < O; ++o)
        for (int64_t y = 0; y < HO; ++y)
          for (int64_t xx = 0; xx < WO; ++xx) {
            double acc = bias[static_cast<size_t>(o)];
            for (int64_t ch = 0; ch < C; ++ch)
              acc += static_cast<double>(w[static_cast<size_t>(o * C + ch)]) *
                     x[static_cast<size_t>((ch * H + y * s) * W + xx * s)];
            const int64_t ry = transposed ? xx : y, rx = transposed ? y : xx;
            acc += r[static_cast<size_t>((o * HO + ry) * WO + rx)];
            want[static_cast<size_t>((o * HO + y) * WO + xx)] = std::max(acc, 0.0);
          }
      const std::string src = rendered(c, true);
      EXPECT_NE(src.find("pack_a"), std::string::npos);
      EXPECT_NE(src.find("const int64_t col = jc + j;"), std::string::npos) << src;
      expect_near(c, want);
    }
}

TEST(Gemm, DilatedConvolutionsReadTheWindowCopy) {
  // An atrous convolution (dilation 2 with padding 2, and 3 by 1 with padding (3, 0) and a
  // 3 x 2 kernel) reads the window copy at the dilated taps' offsets, like a stride-1 one, and
  // is never Winograd's.
  constexpr int64_t C = 24, O = 40, H = 20, W = 18;
  const std::vector<float> x = random_floats(C * H * W, 41);
  const Tensor xt = Tensor::from_vector(x, {1, C, H, W}, {}, "CPU");
  struct Case {
    int64_t kh, kw;
    Int2 dilation, padding;
  };
  for (const Case& k : {Case{3, 3, 2, 2}, Case{3, 2, {3, 1}, {3, 0}}}) {
    SCOPED_TRACE(fmt::format("{} x {}, dilation ({}, {})", k.kh, k.kw, k.dilation.h, k.dilation.w));
    const std::vector<float> w = random_floats(O * C * k.kh * k.kw, 42 + k.kw);
    const Tensor c = xt.conv2d(Tensor::from_vector(w, {O, C, k.kh, k.kw}, {}, "CPU"), {}, 1,
                               k.padding, k.dilation)
                         .relu();
    const int64_t HO = H + 2 * k.padding.h - k.dilation.h * (k.kh - 1),
                  WO = W + 2 * k.padding.w - k.dilation.w * (k.kw - 1);
    std::vector<double> want(static_cast<size_t>(O * HO * WO));
    for (int64_t o = 0; o < O; ++o)
      for (int64_t y = 0; y < HO; ++y)
        for (int64_t xx = 0; xx < WO; ++xx) {
          double acc = 0;
          for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                const int64_t iy = y + ky * k.dilation.h - k.padding.h,
                              ix = xx + kx * k.dilation.w - k.padding.w;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += static_cast<double>(
                           w[static_cast<size_t>(((o * C + ch) * k.kh + ky) * k.kw + kx)]) *
                       x[static_cast<size_t>((ch * H + iy) * W + ix)];
              }
          want[static_cast<size_t>((o * HO + y) * WO + xx)] = std::max(acc, 0.0);
        }
    const std::string src = rendered(c, true);
    EXPECT_NE(src.find("offs[kk] ="), std::string::npos) << src;
    EXPECT_EQ(src.find("Winograd"), std::string::npos);
    expect_near(c, want);
  }
}

TEST(Gemm, SmallImagesTakeTheBatchIntoTheGemm) {
  // A 3 x 3 convolution over 16 images of 2 x 2 (padding 1) and its input gradient: the
  // forward's columns (4 pixels) take the images (64 columns), and the gradient's per-window
  // product (rows: 4 pixels of each image, columns: channels x taps) takes them into its rows.
  constexpr int64_t B = 16, C = 48, O = 40, H = 2, W = 2;
  const std::vector<float> x = random_floats(B * C * H * W, 51), w = random_floats(O * C * 9, 52),
                           r = random_floats(B * O * H * W, 53);
  Tensor xt = Tensor::from_vector(x, {B, C, H, W}, {}, "CPU");
  xt.requires_grad_();
  const Tensor wt = Tensor::from_vector(w, {O, C, 3, 3}, {}, "CPU");
  const Tensor rt = Tensor::from_vector(r, {B, O, H, W}, {}, "CPU");
  const Tensor y = xt.conv2d(wt, {}, 1, 1);
  std::vector<double> want_y(static_cast<size_t>(B * O * H * W), 0.0),
      want_gx(static_cast<size_t>(B * C * H * W), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oy = 0; oy < H; ++oy)
        for (int64_t ox = 0; ox < W; ++ox) {
          const size_t out = static_cast<size_t>(((b * O + o) * H + oy) * W + ox);
          for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const size_t in = static_cast<size_t>(((b * C + ch) * H + iy) * W + ix);
                const double wv = w[static_cast<size_t>(((o * C + ch) * 3 + ky) * 3 + kx)];
                want_y[out] += wv * x[in];
                want_gx[in] += wv * r[out];
              }
        }
  EXPECT_NE(rendered(y, true).find("pack_a"), std::string::npos);
  expect_near(y, want_y);
  (y * rt).sum().backward();
  const Tensor gx = *xt.grad();
  EXPECT_NE(rendered(gx, true).find("pack_a"), std::string::npos);
  expect_near(gx, want_gx);
}

TEST(Gemm, AWeightReadAlongItsChannelsAndTapsPacksAsOneRun) {
  // A convolution's input gradient per window: out[b, c, y, x, ky, kx] = sum_o g[b, o, y, x]
  // w[o, c, ky, kx]. The columns are c, ky, kx, three ranges that the weight reads as one
  // contiguous run (9, 3 and 1 apart), so B's panel is one segment per row of k (a plain copy)
  // rather than one per 3 taps; the output, which puts y and x between c and the taps, keeps
  // its three ranges. Against double precision.
  constexpr int64_t B = 16, O = 48, C = 20, H = 4, W = 5;
  const std::vector<float> g = random_floats(B * O * H * W, 61), w = random_floats(O * C * 9, 62);
  const Tensor gt = Tensor::from_vector(g, {B, O, 1, H, W, 1, 1}, {}, "CPU");
  const Tensor wt = Tensor::from_vector(w, {1, O, C, 1, 1, 3, 3}, {}, "CPU");
  const Tensor out = (gt * wt).sum(1);
  std::vector<double> want(static_cast<size_t>(B * C * H * W * 9), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
          for (int64_t t = 0; t < 9; ++t) {
            double acc = 0;
            for (int64_t o = 0; o < O; ++o)
              acc += static_cast<double>(g[static_cast<size_t>(((b * O + o) * H + y) * W + x)]) *
                     w[static_cast<size_t>((o * C + c) * 9 + t)];
            want[static_cast<size_t>((((b * C + c) * H + y) * W + x) * 9 + t)] = acc;
          }
  const std::string src = rendered(out, true);
  EXPECT_NE(src.find("pack_a"), std::string::npos) << src;
  EXPECT_NE(src.find("        w = nr;\n"), std::string::npos) << src;
  expect_near(out, want);
}

TEST(Gemm, AWeightGradientPacksItsImageAlongK) {
  // A 3 x 3 convolution's weight gradient (autograd's): dw[o, c, ky, kx] = sum_{b, y, x}
  // g[b, o, y, x] x[b, c, y + ky - 1, x + kx - 1]. k is (b, y, x); B, the image, is read along x
  // (k's innermost range) and across the columns c, ky, kx only in runs of 3 taps, so its panel
  // is packed k-major through a block of x (kt[...]). Against double precision.
  constexpr int64_t B = 4, O = 24, C = 20, H = 12, W = 16;
  const std::vector<float> x = random_floats(B * C * H * W, 71),
                           g = random_floats(B * O * H * W, 72);
  const Tensor xt = Tensor::from_vector(x, {B, C, H, W}, {}, "CPU");
  const Tensor gt = Tensor::from_vector(g, {B, O, H, W}, {}, "CPU");
  Tensor w = Tensor::zeros({O, C, 3, 3}, dtypes::float32, "CPU").requires_grad_();
  (xt.conv2d(w, {}, 1, 1) * gt).sum().backward();
  const Tensor dw = *w.grad();
  std::vector<double> want(static_cast<size_t>(O * C * 9), 0.0);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < 9; ++t) {
        double acc = 0;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t y = 0; y < H; ++y)
            for (int64_t xx = 0; xx < W; ++xx) {
              const int64_t iy = y + t / 3 - 1, ix = xx + t % 3 - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              acc += static_cast<double>(g[static_cast<size_t>(((b * O + o) * H + y) * W + xx)]) *
                     x[static_cast<size_t>(((b * C + c) * H + iy) * W + ix)];
            }
        want[static_cast<size_t>((o * C + c) * 9 + t)] = acc;
      }
  const std::string src = rendered(dw, true);
  EXPECT_NE(src.find("pack_a"), std::string::npos) << src;
  EXPECT_NE(src.find("float kt["), std::string::npos) << src;
  expect_near(dw, want);
}

TEST(Gemm, GroupedConvolutionsAreABatchOfGemms) {
  // relu(conv2d(x, w, bias, groups = 4) * 0.5): each group's output channels are a range of
  // their own beside the group's (r_4_24_28_28_..., not r_96_28_28_... reading the group as a
  // division of the channel), so the groups are the GEMM's batch. 1 x 1 (ShuffleNet's grouped
  // pointwise convolutions) and 3 x 3 (ResNeXt's), against double precision.
  constexpr int64_t G = 4, CG = 32, OG = 24, H = 28, W = 28;
  const std::vector<float> x = random_floats(G * CG * H * W, 31), bias = random_floats(G * OG, 32);
  const Tensor xt = Tensor::from_vector(x, {1, G * CG, H, W}, {}, "CPU");
  const Tensor bt = Tensor::from_vector(bias, {G * OG}, {}, "CPU");
  for (const int64_t k : {1, 3}) {
    SCOPED_TRACE(fmt::format("{} x {}", k, k));
    const std::vector<float> w = random_floats(G * OG * CG * k * k, 33 + k);
    const Tensor wt = Tensor::from_vector(w, {G * OG, CG, k, k}, {}, "CPU");
    const Tensor c = (xt.conv2d(wt, bt, 1, k / 2, 1, G) * 0.5).relu();
    std::vector<double> want(static_cast<size_t>(G * OG * H * W));
    for (int64_t o = 0; o < G * OG; ++o)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xx = 0; xx < W; ++xx) {
          double acc = bias[static_cast<size_t>(o)];
          for (int64_t ch = 0; ch < CG; ++ch)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t iy = y + ky - k / 2, ix = xx + kx - k / 2;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc +=
                    static_cast<double>(w[static_cast<size_t>(((o * CG + ch) * k + ky) * k + kx)]) *
                    x[static_cast<size_t>(((o / OG * CG + ch) * H + iy) * W + ix)];
              }
          want[static_cast<size_t>((o * H + y) * W + xx)] = std::max(acc * 0.5, 0.0);
        }
    const std::vector<KernelInfo> kernels = c.schedule();
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].name.rfind(fmt::format("r_{}_{}_{}_{}_", G, OG, H, W), 0), 0u)
        << kernels[0].name;
    EXPECT_NE(rendered(c, true).find("pack_a"), std::string::npos);
    expect_near(c, want);
  }
}

TEST(Gemm, Batched) {
  constexpr int64_t B = 3, m = 40, k = 520, n = 64;
  const std::vector<float> a = random_floats(B * m * k, 6), b = random_floats(B * k * n, 7);
  const Tensor c = Tensor::from_vector(a, {B, m, k}, {}, "CPU")
                       .matmul(Tensor::from_vector(b, {B, k, n}, {}, "CPU"));
  std::vector<double> want;
  for (int64_t i = 0; i < B; ++i) {
    const auto part = [&](const std::vector<float>& v, int64_t size) {
      return std::vector<float>(v.begin() + i * size, v.begin() + (i + 1) * size);
    };
    const std::vector<double> w = reference(part(a, m * k), part(b, k * n), m, k, n);
    want.insert(want.end(), w.begin(), w.end());
  }
  EXPECT_NE(rendered(c, true).find("pack_a"), std::string::npos);
  expect_near(c, want);
}

TEST(Gemm, BatchTimesMatrix) {
  // (batch, m, k) @ (k, n): the batch is a's own axis, flattened with m into the rows.
  constexpr int64_t B = 2, m = 50, k = 300, n = 80;
  const std::vector<float> a = random_floats(B * m * k, 8), b = random_floats(k * n, 9);
  const Tensor c = Tensor::from_vector(a, {B, m, k}, {}, "CPU")
                       .matmul(Tensor::from_vector(b, {k, n}, {}, "CPU"));
  EXPECT_NE(rendered(c, true).find("pack_a"), std::string::npos);
  expect_near(c, reference(a, b, B * m, k, n));
}

}  // namespace
