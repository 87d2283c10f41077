// engine: the schedule's choice among the variants of its searched kernels, timed where the
// model runs them (see beam.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/beam.hpp"
#include "engine/beam_timing.hpp"

namespace vkgrad::engine {
namespace {

using beam_detail::kMinGain;
using beam_detail::median;
using beam_detail::seconds_since;

// choose_in_schedule's rounds: at least kMinScheduleRounds timed, more while the rounds so far
// took less than kScheduleSeconds, at most kMaxScheduleRounds.
constexpr int kMinScheduleRounds = 5;
constexpr int kMaxScheduleRounds = 30;
constexpr double kScheduleSeconds = 3.0;
// In the schedule, another list than the heuristics' must also gain this much a launch: a kernel
// of tens of microseconds (lavapipe's elementwise kernels) times 5-30% apart from one process to
// the next with the same code.
constexpr double kMinGainSeconds = 5e-6;

}  // namespace

std::map<size_t, ScheduleChoice> choose_in_schedule(
    Runtime& rt, const Schedule& schedule, std::span<void* const> input_handles,
    std::span<const std::shared_ptr<CompiledKernel>> kernels,
    std::span<const std::vector<std::string>> var_names,
    std::span<const std::vector<BeamVariant>* const> variants_of) {
  // Scratch outputs and arena slots, as the schedule's memory plan lays them out.
  std::vector<void*> owned;
  struct Release {
    Runtime& rt;
    std::vector<void*>& handles;
    ~Release() {
      for (void* h : handles) rt.free(h);
    }
  } release{rt, owned};
  std::vector<void*> arena;
  for (int64_t bytes : schedule.arena_slot_bytes) {
    owned.push_back(rt.alloc(std::max<size_t>(static_cast<size_t>(bytes), 16)));
    arena.push_back(owned.back());
  }
  std::vector<void*> handles(schedule.buffers.size(), nullptr);
  for (size_t b = 0; b < schedule.buffers.size(); ++b) {
    const ScheduleBuffer& sb = schedule.buffers[b];
    switch (sb.kind) {
      case ScheduleBuffer::Kind::input:
        handles[b] = input_handles[static_cast<size_t>(sb.index)];
        break;
      case ScheduleBuffer::Kind::intermediate:
        handles[b] = arena[static_cast<size_t>(sb.index)];
        break;
      case ScheduleBuffer::Kind::output:
        owned.push_back(
            rt.alloc(std::max<size_t>(static_cast<size_t>(sb.count) * sb.dtype.itemsize(), 16)));
        handles[b] = owned.back();
        break;
    }
  }
  // The kernels that run (those without variables) and, per searched kernel (by its first
  // launch), its launches' positions.
  std::vector<size_t> runs;
  std::map<size_t, std::vector<size_t>> launches_of;
  std::map<const std::vector<BeamVariant>*, size_t> first;
  size_t variants = 1;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (!var_names[k].empty()) continue;
    if (const std::vector<BeamVariant>* v = variants_of[k]) {
      const size_t at = first.try_emplace(v, k).first->second;
      launches_of[at].push_back(runs.size());
      variants = std::max(variants, v->size());
    }
    runs.push_back(k);
  }
  // per_round[kernel][variant][round]: the time of the kernel's launches together in the round
  // (the fastest pass of the round that ran the variant).
  std::map<size_t, std::vector<std::vector<double>>> per_round;
  for (const auto& [k, at] : launches_of)
    per_round[k].assign(
        variants_of[k]->size(),
        std::vector<double>(kMaxScheduleRounds, std::numeric_limits<double>::infinity()));
  const auto start = std::chrono::steady_clock::now();
  // Round 0 is not timed: it pays each variant's first use.
  for (int round = 0; round <= kMaxScheduleRounds; ++round) {
    if (round > kMinScheduleRounds && seconds_since(start) > kScheduleSeconds) break;
    for (size_t i = 0; i < variants; ++i) {
      const size_t turn = (i + static_cast<size_t>(round)) % variants;
      std::vector<KernelLaunch> launches;
      for (size_t k : runs) {
        const CompiledKernel* kernel = kernels[k].get();
        if (const std::vector<BeamVariant>* v = variants_of[k])
          kernel = (*v)[std::min(turn, v->size() - 1)].kernel.get();
        KernelLaunch l{kernel, {}};
        for (int b : schedule.kernels[k].buffers) l.buffers.push_back(handles[b]);
        launches.push_back(std::move(l));
      }
      std::vector<double> seconds;
      rt.run(launches, &seconds);
      if (round == 0 || seconds.size() != launches.size()) continue;
      for (const auto& [k, at] : launches_of) {
        double sum = 0;
        for (size_t j : at) sum += seconds[j];
        double& t = per_round[k][std::min(turn, variants_of[k]->size() - 1)][round - 1];
        t = std::min(t, sum);
      }
    }
  }
  // Each variant against the heuristics' kernel in the same round (the host's other work slows
  // both alike), as the median over the rounds of the ratio of their times: the forward's median
  // is what a user sees, and a list fast only in the quiet rounds does not win by them. Rounds
  // not run are infinite.
  std::map<size_t, ScheduleChoice> out;
  for (const auto& [k, times] : per_round) {
    ScheduleChoice& c = out[k];
    const double launches = static_cast<double>(launches_of.at(k).size());
    std::vector<double> base;
    for (double t : times[0])
      if (std::isfinite(t)) base.push_back(t);
    const double unit = median(base) / launches;
    c.seconds.push_back(unit);
    for (size_t u = 1; u < times.size(); ++u) {
      std::vector<double> ratios;
      for (size_t r = 0; r < times[u].size(); ++r)
        if (std::isfinite(times[u][r]) && std::isfinite(times[0][r]) && times[0][r] > 0)
          ratios.push_back(times[u][r] / times[0][r]);
      c.seconds.push_back(median(ratios) * unit);
    }
    for (size_t u = 1; u < c.seconds.size(); ++u)
      if (c.seconds[u] < c.seconds[c.chosen]) c.chosen = u;
    if (c.chosen != 0 && !(c.seconds[c.chosen] < c.seconds[0] * (1 - kMinGain) - kMinGainSeconds))
      c.chosen = 0;
  }
  return out;
}

}  // namespace vkgrad::engine
