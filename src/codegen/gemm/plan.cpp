// codegen: the GEMM plan (see plan.hpp). The blocking follows BLIS: an mr x nr register tile
// (nr two vectors wide, or four where that pads no more columns; mr TuningProfile::gemm_rows, or
// what the rest of the register file holds, keeping a few registers for B's vectors and addresses;
// the rows are then spread evenly over the panels), k blocks of kc that keep one B micro panel
// (kc x nr) in L1, A blocks of mc x kc in a quarter of L2, and B packed for all of k in blocks
// of up to nc columns within the target's panel budget. On AVX-512 (32 registers of 16 floats,
// 32 KiB L1, 384 KiB of L2 per block) that is a 12 x 32 tile, kc 256 and mc 96, or 6 x 64 and
// kc 128; at 2048^3 one thread took 92 ms with 1 MiB B blocks, 80 with 2, 76 with 4, 83 with 8.
#include "codegen/gemm/plan.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>

#include "codegen/ranges.hpp"
#include "ir/interp.hpp"
#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

// The largest dilation a window copy serves (a DeepLab's atrous convolutions go to 4 or 8; past
// that a tap row lies further from the next than the plane's rows are long).
constexpr int64_t kMaxDilation = 16;
// Fewer output columns (rows) than this take the batch ranges their operand owns into the
// columns (rows).
constexpr int64_t kMinColumns = 64, kMinRows = 32;
// Below this many multiply-adds the plain register tile is as fast and compiles quicker.
constexpr int64_t kGemmMinWork = int64_t{1} << 20;
// A batch this long is split across threads (a few CPUs, each given several batch elements).
constexpr int64_t kGemmMinSplitBatch = 8;
// B's strip of nr columns over all of k may take this many times TuningProfile::panel_bytes.
constexpr int64_t kMaxStripScale = 16;
// A is read where it lies (GemmPlan::a_rows) when at most this many strips of columns, two
// vectors wide, would reuse a packed copy: packing moves an element of A per 2 N flops, a scalar
// gather of a transpose, a fifth of a 14 x 14 convolution's time (8 strips: N <= 256 on AVX-512).
constexpr int64_t kMaxStripsInPlace = 8;

// Floats rounded up to whole 64-byte parts of the scratch.
int64_t part(int64_t floats) { return (floats + 15) / 16 * 16; }

// The threads split `split` (of M rows, N columns or the first batch range): the work items.
void split_threads(GemmPlan& p, GemmSplit split, int64_t M, int64_t N) {
  p.split = split;
  p.step = split == GemmSplit::columns ? p.nr : split == GemmSplit::rows ? p.mr : 1;
  p.share = split == GemmSplit::columns ? N : split == GemmSplit::rows ? M : range_size(p.batch[0]);
  p.parallel = (p.share + p.step - 1) / p.step;
}

struct Blocking {
  int64_t vector, mr, nr, panel_floats, max_nc;
};

Blocking blocking(const Target& t) {
  Blocking b;
  b.vector = t.vector_floats;
  b.nr = 2 * b.vector;
  b.mr = t.tuning.gemm_rows > 0 ? t.tuning.gemm_rows
                                : std::max<int64_t>(1, (t.vector_registers - 8) / 2);
  b.panel_floats = t.tuning.panel_bytes / 4;
  b.max_nc = 32 * b.nr;
  return b;
}

// The index of `a` at k = 0 when `a` is an ungated float32 load whose index steps by one along
// the flattened k ranges (row-major), else null.
UOp rows_in_place(const UOp& a, const std::vector<UOp>& k) {
  if (a.op() != Ops::LOAD || a.dtype() != dtypes::float32 || a.src(0).src().size() != 2) return {};
  UOp flat = UOp::const_(dtypes::index, int64_t{0}),
      stride = UOp::const_(dtypes::index, int64_t{1});
  for (size_t i = k.size(); i-- > 0;) {
    flat = flat + k[i] * stride;
    stride = UOp::const_(dtypes::index, std::get<int64_t>(stride.const_value()) * range_size(k[i]));
  }
  const UOp rest = simplify(a.src(0).src(1) - flat);
  for (const UOp& r : k)
    if (mentions(rest, r)) return {};
  return rest;
}

// Whether b reads its input at s * out + d * tap (s or d 1) and nowhere else along out and tap,
// over out's and tap's ranges. The scheduler's simplify has rewritten b's masks with their ranges'
// bounds (a pad's 2 * y + ky < 1 became y + ky < 1, true at the same points but no longer a
// function of 2 * y + ky), so each comparison that mentions out or tap is checked at every point of
// the two ranges (it must mention no other range, and agree wherever s * out + d * tap does); the
// rest of b, with those comparisons held fixed, must come back unchanged when out steps by d and
// tap by -s.
bool slides(const UOp& b, const UOp& out, const UOp& tap, int64_t s, int64_t d) {
  const int64_t n_out = range_size(out), n_tap = range_size(tap);
  std::unordered_map<UOp, UOp, UOpHash> fixed;
  for (const UOp& u : toposort(b)) {
    // Index math only: a comparison of loaded values depends on out and tap through its loads'
    // indices, which the structural check covers.
    if (!is_comparison(u.op()) || u.src(0).dtype() != dtypes::index ||
        !(mentions(u, out) || mentions(u, tap)))
      continue;
    for (const UOp& r : toposort(u))
      if (r.op() == Ops::RANGE && r != out && r != tap) return false;
    std::unordered_map<int64_t, ConstValue> at;  // by s * out + d * tap
    for (int64_t o = 0; o < n_out; ++o)
      for (int64_t t = 0; t < n_tap; ++t) {
        InterpEnv env;
        env.ranges = {{out.arg_as<AxisArg>().id, o}, {tap.arg_as<AxisArg>().id, t}};
        const ConstValue v = evaluate(u, env);
        if (auto [it, fresh] = at.emplace(s * o + d * t, v); !fresh && it->second != v)
          return false;
      }
    fixed.emplace(u, UOp::make(Ops::NOOP, u.dtype(), {}, static_cast<int64_t>(fixed.size())));
  }
  const UOp held = substitute(b, fixed);
  // One stride or one dilation is 1: out + d and tap - s read the same element.
  return simplify(substitute(held, {{out, out + d}, {tap, tap - s}})) == simplify(held);
}

// The window copy's interior (GemmWindow::lo, hi, interior, row_mask). The masks are the clauses
// of the value's WHERE conditions and load gates; a clause that reads memory (a fused ReLU's
// comparison) is data, not a mask, and stays. The columns where the masks along x hold are found
// by evaluating them at every column of every phase: planes are at most a few hundred columns.
void find_interior(GemmWindow& w) {
  std::vector<UOp> clauses;
  std::unordered_set<const UOpNode*> seen;
  auto split = [&](const UOp& gate, auto&& self) -> void {
    if (gate.op() == Ops::AND && gate.dtype() == dtypes::bool_) {
      self(gate.src(0), self);
      self(gate.src(1), self);
    } else if (seen.insert(gate.get()).second) {
      clauses.push_back(gate);
    }
  };
  for (const UOp& u : toposort(w.value)) {
    if (u.op() == Ops::WHERE) split(u.src(0), split);
    if (u.op() == Ops::INDEX && u.src().size() > 2) split(u.src(2), split);
  }
  std::vector<UOp> along, row;
  std::unordered_map<UOp, UOp, UOpHash> known;
  const UOp yes = UOp::const_(dtypes::bool_, true);
  for (const UOp& c : clauses) {
    bool reads = false, on_x = false, other = false;
    for (const UOp& n : toposort(c)) {
      if (n.op() == Ops::LOAD) reads = true;
      if (n.op() == Ops::RANGE) (n == w.x || n == w.px ? on_x : other) = true;
      if (n.op() == Ops::DEFINE_VAR || n.op() == Ops::SPECIAL) other = true;
    }
    if (reads) continue;
    if (on_x && other) return;
    (on_x ? along : row).push_back(c);
    known.emplace(c, yes);
  }
  if (known.empty()) return;  // nothing masked: the copy vectorizes as it is
  std::vector<int64_t> lo, hi;
  try {
    InterpEnv env;
    for (int64_t px = 0; px < w.sx; ++px) {
      if (w.px.op() == Ops::RANGE) env.ranges[w.px.arg_as<AxisArg>().id] = px;
      int64_t first = w.cols, end = w.cols;
      for (int64_t x = 0; x < w.cols; ++x) {
        env.ranges[w.x.arg_as<AxisArg>().id] = x;
        const bool holds = std::all_of(along.begin(), along.end(),
                                       [&](const UOp& c) { return as_bool(evaluate(c, env)); });
        if (holds && first == w.cols) first = x;
        if (holds && end != w.cols) return;  // a second run
        if (!holds && first != w.cols && end == w.cols) end = x;
      }
      lo.push_back(first);
      hi.push_back(std::max(first, end));
    }
  } catch (const Error&) {
    return;  // a mask the interpreter cannot evaluate: the copy stays as it is
  }
  w.lo = std::move(lo), w.hi = std::move(hi);
  w.interior = simplify(substitute(w.value, known));
  std::unordered_map<UOp, UOp, UOpHash> ungated;  // loads whose gate is now always true
  for (const UOp& u : toposort(w.interior))
    if (u.op() == Ops::INDEX && u.src().size() > 2 && u.src(2) == yes)
      ungated.emplace(u, u.src(0).index(u.src(1)));
  w.interior = substitute(w.interior, ungated);
  w.row_mask = yes;
  for (const UOp& c : row) w.row_mask = w.row_mask & c;
  w.row_mask = simplify(w.row_mask);
}

// B's window (GemmWindow) where b slides along its two n ranges with the last two k ranges.
std::optional<GemmWindow> find_window(const GemmPlan& p, int64_t next_id) {
  if (p.n.size() != 2 || p.k.size() < 2) return std::nullopt;
  const UOp &y = p.n[0], &x = p.n[1], &ky = p.k[p.k.size() - 2], &kx = p.k.back();
  const int64_t H = range_size(y), W = range_size(x), KH = range_size(ky), KW = range_size(kx);
  if (KH * KW < 4 || H * KH * W * KW > (int64_t{1} << 22)) return std::nullopt;
  const UOp b = simplify(p.b);
  // The stride, else (stride 1) the dilation, along an axis: {s, d}, or {0, 0} for neither.
  auto step = [&](const UOp& out, const UOp& tap, int64_t n, int64_t taps) {
    for (int64_t s = 1; s <= std::min<int64_t>(taps, 4); ++s)
      if (slides(b, out, tap, s, 1)) return std::pair<int64_t, int64_t>{s, 1};
    for (int64_t d = 2; d <= std::min<int64_t>(n, kMaxDilation); ++d)
      if (slides(b, out, tap, 1, d)) return std::pair<int64_t, int64_t>{1, d};
    return std::pair<int64_t, int64_t>{0, 0};
  };
  GemmWindow w;
  std::tie(w.sy, w.dy) = step(y, ky, H, KH);
  std::tie(w.sx, w.dx) = step(x, kx, W, KW);
  if (w.sy == 0 || w.sx == 0) return std::nullopt;
  // Tap ky = sy * qy + py reads phase py's plane at row y + dy * qy.
  const int64_t QH = (KH + w.sy - 1) / w.sy, QW = (KW + w.sx - 1) / w.sx;
  w.rows = H + (QH - 1) * w.dy;
  w.cols = W + (QW - 1) * w.dx;
  w.y = UOp::range(w.rows, next_id, AxisType::global);
  w.x = UOp::range(w.cols, next_id + 1, AxisType::global);
  const UOp zero = UOp::const_(dtypes::index, int64_t{0});
  w.py = w.sy > 1 ? UOp::range(w.sy, next_id + 2, AxisType::global) : zero;
  w.px = w.sx > 1 ? UOp::range(w.sx, next_id + 3, AxisType::global) : zero;
  // A plane's element (Y, py) is b at a point of b's own ranges that reads it: y = Y - d q and
  // ky = py + s q with q = max(0, ceil((Y - H + 1) / d)) (b's masks hold only there). Past the
  // last tap (ky >= KH: a phase plane's last rows, never read) it is 0.
  auto point = [&](const UOp& Y, const UOp& phase, int64_t n, int64_t s, int64_t d) {
    const UOp q = Y.lt(n).where(zero, (Y - (n - d)) / d);
    return std::pair{Y - q * d, phase + q * s};
  };
  const auto [oy, ty] = point(w.y, w.py, H, w.sy, w.dy);
  const auto [ox, tx] = point(w.x, w.px, W, w.sx, w.dx);
  const UOp valid = ty.lt(KH) & tx.lt(KW);
  UOp value = substitute(b, {{y, oy}, {x, ox}, {ky, ty}, {kx, tx}});
  std::unordered_map<UOp, UOp, UOpHash> gated;  // loads past the last tap read nothing
  for (const UOp& u : toposort(value))
    if (u.op() == Ops::LOAD) {
      const UOp& idx = u.src(0);
      gated.emplace(
          idx, idx.src(0).index(idx.src(1), idx.src().size() > 2 ? idx.src(2) & valid : valid));
    }
  w.value = simplify(valid.where(substitute(value, gated), value.const_like(0.0)));
  w.rest.assign(p.k.begin(), p.k.end() - 2);
  w.ky = ky, w.kx = kx;
  w.plane = prod_sizes(w.rest) * w.sy * w.sx * w.rows * w.cols;
  find_interior(w);
  return w;
}

// Winograd F(2 x 2, 3 x 3) in place of the plan's window GEMM (GemmWinograd), or none where
// the window is no stride-1 3 x 3 one over even output sizes. The threads split the batch, else
// the rows (each then transforms all of V: a small part of its GEMMs' work).
std::optional<GemmPlan> winograd(GemmPlan p, int64_t M) {
  if (winograd_tiles(p) == 0) return std::nullopt;
  const GemmWindow& w = *p.window;
  const int64_t W = range_size(p.n[1]);
  GemmWinograd g;
  g.channels = prod_sizes(w.rest);
  g.tiles_y = range_size(p.n[0]) / 2, g.tiles_x = W / 2;
  // Blocks of about kTiles tiles: V and the C tile of 64 channels and rows take 512 KiB each.
  constexpr int64_t kTiles = 128;
  g.block_rows = std::clamp<int64_t>(kTiles / g.tiles_x, 1, g.tiles_y);
  g.nb = (g.block_rows * g.tiles_x + p.nr - 1) / p.nr * p.nr;
  g.panels = (M + p.mr - 1) / p.mr;
  p.a_rows = {};
  p.kc = g.channels;
  split_threads(
      p, !p.batch.empty() && range_size(p.batch[0]) >= 2 ? GemmSplit::batch : GemmSplit::rows, M,
      0);
  p.window->floats = part(w.plane);
  g.v_offset = p.window->floats;
  // V's and the C tile's 16 planes lie 64 floats apart beyond their size (render_c).
  g.y_offset = part(16 * (g.panels * p.mr * g.nb + 64));
  p.scratch_a = 0;
  p.scratch_b = part(16 * g.panels * g.channels * p.mr);
  p.scratch_c = p.scratch_b + part(g.v_offset + 16 * (g.channels * g.nb + 64));
  p.scratch_floats = p.scratch_c + part(g.y_offset + 2 * W);
  p.winograd = g;
  return p;
}

}  // namespace

int64_t winograd_tiles(const GemmPlan& p) {
  if (!p.window || p.m.empty()) return 0;
  const GemmWindow& w = *p.window;
  const int64_t H = range_size(p.n[0]), W = range_size(p.n[1]);
  if (w.sy != 1 || w.sx != 1 || w.dy != 1 || w.dx != 1 || range_size(w.ky) != 3 ||
      range_size(w.kx) != 3 || H % 2 != 0 || W % 2 != 0 || w.cols % 2 != 0)
    return 0;
  return H / 2 * (W / 2);
}

int64_t gemm_max_rows(const Target& target, int64_t vectors) {
  const int64_t mr = blocking(target).mr;
  return vectors <= 2 ? mr : std::max<int64_t>(1, 2 * mr / vectors);
}

namespace {

// What plan_gemm's steps share: the kernel's ranges, the plan so far, who reads each output range
// (assign_axes), the target's blocking and the GEMM's sizes.
struct Planner {
  Planner(const Target& t, const GemmChoice& c, const RangeInfo& i, GemmPlan& plan)
      : target(t), choice(c), a_read(c.a), info(i), p(plan) {}
  const Target& target;
  const GemmChoice& choice;
  const GemmA a_read;
  const RangeInfo& info;
  GemmPlan& p;
  std::vector<int> owner;  // by output range: 1 only a, 2 only b, 0 both or neither
  int n_last = -1;         // the columns' innermost output range
  Blocking b{};
  int64_t M = 0, K = 0, N = 0;
  // N rounded up to whole strips of nr columns.
  int64_t padded_columns(int64_t nr) const { return (N + nr - 1) / nr * nr; }
};

// The innermost output range below `below` that `who` owns alone (1 a, 2 b; 0 either), or -1.
int innermost_owned_by(const std::vector<int>& owner, int who, int below) {
  for (int i = below - 1; i >= 0; --i)
    if (owner[i] != 0 && (who == 0 || owner[i] == who)) return i;
  return -1;
}

// The first output range of the run up to `last` that last's owner owns.
int run_start(const std::vector<int>& owner, int last) {
  int first = last;
  while (first > 0 && owner[first - 1] == owner[last]) --first;
  return first;
}

// Who reads each output range: 1 only a, 2 only b, 0 both or neither (a batch range). The
// columns are the innermost range one operand owns, with its neighbours that operand also owns;
// the rows are the innermost run the other operand owns, the same way (each run flattened: a
// convolution's output rows and columns, a batch of a's rows). The rest loop around the GEMM.
// False where no operand owns an output range.
bool assign_axes(Planner& s) {
  GemmPlan& p = s.p;
  const RangeInfo& info = s.info;
  std::vector<int>& owner = s.owner;
  const int g = static_cast<int>(info.globals.size());
  owner = std::vector<int>(info.globals.size());
  for (int i = 0; i < g; ++i) {
    const bool in_a = mentions(p.a, info.globals[i]), in_b = mentions(p.b, info.globals[i]);
    owner[i] = in_a == in_b ? 0 : in_a ? 1 : 2;
  }
  const int n_last = innermost_owned_by(owner, 0, g);
  if (n_last < 0) return false;
  s.n_last = n_last;
  const int n_first = run_start(owner, n_last);
  // No rows (the other operand owns no output range: a depthwise convolution, whose channels
  // both operands read) is one row per batch element, for a window only (below).
  const int m_last = innermost_owned_by(owner, 3 - owner[n_last], n_first);
  const int m_first = m_last < 0 ? 0 : run_start(owner, m_last);
  for (int i = 0; i < g; ++i)
    (i >= n_first && i <= n_last                  ? p.n
     : m_last >= 0 && i >= m_first && i <= m_last ? p.m
                                                  : p.batch)
        .push_back(info.globals[i]);
  return true;
}

// Columns too few for a strip of the micro kernel (a convolution's 2 x 2 pixels at the end of
// a network on small images), or rows too few for a register tile (its input gradient's
// windows over those pixels), take the batch ranges the same operand owns alone: batch x
// pixels columns or rows, where a batch of GEMMs 4 columns or rows wide ran at 7-10 GFLOPS.
void widen(Planner& s, std::vector<UOp>& run, int owner_of_run, int64_t least) {
  GemmPlan& p = s.p;
  const int g = static_cast<int>(s.info.globals.size());
  if (prod_sizes(run) >= least) return;
  std::vector<UOp> wide, batch;
  for (int i = 0; i < g; ++i) {
    const UOp& r = s.info.globals[i];
    const bool in_run = std::find(run.begin(), run.end(), r) != run.end();
    const bool in_batch = std::find(p.batch.begin(), p.batch.end(), r) != p.batch.end();
    if (in_run || (in_batch && s.owner[i] == owner_of_run))
      wide.push_back(r);
    else if (in_batch)
      batch.push_back(r);
  }
  run = std::move(wide);
  p.batch = std::move(batch);
}

// B is packed for all of k at once, in blocks of columns within the budget, one strip of nr
// columns at least: a long k (a conv's weight gradient sums over batch x rows x columns, 100K
// at batch 32 and 56 x 56) takes a strip up to kMaxStripScale times the budget (the plain
// register tile would run at 12 GFLOPS instead of ~150).
// A row per batch element pays from an eighth of the GEMM's least work (the masked loops it
// replaces are slow).
// A batch of GEMMs (a grouped convolution's groups) counts whole.
bool worth_packing(const Planner& s) {
  const GemmPlan& p = s.p;
  const Blocking& b = s.b;
  const int64_t M = s.M, K = s.K, N = s.N;
  const int64_t work = M * N * K * prod_sizes(p.batch) * (p.m.empty() ? 8 : 1);
  if ((M < 4 && !p.m.empty()) || N < 8 || K * b.nr > kMaxStripScale * b.panel_floats ||
      M * N > (int64_t{1} << 40) / K || work < kGemmMinWork)
    return false;
  return true;
}

// A window copy instead of packed B where it fits the same budget; the columns then run over
// the copy's rows (y * cols + x).
void use_window(Planner& s) {
  GemmPlan& p = s.p;
  if (auto w = find_window(p, s.info.next_id); w && w->plane <= s.b.panel_floats) {
    p.window = std::move(w);
    s.N = range_size(p.n[0]) * p.window->cols;
  }
}

// The register tile's columns: two vectors, one for a narrow output (a classifier's 10
// columns), four where the target keeps 6 rows or more of them (AVX-512's 12 x 2 as 6 x 4) and
// they pad no more columns than two vectors would, or the choice's (within the columns,
// rounded up to a vector); its most rows keep as many accumulators as the default tile's.
// Four vectors load A's rows half as often for each multiply-add: a 512 matmul 271 -> 365
// GFLOPS, ResNet-50's 1 x 1s at 56 x 56 and 7 x 7 1.05-1.29x, where its BEAM search found
// them first. Not where the window's planes are the batch (a depthwise stencil, one row) nor
// for Winograd, whose searches kept two.
bool choose_columns(Planner& s) {
  GemmPlan& p = s.p;
  const Blocking& b = s.b;
  const int64_t N = s.N;
  const int64_t wide_nr = kMaxTileVectors * b.vector;
  const bool wide = !p.m.empty() && s.a_read != GemmA::winograd &&
                    gemm_max_rows(s.target, kMaxTileVectors) >= 6 &&
                    s.padded_columns(b.vector) >= wide_nr &&
                    s.padded_columns(wide_nr) <= s.padded_columns(b.nr);
  p.nr = s.choice.vectors > 0 ? s.choice.vectors * b.vector
         : N < b.nr           ? b.vector
         : wide               ? wide_nr
                              : b.nr;
  if (p.nr > s.padded_columns(b.vector)) return false;
  return true;
}

// The panels' rows: the most, down to two thirds of the register tile's, that computes at most
// 1% of rows past M, else the fewest past M (64 rows as 8 panels of 8, not 6 of 11 with 2 rows
// wasted, 1024 as 86 of 12: 7 x 32 conv b32 took 26.0 ms with 11, 24.2 with 8 rows; a 512
// matmul ran 5% slower with 8 rows than with 12).
bool choose_rows(Planner& s) {
  GemmPlan& p = s.p;
  const GemmChoice& choice = s.choice;
  const int64_t M = s.M;
  const int64_t most_rows = gemm_max_rows(s.target, p.nr / s.b.vector);
  auto padded = [&](int64_t mr) { return (M + mr - 1) / mr * mr; };
  p.mr = most_rows;
  for (int64_t mr = most_rows; mr >= std::max<int64_t>(1, most_rows * 2 / 3); --mr) {
    if (padded(mr) * 100 <= M * 101) {
      p.mr = mr;
      break;
    }
    if (padded(mr) < padded(p.mr)) p.mr = mr;
  }
  if (M < p.mr) p.mr = M;  // one row (the depthwise stencil)
  if (choice.rows < 0 || choice.rows > most_rows) return false;
  if (choice.rows > 0) p.mr = choice.rows;
  return true;
}

// k in even blocks of at most the choice's, else of as many steps as keep a micro panel of B
// (kc x nr) in L1; A's block of mc x kc in a quarter of L2. (Four vectors with two vectors'
// k block: the encoder's first FFN matmul 1.13x and its attention scores 1.23x slower.)
bool block_k(Planner& s) {
  GemmPlan& p = s.p;
  const Target& target = s.target;
  const GemmChoice& choice = s.choice;
  const Blocking& b = s.b;
  const int64_t K = s.K;
  if (choice.kc > 0 && choice.kc >= K) return false;
  const int64_t kc_most =
      choice.kc > 0 ? choice.kc : std::max(b.vector, target.host.l1_bytes / (p.nr * 4));
  const int64_t k_blocks = (K + kc_most - 1) / kc_most;
  p.kc = (K + k_blocks - 1) / k_blocks;
  p.mc = std::max(p.mr, target.host.l2_bytes / 4 / (kc_most * 4)) / p.mr * p.mr;
  // B's blocks of columns: whole strips (the C tile's rows are nc wide).
  const int64_t n_pad = s.padded_columns(p.nr);
  p.nc = std::min({n_pad, std::max(p.nr, b.max_nc / p.nr * p.nr),
                   std::max(p.nr, b.panel_floats / K / p.nr * p.nr)});
  return true;
}

// A read in place streams each row of a panel over all of k (the hardware prefetcher follows a
// long run along each row; a k block's 1 KiB of a row it does not, and a 7 x 7 convolution's
// weights, read once, then ran at two thirds of the multiply-adds' speed), through each strip
// in turn (render_c) while the panel is in L1 or L2: no k block keeps B's micro panel in L1,
// but B's few strips are L2's, at two vectors per k. Few strips of the default tile's width,
// whatever the tile's: a 2048 matmul's 8 strips of four vectors (as many columns as 16 of two)
// ran at 134 GFLOPS with A in place against 280 packed on an Intel Xeon (its 512 matmul 310 ->
// 280, ResNet-50 and the encoder the same). Keeping A in place only while a wide strip of B
// (K x 4 vectors) fits in L2 instead took ResNet-50 15% slower.
void lay_out_scratch(Planner& s) {
  GemmPlan& p = s.p;
  const int64_t K = s.K;
  if (p.a_rows) p.kc = K;
  p.scratch_a = 0;
  p.scratch_b = p.scratch_a + part(p.a_rows ? 0 : p.mc * p.kc);
  int64_t b_floats = K * p.nc;
  if (p.window) {
    // The copy, then zeros for the last strip's reach past it (a column at most cols - 1 past
    // the plane, plus a strip), then the offsets.
    p.window->floats = part(p.window->plane + p.window->cols + p.nr);
    b_floats = p.window->floats + K;
  }
  p.scratch_c = p.scratch_b + part(b_floats);
  p.scratch_floats = p.scratch_c + part(p.mc * p.nc);
}

}  // namespace

std::optional<GemmPlan> plan_gemm(const UOp& ast, const Target& target, const GemmChoice& choice) {
  const GemmA a_read = choice.a;
  if (!target.host.gemm || choice.vectors < 0 || choice.vectors > kMaxTileVectors || choice.kc < 0)
    return std::nullopt;
  std::vector<UOp> reduces;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE) reduces.push_back(u);
  if (reduces.size() != 1) return std::nullopt;
  const UOp& r = reduces[0];
  if (r.arg_as<Ops>() != Ops::ADD || r.dtype() != dtypes::float32 || r.src(0).op() != Ops::MUL)
    return std::nullopt;
  RangeInfo info = collect_ranges(ast);
  for (const UOp& x : toposort(ast))
    if (x.op() == Ops::RANGE && range_size(x) < 1) return std::nullopt;
  GemmPlan p;
  p.reduce = r, p.a = r.src(0).src(0), p.b = r.src(0).src(1), p.k = info.reduces;
  Planner s(target, choice, info, p);
  if (!assign_axes(s)) return std::nullopt;
  const std::vector<int>& owner = s.owner;
  const int n_last = s.n_last;
  widen(s, p.n, owner[n_last], kMinColumns);
  if (!p.m.empty()) widen(s, p.m, 3 - owner[n_last], kMinRows);
  if (owner[n_last] == 1) std::swap(p.a, p.b);
  s.M = prod_sizes(p.m), s.K = prod_sizes(p.k);
  s.N = prod_sizes(p.n);
  s.b = blocking(target);
  if (!worth_packing(s)) return std::nullopt;
  use_window(s);
  // Without rows only the window pays: a stencil of mr = 1 over each plane's copy, every tap an
  // unaligned vector load (a depthwise 3 x 3 ran at 15-24 GFLOPS as masked loops).
  // A strided one pays from 256 columns (MobileNetV2's stride-2 7 x 7 x 576 ran 0.057 -> 0.095
  // ms: four phase planes of 8 x 8 each per channel, two strips of columns).
  if (p.m.empty() &&
      (!p.window || p.batch.empty() || ((p.window->sy > 1 || p.window->sx > 1) && s.N < 256)))
    return std::nullopt;
  p.vector = s.b.vector;
  if (!choose_columns(s) || !choose_rows(s) || !block_k(s)) return std::nullopt;
  const int64_t M = s.M, N = s.N;
  // A long batch is split: nothing is packed twice. Otherwise each thread packs all of the
  // operand along the axis it does not split: the smaller one.
  split_threads(p,
                !p.batch.empty() && range_size(p.batch[0]) >= kGemmMinSplitBatch ? GemmSplit::batch
                : M <= N ? GemmSplit::columns
                         : GemmSplit::rows,
                M, N);
  if (a_read == GemmA::winograd) return choice.kc > 0 ? std::nullopt : winograd(std::move(p), M);
  if (a_read == GemmA::in_place ||
      (a_read == GemmA::planned && std::min(N, p.nc) <= kMaxStripsInPlace * s.b.nr))
    p.a_rows = rows_in_place(p.a, p.k);
  if (a_read == GemmA::in_place && !p.a_rows) return std::nullopt;
  if (choice.kc > 0 && p.a_rows) return std::nullopt;  // A in place reads all of k at once
  lay_out_scratch(s);
  return p;
}

}  // namespace vkgrad
