// bench: what every case of the `vkgrad bench` suite shares — random inputs, the timing loop
// and its medians, a case's table row, the suite's state — and the cases that live outside
// suite.cpp (hand-written shaders, dispatch cost, cold start). Internal to the CLI; uses the
// public API plus the runtime interface (runtime/device.hpp) for the hand-written shaders.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <vkgrad/vkgrad.hpp>

#include "bench/suite.hpp"

namespace vkgrad {
class Runtime;
}

namespace vkgrad::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---- random inputs (splitmix64: fast enough for 16M floats, the same on every run) ----------

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) {  // [lo, hi)
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f;
  }

 private:
  uint64_t state_;
};

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi);

// ---- timing ---------------------------------------------------------------------------------

// One timed run: wall time of what the case times, the part of it spent building the lazy
// graph, and what runtime_stats() counted meanwhile.
struct Sample {
  double ms = 0;
  double build_ms = 0;
  RuntimeStats stats;
};

Sample time_host(const std::function<void()>& fn);
// Times building a result (Sample::build_ms) and realizing it. The result goes to `keep`, which
// frees the previous one after the clock stopped.
Sample time_realize(const std::function<Tensor()>& build, Tensor& keep);
// What runtime_stats() counted between two readings.
RuntimeStats operator-(const RuntimeStats& a, const RuntimeStats& b);
// time_host, with what runtime_stats() counted meanwhile (Sample::stats).
Sample time_with_stats(const std::function<void()>& fn);

constexpr int kMinRuns = 3;
constexpr int kMaxRuns = 1000;
constexpr double kTargetMs = 1000;   // timed runs of one side of a case add up to at least this
constexpr double kMaxWallMs = 2500;  // ...unless one more run would take the side past this

// One warm-up run, then runs until their times add up to kTargetMs (at least kMinRuns), but
// never starting a run that would, by the last run's wall time (untimed setup included), end
// past kMaxWallMs: a side whose runs take over a second gets the warm-up and one or two runs,
// so a case with a reference stays near 5 s even on a slow device.
std::vector<Sample> measure(const std::function<Sample()>& once);

double median(std::vector<double> v);
double median_of(const std::vector<Sample>& runs, const std::function<double(const Sample&)>& f);
double median_ms(const std::vector<Sample>& runs);
double median_run_ms(const std::vector<Sample>& runs);
// "phases (median ms): build .. | schedule .. | codegen .. | compile .. | run .. | other ..".
std::string phase_line(const std::vector<Sample>& runs);

// ---- rows and the suite ---------------------------------------------------------------------

// A case's table row: its result plus what only the table shows.
struct Row {
  CaseResult result;
  std::optional<double> kernel_value;  // the same measure from runtime_stats().run_ms alone
  int runs = 0;
  std::string check = "ok";          // "ok", "FAIL: why", "ERROR", "skipped: why"
  std::vector<std::string> details;  // lines printed under the row
  bool skipped = false;              // not meaningful on this device: no JSON entry

  void fail(const std::string& why) {
    if (check == "ok")
      check = "FAIL: " + why;
    else
      check += "; " + why;
  }
};

struct OpenBlas;  // suite.cpp

struct Suite {
  std::string device;        // as the tensors name it ("CPU", "VULKAN")
  std::string runtime_name;  // the runtime's own name ("CPU", "VULKAN:0"), for the JSON
  std::string label;         // the runtime's name and the device's ("VULKAN:0 llvmpipe (...)")
  Runtime* runtime = nullptr;
  bool gpu = false;  // a Vulkan device: hand-written shaders are the references
  CpuInfo cpu;
  int threads = 0;  // vkgrad's CPU backend
  const OpenBlas* blas = nullptr;
  uint64_t next_structure = 1000;  // chain structures handed out so far in this process
  std::optional<uint64_t> last_cold_structure;

  Row row(const std::string& name, const std::string& unit) const {
    Row r;
    r.result.name = name;
    r.result.device = runtime_name;
    r.result.unit = unit;
    return r;
  }
};

// Sets the row's value (and kernel-only value) from the median times of vkgrad's runs;
// `work` is GFLOP or GB per run for rates, 0 for cases measured in ms.
void set_ours(Row& row, const std::vector<Sample>& runs, double work);
// The reference from its runs (same `work`), and the ratio, higher is better either way.
void set_reference(Row& row, const std::string& name, const std::vector<Sample>& runs, double work);
// A reference value already in the row's unit, where lower is better (times): ratio =
// reference / ours.
void set_reference_time(Row& row, const std::string& name, double value);

// ---- cases outside suite.cpp ----------------------------------------------------------------

// hand_shaders.cpp: the hand-written GLSL references (shaders/) on the suite's Vulkan device,
// with the same inputs as vkgrad's side; each returns its timed runs and leaves its result in
// `out`.
std::vector<Sample> hand_axbpc(Suite& s, const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c, std::vector<float>& out);
std::vector<Sample> hand_matmul(Suite& s, const std::vector<float>& a, const std::vector<float>& b,
                                int64_t n, std::vector<float>& out);

// dispatch.cpp: microseconds per launch of a tiny kernel, 1,000 dependent launches.
enum class DispatchMode { kSingle, kBatched, kReplay };
Row dispatch_case(Suite& s, DispatchMode mode);

// cold_start.cpp: a child process's time from exec to its first result.
Row cold_start_case(Suite& s);
// One training step for the bench's training cases: the loss forward(in[0]).cross_entropy(in[1]),
// zero_grad(), backward(), and the optimizer's step realized with the loss in one schedule;
// returns {loss}. The callable a vkgrad::Jit wraps, or runs plainly.
std::function<std::vector<Tensor>(const std::vector<Tensor>&)> training_step(
    std::function<Tensor(const Tensor&)> forward, nn::optim::Optimizer& opt);
// mlp.cpp: one MLP training step (forward, backward, Adam), with or without vkgrad::Jit.
Row mlp_step_case(Suite& s, bool jit);
// models.cpp: a network's forward at batch 1 (resnet18, resnet50, mobilenetv2, bert_encoder),
// plain or under vkgrad::Jit.
Row model_case(Suite& s, const std::string& name, bool jit);
Row resnet18_train_case(Suite& s, bool jit);
// models.cpp: ONNX's light ResNet-50 through vkgrad::onnx, against the C++-built ResNet-50.
Row onnx_resnet50_case(Suite& s);
// llm.cpp: tokens per second of a TinyLlama-shaped model of `type` ("q4_0", "q8_0"), decoding
// (tg32; tg8 on Vulkan) or prefilling (pp128).
Row llm_case(Suite& s, const std::string& type, bool prefill);

}  // namespace vkgrad::bench
