// codegen: a planned GEMM printed as C (render_c.hpp): packed and blocked (BLIS's loops), or
// Winograd F(2 x 2, 3 x 3) over a convolution's window copy.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/ranges.hpp"
#include "codegen/render_c.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

// How many of the ranges `w` (outermost first), counted from the innermost, `x` reads along as
// one run: they reach its value only through load addresses, sums and products of them, each
// address affine in them with place values that nest (a weight's c, ky, kx by 9, 3 and 1), so
// the innermost range may step past its size into the next ones. No mask, comparison or division
// may see them. 1 when no two do.
size_t run_ranges(const UOp& x, const std::vector<UOp>& w) {
  auto nest = [&](size_t from) {
    std::unordered_set<UOp, UOpHash> dep(w.begin() + static_cast<std::ptrdiff_t>(from), w.end());
    for (const UOp& u : toposort(x)) {
      if (dep.count(u) || u.op() == Ops::LOAD) continue;  // a loaded value is no index
      if (std::none_of(u.src().begin(), u.src().end(), [&](const UOp& s) { return dep.count(s); }))
        continue;
      dep.insert(u);
      if (u.op() == Ops::ADD || u.op() == Ops::MUL) continue;
      if (u.op() != Ops::INDEX || dep.count(u.src(0))) return false;
      for (size_t i = 2; i < u.src().size(); ++i)
        if (dep.count(u.src(i))) return false;  // a gate
      const UOp& idx = u.src(1);
      for (size_t i = w.size() - 1; i > from; --i) {
        const auto inner = stride_along(idx, w[i]), outer = stride_along(idx, w[i - 1]);
        if (!inner || !outer || *outer != *inner * range_size(w[i])) return false;
      }
    }
    return true;
  };
  for (size_t from = 0; from + 1 < w.size(); ++from)
    if (nest(from)) return w.size() - from;
  return 1;
}

// Some load in `x` reads consecutive elements as `r` steps by one.
bool reads_along(const UOp& x, const UOp& r) {
  for (const UOp& u : toposort(x))
    if (u.op() == Ops::INDEX && steps_by_one(u.src(1), r)) return true;
  return false;
}

// Appends lines of C to `out`, each indented to its depth.
struct Lines {
  std::string& out;
  void operator()(int depth, const std::string& text) const { out += indent(depth) + text + "\n"; }
};

}  // namespace

// The state of a packed GEMM being printed: the plan, its sizes, the output and the depth of the
// loops open in it (each opened on a line of its own, each closed by a "}" line).
struct CRenderer::GemmPrint {
  GemmPrint(const GemmPlan& plan, std::string& text)
      : p(plan),
        out(text),
        win(plan.window ? &*plan.window : nullptr),
        wg(plan.winograd ? &*plan.winograd : nullptr),
        M(prod_sizes(plan.m)),
        K(prod_sizes(plan.k)),
        N(win ? range_size(plan.n[0]) * win->cols : prod_sizes(plan.n)) {}

  void line(int d, const std::string& text) { out += indent(d) + text + "\n"; }
  void open(const std::string& var, const std::string& lo, const std::string& hi,
            const std::string& step = "1") {
    line(depth++,
         fmt::format("for (int64_t {0} = {1}; {0} < {2}; {0} += {3}) {{", var, lo, hi, step));
  }
  void open_unrolled(const std::string& var, int64_t hi) {
    out += kUnroll;
    open(var, "0", std::to_string(hi));
  }
  void close_to(int to) {
    while (depth > to) line(--depth, "}");
  }
  void clamp(const std::string& var, const std::string& rest, int64_t block) {
    line(depth, fmt::format("const int64_t {0} = {1} < {2} ? {1} : {2};", var, rest, block));
  }
  // The register tile's loops, unrolled: i over mr rows, j over `vecs` vectors.
  void tile_loops(int64_t vecs) {
    open_unrolled("i", p.mr);
    open_unrolled("j", vecs);
  }

  const GemmPlan& p;
  std::string& out;
  const GemmWindow* win;
  const GemmWinograd* wg;
  int64_t M, K, N;
  int depth = 1;
};

// One operand being packed into panels: gemm_pack's arguments and what they imply.
struct CRenderer::GemmPack {
  const UOp& x;
  const std::string& panel;
  int64_t width;
  const std::string& ws;
  const std::string& ks;
  const std::vector<UOp>& w_ranges;
  const std::string& w_flat;
  const std::string& k_off;
  int base;  // the depth the pack starts (and ends) at
  std::string panel_at_kk;
  bool segmented;
  size_t run;
  int64_t run_size;
  std::string run_pos;
  UOp inner;
  std::vector<UOp> outer;
  // The flat k at a loop variable (k_off + it: A's block starts at pc).
  std::string k_at(const std::string& v) const { return k_off.empty() ? v : k_off + " + " + v; }
};

void CRenderer::render_gemm(const GemmPlan& p, std::string& out, int buffers) {
  GemmPrint g(p, out);
  gemm_share(g, buffers);
  if (g.win && !g.wg) gemm_window_offsets(g);
  for (const UOp& b : p.batch) {
    const bool split = b == p.batch[0] && p.split == GemmSplit::batch;
    g.line(g.depth++,
           fmt::format("for (int64_t {0} = {1}; {0} < {2}; {0}++) {{", name_of(b),
                       split ? "start" : "0", split ? "end" : std::to_string(range_size(b))));
  }
  if (g.wg) winograd_weights(p, g.depth, out);
  if (g.win) gemm_window_copy(g);
  if (g.wg) {
    winograd_tiles(p, g.depth, out);
    g.close_to(1);
    return;
  }
  gemm_blocks(g);
  g.close_to(1);
}

void CRenderer::gemm_share(GemmPrint& g, int buffers) {
  const GemmPlan& p = g.p;
  // The packed panels and the C tile live in the thread's scratch (the runtime's, 64-byte
  // aligned, after the buffers), where the plan put them.
  for (const auto& [name, offset] :
       {std::pair{"pack_a", p.scratch_a}, std::pair{"pack_b", p.scratch_b},
        std::pair{"tile_c", p.scratch_c}})
    g.line(1, fmt::format("float* restrict {} = (float*)bufs[{}] + {};", name, buffers, offset));
  // This thread's share: a slice of the first batch range, or rows [m_lo, m_hi) and columns
  // [n_lo, n_hi).
  const bool by_rows = p.split == GemmSplit::rows, by_columns = p.split == GemmSplit::columns;
  const int64_t step = p.step, share = p.share;
  const std::string lo = fmt::format("start * {}", step),
                    hi = fmt::format("(end * {0} < {1} ? end * {0} : {1})", step, share);
  g.line(1, fmt::format("const int64_t m_lo = {}, m_hi = {};", by_rows ? lo : "0",
                        by_rows ? hi : std::to_string(g.M)));
  g.line(1, fmt::format("const int64_t n_lo = {}, n_hi = {};", by_columns ? lo : "0",
                        by_columns ? hi : std::to_string(g.N)));
}

// B's window: each k's offset into the copy (the rest of k's planes, then ky rows and kx
// columns in).
void CRenderer::gemm_window_offsets(GemmPrint& g) {
  const GemmWindow* win = g.win;
  g.line(1, fmt::format("int32_t* restrict offs = (int32_t*)(pack_b + {});", win->floats));
  g.line(1, fmt::format("for (int64_t kk = 0; kk < {}; kk++) {{", g.K));
  g.line(2, bind(g.p.k, "kk"));
  std::string rest = "0";
  for (const UOp& r : win->rest)
    rest = fmt::format("({}) * {} + {}", rest, range_size(r), name_of(r));
  // The tap's phase plane, then its row and column in it.
  const std::string ky = name_of(win->ky), kx = name_of(win->kx);
  g.line(2, fmt::format("offs[kk] = (int32_t)(((({}) * {} + {} % {}) * {} + {} % {}) * {} + {} / "
                        "{} * {} + {} / {} * {});",
                        rest, win->sy, ky, win->sy, win->sx, kx, win->sx, win->rows * win->cols, ky,
                        win->sy, win->dy * win->cols, kx, win->sx, win->dx));
  g.line(1, "}");
}

// The window copy of this batch element: every plane of the rest of k, rows x cols, then
// zeros.
void CRenderer::gemm_window_copy(GemmPrint& g) {
  const GemmPlan& p = g.p;
  const GemmWindow* win = g.win;
  const int base = g.depth;
  const int64_t R = prod_sizes(win->rest);
  g.open("r", "0", std::to_string(R));
  if (!win->rest.empty()) g.line(g.depth, bind(win->rest, "r"));
  // The phases of a strided convolution: a plane per (py, px).
  std::string plane = "r";
  for (const auto& [phase, stride] : {std::pair{win->py, win->sy}, std::pair{win->px, win->sx}})
    if (stride > 1) {
      g.open(name_of(phase), "0", std::to_string(stride));
      plane = fmt::format("({}) * {} + {}", plane, stride, name_of(phase));
    }
  // A thread splitting the columns copies only the rows its columns reach.
  const bool by_cols = p.split == GemmSplit::columns;
  if (by_cols)
    g.line(g.depth, fmt::format("const int64_t y_lo = n_lo / {0}, y_end = (n_hi - 1) / {0} + {1}, "
                                "y_hi = y_end < {2} ? y_end : {2};",
                                win->cols, win->rows - range_size(p.n[0]) + 1, win->rows));
  g.open(name_of(win->y), by_cols ? "y_lo" : "0", by_cols ? "y_hi" : std::to_string(win->rows));
  window_row(g, plane);
  g.close_to(base);
  g.open("z", std::to_string(win->plane), std::to_string(win->floats));
  g.line(g.depth, "pack_b[z] = 0.0f;");
  g.close_to(base);
}

// A row of the window copy (its plane `plane`, its row bound): its columns x.
void CRenderer::window_row(GemmPrint& g, const std::string& plane) {
  const GemmWindow* win = g.win;
  const std::string x = name_of(win->x), cols = std::to_string(win->cols);
  if (win->lo.empty()) {
    g.out += kVectorize;
    g.open(x, "0", cols);
    window_store(g, plane, win->value, {});
  } else {
    // The interior [x_lo, x_hi) of a row where its masks hold is a plain read; the columns
    // on either side (or the whole row) copy the value with its masks.
    Names row;
    window_graph(g, win->row_mask, row);
    const std::string holds = operand(win->row_mask, row);
    g.line(g.depth,
           fmt::format("const int64_t x_lo = {0} ? {1} : {3}, x_hi = {0} ? {2} : {3};", holds,
                       window_phase(*win, win->lo), window_phase(*win, win->hi), cols));
    g.open("e", "0", "2");
    g.open(x, "e ? x_hi : 0", "(e ? " + cols + " : x_lo)");
    window_store(g, plane, win->value, row);
    g.close_to(g.depth - 2);
    g.out += kVectorize;
    g.open(x, "x_lo", "x_hi");
    window_store(g, plane, win->interior, row);
  }
}

// The copy's element at the bound plane, row and column: `value`, its graph printed first.
void CRenderer::window_store(GemmPrint& g, const std::string& plane, const UOp& value,
                             Names names) {
  const GemmWindow* win = g.win;
  window_graph(g, value, names);
  g.line(g.depth, fmt::format("pack_b[(({}) * {} + {}) * {} + {}] = {};", plane, win->rows,
                              name_of(win->y), win->cols, name_of(win->x), operand(value, names)));
}

// The window's graphs are the plan's, not the kernel's: their nodes in their own order.
void CRenderer::window_graph(GemmPrint& g, const UOp& value, Names& names) {
  std::vector<UOp> nodes;
  for (const UOp& u : values_of({value}, toposort(value)))
    if (!names.count(u.get())) nodes.push_back(u);
  print(nodes, g.depth, g.out, names);
}

// A window's column bound (`at`, one per phase px) as an expression in px.
std::string CRenderer::window_phase(const GemmWindow& win, const std::vector<int64_t>& at) {
  std::string e = std::to_string(at.back());
  for (size_t i = at.size() - 1; i-- > 0;)
    e = fmt::format("{} == {} ? {} : {}", name_of(win.px), i, at[i], e);
  return e;
}

// The loops over blocks: column blocks jc (B's strips packed), row blocks ic and k blocks pc
// (A's panels packed), the micro kernel over each strip and panel, then the ic x jc block's
// epilogue.
void CRenderer::gemm_blocks(GemmPrint& g) {
  const GemmPlan& p = g.p;
  g.open("jc", "n_lo", "n_hi", std::to_string(p.nc));
  g.clamp("nc", "n_hi - jc", p.nc);
  if (!g.win) {
    g.open("jr", "0", "nc", std::to_string(p.nr));
    g.clamp("nr", "nc - jr", p.nr);
    g.line(g.depth, fmt::format("float* restrict pb = pack_b + jr * {};", g.K));
    gemm_pack(g, p.b, "pb", p.nr, "nr", std::to_string(g.K), p.n, "jc + jr + w", "");
    g.close_to(g.depth - 1);
  }
  g.open("ic", "m_lo", "m_hi", std::to_string(p.mc));
  g.clamp("mc", "m_hi - ic", p.mc);
  const int ic_depth = g.depth;
  g.open("pc", "0", std::to_string(g.K), std::to_string(p.kc));
  g.clamp("kc", fmt::format("{} - pc", g.K), p.kc);
  if (!p.a_rows) {
    g.open("ir", "0", "mc", std::to_string(p.mr));
    g.clamp("mr", "mc - ir", p.mr);
    g.line(g.depth, "float* restrict pa = pack_a + ir * kc;");
    gemm_pack(g, p.a, "pa", p.mr, "mr", "kc", p.m, "ic + ir + w", "pc");
    g.close_to(g.depth - 1);
  }
  gemm_micro_kernel(g);
  g.close_to(ic_depth);
  gemm_epilogue(g);
}

// Packs `x` into panel[kk * width + w] for w < ws (zero up to width): the loops bind the
// kernel's ranges (`w_ranges` from the flat index `w_flat`, then `bind_k`) and evaluate x's
// nodes once per element. The stores are contiguous (a strided read is a gather; a strided
// store would be a scatter). Several w ranges (a convolution's output rows and columns) are
// walked as segments along the innermost one, whose outer ranges are bound once per panel
// into small arrays (their divisions would dominate an im2col): within a segment the
// innermost range steps by one with the element, so the compiler sees the reads along it
// (an input row) as contiguous, masked where a pad is, instead of as a gather.
void CRenderer::gemm_pack(GemmPrint& g, const UOp& x, const std::string& panel, int64_t width,
                          const std::string& ws, const std::string& ks,
                          const std::vector<UOp>& w_ranges, const std::string& w_flat,
                          const std::string& k_off) {
  const GemmPlan& p = g.p;
  const int base = g.depth;
  const std::string panel_at_kk = fmt::format("{}[kk * {} + w]", panel, width);
  // Several w ranges are walked in segments: seg_w[s] .. seg_w[s + 1] of the panel, the
  // innermost range from seg_in[s], the outer ranges' values in seg_<range>[s]. The innermost
  // ranges that x reads as one run (a weight's c, ky, kx; an image's y, x) make one segment:
  // its innermost range steps past its size.
  const bool segmented = w_ranges.size() > 1;
  const size_t run = segmented ? run_ranges(x, w_ranges) : 1;
  int64_t run_size = 1;
  std::string run_pos;
  for (size_t i = w_ranges.size() - run; i < w_ranges.size(); ++i) {
    run_size *= range_size(w_ranges[i]);
    run_pos = run_pos.empty() ? name_of(w_ranges[i])
                              : fmt::format("({} * {} + {})", run_pos, range_size(w_ranges[i]),
                                            name_of(w_ranges[i]));
  }
  const UOp inner = w_ranges.empty() ? UOp{} : w_ranges.back();
  const std::vector<UOp> outer(w_ranges.begin(), w_ranges.end() - (w_ranges.empty() ? 0 : 1));
  const GemmPack pk{x,    panel,       width,     ws,  ks,       w_ranges, w_flat, k_off,
                    base, panel_at_kk, segmented, run, run_size, run_pos,  inner,  outer};
  if (segmented) pack_segments(g, pk);
  // k-major where x reads along k's innermost range and w is walked in segments shorter than 4
  // (a weight gradient's B: the image read along its columns, the panel's width across its
  // channels and taps in runs of 3): each w walks a block of that range, its reads contiguous
  // and its stores within the block's rows of the panel, instead of each kk gathering across the
  // width in segments of 3 (ResNet-18's r_64_64_3_3_16_16_16 spent half its time packing B). An
  // operand walked along one w range (a 1 x 1 convolution's weights, a weight gradient's A)
  // keeps the k-inner loop: k-major was 3-15% slower there.
  const UOp& k_in = p.k.back();
  const int64_t k_block = range_size(k_in);
  const bool k_major = segmented && run_size < 4 && k_block >= 8 && k_block <= 64 &&
                       (k_off.empty() || p.kc % k_block == 0) && reads_along(x, k_in);
  if (k_major) {
    pack_k_major(g, pk, k_in);
    return;
  }
  g.open("kk", "0", ks);
  g.line(g.depth, bind(p.k, pk.k_at("kk")));
  pack_open_w(g, pk);
  pack_body(g, pk, panel_at_kk);
  g.close_to(g.depth - (segmented ? 2 : 1));
  pack_zero_fill(g, pk);
  g.close_to(base);
}

// The segments of a panel walked in them: their first w, the innermost range's value there and
// the outer ranges' values, in small arrays.
void CRenderer::pack_segments(GemmPrint& g, const GemmPack& pk) {
  g.line(g.depth, fmt::format("int64_t seg_w[{}], seg_in[{}];", pk.width + 1, pk.width));
  for (const UOp& r : pk.outer)
    g.line(g.depth, fmt::format("int64_t seg_{}[{}];", name_of(r), pk.width));
  g.line(g.depth, "int64_t nseg = 0;");
  g.line(g.depth++, fmt::format("for (int64_t w = 0; w < {}; nseg++) {{", pk.ws));
  g.line(g.depth, bind(pk.w_ranges, pk.w_flat));
  g.line(g.depth, fmt::format("seg_w[nseg] = w; seg_in[nseg] = {};", name_of(pk.inner)));
  for (const UOp& r : pk.outer) g.line(g.depth, fmt::format("seg_{0}[nseg] = {0};", name_of(r)));
  if (pk.run == pk.w_ranges.size())
    g.line(g.depth, "w = " + pk.ws + ";");
  else
    g.line(g.depth, fmt::format("w += {0} - {1} < {2} - w ? {0} - {1} : {2} - w;", pk.run_size,
                                pk.run_pos, pk.ws));
  g.close_to(pk.base);
  g.line(g.depth, "seg_w[nseg] = " + pk.ws + ";");
}

// Each w of the panel (or of a segment), its ranges bound.
void CRenderer::pack_open_w(GemmPrint& g, const GemmPack& pk) {
  if (!pk.segmented) {
    g.open("w", "0", pk.ws);
    g.line(g.depth, bind(pk.w_ranges, pk.w_flat));
    return;
  }
  g.open("sg", "0", "nseg");
  std::string bind_outer;
  for (const UOp& r : pk.outer)
    bind_outer += fmt::format("const int64_t {0} = seg_{0}[sg]; ", name_of(r));
  g.line(g.depth, bind_outer + "const int64_t w0 = seg_w[sg], in0 = seg_in[sg];");
  g.open("i", "0", "seg_w[sg + 1] - w0");
  g.line(g.depth,
         fmt::format("const int64_t {} = in0 + i; const int64_t w = w0 + i;", name_of(pk.inner)));
}

// x evaluated at the bound ranges, stored to `dest`.
void CRenderer::pack_body(GemmPrint& g, const GemmPack& pk, const std::string& dest) {
  Names names;
  print(values_of({pk.x}, topo_), g.depth, g.out, names);
  g.line(g.depth, fmt::format("{} = {};", dest, operand(pk.x, names)));
}

// The panel's columns from ws up to its width at this kk: zeros.
void CRenderer::pack_zero_fill(GemmPrint& g, const GemmPack& pk) {
  g.open("w", pk.ws, std::to_string(pk.width));
  g.line(g.depth, pk.panel_at_kk + " = 0.0f;");
  g.close_to(g.depth - 1);
}

// The k-major pack (gemm_pack): per block kb of k's innermost range `k_in`, each w's reads along
// it into kt, then kt's rows into the panel; then the panel's zero columns.
void CRenderer::pack_k_major(GemmPrint& g, const GemmPack& pk, const UOp& k_in) {
  const GemmPlan& p = g.p;
  const int64_t k_block = range_size(k_in);
  const std::vector<UOp> k_outer(p.k.begin(), p.k.end() - 1);
  g.open("kb", "0", pk.ks, std::to_string(k_block));
  if (!k_outer.empty())
    g.line(g.depth, bind(k_outer, fmt::format("({}) / {}", pk.k_at("kb"), k_block)));
  const int kb_depth = g.depth;
  g.line(g.depth, fmt::format("float kt[{}];", pk.width * k_block));
  pack_open_w(g, pk);
  g.out += kVectorize;
  g.open("t", "0", std::to_string(k_block));
  g.line(g.depth, fmt::format("const int64_t {} = t;", name_of(k_in)));
  pack_body(g, pk, fmt::format("kt[w * {} + t]", k_block));
  g.close_to(kb_depth);
  g.open("t", "0", std::to_string(k_block));
  g.open("w", "0", pk.ws);
  g.line(g.depth,
         fmt::format("{}[(kb + t) * {} + w] = kt[w * {} + t];", pk.panel, pk.width, k_block));
  g.close_to(pk.base);
  g.open("kk", "0", pk.ks);
  pack_zero_fill(g, pk);
  g.close_to(pk.base);
}

// The micro kernel: mr x (nr / V) vectors of accumulators.
void CRenderer::gemm_micro_kernel(GemmPrint& g) {
  const GemmPlan& p = g.p;
  const int64_t V = p.vector, vecs = p.nr / V;
  const std::string vec_t = fmt::format("vkg_f32x{}", V);
  // A panel's rows read in place go once through all of the (few) strips.
  if (p.a_rows) {
    g.open("ir", "0", "mc", std::to_string(p.mr));
    g.open("jr", "0", "nc", std::to_string(p.nr));
  } else {
    g.open("jr", "0", "nc", std::to_string(p.nr));
    g.open("ir", "0", "mc", std::to_string(p.mr));
  }
  if (p.a_rows)
    gemm_a_rows(g);
  else
    g.line(g.depth, "const float* restrict ap = pack_a + ir * kc;");
  if (g.win)
    g.line(g.depth, "const float* restrict bp = pack_b + jc + jr;");
  else
    g.line(g.depth,
           fmt::format("const float* restrict bp = pack_b + jr * {} + pc * {};", g.K, p.nr));
  g.line(g.depth, fmt::format("float* restrict cp = tile_c + ir * {} + jr;", p.nc));
  g.line(g.depth, fmt::format("{} acc[{}][{}];", vec_t, p.mr, vecs));
  const int tile_depth = g.depth;
  const std::string c_vec = fmt::format("*({}*)(cp + i * {} + j * {})", vec_t, p.nc, V);
  g.tile_loops(vecs);
  g.line(g.depth, fmt::format("acc[i][j] = pc == 0 ? ({}){{0}} : {};", vec_t, c_vec));
  g.close_to(tile_depth);
  g.open("kk", "0", "kc");
  g.tile_loops(vecs);
  // B's vector: packed (aligned), or in the window copy at k's offset (unaligned).
  const std::string b_vec =
      g.win ? fmt::format("*(const {}u*)(bp + offs[pc + kk] + j * {})", vec_t, V)
            : fmt::format("*(const {}*)(bp + kk * {} + j * {})", vec_t, p.nr, V);
  g.line(g.depth,
         fmt::format("acc[i][j] = vkg_fma{}({}, {}, acc[i][j]);", V,
                     p.a_rows ? "ar[i][kk]" : fmt::format("ap[kk * {} + i]", p.mr), b_vec));
  g.close_to(tile_depth);
  g.tile_loops(vecs);
  g.line(g.depth, fmt::format("{} = acc[i][j];", c_vec));
}

// A where it lies: a pointer per row of the panel at this k block (rows past the edge
// read row 0; their results are never stored).
void CRenderer::gemm_a_rows(GemmPrint& g) {
  const GemmPlan& p = g.p;
  g.line(g.depth, fmt::format("const float* ar[{}];", p.mr));
  g.clamp("mr", "mc - ir", p.mr);
  const int base = g.depth;
  g.open("w", "0", "mr");
  g.line(g.depth, bind(p.m, "ic + ir + w"));
  Names names;
  print(values_of({p.a_rows}, topo_), g.depth, g.out, names);
  g.line(g.depth, fmt::format("ar[w] = data{} + {} + pc;", p.a.src(0).src(0).arg_as<int64_t>(),
                              operand(p.a_rows, names)));
  g.close_to(base);
  g.open("w", "mr", std::to_string(p.mr));
  g.line(g.depth, "ar[w] = ar[0];");
  g.close_to(base);
}

// The epilogue of the block.
void CRenderer::gemm_epilogue(GemmPrint& g) {
  const GemmPlan& p = g.p;
  const GemmWindow* win = g.win;
  const bool flat = !win && p.n.size() > 1;
  g.open("i", "0", "mc");
  if (win) {
    // The window's columns y * cols + x, a row at a time: x up to the output's width (the
    // rest of the row is dropped) or the block's end.
    g.line(g.depth, bind(p.m, "ic + i"));
    const std::string y = name_of(p.n[0]), x = name_of(p.n[1]);
    g.line(g.depth++,
           fmt::format("for (int64_t n0 = jc; n0 < jc + nc; n0 = (n0 / {0} + 1) * {0}) {{",
                       win->cols));
    g.line(g.depth,
           fmt::format("const int64_t {0} = n0 / {1}, x0 = n0 % {1}, x1 = x0 + jc + nc - n0 "
                       "< {2} ? x0 + jc + nc - n0 : {2};",
                       y, win->cols, range_size(p.n[1])));
    g.out += kVectorize;
    g.open(x, "x0", "x1");
    g.line(g.depth, fmt::format("const int64_t j = {} * {} + {} - jc;", y, win->cols, x));
  } else if (flat) {
    // (clang honours restrict on parameters only: without the pragma it reloads the per-row
    // operands after each store and finds vectorizing not worth it; each column touches only
    // its own elements)
    g.out += kVectorizeDisjoint;
    g.open("j", "0", "nc");
    g.line(g.depth, bind(p.m, "ic + i") + " const int64_t col = jc + j;");
  } else {
    g.open("j", "0", "nc");
    g.line(g.depth, bind(p.m, "ic + i") + " " + bind(p.n, "jc + j"));
  }
  g.line(g.depth, fmt::format("const float red = tile_c[i * {} + j];", p.nc));
  Names names{{p.reduce.get(), "red"}};
  const UOp st = flat ? flat_columns(ast_.src(0), p) : ast_.src(0);
  const std::vector<UOp> flat_order = flat ? toposort(st) : std::vector<UOp>{};
  print(values_of({st}, flat ? flat_order : topo_), g.depth, g.out, names);
  g.out += store(st, names, g.depth);
}

// The epilogue's loads and store with the columns' ranges written as digits of the flat column
// (SPECIAL "col") and their indices simplified: where the output and the operands lie along the
// columns in the flattened order (a 1 x 1 convolution's y * W + x), an index is then affine in
// the column and the loop vectorizes; with the ranges' divisions and remainders it did not
// (ResNet-50's r_256_56_56_64, two batch norms and the residual: 0.93 ms, 0.34 without them).
UOp CRenderer::flat_columns(const UOp& st, const GemmPlan& p) {
  const int64_t N = prod_sizes(p.n);
  const UOp col = UOp::special("col", UOp::const_(dtypes::index, N));
  std::unordered_map<UOp, UOp, UOpHash> digits{{p.reduce, p.reduce}};
  int64_t stride = N;
  for (const UOp& r : p.n) {
    stride /= range_size(r);
    UOp d = col / UOp::const_(dtypes::index, stride);
    if (r != p.n.front()) d = d % UOp::const_(dtypes::index, range_size(r));
    digits.emplace(r, d);
  }
  const UOp flat = substitute(st, digits);
  std::unordered_map<UOp, UOp, UOpHash> simpler{{p.reduce, p.reduce}};
  const std::vector<UOp> inner = toposort(p.reduce);
  const std::unordered_set<UOp, UOpHash> reduced(inner.begin(), inner.end());
  for (const UOp& u : toposort(flat)) {
    if (u.op() != Ops::INDEX || reduced.count(u)) continue;
    std::vector<UOp> src = u.src();
    for (size_t i = 1; i < src.size(); ++i) src[i] = simplify(src[i]);
    simpler.emplace(u, u.replace(std::move(src)));
  }
  return substitute(flat, simpler);
}

std::string CRenderer::bind(const std::vector<UOp>& ranges, const std::string& flat) {
  std::string decl;
  int64_t stride = prod_sizes(ranges);
  for (const UOp& r : ranges) {
    stride /= range_size(r);
    std::string v = stride == 1 ? "(" + flat + ")" : fmt::format("({}) / {}", flat, stride);
    if (r != ranges.front()) v = fmt::format("{} % {}", v, range_size(r));
    decl += fmt::format("{}const int64_t {} = {};", decl.empty() ? "" : " ", name_of(r), v);
  }
  return decl;
}

void CRenderer::winograd_weights(const GemmPlan& p, int depth, std::string& out) {
  const GemmWinograd& g = *p.winograd;
  const GemmWindow& w = *p.window;
  const int64_t C = g.channels, mr = p.mr, stride = g.panels * C * mr;
  auto line = [&](int d, const std::string& text) { out += indent(d) + text + "\n"; };
  int d = depth;
  line(d, "// Winograd: U = G g G^T of each row and channel, [16][panel][channel][mr]");
  line(d++,
       fmt::format("for (int64_t m = m_lo; m < m_lo + (m_hi - m_lo + {0}) / {1} * {1}; m++) {{",
                   mr - 1, mr));
  line(d, fmt::format("const int64_t pl = (m - m_lo) / {0}, pi = (m - m_lo) % {0};", mr));
  line(d++, fmt::format("for (int64_t r = 0; r < {}; r++) {{", C));
  line(d, "float g[9];");
  line(d++, "if (m < m_hi) {");
  line(d, bind(p.m, "m") + (w.rest.empty() ? "" : " " + bind(w.rest, "r")));
  line(d++, "for (int64_t q = 0; q < 9; q++) {");
  line(d, fmt::format("const int64_t {} = q / 3, {} = q % 3;", name_of(w.ky), name_of(w.kx)));
  Names names;
  print(values_of({p.a}, topo_), d, out, names);
  line(d, fmt::format("g[q] = {};", operand(p.a, names)));
  line(--d, "}");
  line(--d, "} else {");
  line(d + 1, "for (int64_t q = 0; q < 9; q++) g[q] = 0.0f;");
  line(d, "}");
  line(d, "float t[12];");
  line(d, "for (int64_t j = 0; j < 3; j++) {");
  line(d + 1, "t[j] = g[j];");
  line(d + 1, "t[3 + j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);");
  line(d + 1, "t[6 + j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);");
  line(d + 1, "t[9 + j] = g[6 + j];");
  line(d, "}");
  line(d, fmt::format("float* restrict u = pack_a + (pl * {} + r) * {} + pi;", C, mr));
  line(d, "for (int64_t i = 0; i < 4; i++) {");
  line(d + 1, "const float a0 = t[3 * i], a1 = t[3 * i + 1], a2 = t[3 * i + 2];");
  line(d + 1, fmt::format("u[(4 * i) * {}] = a0;", stride));
  line(d + 1, fmt::format("u[(4 * i + 1) * {}] = 0.5f * (a0 + a1 + a2);", stride));
  line(d + 1, fmt::format("u[(4 * i + 2) * {}] = 0.5f * (a0 - a1 + a2);", stride));
  line(d + 1, fmt::format("u[(4 * i + 3) * {}] = a2;", stride));
  line(d, "}");
  line(--d, "}");
  line(--d, "}");
}

namespace {

// The sizes winograd_tiles prints.
struct WinogradSizes {
  int64_t C, mr, nb, V, vecs, TX, W;
  // The 16 planes of V and of the C tile, 64 floats apart beyond their size: a multiple of 4
  // KiB would put every plane's element in one L1 set.
  int64_t vs, cs;
  std::string vec_t;
};

WinogradSizes winograd_sizes(const GemmPlan& p) {
  const GemmWinograd& g = *p.winograd;
  const int64_t C = g.channels, mr = p.mr, nb = g.nb, V = p.vector, vecs = p.nr / V;
  const int64_t TX = g.tiles_x, W = range_size(p.n[1]), rows = g.panels * mr;
  return {C, mr, nb, V, vecs, TX, W, C * nb + 64, rows * nb + 64, fmt::format("vkg_f32x{}", V)};
}

// V, a row of tiles at a time: the copy's rows 2 ty .. 2 ty + 3, read at stride 2.
void winograd_inputs(const GemmPlan& p, const WinogradSizes& s, int d, std::string& out) {
  const GemmWindow& w = *p.window;
  const Lines line{out};
  line(d++, fmt::format("for (int64_t r = 0; r < {}; r++) {{", s.C));
  line(d, fmt::format("const float* restrict pr = pack_b + r * {};", w.rows * w.cols));
  line(d, fmt::format("float* restrict vr = vb + r * {};", s.nb));
  line(d++, "for (int64_t ty = ty0; ty < ty1; ty++) {");
  line(d, fmt::format("const float* restrict d = pr + 2 * ty * {};", w.cols));
  line(d, fmt::format("float* restrict v = vr + (ty - ty0) * {};", s.TX));
  out += kVectorizeDisjoint;
  line(d++, fmt::format("for (int64_t tx = 0; tx < {}; tx++) {{", s.TX));
  // Row i of d times B: s<j><i> = (d B)[i][j]; then V[4 i + j] = (B^T s)[i][j].
  const std::string col[4][4] = {
      {"0", "2", "-"}, {"1", "2", "+"}, {"2", "1", "-"}, {"1", "3", "-"}};
  for (int i = 0; i < 4; ++i) {
    line(d, fmt::format("const float* restrict d{} = d + {} + 2 * tx;", i, i * w.cols));
    for (int j = 0; j < 4; ++j)
      line(d, fmt::format("const float s{0}{1} = d{1}[{2}] {4} d{1}[{3}];", j, i, col[j][0],
                          col[j][1], col[j][2]));
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      line(d, fmt::format("v[{} + tx] = s{}{} {} s{}{};", (4 * i + j) * s.vs, j, col[i][0],
                          col[i][2], j, col[i][1]));
  line(--d, "}");
  line(--d, "}");
  // The block's columns past its tiles are zeros (their products are never read).
  line(d, fmt::format("for (int64_t x = 0; x < 16; x++)"));
  line(d + 1, fmt::format("for (int64_t n = nt; n < {}; n++) vr[x * {} + n] = 0.0f;", s.nb, s.vs));
  line(--d, "}");
}

// Each statement over the register tile, its loops unrolled.
void winograd_tile_loops(const Lines& line, int d, const WinogradSizes& s,
                         const std::string& statement) {
  line.out += kUnroll;
  line(d, fmt::format("for (int64_t i = 0; i < {}; i++) {{", s.mr));
  line.out += kUnroll;
  line(d + 1, fmt::format("for (int64_t j = 0; j < {}; j++) {{", s.vecs));
  line(d + 2, statement);
  line(d + 1, "}");
  line(d, "}");
}

// The 16 GEMMs: mr x nr register tiles over all channels.
void winograd_products(const GemmPlan& p, const WinogradSizes& s, int d, std::string& out) {
  const GemmWinograd& g = *p.winograd;
  const Lines line{out};
  line(d++, "for (int64_t x = 0; x < 16; x++) {");
  line(d++, fmt::format("for (int64_t jr = 0; jr < {}; jr += {}) {{", s.nb, p.nr));
  line(d++, "for (int64_t pl = 0; pl < npan; pl++) {");
  line(d, fmt::format("const float* restrict ap = pack_a + (x * {} + pl) * {};", g.panels,
                      s.C * s.mr));
  line(d, fmt::format("const float* restrict bp = vb + x * {} + jr;", s.vs));
  line(d, fmt::format("float* restrict cp = tile_c + x * {} + pl * {} + jr;", s.cs, s.mr * s.nb));
  line(d, fmt::format("{} acc[{}][{}];", s.vec_t, s.mr, s.vecs));
  winograd_tile_loops(line, d, s, fmt::format("acc[i][j] = ({}){{0}};", s.vec_t));
  line(d++, fmt::format("for (int64_t kk = 0; kk < {}; kk++) {{", s.C));
  winograd_tile_loops(
      line, d, s,
      fmt::format("acc[i][j] = vkg_fma{}(ap[kk * {} + i], *(const {}*)(bp + kk * {} + "
                  "j * {}), acc[i][j]);",
                  s.V, s.mr, s.vec_t, s.nb, s.V));
  line(--d, "}");
  winograd_tile_loops(line, d, s,
                      fmt::format("*({}*)(cp + i * {} + j * {}) = acc[i][j];", s.vec_t, s.nb, s.V));
  line(--d, "}");
  line(--d, "}");
  line(--d, "}");
}

}  // namespace

void CRenderer::winograd_tiles(const GemmPlan& p, int depth, std::string& out) {
  const GemmWinograd& g = *p.winograd;
  const WinogradSizes s = winograd_sizes(p);
  const Lines line{out};
  int d = depth;
  line(d, fmt::format("float* restrict vb = pack_b + {};", g.v_offset));
  line(d, fmt::format("float* restrict yb = tile_c + {};", g.y_offset));
  line(d, fmt::format("const int64_t npan = (m_hi - m_lo + {}) / {};", s.mr - 1, s.mr));
  line(d++,
       fmt::format("for (int64_t ty0 = 0; ty0 < {0}; ty0 += {1}) {{", g.tiles_y, g.block_rows));
  line(d, fmt::format("const int64_t ty1 = ty0 + {0} < {1} ? ty0 + {0} : {1};", g.block_rows,
                      g.tiles_y));
  line(d, fmt::format("const int64_t nt = (ty1 - ty0) * {};", s.TX));
  winograd_inputs(p, s, d, out);
  winograd_products(p, s, d, out);
  // Y = A^T M A of each row and tile, two rows of outputs at a time, then the epilogue.
  line(d++, "for (int64_t i = 0; i < m_hi - m_lo; i++) {");
  line(d, bind(p.m, "m_lo + i"));
  line(d++, "for (int64_t ty = ty0; ty < ty1; ty++) {");
  line(d, fmt::format("const float* restrict c = tile_c + i * {} + (ty - ty0) * {};", s.nb, s.TX));
  out += kVectorizeDisjoint;
  line(d++, fmt::format("for (int64_t tx = 0; tx < {}; tx++) {{", s.TX));
  for (int j = 0; j < 4; ++j) {
    line(d,
         fmt::format("const float m0{0} = c[{1} + tx], m1{0} = c[{2} + tx], m2{0} = c[{3} + tx], "
                     "m3{0} = c[{4} + tx];",
                     j, j * s.cs, (4 + j) * s.cs, (8 + j) * s.cs, (12 + j) * s.cs));
    line(d, fmt::format("const float r0{0} = m0{0} + m1{0} + m2{0}, r1{0} = m1{0} - m2{0} - m3{0};",
                        j));
  }
  line(d, "yb[2 * tx] = r00 + r01 + r02;");
  line(d, "yb[2 * tx + 1] = r01 - r02 - r03;");
  line(d, fmt::format("yb[{} + 2 * tx] = r10 + r11 + r12;", s.W));
  line(d, fmt::format("yb[{} + 2 * tx + 1] = r11 - r12 - r13;", s.W));
  line(--d, "}");
  const UOp& y = p.n[0];
  const UOp& x = p.n[1];
  line(d++, "for (int64_t a = 0; a < 2; a++) {");
  line(d, fmt::format("const int64_t {} = 2 * ty + a;", name_of(y)));
  out += kVectorize;
  line(d++, fmt::format("for (int64_t {0} = 0; {0} < {1}; {0}++) {{", name_of(x), s.W));
  line(d, fmt::format("const float red = yb[a * {} + {}];", s.W, name_of(x)));
  Names names{{p.reduce.get(), "red"}};
  const UOp& st = ast_.src(0);
  print(values_of({st}, topo_), d, out, names);
  out += store(st, names, d);
  line(--d, "}");
  line(--d, "}");
  line(--d, "}");
  line(--d, "}");
  line(--d, "}");
}

}  // namespace vkgrad
