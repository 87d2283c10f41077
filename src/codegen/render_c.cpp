// codegen: print a kernel's linear list (linearize.hpp) as C, or a planned GEMM from its plan.
//
// The global ranges are plain loops, the first over [start, end): the thread pool's slice.
// Variables are read once from `vars` (Program::vars order) into `var_<name>`, which loop bounds
// and expressions use.
//
// Semantics kept exact: signed integer arithmetic wraps (computed in unsigned), division
// truncates as C's does, float math is IEEE (no fast-math, no contraction). float16/bfloat16
// arrive as float32 values and uint16 bits (lower_halves); division guards, shifts and float max
// arrive written out by decompose; exp2, log2 and sin reach the printer only where the target has
// them natively (libm's, as GCC's builtins), the others arrive as arithmetic.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/language.hpp"
#include "codegen/linearize.hpp"
#include "codegen/pipeline.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

constexpr const char* kPrelude = R"(#include <stdint.h>
typedef _Bool bool_t;
)";

// The GEMM micro kernel's vectors of V floats (GCC vector extensions: one register where the
// target has vectors that wide, lowered to narrower ones elsewhere). Every vector access is
// aligned to the vector's size.
std::string gemm_prelude(int64_t v) {
  return fmt::format(R"(typedef float vkg_f32x{0} __attribute__((vector_size({1})));
typedef float vkg_f32x{0}u __attribute__((vector_size({1}), aligned(4)));
static inline vkg_f32x{0} vkg_fma{0}(float a, vkg_f32x{0} b, vkg_f32x{0} c) {{
  vkg_f32x{0} r;
#pragma GCC unroll {0}
  for (int i = 0; i < {0}; i++) r[i] = __builtin_fmaf(a, b[i], c[i]);
  return r;
}}
)",
                     v, 4 * v);
}

// Upcast and unroll loops have small constant trip counts: unrolled completely, their
// accumulators become registers and the C compiler's SLP vectorizer packs them into vectors.
constexpr const char* kUnroll = "#pragma GCC unroll 64\n";
constexpr const char* kVectorize =
    "#pragma clang loop vectorize(enable) interleave(disable) unroll(disable)\n";

// C's types: computed in, stored in, the unsigned twin (no half types: lower_halves).
constexpr TypeTable kCTypes = [] {
  TypeTable t{};
  auto row = [&](ScalarType s, const char* c, const char* st, const char* u) {
    t[static_cast<size_t>(s)] = {c, st, u};
  };
  row(ScalarType::bool_, "bool_t", "bool_t", "bool_t");
  row(ScalarType::int8, "int8_t", "int8_t", "uint8_t");
  row(ScalarType::uint8, "uint8_t", "uint8_t", "uint8_t");
  row(ScalarType::int16, "int16_t", "int16_t", "uint16_t");
  row(ScalarType::uint16, "uint16_t", "uint16_t", "uint16_t");
  row(ScalarType::int32, "int32_t", "int32_t", "uint32_t");
  row(ScalarType::uint32, "uint32_t", "uint32_t", "uint32_t");
  row(ScalarType::int64, "int64_t", "int64_t", "uint64_t");
  row(ScalarType::uint64, "uint64_t", "uint64_t", "uint64_t");
  row(ScalarType::float32, "float", "float", "float");
  row(ScalarType::float64, "double", "double", "double");
  row(ScalarType::index, "int64_t", "int64_t", "int64_t");
  return t;
}();
std::string ctype(DType d) { return type_names(kCTypes, d, "render_c").compute; }
std::string storage_type(DType d) { return type_names(kCTypes, d, "render_c").storage; }
std::string utype(DType d) { return type_names(kCTypes, d, "render_c").unsigned_; }
bool is_signed_int(DType d) { return d.is_int() && !d.is_unsigned() && d != dtypes::index; }

std::string float_literal(double v, DType d) {
  const bool f32 = d.scalar() != dtypes::float64;
  if (std::isnan(v)) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) {
    const std::string inf = f32 ? "__builtin_inff()" : "__builtin_inf()";
    return v < 0 ? "(-" + inf + ")" : inf;
  }
  return fmt::format("{:a}{}", v, f32 ? "f" : "");
}

std::string const_literal(const UOp& c) {
  const DType d = c.dtype();
  const ConstValue v = c.const_value();
  if (d.is_float()) return float_literal(std::get<double>(v), d);
  if (d.is_bool()) return std::get<bool>(v) ? "1" : "0";
  const int64_t i = std::get<int64_t>(v);
  if (d.scalar() == dtypes::uint64) return fmt::format("{}ull", static_cast<uint64_t>(i));
  if (i == INT64_MIN) return "((int64_t)(-9223372036854775807ll-1))";
  if (d.scalar() == dtypes::int64 || d == dtypes::index) return fmt::format("{}ll", i);
  return fmt::format("(({}){})", ctype(d), i);
}

// Binary/unary ALU expression in C for result dtype `d` over operand expressions. Signed
// arithmetic wraps (computed in the unsigned twin); small integer results are cut back to their
// type; the libm functions are GCC's builtins.
std::string alu_expr(Ops op, DType d, DType sd, const std::vector<std::string>& s) {
  const std::string T = ctype(d);
  const bool f64 = sd.scalar() == dtypes::float64;
  const char* o = infix(op);
  switch (op) {
    case Ops::ADD:
    case Ops::SUB:
    case Ops::MUL:
      if (is_signed_int(d))
        return fmt::format("(({})(({}){} {} ({}){}))", T, utype(d), s[0], o, utype(d), s[1]);
      if (d.is_int() && d.itemsize() < 4) return fmt::format("(({})({} {} {}))", T, s[0], o, s[1]);
      return fmt::format("({} {} {})", s[0], o, s[1]);
    case Ops::FDIV:
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::CMPEQ:
      return fmt::format("({} {} {})", s[0], o, s[1]);
    case Ops::IDIV:  // divisors are safe: decompose guarded zero and MIN / -1
    case Ops::MOD:
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
    case Ops::SHR:
      return fmt::format("(({})({} {} {}))", T, s[0], o, s[1]);
    case Ops::SHL:
      return fmt::format("(({})(({}){} << {}))", T, utype(d), s[0], s[1]);
    case Ops::NEG:
      if (d.is_bool()) return fmt::format("(!{})", s[0]);
      if (d.is_int()) return fmt::format("(({})(0 - ({}){}))", T, utype(d), s[0]);
      return fmt::format("(-{})", s[0]);
    case Ops::MAX:  // a float max was written out by decompose
      if (d.is_bool()) return fmt::format("({} | {})", s[0], s[1]);
      if (d.is_float()) break;
      return fmt::format("({0} > {1} ? {0} : {1})", s[0], s[1]);
    case Ops::WHERE:
      return fmt::format("({} ? {} : {})", s[0], s[1], s[2]);
    case Ops::MULACC:  // floats only (fuse_multiply_add)
      return fmt::format("{}({}, {}, {})", d == dtypes::float64 ? "fma" : "fmaf", s[0], s[1], s[2]);
    case Ops::EXP2:  // those the target has natively (the others were decomposed)
    case Ops::LOG2:
    case Ops::SIN:
    case Ops::SQRT:
    case Ops::TRUNC: {  // libm's name is the op's, in lower case
      std::string name(op_name(op));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return fmt::format("__builtin_{}{}({})", name, f64 ? "" : "f", s[0]);
    }
    case Ops::RECIPROCAL:
      return fmt::format("({} / {})", float_literal(1.0, d), s[0]);
    default:
      break;
  }
  throw InternalError(fmt::format("render_c: no C form for {} of {}", op_name(op), d.name()));
}

std::string cast_expr(DType from, DType to, const std::string& x) {
  if (to.is_bool()) return fmt::format("({} != 0)", x);
  (void)from;
  return fmt::format("(({}){})", ctype(to), x);
}

class CRenderer : public Printer {
 public:
  CRenderer(const UOp& ast, const std::string& name, const UOp& vector_loop)
      : Printer(ast), ast_(ast), topo_(toposort(ast)), name_(name), vector_loop_(vector_loop) {}

  void render(Program& p, const std::vector<UOp>& list, const GemmPlan* gemm) {
    std::string body;
    // Buffers.
    std::vector<UOp> globals;
    for (const UOp& u : topo_)
      if (u.op() == Ops::DEFINE_GLOBAL) globals.push_back(u);
    std::sort(globals.begin(), globals.end(),
              [](const UOp& a, const UOp& b) { return a.arg_as<int64_t>() < b.arg_as<int64_t>(); });
    for (const UOp& g : globals) {
      const int64_t slot = g.arg_as<int64_t>();
      body += fmt::format("  {}{}* restrict data{} = ({}{}*)bufs[{}];\n", slot ? "const " : "",
                          storage_type(g.dtype().base()), slot, slot ? "const " : "",
                          storage_type(g.dtype().base()), slot);
    }
    for (size_t i = 0; i < vars_.size(); ++i) {
      const std::string T = ctype(vars_[i].dtype());
      body += fmt::format("  const {} {} = {}vars[{}];\n", T, var_names_[i],
                          T == "int64_t" ? "" : "(" + T + ")", i);
    }
    if (vars_.empty()) body += "  (void)vars;\n";
    if (gemm) {  // plan_gemm plans only kernels of constant sizes
      render_gemm(*gemm, body, static_cast<int>(globals.size()));
      p.source = fmt::format(
          "{}{}void {}(void** bufs, const int64_t* vars, int64_t start, int64_t end) {{\n{}}}\n",
          kPrelude, gemm_prelude(gemm->vector), name_, body);
      return;
    }
    // The global loops come first, the outermost over the thread's slice [start, end) of it.
    for (const UOp& u : list)
      if (u.op() == Ops::RANGE && u.arg_as<AxisArg>().type == AxisType::global) {
        first_global_ = u;
        break;
      }
    if (!first_global_) body += "  if (start >= end) return;\n";
    Names names;
    print(list, 1, body, names);
    p.source = fmt::format(
        "{}void {}(void** bufs, const int64_t* vars, int64_t start, int64_t end) {{\n{}}}\n",
        kPrelude, name_, body);
  }

 private:
  std::string type(DType d) const override { return ctype(d); }
  std::string literal(const UOp& c) const override { return const_literal(c); }
  // Integer identities print bare (0, 1); the lowest values need their type.
  std::string register_literal(const UOp& c) const override {
    const DType d = c.dtype();
    if (d.is_int() && (c.is_const(0) || c.is_const(1)))
      return std::to_string(std::get<int64_t>(c.const_value()));
    return const_literal(c);
  }
  std::string alu(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                  const UOp&) const override {
    return alu_expr(op, d, sd, s);
  }
  std::string cast(DType from, DType to, const std::string& x) const override {
    return cast_expr(from, to, x);
  }
  std::string bitcast(DType from, DType to, const std::string& x) const override {
    return fmt::format("({{ {} b_ = {}; {} r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; }})",
                       storage_type(from), x, storage_type(to));
  }
  std::string load(const UOp& ld, const Names& names) const override {
    const UOp& idx = ld.src(0);
    const DType d = ld.dtype();
    std::string x =
        fmt::format("data{}[{}]", idx.src(0).arg_as<int64_t>(), operand(idx.src(1), names));
    if (idx.src().size() > 2)
      x = fmt::format("({} ? {} : ({}){})", operand(idx.src(2), names), x, ctype(d),
                      d.is_float() ? float_literal(0.0, d) : "0");
    return x;
  }
  std::string store(const UOp& st, const Names& names, int depth) const override {
    const UOp& index = st.src(0);
    const std::string value = operand(st.src(1), names);
    return fmt::format("{}data{}[{}] = {};\n", indent(depth), index.src(0).arg_as<int64_t>(),
                       operand(index.src(1), names), value);
  }
  // Upcast and unroll loops are unrolled (their accumulators become registers), except the one
  // the pipeline leaves to the C compiler's loop vectorizer (vector_loop): clang would still
  // unroll a short one (8 iterations) before its vectorizer sees it, so the loop says so (GCC
  // ignores the pragma).
  std::string loop_open(const UOp& r, int depth) const override {
    if (r.arg_as<AxisArg>().type == AxisType::global)
      return r == first_global_ ? fmt::format("{0}for (int64_t {1} = start; {1} < end; {1}++) {{\n",
                                              indent(depth), name_of(r))
                                : fmt::format("{0}for (int64_t {1} = 0; {1} < {2}; {1}++) {{\n",
                                              indent(depth), name_of(r), range_end(r));
    const char* pragma = r == vector_loop_                              ? kVectorize
                         : r.arg_as<AxisArg>().type != AxisType::reduce ? kUnroll
                                                                        : "";
    return fmt::format("{0}{1}for (int64_t {2} = 0; {2} < {3}; {2}++) {{\n", pragma, indent(depth),
                       name_of(r), range_end(r));
  }

  // A packed, blocked GEMM (the plan's comment in pipeline.hpp; BLIS's loop structure):
  //   for batch, for column blocks jc (nc):  pack B[all k, jc block] into strips of nr columns
  //     for row blocks ic (mc) of this thread's rows, for k blocks pc (kc):
  //       pack A[ic block, pc block] into panels of mr rows
  //       for each nr strip, for each mr panel: mr x nr accumulators over kc, kept in tile_c
  //     epilogue and store of the ic x jc block from tile_c.
  // The parallel axis is the panels of mr rows, the strips of nr columns or the first batch range
  // (GemmPlan::split).
  // The operands, the epilogue and the store are the kernel's own nodes, emitted where their ranges
  // are bound. Accumulation is a fused multiply-add (one rounding per step).
  void render_gemm(const GemmPlan& p, std::string& out, int buffers) {
    auto size = [](const std::vector<UOp>& ranges) {
      int64_t n = 1;
      for (const UOp& r : ranges) n *= range_size(r);
      return n;
    };
    const GemmWindow* win = p.window ? &*p.window : nullptr;
    const int64_t M = size(p.m), K = size(p.k);
    const int64_t N = win ? range_size(p.n[0]) * win->cols : size(p.n);
    // Declares `ranges` from their flattened index `flat` (the innermost varies fastest).
    auto bind = [&](const std::vector<UOp>& ranges, const std::string& flat) {
      std::string decl;
      int64_t stride = size(ranges);
      for (const UOp& r : ranges) {
        stride /= range_size(r);
        std::string v = stride == 1 ? "(" + flat + ")" : fmt::format("({}) / {}", flat, stride);
        if (r != ranges.front()) v = fmt::format("{} % {}", v, range_size(r));
        decl += fmt::format("{}const int64_t {} = {};", decl.empty() ? "" : " ", name_of(r), v);
      }
      return decl;
    };
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
    if (win) {
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
                          "{} * {} + {} / {});",
                          rest, win->sy, ky, win->sy, win->sx, kx, win->sx, win->rows * win->cols,
                          ky, win->sy, win->cols, kx, win->sx));
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
                    const std::string& w_flat, const std::string& bind_k) {
      const int base = depth;
      auto body = [&] {
        Names names;
        print(values_of({x}, topo_), depth, out, names);
        line(depth, fmt::format("{}[kk * {} + w] = {};", panel, width, operand(x, names)));
      };
      auto zero_fill = [&] {
        open("w", ws, std::to_string(width));
        line(depth, fmt::format("{}[kk * {} + w] = 0.0f;", panel, width));
        close_to(depth - 1);
      };
      if (w_ranges.size() <= 1) {
        open("kk", "0", ks);
        line(depth, bind_k);
        open("w", "0", ws);
        line(depth, bind(w_ranges, w_flat));
        body();
        close_to(depth - 1);
        zero_fill();
        close_to(base);
        return;
      }
      const UOp& inner = w_ranges.back();
      const std::vector<UOp> outer(w_ranges.begin(), w_ranges.end() - 1);
      // The segments: seg_w[s] .. seg_w[s + 1] of the panel, the innermost range from seg_in[s],
      // the outer ranges' values in seg_<range>[s].
      line(depth, fmt::format("int64_t seg_w[{}], seg_in[{}];", width + 1, width));
      for (const UOp& r : outer) line(depth, fmt::format("int64_t seg_{}[{}];", name_of(r), width));
      line(depth, "int64_t nseg = 0;");
      line(depth++, fmt::format("for (int64_t w = 0; w < {}; nseg++) {{", ws));
      line(depth, bind(w_ranges, w_flat));
      line(depth, fmt::format("seg_w[nseg] = w; seg_in[nseg] = {};", name_of(inner)));
      for (const UOp& r : outer) line(depth, fmt::format("seg_{0}[nseg] = {0};", name_of(r)));
      line(depth, fmt::format("w += {} - {} < {} - w ? {} - {} : {} - w;", range_size(inner),
                              name_of(inner), ws, range_size(inner), name_of(inner), ws));
      close_to(base);
      line(depth, "seg_w[nseg] = " + ws + ";");
      open("kk", "0", ks);
      line(depth, bind_k);
      open("sg", "0", "nseg");
      std::string bind_outer;
      for (const UOp& r : outer)
        bind_outer += fmt::format("const int64_t {0} = seg_{0}[sg]; ", name_of(r));
      line(depth, bind_outer + "const int64_t w0 = seg_w[sg], in0 = seg_in[sg];");
      open("i", "0", "seg_w[sg + 1] - w0");
      line(depth,
           fmt::format("const int64_t {} = in0 + i; const int64_t w = w0 + i;", name_of(inner)));
      body();
      close_to(depth - 2);
      zero_fill();
      close_to(base);
    };

    if (win) {
      // The window copy of this batch element: every plane of the rest of k, rows x cols, then
      // zeros.
      const int base = depth;
      const int64_t R = size(win->rest);
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
    open("jc", "n_lo", "n_hi", std::to_string(p.nc));
    clamp("nc", "n_hi - jc", p.nc);
    if (!win) {
      open("jr", "0", "nc", std::to_string(p.nr));
      clamp("nr", "nc - jr", p.nr);
      line(depth, fmt::format("float* restrict pb = pack_b + jr * {};", K));
      pack(p.b, "pb", p.nr, "nr", std::to_string(K), p.n, "jc + jr + w", bind(p.k, "kk"));
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
      pack(p.a, "pa", p.mr, "mr", "kc", p.m, "ic + ir + w", bind(p.k, "pc + kk"));
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
    } else {
      open("j", "0", "nc");
      line(depth, bind(p.m, "ic + i") + " " + bind(p.n, "jc + j"));
    }
    line(depth, fmt::format("const float red = tile_c[i * {} + j];", p.nc));
    Names names{{p.reduce.get(), "red"}};
    const UOp& st = ast_.src(0);
    print(values_of({st}, topo_), depth, out, names);
    out += store(st, names, depth);
    close_to(1);
  }

  UOp ast_;
  std::vector<UOp> topo_;
  std::string name_;
  UOp vector_loop_;
  UOp first_global_;
};

}  // namespace

void render_c(const UOp& ast, const std::vector<UOp>& list, const std::string& name,
              const GemmPlan* gemm, const UOp& vector_loop, Program& p) {
  CRenderer(ast, name, vector_loop).render(p, list, gemm);
}

namespace {
// A range's size in a kernel name: the constant, or the names of the variables it depends on.
std::string size_label(const UOp& r) {
  if (range_size(r) >= 0) return std::to_string(range_size(r));
  std::string label;
  for (const UOp& u : toposort(r.src(0)))
    if (u.op() == Ops::DEFINE_VAR)
      label += (label.empty() ? "" : "_") + c_identifier(u.arg_as<VarArg>().name);
  return label;
}
}  // namespace

std::string kernel_name(const UOp& ast) {
  std::vector<UOp> ranges;
  bool reduce = false;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::RANGE) ranges.push_back(u);
    reduce = reduce || u.op() == Ops::REDUCE;
  }
  std::sort(ranges.begin(), ranges.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
  });
  ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  std::string name = reduce ? "r" : "E";
  // Global sizes, then reduce sizes, then upcast/unroll sizes (tinygrad's order).
  for (AxisType t : {AxisType::global, AxisType::reduce, AxisType::group_reduce, AxisType::upcast,
                     AxisType::unroll})
    for (const UOp& r : ranges)
      if (r.arg_as<AxisArg>().type == t) name += "_" + size_label(r);
  if (name.size() == 1) name += "_1";
  return name;
}

}  // namespace vkgrad
