// codegen: linearize a kernel AST into loops and render it as C.
//
// Loop structure (a kernel never nests reductions: the scheduler realizes those):
//   for global ranges (the first one over [start, end): the thread pool's slice)
//     head:      values that depend on no upcast range and no reduction
//     per REDUCE: acc[upcast dims][unroll dims] = identity;
//                 for reduce ranges { for upcast/unroll ranges { body; acc = acc op value } }
//                 fold the unroll dims
//     for upcast ranges { epilogue; store }
// Each node is emitted once per scope that needs it, in topological order.
//
// Semantics kept exact: signed integer arithmetic wraps (computed in unsigned), integer division
// by zero gives 0 instead of trapping, division truncates as C's does, float math is IEEE (no
// fast-math; MAX propagates NaN), float16/bfloat16 are stored in their format and computed in
// float32.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>

#include "codegen/pipeline.hpp"

namespace vkgrad {
namespace {

constexpr const char* kPrelude = R"(#include <stdint.h>
typedef _Bool bool_t;
static inline float vkg_h2f(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) {
    if (m == 0) u = s;
    else { e = 113; while (!(m & 0x400u)) { m <<= 1; e--; } u = s | (e << 23) | ((m & 0x3ffu) << 13); }
  } else if (e == 31) u = s | 0x7f800000u | (m << 13);
  else u = s | ((e + 112) << 23) | (m << 13);
  float f; __builtin_memcpy(&f, &u, 4); return f;
}
static inline uint16_t vkg_f2h(float f) {
  uint32_t u; __builtin_memcpy(&u, &f, 4);
  uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return (uint16_t)s;
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e;
    uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(s | r);
  }
  uint32_t r = a - 0x38000000u, h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(s | h);
}
static inline float vkg_bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline uint16_t vkg_f2bf(float f) {
  uint32_t u; __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); return (uint16_t)(u >> 16);
}
static inline float vkg_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
static inline double vkg_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
)";

std::string ind(int depth) { return std::string(static_cast<size_t>(depth) * 2, ' '); }

// Upcast and unroll loops have small constant trip counts: unrolled completely, their
// accumulators become registers and the C compiler's SLP vectorizer packs them into vectors.
constexpr const char* kUnroll = "#pragma GCC unroll 64\n";

bool is_half(DType d) { return d.scalar() == dtypes::float16 || d.scalar() == dtypes::bfloat16; }

// The C type values of `d` are computed in (half floats compute in float).
std::string ctype(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::bool_:
      return "bool_t";
    case ScalarType::int8:
      return "int8_t";
    case ScalarType::uint8:
      return "uint8_t";
    case ScalarType::int16:
      return "int16_t";
    case ScalarType::uint16:
      return "uint16_t";
    case ScalarType::int32:
      return "int32_t";
    case ScalarType::uint32:
      return "uint32_t";
    case ScalarType::int64:
    case ScalarType::index:
      return "int64_t";
    case ScalarType::uint64:
      return "uint64_t";
    case ScalarType::float16:
    case ScalarType::bfloat16:
    case ScalarType::float32:
      return "float";
    case ScalarType::float64:
      return "double";
    default:
      throw InternalError("render_c: no C type for " + d.name());
  }
}
// The C type values of `d` are stored in.
std::string storage_type(DType d) { return is_half(d) ? "uint16_t" : ctype(d); }
// The unsigned twin of a signed integer type (for wrapping arithmetic).
std::string utype(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::int8:
      return "uint8_t";
    case ScalarType::int16:
      return "uint16_t";
    case ScalarType::int32:
      return "uint32_t";
    case ScalarType::int64:
      return "uint64_t";
    default:
      return ctype(d);
  }
}
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

std::string reduce_identity(Ops op, DType d) {
  switch (op) {
    case Ops::ADD:
      return d.is_float() ? float_literal(0.0, d) : "0";
    case Ops::MUL:
      return d.is_float() ? float_literal(1.0, d) : "1";
    case Ops::MAX:
      if (d.is_float()) return float_literal(-INFINITY, d);
      if (d.is_bool() || d.is_unsigned()) return "0";
      if (d.scalar() == dtypes::int64) return "((int64_t)(-9223372036854775807ll-1))";
      return fmt::format("(({}){})", ctype(d), dtypes::min_int(d));
    default:
      throw InternalError(fmt::format("render_c: no identity for REDUCE {}", op_name(op)));
  }
}

// Binary/unary ALU expression in C for result dtype `d` over operand expressions.
std::string alu_expr(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                     const UOp* divisor) {
  const std::string T = ctype(d);
  const bool wrap = is_signed_int(d);
  auto wrapped = [&](const char* o) {
    if (wrap) return fmt::format("(({})(({}){} {} ({}){}))", T, utype(d), s[0], o, utype(d), s[1]);
    if (d.is_int() && d.itemsize() < 4) return fmt::format("(({})({} {} {}))", T, s[0], o, s[1]);
    return fmt::format("({} {} {})", s[0], o, s[1]);
  };
  const bool f64 = sd.scalar() == dtypes::float64;
  auto fn = [&](const char* name) {
    return fmt::format("__builtin_{}{}({})", name, f64 ? "" : "f", s[0]);
  };
  switch (op) {
    case Ops::ADD:
      return wrapped("+");
    case Ops::SUB:
      return wrapped("-");
    case Ops::MUL:
      return wrapped("*");
    case Ops::NEG:
      if (d.is_bool()) return fmt::format("(!{})", s[0]);
      if (d.is_int()) return fmt::format("(({})(0 - ({}){}))", T, utype(d), s[0]);
      return fmt::format("(-{})", s[0]);
    case Ops::FDIV:
      return fmt::format("({} / {})", s[0], s[1]);
    case Ops::IDIV:
    case Ops::MOD: {
      const char* o = op == Ops::IDIV ? "/" : "%";
      const bool safe_const = divisor && divisor->is_const() && !divisor->is_const(0) &&
                              !(is_signed_int(d) && divisor->is_const(-1));
      if (safe_const || d == dtypes::index)
        return fmt::format("(({})({} {} {}))", T, s[0], o, s[1]);
      // Division by zero gives 0; MIN / -1 wraps (x86 would trap on both).
      if (is_signed_int(d))
        return op == Ops::IDIV
                   ? fmt::format(
                         "({1} == 0 ? ({2})0 : {1} == -1 ? ({2})(0 - ({3}){0}) : ({2})({0} / {1}))",
                         s[0], s[1], T, utype(d))
                   : fmt::format("({1} == 0 || {1} == -1 ? ({2})0 : ({2})({0} % {1}))", s[0], s[1],
                                 T);
      return fmt::format("({1} == 0 ? ({2})0 : ({2})({0} {3} {1}))", s[0], s[1], T, o);
    }
    case Ops::MAX:
      if (d.is_bool()) return fmt::format("({} | {})", s[0], s[1]);
      if (d.is_float()) return fmt::format("vkg_max{}({}, {})", f64 ? "d" : "f", s[0], s[1]);
      return fmt::format("({0} > {1} ? {0} : {1})", s[0], s[1]);
    case Ops::CMPLT:
      return fmt::format("({} < {})", s[0], s[1]);
    case Ops::CMPNE:
      return fmt::format("({} != {})", s[0], s[1]);
    case Ops::CMPEQ:
      return fmt::format("({} == {})", s[0], s[1]);
    case Ops::AND:
      return fmt::format("(({})({} & {}))", T, s[0], s[1]);
    case Ops::OR:
      return fmt::format("(({})({} | {}))", T, s[0], s[1]);
    case Ops::XOR:
      return fmt::format("(({})({} ^ {}))", T, s[0], s[1]);
    case Ops::SHL:
      return fmt::format("(({})(({}){} << {}))", T, utype(d), s[0], s[1]);
    case Ops::SHR:
      return fmt::format("(({})({} >> {}))", T, s[0], s[1]);
    case Ops::WHERE:
      return fmt::format("({} ? {} : {})", s[0], s[1], s[2]);
    case Ops::EXP2:
      return fn("exp2");
    case Ops::LOG2:
      return fn("log2");
    case Ops::SIN:
      return fn("sin");
    case Ops::SQRT:
      return fn("sqrt");
    case Ops::TRUNC:
      return fn("trunc");
    case Ops::RECIPROCAL:
      return fmt::format("({} / {})", float_literal(1.0, d), s[0]);
    default:
      throw InternalError(fmt::format("render_c: no C form for {}", op_name(op)));
  }
}

std::string cast_expr(DType from, DType to, const std::string& x) {
  if (to.is_bool()) return fmt::format("({} != 0)", x);
  if (to.scalar() == dtypes::float16) return fmt::format("vkg_h2f(vkg_f2h((float){}))", x);
  if (to.scalar() == dtypes::bfloat16) return fmt::format("vkg_bf2f(vkg_f2bf((float){}))", x);
  (void)from;
  return fmt::format("(({}){})", ctype(to), x);
}

struct Ranges {
  std::unordered_map<const UOpNode*, uint64_t> deps;      // range ids a node depends on
  std::unordered_map<const UOpNode*, bool> reduce_value;  // depends on a REDUCE's result
};

class CRenderer {
 public:
  CRenderer(const UOp& ast, const std::string& name) : ast_(ast), name_(name) {}

  std::string render(int64_t* parallel_size) {
    topo_ = toposort(ast_);
    analyze();
    const UOp& store = ast_.src(0);
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
    body += "  (void)vars;\n";
    // Global loops.
    int depth = 1;
    *parallel_size = 1;
    bool first = true;
    for (const UOp& r : ranges_of(AxisType::global)) {
      const int64_t n = size_of(r);
      if (first) {
        *parallel_size = n;
        body += fmt::format("{}for (int64_t {} = start; {} < end; {}++) {{\n", ind(depth),
                            name_of(r), name_of(r), name_of(r));
      } else {
        body += fmt::format("{0}for (int64_t {1} = 0; {1} < {2}; {1}++) {{\n", ind(depth),
                            name_of(r), n);
      }
      first = false;
      ++depth;
    }
    if (first) body += "  if (start >= end) return;\n";
    // Head: values every later scope may use.
    std::vector<UOp> roots{store};
    for (const UOp& u : topo_)
      if (u.op() == Ops::REDUCE) roots.push_back(u.src(0));
    const auto head = needed(
        roots, [&](const UOp& u) { return in_head(u); }, true);
    emit_nodes(head, depth, body, head_names_);
    // Reductions.
    for (const UOp& u : topo_)
      if (u.op() == Ops::REDUCE) emit_reduce(u, depth, body);
    // Epilogue over the upcast ranges, then the store.
    const uint64_t up = upcast_mask_;
    std::vector<UOp> ups;
    for (const UOp& r : ranges_of(AxisType::upcast)) ups.push_back(r);
    int d = depth;
    for (const UOp& r : ups) {
      body += kUnroll;
      body += fmt::format("{0}for (int64_t {1} = 0; {1} < {2}; {1}++) {{\n", ind(d), name_of(r),
                          size_of(r));
      ++d;
    }
    (void)up;
    std::unordered_map<const UOpNode*, std::string> names = head_names_;
    const auto epi = needed(
        {store}, [&](const UOp& u) { return !in_head(u); }, false);
    emit_nodes(epi, d, body, names);
    const UOp& index = store.src(0);
    const UOp& buf = index.src(0);
    std::string value = operand(store.src(1), names);
    const DType vd = store.src(1).dtype();
    if (vd.scalar() == dtypes::float16) value = fmt::format("vkg_f2h({})", value);
    if (vd.scalar() == dtypes::bfloat16) value = fmt::format("vkg_f2bf({})", value);
    body += fmt::format("{}data{}[{}] = {};\n", ind(d), buf.arg_as<int64_t>(),
                        operand(index.src(1), names), value);
    for (int i = d - 1; i >= 1; --i) body += fmt::format("{}}}\n", ind(i));
    return fmt::format(
        "{}void {}(void** bufs, const int64_t* vars, int64_t start, int64_t end) {{\n{}}}\n",
        kPrelude, name_, body);
  }

 private:
  void analyze() {
    for (const UOp& u : topo_) {
      uint64_t m = 0;
      bool rv = false;
      for (const UOp& s : u.src()) {
        m |= ranges_.deps[s.get()];
        rv = rv || ranges_.reduce_value[s.get()] || s.op() == Ops::REDUCE;
      }
      if (u.op() == Ops::RANGE) {
        const auto& a = u.arg_as<AxisArg>();
        if (a.id >= 64) throw InternalError("render_c: more than 64 ranges in a kernel");
        m |= uint64_t{1} << a.id;
        if (a.type == AxisType::upcast) upcast_mask_ |= uint64_t{1} << a.id;
        all_ranges_.push_back(u);
      }
      if (u.op() == Ops::REDUCE) {
        uint64_t own = 0;
        for (size_t i = 1; i < u.src().size(); ++i)
          own |= uint64_t{1} << u.src(i).arg_as<AxisArg>().id;
        m &= ~own;
        reduce_mask_[u.get()] = own;
      }
      ranges_.deps[u.get()] = m;
      ranges_.reduce_value[u.get()] = rv;
    }
    std::sort(all_ranges_.begin(), all_ranges_.end(), [](const UOp& a, const UOp& b) {
      return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
    });
    all_ranges_.erase(std::unique(all_ranges_.begin(), all_ranges_.end()), all_ranges_.end());
  }

  std::vector<UOp> ranges_of(AxisType t) const {
    std::vector<UOp> out;
    for (const UOp& r : all_ranges_)
      if (r.arg_as<AxisArg>().type == t) out.push_back(r);
    return out;
  }
  static int64_t size_of(const UOp& r) { return std::get<int64_t>(r.src(0).const_value()); }
  static std::string name_of(const UOp& r) {
    const auto& a = r.arg_as<AxisArg>();
    const char* p = a.type == AxisType::global   ? "gidx"
                    : a.type == AxisType::reduce ? "ridx"
                                                 : "uidx";
    return fmt::format("{}{}", p, a.id);
  }

  static bool is_inline(const UOp& u) {
    return u.op() == Ops::CONST || u.op() == Ops::RANGE || u.op() == Ops::DEFINE_GLOBAL ||
           u.op() == Ops::INDEX || u.op() == Ops::SINK || u.op() == Ops::STORE;
  }
  bool in_head(const UOp& u) const {
    const uint64_t d = ranges_.deps.at(u.get());
    if (u.op() == Ops::REDUCE || ranges_.reduce_value.at(u.get())) return false;
    if (d & upcast_mask_) return false;
    for (const auto& [r, own] : reduce_mask_)
      if (d & own) return false;
    for (const UOp& r : all_ranges_) {
      const auto t = r.arg_as<AxisArg>().type;
      if (t == AxisType::unroll && (d >> r.arg_as<AxisArg>().id & 1)) return false;
    }
    return true;
  }

  // Nodes reachable from roots (not through REDUCE bodies) that satisfy `keep`, in topo order.
  // With `into_reduces`, walk into the bodies of REDUCEs too.
  template <class Keep>
  std::vector<UOp> needed(const std::vector<UOp>& roots, Keep keep, bool into_reduces) {
    std::unordered_set<const UOpNode*> seen;
    std::vector<UOp> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      UOp u = stack.back();
      stack.pop_back();
      if (!seen.insert(u.get()).second) continue;
      if (u.op() == Ops::REDUCE && !into_reduces) continue;
      for (const UOp& s : u.src()) stack.push_back(s);
    }
    std::vector<UOp> out;
    for (const UOp& u : topo_)
      if (seen.count(u.get()) && !is_inline(u) && keep(u)) out.push_back(u);
    return out;
  }

  std::string operand(const UOp& u, const std::unordered_map<const UOpNode*, std::string>& names) {
    if (u.op() == Ops::CONST) return const_literal(u);
    if (u.op() == Ops::RANGE) return name_of(u);
    auto it = names.find(u.get());
    if (it == names.end())
      throw InternalError(fmt::format("render_c: {} used before it is computed", op_name(u.op())));
    return it->second;
  }

  void emit_nodes(const std::vector<UOp>& nodes, int depth, std::string& out,
                  std::unordered_map<const UOpNode*, std::string>& names) {
    for (const UOp& u : nodes) {
      if (names.count(u.get())) continue;
      if (u.op() == Ops::REDUCE) {
        names[u.get()] = reduce_ref(u);
        continue;
      }
      const std::string v = fmt::format("v{}", next_var_++);
      std::string e = expr(u, names);
      // Half floats compute in float but round every result to their own precision.
      if (is_half(u.dtype()) && (is_alu(u.op()) || u.op() == Ops::BITCAST) &&
          !(u.op() == Ops::CMPLT || u.op() == Ops::CMPNE || u.op() == Ops::CMPEQ))
        e = cast_expr(dtypes::float32, u.dtype(), e);
      out += fmt::format("{}{} {} = {};\n", ind(depth), ctype(u.dtype()), v, e);
      names[u.get()] = v;
    }
  }

  std::string expr(const UOp& u, std::unordered_map<const UOpNode*, std::string>& names) {
    std::vector<std::string> s;
    if (u.op() == Ops::LOAD) {
      const UOp& idx = u.src(0);
      const DType d = u.dtype();
      std::string x =
          fmt::format("data{}[{}]", idx.src(0).arg_as<int64_t>(), operand(idx.src(1), names));
      if (d.scalar() == dtypes::float16) x = fmt::format("vkg_h2f({})", x);
      if (d.scalar() == dtypes::bfloat16) x = fmt::format("vkg_bf2f({})", x);
      if (idx.src().size() > 2)
        x = fmt::format("({} ? {} : ({}){})", operand(idx.src(2), names), x, ctype(d),
                        d.is_float() ? float_literal(0.0, d) : "0");
      return x;
    }
    for (const UOp& src : u.src()) s.push_back(operand(src, names));
    if (u.op() == Ops::CAST) return cast_expr(u.src(0).dtype(), u.dtype(), s[0]);
    if (u.op() == Ops::BITCAST) {
      const DType from = u.src(0).dtype(), to = u.dtype();
      std::string bits = s[0];
      if (from.scalar() == dtypes::float16) bits = fmt::format("vkg_f2h({})", bits);
      if (from.scalar() == dtypes::bfloat16) bits = fmt::format("vkg_f2bf({})", bits);
      std::string r =
          fmt::format("({{ {} b_ = {}; {} r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; }})",
                      storage_type(from), bits, storage_type(to));
      if (to.scalar() == dtypes::float16) r = fmt::format("vkg_h2f({})", r);
      if (to.scalar() == dtypes::bfloat16) r = fmt::format("vkg_bf2f({})", r);
      return r;
    }
    const UOp* divisor = u.src().size() > 1 ? &u.src(1) : nullptr;
    return alu_expr(u.op(), u.dtype(), u.src(0).dtype(), s, divisor);
  }

  // Accumulator dims: the upcast ranges the result depends on, then the reduce's unroll ranges.
  std::vector<UOp> acc_dims(const UOp& r, bool with_unroll) const {
    std::vector<UOp> dims;
    const uint64_t d = ranges_.deps.at(r.get());
    for (const UOp& x : all_ranges_)
      if (x.arg_as<AxisArg>().type == AxisType::upcast && (d >> x.arg_as<AxisArg>().id & 1))
        dims.push_back(x);
    if (with_unroll)
      for (size_t i = 1; i < r.src().size(); ++i)
        if (r.src(i).arg_as<AxisArg>().type == AxisType::unroll) dims.push_back(r.src(i));
    return dims;
  }
  std::string reduce_ref(const UOp& r) {
    std::string s = fmt::format("red{}", reduce_id_.at(r.get()));
    for (const UOp& x : acc_dims(r, false)) s += "[" + name_of(x) + "]";
    return s;
  }

  void emit_reduce(const UOp& r, int depth, std::string& out) {
    const int id = static_cast<int>(reduce_id_.size());
    reduce_id_[r.get()] = id;
    const Ops op = r.arg_as<Ops>();
    const DType d = r.dtype();
    const std::vector<UOp> outer = acc_dims(r, false), all = acc_dims(r, true);
    std::vector<UOp> loops_reduce;
    for (size_t i = 1; i < r.src().size(); ++i)
      if (r.src(i).arg_as<AxisArg>().type != AxisType::unroll) loops_reduce.push_back(r.src(i));
    auto dims_decl = [&](const std::vector<UOp>& dims) {
      std::string s;
      for (const UOp& x : dims) s += fmt::format("[{}]", size_of(x));
      return s;
    };
    auto dims_ref = [&](const std::vector<UOp>& dims) {
      std::string s;
      for (const UOp& x : dims) s += "[" + name_of(x) + "]";
      return s;
    };
    auto open = [&](const std::vector<UOp>& loops, int& dep) {
      for (const UOp& x : loops) {
        if (x.arg_as<AxisArg>().type != AxisType::reduce) out += kUnroll;
        out += fmt::format("{0}for (int64_t {1} = 0; {1} < {2}; {1}++) {{\n", ind(dep), name_of(x),
                           size_of(x));
        ++dep;
      }
    };
    auto close = [&](int from, int to) {
      for (int i = from - 1; i >= to; --i) out += fmt::format("{}}}\n", ind(i));
    };
    const std::string T = ctype(d);
    const std::string acc = fmt::format("acc{}", id);
    out += fmt::format("{}{} {}{};\n", ind(depth), T, acc, dims_decl(all));
    int dep = depth;
    open(all, dep);
    out += fmt::format("{}{}{} = {};\n", ind(dep), acc, dims_ref(all), reduce_identity(op, d));
    close(dep, depth);
    dep = depth;
    open(loops_reduce, dep);
    open(all, dep);
    std::unordered_map<const UOpNode*, std::string> names = head_names_;
    const auto body = needed(
        {r.src(0)}, [&](const UOp& u) { return !in_head(u); }, false);
    emit_nodes(body, dep, out, names);
    const std::string cur = acc + dims_ref(all);
    out += fmt::format("{}{} = {};\n", ind(dep), cur,
                       alu_expr(op, d, d, {cur, operand(r.src(0), names)}, nullptr));
    close(dep, depth);
    // Fold the unrolled accumulators.
    const std::string red = fmt::format("red{}", id);
    out += fmt::format("{}{} {}{};\n", ind(depth), T, red, dims_decl(outer));
    dep = depth;
    open(outer, dep);
    const std::vector<UOp> unrolls(all.begin() + static_cast<long>(outer.size()), all.end());
    const std::string dst = red + dims_ref(outer);
    out += fmt::format("{}{} = {};\n", ind(dep), dst, reduce_identity(op, d));
    open(unrolls, dep);
    out += fmt::format("{}{} = {};\n", ind(dep), dst,
                       alu_expr(op, d, d, {dst, acc + dims_ref(all)}, nullptr));
    close(dep, depth);
  }

  UOp ast_;
  std::string name_;
  std::vector<UOp> topo_;
  Ranges ranges_;
  std::vector<UOp> all_ranges_;
  uint64_t upcast_mask_ = 0;
  std::unordered_map<const UOpNode*, uint64_t> reduce_mask_;
  std::unordered_map<const UOpNode*, int> reduce_id_;
  std::unordered_map<const UOpNode*, std::string> head_names_;
  int next_var_ = 0;
};

}  // namespace

std::string render_c(const UOp& ast, const std::string& name, int64_t* parallel_size) {
  return CRenderer(ast, name).render(parallel_size);
}

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
  for (AxisType t : {AxisType::global, AxisType::reduce, AxisType::upcast, AxisType::unroll})
    for (const UOp& r : ranges)
      if (r.arg_as<AxisArg>().type == t)
        name += fmt::format("_{}", std::get<int64_t>(r.src(0).const_value()));
  if (name.size() == 1) name += "_1";
  return name;
}

}  // namespace vkgrad
