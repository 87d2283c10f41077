// bench: one training step of a 784-512-512-10 MLP (batch 256, ReLU, cross entropy, Adam) —
// forward, backward and the optimizer update — plainly and under vkgrad::Jit. Reports ms per
// step, kernels per step, the Jit's framework time per kernel and the process's peak RSS, and
// checks that the loss falls.
#include <fmt/format.h>
#include <sys/resource.h>

#include <cmath>
#include <vkgrad/jit.hpp>
#include <vkgrad/nn.hpp>

#include "bench/harness.hpp"

namespace vkgrad::bench {
namespace {

constexpr int64_t kBatch = 256, kIn = 784, kHidden = 512, kClasses = 10;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

struct Mlp {
  nn::Linear l1{kIn, kHidden}, l2{kHidden, kHidden}, l3{kHidden, kClasses};
  Tensor operator()(const Tensor& x) const { return l3(l2(l1(x).relu()).relu()); }
  std::vector<Tensor> parameters() const { return nn::state::get_parameters(l1, l2, l3); }
};

// What a Jit replay costs per kernel when the kernels themselves cost nothing: a jitted chain of
// 64 dependent one-element kernels (each realized on its own), timed over many replays.
double jit_replay_us_per_kernel(const std::string& device) {
  constexpr int kKernels = 64, kReplays = 200;
  Jit chain([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor y = in[0];
    for (int i = 0; i < kKernels; ++i) y = (y + 1.0).realize();
    return {y};
  });
  const Tensor x = Tensor::from_vector<float>({0.0f}, {1}, std::nullopt, device).realize();
  for (int i = 0; i < 3; ++i) chain({x});  // plain run, capture, first replay
  std::vector<double> us;
  for (int r = 0; r < kReplays; ++r) {
    const auto t0 = Clock::now();
    chain({x});
    us.push_back(ms_since(t0) * 1e3 / kKernels);
  }
  if (chain({x})[0].item<float>() != static_cast<float>(kKernels)) return -1;  // wrong result
  return median(us);
}

}  // namespace

Row mlp_step_case(Suite& s, bool jit) {
  Row row = s.row(jit ? "mlp_step_jit" : "mlp_step_nojit", "ms");
  Tensor::manual_seed(7);
  Mlp model;
  for (Tensor& p : model.parameters()) p.assign(p.to(s.device).realize());
  nn::optim::Adam opt(model.parameters(), 1e-3);
  // A fixed batch: the loss must fall as the step repeats.
  Rng rng(99);
  std::vector<float> hx(static_cast<size_t>(kBatch * kIn));
  for (float& v : hx) v = rng.uniform(0, 1);
  std::vector<int32_t> hy(static_cast<size_t>(kBatch));
  for (int32_t& v : hy) v = static_cast<int32_t>(rng.next() % kClasses);
  const Tensor x = Tensor::from_vector<float>(hx, {kBatch, kIn}, std::nullopt, s.device).realize();
  const Tensor y = Tensor::from_vector<int32_t>(hy, {kBatch}, std::nullopt, s.device).realize();

  const auto step = training_step([&](const Tensor& in) { return model(in); }, opt);
  Jit jitted(step);
  auto once = [&] { return jit ? jitted({x, y})[0] : step({x, y})[0]; };

  const float first = once().item<float>();
  once();  // the Jit's capture
  const RuntimeStats before = runtime_stats();
  Tensor loss;
  std::vector<Sample> runs = measure([&] { return time_host([&] { loss = once(); }); });
  const RuntimeStats after = runtime_stats();
  set_ours(row, runs, 0);
  const float last = loss.item<float>();

  const double steps = static_cast<double>(runs.size() + 1);  // measure() adds a warm-up
  const double kernels = static_cast<double>(after.kernels_run - before.kernels_run) / steps;
  row.details.push_back(fmt::format(
      "{:.0f} kernels per step; schedules built during the timed steps: {}, programs compiled: "
      "{}; peak RSS {:.0f} MiB",
      kernels, after.schedules_built - before.schedules_built,
      after.programs_compiled - before.programs_compiled, peak_rss_mib()));
  if (jit) {
    const double replays = static_cast<double>(after.graph_replays - before.graph_replays);
    const double per_kernel = jit_replay_us_per_kernel(s.device);
    row.details.push_back(fmt::format(
        "{:.0f} of {:.0f} steps replayed; a replay costs {:.2f} us per kernel beyond the kernels "
        "(64 one-element kernels, median of 200 replays)",
        replays, steps, per_kernel));
    if (replays < steps) row.fail("some timed steps were not replays");
    if (per_kernel < 0) row.fail("the replayed chain gave a wrong result");
  }
  row.details.push_back(fmt::format("loss {:.4f} at the first step, {:.4f} after {:.0f} more",
                                    first, last, steps + 1));
  if (!(std::isfinite(last) && last < first)) row.fail("the loss did not fall");
  return row;
}

}  // namespace vkgrad::bench
