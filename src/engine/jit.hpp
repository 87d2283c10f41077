// engine: the engine's half of vkgrad::Jit — recording the realizes a call runs and replaying
// them as one runtime Graph, with some buffers swapped, without scheduling or compiling.
// src/tensor/jit.cpp holds the Tensor half (inputs, outputs, assigned state).
// Depends on realize.hpp and the Runtime interface; knows nothing of Tensor.
#pragma once

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/realize.hpp"
#include "sched/lazy.hpp"

namespace vkgrad::engine {

// Records every realize this thread runs while it is alive (the previous recorder, if any, is
// put back afterwards).
class Recording {
 public:
  Recording();
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  std::vector<RecordedRun> take() { return std::move(runs_); }

 private:
  std::vector<RecordedRun> runs_;
  std::vector<RecordedRun>* previous_ = nullptr;
};

// The launches of the recorded runs, in order, captured as one Graph of their runtime.
//
// Launches whose every read is a buffer the capture never writes and that does not vary between
// calls (a weight, a constant; not an input or carried state, named by `varying`), or a result
// of another such launch, and that write an arena slot (an intermediate), form the prelude:
// work that depends only on parameters (a batch norm's scale, a weight's re-layout).
// Their results move from the arena to buffers of the capture's own, and a replay runs the
// prelude only when what it read may have changed: on the first replay, when a buffer it reads
// was substituted by another (the tensor holding it was assigned), or when any replay (of any
// capture) wrote a buffer it read.
class CapturedGraph {
 public:
  // DeviceError when the runs used several devices.
  CapturedGraph(std::vector<RecordedRun> runs, const std::unordered_set<void*>& varying);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  const std::vector<RecordedRun>& runs() const { return runs_; }
  // Launches in the prelude.
  size_t hoisted() const { return prelude_.size(); }
  // Runs every launch again (the prelude when it is stale), each buffer handle h replaced by
  // substitute[h] where present. `vars`: the values of the variables the captured kernels read
  // (those not given keep their captured values).
  void replay(const std::unordered_map<void*, void*>& substitute, const lazy::VarValues& vars);

 private:
  std::vector<RecordedRun> runs_;
  Runtime* runtime_ = nullptr;
  std::vector<KernelLaunch> prelude_;                // the captured handles, results moved
  std::vector<KernelLaunch> launches_;               // the rest
  std::vector<std::vector<std::string>> var_names_;  // per launch of launches_: its variables
  std::vector<void*> results_;                       // the prelude's own buffers
  std::vector<void*> prelude_reads_;  // what the prelude read when it last ran (registered)
  bool prelude_ran_ = false;
  uint64_t prelude_epoch_ = 0;      // the write epoch its reads were current at
  std::vector<std::mutex*> locks_;  // the runs' arena locks, distinct, in address order
  std::unique_ptr<Graph> prelude_graph_, graph_;  // null when empty
};

}  // namespace vkgrad::engine
