// bench: the standard suite behind `vkgrad bench` (its cases, the timing method, the OpenBLAS,
// C-loop and hand-written-shader references, the JSON report) and the host facts `vkgrad info`
// prints. Uses the public vkgrad API, plus the runtime interface for the hand-written shaders;
// OpenBLAS is dlopen'ed at run time (never linked) and nlohmann-json is used here, so both stay
// out of the library. Built into the CLI (tools/cli/CMakeLists.txt).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace vkgrad::bench {

// The host CPU as /proc/cpuinfo describes it.
struct CpuInfo {
  std::string model;                      // "model name", or "unknown"
  int logical = 0;                        // "processor" entries
  int physical = 0;                       // distinct (physical id, core id) pairs; 0 if not given
  bool avx512 = false;                    // avx512f, bw, dq and vl (what OpenBLAS's SkylakeX needs)
  std::vector<std::string> avx512_flags;  // every avx512* flag, as listed
};
CpuInfo read_cpu_info();

// The threads vkgrad's CPU backend runs kernels on: $CPU_THREADS, else every logical CPU (the
// rule of cpu::ThreadPool::default_size(), which is not public).
int cpu_backend_threads();

struct Options {
  std::string device;             // empty: the default device
  std::vector<std::string> only;  // case names to run; empty: all
  bool header = true;             // print the table's header (the machine, the method) first
};

struct Reference {
  std::string name;  // "OpenBLAS sgemm", "C loop"
  double value = 0;  // in the case's unit
};

struct CaseResult {
  std::string name;             // one of case_names()
  std::string device;           // the runtime's name: "CPU", "VULKAN:0"
  std::string unit;             // "GFLOPS", "GB/s", "ms", "us"
  std::optional<double> value;  // absent when the case threw
  std::optional<Reference> reference;
  std::optional<double> ratio;  // ours / reference, higher is better (inverted for ms, us)
  bool ok = false;              // ran, and the result was verified
};

// Every case, in the order the suite runs them.
const std::vector<std::string>& case_names();

// Runs the cases `options` selects, printing the header and one table row per case on stdout
// as it goes. Throws DeviceError when the device does not open. A case that does not apply to
// the device (dispatch cost on CPU) prints a "skipped" row and has no result.
std::vector<CaseResult> run_suite(const Options& options);

// `vkgrad cold-start-child --device D` (the cold_start_ms case runs it): opens the device,
// realizes a small fused computation, reads it back and prints
// "cold-start-result ms=<main_start -> result> bad=<wrong elements>". Returns the exit status.
int cold_start_child(const std::string& device, std::chrono::steady_clock::time_point main_start);

// The results as a JSON list of {"name", "device", "value", "unit", "reference", "ratio", "ok"}.
std::string results_json(const std::vector<CaseResult>& results);

}  // namespace vkgrad::bench
