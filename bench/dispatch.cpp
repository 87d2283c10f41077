// bench: the dispatch-cost cases (harness.hpp). A kernel with nothing to do (y = x + 1 over 64
// floats, shaders/add_one.comp) launched 1,000 times, each launch reading what the previous
// one wrote (ping-pong between two buffers), so the runtime must order them: submitted one
// Runtime::run at a time, batched in one Runtime::run, or captured once and replayed. The
// reference is vk::bare_dispatch_us: the same number of dependent dispatches recorded by a bare
// vkCmdDispatch loop, i.e. what the driver itself costs.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <vector>

#include "bench/hand_shaders.hpp"
#include "bench/harness.hpp"
#include "vk/vk.hpp"

namespace vkgrad::bench {
namespace {

constexpr int kDispatches = 1000;  // even: the last launch writes buffer A
constexpr uint32_t kElements = 64;

const char* case_name(DispatchMode mode) {
  switch (mode) {
    case DispatchMode::kSingle:
      return "dispatch_single_us";
    case DispatchMode::kBatched:
      return "dispatch_batched_us";
    case DispatchMode::kReplay:
      return "dispatch_replay_us";
  }
  return "?";
}

}  // namespace

Row dispatch_case(Suite& s, DispatchMode mode) {
  Row row = s.row(case_name(mode), "us");
  if (!s.gpu) {
    row.skipped = true;
    row.check = "skipped: Vulkan only (hand-written GLSL, and a Vulkan reference)";
    return row;
  }
  Runtime& rt = *s.runtime;
  auto kernel = compile_shader(rt, "add_one_64", "add_one.comp", {{"N", std::to_string(kElements)}},
                               {{kElements, 1, 1}, {1, 1, 1}, {true, false}});
  std::vector<float> x0(kElements);
  for (uint32_t i = 0; i < kElements; ++i) x0[i] = 0.25f * static_cast<float>(i);
  DeviceBuffer a(rt, x0), b(rt, kElements);
  // Launch i reads what launch i-1 wrote: A -> B, B -> A, ...
  std::vector<KernelLaunch> launches;
  for (int i = 0; i < kDispatches; ++i)
    launches.push_back(i % 2 == 0 ? KernelLaunch{kernel.get(), {b.handle(), a.handle()}}
                                  : KernelLaunch{kernel.get(), {a.handle(), b.handle()}});

  std::unique_ptr<Graph> graph;
  if (mode == DispatchMode::kReplay) graph = rt.capture(launches);
  // Each run is followed by one of the reference, untimed for ours, so both medians come from
  // the same stretch of time: lavapipe's per-dispatch cost moves with whatever else the cores
  // are doing, by 3x on a busy machine.
  std::vector<double> bare;
  auto once = [&] {
    a.upload(x0);  // not timed: every run starts from x0
    Sample sample = time_host([&] {
      switch (mode) {
        case DispatchMode::kSingle:
          for (const KernelLaunch& l : launches) rt.run({&l, 1}, nullptr);
          break;
        case DispatchMode::kBatched:
          rt.run(launches, nullptr);
          break;
        case DispatchMode::kReplay:
          graph->replay(launches);
          break;
      }
    });
    bare.push_back(vk::bare_dispatch_us(rt, kDispatches));
    return sample;
  };
  std::vector<Sample> runs = measure(once);
  row.runs = static_cast<int>(runs.size());
  row.result.value = median_ms(runs) * 1e3 / kDispatches;
  bare.erase(bare.begin());  // the warm-up's
  set_reference_time(row, "bare vkCmdDispatch loop", median(bare));

  const char* how = mode == DispatchMode::kSingle    ? "1,000 Runtime::run calls of one launch"
                    : mode == DispatchMode::kBatched ? "one Runtime::run of 1,000 launches"
                                                     : "Graph::replay of 1,000 captured launches";
  row.details.push_back(fmt::format("{} dependent launches of y = x + 1 ({} floats): {}",
                                    kDispatches, kElements, how));
  std::vector<float> got = a.download();
  int bad = 0;
  for (uint32_t i = 0; i < kElements; ++i)
    if (got[i] != x0[i] + static_cast<float>(kDispatches)) ++bad;
  if (bad > 0)
    row.fail(fmt::format("{} of {} elements are not x + {} (element 0: {})", bad, kElements,
                         kDispatches, got[0]));
  return row;
}

}  // namespace vkgrad::bench
