// engine: BEAM search (see beam.hpp).
#include "engine/beam.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vkgrad/error.hpp>

#include "codegen/gemm.hpp"
#include "codegen/linearize.hpp"
#include "engine/internal.hpp"

namespace vkgrad::engine {
namespace {

std::mutex g_hook_mu;
std::function<void(const std::vector<Opt>&, std::vector<uint8_t>&)> g_hook;

// A candidate is dropped when it runs longer than this many times the list it extends (and than
// kTimeoutFactor x kMaxSlowdown times the best so far).
constexpr double kTimeoutFactor = 4.0;
constexpr int kRuns = 3;
constexpr int kMaxRounds = 8;
constexpr double kMaxSlowdown = 16.0;
constexpr double kEarlyDrop = 1e-3;  // seconds (Search::time)
// The heuristics' kernel is timed again between candidates once its last timing is this old
// (seconds): a candidate's time is taken relative to its timings just before and after it.
constexpr double kReferenceAge = 0.1;
// The final paired look: the winner and the heuristics' kernel timed again, alternately, this
// many times each; the winner stands only when it is this much faster.
constexpr int kFinalRuns = 3;
constexpr double kMinGain = 0.02;
// A search's variants for its schedule to choose from: the heuristics' and the three fastest
// other lists.
constexpr size_t kMaxVariants = 4;
// choose_in_schedule's rounds: at least kMinScheduleRounds timed, more while the rounds so far
// took less than kScheduleSeconds, at most kMaxScheduleRounds.
constexpr int kMinScheduleRounds = 5;
constexpr int kMaxScheduleRounds = 30;
constexpr double kScheduleSeconds = 3.0;
// In the schedule, another list than the heuristics' must also gain this much a launch: a kernel
// of tens of microseconds (lavapipe's elementwise kernels) times 5-30% apart from one process to
// the next with the same code.
constexpr double kMinGainSeconds = 5e-6;
// The actions' amounts (beam_actions): a register split (UPCAST, UNROLL, STAGE) of up to 8 a
// step; lanes along one axis up to 4 subgroups (of 8 at least: 32 on lavapipe, 128 on NVIDIA's
// 32-wide subgroups, 256 on AMD's 64-wide ones), a grouped reduction up to 32. Larger amounts
// multiplied the candidates that compile slowly (lavapipe compiles at the first dispatch) and
// found nothing in ResNet-18's search.
constexpr int64_t kMaxSplit = 8;
constexpr int64_t kMaxSubgroupsAlong = 4;
constexpr int64_t kMaxSubgroupsGrouped = 32;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The middle value (the upper one of an even count); infinity for none.
double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Each slot's element type, from the kernel's DEFINE_GLOBALs.
std::vector<DType> slot_dtypes(const UOp& ast, size_t slots) {
  std::vector<DType> out(slots, dtypes::uint8);
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::DEFINE_GLOBAL) {
      const auto slot = static_cast<size_t>(u.arg_as<int64_t>());
      if (slot < slots) out[slot] = u.dtype().base().scalar();
    }
  return out;
}

// Inputs: floats uniform in [-1, 1]; everything else zero (an integer input may be an index).
std::vector<uint8_t> random_bytes(DType d, size_t bytes, std::mt19937& rng) {
  std::vector<uint8_t> out(bytes, 0);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if (d == dtypes::float32) {
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      const float f = static_cast<float>(u(rng));
      std::memcpy(out.data() + i, &f, 4);
    }
  } else if (d == dtypes::float64) {
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      const double f = u(rng);
      std::memcpy(out.data() + i, &f, 8);
    }
  }
  return out;
}

template <class T>
bool close_floats(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i + sizeof(T) <= a.size(); i += sizeof(T)) {
    T x, y;
    std::memcpy(&x, a.data() + i, sizeof(T));
    std::memcpy(&y, b.data() + i, sizeof(T));
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::abs(x - y) <= T(1e-4) + T(1e-3) * std::abs(y))) return false;
  }
  return true;
}
// Exact for integers; float32 and float64 within a tolerance (a reordered sum rounds otherwise).
bool same_output(DType d, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return false;
  if (d == dtypes::float32) return close_floats<float>(a, b);
  if (d == dtypes::float64) return close_floats<double>(a, b);
  return a == b;
}

class Search {
 public:
  Search(Runtime& rt, const UOp& ast, std::span<const size_t> slot_bytes)
      : rt_(rt), ast_(ast), bytes_(slot_bytes.begin(), slot_bytes.end()) {
    const std::vector<DType> types = slot_dtypes(ast, bytes_.size());
    out_dtype_ = types.empty() ? dtypes::uint8 : types[0];
    std::mt19937 rng(1234);
    try {
      for (size_t i = 0; i < bytes_.size(); ++i) {
        bufs_.push_back(rt_.alloc(std::max<size_t>(bytes_[i], 16)));
        if (i > 0) {
          const std::vector<uint8_t> in = random_bytes(types[i], bytes_[i], rng);
          rt_.copy_in(bufs_[i], in.data(), in.size());
        }
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~Search() { release(); }
  int slow() const { return slow_; }
  // Wall time in candidates' first runs with their output's check (Search::measure), and in
  // timing runs: the candidates', the heuristics' kernel's between them, the warm-ups.
  double check_seconds() const { return check_seconds_; }
  double timing_seconds() const { return timing_seconds_; }
  const std::shared_ptr<CompiledKernel>& reference_kernel() const { return reference_kernel_; }
  Search(const Search&) = delete;
  Search& operator=(const Search&) = delete;

  // The heuristics' kernel, its first timing and its output, the reference; returns its list.
  std::vector<Opt> reference() {
    const Program p = rt_.render(ast_, {.optimize = true});
    sources_.insert(p.source);
    reference_kernel_ = rt_.compile(p);
    run_alone(*reference_kernel_);  // lavapipe compiles a pipeline's code at its first dispatch
    warm_up();
    time_reference();
    reference_ = output();
    return p.opts;
  }

  // The heuristics' kernel timed now; the fastest of its timings so far is `reference_best`.
  double time_reference() {
    const double t = time(*reference_kernel_, 0).value();
    reference_best_ = std::min(reference_best_, t);
    reference_at_ = std::chrono::steady_clock::now();
    return t;
  }
  double reference_best() const { return reference_best_; }
  // Seconds since the heuristics' kernel was last timed.
  double reference_age() const { return seconds_since(reference_at_); }

  // Each kernel's time relative to the heuristics' kernel timed just before and just after it
  // (the faster of the two), the kernels timed in turn with the heuristics' between them.
  std::vector<double> relative_times(std::span<const CompiledKernel* const> kernels) {
    std::vector<double> out;
    double before = time_reference();
    for (const CompiledKernel* k : kernels) {
      const double t = time(*k, 0).value();
      const double after = time_reference();
      out.push_back(t / std::min(before, after));
      before = after;
    }
    return out;
  }

  // Each list's kernel, compiled on as many threads as the machine has (the runtimes compile
  // concurrently); null where the list does not apply or does not compile, or renders the same
  // source as an earlier list (GEMM(1, 0) where the plan packs A anyway): timing one kernel
  // twice would only let noise pick between them.
  std::vector<std::shared_ptr<CompiledKernel>> build(const std::vector<std::vector<Opt>>& lists) {
    std::vector<std::shared_ptr<CompiledKernel>> out(lists.size());
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mu, sources_mu;
    auto work = [&] {
      for (size_t i; (i = next++) < lists.size();) {
        try {
          const Program p = rt_.render(ast_, {.opts = lists[i]});
          {
            std::lock_guard lock(sources_mu);
            if (!sources_.insert(p.source).second) continue;
          }
          out[i] = rt_.compile(p, CompilePurpose::trial);
        } catch (const Error& e) {  // an action that does not apply, a limit exceeded
          if (debug_level() >= 4)
            std::fprintf(stderr, "beam: %s: %s\n", to_string(lists[i]).c_str(), e.what());
        } catch (...) {
          std::lock_guard lock(failure_mu);
          if (!failure) failure = std::current_exception();
        }
      }
    };
    const size_t n =
        std::min<size_t>(lists.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    return out;
  }

  // The reference kernel, back to back, for Runtime::warm_up_seconds (after a stretch of
  // compiling, before timing).
  void warm_up() {
    const double seconds = rt_.warm_up_seconds();
    if (seconds <= 0 || !reference_kernel_) return;
    const std::vector<KernelLaunch> batch(16, KernelLaunch{reference_kernel_.get(), bufs_});
    const auto start = std::chrono::steady_clock::now();
    while (seconds_since(start) < seconds) rt_.run(batch, nullptr);
    timing_seconds_ += seconds_since(start);
  }
  // The kernel's time, or nothing when it is dropped (another output, or too slow). The output
  // is checked after the first run, before any limit applies: every candidate that runs is
  // compared with the heuristics' kernel. The first run is not timed: it pays for the kernel's
  // first use (lavapipe compiles a pipeline's code at its first dispatch: 20-130 ms for
  // ResNet-50's kernels), and the limit judged candidates by it (every candidate of a 4096-element
  // multiply was dropped on the CPU, most on lavapipe; a convolution's by how long its code took
  // to compile).
  std::optional<double> measure(const CompiledKernel& k, const std::vector<Opt>& opts,
                                double limit) {
    const auto start = std::chrono::steady_clock::now();
    run_alone(k);
    std::vector<uint8_t> out = output();
    {
      std::lock_guard lock(g_hook_mu);
      if (g_hook) g_hook(opts, out);
    }
    const bool same = same_output(out_dtype_, out, reference_);
    check_seconds_ += seconds_since(start);
    if (!same) {
      if (debug_level() >= 1)
        std::fprintf(stderr, "beam: %s gives another output than the heuristics' kernel: dropped\n",
                     to_string(opts).c_str());
      return std::nullopt;
    }
    return time(k, limit);
  }

 private:
  // The minimum of a run alone (it pays for cold caches and a device waking up) and kRuns runs
  // back to back in one submission (a GPU left idle while candidates compile clocks down, and a
  // lone dispatch then times several times slower than in a forward); nothing when the minimum
  // exceeds `limit` (0: no limit) and kEarlyDrop, or already when the run alone exceeds twice
  // `limit` and kEarlyDrop: timing a kernel that short to the end costs nothing, and a lone
  // dispatch of a few microseconds on a loaded machine (lavapipe's threads descheduled) can take
  // ten times that.
  std::optional<double> time(const CompiledKernel& k, double limit) {
    const auto start = std::chrono::steady_clock::now();
    const double alone = run_alone(k);
    if (limit > 0 && alone > 2 * limit && alone > kEarlyDrop) {
      ++slow_;
      timing_seconds_ += seconds_since(start);
      return std::nullopt;
    }
    const std::vector<KernelLaunch> launches(kRuns, KernelLaunch{&k, bufs_});
    std::vector<double> seconds;
    rt_.run(launches, &seconds);
    timing_seconds_ += seconds_since(start);
    double best = alone;
    for (const double t : seconds) best = std::min(best, t);
    if (limit > 0 && best > limit && best > kEarlyDrop) {
      ++slow_;
      return std::nullopt;
    }
    return best;
  }
  double run_alone(const CompiledKernel& k) {
    const KernelLaunch launch{&k, bufs_};
    std::vector<double> seconds;
    rt_.run({&launch, 1}, &seconds);
    return seconds.empty() ? 0 : seconds[0];
  }
  std::vector<uint8_t> output() {
    std::vector<uint8_t> out(bytes_.empty() ? 0 : bytes_[0]);
    if (!out.empty()) rt_.copy_out(out.data(), bufs_[0], out.size());
    return out;
  }
  void release() noexcept {
    for (void* b : bufs_) rt_.free(b);
    bufs_.clear();
  }

  Runtime& rt_;
  UOp ast_;
  std::vector<size_t> bytes_;
  std::vector<void*> bufs_;
  DType out_dtype_;
  std::vector<uint8_t> reference_;
  std::shared_ptr<CompiledKernel> reference_kernel_;
  double reference_best_ = std::numeric_limits<double>::infinity();
  std::chrono::steady_clock::time_point reference_at_;
  double check_seconds_ = 0, timing_seconds_ = 0;
  int slow_ = 0;                   // candidates dropped by the time limit
  std::set<std::string> sources_;  // every kernel rendered so far
};

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

namespace {

// The amounts a split of an axis of `size` takes: its divisors from 2 to `most` that are at most
// `small` or a power of two, or a multiple of `lanes_of` (the subgroup; 0: none).
std::vector<int64_t> split_amounts(int64_t size, int64_t most, int64_t small,
                                   int64_t lanes_of = 0) {
  std::vector<int64_t> out;
  for (int64_t d = 2; d <= std::min(size, most); ++d)
    if (size % d == 0 && (d <= small || (d & (d - 1)) == 0 || (lanes_of > 1 && d % lanes_of == 0)))
      out.push_back(d);
  return out;
}

// Whether `a` applies after `opts`: apply_opts's checks (opt_state, without the rewrite).
bool applies(const UOp& ast, const std::vector<Opt>& opts, const Opt& a, const Target& target) {
  std::vector<Opt> extended = opts;
  extended.push_back(a);
  try {
    opt_state(ast, extended, target);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::vector<Opt> beam_actions(const UOp& ast, const std::vector<Opt>& opts, const Target& target) {
  // The actions that stand alone (GEMM, GROUP) take the empty list only; only a GEMM's blocking
  // follows one: its register tile's columns (1 to kMaxTileVectors vectors) and its k block
  // (powers of two from 64 to 1024 steps).
  if (!opts.empty() && opts[0].op == OptOp::GEMM) {
    std::vector<Opt> out;
    for (int64_t v = 1; v <= kMaxTileVectors; ++v) out.push_back({OptOp::BLOCK, 0, v});
    for (int64_t kc = 64; kc <= 1024; kc *= 2) out.push_back({OptOp::BLOCK, 1, kc});
    std::erase_if(out, [&](const Opt& a) { return !applies(ast, opts, a, target); });
    return out;
  }
  if (std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::GROUP; }))
    return {};
  // What the list leaves of each axis, the values each invocation holds, its lanes.
  OptState st;
  try {
    st = opt_state(ast, opts, target);
  } catch (const Error&) {
    return {};
  }
  const int G = st.globals, R = static_cast<int>(st.left.size()) - st.globals;
  const std::vector<int64_t>& left = st.left;
  const std::vector<int>& local_axes = st.local_axes;
  const int64_t values = st.upcast, lanes = st.lanes;
  const bool staged = st.staged >= 0;
  std::vector<Opt> out;
  // Registers: up to 8 values a step (a larger tile is two steps, each of which must pay), within
  // kMaxUpcast values an invocation.
  const int64_t registers = std::min<int64_t>(kMaxSplit, kMaxUpcast / values);
  for (int g = 0; g < G; ++g)
    for (int64_t n : split_amounts(left[g], registers, registers))
      out.push_back({OptOp::UPCAST, g, n});
  for (int r = 0; r < R; ++r)
    for (int64_t n : split_amounts(left[G + r], registers, registers))
      out.push_back({OptOp::UNROLL, r, n});
  // Lanes: a grid's workgroup of up to three axes, within the target's invocations and the size
  // of the dimension the axis takes (the innermost LOCAL axis x, the next y, then z), along one
  // axis up to kMaxSubgroupsAlong subgroups (a larger workgroup spans several axes): the
  // divisors up to 16 (7 and 14 for ResNet's 56-wide rows), powers of two and multiples of the
  // subgroup.
  if (target.threads && target.grid && local_axes.size() < 3)
    for (int g = 0; g < G; ++g) {
      if (std::find(local_axes.begin(), local_axes.end(), g) != local_axes.end()) continue;
      const auto dim =
          std::count_if(local_axes.begin(), local_axes.end(), [&](int l) { return l > g; });
      const int64_t most = std::min<int64_t>(
          {target.max_workgroup_invocations / lanes, target.max_workgroup_size[dim],
           kMaxSubgroupsAlong * std::max<int64_t>(8, target.subgroup_size)});
      for (int64_t n : split_amounts(left[g], most, 16, target.subgroup_size))
        out.push_back({OptOp::LOCAL, g, n});
    }
  // A staged reduce axis (beside a workgroup) keeps an outer loop of two steps or more.
  if (target.threads && target.grid && target.local_memory && !staged && !local_axes.empty())
    for (int r = 0; r < R; ++r)
      for (int64_t n : split_amounts(left[G + r], std::min<int64_t>(kMaxSplit, left[G + r] / 2), 0))
        out.push_back({OptOp::STAGE, r, n});
  if (opts.empty()) {
    // A grouped reduction: powers of two from the subgroup's size to the workgroup's limit, at
    // most kMaxSubgroupsGrouped subgroups.
    if (target.threads && target.local_memory && R > 0)
      for (int64_t n = std::max<int64_t>(2, target.subgroup_size);
           n <=
           std::min<int64_t>(target.max_workgroup_invocations,
                             kMaxSubgroupsGrouped * std::max<uint32_t>(8, target.subgroup_size));
           n *= 2)
        out.push_back({OptOp::GROUP, 0, n});
    // The GEMM's variants: how A is read (or Winograd), the register tile's rows from half the
    // target's most to its most, even counts.
    if (target.gemm) {
      const int64_t most = gemm_max_rows(target);
      for (int a : {0, 1, 2, 3}) {
        out.push_back({OptOp::GEMM, a, 0});
        for (int64_t rows = std::max<int64_t>(1, (most + 1) / 2); rows <= most; ++rows)
          if (rows % 2 == 0 || rows == most) out.push_back({OptOp::GEMM, a, rows});
      }
    }
  }
  // Only those the kernel takes: apply_opts's checks (opt_state, without the rewrite) see what
  // the amounts cannot (a GEMM's or Winograd's shape, shared memory, STAGE's outer loop).
  std::erase_if(out, [&](const Opt& a) { return !applies(ast, opts, a, target); });
  return out;
}

std::vector<std::vector<Opt>> beam_neighbours(const UOp& ast, const std::vector<Opt>& opts,
                                              const Target& target) {
  std::vector<std::vector<Opt>> out;
  if (opts.empty() || opts[0].op == OptOp::GEMM) return out;
  auto add = [&](std::vector<Opt> l) {
    if (l == opts || std::find(out.begin(), out.end(), l) != out.end()) return;
    try {
      opt_state(ast, l, target);
    } catch (const Error&) {
      return;
    }
    out.push_back(std::move(l));
  };
  for (size_t i = 0; i < opts.size(); ++i) {
    for (const int64_t amount : {opts[i].amount / 2, opts[i].amount * 2}) {
      if (amount < 2 || (amount < opts[i].amount && opts[i].amount % 2 != 0)) continue;
      std::vector<Opt> l = opts;
      l[i].amount = amount;
      add(std::move(l));
    }
    if (i + 1 < opts.size()) {  // without the last action it is a prefix, a root already
      std::vector<Opt> l = opts;
      l.erase(l.begin() + static_cast<std::ptrdiff_t>(i));
      add(std::move(l));
    }
  }
  return out;
}

BeamResult beam_search(Runtime& rt, const UOp& ast, std::span<const size_t> slot_bytes, int width,
                       const std::function<void(int, double)>& progress,
                       std::chrono::steady_clock::time_point deadline) {
  BeamResult res;
  if (!kernel_vars(ast).empty() || width <= 0) {
    res.opts = res.heuristic = rt.render(ast, {.optimize = true}).opts;
    return res;
  }
  res.searched = true;
  Search s(rt, ast, slot_bytes);
  // A candidate's time is kept relative to the heuristics' kernel timed just before and just
  // after it (the faster of the two): on a shared machine other work slows every kernel for
  // seconds at a time (lavapipe here: a 10 ms convolution's timings 1.4-1.9x its best for half
  // of a minute, in stretches of a second or more), and lists timed apart would otherwise be
  // ranked by when they ran. `relative` 1 is the heuristics' list.
  struct Candidate {
    std::vector<Opt> opts;
    double relative;
    double parent = 0;  // the relative time of the list it extends (infinity for a root)
    std::shared_ptr<CompiledKernel> kernel = {};
  };
  constexpr double kRoot = std::numeric_limits<double>::infinity();
  res.heuristic = s.reference();
  std::set<std::string> seen{to_string(res.heuristic)};
  const Candidate beam_root{res.heuristic, 1.0, kRoot, s.reference_kernel()};
  std::vector<Candidate> beam{beam_root};
  Candidate best = beam_root;
  auto faster = [](const Candidate& a, const Candidate& b) { return a.relative < b.relative; };
  std::vector<Candidate> fastest;  // the fastest lists timed but the heuristics', fastest first
  auto keep = [&](const Candidate& c) {
    const auto at = std::find_if(fastest.begin(), fastest.end(),
                                 [&](const Candidate& v) { return faster(c, v); });
    if (at - fastest.begin() >= static_cast<std::ptrdiff_t>(kMaxVariants - 1)) return;
    fastest.insert(at, c);
    if (fastest.size() > kMaxVariants - 1) fastest.pop_back();
  };
  // A candidate runs until it is kTimeoutFactor times slower than the list it extends or than
  // kMaxSlowdown times the best so far (a root's only limit), relative to the heuristics' kernel.
  auto limit = [&](const Candidate& c) {
    return std::min(c.parent, kMaxSlowdown * best.relative) * kTimeoutFactor;
  };
  // The lists not seen before (never the heuristics'), compiled together, then timed one at a
  // time, the heuristics' kernel again between them once its last timing is kReferenceAge old,
  // and after the last.
  auto try_lists = [&](const std::vector<Candidate>& lists, std::vector<Candidate>& into) {
    std::vector<Candidate> fresh;
    std::vector<std::vector<Opt>> opts;
    for (const Candidate& l : lists)
      if (seen.insert(to_string(l.opts)).second) {
        fresh.push_back(l);
        opts.push_back(l.opts);
      }
    const auto compile_start = std::chrono::steady_clock::now();
    const std::vector<std::shared_ptr<CompiledKernel>> kernels = s.build(opts);
    res.compile_seconds += seconds_since(compile_start);
    s.warm_up();
    struct Timed {
      size_t index;
      double seconds;
      double before;  // the heuristics' kernel's time before it
    };
    std::vector<Timed> pending;
    double before = s.time_reference();
    auto settle = [&] {
      const double after = s.time_reference();
      for (const Timed& t : pending) {
        const Candidate& f = fresh[t.index];
        into.push_back({f.opts, t.seconds / std::min(t.before, after), f.parent, kernels[t.index]});
        keep(into.back());
      }
      pending.clear();
      before = after;
    };
    for (size_t i = 0; i < fresh.size(); ++i) {
      ++res.tried;
      if (kernels[i]) {
        const std::optional<double> t =
            s.measure(*kernels[i], fresh[i].opts, limit(fresh[i]) * before);
        if (t) {
          ++res.timed;
          pending.push_back({i, *t, before});
          if (s.reference_age() > kReferenceAge) settle();
        } else {
          ++res.dropped;
        }
      } else {
        ++res.dropped;
      }
      if (progress) progress(res.tried, best.relative * s.reference_best());
    }
    if (!pending.empty()) settle();
  };
  // The roots: the heuristics' list, the empty list and every list on the way from one to the
  // other (the heuristics' prefixes: a tile without the workgroup the heuristics then add).
  std::vector<Candidate> roots{{{}, 0, kRoot}};
  for (size_t n = 1; n < res.heuristic.size(); ++n)
    roots.push_back({{res.heuristic.begin(), res.heuristic.begin() + n}, 0, kRoot});
  std::vector<Candidate> timed_roots;
  try_lists(roots, timed_roots);
  // The lists a round keeps, timed twice more each (in turn, the heuristics' kernel between
  // them): each keeps the median of its three relative times, so one timed in a quiet moment
  // between two slow timings of the heuristics' kernel does not end the search early, then they
  // are ranked again. The best so far is the fastest of those.
  auto confirm = [&](std::vector<Candidate>& kept) {
    std::vector<const CompiledKernel*> order;
    for (int pass = 0; pass < 2; ++pass)
      for (const Candidate& c : kept) order.push_back(c.kernel.get());
    const std::vector<double> again = s.relative_times(order);
    for (size_t i = 0; i < kept.size(); ++i) {
      kept[i].relative = median({kept[i].relative, again[i], again[i + kept.size()]});
    }
    std::stable_sort(kept.begin(), kept.end(), faster);
    if (!kept.empty() && kept[0].relative < best.relative) best = kept[0];
  };
  confirm(timed_roots);
  beam.insert(beam.end(), timed_roots.begin(), timed_roots.end());
  const Target& target = rt.target();
  // The heuristics' neighbours (one action's amount halved or doubled, or one action left out),
  // which extending the roots one action at a time seldom reaches: those faster than the
  // heuristics' list join the beam.
  std::vector<Candidate> near, timed_near;
  for (std::vector<Opt>& l : beam_neighbours(ast, res.heuristic, target))
    near.push_back({std::move(l), 0, kRoot});
  try_lists(near, timed_near);
  std::erase_if(timed_near, [](const Candidate& c) { return !(c.relative < 1); });
  if (!timed_near.empty()) confirm(timed_near);
  std::erase_if(timed_near, [](const Candidate& c) { return !(c.relative < 1); });
  beam.insert(beam.end(), timed_near.begin(), timed_near.end());
  std::map<std::string, std::vector<Opt>> actions_of;  // by list
  // A candidate is kept when it is faster than the list it extends: a path that starts slower
  // than the heuristics' list (the empty list's first actions) is followed while each step pays,
  // and the search ends when no step does.
  for (int round = 0; round < kMaxRounds && std::chrono::steady_clock::now() < deadline; ++round) {
    std::vector<Candidate> lists;
    auto actions = [&](const std::vector<Opt>& opts) -> const std::vector<Opt>& {
      auto [it, fresh] = actions_of.try_emplace(to_string(opts));
      if (fresh) it->second = beam_actions(ast, opts, target);
      return it->second;
    };
    for (const Candidate& c : beam)
      for (const Opt& a : actions(c.opts)) {
        lists.push_back({c.opts, 0, c.relative});
        lists.back().opts.push_back(a);
      }
    // The actions that stand alone (GEMM, GROUP) are reached from the empty list only: the
    // first round tries them even where the empty list ran too slowly to be kept.
    if (round == 0 &&
        std::none_of(beam.begin(), beam.end(), [](const Candidate& c) { return c.opts.empty(); }))
      for (const Opt& a : actions({}))
        if (a.op == OptOp::GEMM || a.op == OptOp::GROUP) lists.push_back({{a}, 0, kRoot});
    std::vector<Candidate> next;
    try_lists(lists, next);
    std::erase_if(next, [](const Candidate& c) { return !(c.relative < c.parent); });
    if (next.empty()) break;
    std::stable_sort(next.begin(), next.end(), faster);
    if (next.size() > static_cast<size_t>(width)) next.resize(static_cast<size_t>(width));
    confirm(next);
    if (debug_level() >= 2)
      std::fprintf(stderr, "beam: round %d: %d tried, best %s %.3f ms (%.3fx the heuristics')\n",
                   round, res.tried, to_string(next[0].opts).c_str(),
                   next[0].relative * s.reference_best() * 1e3, next[0].relative);
    beam = std::move(next);
  }
  // The winner stands when it stays kMinGain faster than the heuristics' kernel in kFinalRuns
  // more timings between the heuristics' (the median of them).
  if (best.opts != res.heuristic) {
    best.relative =
        median(s.relative_times(std::vector<const CompiledKernel*>(kFinalRuns, best.kernel.get())));
    if (!(best.relative < 1 - kMinGain)) best = beam_root;
  }
  const double unit = s.reference_best();
  res.opts = best.opts;
  res.seconds = best.relative * unit;
  res.heuristic_seconds = unit;
  res.slow = s.slow();
  res.check_seconds = s.check_seconds();
  res.timing_seconds = s.timing_seconds();
  res.variants.push_back({res.heuristic, unit, s.reference_kernel()});
  if (best.opts != res.heuristic) res.variants.push_back({best.opts, res.seconds, best.kernel});
  for (Candidate& k : fastest)
    if (res.variants.size() < kMaxVariants && k.opts != best.opts)
      res.variants.push_back({std::move(k.opts), k.relative * unit, k.kernel});
  std::stable_sort(
      res.variants.begin() + 1, res.variants.end(),
      [](const BeamVariant& a, const BeamVariant& b) { return a.seconds < b.seconds; });
  return res;
}

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

void set_beam_output_hook(std::function<void(const std::vector<Opt>&, std::vector<uint8_t>&)> f) {
  std::lock_guard lock(g_hook_mu);
  g_hook = std::move(f);
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
