// Public: counters and phase timings of the runtime, for benchmarks and tests (the schedule
// cache, compiles, kernels run). Process-wide; reset_runtime_stats() zeroes them.
#pragma once

#include <cstdint>

namespace vkgrad {

struct RuntimeStats {
  int64_t realizes = 0;             // realize() calls that ran a schedule
  int64_t schedules_built = 0;      // schedule cache misses (graph cut into kernels)
  int64_t schedule_cache_hits = 0;  // realizes served by a cached schedule
  int64_t kernels_rendered = 0;     // kernels run through codegen (cache misses)
  int64_t programs_compiled = 0;    // programs actually compiled (not found in any cache)
  int64_t kernels_run = 0;          // kernel launches
  int64_t buffers_allocated = 0;    // device buffers allocated
  int64_t graph_replays = 0;        // Jit calls served by replaying a captured graph
  double schedule_ms = 0;           // time spent scheduling (incl. cache lookups)
  double codegen_ms = 0;            // lowering, optimizing, rendering
  double compile_ms = 0;            // compiler + loading programs
  double run_ms = 0;                // launching and waiting for kernels and copies
  int64_t validation_messages = 0;  // Khronos validation layer reports (VKGRAD_VALIDATION=1)
  int64_t live_nodes = 0;           // graph nodes (UOps) alive now, in all threads (not reset)
};

RuntimeStats runtime_stats();
void reset_runtime_stats();

}  // namespace vkgrad
