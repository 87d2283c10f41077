// codegen: the heuristics' rules for C targets (heuristics.cpp lists them in order).
#include <algorithm>

#include "codegen/gemm/plan.hpp"
#include "codegen/heuristics.hpp"
#include "codegen/ranges.hpp"

namespace vkgrad::heuristics {
namespace {

// Outputs that share one evaluation of a kernel's dividing index math (shared_index_math), in
// reductions of at most so many steps (a fold sums a few windows' terms).
constexpr int64_t kSharedIndexValues = 16;
constexpr int64_t kSharedIndexMaxSteps = 256;
// Values an elementwise kernel's short innermost axes may upcast to.
constexpr int64_t kShortAxesValues = 16;

// A matrix-vector product (a classifier at batch 1): the matrix read along a long reduction,
// nothing summed read along the output axis. A register tile over that axis would read rows a
// matrix row apart with a scalar multiply-add each.
bool is_matvec(const Kernel& k) {
  return k.G > 0 && k.R == 1 && !summed_contiguous_along(k.info, k.last()) &&
         summed_contiguous_along(k.info, k.info.reduces.back()) && k.reduce_size(0) >= 16 * 32;
}

// Whether the kernel decodes packed integers (a quantized weight's blocks: loads of 1- or 2-byte
// integers).
bool reads_packed(const Kernel& k) {
  for (const UOp& u : toposort(k.ast))
    if (u.op() == Ops::LOAD && u.dtype().is_int() && u.dtype().itemsize() <= 2) return true;
  return false;
}

}  // namespace

// A float32 matmul-like kernel the target prints as a packed GEMM (plan_gemm). A stride-1 3 x 3
// convolution runs as Winograd F(2 x 2, 3 x 3) where its batch has the profile's minimum of 2 x 2
// output tiles and each image its own minimum (or the batch's, where that is less): the weights'
// transform, once per call, is shared by every image's tiles, and each image's own transforms
// pay only from a few dozen tiles.
Answer gemm_or_winograd(const Kernel& k) {
  const std::optional<GemmPlan> plan = plan_gemm(k.ast, k.target);
  if (!plan) return std::nullopt;
  const int64_t tiles = winograd_tiles(*plan);
  const bool winograd =
      tiles >= std::min(k.tuning.winograd_min_image_tiles, k.tuning.winograd_min_tiles) &&
      tiles * prod_sizes(plan->batch) >= k.tuning.winograd_min_tiles;
  return std::vector<Opt>{gemm_opt(winograd ? GemmA::winograd : GemmA::planned)};
}

// An elementwise kernel: the vectorizer takes the innermost loop, except where the innermost
// axes are shorter than 8 (a convolution weight's 3 x 3): those are upcast whole, up to 16
// values, straight-line code instead of a short loop. Longer fused chains stay loops (unrolling
// them multiplies the compile time).
Answer short_elementwise_axes(const Kernel& k) {
  if (k.R > 0) return std::nullopt;
  std::vector<Opt> opts;
  int64_t values = 1;
  for (int g = k.G - 1; g >= 0; --g) {
    const int64_t n = k.size(g);
    if (n < 2 || n >= 8 || values * n > kShortAxesValues) break;
    opts.push_back({OptOp::UPCAST, g, n});
    values *= n;
  }
  return opts;
}

// A matmul-like kernel (a loaded factor of a summed product ignores the innermost output axis:
// reuses_product; a bias added before a row's sum does not make a norm's mean one): the innermost
// output axis by 32, 16 or 8 (whole vectors) and another axis with reuse by 8, 4 or 2.
Answer register_tile(const Kernel& k) {
  if (k.G == 0 || is_matvec(k)) return std::nullopt;
  const int64_t f = pick_factor(k.size(k.G - 1), {32, 16, 8});
  if (f <= 1 || !k.reuses_columns()) return std::nullopt;
  std::vector<Opt> opts{{OptOp::UPCAST, k.G - 1, f}};
  for (int g = k.G - 2; g >= 0; --g)
    if (const int64_t f2 = pick_factor(k.size(g), {8, 4, 2});
        f2 > 1 && has_reuse(k.info, k.info.globals[g])) {
      opts.push_back({OptOp::UPCAST, g, f2});
      break;
    }
  return opts;
}

// A short reduction whose index math divides (the fold of a window view's gradient back onto
// its input: a pool's or a convolution's input gradient) computes it once for 16 outputs along
// the axes it ignores (channels, batch), upcast. A long one (a norm's sums over a batch's pixels)
// keeps split accumulators along its contiguous steps (split_accumulators).
Answer shared_index_math(const Kernel& k) {
  std::vector<UOp> shared;
  if (prod_sizes(k.info.reduces) > kSharedIndexMaxSteps ||
      !costly_index_math(k.ast, k.info, &shared))
    return std::nullopt;
  std::vector<Opt> opts;
  int64_t values = 1;
  for (size_t i = shared.size(); i-- > 0 && values < kSharedIndexValues;) {
    const int64_t n = range_size(shared[i]);
    const int64_t f = n * values <= kSharedIndexValues ? n : pick_factor(n, {16, 8, 4, 2});
    if (f * values > kSharedIndexValues || f < 2) continue;
    const auto g = std::find(k.info.globals.begin(), k.info.globals.end(), shared[i]);
    opts.push_back({OptOp::UPCAST, static_cast<int>(g - k.info.globals.begin()), f});
    values *= f;
  }
  if (opts.empty()) return std::nullopt;
  return opts;
}

// A matrix-vector product whose vector is reused across its rows: 8 rows at a time, each loaded
// vector of the other operand used 8 times, and split accumulators along the reduction, two
// vectors of them, which read the matrix as vectors. A matrix decoded from packed integers (a
// quantized weight) runs one row at a time: across 8 rows the C compiler would vectorize the
// decoding with byte gathers instead of along the row's contiguous blocks.
Answer matvec(const Kernel& k) {
  if (!is_matvec(k) || !k.reuses_columns()) return std::nullopt;
  std::vector<Opt> opts;
  if (const int64_t f = pick_factor(k.size(k.G - 1), {8, 4, 2}); f > 1 && !reads_packed(k))
    opts.push_back({OptOp::UPCAST, k.G - 1, f});
  int64_t u = 2 * k.target.vector_floats;
  while (u > 1 && k.reduce_size(k.R - 1) % u != 0) u /= 2;
  if (u > 1) opts.push_back({OptOp::UNROLL, k.R - 1, u});
  return opts;
}

// Any other reduction: several accumulators, one per output of a run of the innermost output
// axis where the loads run along it and not along the reduction (a column sum: vector loads
// instead of a cache line per element), else split ones along the innermost reduction (UNROLL
// by 32, 16 or 8, leaving 16 steps at least), which breaks the add's latency chain.
Answer split_accumulators(const Kernel& k) {
  const bool columns = k.G > 0 && contiguous_along(k.info, k.last()) &&
                       !contiguous_along(k.info, k.info.reduces.back());
  const UOp& axis = columns ? k.last() : k.info.reduces.back();
  const int64_t size = range_size(axis);
  int64_t f = pick_factor(size, {32, 16, 8});
  while (!columns && f > 8 && size / f < 16) f /= 2;
  if (f <= 1) return std::vector<Opt>{};
  return std::vector<Opt>{columns ? Opt{OptOp::UPCAST, k.G - 1, f}
                                  : Opt{OptOp::UNROLL, k.R - 1, f}};
}

}  // namespace vkgrad::heuristics
