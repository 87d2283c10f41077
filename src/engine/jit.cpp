// engine: recording and replaying realizes for the Jit (see jit.hpp).
#include "engine/jit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "ir/debug.hpp"

namespace vkgrad::engine {
namespace {

// The buffers the preludes of all live captures read, and an epoch that moves whenever a replay
// writes one of them (another Jit's optimizer step updating the weights a forward reads).
class PreludeReads {
 public:
  static PreludeReads& get() {
    static PreludeReads* r = new PreludeReads();  // captures may die during static destruction
    return *r;
  }
  uint64_t epoch() const { return epoch_.load(); }
  void swap(const std::vector<void*>& old_reads, const std::vector<void*>& new_reads) {
    std::lock_guard lock(mu_);
    for (void* h : old_reads)
      if (auto it = count_.find(h); it != count_.end() && --it->second == 0) count_.erase(it);
    for (void* h : new_reads) ++count_[h];
    any_ = !count_.empty();
  }
  void wrote(const std::vector<void*>& handles) {
    if (!any_) return;
    std::lock_guard lock(mu_);
    if (std::any_of(handles.begin(), handles.end(), [&](void* h) { return count_.count(h); }))
      ++epoch_;
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, int> count_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> any_{false};
};

// `launches` with every handle h replaced by substitute[h] where present.
std::vector<KernelLaunch> substituted(const std::vector<KernelLaunch>& launches,
                                      const std::unordered_map<void*, void*>& substitute) {
  std::vector<KernelLaunch> out = launches;
  if (!substitute.empty())
    for (KernelLaunch& l : out)
      for (void*& h : l.buffers)
        if (auto it = substitute.find(h); it != substitute.end()) h = it->second;
  return out;
}

}  // namespace

Recording::Recording() : previous_(set_run_recorder(&runs_)) {}
Recording::~Recording() { set_run_recorder(previous_); }

CapturedGraph::CapturedGraph(std::vector<RecordedRun> runs,
                             const std::unordered_set<void*>& varying)
    : runs_(std::move(runs)) {
  std::vector<KernelLaunch> all;
  std::vector<std::vector<std::string>> all_vars;
  std::vector<size_t> arena_bytes;
  for (const RecordedRun& r : runs_) {
    if (runtime_ && r.runtime != runtime_)
      throw DeviceError(fmt::format(
          "Jit: the function ran kernels on {} and {}; one capture replays on one device",
          runtime_->name(), r.runtime->name()));
    runtime_ = r.runtime;
    all.insert(all.end(), r.launches.begin(), r.launches.end());
    all_vars.insert(all_vars.end(), r.var_names.begin(), r.var_names.end());
    arena_bytes.insert(arena_bytes.end(), r.arena_bytes.begin(), r.arena_bytes.end());
    if (std::find(locks_.begin(), locks_.end(), r.run_mu) == locks_.end())
      locks_.push_back(r.run_mu);
  }
  // One fixed order, so two replays (or a replay and a realize) never wait on each other.
  std::sort(locks_.begin(), locks_.end());

  // The prelude: launches over unchanging buffers and earlier prelude results, each writing an
  // arena slot. The memory plan reuses slots, so a slot's value is tracked from one write to the
  // next: the reads after a prelude launch's write, up to the slot's next write, read its own
  // buffer instead.
  std::unordered_set<void*> written;
  for (const KernelLaunch& l : all) written.insert(l.buffers[0]);
  std::unordered_map<void*, void*> current;  // arena handle -> the prelude's buffer holding it
  for (size_t k = 0; k < all.size(); ++k) {
    KernelLaunch& l = all[k];
    bool hoist = l.vars.empty() && arena_bytes[k] > 0;
    for (size_t s = 1; s < l.buffers.size(); ++s) {
      void*& h = l.buffers[s];
      if (auto it = current.find(h); it != current.end()) {
        h = it->second;
      } else {
        hoist = hoist && !written.count(h) && !varying.count(h);
      }
    }
    if (!hoist) {
      current.erase(l.buffers[0]);
      launches_.push_back(std::move(l));
      var_names_.push_back(std::move(all_vars[k]));
      continue;
    }
    results_.push_back(runtime_->alloc(arena_bytes[k]));
    current[l.buffers[0]] = results_.back();
    l.buffers[0] = results_.back();
    prelude_.push_back(std::move(l));
  }
  if (debug_level() >= 2 && !prelude_.empty())
    std::fprintf(stderr, "jit: %zu of %zu kernels read only parameters and constants: run once\n",
                 prelude_.size(), prelude_.size() + launches_.size());
  if (!prelude_.empty()) prelude_graph_ = runtime_->capture(prelude_);
  if (!launches_.empty()) graph_ = runtime_->capture(launches_);
}

CapturedGraph::~CapturedGraph() {
  PreludeReads::get().swap(prelude_reads_, {});
  // The graphs (descriptor sets naming the results) go before the buffers.
  prelude_graph_.reset();
  graph_.reset();
  for (void* h : results_) runtime_->free(h);
}

void CapturedGraph::replay(const std::unordered_map<void*, void*>& substitute,
                           const lazy::VarValues& vars) {
  if (!graph_ && !prelude_graph_) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<KernelLaunch> launches = substituted(launches_, substitute);
  if (!vars.empty())
    for (size_t k = 0; k < launches.size(); ++k)
      for (size_t v = 0; v < var_names_[k].size(); ++v)
        if (auto it = vars.find(var_names_[k][v]); it != vars.end())
          launches[k].vars[v] = it->second;
  std::vector<KernelLaunch> prelude = substituted(prelude_, substitute);
  std::vector<void*> reads;
  for (const KernelLaunch& l : prelude)
    for (size_t s = 1; s < l.buffers.size(); ++s)
      if (std::find(results_.begin(), results_.end(), l.buffers[s]) == results_.end())
        reads.push_back(l.buffers[s]);
  PreludeReads& registry = PreludeReads::get();
  const bool stale = prelude_graph_ && (!prelude_ran_ || reads != prelude_reads_ ||
                                        registry.epoch() != prelude_epoch_);
  if (stale) registry.swap(prelude_reads_, reads);

  // The arenas of the recorded schedules hold this graph's intermediates.
  std::vector<std::unique_lock<std::mutex>> held;
  held.reserve(locks_.size());
  for (std::mutex* m : locks_) held.emplace_back(*m);
  bool recorded = false;
  if (stale) {
    recorded = prelude_graph_->replay(prelude);
    prelude_reads_ = std::move(reads);
    prelude_epoch_ = registry.epoch();
    prelude_ran_ = true;
  }
  if (graph_) recorded = graph_->replay(launches) || recorded;
  held.clear();
  std::vector<void*> written;
  for (const KernelLaunch& l : launches) written.push_back(l.buffers[0]);
  registry.wrote(written);
  count_graph_replay(
      static_cast<int64_t>(launches.size() + (stale ? prelude.size() : 0)),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
      recorded);
}

}  // namespace vkgrad::engine
