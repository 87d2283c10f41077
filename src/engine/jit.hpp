// engine: the engine's half of vkgrad::Jit — recording the realizes a call runs and replaying
// them as one runtime Graph, with some buffers swapped, without scheduling or compiling.
// src/tensor/jit.cpp holds the Tensor half (inputs, outputs, assigned state).
// Depends on realize.hpp and the Runtime interface; knows nothing of Tensor.
#pragma once

#include <memory>
#include <unordered_map>
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
class CapturedGraph {
 public:
  // DeviceError when the runs used several devices.
  explicit CapturedGraph(std::vector<RecordedRun> runs);
  const std::vector<RecordedRun>& runs() const { return runs_; }
  // Runs every launch again, each buffer handle h replaced by substitute[h] where present.
  // `vars`: the values of the variables the captured kernels read (those not given keep their
  // captured values).
  void replay(const std::unordered_map<void*, void*>& substitute, const lazy::VarValues& vars);

 private:
  std::vector<RecordedRun> runs_;
  std::vector<KernelLaunch> launches_;               // the captured handles
  std::vector<std::vector<std::string>> var_names_;  // per launch: its variables
  std::vector<std::mutex*> locks_;  // the runs' arena locks, distinct, in address order
  std::unique_ptr<Graph> graph_;    // null when nothing ran
};

}  // namespace vkgrad::engine
