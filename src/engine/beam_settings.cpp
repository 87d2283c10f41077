// engine: the BEAM settings in force, the searches' time budget, the record of the kernels tuned
// and the public vkgrad::Beam, beam_options() and tuned_kernels() (see beam.hpp).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>
#include <vkgrad/beam.hpp>

#include "engine/beam.hpp"
#include "engine/internal.hpp"

namespace vkgrad::engine {
namespace {

std::mutex g_settings_mu;
std::optional<BeamOptions> g_override;  // the innermost live vkgrad::Beam's
std::vector<TunedKernel> g_tuned;       // under g_settings_mu
// When the first search under the options in force began (BeamOptions::seconds); under
// g_settings_mu, reset when a Beam starts or ends.
std::optional<std::chrono::steady_clock::time_point> g_budget_start;

}  // namespace

BeamOptions beam_settings() {
  static const BeamOptions env = [] {
    BeamOptions o;
    const char* v = std::getenv("BEAM");
    o.width = v && *v ? std::max(0, std::atoi(v)) : 0;
    const char* ignore = std::getenv("VKGRAD_IGNORE_BEAM_CACHE");
    o.use_cache = !(ignore && *ignore && std::string_view(ignore) != "0");
    return o;
  }();
  std::lock_guard lock(g_settings_mu);
  return g_override ? *g_override : env;
}

int beam_width() { return beam_settings().width; }

namespace {

// When a budget of `budget` seconds ends (under g_settings_mu): the clock's maximum where there
// is none or its clock has not started.
std::chrono::steady_clock::time_point budget_end(double budget) {
  using Clock = std::chrono::steady_clock;
  if (!(budget > 0) || !g_budget_start) return Clock::time_point::max();
  return *g_budget_start +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget));
}

}  // namespace

bool beam_budget_spent() {
  const double budget = beam_settings().seconds;
  std::lock_guard lock(g_settings_mu);
  return std::chrono::steady_clock::now() >= budget_end(budget);
}

std::chrono::steady_clock::time_point begin_beam_budget() {
  const double budget = beam_settings().seconds;
  std::lock_guard lock(g_settings_mu);
  if (!g_budget_start) g_budget_start = std::chrono::steady_clock::now();
  return budget_end(budget);
}

void record_tuned(TunedKernel k) {
  std::lock_guard lock(g_settings_mu);
  g_tuned.push_back(std::move(k));
}

}  // namespace vkgrad::engine

namespace vkgrad {

Beam::Beam(BeamOptions options) {
  {
    std::lock_guard lock(engine::g_settings_mu);
    saved_ = std::exchange(engine::g_override, options);
    engine::g_budget_start.reset();
  }
  engine::clear_compiled_kernels();
}

Beam::~Beam() {
  {
    std::lock_guard lock(engine::g_settings_mu);
    engine::g_override = saved_;
    engine::g_budget_start.reset();
  }
  engine::clear_compiled_kernels();
}

BeamOptions beam_options() { return engine::beam_settings(); }

std::vector<TunedKernel> tuned_kernels() {
  std::lock_guard lock(engine::g_settings_mu);
  return engine::g_tuned;
}

}  // namespace vkgrad
