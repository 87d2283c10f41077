// bench: random inputs, the timing loop, medians and how a row gets its values (harness.hpp).
#include "bench/harness.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkgrad::bench {

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

Sample time_host(const std::function<void()>& fn) {
  Clock::time_point t0 = Clock::now();
  fn();
  return Sample{ms_since(t0), 0, {}};
}

RuntimeStats operator-(const RuntimeStats& a, const RuntimeStats& b) {
  RuntimeStats d;
  d.realizes = a.realizes - b.realizes;
  d.schedules_built = a.schedules_built - b.schedules_built;
  d.schedule_cache_hits = a.schedule_cache_hits - b.schedule_cache_hits;
  d.kernels_rendered = a.kernels_rendered - b.kernels_rendered;
  d.programs_compiled = a.programs_compiled - b.programs_compiled;
  d.kernels_run = a.kernels_run - b.kernels_run;
  d.buffers_allocated = a.buffers_allocated - b.buffers_allocated;
  d.schedule_ms = a.schedule_ms - b.schedule_ms;
  d.codegen_ms = a.codegen_ms - b.codegen_ms;
  d.compile_ms = a.compile_ms - b.compile_ms;
  d.run_ms = a.run_ms - b.run_ms;
  return d;
}

Sample time_with_stats(const std::function<void()>& fn) {
  const RuntimeStats before = runtime_stats();
  Sample s = time_host(fn);
  s.stats = runtime_stats() - before;
  return s;
}

std::function<std::vector<Tensor>(const std::vector<Tensor>&)> training_step(
    std::function<Tensor(const Tensor&)> forward, nn::optim::Optimizer& opt) {
  return [forward = std::move(forward), &opt](const std::vector<Tensor>& in) {
    Tensor loss = forward(in[0]).cross_entropy(in[1]);
    opt.zero_grad();
    loss.backward();
    std::vector<Tensor> out{loss};
    opt.step(out);
    return out;
  };
}

// Times building a result and realizing it. The result goes to `keep`, which frees the previous
// one after the clock stopped.
Sample time_realize(const std::function<Tensor()>& build, Tensor& keep) {
  RuntimeStats before = runtime_stats();
  Clock::time_point t0 = Clock::now();
  Tensor result = build();
  double build_ms = ms_since(t0);
  result.realize();
  Sample s{ms_since(t0), build_ms, runtime_stats() - before};
  keep = std::move(result);
  return s;
}

std::vector<Sample> measure(const std::function<Sample()>& once) {
  once();
  std::vector<Sample> runs;
  double timed = 0;
  Clock::time_point start = Clock::now();
  for (;;) {
    Clock::time_point t0 = Clock::now();
    runs.push_back(once());
    double last_wall = ms_since(t0);
    timed += runs.back().ms;
    bool wanted = runs.size() < kMinRuns || timed < kTargetMs;
    bool fits = ms_since(start) + last_wall <= kMaxWallMs;
    if (!wanted || !fits || runs.size() >= kMaxRuns) break;
  }
  return runs;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double median_of(const std::vector<Sample>& runs, const std::function<double(const Sample&)>& f) {
  std::vector<double> v;
  v.reserve(runs.size());
  for (const Sample& s : runs) v.push_back(f(s));
  return median(v);
}

double median_ms(const std::vector<Sample>& runs) {
  return median_of(runs, [](const Sample& s) { return s.ms; });
}
double median_run_ms(const std::vector<Sample>& runs) {
  return median_of(runs, [](const Sample& s) { return s.stats.run_ms; });
}

void set_ours(Row& row, const std::vector<Sample>& runs, double work) {
  double ms = median_ms(runs), run_ms = median_run_ms(runs);
  row.runs = static_cast<int>(runs.size());
  if (work > 0) {
    row.result.value = work / (ms / 1e3);
    if (run_ms > 0) row.kernel_value = work / (run_ms / 1e3);
  } else {
    row.result.value = ms;
    if (run_ms > 0) row.kernel_value = run_ms;
  }
}

void set_reference(Row& row, const std::string& name, const std::vector<Sample>& runs,
                   double work) {
  double ms = median_ms(runs);
  if (work <= 0) return set_reference_time(row, name, ms);
  double value = work / (ms / 1e3);
  row.result.reference = Reference{name, value};
  if (row.result.value) row.result.ratio = *row.result.value / value;
}

void set_reference_time(Row& row, const std::string& name, double value) {
  row.result.reference = Reference{name, value};
  if (row.result.value && *row.result.value > 0) row.result.ratio = value / *row.result.value;
}

std::string phase_line(const std::vector<Sample>& runs) {
  auto med = [&](const std::function<double(const Sample&)>& f) { return median_of(runs, f); };
  double build = med([](const Sample& s) { return s.build_ms; });
  double sched = med([](const Sample& s) { return s.stats.schedule_ms; });
  double codegen = med([](const Sample& s) { return s.stats.codegen_ms; });
  double compile = med([](const Sample& s) { return s.stats.compile_ms; });
  double run = med([](const Sample& s) { return s.stats.run_ms; });
  double other = med([](const Sample& s) {
    return s.ms - s.build_ms - s.stats.schedule_ms - s.stats.codegen_ms - s.stats.compile_ms -
           s.stats.run_ms;
  });
  return fmt::format(
      "phases (median ms): build {:.3g} | schedule {:.3g} | codegen {:.3g} | "
      "compile {:.3g} | run {:.3g} | other {:.3g}",
      build, sched, codegen, compile, run, other);
}

}  // namespace vkgrad::bench
