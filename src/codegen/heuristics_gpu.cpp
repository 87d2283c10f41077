// codegen: the heuristics' rules for threads targets (heuristics.cpp lists them in order). Where
// the profile says a workgroup runs as a loop of SIMD vectors (TuningProfile::workgroup_as_loop),
// every invocation and barrier costs and a few workgroups keep the device busy; elsewhere a GPU
// needs TuningProfile::min_invocations in flight.
#include <algorithm>

#include "codegen/heuristics.hpp"
#include "codegen/ranges.hpp"

namespace vkgrad::heuristics {
namespace {

// Nodes of a kernel short enough to be copied per upcast value where a workgroup runs as a loop.
constexpr size_t kShortKernel = 64;
// Reduce steps a grouped reduction needs at least: without reuse on a GPU, and otherwise.
constexpr int64_t kGpuGroupMinSteps = 128;
constexpr int64_t kGroupMinSteps = 256;
// Lanes of a grouped reduction at most, and a grouped matmul's on a GPU at least (a subgroup).
constexpr int64_t kGroupLanes = 256;
constexpr int64_t kGroupMatmulLanes = 32;
// Lanes of a workgroup at most (workgroup_lanes).
constexpr int64_t kMaxLanes = 64;

// A GPU that wants invocations in flight (not a device whose workgroups run as loops).
bool is_gpu(const Kernel& k) { return !k.tuning.workgroup_as_loop && k.tuning.min_invocations > 0; }
// Several reduce axes, or several output axes and a reduction of 128 or more (an NCHW 1 x 1
// convolution): convolution-like.
bool conv_like(const Kernel& k) {
  return k.R > 1 || (k.G > 2 && prod_sizes(k.info.reduces) >= 128);
}
int64_t columns_of(const Kernel& k) { return k.G > 0 ? k.size(k.G - 1) : 0; }

// The innermost reduction by 4 where a load runs along it: vec4 loads (a matmul's A along k, a
// row sum), within kMaxUpcast values. Where a workgroup runs as a loop, a lone reduction takes
// two vec4 loads a step.
void reduce_vec4(const Kernel& k, std::vector<Opt>& opts) {
  if (k.target.vector_floats != 4 || k.R == 0 || 4 * values_of(opts) > kMaxUpcast) return;
  const int64_t n = k.reduce_size(k.R - 1);
  if (n <= 4 || n % 4 != 0 || !contiguous_along(k.info, k.info.reduces.back())) return;
  opts.push_back({OptOp::UNROLL, k.R - 1, 4});
  if (k.tuning.workgroup_as_loop && opts.size() == 1 && (n / 4) % 2 == 0 && n >= 64)
    opts.push_back({OptOp::UNROLL, k.R - 1, 2});
}

}  // namespace

// An elementwise kernel: the innermost output axis by 4 where it divides, so that its loads and
// the store become vec4 accesses. Where a workgroup runs as a loop, 32 values an invocation in
// vec4s 16 lanes apart, unless the kernel is a long fused chain (eight copies of it would
// multiply the compile time and spill registers).
Answer elementwise_vectors(const Kernel& k) {
  if (k.R > 0) return std::nullopt;
  const int64_t n = columns_of(k);
  if (n <= 0 || n % 4 != 0) return std::vector<Opt>{};
  std::vector<Opt> opts{{OptOp::UPCAST, k.G - 1, 4}};
  if (k.tuning.workgroup_as_loop && k.target.grid && (n / 4) % 128 == 0 &&
      toposort(k.ast).size() <= kShortKernel)
    opts.insert(
        opts.end(),
        {{OptOp::LOCAL, k.G - 1, 16}, {OptOp::UPCAST, k.G - 1, 4}, {OptOp::UPCAST, k.G - 1, 2}});
  return opts;
}

// Few outputs and a long reduction: a workgroup of lanes per output, folding their partial
// results in shared memory (Opt GROUP), 256 lanes at most, fewer where shared memory is short.
// The profile says below how many outputs (where a workgroup runs as a loop, only a few dozen,
// as its barriers cost). A GPU (min_invocations) groups below that many outputs a reduction of
// 128 steps or more without reuse (softmax's rows, a norm), two steps a lane at least, and a
// matmul of 256 steps or more over a subgroup's lanes, whose register tiles would leave too few
// invocations; not a convolution, whose tiles keep the invocations (matmul_tile).
Answer grouped_reduction(const Kernel& k) {
  const bool reuse = k.reuses_columns(), gpu = is_gpu(k), conv = conv_like(k);
  const int64_t below = gpu && !conv ? k.tuning.min_invocations
                        : reuse      ? k.tuning.group_reused_below
                                     : k.tuning.group_below;
  const int64_t steps = prod_sizes(k.info.reduces);
  if (!k.target.local_memory || prod_sizes(k.info.globals) >= below ||
      steps < (gpu && !reuse ? kGpuGroupMinSteps : kGroupMinSteps) ||
      !reductions_span_all_axes(k.ast))
    return std::nullopt;
  const int64_t per_lane = group_shared_bytes(k.ast, 1);
  const int64_t shared = k.target.max_shared_bytes;
  int64_t lanes = std::min<int64_t>(
      gpu && reuse && !conv ? std::max<int64_t>(kGroupMatmulLanes, k.target.subgroup_size)
                            : kGroupLanes,
      k.target.max_workgroup_invocations);
  while (gpu && !reuse && lanes > 2 && lanes * 2 > steps) lanes /= 2;
  while (lanes > 2 && lanes * per_lane > shared) lanes /= 2;
  if (lanes < 2 || lanes * per_lane > shared) return std::nullopt;
  return std::vector<Opt>{{OptOp::GROUP, 0, lanes}};
}

// A reduction that reuses no loaded operand across its outputs: vec4 loads along it
// (reduce_vec4). Where a workgroup runs as a loop, a pool's short window (two reduce axes or
// more, 64 steps at most) gives each invocation 4 neighbouring outputs, their windows' loads
// overlapping.
Answer plain_reduction(const Kernel& k) {
  if (k.reuses_columns()) return std::nullopt;
  std::vector<Opt> opts;
  const int64_t n = columns_of(k);
  if (k.tuning.workgroup_as_loop && k.R >= 2 && prod_sizes(k.info.reduces) <= 64 && n > 0 &&
      n % 4 == 0)
    opts.push_back({OptOp::UPCAST, k.G - 1, 4});
  reduce_vec4(k, opts);
  return opts;
}

namespace {

// A matmul-like kernel's tile as matmul_tile's stages build it.
struct Tile {
  explicit Tile(const Kernel& kernel);
  const Kernel& k;
  const bool gpu, conv;
  bool spatial = false;         // an output axis besides the columns is eligible: a conv's rows
  bool tall = false;            // tall_matmul: rows of A cost a lane little
  bool strided_window = false;  // a stride-2 window's channel tile taken 4 times
  std::vector<int64_t> left;    // each output axis' size left to the grid
  std::vector<Opt> opts;
  int64_t tile = kMaxUpcast;  // values per invocation the upcasts may still take
  int second = -1;            // the tile's second axis

  void upcast(int g, int64_t f) {
    opts.push_back({OptOp::UPCAST, g, f});
    left[static_cast<size_t>(g)] /= f;
    tile /= f;
  }
  // Every load that ignores the innermost axis ignores g too (a conv's output pixels, a
  // matmul's columns): lanes along g keep those loads (the weights) uniform.
  bool eligible(int g) const {
    const UOp& last = k.last();
    return std::all_of(k.info.load_indices.begin(), k.info.load_indices.end(), [&](const UOp& idx) {
      return mentions(idx, last) || !mentions(idx, k.info.globals[g]);
    });
  }
  // A second axis' factor: 8 or 4 where it divides and the tile has room.
  int64_t factor(int g) const {
    const int64_t m = k.size(g);
    return m <= 0 ? 1 : m % 8 == 0 && tile >= 8 ? 8 : m % 4 == 0 && tile >= 4 ? 4 : 1;
  }
  // An axis that the loads along the innermost axis ignore (a conv's output channels, a
  // matmul's rows), so that both operands are reused, innermost first; or -1.
  int across() const {
    for (int g = k.G - 2; g >= 0; --g)
      if (factor(g) > 1 && reuses_across(k.info, k.last(), k.info.globals[g])) return g;
    return -1;
  }
};

Tile::Tile(const Kernel& kernel) : k(kernel), gpu(is_gpu(kernel)), conv(conv_like(kernel)) {
  for (int g = 0; g + 1 < k.G; ++g) spatial |= eligible(g);
  for (const UOp& g : k.info.globals) left.push_back(range_size(g));
  // A GPU must keep its cores busy: the register tile holds at most the values that leave
  // min_invocations invocations for a convolution-like kernel, a sixteenth of that for a plain
  // matmul or a short reduction, whose operand reuse counts for more.
  const int64_t outputs = prod_sizes(k.info.globals);
  const int64_t fill = conv ? k.tuning.min_invocations : k.tuning.min_invocations / 16;
  if (fill > 0 && outputs > 0) tile = std::max<int64_t>(1, outputs / fill);
}

// Besides the columns, output axes that some load ignores: a matmul or a batch of them has one,
// a convolution two (its channels and rows).
int64_t partial_axes(const Kernel& k) {
  return std::count_if(k.info.globals.begin(), k.info.globals.end() - 1, [&](const UOp& g) {
    return std::any_of(k.info.load_indices.begin(), k.info.load_indices.end(),
                       [&](const UOp& idx) { return !mentions(idx, g); });
  });
}

// The tile's columns: the innermost output axis by 8 as 2 x 4 where it divides (the 4 innermost:
// vec4 loads of the reused operand), else by its largest divisor up to 8. Not on a GPU
// convolution whose columns stride through its input (each input load then feeds one
// multiply-add: the tile goes to the output channels alone; only the loads inside the sum
// decide). Where lanes share uniform loads (tall), a matmul's tile is 16 rows by 4 columns: a
// row of A costs a lane little, and each lane loads half as much of B.
void tile_columns(Tile& t) {
  const Kernel& k = t.k;
  const int64_t n = k.size(k.G - 1);
  const bool strided =
      t.gpu && t.conv && t.across() >= 0 && !summed_contiguous_along(k.info, k.last());
  t.tall = k.tuning.share_uniform_loads && !t.conv && partial_axes(k) <= 1;
  if (!strided && n > 0 && n % 4 == 0 && t.tile >= 4) {
    t.upcast(k.G - 1, 4);
    if (n % 8 == 0 && t.tile >= 2 && !t.tall) t.upcast(k.G - 1, 2);
  } else if (int64_t f = std::min<int64_t>({n, 8, t.tile}); !strided && n > 0) {
    while (f > 2 && n % f != 0) --f;
    if (f > 2) t.upcast(k.G - 1, f);
  }
}

// The tile's second axis: one that the loads along the columns ignore (across), else any with
// reuse once the columns took a tile; by 8 or 4, or 16 for a tall matmul tile.
void tile_second_axis(Tile& t) {
  const Kernel& k = t.k;
  t.second = t.across();
  for (int g = k.G - 2; g >= 0 && t.second < 0 && !t.opts.empty(); --g)
    if (t.factor(g) > 1 && has_reuse(k.info, k.info.globals[g])) t.second = g;
  if (t.second < 0) return;
  const bool sixteen = t.tall && k.size(t.second) % 16 == 0 && t.tile >= 16;
  t.upcast(t.second, sixteen ? 16 : t.factor(t.second));
}

// A GPU convolution too small for any tile (one invocation per output) unrolls its input
// channels by 8, by 64 where there are 512 or more: independent accumulators and loads instead
// of one chain of thousands of multiply-adds.
std::vector<Opt> conv_channel_unroll(const Kernel& k) {
  const int64_t c = k.reduce_size(0);
  std::vector<Opt> opts;
  if (c >= 64 && c % 8 == 0) opts.push_back({OptOp::UNROLL, 0, 8});
  if (c >= 512 && c % 64 == 0) opts.push_back({OptOp::UNROLL, 0, 8});
  return opts;
}

// Where the profile stages tiles (a GPU with shared memory): a register tile of 16 values or
// more over the columns and the second axis gets a workgroup of lanes along both (16 x 16 where
// the grid keeps min_invocations / 512 workgroups, else 8 x 8), and its one reduction is staged
// 16 steps at a time, or 8 where shared memory is short (Opt STAGE after the vec4 UNROLL by 4, or
// alone): each step the workgroup copies its rows' and its columns' operand tiles into shared
// memory once, where the lanes read them.
Answer staged_tiles(const Tile& t) {
  const Kernel& k = t.k;
  const int64_t n = k.R == 1 ? k.reduce_size(0) : 0;
  if (t.second < 0 || !k.tuning.stage_tiles || k.R != 1 || values_of(t.opts) < 16 ||
      !k.target.grid || !k.target.local_memory || n < 16)
    return std::nullopt;
  int64_t invocations = 1;
  for (const int64_t m : t.left) invocations *= m;
  // The lanes along an axis: the largest count from `most` down to 4 that divides what the tile
  // left of it.
  auto lanes_along = [&](int g, int64_t most) {
    for (int64_t d = most; d >= 4; --d)
      if (t.left[static_cast<size_t>(g)] % d == 0) return d;
    return int64_t{1};
  };
  const int64_t most = invocations / 256 >= k.tuning.min_invocations / 512 ? 16 : 8;
  const int64_t lj = lanes_along(k.G - 1, most), li = lanes_along(t.second, most);
  if (lj < 4 || li < 4 || lj * li > k.target.max_workgroup_invocations) return std::nullopt;
  const bool vec4 =
      k.target.vector_floats == 4 && n % 8 == 0 && contiguous_along(k.info, k.info.reduces[0]);
  const int64_t steps = vec4 ? n / 4 : n;
  // Both tiles, double-buffered: a stage's steps of the rows' and the columns' values, 4 bytes
  // each; 16 steps of k where they fit, else 8.
  int64_t rows = li, cols = lj;
  for (const Opt& o : t.opts) (o.axis == k.G - 1 ? cols : rows) *= o.amount;
  int64_t amount = 0;
  for (const int64_t per_stage : {16, 8}) {
    const int64_t a = vec4 ? per_stage / 4 : per_stage;
    if (steps % a == 0 && steps / a >= 2 &&
        2 * per_stage * (rows + cols) * 4 <= k.target.max_shared_bytes) {
      amount = a;
      break;
    }
  }
  if (amount == 0) return std::nullopt;
  std::vector<Opt> opts = t.opts;
  if (vec4) opts.push_back({OptOp::UNROLL, 0, 4});
  opts.insert(
      opts.end(),
      {{OptOp::LOCAL, k.G - 1, lj}, {OptOp::LOCAL, t.second, li}, {OptOp::STAGE, 0, amount}});
  return opts;
}

// Where a workgroup runs as a loop, a convolution's tile (or, where lanes share uniform loads, a
// 1 x 1 convolution's) grows to 64 values with a third output axis by 2 (its loads are gathers:
// each then feeds more multiply-adds), and the window's short last axis is unrolled, its loads
// overlapping the neighbouring columns'. Where lanes share uniform loads, a 3 x 3 window whose
// columns stride through its input takes 4 times the output channels instead of the unrolled
// window, and a wider window's last axis (7) is unrolled, the channels' tile halved to fit.
void loop_conv_tile(Tile& t) {
  const Kernel& k = t.k;
  const bool share = k.tuning.share_uniform_loads;
  if (!k.tuning.workgroup_as_loop || t.second < 0 || !(k.R > 1 || (share && t.spatial))) return;
  int64_t values = values_of(t.opts);
  for (int g = k.G - 2; g >= 0 && values <= 32; --g)
    if (g != t.second && t.left[static_cast<size_t>(g)] % 2 == 0 &&
        has_reuse(k.info, k.info.globals[g])) {
      t.upcast(g, 2);
      values *= 2;
    }
  const int64_t w = k.reduce_size(k.R - 1);
  t.strided_window = share && k.R > 1 && w <= 3 && values * 4 <= kMaxUpcast &&
                     t.left[static_cast<size_t>(t.second)] % 4 == 0 &&
                     !summed_contiguous_along(k.info, k.last()) &&
                     reuses_across(k.info, k.last(), k.info.globals[t.second]);
  if (t.strided_window) t.upcast(t.second, 4);
  if (share && k.R > 1 && w > 3 && w <= 7)
    for (Opt& o : t.opts)
      while (o.op == OptOp::UPCAST && o.axis == t.second && o.amount % 2 == 0 &&
             values * w > kMaxUpcast) {
        o.amount /= 2;
        values /= 2;
        t.left[static_cast<size_t>(t.second)] *= 2;
      }
  if (!t.strided_window && w > 1 && w <= (share && k.R > 1 ? 7 : 3) && values * w <= kMaxUpcast)
    t.opts.push_back({OptOp::UNROLL, k.R - 1, w});
}

// Where lanes share uniform loads through shuffles, a convolution's workgroup (`spatial`) fills
// whole subgroups where the pixel lanes (`lanes` of them) leave one partial, masked lanes then
// sharing nothing: a 1 x 1 convolution takes a subgroup's lanes along its output channels (the
// second axis, which the input's loads ignore), so that the input's loads are the shared ones;
// a window takes them along a pixel axis that divides, else along the output channels where its
// columns stride through the input (each gather then loaded once per subgroup) and the pixel
// lanes would not already span the whole image. `second` is -1 where the channels are not
// offered (a stride-2 window whose tile took 4 times the channels).
std::optional<Opt> whole_subgroup_lanes(const Tile& t, int second, int64_t lanes,
                                        int64_t pixels_left) {
  const Kernel& k = t.k;
  const int64_t S = k.target.subgroup_size;
  if (!k.tuning.share_uniform_loads || S < 2 || lanes % S == 0 || !t.spatial) return std::nullopt;
  int pixel = -1;
  for (int g = k.G - 1; g >= 0 && pixel < 0; --g)
    if (g != second && t.eligible(g) && t.left[static_cast<size_t>(g)] % S == 0) pixel = g;
  const bool channels = second >= 0 && t.left[static_cast<size_t>(second)] % S == 0 &&
                        reuses_across(k.info, k.last(), k.info.globals[second]);
  if (k.R == 1) {
    if (channels) return Opt{OptOp::LOCAL, second, S};
  } else if (pixel < 0 && channels && !summed_contiguous_along(k.info, k.last()) &&
             pixels_left > lanes) {
    return Opt{OptOp::LOCAL, second, S};
  }
  if (pixel >= 0) return Opt{OptOp::LOCAL, pixel, S};
  return std::nullopt;
}

// The workgroup: lanes along the eligible axes (every load ignoring the columns ignores them too:
// a conv's output pixels, a matmul's columns), innermost first, up to 64 lanes, so that those
// loads (the weights) are uniform across the workgroup while the reused axes stay on the grid.
// Where a workgroup runs as a loop, lanes go along one axis only, one with 4 or more where there
// is one; where lanes share uniform loads, whole subgroups of them (whole_subgroup_lanes).
void workgroup_lanes(Tile& t) {
  const Kernel& k = t.k;
  const bool loop = k.tuning.workgroup_as_loop;
  const int64_t budget = std::min<int64_t>(kMaxLanes, k.target.max_workgroup_invocations);
  int64_t least = 2, lanes = 1, pixels_left = 1;  // the eligible axes' values over the grid
  if (loop)
    for (int g = 0; g < k.G; ++g)
      if (t.eligible(g) && t.left[static_cast<size_t>(g)] >= 4) least = 4;
  int dims = 0;
  std::vector<Opt> pixels;
  for (int g = k.G - 1; g >= 0; --g) {
    const int64_t m = t.left[static_cast<size_t>(g)];
    if (t.eligible(g)) pixels_left *= m;
    if (!t.eligible(g) || m < least || dims >= (loop ? 1 : 3)) continue;
    int64_t d = std::min(m, budget / lanes);
    while (d > 1 && m % d != 0) --d;
    if (d < 2) continue;
    pixels.push_back({OptOp::LOCAL, g, d});
    lanes *= d;
    ++dims;
  }
  if (const std::optional<Opt> whole =
          whole_subgroup_lanes(t, t.strided_window ? -1 : t.second, lanes, pixels_left)) {
    t.opts.push_back(*whole);
    return;
  }
  t.opts.insert(t.opts.end(), pixels.begin(), pixels.end());
}

}  // namespace

// A matmul-like kernel (a loaded factor of a summed product ignores the columns): a register
// tile without shared memory over the columns and a second axis (tile_columns,
// tile_second_axis), then, in order: a GPU convolution left without a tile unrolls its channels;
// staged tiles where the profile stages them; a grown convolution tile where a workgroup runs as
// a loop; the reduction by 4 for vec4 loads; the workgroup's lanes on a grid.
Answer matmul_tile(const Kernel& k) {
  Tile t(k);
  tile_columns(t);
  tile_second_axis(t);
  if (t.gpu && t.conv && t.opts.empty()) return conv_channel_unroll(k);
  if (Answer staged = staged_tiles(t)) return staged;
  loop_conv_tile(t);
  if (!t.opts.empty()) reduce_vec4(k, t.opts);
  if (!t.opts.empty() && k.target.grid) workgroup_lanes(t);
  return t.opts;
}

}  // namespace vkgrad::heuristics
