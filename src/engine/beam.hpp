// engine: BEAM search — a kernel's Opt list chosen by compiling and timing candidates on the
// device itself, on scratch buffers of the kernel's sizes (never the user's).
//
// The search starts from the heuristics' list, the empty list and the heuristics' list's prefixes
// (the lists on the way from one to the other), and the heuristics' neighbours that beat it
// (beam_neighbours). Each round extends every kept candidate by one action (beam_actions: the
// amounts the target's registers, workgroups and shared memory allow on what the list leaves of
// each axis) and keeps the `width` fastest of the extensions that are faster than the list they
// extend; it stops when no extension is. A candidate's time (the minimum of a run alone and a few
// runs back to back) is kept relative to the heuristics' kernel timed just before and after it, so
// that a machine slowed by other work for seconds at a time does not rank lists by when they ran;
// the lists a round keeps are timed twice more and keep the median of the three. One that fails to
// render or compile, runs past a multiple of the list it extends or of the best time so far, or
// whose output differs from the heuristics' kernel on the same random inputs (exact for integers, a
// tolerance for floats) is dropped. The winner is the fastest list kept, when it stays faster than
// the heuristics' in a last few paired timings. Kernels with variables keep the heuristics.
//
// A kernel timed alone, its operands in cache from the run before, ranks lists otherwise than
// the model's forward does, where its operands come from other kernels or from memory (a
// matmul whose split accumulators won 1.12x alone ran 0.85x in the forward). So a search
// keeps its fastest lists (variants) and the schedule they belong to decides: choose_in_schedule
// runs the whole schedule, each searched kernel's variants taking turns, and keeps per kernel
// the variant fastest there.
//
// The files: beam_settings.cpp the settings in force, the budget and vkgrad::Beam;
// codegen/opt_actions.cpp the action space (beam_actions, beam_neighbours); beam_timing.cpp
// (beam_timing.hpp, internal) a candidate's compiling, running, timing and output check;
// beam.cpp the search (beam_search); beam_schedule.cpp the schedule's choice (choose_in_schedule).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>
#include <vkgrad/beam.hpp>

#include "codegen/opt.hpp"
#include "codegen/opt_actions.hpp"
#include "runtime/device.hpp"
#include "sched/schedule.hpp"

namespace vkgrad::engine {

// The settings in force: the innermost live vkgrad::Beam's, else BEAM=N and
// VKGRAD_IGNORE_BEAM_CACHE (read once).
BeamOptions beam_settings();
// Whether BeamOptions::seconds of the options in force ran out: false before their first search
// (begin_beam_budget starts their clock) and where they set no budget.
bool beam_budget_spent();
// Starts the budget's clock at the first search under the options in force (later calls leave
// it); returns the time the budget ends (the steady clock's maximum where there is none).
std::chrono::steady_clock::time_point begin_beam_budget();
int beam_width();  // beam_settings().width

// Records a search of this process (vkgrad::tuned_kernels()).
void record_tuned(TunedKernel k);

// The action space a search walks (codegen/opt_actions.hpp), under the engine's names.
using vkgrad::beam_actions;
using vkgrad::beam_neighbours;

// A list a search timed, with its compiled kernel.
struct BeamVariant {
  std::vector<Opt> opts;
  double seconds = 0;  // its time in the search
  std::shared_ptr<CompiledKernel> kernel;
};

struct BeamResult {
  std::vector<Opt> opts;         // the winner (the heuristics' list when nothing beat it)
  double seconds = 0;            // its time
  std::vector<Opt> heuristic;    // the heuristics' list
  double heuristic_seconds = 0;  // and its time
  int tried = 0, dropped = 0;    // candidates tried, candidates dropped
  int timed = 0;                 // candidates that ran within the time limit
  int slow = 0;                  // candidates dropped for running past it
  // Wall time spent rendering and compiling candidates, running each once and checking its
  // output, and timing them (the heuristics' kernel between them and the warm-ups included).
  double compile_seconds = 0, check_seconds = 0, timing_seconds = 0;
  bool searched = false;  // false: the kernel was not searchable (variables)
  // The heuristics' kernel first, then the fastest other lists timed (kMaxVariants in all),
  // fastest first; empty when the kernel was not searched.
  std::vector<BeamVariant> variants;
};

// `slot_bytes`: each DEFINE_GLOBAL slot's buffer size in bytes; `progress`, when set, is told
// the candidates tried and the best time so far after each one.
// The search ends its rounds early, keeping the fastest list confirmed so far, once `deadline`
// has passed (BeamOptions::seconds).
BeamResult beam_search(
    Runtime& rt, const UOp& ast, std::span<const size_t> slot_bytes, int width,
    const std::function<void(int tried, double best_seconds)>& progress = {},
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// The variants of each searched kernel of a schedule, timed where the model runs them: the whole
// schedule runs on scratch outputs and intermediates (its inputs are read, never written) in
// rounds, each variant of every searched kernel once a round (the others in order). A variant's
// time is the heuristics' median time over the rounds, times the median of its ratio to the
// heuristics' in the same round (paired: the host's other work slows both alike).
// `variants_of[k]`: schedule kernel k's variants, null for a kernel not searched (it runs
// `kernels[k]`); kernels with variables do not run. Per searched kernel (its first launch's
// index), the chosen variant: the fastest, where it beats the heuristics' (variant 0) by kMinGain
// and 5 us, else 0.
struct ScheduleChoice {
  size_t chosen = 0;
  std::vector<double> seconds;  // per variant: the time of one launch
};
std::map<size_t, ScheduleChoice> choose_in_schedule(
    Runtime& rt, const Schedule& schedule, std::span<void* const> input_handles,
    std::span<const std::shared_ptr<CompiledKernel>> kernels,
    std::span<const std::vector<std::string>> var_names,
    std::span<const std::vector<BeamVariant>* const> variants_of);

// Tests: called with each candidate's output bytes after it ran (may change them).
void set_beam_output_hook(std::function<void(const std::vector<Opt>&, std::vector<uint8_t>&)> f);

}  // namespace vkgrad::engine
