// engine: the schedule cache (by device and normalized graph), the compiled kernel cache (by
// device and interned kernel AST, so one AST compiles once per device) and the kernel timing
// totals behind kernel_times().
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "codegen/pipeline.hpp"
#include "engine/beam.hpp"
#include "engine/beam_cache.hpp"
#include "engine/internal.hpp"
#include "ir/debug.hpp"
#include "ir/print.hpp"

namespace vkgrad {
namespace engine {
namespace {

// ---- schedule cache -----------------------------------------------------------------------------
struct ScheduleCache {
  std::mutex mu;
  // By (runtime, normalized graph): a graph without buffers (arange, full) names no device.
  std::map<std::pair<const Runtime*, const UOpNode*>, std::shared_ptr<CachedSchedule>> by_key;
  // Compiled kernels by (runtime, interned kernel AST): one AST compiles once per device.
  struct KernelKey {
    const Runtime* runtime;
    const UOpNode* ast;
    bool operator==(const KernelKey&) const = default;
  };
  struct KernelKeyHash {
    size_t operator()(const KernelKey& k) const {
      return std::hash<const void*>()(k.runtime) * 31 + std::hash<const void*>()(k.ast);
    }
  };
  struct Compiled {
    UOp ast;  // keeps the key's node alive
    std::shared_ptr<CompiledKernel> kernel;
    std::vector<std::string> vars;
    Estimates estimates;
  };
  std::unordered_map<KernelKey, Compiled, KernelKeyHash> kernels;
  static ScheduleCache& get() {
    static ScheduleCache* c = new ScheduleCache();
    return *c;
  }
};
constexpr size_t kMaxCachedSchedules = 4096;

// ---- kernel times -------------------------------------------------------------------------------
std::atomic<bool> g_kernel_timing{false};
struct KernelTotals {
  std::mutex mu;
  std::map<const CompiledKernel*, KernelTime> by_kernel;
  // The kernels are held so that no other kernel reuses an address that keys a total.
  std::vector<std::shared_ptr<CompiledKernel>> held;
  static KernelTotals& get() {
    static KernelTotals* t = new KernelTotals();
    return *t;
  }
};

std::string rate(double amount, double ms, const char* unit) {
  return ms > 0 && amount > 0 ? fmt::format("{:8.2f} {}", amount / ms * 1e-6, unit) : "";
}

// A cached list that no longer applies (the code generator changed under the same version):
// the heuristics', with a warning.
Program render_tuned(Runtime& rt, const UOp& ast, CodegenOptions& opts) {
  if (!opts.opts) return codegen(ast, opts, rt.target());
  try {
    return codegen(ast, opts, rt.target());
  } catch (const Error& e) {
    std::fprintf(stderr, "vkgrad: warning: the %s's Opt list for %s does not apply (%s)\n",
                 opts.origin.c_str(), kernel_name(ast).c_str(), e.what());
  }
  opts.opts.reset();
  return codegen(ast, opts, rt.target());
}

// Runtime::identity(), computed once per runtime (the CPU's reads /proc/cpuinfo).
const std::string& identity_of(const Runtime& rt) {
  static std::mutex mu;
  static std::map<const Runtime*, std::string>* ids = new std::map<const Runtime*, std::string>();
  std::lock_guard lock(mu);
  auto it = ids->find(&rt);
  if (it == ids->end()) it = ids->emplace(&rt, rt.identity()).first;
  return it->second;
}

// A kernel searched while its schedule was built: its schedule then chooses among its variants.
struct Searched {
  BeamResult result;
  std::string name, kernel;  // kernel_name(), the cache's key
  double search_seconds = 0;
};

// The kernel's Opt list from the BEAM cache, else from a search when BEAM=N (beam.hpp), the
// search returned for its schedule to finish (finish_searches); nothing: the heuristics'.
std::optional<Searched> tuned_opts(const CachedSchedule& cs, const ScheduleKernel& k,
                                   CodegenOptions& opts) {
  const BeamOptions settings = beam_settings();
  const bool read = settings.use_cache && beam_cache_present();
  if (!read && settings.width == 0) return std::nullopt;
  const std::string& device = identity_of(*cs.runtime);
  std::string kernel = to_string(k.ast);
  if (read)
    if (std::optional<std::vector<Opt>> cached = beam_cache_get(device, kernel)) {
      std::lock_guard s(g_stats_mu);
      ++g_stats.beam_cache_hits;
      opts.opts = std::move(cached);
      opts.origin = "BEAM cache";
      return std::nullopt;
    }
  // A spent budget (BeamOptions::seconds) leaves the kernel the heuristics' list.
  if (settings.width == 0 || beam_budget_spent()) return std::nullopt;
  std::vector<size_t> bytes;
  for (int b : k.buffers) {
    const ScheduleBuffer& sb = cs.schedule.buffers.at(static_cast<size_t>(b));
    bytes.push_back(static_cast<size_t>(sb.count) * static_cast<size_t>(sb.dtype.itemsize()));
  }
  const auto t0 = Clock::now();
  const auto deadline = begin_beam_budget();
  const std::string name = kernel_name(k.ast);
  // The updating line only on a terminal: in a log each update would be a line of its own.
  static const bool terminal = isatty(fileno(stderr)) != 0;
  std::function<void(int, double)> progress;
  if (settings.progress && terminal)
    progress = [&](int tried, double best) {
      std::fprintf(stderr, "\r  tuning %-40s %4d tried, best %9.3f ms", name.c_str(), tried,
                   best * 1e3);
    };
  BeamResult r = beam_search(*cs.runtime, k.ast, bytes, settings.width, progress, deadline);
  const double search_seconds = ms_since(t0) / 1e3;
  // The finished search's line carries its result, so that a run cut short still tells it.
  if (settings.progress && r.searched)
    std::fprintf(stderr,
                 "%s  tuned  %-40s %4d tried in %5.1f s (%4.1f compiling, %4.1f first runs, %4.1f "
                 "timing), %9.3f -> %9.3f ms  %s\n",
                 terminal ? "\r" : "", name.c_str(), r.tried, search_seconds, r.compile_seconds,
                 r.check_seconds, r.timing_seconds, r.heuristic_seconds * 1e3, r.seconds * 1e3,
                 to_string(r.opts).c_str());
  if (!r.searched) return std::nullopt;
  // Cached at once, so that a tune cut short (a killed process, a time limit) keeps every search
  // it finished; the schedule's choice among the variants replaces it when the schedule is built.
  beam_cache_put(device, kernel, r.opts, r.seconds, r.heuristic_seconds);
  {
    std::lock_guard s(g_stats_mu);
    ++g_stats.beam_searches;
  }
  opts.opts = r.opts;
  opts.origin = "search";
  return Searched{std::move(r), name, std::move(kernel), search_seconds};
}

// The searches of a schedule just built: the schedule chooses each kernel's variant
// (choose_in_schedule), whose list the BEAM cache then keeps and whose kernel the schedule and
// the compiled-kernel cache run.
void finish_searches(CachedSchedule& cs, const NormalizedGraph& g,
                     std::map<size_t, Searched>& searched) {
  const auto t0 = Clock::now();
  std::vector<const std::vector<BeamVariant>*> variants_of(cs.kernels.size(), nullptr);
  std::map<const UOpNode*, size_t> first;
  for (const auto& [k, s] : searched) first.emplace(cs.schedule.kernels[k].ast.get(), k);
  for (size_t k = 0; k < cs.kernels.size(); ++k)
    if (auto it = first.find(cs.schedule.kernels[k].ast.get()); it != first.end())
      variants_of[k] = &searched.at(it->second).result.variants;
  std::vector<void*> inputs;
  for (const UOp& b : g.inputs) inputs.push_back(storage_of(b).handle);
  std::map<size_t, ScheduleChoice> choices;
  try {
    choices =
        choose_in_schedule(*cs.runtime, cs.schedule, inputs, cs.kernels, cs.var_names, variants_of);
  } catch (const Error& e) {
    std::fprintf(stderr,
                 "vkgrad: warning: the searched kernels were not timed in their schedule (%s)\n",
                 e.what());
  }
  const double schedule_seconds = ms_since(t0) / 1e3;
  const std::string& device = identity_of(*cs.runtime);
  int changed = 0;
  for (auto& [k, s] : searched) {
    BeamResult& r = s.result;
    TunedKernel t{s.name,    cs.runtime->name(),  to_string(r.opts), to_string(r.heuristic),
                  r.seconds, r.heuristic_seconds, r.tried,           s.search_seconds};
    // The choice, by the kernel's first launch: the position it was searched at (a later launch
    // of the same AST found it compiled).
    if (auto it = choices.find(k); it != choices.end()) {
      const ScheduleChoice& c = it->second;
      const BeamVariant& v = r.variants.at(c.chosen);
      t.opts = to_string(v.opts);
      t.seconds = c.chosen == 0 ? r.heuristic_seconds : v.seconds;
      t.schedule_seconds = c.seconds[c.chosen];
      t.schedule_heuristic_seconds = c.seconds[0];
      if (v.opts != r.opts) {
        ++changed;
        r.opts = v.opts;
        for (size_t j = 0; j < cs.kernels.size(); ++j)
          if (cs.schedule.kernels[j].ast.get() == cs.schedule.kernels[k].ast.get())
            cs.kernels[j] = v.kernel;
        ScheduleCache& cache = ScheduleCache::get();
        std::lock_guard lock(cache.mu);
        auto e = cache.kernels.find({cs.runtime, cs.schedule.kernels[k].ast.get()});
        if (e != cache.kernels.end()) e->second.kernel = v.kernel;
      }
      if (debug_level() >= 2) {
        std::string times;
        for (size_t u = 0; u < c.seconds.size(); ++u)
          times += fmt::format("{}{:.3f}{}", u ? ", " : "", c.seconds[u] * 1e3,
                               u == c.chosen ? "*" : "");
        std::fprintf(stderr, "beam: %s in its schedule: heuristics first, ms: %s\n", s.name.c_str(),
                     times.c_str());
      }
    }
    beam_cache_put(device, s.kernel, r.opts, t.seconds, r.heuristic_seconds);
    if (debug_level() >= 2)
      std::fprintf(stderr,
                   "beam: %s: %s %.3f ms, heuristics %s %.3f ms (%d tried: %d timed, %d too slow, "
                   "%d other drops; %.1f s)\n",
                   s.name.c_str(), t.opts.c_str(), t.seconds * 1e3, t.heuristic_opts.c_str(),
                   r.heuristic_seconds * 1e3, r.tried, r.timed, r.slow, r.dropped - r.slow,
                   s.search_seconds);
    record_tuned(std::move(t));
  }
  if (beam_settings().progress)
    std::fprintf(stderr,
                 "  chose among %zu kernels' variants in their schedule: %d changed (%.1f s)\n",
                 searched.size(), changed, schedule_seconds);
}

}  // namespace

void clear_compiled_kernels() {
  ScheduleCache& cache = ScheduleCache::get();
  std::lock_guard lock(cache.mu);
  cache.by_key.clear();
  cache.kernels.clear();
}

std::shared_ptr<CachedSchedule> lookup_or_build(const NormalizedGraph& g,
                                                const std::string& device) {
  ScheduleCache& cache = ScheduleCache::get();
  {
    std::lock_guard lock(cache.mu);
    auto it = cache.by_key.find({&runtime_of(device), g.key.get()});
    if (it != cache.by_key.end()) {
      std::lock_guard s(g_stats_mu);
      ++g_stats.schedule_cache_hits;
      return it->second;
    }
  }
  auto t0 = Clock::now();
  auto cs = std::make_shared<CachedSchedule>();
  cs->key = g.key;
  cs->schedule = build_schedule(g.key);
  cs->runtime = &runtime_of(device);
  const double sched_ms = ms_since(t0);
  if (debug_level() >= 3) {
    std::fprintf(stderr, "schedule: %zu kernels, %zu buffers\n", cs->schedule.kernels.size(),
                 cs->schedule.buffers.size());
  }
  double codegen_ms = 0, compile_ms = 0;
  int64_t rendered = 0, compiled = 0;
  const CodegenOptions opts{.optimize = !noopt()};
  std::map<size_t, Searched> searched;  // by the kernel's position
  for (const ScheduleKernel& k : cs->schedule.kernels) {
    std::shared_ptr<CompiledKernel> ck;
    std::vector<std::string> vars;
    Estimates est;
    {
      std::lock_guard lock(cache.mu);
      auto it = cache.kernels.find({cs->runtime, k.ast.get()});
      if (it != cache.kernels.end())
        ck = it->second.kernel, vars = it->second.vars, est = it->second.estimates;
    }
    if (!ck) {
      CodegenOptions kernel_opts = opts;
      std::optional<Searched> search;
      if (opts.optimize) search = tuned_opts(*cs, k, kernel_opts);
      auto t1 = Clock::now();
      Program p = render_tuned(*cs->runtime, k.ast, kernel_opts);
      codegen_ms += ms_since(t1);
      ++rendered;
      if (debug_level() >= 5) std::fprintf(stderr, "%s", uop_listing(p).c_str());
      if (debug_level() >= 4) std::fprintf(stderr, "%s\n", p.source.c_str());
      if (search) {  // the search compiled the winner
        for (const BeamVariant& v : search->result.variants)
          if (v.opts == search->result.opts) ck = v.kernel;
        searched.emplace(cs->kernels.size(), std::move(*search));
      }
      if (!ck) {
        auto t2 = Clock::now();
        ck = cs->runtime->compile(p);
        compile_ms += ms_since(t2);
        ++compiled;
      }
      for (const VarArg& v : p.vars) vars.push_back(v.name);
      est = p.estimates;
      std::lock_guard lock(cache.mu);
      cache.kernels.emplace(ScheduleCache::KernelKey{cs->runtime, k.ast.get()},
                            ScheduleCache::Compiled{k.ast, ck, vars, est});
    }
    if (debug_level() >= 3)
      std::fprintf(stderr, "  kernel %zu: %s, %zu buffers\n", cs->kernels.size(), ck->name.c_str(),
                   k.buffers.size());
    cs->kernels.push_back(std::move(ck));
    cs->var_names.push_back(std::move(vars));
    cs->estimates.push_back(est);
  }
  if (!searched.empty()) finish_searches(*cs, g, searched);
  for (int64_t bytes : cs->schedule.arena_slot_bytes)
    cs->arena.push_back(cs->runtime->alloc(static_cast<size_t>(bytes)));
  {
    std::lock_guard s(g_stats_mu);
    ++g_stats.schedules_built;
    g_stats.schedule_ms += sched_ms;
    g_stats.codegen_ms += codegen_ms;
    g_stats.compile_ms += compile_ms;
    g_stats.kernels_rendered += rendered;
    g_stats.programs_compiled += compiled;
  }
  std::lock_guard lock(cache.mu);
  if (cache.by_key.size() >= kMaxCachedSchedules) cache.by_key.clear();
  return cache.by_key.emplace(std::make_pair(cs->runtime, g.key.get()), cs).first->second;
}

void record_times(const CachedSchedule& cs, const std::string& device,
                  const std::vector<double>& seconds) {
  double total = 0;
  for (double t : seconds) total += t;
  if (g_kernel_timing) {
    KernelTotals& kt = KernelTotals::get();
    std::lock_guard lock(kt.mu);
    for (size_t k = 0; k < seconds.size(); ++k) {
      auto [it, fresh] = kt.by_kernel.try_emplace(cs.kernels[k].get());
      KernelTime& t = it->second;
      if (fresh) {
        t.name = cs.kernels[k]->name, t.device = cs.runtime->name();
        kt.held.push_back(cs.kernels[k]);
      }
      ++t.runs;
      t.ms += seconds[k] * 1e3;
      t.gflop += cs.estimates[k].ops * 1e-9;
      t.gbyte += cs.estimates[k].bytes * 1e-9;
    }
  }
  if (debug_level() < 2 || seconds.empty()) return;
  std::fprintf(stderr, "*** %s: %zu kernels, %.3f ms of device time\n", device.c_str(),
               seconds.size(), total * 1e3);
  std::fprintf(stderr, "    %-32s %10s %6s %15s %13s\n", "kernel", "ms", "share", "compute",
               "memory");
  for (size_t k = 0; k < seconds.size(); ++k) {
    const double ms = seconds[k] * 1e3;
    std::fprintf(stderr, "    %-32s %10.3f %5.1f%% %15s %13s\n", cs.kernels[k]->name.c_str(), ms,
                 total > 0 ? 100 * seconds[k] / total : 0.0,
                 rate(cs.estimates[k].ops, ms, "GFLOPS").c_str(),
                 rate(cs.estimates[k].bytes, ms, "GB/s").c_str());
  }
}

void clear_kernel_times() {
  KernelTotals& kt = KernelTotals::get();
  std::lock_guard lock(kt.mu);
  kt.by_kernel.clear();
  kt.held.clear();
}

}  // namespace engine

void set_kernel_timing(bool on) { engine::g_kernel_timing = on; }
bool kernel_timing() { return engine::g_kernel_timing; }

std::vector<KernelTime> kernel_times() {
  engine::KernelTotals& kt = engine::KernelTotals::get();
  std::vector<KernelTime> out;
  {
    std::lock_guard lock(kt.mu);
    for (const auto& [k, t] : kt.by_kernel) out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace vkgrad
