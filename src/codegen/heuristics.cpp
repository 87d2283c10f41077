// codegen: the default Opt list of a kernel (what NOOPT=1 leaves out; a search starts here).
//
// C targets (the loop vectorizer handles an elementwise kernel's innermost loop, so elementwise
// kernels get nothing, unless their innermost axes are shorter than 8: those are upcast whole, up
// to 16 values; unrolling a long fused chain would only multiply the compile time):
//   a large float32 matmul-like kernel on a target with a GEMM lowering: GEMM; a stride-1 3 x 3
//                convolution with at least TuningProfile::winograd_min_tiles 2 x 2 output tiles in
//                its batch (one 32 x 32 output; Zen 4's 28 x 28, AVX2's 14 x 14), 64 per image at
//                least (16 x 16) or that minimum where it is less, as Winograd F(2 x 2, 3 x 3),
//                GEMM(3, 0)
//                (b32 64 -> 64 at 56 x 56: 26.6 -> 18.5 ms; ResNet-18's 56 x 56 convs 1.55 -> 1.33
//                ms; at 14 x 14 with 256 channels it lost, 4.0 -> 5.6 ms: the weights' transform,
//                per call, outweighs 49 tiles);
//   matmul-like (a loaded factor of a summed product ignores the innermost output axis:
//                reuses_product; a bias added before a row's sum does not make a LayerNorm's
//                mean one): a register tile, the innermost output axis by 32, 16 or 8 (one
//                vector) and another reused axis by 8, 4 or 2;
//   reductions of up to 256 steps whose index math divides (the fold of a window view's
//                gradient onto its input, a pool's or a convolution's input gradient): the axes
//                that the divisions, remainders and index comparisons ignore (channels, batch)
//                upcast to 16 values;
//   other reductions: several accumulators, one per output of a run of the innermost output
//                axis when the loads run along it and not along the reduction (a column sum:
//                vector loads instead of one cache line per element), else split ones for the
//                innermost reduction (UNROLL by 32, 16 or 8, leaving 16 steps at least: breaks
//                the add latency chain).
// GPU targets (one invocation per output element, or per group of 4 / per tile):
//   elementwise:  the innermost output axis by 4 when it divides, so loads and the store of a
//                 contiguous axis become vec4 accesses (lavapipe: scalar 6.4-7 GB/s,
//                 vec4 10.5-13.5).
//   few outputs, long reductions (outputs < 4096, or < 65536 without reuse, < 64 on a device
//                 that runs on the CPU; reduce size >= 256, shared memory): GROUP, one workgroup
//                 of up to 256 lanes per output, fewer where shared memory is short. On a GPU
//                 (TuningProfile::min_invocations), below that many outputs: reductions of 128
//                 steps without reuse (two steps a lane at least), and matmuls (not convolutions)
//                 of 256 over a subgroup's 32 or 64 lanes.
//   other reductions: the innermost reduce axis by 4 where a load runs along it (UNROLL: vec4
//                 loads, one accumulator) (lavapipe, sum 16M: 4.1 -> 9.6 GB/s; softmax 4096^2:
//                 62 -> 47 ms); on a device that runs on the CPU, a pool's short window gives
//                 each invocation 4 neighbouring outputs.
//   matmul-like:  a register tile without shared memory, the innermost output axis by 8 as 2 x 4
//                 where it divides (the 4 innermost: vec4 loads of the reused operand), else by
//                 its largest divisor up to 8, and another output axis by 8 or 4, one that the
//                 loads along the innermost axis ignore where there is one (a matmul's rows, a
//                 conv's output channels, not its output rows: every load then feeds 8
//                 multiply-adds) (lavapipe: naive 2.1 GFLOPS, 4x4 tile 12, 8x8 tile 31; a
//                 matmul's 16 x 4 where the lanes share A's loads,
//                 TuningProfile::share_uniform_loads), on a GPU no larger than leaves it
//                 TuningProfile::min_invocations invocations (a convolution) or a sixteenth of that
//                 (a plain matmul, a short reduction), and for a GPU convolution whose columns
//                 stride through its input (stride 2) along the output channels alone; the
//                 reduction by 4 as above (a matmul's A along k: 0.75 -> 1.0x the hand-written
//                 8x8 shader); then LOCAL lanes along the axes the other operand's loads ignore,
//                 so that its loads are uniform per workgroup (the grid's coordinates), for a
//                 convolution where lanes share such loads through shuffles (lavapipe 22) a
//                 whole subgroup of them (whole_subgroup_lanes); or, on a
//                 GPU with shared tiles (TuningProfile::stage_tiles) and one reduce axis, lanes
//                 along both tiled axes and the reduction staged through shared memory (Opt STAGE;
//                 H100: matmul 2048 18 -> 25 TFLOPS, 1024 15 -> 18, the MLP training step under
//                 Jit 0.52 -> 0.33 ms). On a device that runs on the CPU, a convolution's tile
//                 is filled to 64 values with its rows and its window's short last axis
//                 unrolled. A GPU convolution left with one output per invocation unrolls its
//                 input channels by 8 (by 64 from 512 channels).
// A symbolic axis is never split: no factor divides an unknown size.
#include <algorithm>
#include <optional>

#include "codegen/gemm.hpp"
#include "codegen/linearize.hpp"
#include "codegen/opt.hpp"
#include "codegen/ranges.hpp"

namespace vkgrad {
namespace {

// Outputs that share one evaluation of a kernel's dividing index math (costly_index_math).
constexpr int64_t kSharedIndexValues = 16;
// ... in reductions of at most this many steps (a fold sums a few windows' terms).
constexpr int64_t kSharedIndexMaxSteps = 256;
// Nodes in a kernel short enough to be copied per upcast value on a device that runs on the CPU.
constexpr size_t kShortKernel = 64;

int64_t pick_factor(int64_t size, std::initializer_list<int64_t> options) {
  for (int64_t f : options)
    if (size > f && size % f == 0) return f;
  return 1;
}

std::vector<Opt> c_opts(const UOp& ast, const Target& target) {
  if (const auto plan = plan_gemm(ast, target)) {
    // The weights' transform, once per call, is shared by every image's tiles; each image's
    // own transforms pay from a 16 x 16 output (a training batch of 16 at 16 x 16: 6.4 -> 4.5
    // ms; at 8 x 8 it lost, 6.2 -> 8.1), or from the target's minimum where that is less.
    const int64_t tiles = winograd_tiles(*plan);
    const bool winograd = tiles >= std::min(target.tuning.winograd_min_image_tiles,
                                            target.tuning.winograd_min_tiles) &&
                          tiles * prod_sizes(plan->batch) >= target.tuning.winograd_min_tiles;
    return {{OptOp::GEMM, winograd ? 3 : 0, 0}};
  }
  const RangeInfo info = collect_ranges(ast);
  const int G = static_cast<int>(info.globals.size()), R = static_cast<int>(info.reduces.size());
  if (info.reduces.empty()) {
    // Innermost axes too short for the vectorizer (a conv weight's 3 x 3, as its random
    // initialization writes it) are upcast whole, up to 16 values: straight-line code instead
    // of a 3-trip loop (E_128_128_3_3: 3.5 -> 0.13 ms).
    std::vector<Opt> opts;
    int64_t values = 1;
    for (int g = G - 1; g >= 0; --g) {
      const int64_t n = range_size(info.globals[g]);
      if (n < 2 || n >= 8 || values * n > 16) break;
      opts.push_back({OptOp::UPCAST, g, n});
      values *= n;
    }
    return opts;
  }
  std::vector<Opt> opts;
  // A matrix-vector product (a classifier at batch 1): the matrix read along the reduction,
  // nothing summed along the output axis. A register tile over that axis would read rows a
  // matrix row apart with a scalar multiply-add each; split accumulators along the reduction
  // (below) read vectors (MobileNetV2's r_1000_1280 0.209 -> 0.155 ms in the forward).
  const bool matvec = G > 0 && R == 1 && !summed_contiguous_along(info, info.globals.back()) &&
                      summed_contiguous_along(info, info.reduces.back()) &&
                      range_size(info.reduces.back()) >= 16 * 32;
  if (G > 0 && !matvec) {
    const UOp& last = info.globals.back();
    if (const int64_t f = pick_factor(range_size(last), {32, 16, 8});
        f > 1 && reuses_product(ast, last)) {
      opts.push_back({OptOp::UPCAST, G - 1, f});
      for (int g = G - 2; g >= 0; --g)
        if (const int64_t f2 = pick_factor(range_size(info.globals[g]), {8, 4, 2});
            f2 > 1 && has_reuse(info, info.globals[g])) {
          opts.push_back({OptOp::UPCAST, g, f2});
          break;
        }
    }
  }
  // A reduction whose index math divides (the fold of a window view's gradient back onto its
  // input: a max pool's or a convolution's input gradient) computes it once for 16 outputs
  // along the axes it ignores (channels, batch), upcast: r_16_64_34_34_4_4 34.4 -> 13.1 ms,
  // r_16_64_18_18_4_4 2.5 -> 0.5 (BEAM's lists on a ResNet-18 training step). A long one (a
  // batch norm's sums over a batch's pixels, one term a strided gradient placed at every other
  // pixel) keeps the split accumulators along its contiguous steps: the step's r_64_16_16_16
  // x24 4.4-4.7 -> 2.7-2.9 ms.
  std::vector<UOp> shared;
  if (opts.empty() && prod_sizes(info.reduces) <= kSharedIndexMaxSteps &&
      costly_index_math(ast, info, &shared)) {
    int64_t values = 1;
    for (size_t i = shared.size(); i-- > 0 && values < kSharedIndexValues;) {
      const int64_t n = range_size(shared[i]);
      const int64_t f = n * values <= kSharedIndexValues ? n : pick_factor(n, {16, 8, 4, 2});
      if (f * values > kSharedIndexValues || f < 2) continue;
      const auto g = std::find(info.globals.begin(), info.globals.end(), shared[i]);
      opts.push_back({OptOp::UPCAST, static_cast<int>(g - info.globals.begin()), f});
      values *= f;
    }
    if (!opts.empty()) return opts;
  }
  if (matvec && reuses_product(ast, info.globals.back())) {
    // ... and 8 rows at a time, each loaded vector of the other operand used 8 times: ResNet-50's
    // r_1000_2048 0.55-0.61 -> 0.44-0.49 ms, MobileNetV2's r_1000_1280 0.36-0.38 -> 0.29-0.33
    // with 16 split accumulators on an AVX2 EPYC (BEAM's lists on it and on an AVX-512 Xeon
    // both upcast the rows, by 4 and 8, beside 8 and 32 accumulators).
    if (const int64_t f = pick_factor(range_size(info.globals.back()), {8, 4, 2}); f > 1)
      opts.push_back({OptOp::UPCAST, G - 1, f});
    int64_t u = 2 * target.vector_floats;
    while (u > 1 && range_size(info.reduces.back()) % u != 0) u /= 2;
    if (u > 1) opts.push_back({OptOp::UNROLL, R - 1, u});
    return opts;
  }
  if (opts.empty()) {
    const bool columns = G > 0 && contiguous_along(info, info.globals.back()) &&
                         !contiguous_along(info, info.reduces.back());
    const UOp& axis = columns ? info.globals.back() : info.reduces.back();
    const int64_t size = range_size(axis);
    int64_t f = pick_factor(size, {32, 16, 8});
    while (!columns && f > 8 && size / f < 16) f /= 2;  // 16 steps of the accumulators
    if (f > 1)
      opts.push_back(columns ? Opt{OptOp::UPCAST, G - 1, f} : Opt{OptOp::UNROLL, R - 1, f});
  }
  return opts;
}

// A GPU with shared memory: a matmul-like kernel's register tile of 16 values or more, over its
// innermost output axis and `second`, gets a workgroup of lanes along both (16 x 16 where the
// grid keeps TuningProfile::min_invocations / 512 workgroups, else 8 x 8), and its one reduction is
// staged 16 steps at a time, or 8 where shared memory is short (Opt STAGE after the vec4 UNROLL
// by 4, or alone): each step the workgroup copies its rows' A tile and its columns' B tile into
// shared memory once, where the lanes read them, instead of each lane reading its rows and
// columns from the caches (a 16 x 16 workgroup of 8 x 8 tiles loads each operand element 128
// times less often). Appends to `opts` and says whether it did.
bool stage_tiles_of(const RangeInfo& info, const Target& target, int second,
                    std::vector<int64_t> left, std::vector<Opt>& opts) {
  const int G = static_cast<int>(info.globals.size());
  int64_t values = 1;
  for (const Opt& o : opts) values *= o.amount;
  const int64_t k = range_size(info.reduces[0]);
  if (values < 16 || !target.grid || !target.local_memory || k < 16) return false;
  int64_t invocations = 1;
  for (const int64_t n : left) invocations *= n;
  // The lanes along an axis: the largest count from `most` down to 4 that divides what the tile
  // left of it (16 or 8; 7 for an MLP's 784 columns by 8, where 8 lanes are the most).
  auto lanes_along = [&](int g, int64_t most) {
    for (int64_t d = most; d >= 4; --d)
      if (left[static_cast<size_t>(g)] % d == 0) return d;
    return int64_t{1};
  };
  const int64_t most = invocations / 256 >= target.tuning.min_invocations / 512 ? 16 : 8;
  const int64_t lj = lanes_along(G - 1, most), li = lanes_along(second, most);
  if (lj < 4 || li < 4 || lj * li > target.max_workgroup_invocations) return false;
  const bool vec4 =
      target.vector_floats == 4 && k % 8 == 0 && contiguous_along(info, info.reduces[0]);
  const int64_t steps = vec4 ? k / 4 : k;
  // Both tiles, double-buffered: a stage's steps of the rows' and the columns' values, 4 bytes
  // each. 16 steps of k where they fit, else 8.
  int64_t rows = li, cols = lj;
  for (const Opt& o : opts) (o.axis == G - 1 ? cols : rows) *= o.amount;
  int64_t amount = 0;
  for (const int64_t per_stage : {16, 8}) {
    const int64_t a = vec4 ? per_stage / 4 : per_stage;
    if (steps % a == 0 && steps / a >= 2 &&
        2 * per_stage * (rows + cols) * 4 <= target.max_shared_bytes) {
      amount = a;
      break;
    }
  }
  if (amount == 0) return false;
  if (vec4) opts.push_back({OptOp::UNROLL, 0, 4});
  opts.insert(opts.end(),
              {{OptOp::LOCAL, G - 1, lj}, {OptOp::LOCAL, second, li}, {OptOp::STAGE, 0, amount}});
  return true;
}

// On a target whose lanes share their uniform loads through subgroup shuffles (lavapipe 22), a
// convolution's workgroup (`spatial`: rows as well as columns that the weights ignore) fills
// whole subgroups where the pixel lanes of gpu_opts (`lanes` of them) leave one partial: a late
// stage's 7 or 14 lanes run as 8-wide subgroups with lanes masked off, and fewer lanes share each
// load. Instead:
//   a 1 x 1 convolution (one reduce axis) takes a subgroup's lanes along its output channels
//     (`second`, the register tile's axis that the input's loads ignore), so that the input's
//     loads are the shared ones, else along a pixel axis that divides;
//   a window (3 x 3, 7 x 7) takes them along a pixel axis that divides (56 or 112 rows), else
//     along the output channels where its columns stride through the input (stride 2: gathers,
//     each then loaded once per subgroup) and the pixel lanes would not already span the whole
//     image (a 7 x 7 output, whose channel lanes were slower).
// `second` is -1 where the channels are not offered (a stride-2 3 x 3 whose register tile took
// 4 times the channels instead: gpu_opts).
// lavapipe, each kernel timed in one process against the pixel lanes: ResNet-50's 1 x 1
// convolutions 1.05-1.45x (r_512_28_28_128 0.94x), its stride-2 3 x 3 at 28 x 28 1.30x;
// ResNet-18's 56 x 56 3 x 3 1.24x, the stem 1.16x; MobileNetV2's 1 x 1 1.05-1.7x.
template <typename Eligible>
std::optional<Opt> whole_subgroup_lanes(const RangeInfo& info, const Target& target,
                                        const std::vector<int64_t>& left, int second, int64_t lanes,
                                        int64_t pixels_left, bool spatial,
                                        const Eligible& eligible) {
  const int64_t S = target.subgroup_size;
  const int G = static_cast<int>(info.globals.size());
  if (!target.tuning.share_uniform_loads || S < 2 || lanes % S == 0 || !spatial)
    return std::nullopt;
  const UOp& last = info.globals.back();
  int pixel = -1;
  for (int g = G - 1; g >= 0 && pixel < 0; --g)
    if (g != second && eligible(g) && left[static_cast<size_t>(g)] % S == 0) pixel = g;
  const bool channels = second >= 0 && left[static_cast<size_t>(second)] % S == 0 &&
                        reuses_across(info, last, info.globals[second]);
  if (info.reduces.size() == 1) {
    if (channels) return Opt{OptOp::LOCAL, second, S};
  } else if (pixel < 0 && channels && !summed_contiguous_along(info, last) && pixels_left > lanes) {
    return Opt{OptOp::LOCAL, second, S};
  }
  if (pixel >= 0) return Opt{OptOp::LOCAL, pixel, S};
  return std::nullopt;
}

std::vector<Opt> gpu_opts(const UOp& ast, const Target& target) {
  const RangeInfo info = collect_ranges(ast);
  const int G = static_cast<int>(info.globals.size());
  const int64_t n = G > 0 ? range_size(info.globals.back()) : 0;
  if (info.reduces.empty()) {
    if (n <= 0 || n % 4 != 0) return {};
    std::vector<Opt> opts{{OptOp::UPCAST, G - 1, 4}};
    // A device that runs on the CPU pays for every invocation (lavapipe: a workgroup is a loop
    // of SIMD vectors): 32 values each, in vec4s 16 lanes apart, unless the kernel is a long
    // fused chain (eight copies of it would multiply the compile time and spill registers:
    // lavapipe, 200 fused ops: 35 -> 90 ms cold, 14 -> 18 ms cached).
    if (target.tuning.workgroup_as_loop && target.grid && (n / 4) % 128 == 0 &&
        toposort(ast).size() <= kShortKernel)
      opts.insert(
          opts.end(),
          {{OptOp::LOCAL, G - 1, 16}, {OptOp::UPCAST, G - 1, 4}, {OptOp::UPCAST, G - 1, 2}});
    return opts;
  }
  // The reduction by 4 where a load runs along it: vec4 loads (a matmul's A along k, a row sum).
  auto unroll_by_4 = [&](std::vector<Opt>& opts) {
    const int R = static_cast<int>(info.reduces.size());
    int64_t values = 4;
    for (const Opt& o : opts) values *= o.amount;
    if (target.vector_floats != 4 || R == 0 || values > kMaxUpcast) return;
    if (const int64_t k = range_size(info.reduces.back());
        k > 4 && k % 4 == 0 && contiguous_along(info, info.reduces.back())) {
      opts.push_back({OptOp::UNROLL, R - 1, 4});
      // On a device that runs on the CPU, two vec4 loads per step of a lone reduction.
      if (target.tuning.workgroup_as_loop && opts.size() == 1 && (k / 4) % 2 == 0 && k >= 64)
        opts.push_back({OptOp::UNROLL, R - 1, 2});
    }
  };
  // A device that runs on the CPU has parallelism enough from a few workgroups and pays for
  // every barrier: it groups only reductions to fewer outputs than that. A GPU needs tens of
  // thousands of lanes in flight (TuningProfile::min_invocations): below that many outputs a
  // reduction of 128 steps or more without reuse (softmax's rows, a norm) groups its steps over up
  // to 256 lanes, two steps each at least (H100, softmax 4096^2: 0.57 -> 0.18 ms; the encoder's
  // attention rows of 128: 1.7-2.6x), and a matmul of 256 steps or more over a subgroup's 32
  // (or 64) lanes instead of register tiles its few outputs would leave to a few thousand
  // invocations (the encoder's FFN projections, 128 x 256 outputs: 2-5x, what BEAM found); not
  // a convolution (ResNet-50 under Jit: 3.3 -> 6.4 ms grouped). Without the minimum, matmul-like
  // kernels keep their register tiles from 4096 outputs.
  const bool reused = G > 0 && reuses_product(ast, info.globals.back());
  const bool gpu = !target.tuning.workgroup_as_loop && target.tuning.min_invocations > 0;
  // Several reduce axes, or several output axes and a reduction of 128 or more (an NCHW 1 x 1
  // conv): a convolution, whose register tiles already leave TuningProfile::min_invocations
  // invocations (below).
  const bool conv_like = info.reduces.size() > 1 || (G > 2 && prod_sizes(info.reduces) >= 128);
  const int64_t group_below = gpu && !conv_like ? target.tuning.min_invocations
                              : reused          ? target.tuning.group_reused_below
                                                : target.tuning.group_below;
  const int64_t steps = prod_sizes(info.reduces);
  if (target.local_memory && prod_sizes(info.globals) < group_below &&
      steps >= (gpu && !reused ? 128 : 256) && reductions_span_all_axes(ast)) {
    const int64_t per_lane = group_shared_bytes(ast, 1);
    int64_t lanes = std::min<int64_t>(
        gpu && reused && !conv_like ? std::max<int64_t>(32, target.subgroup_size) : 256,
        target.max_workgroup_invocations);
    while (gpu && !reused && lanes > 2 && lanes * 2 > steps) lanes /= 2;
    while (lanes > 2 && lanes * per_lane > target.max_shared_bytes) lanes /= 2;
    if (lanes >= 2 && lanes * per_lane <= target.max_shared_bytes)
      return {{OptOp::GROUP, 0, lanes}};
  }
  if (!reused) {
    std::vector<Opt> opts;
    // On a device that runs on the CPU, a pool's short window (two reduce axes or more, 64 steps
    // at most) gives each invocation 4 neighbouring outputs where they divide, their windows'
    // loads overlapping (lavapipe, ResNet's 3 x 3 max pool at stride 2: 1.67 -> 1.10 ms, what
    // BEAM found; a global average pool's 7 x 7 is the same either way).
    if (target.tuning.workgroup_as_loop && info.reduces.size() >= 2 && steps <= 64 && n > 0 &&
        n % 4 == 0)
      opts.push_back({OptOp::UPCAST, G - 1, 4});
    unroll_by_4(opts);
    return opts;
  }
  const UOp& last = info.globals.back();
  // An output axis that every load ignoring the innermost axis ignores too (a conv's output
  // pixels, a matmul's columns): lanes along it keep those loads (the weights) uniform.
  auto eligible = [&](int g) {
    return std::all_of(info.load_indices.begin(), info.load_indices.end(), [&](const UOp& idx) {
      return mentions(idx, last) || !mentions(idx, info.globals[g]);
    });
  };
  // Besides the columns, another such axis: a convolution's rows.
  bool spatial = false;
  for (int g = 0; g + 1 < G; ++g) spatial |= eligible(g);
  std::vector<int64_t> left;
  for (const UOp& g : info.globals) left.push_back(range_size(g));
  std::vector<Opt> opts;
  // A GPU must keep its cores busy: the register tile holds at most the values that leave
  // TuningProfile::min_invocations invocations for a convolution-like kernel (several reduce axes,
  // or several output axes and a reduction of 128 or more: an NCHW 1 x 1 conv), a sixteenth of that
  // for a plain matmul or a short reduction, whose operand reuse counts for more. H100, against
  // the full 8 x 8 tiles: ResNet-18 4.9 -> 1.9 ms, ResNet-50 8.3 -> 3.3, the BERT-style encoder
  // 1.47 -> 1.0 (its 32K-output matmuls keep 8 values per invocation; with one they take 1.8x
  // as long); the 7 x 7 x 512 convs had 448 invocations of 8 x 7 outputs, leaving 118 of 132
  // multiprocessors idle.
  const int64_t outputs = prod_sizes(info.globals);
  const int64_t fill =
      conv_like ? target.tuning.min_invocations : target.tuning.min_invocations / 16;
  int64_t tile = kMaxUpcast;  // values per invocation the upcasts may still take
  if (fill > 0 && outputs > 0) tile = std::max<int64_t>(1, outputs / fill);
  auto upcast = [&](int g, int64_t f) {
    opts.push_back({OptOp::UPCAST, g, f});
    left[static_cast<size_t>(g)] /= f;
    tile /= f;
  };
  // The second axis: preferably one that the loads along the innermost axis ignore (a conv's
  // output channels, a matmul's rows), so that both operands are reused; else any with reuse.
  auto factor = [&](int g) {
    const int64_t m = range_size(info.globals[g]);
    return m <= 0 ? 1 : m % 8 == 0 && tile >= 8 ? 8 : m % 4 == 0 && tile >= 4 ? 4 : 1;
  };
  auto across = [&] {
    for (int g = G - 2; g >= 0; --g)
      if (factor(g) > 1 && reuses_across(info, last, info.globals[g])) return g;
    return -1;
  };
  // A GPU convolution whose innermost output axis strides through its input (a stride-2 1 x 1,
  // the stem's 7 x 7 at stride 2) gains no vec4 loads from a tile along it, each input value
  // loaded feeding one multiply-add: the tile goes to the output channels alone, each input load
  // then feeding as many. Only the loads inside the sum decide (ResNet-50's stride-2 shortcut
  // adds the block's residual, read along the columns once per output). H100, in the forward:
  // r_512_28_28_256 0.133 -> 0.034 ms (BEAM had found the channels' tile), the stem
  // r_64_112_112_3_7_7 0.096 -> 0.041; ResNet-50 under Jit 2.95 / 2.92 -> 2.80 / 2.80 ms.
  const bool strided = gpu && conv_like && across() >= 0 && !summed_contiguous_along(info, last);
  // Where a workgroup's lanes share its uniform loads through shuffles (lavapipe 22), a matmul's
  // rows of A cost a lane little: its tile is 16 rows by 4 columns instead of 8 by 8, half the
  // per-lane loads of B for the same multiply-adds (lavapipe, in one process: the encoder's
  // matmuls 1.10-1.26x, attention's scores 1.11-1.17x, matmul 512 and 1024 1.1-1.15x). Only a
  // matmul or a batch of them: besides the columns, one output axis that a load ignores, not a
  // convolution's two (its channels and rows: MobileNetV2's 1 x 1 convolutions lost 5-30%).
  auto partial_axes = [&] {
    return std::count_if(info.globals.begin(), info.globals.end() - 1, [&](const UOp& g) {
      return std::any_of(info.load_indices.begin(), info.load_indices.end(),
                         [&](const UOp& idx) { return !mentions(idx, g); });
    });
  };
  const bool tall = target.tuning.share_uniform_loads && !conv_like && partial_axes() <= 1;
  if (!strided && n > 0 && n % 4 == 0 && tile >= 4) {
    upcast(G - 1, 4);
    if (n % 8 == 0 && tile >= 2 && !tall) upcast(G - 1, 2);
  } else if (int64_t f = std::min<int64_t>({n, 8, tile}); !strided && n > 0) {
    // No vec4 access: the largest divisor up to 8 (a late ResNet stage's 7 or 14 columns by 7),
    // still a register tile.
    while (f > 2 && n % f != 0) --f;
    if (f > 2) upcast(G - 1, f);
  }
  int second = across();
  for (int g = G - 2; g >= 0 && second < 0 && !opts.empty(); --g)
    if (factor(g) > 1 && has_reuse(info, info.globals[g])) second = g;
  if (second >= 0)
    upcast(second,
           tall && range_size(info.globals[second]) % 16 == 0 && tile >= 16 ? 16 : factor(second));
  // A GPU convolution too small for any tile (one invocation per output, a late ResNet stage's
  // 7 x 7 or 14 x 14) unrolls its input channels by 8, by 64 where there are 512 or more:
  // independent accumulators and loads instead of one chain of thousands of multiply-adds
  // (H100, what BEAM found: r_512_7_7_512_3_3 0.150 -> 0.096 ms, r_256_14_14_256_3_3 0.302 ->
  // 0.259).
  if (gpu && conv_like && opts.empty()) {
    const int64_t c = range_size(info.reduces[0]);
    if (c >= 64 && c % 8 == 0) opts.push_back({OptOp::UNROLL, 0, 8});
    if (c >= 512 && c % 64 == 0) opts.push_back({OptOp::UNROLL, 0, 8});
    return opts;
  }
  if (second >= 0 && target.tuning.stage_tiles && info.reduces.size() == 1) {
    std::vector<Opt> staged = opts;
    if (stage_tiles_of(info, target, second, left, staged)) return staged;
  }
  // A device that runs on the CPU keeps a convolution's tile at 64 values where its columns give
  // only 4 (its loads are gathers: each feeds more multiply-adds), with a third output axis by
  // 2 (the rows), and unrolls the window's short last axis, whose loads then overlap the
  // neighbouring columns' (lavapipe, ResNet-18's r_128_28_28_128_3_3: 26.5 -> 16-18 ms). Where
  // the lanes share uniform loads through shuffles, a 1 x 1 convolution's tile too (what BEAM
  // found for ResNet-50's at 28 x 28: 1.18-1.33x each, in one process).
  bool strided_window = false;  // a stride-2 window's channel tile taken 4 times (below)
  if (target.tuning.workgroup_as_loop && second >= 0 &&
      (info.reduces.size() > 1 || (target.tuning.share_uniform_loads && spatial))) {
    int64_t values = 1;
    for (const Opt& o : opts) values *= o.amount;
    for (int g = G - 2; g >= 0 && values <= 32; --g)
      if (g != second && left[static_cast<size_t>(g)] % 2 == 0 &&
          has_reuse(info, info.globals[g])) {
        upcast(g, 2);
        values *= 2;
      }
    const int R = static_cast<int>(info.reduces.size());
    const int64_t k = range_size(info.reduces.back());
    // Where the lanes share uniform loads through shuffles, a 3 x 3 window whose columns stride
    // through its input (stride 2: each input load a gather that feeds its own column only)
    // takes 4 times the output channels instead of unrolling the window's last axis: each gather
    // then feeds 4 times the multiply-adds. Its lanes go to the pixels: whole_subgroup_lanes is
    // not offered the channels (lavapipe, what BEAM found, each kernel timed in one process
    // against the unrolled list: ResNet's stride-2 3 x 3s at 28 x 28 1.23-1.31x, 14 x 14 1.31x,
    // 7 x 7 1.07-1.10x; MobileNetV2's stem 1.52x; at stride 1 the same tile is 0.94-1.01x).
    strided_window = target.tuning.share_uniform_loads && R > 1 && k <= 3 &&
                     values * 4 <= kMaxUpcast && left[static_cast<size_t>(second)] % 4 == 0 &&
                     !summed_contiguous_along(info, last) &&
                     reuses_across(info, last, info.globals[second]);
    if (strided_window) upcast(second, 4);
    // Where the lanes share uniform loads through shuffles, a wider window's last axis (a stem's
    // 7) is unrolled too, the channels' tile halved until the values fit (lavapipe, ResNet's
    // 7 x 7 stem: 19.0 -> 11.2 ms in one process; what BEAM found, 13.9, was near).
    if (target.tuning.share_uniform_loads && R > 1 && k > 3 && k <= 7)
      for (Opt& o : opts)
        while (o.op == OptOp::UPCAST && o.axis == second && o.amount % 2 == 0 &&
               values * k > kMaxUpcast) {
          o.amount /= 2;
          values /= 2;
          left[static_cast<size_t>(second)] *= 2;
        }
    if (!strided_window && k > 1 && k <= (target.tuning.share_uniform_loads && R > 1 ? 7 : 3) &&
        values * k <= kMaxUpcast)
      opts.push_back({OptOp::UNROLL, R - 1, k});
  }
  if (!opts.empty()) unroll_by_4(opts);
  if (opts.empty() || !target.grid) return opts;
  // The workgroup: lanes along the axes that every load ignoring the innermost axis ignores too
  // (a conv's output pixels, a matmul's columns), innermost first, up to 64 lanes, so that
  // those loads (the weights) are uniform across the workgroup: the reused axes stay on the grid.
  // A device that runs on the CPU takes lanes along one axis only, one with 4 or more where
  // there is one (lavapipe, ResNet-18's 14 x 14 convs after the columns' tile by 7: 2.4 GFLOPS
  // with 28 lanes over columns and rows, 4.4 with the columns' 2 lanes, 9.3 with the rows' 14).
  int64_t lanes = 1;
  const int64_t budget = std::min<int64_t>(64, target.max_workgroup_invocations);
  const int max_dims = target.tuning.workgroup_as_loop ? 1 : 3;
  int64_t least = 2;
  if (target.tuning.workgroup_as_loop)
    for (int g = 0; g < G; ++g)
      if (eligible(g) && left[static_cast<size_t>(g)] >= 4) least = 4;
  int dims = 0;
  std::vector<Opt> pixels;
  int64_t pixels_left = 1;  // the eligible axes' values per invocation tile, over the whole grid
  for (int g = G - 1; g >= 0; --g) {
    const int64_t m = left[static_cast<size_t>(g)];
    if (eligible(g)) pixels_left *= m;
    if (!eligible(g) || m < least || dims >= max_dims) continue;
    int64_t d = std::min(m, budget / lanes);
    while (d > 1 && m % d != 0) --d;
    if (d < 2) continue;
    pixels.push_back({OptOp::LOCAL, g, d});
    lanes *= d;
    ++dims;
  }
  if (const std::optional<Opt> whole =
          whole_subgroup_lanes(info, target, left, strided_window ? -1 : second, lanes, pixels_left,
                               spatial, eligible)) {
    opts.push_back(*whole);
    return opts;
  }
  opts.insert(opts.end(), pixels.begin(), pixels.end());
  return opts;
}
}  // namespace

std::vector<Opt> heuristic_opts(const UOp& ast, const Target& target) {
  return target.threads ? gpu_opts(ast, target) : c_opts(ast, target);
}

}  // namespace vkgrad
