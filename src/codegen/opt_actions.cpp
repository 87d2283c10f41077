// codegen: the action space of a BEAM search (see opt_actions.hpp).
#include "codegen/opt_actions.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>
#include <vkgrad/error.hpp>

#include "codegen/gemm/plan.hpp"
#include "codegen/target.hpp"

namespace vkgrad {
namespace {

// The actions' amounts (beam_actions): a register split (UPCAST, UNROLL, STAGE) of up to 8 a
// step; lanes along one axis up to 4 subgroups (of 8 at least: 32 on lavapipe, 128 on NVIDIA's
// 32-wide subgroups, 256 on AMD's 64-wide ones), a grouped reduction up to 32. Larger amounts
// multiplied the candidates that compile slowly (lavapipe compiles at the first dispatch) and
// found nothing in ResNet-18's search.
constexpr int64_t kMaxSplit = 8;
constexpr int64_t kMaxSubgroupsAlong = 4;
constexpr int64_t kMaxSubgroupsGrouped = 32;

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
    for (int64_t v = 1; v <= kMaxTileVectors; ++v)
      out.push_back(block_opt(GemmBlock::tile_vectors, v));
    for (int64_t kc = 64; kc <= 1024; kc *= 2) out.push_back(block_opt(GemmBlock::k_block, kc));
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
    if (target.host.gemm) {
      const int64_t most = gemm_max_rows(target);
      for (const GemmA a : {GemmA::planned, GemmA::packed, GemmA::in_place, GemmA::winograd}) {
        out.push_back(gemm_opt(a));
        for (int64_t rows = std::max<int64_t>(1, (most + 1) / 2); rows <= most; ++rows)
          if (rows % 2 == 0 || rows == most) out.push_back(gemm_opt(a, rows));
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

}  // namespace vkgrad
