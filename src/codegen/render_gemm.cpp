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

}  // namespace

void CRenderer::render_gemm(const GemmPlan& p, std::string& out, int buffers) {
  const GemmWindow* win = p.window ? &*p.window : nullptr;
  const int64_t M = prod_sizes(p.m), K = prod_sizes(p.k);
  const int64_t N = win ? range_size(p.n[0]) * win->cols : prod_sizes(p.n);
  auto line = [&](int depth, const std::string& text) { out += indent(depth) + text + "\n"; };
  // The packed panels and the C tile live in the thread's scratch (the runtime's, 64-byte
  // aligned, after the buffers), where the plan put them.
  auto scratch = [&](const char* name, int64_t offset) {
    line(1, fmt::format("float* restrict {} = (float*)bufs[{}] + {};", name, buffers, offset));
  };
  scratch("pack_a", p.scratch_a);
  scratch("pack_b", p.scratch_b);
  scratch("tile_c", p.scratch_c);
  // This thread's share: a slice of the first batch range, or rows [m_lo, m_hi) and columns
  // [n_lo, n_hi).
  const bool by_rows = p.split == GemmSplit::rows, by_columns = p.split == GemmSplit::columns;
  const int64_t step = p.step, share = p.share;
  const std::string lo = fmt::format("start * {}", step),
                    hi = fmt::format("(end * {0} < {1} ? end * {0} : {1})", step, share);
  line(1, fmt::format("const int64_t m_lo = {}, m_hi = {};", by_rows ? lo : "0",
                      by_rows ? hi : std::to_string(M)));
  line(1, fmt::format("const int64_t n_lo = {}, n_hi = {};", by_columns ? lo : "0",
                      by_columns ? hi : std::to_string(N)));
  int depth = 1;
  const GemmWinograd* wg = p.winograd ? &*p.winograd : nullptr;
  if (win && !wg) {
    // B's window: each k's offset into the copy (the rest of k's planes, then ky rows and kx
    // columns in).
    line(1, fmt::format("int32_t* restrict offs = (int32_t*)(pack_b + {});", win->floats));
    line(1, fmt::format("for (int64_t kk = 0; kk < {}; kk++) {{", K));
    line(2, bind(p.k, "kk"));
    std::string rest = "0";
    for (const UOp& r : win->rest)
      rest = fmt::format("({}) * {} + {}", rest, range_size(r), name_of(r));
    // The tap's phase plane, then its row and column in it.
    const std::string ky = name_of(win->ky), kx = name_of(win->kx);
    line(2, fmt::format("offs[kk] = (int32_t)(((({}) * {} + {} % {}) * {} + {} % {}) * {} + {} / "
                        "{} * {} + {} / {} * {});",
                        rest, win->sy, ky, win->sy, win->sx, kx, win->sx, win->rows * win->cols, ky,
                        win->sy, win->dy * win->cols, kx, win->sx, win->dx));
    line(1, "}");
  }
  for (const UOp& b : p.batch) {
    const bool split = b == p.batch[0] && p.split == GemmSplit::batch;
    line(depth++,
         fmt::format("for (int64_t {0} = {1}; {0} < {2}; {0}++) {{", name_of(b),
                     split ? "start" : "0", split ? "end" : std::to_string(range_size(b))));
  }
  auto open = [&](const std::string& var, const std::string& lo, const std::string& hi,
                  const std::string& step = "1") {
    line(depth++,
         fmt::format("for (int64_t {0} = {1}; {0} < {2}; {0} += {3}) {{", var, lo, hi, step));
  };
  auto open_unrolled = [&](const std::string& var, int64_t hi) {
    out += kUnroll;
    open(var, "0", std::to_string(hi));
  };
  auto close_to = [&](int to) {
    while (depth > to) line(--depth, "}");
  };
  auto clamp = [&](const std::string& var, const std::string& rest, int64_t block) {
    line(depth, fmt::format("const int64_t {0} = {1} < {2} ? {1} : {2};", var, rest, block));
  };
  // Packs `x` into panel[kk * width + w] for w < ws (zero up to width): the loops bind the
  // kernel's ranges (`w_ranges` from the flat index `w_flat`, then `bind_k`) and evaluate x's
  // nodes once per element. The stores are contiguous (a strided read is a gather; a strided
  // store would be a scatter). Several w ranges (a convolution's output rows and columns) are
  // walked as segments along the innermost one, whose outer ranges are bound once per panel
  // into small arrays (their divisions would dominate an im2col): within a segment the
  // innermost range steps by one with the element, so the compiler sees the reads along it
  // (an input row) as contiguous, masked where a pad is, instead of as a gather.
  auto pack = [&](const UOp& x, const std::string& panel, int64_t width, const std::string& ws,
                  const std::string& ks, const std::vector<UOp>& w_ranges,
                  const std::string& w_flat, const std::string& k_off) {
    const int base = depth;
    const std::string panel_at_kk = fmt::format("{}[kk * {} + w]", panel, width);
    // The flat k at a loop variable (k_off + it: A's block starts at pc).
    auto k_at = [&](const std::string& v) { return k_off.empty() ? v : k_off + " + " + v; };
    // x evaluated at the bound ranges, stored to `dest`.
    auto body = [&](const std::string& dest) {
      Names names;
      print(values_of({x}, topo_), depth, out, names);
      line(depth, fmt::format("{} = {};", dest, operand(x, names)));
    };
    auto zero_fill = [&] {
      open("w", ws, std::to_string(width));
      line(depth, panel_at_kk + " = 0.0f;");
      close_to(depth - 1);
    };
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
    if (segmented) {
      line(depth, fmt::format("int64_t seg_w[{}], seg_in[{}];", width + 1, width));
      for (const UOp& r : outer) line(depth, fmt::format("int64_t seg_{}[{}];", name_of(r), width));
      line(depth, "int64_t nseg = 0;");
      line(depth++, fmt::format("for (int64_t w = 0; w < {}; nseg++) {{", ws));
      line(depth, bind(w_ranges, w_flat));
      line(depth, fmt::format("seg_w[nseg] = w; seg_in[nseg] = {};", name_of(inner)));
      for (const UOp& r : outer) line(depth, fmt::format("seg_{0}[nseg] = {0};", name_of(r)));
      if (run == w_ranges.size())
        line(depth, "w = " + ws + ";");
      else
        line(depth,
             fmt::format("w += {0} - {1} < {2} - w ? {0} - {1} : {2} - w;", run_size, run_pos, ws));
      close_to(base);
      line(depth, "seg_w[nseg] = " + ws + ";");
    }
    // Each w of the panel (or of a segment), its ranges bound.
    auto open_w = [&] {
      if (!segmented) {
        open("w", "0", ws);
        line(depth, bind(w_ranges, w_flat));
        return;
      }
      open("sg", "0", "nseg");
      std::string bind_outer;
      for (const UOp& r : outer)
        bind_outer += fmt::format("const int64_t {0} = seg_{0}[sg]; ", name_of(r));
      line(depth, bind_outer + "const int64_t w0 = seg_w[sg], in0 = seg_in[sg];");
      open("i", "0", "seg_w[sg + 1] - w0");
      line(depth,
           fmt::format("const int64_t {} = in0 + i; const int64_t w = w0 + i;", name_of(inner)));
    };
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
      const std::vector<UOp> k_outer(p.k.begin(), p.k.end() - 1);
      open("kb", "0", ks, std::to_string(k_block));
      if (!k_outer.empty())
        line(depth, bind(k_outer, fmt::format("({}) / {}", k_at("kb"), k_block)));
      const int kb_depth = depth;
      line(depth, fmt::format("float kt[{}];", width * k_block));
      open_w();
      out += kVectorize;
      open("t", "0", std::to_string(k_block));
      line(depth, fmt::format("const int64_t {} = t;", name_of(k_in)));
      body(fmt::format("kt[w * {} + t]", k_block));
      close_to(kb_depth);
      open("t", "0", std::to_string(k_block));
      open("w", "0", ws);
      line(depth, fmt::format("{}[(kb + t) * {} + w] = kt[w * {} + t];", panel, width, k_block));
      close_to(base);
      open("kk", "0", ks);
      zero_fill();
      close_to(base);
      return;
    }
    open("kk", "0", ks);
    line(depth, bind(p.k, k_at("kk")));
    open_w();
    body(panel_at_kk);
    close_to(depth - (segmented ? 2 : 1));
    zero_fill();
    close_to(base);
  };

  if (wg) winograd_weights(p, depth, out);
  if (win) {
    // The window copy of this batch element: every plane of the rest of k, rows x cols, then
    // zeros.
    const int base = depth;
    const int64_t R = prod_sizes(win->rest);
    open("r", "0", std::to_string(R));
    if (!win->rest.empty()) line(depth, bind(win->rest, "r"));
    // The phases of a strided convolution: a plane per (py, px).
    std::string plane = "r";
    for (const auto& [phase, stride] : {std::pair{win->py, win->sy}, std::pair{win->px, win->sx}})
      if (stride > 1) {
        open(name_of(phase), "0", std::to_string(stride));
        plane = fmt::format("({}) * {} + {}", plane, stride, name_of(phase));
      }
    // A thread splitting the columns copies only the rows its columns reach.
    const bool by_cols = p.split == GemmSplit::columns;
    if (by_cols)
      line(depth, fmt::format("const int64_t y_lo = n_lo / {0}, y_end = (n_hi - 1) / {0} + {1}, "
                              "y_hi = y_end < {2} ? y_end : {2};",
                              win->cols, win->rows - range_size(p.n[0]) + 1, win->rows));
    open(name_of(win->y), by_cols ? "y_lo" : "0", by_cols ? "y_hi" : std::to_string(win->rows));
    const std::string x = name_of(win->x), cols = std::to_string(win->cols);
    // The window's graphs are the plan's, not the kernel's: their nodes in their own order.
    auto emit_graph = [&](const UOp& value, Names& names) {
      std::vector<UOp> nodes;
      for (const UOp& u : values_of({value}, toposort(value)))
        if (!names.count(u.get())) nodes.push_back(u);
      print(nodes, depth, out, names);
    };
    auto copy = [&](const UOp& value, Names names) {
      emit_graph(value, names);
      line(depth, fmt::format("pack_b[(({}) * {} + {}) * {} + {}] = {};", plane, win->rows,
                              name_of(win->y), win->cols, x, operand(value, names)));
    };
    if (win->lo.empty()) {
      out += kVectorize;
      open(x, "0", cols);
      copy(win->value, {});
    } else {
      // The interior [x_lo, x_hi) of a row where its masks hold is a plain read; the columns
      // on either side (or the whole row) copy the value with its masks.
      Names row;
      emit_graph(win->row_mask, row);
      auto by_phase = [&](const std::vector<int64_t>& at) {
        std::string e = std::to_string(at.back());
        for (size_t i = at.size() - 1; i-- > 0;)
          e = fmt::format("{} == {} ? {} : {}", name_of(win->px), i, at[i], e);
        return e;
      };
      const std::string holds = operand(win->row_mask, row);
      line(depth, fmt::format("const int64_t x_lo = {0} ? {1} : {3}, x_hi = {0} ? {2} : {3};",
                              holds, by_phase(win->lo), by_phase(win->hi), cols));
      open("e", "0", "2");
      open(x, "e ? x_hi : 0", "(e ? " + cols + " : x_lo)");
      copy(win->value, row);
      close_to(depth - 2);
      out += kVectorize;
      open(x, "x_lo", "x_hi");
      copy(win->interior, row);
    }
    close_to(base);
    open("z", std::to_string(win->plane), std::to_string(win->floats));
    line(depth, "pack_b[z] = 0.0f;");
    close_to(base);
  }
  if (wg) {
    winograd_tiles(p, depth, out);
    close_to(1);
    return;
  }
  open("jc", "n_lo", "n_hi", std::to_string(p.nc));
  clamp("nc", "n_hi - jc", p.nc);
  if (!win) {
    open("jr", "0", "nc", std::to_string(p.nr));
    clamp("nr", "nc - jr", p.nr);
    line(depth, fmt::format("float* restrict pb = pack_b + jr * {};", K));
    pack(p.b, "pb", p.nr, "nr", std::to_string(K), p.n, "jc + jr + w", "");
    close_to(depth - 1);
  }
  open("ic", "m_lo", "m_hi", std::to_string(p.mc));
  clamp("mc", "m_hi - ic", p.mc);
  const int ic_depth = depth;
  open("pc", "0", std::to_string(K), std::to_string(p.kc));
  clamp("kc", fmt::format("{} - pc", K), p.kc);
  if (!p.a_rows) {
    open("ir", "0", "mc", std::to_string(p.mr));
    clamp("mr", "mc - ir", p.mr);
    line(depth, "float* restrict pa = pack_a + ir * kc;");
    pack(p.a, "pa", p.mr, "mr", "kc", p.m, "ic + ir + w", "pc");
    close_to(depth - 1);
  }
  // The micro kernel: mr x (nr / V) vectors of accumulators.
  const int64_t V = p.vector, vecs = p.nr / V;
  const std::string vec_t = fmt::format("vkg_f32x{}", V);
  // A panel's rows read in place go once through all of the (few) strips.
  if (p.a_rows) {
    open("ir", "0", "mc", std::to_string(p.mr));
    open("jr", "0", "nc", std::to_string(p.nr));
  } else {
    open("jr", "0", "nc", std::to_string(p.nr));
    open("ir", "0", "mc", std::to_string(p.mr));
  }
  if (p.a_rows) {
    // A where it lies: a pointer per row of the panel at this k block (rows past the edge
    // read row 0; their results are never stored).
    line(depth, fmt::format("const float* ar[{}];", p.mr));
    clamp("mr", "mc - ir", p.mr);
    const int base = depth;
    open("w", "0", "mr");
    line(depth, bind(p.m, "ic + ir + w"));
    Names names;
    print(values_of({p.a_rows}, topo_), depth, out, names);
    line(depth, fmt::format("ar[w] = data{} + {} + pc;", p.a.src(0).src(0).arg_as<int64_t>(),
                            operand(p.a_rows, names)));
    close_to(base);
    open("w", "mr", std::to_string(p.mr));
    line(depth, "ar[w] = ar[0];");
    close_to(base);
  } else {
    line(depth, "const float* restrict ap = pack_a + ir * kc;");
  }
  if (win)
    line(depth, "const float* restrict bp = pack_b + jc + jr;");
  else
    line(depth, fmt::format("const float* restrict bp = pack_b + jr * {} + pc * {};", K, p.nr));
  line(depth, fmt::format("float* restrict cp = tile_c + ir * {} + jr;", p.nc));
  line(depth, fmt::format("{} acc[{}][{}];", vec_t, p.mr, vecs));
  const int tile_depth = depth;
  auto tile_loops = [&]() {
    open_unrolled("i", p.mr);
    open_unrolled("j", vecs);
  };
  const std::string c_vec = fmt::format("*({}*)(cp + i * {} + j * {})", vec_t, p.nc, V);
  tile_loops();
  line(depth, fmt::format("acc[i][j] = pc == 0 ? ({}){{0}} : {};", vec_t, c_vec));
  close_to(tile_depth);
  open("kk", "0", "kc");
  tile_loops();
  // B's vector: packed (aligned), or in the window copy at k's offset (unaligned).
  const std::string b_vec =
      win ? fmt::format("*(const {}u*)(bp + offs[pc + kk] + j * {})", vec_t, V)
          : fmt::format("*(const {}*)(bp + kk * {} + j * {})", vec_t, p.nr, V);
  line(depth, fmt::format("acc[i][j] = vkg_fma{}({}, {}, acc[i][j]);", V,
                          p.a_rows ? "ar[i][kk]" : fmt::format("ap[kk * {} + i]", p.mr), b_vec));
  close_to(tile_depth);
  tile_loops();
  line(depth, fmt::format("{} = acc[i][j];", c_vec));
  close_to(ic_depth);
  // The epilogue of the block.
  const bool flat = !win && p.n.size() > 1;
  open("i", "0", "mc");
  if (win) {
    // The window's columns y * cols + x, a row at a time: x up to the output's width (the
    // rest of the row is dropped) or the block's end.
    line(depth, bind(p.m, "ic + i"));
    const std::string y = name_of(p.n[0]), x = name_of(p.n[1]);
    line(depth++, fmt::format("for (int64_t n0 = jc; n0 < jc + nc; n0 = (n0 / {0} + 1) * {0}) {{",
                              win->cols));
    line(depth, fmt::format("const int64_t {0} = n0 / {1}, x0 = n0 % {1}, x1 = x0 + jc + nc - n0 "
                            "< {2} ? x0 + jc + nc - n0 : {2};",
                            y, win->cols, range_size(p.n[1])));
    out += kVectorize;
    open(x, "x0", "x1");
    line(depth, fmt::format("const int64_t j = {} * {} + {} - jc;", y, win->cols, x));
  } else if (flat) {
    // (clang honours restrict on parameters only: without the pragma it reloads the per-row
    // operands after each store and finds vectorizing not worth it; each column touches only
    // its own elements)
    out += kVectorizeDisjoint;
    open("j", "0", "nc");
    line(depth, bind(p.m, "ic + i") + " const int64_t col = jc + j;");
  } else {
    open("j", "0", "nc");
    line(depth, bind(p.m, "ic + i") + " " + bind(p.n, "jc + j"));
  }
  line(depth, fmt::format("const float red = tile_c[i * {} + j];", p.nc));
  Names names{{p.reduce.get(), "red"}};
  const UOp st = flat ? flat_columns(ast_.src(0), p) : ast_.src(0);
  const std::vector<UOp> flat_order = flat ? toposort(st) : std::vector<UOp>{};
  print(values_of({st}, flat ? flat_order : topo_), depth, out, names);
  out += store(st, names, depth);
  close_to(1);
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

void CRenderer::winograd_tiles(const GemmPlan& p, int depth, std::string& out) {
  const GemmWinograd& g = *p.winograd;
  const GemmWindow& w = *p.window;
  const int64_t C = g.channels, mr = p.mr, nb = g.nb, V = p.vector, vecs = p.nr / V;
  const int64_t TX = g.tiles_x, W = range_size(p.n[1]), rows = g.panels * mr;
  const std::string vec_t = fmt::format("vkg_f32x{}", V);
  auto line = [&](int d, const std::string& text) { out += indent(d) + text + "\n"; };
  // The 16 planes of V and of the C tile, 64 floats apart beyond their size: a multiple of 4
  // KiB would put every plane's element in one L1 set.
  const int64_t vs = C * nb + 64, cs = rows * nb + 64;
  int d = depth;
  line(d, fmt::format("float* restrict vb = pack_b + {};", g.v_offset));
  line(d, fmt::format("float* restrict yb = tile_c + {};", g.y_offset));
  line(d, fmt::format("const int64_t npan = (m_hi - m_lo + {}) / {};", mr - 1, mr));
  line(d++,
       fmt::format("for (int64_t ty0 = 0; ty0 < {0}; ty0 += {1}) {{", g.tiles_y, g.block_rows));
  line(d, fmt::format("const int64_t ty1 = ty0 + {0} < {1} ? ty0 + {0} : {1};", g.block_rows,
                      g.tiles_y));
  line(d, fmt::format("const int64_t nt = (ty1 - ty0) * {};", TX));
  // V, a row of tiles at a time: the copy's rows 2 ty .. 2 ty + 3, read at stride 2.
  line(d++, fmt::format("for (int64_t r = 0; r < {}; r++) {{", C));
  line(d, fmt::format("const float* restrict pr = pack_b + r * {};", w.rows * w.cols));
  line(d, fmt::format("float* restrict vr = vb + r * {};", nb));
  line(d++, "for (int64_t ty = ty0; ty < ty1; ty++) {");
  line(d, fmt::format("const float* restrict d = pr + 2 * ty * {};", w.cols));
  line(d, fmt::format("float* restrict v = vr + (ty - ty0) * {};", TX));
  out += kVectorizeDisjoint;
  line(d++, fmt::format("for (int64_t tx = 0; tx < {}; tx++) {{", TX));
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
      line(d, fmt::format("v[{} + tx] = s{}{} {} s{}{};", (4 * i + j) * vs, j, col[i][0], col[i][2],
                          j, col[i][1]));
  line(--d, "}");
  line(--d, "}");
  // The block's columns past its tiles are zeros (their products are never read).
  line(d, fmt::format("for (int64_t x = 0; x < 16; x++)"));
  line(d + 1, fmt::format("for (int64_t n = nt; n < {}; n++) vr[x * {} + n] = 0.0f;", nb, vs));
  line(--d, "}");
  // The 16 GEMMs: mr x nr register tiles over all channels.
  line(d++, "for (int64_t x = 0; x < 16; x++) {");
  line(d++, fmt::format("for (int64_t jr = 0; jr < {}; jr += {}) {{", nb, p.nr));
  line(d++, "for (int64_t pl = 0; pl < npan; pl++) {");
  line(d, fmt::format("const float* restrict ap = pack_a + (x * {} + pl) * {};", g.panels, C * mr));
  line(d, fmt::format("const float* restrict bp = vb + x * {} + jr;", vs));
  line(d, fmt::format("float* restrict cp = tile_c + x * {} + pl * {} + jr;", cs, mr * nb));
  line(d, fmt::format("{} acc[{}][{}];", vec_t, mr, vecs));
  // Each statement over the register tile, its loops unrolled.
  auto tile_loops = [&](int dd, const std::string& statement) {
    out += kUnroll;
    line(dd, fmt::format("for (int64_t i = 0; i < {}; i++) {{", mr));
    out += kUnroll;
    line(dd + 1, fmt::format("for (int64_t j = 0; j < {}; j++) {{", vecs));
    line(dd + 2, statement);
    line(dd + 1, "}");
    line(dd, "}");
  };
  tile_loops(d, fmt::format("acc[i][j] = ({}){{0}};", vec_t));
  line(d++, fmt::format("for (int64_t kk = 0; kk < {}; kk++) {{", C));
  tile_loops(d, fmt::format("acc[i][j] = vkg_fma{}(ap[kk * {} + i], *(const {}*)(bp + kk * {} + "
                            "j * {}), acc[i][j]);",
                            V, mr, vec_t, nb, V));
  line(--d, "}");
  tile_loops(d, fmt::format("*({}*)(cp + i * {} + j * {}) = acc[i][j];", vec_t, nb, V));
  line(--d, "}");
  line(--d, "}");
  line(--d, "}");
  // Y = A^T M A of each row and tile, two rows of outputs at a time, then the epilogue.
  line(d++, "for (int64_t i = 0; i < m_hi - m_lo; i++) {");
  line(d, bind(p.m, "m_lo + i"));
  line(d++, "for (int64_t ty = ty0; ty < ty1; ty++) {");
  line(d, fmt::format("const float* restrict c = tile_c + i * {} + (ty - ty0) * {};", nb, TX));
  out += kVectorizeDisjoint;
  line(d++, fmt::format("for (int64_t tx = 0; tx < {}; tx++) {{", TX));
  for (int j = 0; j < 4; ++j) {
    line(d,
         fmt::format("const float m0{0} = c[{1} + tx], m1{0} = c[{2} + tx], m2{0} = c[{3} + tx], "
                     "m3{0} = c[{4} + tx];",
                     j, j * cs, (4 + j) * cs, (8 + j) * cs, (12 + j) * cs));
    line(d, fmt::format("const float r0{0} = m0{0} + m1{0} + m2{0}, r1{0} = m1{0} - m2{0} - m3{0};",
                        j));
  }
  line(d, "yb[2 * tx] = r00 + r01 + r02;");
  line(d, "yb[2 * tx + 1] = r01 - r02 - r03;");
  line(d, fmt::format("yb[{} + 2 * tx] = r10 + r11 + r12;", W));
  line(d, fmt::format("yb[{} + 2 * tx + 1] = r11 - r12 - r13;", W));
  line(--d, "}");
  const UOp& y = p.n[0];
  const UOp& x = p.n[1];
  line(d++, "for (int64_t a = 0; a < 2; a++) {");
  line(d, fmt::format("const int64_t {} = 2 * ty + a;", name_of(y)));
  out += kVectorize;
  line(d++, fmt::format("for (int64_t {0} = 0; {0} < {1}; {0}++) {{", name_of(x), W));
  line(d, fmt::format("const float red = yb[a * {} + {}];", W, name_of(x)));
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
