// engine: BEAM search — the search itself (see beam.hpp).
#include "engine/beam.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "engine/beam_timing.hpp"
#include "ir/debug.hpp"

namespace vkgrad::engine {
namespace {

using beam_detail::kMinGain;
using beam_detail::median;
using beam_detail::Search;
using beam_detail::seconds_since;

// A candidate is dropped when it runs longer than this many times the list it extends (and than
// kTimeoutFactor x kMaxSlowdown times the best so far).
constexpr double kTimeoutFactor = 4.0;
constexpr int kMaxRounds = 8;
constexpr double kMaxSlowdown = 16.0;
// The heuristics' kernel is timed again between candidates once its last timing is this old
// (seconds): a candidate's time is taken relative to its timings just before and after it.
constexpr double kReferenceAge = 0.1;
// The final paired look: the winner and the heuristics' kernel timed again, alternately, this
// many times each; the winner stands only when it is kMinGain faster (beam_timing.hpp).
constexpr int kFinalRuns = 3;
// A search's variants for its schedule to choose from: the heuristics' and the three fastest
// other lists.
constexpr size_t kMaxVariants = 4;

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

bool faster(const Candidate& a, const Candidate& b) { return a.relative < b.relative; }

// The steps of one search (beam_search), over the state they share: the timings, the result so
// far, the lists seen, the best list so far and the fastest lists.
struct SearchSteps {
  Search& s;
  BeamResult& res;
  std::set<std::string>& seen;
  Candidate& best;
  std::vector<Candidate>& fastest;  // the fastest lists timed but the heuristics', fastest first
  const std::function<void(int, double)>& progress;

  void keep(const Candidate& c) {
    const auto at = std::find_if(fastest.begin(), fastest.end(),
                                 [&](const Candidate& v) { return faster(c, v); });
    if (at - fastest.begin() >= static_cast<std::ptrdiff_t>(kMaxVariants - 1)) return;
    fastest.insert(at, c);
    if (fastest.size() > kMaxVariants - 1) fastest.pop_back();
  }
  // A candidate runs until it is kTimeoutFactor times slower than the list it extends or than
  // kMaxSlowdown times the best so far (a root's only limit), relative to the heuristics' kernel.
  double limit(const Candidate& c) const {
    return std::min(c.parent, kMaxSlowdown * best.relative) * kTimeoutFactor;
  }
  // The lists not seen before (never the heuristics'), compiled together, then timed one at a
  // time, the heuristics' kernel again between them once its last timing is kReferenceAge old,
  // and after the last.
  void try_lists(const std::vector<Candidate>& lists, std::vector<Candidate>& into) {
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
  }
  // The lists a round keeps, timed twice more each (in turn, the heuristics' kernel between
  // them): each keeps the median of its three relative times, so one timed in a quiet moment
  // between two slow timings of the heuristics' kernel does not end the search early, then they
  // are ranked again. The best so far is the fastest of those.
  void confirm(std::vector<Candidate>& kept) {
    std::vector<const CompiledKernel*> order;
    for (int pass = 0; pass < 2; ++pass)
      for (const Candidate& c : kept) order.push_back(c.kernel.get());
    const std::vector<double> again = s.relative_times(order);
    for (size_t i = 0; i < kept.size(); ++i) {
      kept[i].relative = median({kept[i].relative, again[i], again[i + kept.size()]});
    }
    std::stable_sort(kept.begin(), kept.end(), faster);
    if (!kept.empty() && kept[0].relative < best.relative) best = kept[0];
  }
  // A candidate is kept when it is faster than the list it extends: a path that starts slower
  // than the heuristics' list (the empty list's first actions) is followed while each step pays,
  // and the search ends when no step does.
  void run_rounds(std::vector<Candidate>& beam, const UOp& ast, const Target& target, int width,
                  std::chrono::steady_clock::time_point deadline) {
    std::map<std::string, std::vector<Opt>> actions_of;  // by list
    for (int round = 0; round < kMaxRounds && std::chrono::steady_clock::now() < deadline;
         ++round) {
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
  }
};

}  // namespace

BeamResult beam_search(Runtime& rt, const UOp& ast, std::span<const size_t> slot_bytes, int width,
                       const std::function<void(int, double)>& progress,
                       std::chrono::steady_clock::time_point deadline) {
  BeamResult res;
  if (!kernel_vars(ast).empty() || width <= 0) {
    res.opts = res.heuristic = codegen(ast, {.optimize = true}, rt.target()).opts;
    return res;
  }
  res.searched = true;
  Search s(rt, ast, slot_bytes);
  res.heuristic = s.reference();
  std::set<std::string> seen{to_string(res.heuristic)};
  const Candidate beam_root{res.heuristic, 1.0, kRoot, s.reference_kernel()};
  std::vector<Candidate> beam{beam_root};
  Candidate best = beam_root;
  std::vector<Candidate> fastest;  // the fastest lists timed but the heuristics', fastest first
  SearchSteps steps{s, res, seen, best, fastest, progress};
  // The roots: the heuristics' list, the empty list and every list on the way from one to the
  // other (the heuristics' prefixes: a tile without the workgroup the heuristics then add).
  std::vector<Candidate> roots{{{}, 0, kRoot}};
  for (size_t n = 1; n < res.heuristic.size(); ++n)
    roots.push_back({{res.heuristic.begin(), res.heuristic.begin() + n}, 0, kRoot});
  std::vector<Candidate> timed_roots;
  steps.try_lists(roots, timed_roots);
  steps.confirm(timed_roots);
  beam.insert(beam.end(), timed_roots.begin(), timed_roots.end());
  const Target& target = rt.target();
  // The heuristics' neighbours (one action's amount halved or doubled, or one action left out),
  // which extending the roots one action at a time seldom reaches: those faster than the
  // heuristics' list join the beam.
  std::vector<Candidate> near, timed_near;
  for (std::vector<Opt>& l : beam_neighbours(ast, res.heuristic, target))
    near.push_back({std::move(l), 0, kRoot});
  steps.try_lists(near, timed_near);
  std::erase_if(timed_near, [](const Candidate& c) { return !(c.relative < 1); });
  if (!timed_near.empty()) steps.confirm(timed_near);
  std::erase_if(timed_near, [](const Candidate& c) { return !(c.relative < 1); });
  beam.insert(beam.end(), timed_near.begin(), timed_near.end());
  steps.run_rounds(beam, ast, target, width, deadline);
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

}  // namespace vkgrad::engine
