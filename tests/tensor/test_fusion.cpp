// tests/tensor: fusion pins kernel counts (a regression fails here), the schedule cache is hit
// for the same structure with new buffers, and the memory planner reuses intermediates.
#include <vkgrad/stats.hpp>

#include "harness.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::testing {
namespace {

class FusionTest : public DeviceTest {
 protected:
  Tensor rnd(const Shape& s, uint64_t seed) {
    return make_tensor(random_values(numel_of(s), -1, 1, seed), s, dtypes::float32, dev());
  }
};

TEST_P(FusionTest, ElementwiseIsOneKernel) {
  Tensor a = rnd({17, 3}, 1), b = rnd({17, 3}, 2), c = rnd({17, 3}, 3);
  EXPECT_EQ(((a + b) * c).schedule().size(), 1u);
}

TEST_P(FusionTest, ReduceFusesItsInput) {
  Tensor a = rnd({257}, 1), b = rnd({257}, 2);
  Tensor s = (a * b).sum();
  EXPECT_EQ(s.schedule().size(), 1u);
  const auto av = values_of(a), bv = values_of(b);
  double ref = 0;
  for (size_t i = 0; i < av.size(); ++i) ref += av[i] * bv[i];
  expect_values(s, {}, dtypes::float32, {ref}, 1e-5, 1e-5);
}

TEST_P(FusionTest, ALargeFullReductionIsTwoKernels) {
  // 300 x 512 elements: 256 partial results over rows of 600, then their reduction (the
  // scheduler's split_reduceop). sum, mean and max, on every device.
  Tensor x = rnd({300, 512}, 9);
  auto shapes = [](const Tensor& t) {
    std::vector<Shape> out;
    for (const KernelInfo& k : t.schedule()) out.push_back(k.global_size);
    return out;
  };
  EXPECT_EQ(shapes(x.sum()), (std::vector<Shape>{{256, 1}, {}}));
  EXPECT_EQ(shapes(x.max(std::vector<int>{0, 1}, true)), (std::vector<Shape>{{256, 1}, {1, 1}}));
  EXPECT_EQ(x.mean().schedule().size(), 2u);
  const auto xv = values_of(x);
  double sum = 0, mx = -1e300;
  for (double v : xv) sum += v, mx = std::max(mx, v);
  expect_values(x.sum(), {}, dtypes::float32, {sum}, 1e-5, 1e-4);
  expect_values(x.mean(), {}, dtypes::float32, {sum / 153600.0}, 1e-5, 1e-8);
  expect_values(x.max(), {}, dtypes::float32, {mx});
  // Fewer elements, or not whole rows of 256: one kernel.
  EXPECT_EQ(rnd({255, 256}, 10).sum().schedule().size(), 1u);
  EXPECT_EQ(rnd({257, 257}, 11).sum().schedule().size(), 1u);
}

TEST_P(FusionTest, AFewLongRowsAreSplitToo) {
  // Over the last axis of (3, 2^16): 256 partial results per row, then each row's. softmax
  // splits its max and its sum.
  const int64_t n = int64_t{1} << 16;
  Tensor x = rnd({3, n}, 12);
  EXPECT_EQ(x.sum(1).schedule().size(), 2u);
  EXPECT_EQ(x.softmax(-1).schedule().size(), 5u);
  const auto xv = values_of(x);
  std::vector<double> sum(3, 0.0), mx(3, -1e300), soft(xv.size());
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < n; ++c) sum[r] += xv[r * n + c], mx[r] = std::max(mx[r], xv[r * n + c]);
    double e = 0;
    for (int64_t c = 0; c < n; ++c) e += std::exp(xv[r * n + c] - mx[r]);
    for (int64_t c = 0; c < n; ++c) soft[r * n + c] = std::exp(xv[r * n + c] - mx[r]) / e;
  }
  expect_values(x.sum(1), {3}, dtypes::float32, sum, 1e-5, 1e-4);
  expect_values(x.max(1), {3}, dtypes::float32, mx);
  expect_values(x.softmax(-1), {3, n}, dtypes::float32, soft, 1e-5, 1e-10);
}

TEST_P(FusionTest, MatmulIsOneKernelWithItsEpilogue) {
  Tensor a = rnd({16, 33}, 1), b = rnd({33, 48}, 2);
  EXPECT_EQ(a.matmul(b).schedule().size(), 1u);
  Tensor r = a.matmul(b).relu();
  EXPECT_EQ(r.schedule().size(), 1u);
  const auto av = values_of(a), bv = values_of(b);
  std::vector<double> ref(16 * 48);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 48; ++j) {
      double acc = 0;
      for (int k = 0; k < 33; ++k) acc += av[i * 33 + k] * bv[k * 48 + j];
      ref[i * 48 + j] = acc > 0 ? acc : 0;
    }
  expect_values(r, {16, 48}, dtypes::float32, ref, 1e-5, 1e-5);
}

TEST_P(FusionTest, LongElementwiseChainIsOneKernel) {
  Tensor x = rnd({1023}, 4);
  Tensor y = x;
  for (int i = 0; i < 200; ++i) y = i % 2 ? y * 0.999 : y + 0.001;
  EXPECT_EQ(y.schedule().size(), 1u);
  std::vector<double> ref = values_of(x);
  for (double& v : ref) {
    float f = static_cast<float>(v);
    for (int i = 0; i < 200; ++i) f = i % 2 ? f * 0.999f : f + 0.001f;
    v = f;
  }
  expect_values(y, {1023}, dtypes::float32, ref, 0, 0);  // the same float32 steps, exactly
}

TEST_P(FusionTest, SoftmaxIsAtMostThreeKernels) {
  Tensor x = rnd({5, 17}, 5);
  Tensor s = x.softmax(-1);
  EXPECT_LE(s.schedule().size(), 3u);
  const auto xv = values_of(x);
  std::vector<double> ref(xv.size());
  for (int r = 0; r < 5; ++r) {
    double m = -1e300, sum = 0;
    for (int c = 0; c < 17; ++c) m = std::max(m, xv[r * 17 + c]);
    for (int c = 0; c < 17; ++c) sum += std::exp(xv[r * 17 + c] - m);
    for (int c = 0; c < 17; ++c) ref[r * 17 + c] = std::exp(xv[r * 17 + c] - m) / sum;
  }
  expect_values(s, {5, 17}, dtypes::float32, ref, 1e-5, 1e-6);
}

// Kernels of a schedule of several roots, and how many of them reduce.
std::pair<size_t, int> kernels_and_reductions(const std::vector<Tensor>& roots) {
  std::vector<UOp> uops;
  for (const Tensor& t : roots) uops.push_back(tensor::uop(t));
  const Schedule sched = build_schedule(normalize_graph(uops).key);
  int reductions = 0;
  for (const ScheduleKernel& k : sched.kernels)
    for (const UOp& u : toposort(k.ast)) {
      if (u.op() != Ops::REDUCE) continue;
      ++reductions;
      break;
    }
  return {sched.kernels.size(), reductions};
}

TEST_P(FusionTest, AReductionSeveralKernelsReadIsComputedOnce) {
  // A gradient feeding both of Adam's moments: the matmul runs once, not once per moment.
  Tensor a = rnd({16, 33}, 1), b = rnd({33, 48}, 2);
  Tensor g = a.matmul(b);
  std::vector<Tensor> outs{g * 0.9, g * g * 0.1};
  EXPECT_EQ(kernels_and_reductions(outs), (std::pair<size_t, int>{3, 1}));
  Tensor::realize_all(outs);
  const auto av = values_of(a), bv = values_of(b);
  std::vector<double> m(16 * 48), v(16 * 48);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 48; ++j) {
      double acc = 0;
      for (int k = 0; k < 33; ++k) acc += av[i * 33 + k] * bv[k * 48 + j];
      m[i * 48 + j] = acc * 0.9;
      v[i * 48 + j] = acc * acc * 0.1;
    }
  expect_values(outs[0], {16, 48}, dtypes::float32, m, 1e-5, 1e-5);
  expect_values(outs[1], {16, 48}, dtypes::float32, v, 1e-5, 1e-5);
}

TEST_P(FusionTest, AKernelNeverBindsMoreThanTheBufferLimit) {
  // The row sums of 40 tensors concatenated: the sums are stored (each sits behind the
  // concatenation's padding) and the concatenation, which would read 40 buffers, is cut so that
  // no kernel binds more than kMaxKernelBuffers (lavapipe allows 32 per shader stage).
  std::vector<Tensor> parts;
  std::vector<double> want;
  for (int i = 0; i < 40; ++i) {
    Tensor x = rnd({3, 5}, 100 + i);
    parts.push_back(x.sum(1));
    const auto xv = values_of(x);
    for (int r = 0; r < 3; ++r)
      want.push_back(xv[r * 5] + xv[r * 5 + 1] + xv[r * 5 + 2] + xv[r * 5 + 3] + xv[r * 5 + 4]);
  }
  Tensor all = cat(parts);
  for (const KernelInfo& k : all.schedule())
    EXPECT_LE(k.num_buffers, static_cast<int64_t>(kMaxKernelBuffers)) << k.name;
  expect_values(all, {120}, dtypes::float32, want, 1e-6, 1e-6);
}

TEST_P(FusionTest, AParameterIsMaterializedOnce) {
  // A lazy initializer that requires grad is realized in place by the first computation that
  // reads it: that computation's own kernels, and every later one's, are the matmul alone (no
  // random-number kernel), and two forwards read the same values.
  Tensor w = Tensor::randn({8, 16}, dtypes::float32, dev()).mul(0.1).requires_grad_();
  Tensor x = rnd({4, 8}, 20);
  EXPECT_EQ(x.matmul(w).schedule().size(), 1u);
  EXPECT_TRUE(w.schedule().empty());  // realized now
  const auto first = values_of(x.matmul(w)), second = values_of(x.matmul(w));
  EXPECT_EQ(first, second);
  // Gradients still reach it.
  x.matmul(w).sum().backward();
  ASSERT_TRUE(w.grad().has_value());
  const auto xv = values_of(x);
  std::vector<double> want(8 * 16);
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 16; ++j) want[k * 16 + j] = xv[k] + xv[8 + k] + xv[16 + k] + xv[24 + k];
  expect_values(*w.grad(), {8, 16}, dtypes::float32, want, 1e-6, 1e-6);
}

TEST_P(FusionTest, AnExpensiveMatmulOperandIsStoredNotRecomputed) {
  Tensor x = rnd({16, 33}, 3), y = rnd({16, 33}, 4), w = rnd({33, 48}, 5);
  // One cheap op on an operand stays fused; exp and a product are computed once, stored, and
  // read by the matmul (instead of once per output column).
  EXPECT_EQ((x * 2.0).matmul(w).schedule().size(), 1u);
  Tensor r = (x.exp() * y).matmul(w);
  EXPECT_EQ(r.schedule().size(), 2u);
  const auto xv = values_of(x), yv = values_of(y), wv = values_of(w);
  std::vector<double> ref(16 * 48);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 48; ++j) {
      double acc = 0;
      for (int k = 0; k < 33; ++k)
        acc += std::exp(xv[i * 33 + k]) * yv[i * 33 + k] * wv[k * 48 + j];
      ref[i * 48 + j] = acc;
    }
  expect_values(r, {16, 48}, dtypes::float32, ref, 1e-5, 1e-5);
}

TEST_P(FusionTest, ABroadcastTranscendentalIsComputedOnce) {
  // Adam's bias correction: a scalar power broadcast over a parameter is one small kernel, not
  // a power per element; a cheap broadcast operand stays fused.
  Tensor p = rnd({64, 32}, 6), m = rnd({64, 32}, 7), b = rnd({32}, 8);
  const Tensor t = make_tensor({3.0}, {}, dtypes::float32, dev());  // a step count in memory
  EXPECT_EQ((p + b * 2.0).schedule().size(), 1u);
  Tensor r = p - m / (1.0 - Tensor(0.9).pow(t));
  EXPECT_EQ(r.schedule().size(), 2u);
  const auto pv = values_of(p), mv = values_of(m);
  std::vector<double> ref(pv.size());
  for (size_t i = 0; i < pv.size(); ++i) ref[i] = pv[i] - mv[i] / (1.0 - std::pow(0.9, 3.0));
  expect_values(r, {64, 32}, dtypes::float32, ref, 1e-5, 1e-5);
}

TEST_P(FusionTest, ViewsOfARealizedBufferNeedNoCopyUntilUsed) {
  Tensor a = rnd({4, 6}, 6).realize();
  EXPECT_EQ(a.schedule().size(), 0u);
  // A chain of movement ops over a buffer is one kernel that reads it through an index.
  Tensor v = a.permute({1, 0}).pad({{1, 1}, {0, 2}}).flip(0).shrink({{1, 7}, {1, 5}});
  EXPECT_EQ(v.schedule().size(), 1u);
  EXPECT_EQ(v.contiguous().schedule().size(), 1u);
}

TEST_P(FusionTest, ScheduleCacheHitsForTheSameStructure) {
  auto build = [&](uint64_t seed, double k) {
    Tensor a = rnd({33, 7}, seed), b = rnd({7}, seed + 1);
    return ((a * b).sum(1) + k).exp2();
  };
  Tensor first = build(10, 1.0).realize();
  reset_runtime_stats();
  Tensor again = build(20, 1.0);  // new buffers, same structure
  const std::vector<double> want = [&] {
    std::vector<double> out(33);
    const auto av = random_values(33 * 7, -1, 1, 20), bv = random_values(7, -1, 1, 21);
    for (int i = 0; i < 33; ++i) {
      double s = 0;
      for (int j = 0; j < 7; ++j)
        s += static_cast<double>(static_cast<float>(av[i * 7 + j])) * static_cast<float>(bv[j]);
      out[i] = std::exp2(s + 1.0);
    }
    return out;
  }();
  expect_values(again, {33}, dtypes::float32, want, 1e-5, 0);
  const RuntimeStats s = runtime_stats();
  EXPECT_EQ(s.schedule_cache_hits, 1);
  EXPECT_EQ(s.schedules_built, 0);
  EXPECT_EQ(s.programs_compiled, 0);
}

TEST_P(FusionTest, IntermediateBuffersShareMemory) {
  // t1, t2, t3 are realized (each feeds an expand); t1 is dead once t2 is computed, so t3 can
  // take t1's memory: three intermediates in two arena slots.
  Tensor x = rnd({8, 16}, 7);
  Tensor t1 = x.max(1, true);
  Tensor t2 = (x - t1).sum(1, true);
  Tensor t3 = (x * t2).max(1, true);
  Tensor out = (x + t3).sum(1);
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(out)});
  const Schedule sched = build_schedule(g.key);
  int intermediates = 0;
  for (const ScheduleBuffer& b : sched.buffers)
    intermediates += b.kind == ScheduleBuffer::Kind::intermediate;
  EXPECT_EQ(sched.kernels.size(), 4u);
  EXPECT_EQ(intermediates, 3);
  EXPECT_EQ(sched.arena_slot_bytes.size(), 2u);
  // And the values are right.
  const auto xv = values_of(x);
  std::vector<double> ref(8);
  for (int r = 0; r < 8; ++r) {
    double m = -1e300, s = 0, m3 = -1e300, o = 0;
    for (int c = 0; c < 16; ++c) m = std::max(m, xv[r * 16 + c]);
    for (int c = 0; c < 16; ++c) s += static_cast<float>(xv[r * 16 + c] - m);
    for (int c = 0; c < 16; ++c) m3 = std::max(m3, xv[r * 16 + c] * s);
    for (int c = 0; c < 16; ++c) o += xv[r * 16 + c] + m3;
    ref[r] = o;
  }
  expect_values(out, {8}, dtypes::float32, ref, 1e-4, 1e-4);
}

VKGRAD_ALL_DEVICES(FusionTest);

}  // namespace
}  // namespace vkgrad::testing
