// tools/cli: `vkgrad tune` and its report (see tune.hpp).
#include "cli/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vkgrad/vkgrad.hpp>

#include "bench/suite.hpp"
#include "cli/options.hpp"
#include "engine/beam.hpp"
#include "engine/beam_cache.hpp"

namespace vkgrad {
namespace {

// tune's summary counts the kernels among this many slowest (by default time) that gained.
constexpr size_t kSlowestKernels = 10;

}  // namespace

// The cases run once with BEAM on, every kernel not in the BEAM cache searched (a line of
// progress each), then a table of the kernels searched.
int tune_command(const std::vector<std::string_view>& args) {
  CliOptions options;
  if (std::optional<int> status = parse_options("tune", args, options)) return *status;
  if (!options.import_path.empty()) {
    const engine::BeamImport in = engine::beam_cache_import(options.import_path);
    fmt::print("imported {} Opt lists from {} into the BEAM cache{}\n", in.imported,
               options.import_path,
               in.other_version > 0
                   ? fmt::format(" ({} of another library version skipped)", in.other_version)
                   : "");
  }
  auto export_table = [&] {
    if (options.export_path.empty()) return;
    const size_t n = engine::beam_cache_export(options.export_path);
    fmt::print("exported {} Opt lists from the BEAM cache to {}\n", n, options.export_path);
  };
  if (options.bench.only.empty()) {
    if (options.import_path.empty() && options.export_path.empty())
      return usage_error("tune: name the cases with --only (or --import, --export a table)");
    export_table();
    return 0;
  }
  const int width = options.beam > 0 ? options.beam : 2;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<bench::CaseResult> results;
  bool budget_spent = false;
  {
    Beam beam({.width = width, .progress = true, .seconds = options.seconds});
    results = bench::run_suite(options.bench);
    budget_spent = engine::beam_budget_spent();
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<TunedKernel> tuned = tuned_kernels();
  // Times per launch among the model's other kernels (where the choice was made; the search's
  // own, alone, for a kernel that did not run there), and the search's speed-up beside.
  fmt::print("\n{:<36} {:>11} {:>11} {:>9} {:>8} {:>6} {:>8}  {}\n", "kernel", "default ms",
             "tuned ms", "speed-up", "search", "tried", "time", "Opt list");
  // A kernel's default and tuned time per launch.
  auto times = [](const TunedKernel& k) {
    const bool in_model = k.schedule_seconds > 0;
    return std::pair{in_model ? k.schedule_heuristic_seconds : k.heuristic_seconds,
                     in_model ? k.schedule_seconds : k.seconds};
  };
  double before = 0, after = 0;
  for (const TunedKernel& k : tuned) {
    const auto [d, t] = times(k);
    before += d;
    after += t;
    fmt::print("{:<36} {:>11.4f} {:>11.4f} {:>8.2f}x {:>7.2f}x {:>6} {:>7.1f}s  {}\n", k.name,
               d * 1e3, t * 1e3, t > 0 ? d / t : 1.0,
               k.seconds > 0 ? k.heuristic_seconds / k.seconds : 1.0, k.tried, k.search_seconds,
               k.opts);
  }
  fmt::print(
      "{} kernels searched (BEAM={}) in {:.1f} s; their device time per launch, in the model: "
      "{:.3f} -> {:.3f} ms\n",
      tuned.size(), width, total, before * 1e3, after * 1e3);
  if (budget_spent)
    fmt::print(
        "the search budget of {:g} s ran out: a search under way then ended after its round, and "
        "kernels met later kept their cached lists or the heuristics'\n",
        options.seconds);
  // Where the heuristics already sit near what the search finds, what it does for the slowest
  // kernels, and whether any kernel came out slower.
  std::vector<const TunedKernel*> slowest;
  for (const TunedKernel& k : tuned) slowest.push_back(&k);
  std::sort(slowest.begin(), slowest.end(), [&](const TunedKernel* a, const TunedKernel* b) {
    return times(*a).first > times(*b).first;
  });
  slowest.resize(std::min<size_t>(slowest.size(), kSlowestKernels));
  auto beyond_noise = [](double slow, double fast) { return slow > fast * 1.02; };
  const auto faster = std::count_if(slowest.begin(), slowest.end(), [&](const TunedKernel* k) {
    return beyond_noise(times(*k).first, times(*k).second);
  });
  const auto slower = std::count_if(tuned.begin(), tuned.end(), [&](const TunedKernel& k) {
    return beyond_noise(times(k).second, times(k).first);
  });
  fmt::print(
      "of the {} slowest kernels by default time, {} run at least 2% faster tuned; {} of the {} "
      "kernels run more than 2% slower\n",
      slowest.size(), faster, slower, tuned.size());
  export_table();
  return std::all_of(results.begin(), results.end(),
                     [](const bench::CaseResult& r) { return r.ok; })
             ? 0
             : 1;
}

}  // namespace vkgrad
