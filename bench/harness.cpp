// bench: random inputs, the timing loop, medians and how a row gets its values (harness.hpp).
#include "bench/harness.hpp"

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

}  // namespace vkgrad::bench
