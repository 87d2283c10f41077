// engine: recording and replaying realizes for the Jit (see jit.hpp).
#include "engine/jit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace vkgrad::engine {

Recording::Recording() : previous_(set_run_recorder(&runs_)) {}
Recording::~Recording() { set_run_recorder(previous_); }

CapturedGraph::CapturedGraph(std::vector<RecordedRun> runs) : runs_(std::move(runs)) {
  Runtime* runtime = nullptr;
  for (const RecordedRun& r : runs_) {
    if (runtime && r.runtime != runtime)
      throw DeviceError(fmt::format(
          "Jit: the function ran kernels on {} and {}; one capture replays on one device",
          runtime->name(), r.runtime->name()));
    runtime = r.runtime;
    launches_.insert(launches_.end(), r.launches.begin(), r.launches.end());
    var_names_.insert(var_names_.end(), r.var_names.begin(), r.var_names.end());
    if (std::find(locks_.begin(), locks_.end(), r.run_mu) == locks_.end())
      locks_.push_back(r.run_mu);
  }
  // One fixed order, so two replays (or a replay and a realize) never wait on each other.
  std::sort(locks_.begin(), locks_.end());
  if (runtime) graph_ = runtime->capture(launches_);
}

void CapturedGraph::replay(const std::unordered_map<void*, void*>& substitute,
                           const lazy::VarValues& vars) {
  if (!graph_) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<KernelLaunch> launches = launches_;
  if (!substitute.empty())
    for (KernelLaunch& l : launches)
      for (void*& h : l.buffers)
        if (auto it = substitute.find(h); it != substitute.end()) h = it->second;
  if (!vars.empty())
    for (size_t k = 0; k < launches.size(); ++k)
      for (size_t v = 0; v < var_names_[k].size(); ++v)
        if (auto it = vars.find(var_names_[k][v]); it != vars.end())
          launches[k].vars[v] = it->second;
  // The arenas of the recorded schedules hold this graph's intermediates.
  std::vector<std::unique_lock<std::mutex>> held;
  held.reserve(locks_.size());
  for (std::mutex* m : locks_) held.emplace_back(*m);
  const bool recorded = graph_->replay(launches);
  held.clear();
  count_graph_replay(
      static_cast<int64_t>(launches.size()),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
      recorded);
}

}  // namespace vkgrad::engine
