// tests/tensor: BEAM search on every device — the search on a small kernel finds a list whose
// output matches, a candidate with a wrong output is never chosen, and BEAM=N in the environment
// (the BeamEnv suite, run by its own ctest with BEAM=2) searches each new kernel once.
#include <gtest/gtest.h>

#include <vkgrad/vkgrad.hpp>

#include "engine/beam.hpp"
#include "engine/internal.hpp"
#include "harness.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::testing {
namespace {

struct Kernel {
  UOp ast;
  std::vector<size_t> bytes;
};
// The only kernel of `t`'s schedule and its buffers' sizes.
Kernel kernel_of(const Tensor& t) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  const Schedule s = build_schedule(g.key);
  EXPECT_EQ(s.kernels.size(), 1u);
  Kernel k{s.kernels.at(0).ast, {}};
  for (int b : s.kernels.at(0).buffers) {
    const ScheduleBuffer& sb = s.buffers.at(static_cast<size_t>(b));
    k.bytes.push_back(static_cast<size_t>(sb.count) * static_cast<size_t>(sb.dtype.itemsize()));
  }
  return k;
}

class BeamTest : public DeviceTest {};
VKGRAD_ALL_DEVICES(BeamTest);

TEST_P(BeamTest, FindsAListNoSlowerThanTheHeuristics) {
  const Tensor a = Tensor::empty({16, 24}, dtypes::float32, dev());
  const Tensor b = Tensor::empty({24, 16}, dtypes::float32, dev());
  const Kernel k = kernel_of(a.matmul(b));
  Runtime& rt = engine::runtime_of(dev());
  const engine::BeamResult r = engine::beam_search(rt, k.ast, k.bytes, 2);
  EXPECT_TRUE(r.searched);
  EXPECT_GT(r.tried, 10);
  EXPECT_LE(r.seconds, r.heuristic_seconds);
  // The winner renders and compiles (its output was compared with the heuristics' kernel).
  EXPECT_NO_THROW(rt.compile(rt.render(k.ast, {.opts = r.opts})));
}

TEST_P(BeamTest, ACandidateWithAWrongOutputIsNeverChosen) {
  const Kernel k = kernel_of(Tensor::empty({8, 64}, dtypes::float32, dev()).sum(1));
  Runtime& rt = engine::runtime_of(dev());
  int corrupted = 0;
  engine::set_beam_output_hook([&](const std::vector<Opt>&, std::vector<uint8_t>& out) {
    out[3] ^= 0x40;  // every candidate's first value is wrong (its exponent)
    ++corrupted;
  });
  const engine::BeamResult r = engine::beam_search(rt, k.ast, k.bytes, 2);
  engine::set_beam_output_hook(nullptr);
  EXPECT_GT(corrupted, 0);
  EXPECT_EQ(r.opts, r.heuristic);  // only the heuristics' own kernel is left
  EXPECT_EQ(r.dropped, r.tried);
}

TEST_P(BeamTest, KernelsWithVariablesKeepTheHeuristics) {
  const Tensor x = Tensor::zeros({5}, dtypes::float32, dev()).symbolic(0, Variable("bt_n", 1, 64));
  const Kernel k = kernel_of(x * 2.0);
  const engine::BeamResult r = engine::beam_search(engine::runtime_of(dev()), k.ast, k.bytes, 2);
  EXPECT_FALSE(r.searched);
}

// Run with BEAM=2 (ctest tensor_beam): every new kernel is searched once, and its result is right.
class BeamEnv : public DeviceTest {};
VKGRAD_ALL_DEVICES(BeamEnv);

TEST_P(BeamEnv, EachNewKernelIsSearchedOnce) {
  ASSERT_EQ(engine::beam_width(), 2) << "run with BEAM=2";
  const std::vector<double> av = random_values(12 * 20, -1, 1, 7),
                            bv = random_values(20 * 9, -1, 1, 8);
  const Tensor a = make_tensor(av, {12, 20}, dtypes::float32, dev());
  const Tensor b = make_tensor(bv, {20, 9}, dtypes::float32, dev());
  reset_runtime_stats();
  const std::vector<double> got = values_of(a.matmul(b));
  EXPECT_GE(runtime_stats().beam_searches, 1);
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 9; ++j) {
      double want = 0;
      for (int k = 0; k < 20; ++k) want += av[i * 20 + k] * bv[k * 9 + j];
      EXPECT_NEAR(got[static_cast<size_t>(i * 9 + j)], want, 1e-4);
    }
  const int64_t searches = runtime_stats().beam_searches;
  (void)values_of(make_tensor(av, {12, 20}, dtypes::float32, dev()).matmul(b));
  EXPECT_EQ(runtime_stats().beam_searches, searches);  // the same kernel: compiled already
}

}  // namespace
}  // namespace vkgrad::testing
