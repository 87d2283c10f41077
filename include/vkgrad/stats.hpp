// Public: counters and phase timings of the runtime, for benchmarks and tests (the schedule
// cache, compiles, kernels run). Process-wide; reset_runtime_stats() zeroes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  int64_t graph_rerecords = 0;      // of those, replays that recorded their commands again
                                    // (Vulkan: new buffers on a device without update-after-bind
                                    // descriptors, new barriers, new variable values)
  int64_t beam_searches = 0;        // kernels whose Opt list a BEAM search chose
  int64_t beam_cache_hits = 0;      // kernels whose Opt list came from the BEAM cache
  double schedule_ms = 0;           // time spent scheduling (incl. cache lookups)
  double codegen_ms = 0;            // lowering, optimizing, rendering
  double compile_ms = 0;            // compiler + loading programs
  double run_ms = 0;                // launching and waiting for kernels and copies
  int64_t validation_messages = 0;  // Khronos validation layer reports (VKGRAD_VALIDATION=1)
  int64_t live_nodes = 0;           // graph nodes (UOps) alive now, in all threads (not reset)
  // Bytes of tensor buffers (weights, inputs, results; not schedules' scratch arenas) alive on
  // every device now (not reset), and the most alive at once since the last reset.
  int64_t device_bytes = 0;
  int64_t peak_device_bytes = 0;
};

RuntimeStats runtime_stats();
// Zeroes the counters and the kernel times below.
void reset_runtime_stats();

// Device time per compiled kernel, summed over the realizes that ran it while kernel timing was
// on (Vulkan: timestamp queries; CPU: wall time of each launch). Jit replays run untimed. DEBUG>=1
// times every realize too.
struct KernelTime {
  std::string name;    // the kernel's name, as Tensor::schedule() and DEBUG output give it
  std::string device;  // "CPU", "VULKAN:0"
  int64_t runs = 0;    // launches timed
  double ms = 0;       // their total device time
  double gflop = 0;    // their estimated work: floating-point and integer ops, in 1e9
  double gbyte = 0;    // their estimated memory traffic (each buffer once per launch), in 1e9
};
void set_kernel_timing(bool on);
bool kernel_timing();
// Every kernel timed since the last reset, slowest (most total time) first.
std::vector<KernelTime> kernel_times();

}  // namespace vkgrad
