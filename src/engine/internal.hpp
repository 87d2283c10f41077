// engine: what the engine's files share and nothing outside src/engine includes — the debug
// switches, the open devices, buffer storage, the schedule and kernel caches, the counters
// (realize.hpp is the engine's interface). Names no backend: devices open through the registry.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <vkgrad/stats.hpp>

#include "engine/realize.hpp"
#include "runtime/device.hpp"
#include "sched/schedule.hpp"

namespace vkgrad::engine {

// ---- switches, clock and counters (realize.cpp) ------------------------------------------------
using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
bool noopt();  // NOOPT=1, read once (DEBUG: ir/debug.hpp)

extern std::mutex g_stats_mu;
extern RuntimeStats g_stats;  // under g_stats_mu

// ---- devices (devices.cpp, backends.cpp) --------------------------------------------------------
// Registers every backend this build has, once; called before the registry is read.
void register_backends();
// The runtime of an upper-case device name, opened on first use and kept until the process ends.
// DeviceError naming the device when it does not open.
Runtime& runtime_of(const std::string& device);
// The validation messages every backend has reported so far.
int64_t validation_messages();

// ---- storage (storage.cpp) ----------------------------------------------------------------------
struct Storage {
  Runtime* runtime = nullptr;
  void* handle = nullptr;
  size_t bytes = 0;
};
// A BUFFER node with fresh storage on `device`, freed when the node dies.
UOp new_buffer(DType dtype, int64_t count, const std::string& device);
// InternalError for a BUFFER without storage.
Storage storage_of(const UOp& buffer);

// ---- schedule and kernel caches, kernel times (kernel_cache.cpp) -------------------------------
struct CachedSchedule {
  UOp key;  // keeps the normalized graph (and so the cache key) alive
  Schedule schedule;
  std::vector<std::shared_ptr<CompiledKernel>> kernels;
  // Per kernel: the variables its compiled program reads (Program::vars), whose values each
  // launch passes in that order (codegen may simplify a variable of the AST away).
  std::vector<std::vector<std::string>> var_names;
  std::vector<Estimates> estimates;  // per kernel (DEBUG=2, kernel_times())
  std::vector<void*> arena;          // per arena slot, allocated once and reused by every run
  Runtime* runtime = nullptr;
  std::mutex run_mu;  // one run at a time uses the arena
  ~CachedSchedule() {
    for (void* h : arena)
      if (runtime) runtime->free(h);
  }
};

// The cached schedule of a normalized graph on `device`; on a miss, schedules it and renders and
// compiles every kernel not compiled for that device yet.
std::shared_ptr<CachedSchedule> lookup_or_build(const NormalizedGraph& g,
                                                const std::string& device);
// Adds one realize's kernel times to the totals and, at DEBUG>=2, prints them as a table.
void record_times(const CachedSchedule& cs, const std::string& device,
                  const std::vector<double>& seconds);
void clear_kernel_times();
// Empties the schedule and compiled-kernel caches (vkgrad::Beam: kernels compiled under other
// BEAM settings are compiled again).
void clear_compiled_kernels();

}  // namespace vkgrad::engine
