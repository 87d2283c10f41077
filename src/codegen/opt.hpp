// codegen: kernel optimizations as explicit actions. An Opt names an axis of the kernel and an
// amount; apply_opts checks each against the kernel and the Target and rewrites the kernel's
// ranges; the heuristics return an Opt list (and a search may return another). Depends on ir,
// codegen/target.hpp.
//
// Axes are numbered as the kernel AST numbers them, in RANGE id order: the global (output)
// axes 0..G-1 for UPCAST and LOCAL, the reduce axes 0..R-1 for UNROLL and GROUP. An axis keeps
// its number after it is split: an Opt shrinks it, the new inner range takes the amount.
//   UPCAST(g, n):  global axis g of size N becomes (N/n, global) * n + u (n, upcast): each
//                  invocation computes n neighbouring outputs in registers (vector loads and
//                  stores where the axis is contiguous, operand reuse where an input ignores it).
//                  A second UPCAST of the same axis goes outside the first.
//   UNROLL(r, n):  reduce axis r becomes (N/n, reduce) * n + u (n, unroll): n independent
//                  accumulators, folded after the loop.
//   LOCAL(g, n):   global axis g of size N becomes (N/n, global) * n + l (n, local): n
//                  neighbouring outputs computed by the invocations of one workgroup (threads
//                  targets; up to three axes, one workgroup dimension each, the innermost LOCAL
//                  axis x). Loads that mention no LOCAL range are uniform across the workgroup.
//                  Before an UPCAST of the same axis it puts the lanes inside the upcast
//                  (adjacent lanes, adjacent outputs), after it outside.
//   GROUP(0, n):   the reduction is split over a workgroup of n lanes that fold their partial
//                  results in shared memory (targets with local memory; every reduce axis takes
//                  part, so the axis is 0); one workgroup per output.
//   STAGE(r, n):   reduce axis r of size N becomes (N/n, stage) * n + s (n, reduce), the other
//                  splits of r inside s: each step of the stage loop, the workgroup copies the
//                  tiles of the operands it shares between its lanes (a load that mentions some
//                  LOCAL ranges and ignores others: a matmul's A and B) into shared memory, and
//                  the inner steps read them there (stage_tiles; threads targets with a grid and
//                  shared memory; one per list, beside at least one LOCAL).
//   GEMM(a, r):    the kernel renders as a packed, blocked GEMM (targets with Target::gemm; a
//                  float32 matmul-like kernel; alone in its list): A read as the plan decides
//                  (a = 0), packed (1) or where it lies (2: A contiguous along k), or the
//                  kernel as Winograd F(2 x 2, 3 x 3) (3: a stride-1 3 x 3 convolution over even
//                  output sizes, GemmWinograd), r rows in the register tile (0: the plan's
//                  choice; up to gemm_max_rows). The heuristics say GEMM(0, 0) or GEMM(3, 0); a
//                  search tries the others.
//   BLOCK(b, n):   after GEMM, one of its blocking's sizes instead of the plan's (each at most
//                  once): b = 0 the register tile's columns as n vectors (1 to kMaxTileVectors;
//                  its rows then at most gemm_max_rows(target, n)), b = 1 k in blocks of at most
//                  n steps (16 or more and less than all of k; A packed, not Winograd).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/gemm/plan.hpp"
#include "codegen/target.hpp"
#include "ir/uop.hpp"

namespace vkgrad {

enum class OptOp : uint8_t { UPCAST, UNROLL, LOCAL, GROUP, GEMM, STAGE, BLOCK };

// At most this many values per invocation from upcasts and unrolls together (registers).
constexpr int64_t kMaxUpcast = 256;

struct Opt {
  OptOp op = OptOp::UPCAST;
  int axis = 0;
  int64_t amount = 0;
  bool operator==(const Opt&) const = default;
};
// Opt GEMM(a, rows) and BLOCK(b, n) by their variants' names (gemm/plan.hpp).
inline Opt gemm_opt(GemmA a, int64_t rows = 0) { return {OptOp::GEMM, static_cast<int>(a), rows}; }
inline Opt block_opt(GemmBlock b, int64_t n) { return {OptOp::BLOCK, static_cast<int>(b), n}; }
std::string to_string(const Opt& o);                  // "UPCAST(1, 4)"
std::string to_string(const std::vector<Opt>& opts);  // "[UPCAST(1, 4), UNROLL(0, 8)]"
// The list to_string printed, or nothing when `s` is not one.
std::optional<std::vector<Opt>> parse_opts(std::string_view s);
// Every field of the Target, as one line: what an Opt list was chosen for (the BEAM cache's key).
std::string target_key(const Target& t);

// The kernel after `opts`, in order. An action that does not apply (an axis out of range, an
// amount that does not divide the axis, a symbolic axis, an op the target lacks, a limit
// exceeded) throws Error naming the kernel, the action and why.
UOp apply_opts(const UOp& ast, const std::vector<Opt>& opts, const Target& target);

// What a list leaves of a kernel, after the checks apply_opts makes (it throws the same Error
// where the list does not apply), without rewriting the kernel: what a search's next actions
// are chosen from.
struct OptState {
  int globals = 0;              // how many of `left` are global axes (the rest are reduce axes)
  std::vector<int64_t> left;    // what is left of each axis, globals then reduces; -1 symbolic
  int64_t upcast = 1;           // values an invocation holds (UPCAST, UNROLL)
  int64_t lanes = 1;            // invocations a workgroup has (LOCAL)
  std::vector<int> local_axes;  // the LOCAL axes, in list order
  int staged = -1;              // STAGE's reduce axis
  int64_t group_lanes = 0;      // GROUP's lanes; 0 without GROUP
  bool gemm = false;            // the list is a GEMM (BLOCKs may follow it)
};
OptState opt_state(const UOp& ast, const std::vector<Opt>& opts, const Target& target);

// What a GEMM list (GEMM, then BLOCKs) chooses of the plan, as apply_opts has checked it.
GemmChoice gemm_choice(const std::vector<Opt>& opts);

// Shared memory GROUP with `lanes` lanes needs: one 4- or 8-byte slot per lane per REDUCE.
int64_t group_shared_bytes(const UOp& ast, int64_t lanes);
// Whether every reduction of the kernel runs over all its reduce axes (GROUP needs it).
bool reductions_span_all_axes(const UOp& ast);

// The heuristics' list for a kernel (simplified) on a target: what NOOPT=1 leaves out, and the
// rule that chose it (heuristics.cpp lists the rules).
struct HeuristicChoice {
  std::vector<Opt> opts;
  const char* rule = "none";
};
HeuristicChoice choose_heuristic(const UOp& ast, const Target& target);
// The rules' names in the order they are tried, for threads targets or for C ones.
std::vector<std::string> heuristic_rules(bool threads);
std::vector<Opt> heuristic_opts(const UOp& ast, const Target& target);

// The kernel's axes in Opt numbering: its global ranges and its reduce ranges, by id.
struct KernelAxes {
  std::vector<UOp> globals, reduces;
};
KernelAxes kernel_axes(const UOp& ast);

}  // namespace vkgrad
