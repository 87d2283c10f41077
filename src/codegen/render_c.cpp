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
#include "codegen/render_c.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/language.hpp"
#include "codegen/linearize.hpp"
#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
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
// A signed integer of the kernel's values (not an index) whose sum, difference and product C
// computes in its unsigned type, so that an overflow wraps instead of being undefined.
bool wraps_through_unsigned(DType d) {
  return d.is_int() && !d.is_unsigned() && d != dtypes::index;
}

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
      if (wraps_through_unsigned(d))
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

}  // namespace

CRenderer::CRenderer(const UOp& ast, const std::string& name, const UOp& vector_loop)
    : Printer(ast), ast_(ast), topo_(toposort(ast)), name_(name), vector_loop_(vector_loop) {}

void CRenderer::render(Program& p, const std::vector<UOp>& list, const GemmPlan* gemm) {
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

std::string CRenderer::type(DType d) const { return ctype(d); }
std::string CRenderer::literal(const UOp& c) const { return const_literal(c); }
// Integer identities print bare (0, 1); the lowest values need their type.
std::string CRenderer::register_literal(const UOp& c) const {
  const DType d = c.dtype();
  if (d.is_int() && (c.is_const(0) || c.is_const(1)))
    return std::to_string(std::get<int64_t>(c.const_value()));
  return const_literal(c);
}
std::string CRenderer::alu(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                           const UOp&) const {
  return alu_expr(op, d, sd, s);
}
std::string CRenderer::cast(DType from, DType to, const std::string& x) const {
  return cast_expr(from, to, x);
}
std::string CRenderer::bitcast(DType from, DType to, const std::string& x) const {
  return fmt::format("({{ {} b_ = {}; {} r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; }})",
                     storage_type(from), x, storage_type(to));
}
std::string CRenderer::load(const UOp& ld, const Names& names) const {
  const UOp& idx = ld.src(0);
  const DType d = ld.dtype();
  std::string x =
      fmt::format("data{}[{}]", idx.src(0).arg_as<int64_t>(), operand(idx.src(1), names));
  if (idx.src().size() > 2)
    x = fmt::format("({} ? {} : ({}){})", operand(idx.src(2), names), x, ctype(d),
                    d.is_float() ? float_literal(0.0, d) : "0");
  return x;
}
std::string CRenderer::store(const UOp& st, const Names& names, int depth) const {
  const UOp& index = st.src(0);
  const std::string value = operand(st.src(1), names);
  // A gated store (an in-place write whose offset may run past the buffer) stores where its gate
  // is on.
  const std::string gate =
      index.src().size() > 2 ? fmt::format("if ({}) ", operand(index.src(2), names)) : "";
  return fmt::format("{}{}data{}[{}] = {};\n", indent(depth), gate, index.src(0).arg_as<int64_t>(),
                     operand(index.src(1), names), value);
}
// Upcast and unroll loops are unrolled (their accumulators become registers), except the one
// the pipeline leaves to the C compiler's loop vectorizer (vector_loop): clang would still
// unroll a short one (8 iterations) before its vectorizer sees it, so the loop says so (GCC
// ignores the pragma).
std::string CRenderer::loop_open(const UOp& r, int depth) const {
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
