// codegen: the action space a BEAM search walks — the one-step extensions of an Opt list and
// the lists near one, chosen from what opt_state says the list leaves (the search itself is the
// engine's, src/engine/beam.hpp). Depends on ir, codegen/opt.hpp.
#pragma once

#include <vector>

#include "codegen/opt.hpp"

namespace vkgrad {

// The one-step extensions a search tries after `opts` on a kernel, from the target and what
// the list leaves of each axis: UPCAST and UNROLL by the axis's divisors up to 8, within
// kMaxUpcast values an invocation; on a target with a grid, LOCAL by divisors up to 16, powers of
// two and multiples of the subgroup, up to four subgroups along one axis and within the
// workgroup's invocations and the dimension's size; STAGE (2, 4, 8) beside a workgroup where
// there is shared memory; from the empty list only, GROUP (powers of two from the subgroup, up to
// 32 subgroups, within the workgroup and shared memory) and the GEMM's variants (how A is read;
// rows from half the register tile's most); after a GEMM, only its blocking (BLOCK: the register
// tile's columns, 1 to kMaxTileVectors vectors, and k blocks of 64 to 1024 steps). Only actions
// apply_opts takes after `opts`.
std::vector<Opt> beam_actions(const UOp& ast, const std::vector<Opt>& opts, const Target& target);

// The lists near `opts` (the heuristics'): one action's amount halved or doubled, or one action
// but the last left out, where apply_opts takes them; none for a GEMM's list.
std::vector<std::vector<Opt>> beam_neighbours(const UOp& ast, const std::vector<Opt>& opts,
                                              const Target& target);

}  // namespace vkgrad
