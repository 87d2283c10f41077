// engine: timing BEAM candidates — compiling them, running them on scratch buffers of random
// inputs, checking their output against the heuristics' kernel's — and what the search
// (beam.cpp) and the schedule's choice (beam_schedule.cpp) share; internal to the beam_*.cpp
// files (see beam.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "codegen/opt.hpp"
#include "runtime/device.hpp"

namespace vkgrad::engine::beam_detail {

// The gain another list than the heuristics' must show: the search's winner stands only when it
// is this much faster in the final paired look (beam.cpp), and the schedule chooses another
// variant only when it is this much faster there (beam_schedule.cpp).
constexpr double kMinGain = 0.02;

double seconds_since(std::chrono::steady_clock::time_point start);

// The middle value (the upper one of an even count); infinity for none.
double median(std::vector<double> v);

// One search's candidates, timed on scratch buffers of the kernel's sizes (the inputs random),
// against the heuristics' kernel (the reference).
class Search {
 public:
  Search(Runtime& rt, const UOp& ast, std::span<const size_t> slot_bytes);
  ~Search() { release(); }
  int slow() const { return slow_; }
  // Wall time in candidates' first runs with their output's check (Search::measure), and in
  // timing runs: the candidates', the heuristics' kernel's between them, the warm-ups.
  double check_seconds() const { return check_seconds_; }
  double timing_seconds() const { return timing_seconds_; }
  const std::shared_ptr<CompiledKernel>& reference_kernel() const { return reference_kernel_; }
  Search(const Search&) = delete;
  Search& operator=(const Search&) = delete;

  // The heuristics' kernel, its first timing and its output, the reference; returns its list.
  std::vector<Opt> reference();

  // The heuristics' kernel timed now; the fastest of its timings so far is `reference_best`.
  double time_reference();
  double reference_best() const { return reference_best_; }
  // Seconds since the heuristics' kernel was last timed.
  double reference_age() const { return seconds_since(reference_at_); }

  // Each kernel's time relative to the heuristics' kernel timed just before and just after it
  // (the faster of the two), the kernels timed in turn with the heuristics' between them.
  std::vector<double> relative_times(std::span<const CompiledKernel* const> kernels);

  // Each list's kernel, compiled on as many threads as the machine has (the runtimes compile
  // concurrently); null where the list does not apply or does not compile, or renders the same
  // source as an earlier list (GEMM(1, 0) where the plan packs A anyway): timing one kernel
  // twice would only let noise pick between them.
  std::vector<std::shared_ptr<CompiledKernel>> build(const std::vector<std::vector<Opt>>& lists);

  // The reference kernel, back to back, for Runtime::warm_up_seconds (after a stretch of
  // compiling, before timing).
  void warm_up();
  // The kernel's time, or nothing when it is dropped (another output, or too slow). The output
  // is checked after the first run, before any limit applies: every candidate that runs is
  // compared with the heuristics' kernel. The first run is not timed: it pays for the kernel's
  // first use (lavapipe compiles a pipeline's code at its first dispatch: 20-130 ms for
  // ResNet-50's kernels), and the limit judged candidates by it (every candidate of a 4096-element
  // multiply was dropped on the CPU, most on lavapipe; a convolution's by how long its code took
  // to compile).
  std::optional<double> measure(const CompiledKernel& k, const std::vector<Opt>& opts,
                                double limit);

 private:
  // The minimum of a run alone (it pays for cold caches and a device waking up) and kRuns runs
  // back to back in one submission (a GPU left idle while candidates compile clocks down, and a
  // lone dispatch then times several times slower than in a forward); nothing when the minimum
  // exceeds `limit` (0: no limit) and kEarlyDrop, or already when the run alone exceeds twice
  // `limit` and kEarlyDrop: timing a kernel that short to the end costs nothing, and a lone
  // dispatch of a few microseconds on a loaded machine (lavapipe's threads descheduled) can take
  // ten times that.
  std::optional<double> time(const CompiledKernel& k, double limit);
  double run_alone(const CompiledKernel& k);
  std::vector<uint8_t> output();
  void release() noexcept;

  Runtime& rt_;
  UOp ast_;
  std::vector<size_t> bytes_;
  std::vector<void*> bufs_;
  DType out_dtype_;
  std::vector<uint8_t> reference_;
  std::shared_ptr<CompiledKernel> reference_kernel_;
  double reference_best_ = std::numeric_limits<double>::infinity();
  std::chrono::steady_clock::time_point reference_at_;
  double check_seconds_ = 0, timing_seconds_ = 0;
  int slow_ = 0;                   // candidates dropped by the time limit
  std::set<std::string> sources_;  // every kernel rendered so far
};

}  // namespace vkgrad::engine::beam_detail
