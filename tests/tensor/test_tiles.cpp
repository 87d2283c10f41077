// tests/tensor: matmul kernels whose operand tiles are staged in shared memory (Opt STAGE), run on
// every device that has workgroups with shared memory, against double-precision references: the
// Opt lists are given, so the staged code runs even where the heuristics would not choose it (a
// device that runs on the CPU). Contiguous and transposed operands (vec4 and scalar tiles), a
// batch, int32, tiles the lanes do not divide, and a list whose tiles exceed the device's shared
// memory (an Error, the runtime still usable).
#include <cstring>
#include <vkgrad/vkgrad.hpp>

#include "codegen/opt.hpp"
#include "codegen/pipeline.hpp"
#include "engine/internal.hpp"
#include "harness.hpp"
#include "ir/uop.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::testing {
namespace {

class TilesTest : public DeviceTest {};
VKGRAD_ALL_DEVICES(TilesTest);

std::vector<double> rand32(int64_t n, double lo, double hi, uint64_t seed) {
  std::vector<double> v = random_values(n, lo, hi, seed);
  for (double& x : v) x = round_to(x, dtypes::float32);
  return v;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  for (size_t i = 0; i < v.size(); ++i) {
    const T x = static_cast<T>(v[i]);
    std::memcpy(out.data() + i * sizeof(T), &x, sizeof(T));
  }
  return out;
}

// out[b][i][j] = sum_p a(b, i, p) * bm(b, p, j) with a and bm given as row-major (batch, m, k)
// and (batch, k, n) arrays, transposed on the device where asked.
std::vector<double> reference(const std::vector<double>& a, const std::vector<double>& b,
                              int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a[static_cast<size_t>((z * m + i) * k + p)] *
                 b[static_cast<size_t>((z * k + p) * n + j)];
        out[static_cast<size_t>((z * m + i) * n + j)] = acc;
      }
  return out;
}

struct Case {
  const char* what;
  int64_t batch, m, k, n;
  bool a_t, b_t;  // operands stored transposed
  DType dtype;
  std::vector<Opt> opts;
};

// Runs the case's one kernel with its Opt list on the device's runtime, on buffers of our own,
// and compares it with the reference.
void run_case(const std::string& device, const Case& c) {
  SCOPED_TRACE(std::string(c.what) + " " + to_string(c.opts));
  const bool ints = c.dtype == dtypes::int32;
  const std::vector<double> a =
      ints ? random_ints(c.batch * c.m * c.k, -9, 9, 1) : rand32(c.batch * c.m * c.k, -1, 1, 1);
  const std::vector<double> b =
      ints ? random_ints(c.batch * c.k * c.n, -9, 9, 2) : rand32(c.batch * c.k * c.n, -1, 1, 2);
  // The operands as stored: transposed ones hold (batch, k, m) / (batch, n, k).
  auto stored = [&](const std::vector<double>& v, int64_t r, int64_t s, bool t) {
    if (!t) return v;
    std::vector<double> out(v.size());
    for (int64_t z = 0; z < c.batch; ++z)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < s; ++j)
          out[static_cast<size_t>((z * s + j) * r + i)] =
              v[static_cast<size_t>((z * r + i) * s + j)];
    return out;
  };
  const std::vector<double> as = stored(a, c.m, c.k, c.a_t), bs = stored(b, c.k, c.n, c.b_t);
  // A batch of 1 is no axis: the Opt lists number the output axes (rows, columns).
  auto shape = [&](int64_t r, int64_t s) {
    return c.batch == 1 ? Shape{r, s} : Shape{c.batch, r, s};
  };
  Tensor ta = Tensor::empty(c.a_t ? shape(c.k, c.m) : shape(c.m, c.k), c.dtype, device);
  Tensor tb = Tensor::empty(c.b_t ? shape(c.n, c.k) : shape(c.k, c.n), c.dtype, device);
  if (c.a_t) ta = ta.transpose(-2, -1);
  if (c.b_t) tb = tb.transpose(-2, -1);
  const Tensor out = ta.matmul(tb);
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(out)});
  const Schedule s = build_schedule(g.key);
  ASSERT_EQ(s.kernels.size(), 1u);
  Runtime& rt = engine::runtime_of(device);
  const Program p = codegen(s.kernels[0].ast, {.opts = c.opts}, rt.target());
  const std::shared_ptr<CompiledKernel> kernel = rt.compile(p);
  // Slot 0 is the output; the inputs are told apart by their sizes (the cases keep m != n).
  std::vector<void*> bufs;
  const size_t item = static_cast<size_t>(c.dtype.itemsize());
  for (int b_index : s.kernels[0].buffers) {
    const ScheduleBuffer& sb = s.buffers.at(static_cast<size_t>(b_index));
    const size_t bytes = static_cast<size_t>(sb.count) * item;
    bufs.push_back(rt.alloc(bytes));
    if (bufs.size() == 1) continue;
    const std::vector<double>& v = sb.count == static_cast<int64_t>(as.size()) ? as : bs;
    const std::vector<uint8_t> in = ints ? bytes_of<int32_t>(v) : bytes_of<float>(v);
    ASSERT_EQ(in.size(), bytes);
    rt.copy_in(bufs.back(), in.data(), bytes);
  }
  const KernelLaunch launch{kernel.get(), bufs};
  rt.run({&launch, 1}, nullptr);
  const std::vector<double> want = reference(a, b, c.batch, c.m, c.k, c.n);
  std::vector<uint8_t> got(want.size() * item);
  rt.copy_out(got.data(), bufs[0], got.size());
  for (void* h : bufs) rt.free(h);
  for (size_t i = 0; i < want.size(); ++i) {
    double x;
    if (ints) {
      int32_t v;
      std::memcpy(&v, got.data() + i * item, item);
      x = v;
    } else {
      float v;
      std::memcpy(&v, got.data() + i * item, item);
      x = v;
    }
    ASSERT_NEAR(x, want[i], ints ? 0.0 : 1e-5 + 1e-5 * std::abs(want[i])) << "at " << i;
  }
}

TEST_P(TilesTest, StagedMatmulsMatchDoublePrecision) {
  if (dev() == "CPU") GTEST_SKIP() << "the CPU launches no workgroups";
  const DType f32 = dtypes::float32;
  const std::vector<Case> cases{
      // 8 x 8 lanes of 4 x 4 values, k staged 8 at a time (vec4 tiles along k and the columns).
      {"64x32x48",
       1,
       64,
       32,
       48,
       false,
       false,
       f32,
       {{OptOp::UPCAST, 1, 4},
        {OptOp::UPCAST, 0, 4},
        {OptOp::UNROLL, 0, 4},
        {OptOp::LOCAL, 1, 4},
        {OptOp::LOCAL, 0, 8},
        {OptOp::STAGE, 0, 2}}},
      // A and B transposed: scalar and vec4 tiles along other axes; 6 x 8 lanes do not divide
      // the 256-slot tiles (gated copies).
      {"transposed",
       1,
       48,
       64,
       32,
       true,
       true,
       f32,
       {{OptOp::UPCAST, 1, 4},
        {OptOp::UPCAST, 0, 2},
        {OptOp::LOCAL, 1, 8},
        {OptOp::LOCAL, 0, 6},
        {OptOp::STAGE, 0, 8}}},
      // A batch on the grid, k staged 4 at a time with 2 unrolled accumulators.
      {"batched",
       3,
       16,
       40,
       24,
       false,
       false,
       f32,
       {{OptOp::UPCAST, 2, 4},
        {OptOp::UNROLL, 0, 2},
        {OptOp::LOCAL, 2, 6},
        {OptOp::LOCAL, 1, 4},
        {OptOp::STAGE, 0, 2}}},
      // int32: exact.
      {"int32",
       1,
       32,
       64,
       16,
       false,
       false,
       dtypes::int32,
       {{OptOp::UPCAST, 1, 4},
        {OptOp::UPCAST, 0, 2},
        {OptOp::UNROLL, 0, 4},
        {OptOp::LOCAL, 1, 4},
        {OptOp::LOCAL, 0, 8},
        {OptOp::STAGE, 0, 4}}},
  };
  for (const Case& c : cases) run_case(dev(), c);
}

// Register tiles whose uniform loads (A's rows, the same in every lane of a workgroup) a device
// like lavapipe shares through subgroup shuffles (Target::shuffle_uniform_loads): rows the
// subgroup's lanes do not divide (3: lanes past them load the last row; 12: two loads per lane),
// scalar loads of a transposed A, int32, and workgroups of 4 and 12 lanes (subgroups with 4
// lanes active: those share).
TEST_P(TilesTest, SharedUniformLoadsMatchDoublePrecision) {
  if (dev() == "CPU") GTEST_SKIP() << "the CPU launches no workgroups";
  const DType f32 = dtypes::float32;
  using O = OptOp;
  auto matmul = [](const char* what, int64_t m, int64_t k, int64_t n, bool a_t, bool b_t, DType d,
                   std::vector<Opt> opts) {
    return Case{what, 1, m, k, n, a_t, b_t, d, std::move(opts)};
  };
  const std::vector<Case> cases{
      matmul("3 rows", 24, 32, 64, false, false, f32,
             {{O::UPCAST, 1, 4}, {O::UPCAST, 0, 3}, {O::UNROLL, 0, 4}, {O::LOCAL, 1, 16}}),
      matmul("12 rows, A transposed", 24, 32, 64, true, false, f32,
             {{O::UPCAST, 1, 4}, {O::UPCAST, 0, 12}, {O::LOCAL, 1, 8}}),
      matmul("int32", 32, 16, 64, false, false, dtypes::int32,
             {{O::UPCAST, 1, 4}, {O::UPCAST, 0, 16}, {O::UNROLL, 0, 4}, {O::LOCAL, 1, 16}}),
      matmul("4 lanes", 16, 32, 48, false, true, f32,
             {{O::UPCAST, 1, 4}, {O::UPCAST, 0, 8}, {O::LOCAL, 1, 4}}),
      matmul("12 lanes, 7 rows", 14, 24, 96, false, false, f32,
             {{O::UPCAST, 1, 2}, {O::UPCAST, 0, 7}, {O::UNROLL, 0, 4}, {O::LOCAL, 1, 12}}),
  };
  for (const Case& c : cases) run_case(dev(), c);
  // Where the device shares them, the kernels do shuffle.
  Runtime& rt = engine::runtime_of(dev());
  if (rt.identity().find("shuffle true") == std::string::npos) return;
  const Tensor a = Tensor::empty({24, 32}, f32, dev()), b = Tensor::empty({32, 64}, f32, dev());
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(a.matmul(b))});
  const Program p =
      codegen(build_schedule(g.key).kernels.at(0).ast, {.opts = cases[0].opts}, rt.target());
  EXPECT_NE(p.source.find("subgroupShuffle("), std::string::npos) << p.source;
}

// Matmuls the heuristics may stage where the device's target has shared tiles (a GPU, or lavapipe
// under VKGRAD_VK_ENABLE=shared_tiles: the ctest tensor_vulkan_shared_tiles), through the whole
// tensor path: a plain one, a batch, a linear layer with its bias and relu fused, int32.
TEST_P(TilesTest, HeuristicMatmulsMatchDoublePrecision) {
  const std::vector<double> a = rand32(2 * 64 * 96, -1, 1, 3), b = rand32(2 * 96 * 128, -1, 1, 4);
  const std::vector<double> bias = rand32(128, -1, 1, 5);
  const Tensor ta = make_tensor(a, {2, 64, 96}, dtypes::float32, dev());
  const Tensor tb = make_tensor(b, {2, 96, 128}, dtypes::float32, dev());
  const std::vector<double> want = reference(a, b, 2, 64, 96, 128);
  expect_values(ta.matmul(tb), {2, 64, 128}, dtypes::float32, want, 1e-5, 1e-5);
  const std::vector<double> first(want.begin(), want.begin() + 64 * 128);
  const Tensor a0 = make_tensor({a.begin(), a.begin() + 64 * 96}, {64, 96}, dtypes::float32, dev());
  const Tensor b0 =
      make_tensor({b.begin(), b.begin() + 96 * 128}, {96, 128}, dtypes::float32, dev());
  expect_values(a0.matmul(b0), {64, 128}, dtypes::float32, first, 1e-5, 1e-5);
  std::vector<double> fused = first;
  for (size_t i = 0; i < fused.size(); ++i) fused[i] = std::max(0.0, fused[i] + bias[i % 128]);
  expect_values((a0.matmul(b0) + make_tensor(bias, {128}, dtypes::float32, dev())).relu(),
                {64, 128}, dtypes::float32, fused, 1e-5, 1e-5);
  const std::vector<double> ai = random_ints(64 * 32, -9, 9, 6),
                            bi = random_ints(32 * 64, -9, 9, 7);
  expect_values(make_tensor(ai, {64, 32}, dtypes::int32, dev())
                    .matmul(make_tensor(bi, {32, 64}, dtypes::int32, dev())),
                {64, 64}, dtypes::int32, reference(ai, bi, 1, 64, 32, 64));
  // Where the target stages tiles, the heuristics choose STAGE for a large matmul (a GPU keeps
  // small ones' register tiles below what staging needs, for enough invocations).
  Runtime& rt = engine::runtime_of(dev());
  if (rt.identity().find("tiles true") == std::string::npos) return;
  const Tensor big = Tensor::empty({1024, 1024}, dtypes::float32, dev());
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(big.matmul(big))});
  const Program p =
      codegen(build_schedule(g.key).kernels.at(0).ast, {.optimize = true}, rt.target());
  EXPECT_TRUE(std::any_of(p.opts.begin(), p.opts.end(), [](const Opt& o) {
    return o.op == OptOp::STAGE;
  })) << to_string(p.opts);
}

TEST_P(TilesTest, TilesOverTheSharedMemoryAreAnError) {
  if (dev() == "CPU") GTEST_SKIP() << "the CPU launches no workgroups";
  // 1024 steps of k for 8 lanes, per operand, double buffered: 128 KiB, over every device's limit.
  const Tensor a = Tensor::empty({64, 2048}, dtypes::float32, dev());
  const Tensor b = Tensor::empty({2048, 64}, dtypes::float32, dev());
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(a.matmul(b))});
  const Schedule s = build_schedule(g.key);
  Runtime& rt = engine::runtime_of(dev());
  const std::vector<Opt> opts{{OptOp::LOCAL, 1, 8}, {OptOp::LOCAL, 0, 8}, {OptOp::STAGE, 0, 1024}};
  EXPECT_THROW(codegen(s.kernels.at(0).ast, {.opts = opts}, rt.target()), Error);
  // The device goes on.
  expect_values(Tensor::ones({2, 2}, {}, dev()).matmul(Tensor::ones({2, 2}, {}, dev())), {2, 2},
                dtypes::float32, {2, 2, 2, 2});
}

}  // namespace
}  // namespace vkgrad::testing
