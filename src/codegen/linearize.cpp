// codegen: the shared loop structure of the C and GLSL renderers (see linearize.hpp).
#include "codegen/linearize.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <vkgrad/error.hpp>

#include "codegen/pipeline.hpp"

namespace vkgrad {

int64_t range_size(const UOp& r) {
  return r.src(0).is_const() ? std::get<int64_t>(r.src(0).const_value()) : -1;
}

std::vector<UOp> kernel_vars(const UOp& ast) {
  std::vector<UOp> vars;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::DEFINE_VAR) vars.push_back(u);
  std::sort(vars.begin(), vars.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<VarArg>().name < b.arg_as<VarArg>().name;
  });
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  for (size_t i = 1; i < vars.size(); ++i) {
    const VarArg &a = vars[i - 1].arg_as<VarArg>(), &b = vars[i].arg_as<VarArg>();
    if (a.name == b.name)
      throw InternalError(fmt::format(
          "codegen: variable '{}' defined twice, as [{}, {}] {} and [{}, {}] {}", a.name, a.min,
          a.max, vars[i - 1].dtype().name(), b.min, b.max, vars[i].dtype().name()));
  }
  return vars;
}

std::string c_identifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  if (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "v" : out;
}

std::string indent(int depth) { return std::string(static_cast<size_t>(depth) * 2, ' '); }

namespace {
bool has(uint64_t mask, const UOp& r) { return (mask >> r.arg_as<AxisArg>().id) & 1; }
}  // namespace

Linearizer::Linearizer(const UOp& ast) : ast_(ast), topo_(toposort(ast)) {
  for (const UOp& u : topo_) {
    uint64_t m = 0;
    bool rv = false;
    for (const UOp& s : u.src()) {
      m |= deps_[s.get()];
      rv = rv || reduce_value_[s.get()] || s.op() == Ops::REDUCE;
    }
    if (u.op() == Ops::RANGE) {
      const auto& a = u.arg_as<AxisArg>();
      if (a.id >= 64) throw InternalError("codegen: more than 64 ranges in a kernel");
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
    deps_[u.get()] = m;
    reduce_value_[u.get()] = rv;
  }
  std::sort(all_ranges_.begin(), all_ranges_.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
  });
  all_ranges_.erase(std::unique(all_ranges_.begin(), all_ranges_.end()), all_ranges_.end());
  // Variables are named var_<name>; a name that collides once made an identifier gets its index.
  vars_ = kernel_vars(ast);
  for (size_t i = 0; i < vars_.size(); ++i) {
    std::string n = "var_" + c_identifier(vars_[i].arg_as<VarArg>().name);
    if (std::find(var_names_.begin(), var_names_.end(), n) != var_names_.end())
      n += fmt::format("_{}", i);
    var_names_.push_back(std::move(n));
  }
}

std::vector<UOp> Linearizer::ranges_of(AxisType t) const {
  std::vector<UOp> out;
  for (const UOp& r : all_ranges_)
    if (r.arg_as<AxisArg>().type == t) out.push_back(r);
  return out;
}

std::string Linearizer::name_of(const UOp& r) {
  const auto& a = r.arg_as<AxisArg>();
  const char* p =
      a.type == AxisType::global ? "gidx"
      : a.type == AxisType::reduce || a.type == AxisType::group_reduce || a.type == AxisType::stage
          ? "ridx"
          : "uidx";
  return fmt::format("{}{}", p, a.id);
}

bool Linearizer::in_head(const UOp& u) const {
  const uint64_t d = deps(u);
  if (u.op() == Ops::REDUCE || reduce_value_.at(u.get())) return false;
  if (d & upcast_mask_) return false;
  for (const auto& [r, own] : reduce_mask_)
    if (d & own) return false;
  for (const UOp& r : all_ranges_)
    if (r.arg_as<AxisArg>().type == AxisType::unroll && has(d, r)) return false;
  return true;
}

std::string Linearizer::operand(const UOp& u, const Names& names) const {
  if (u.op() == Ops::CONST) return literal(u);
  if (u.op() == Ops::RANGE) return name_of(u);
  if (u.op() == Ops::SPECIAL) return u.arg_as<std::string>();
  if (u.op() == Ops::DEFINE_VAR) {
    const auto it = std::find(vars_.begin(), vars_.end(), u);
    return var_names_[static_cast<size_t>(it - vars_.begin())];
  }
  auto it = names.find(u.get());
  if (it == names.end())
    throw InternalError(fmt::format("codegen: {} used before it is computed", op_name(u.op())));
  return it->second;
}

std::string Linearizer::inline_expr(const UOp& e, const Names& names) const {
  Names local = names;
  for (const UOp& u : toposort(e)) {
    if (local.count(u.get()) || u.op() == Ops::CONST || u.op() == Ops::RANGE ||
        u.op() == Ops::SPECIAL || u.op() == Ops::DEFINE_VAR)
      continue;
    local[u.get()] = expr(u, local);
  }
  return operand(e, local);
}

std::string Linearizer::barrier(int) const {
  throw InternalError("codegen: a BARRIER for a language without shared memory");
}

std::string Linearizer::combine(Ops op, DType d, const std::string& a, const std::string& b) const {
  if (op != Ops::MAX || !d.is_float()) return alu(op, d, d, {a, b}, nullptr);
  // A float max is the decompose pass's graph, printed over two placeholders named a and b.
  const UOp pa = UOp::make(Ops::NOOP, d, {}, int64_t{0}),
            pb = UOp::make(Ops::NOOP, d, {}, int64_t{1});
  return inline_expr(float_max(pa, pb), {{pa.get(), a}, {pb.get(), b}});
}

std::string Linearizer::range_end(const UOp& r) const {
  const int64_t n = range_size(r);
  return n >= 0 ? std::to_string(n) : inline_expr(r.src(0), {});
}

std::string Linearizer::expr(const UOp& u, const Names& names) const {
  if (u.op() == Ops::LOAD) return load(u, names);
  std::vector<std::string> s;
  for (const UOp& src : u.src()) s.push_back(operand(src, names));
  if (u.op() == Ops::CAST) return cast(u.src(0).dtype(), u.dtype(), s[0]);
  if (u.op() == Ops::BITCAST) return bitcast(u.src(0).dtype(), u.dtype(), s[0]);
  if (u.op() == Ops::CUSTOM) {  // the language's own text, its operands as {0}, {1}, ...
    fmt::dynamic_format_arg_store<fmt::format_context> args;
    for (const std::string& x : s) args.push_back(x);
    return fmt::vformat(u.arg_as<std::string>(), args);
  }
  return alu(u.op(), u.dtype(), u.src(0).dtype(), s, &u);
}

void Linearizer::emit_nodes(const std::vector<UOp>& nodes, int depth, std::string& out,
                            Names& names) {
  for (const UOp& u : nodes) {
    if (names.count(u.get())) continue;
    if (u.op() == Ops::REDUCE) {
      names[u.get()] = reduce_ref(u);
      continue;
    }
    if (u.op() == Ops::STORE || u.op() == Ops::BARRIER) {  // shared memory: statements
      out += u.op() == Ops::STORE ? store(u, names, depth) : barrier(depth);
      names[u.get()] = "";
      continue;
    }
    if (u.op() == Ops::GEP) {  // a vector's element: read where it is used
      names[u.get()] = fmt::format("{}[{}]", operand(u.src(0), names), operand(u.src(1), names));
      continue;
    }
    const std::string v = new_var();
    const std::string e = expr(u, names);
    out += fmt::format("{}{} {} = {};\n", indent(depth), var_type(u.dtype()), v, e);
    names[u.get()] = v;
  }
}

int Linearizer::emit_nest(const std::vector<UOp>& loops, const std::vector<UOp>& nodes, int depth,
                          std::string& out, Names& names) {
  std::vector<std::vector<UOp>> at(loops.size() + 1);
  for (const UOp& u : nodes) {
    size_t level = loops.size();
    if (hoist()) {
      const uint64_t p = deps(u);
      level = 0;
      for (size_t i = 0; i < loops.size(); ++i)
        if (has(p, loops[i])) level = i + 1;
    }
    at[level].push_back(u);
  }
  emit_nodes(at[0], depth, out, names);
  for (size_t i = 0; i < loops.size(); ++i) {
    out += loop_open(loops[i], depth++);
    emit_nodes(at[i + 1], depth, out, names);
  }
  return depth;
}

void Linearizer::close(int from, int to, std::string& out) {
  for (int i = from - 1; i >= to; --i) out += fmt::format("{}}}\n", indent(i));
}

std::vector<UOp> Linearizer::acc_dims(const UOp& r, bool with_unroll) const {
  std::vector<UOp> dims;
  const uint64_t d = deps(r);
  for (const UOp& x : all_ranges_)
    if (x.arg_as<AxisArg>().type == AxisType::upcast && has(d, x)) dims.push_back(x);
  if (with_unroll)
    for (size_t i = 1; i < r.src().size(); ++i)
      if (r.src(i).arg_as<AxisArg>().type == AxisType::unroll) dims.push_back(r.src(i));
  return dims;
}

std::string Linearizer::reduce_ref(const UOp& r) const {
  std::string s = fmt::format("red{}", reduce_id_.at(r.get()));
  for (const UOp& x : acc_dims(r, false)) s += "[" + name_of(x) + "]";
  return s;
}

void Linearizer::emit_body(int depth, std::string& out) {
  const UOp& store = ast_.src(0);
  // Head: values every later scope may use.
  std::vector<UOp> roots{store};
  for (const UOp& u : topo_)
    if (u.op() == Ops::REDUCE) roots.push_back(u.src(0));
  const auto head = needed(
      roots, [&](const UOp& u) { return in_head(u); }, true);
  emit_nodes(head, depth, out, head_names_);
  for (const UOp& u : topo_)
    if (u.op() == Ops::REDUCE) emit_reduce(u, depth, out);
  emit_epilogue(depth, out);
}

void Linearizer::emit_epilogue(int depth, std::string& out) {
  const UOp& st = ast_.src(0);
  Names names = head_names_;
  const auto epi = needed(
      {st}, [&](const UOp& u) { return !in_head(u); }, false);
  const int d = emit_nest(ranges_of(AxisType::upcast), epi, depth, out, names);
  out += store(st, names, d);
  close(d, depth, out);
}

void Linearizer::emit_reduce(const UOp& r, int depth, std::string& out) {
  const int id = static_cast<int>(reduce_id_.size());
  reduce_id_[r.get()] = id;
  // A sum of products that fuse_multiply_add marked steps as MULACC(a, b, acc) and folds as a
  // sum.
  const bool fused = r.arg_as<Ops>() == Ops::MULACC;
  const Ops op = fused ? Ops::ADD : r.arg_as<Ops>();
  const DType d = r.dtype();
  const std::vector<UOp> terms =
      fused ? std::vector<UOp>{r.src(0).src(0), r.src(0).src(1)} : std::vector<UOp>{r.src(0)};
  // Preloading targets keep one accumulator per output and walk the unroll ranges inside the
  // register nest (registers are scarce; other lanes hide the add latency).
  // regs: the upcast and unroll ranges the body's register nest walks.
  const std::vector<UOp> outer = acc_dims(r, false), regs = acc_dims(r, true);
  const std::vector<UOp>& all = preload() ? outer : regs;
  std::vector<UOp> loops;
  for (size_t i = 1; i < r.src().size(); ++i)
    if (r.src(i).arg_as<AxisArg>().type != AxisType::unroll) loops.push_back(r.src(i));
  auto dims_decl = [&](const std::vector<UOp>& dims) {
    std::string s;
    for (const UOp& x : dims) s += fmt::format("[{}]", range_size(x));
    return s;
  };
  auto dims_ref = [&](const std::vector<UOp>& dims) {
    std::string s;
    for (const UOp& x : dims) s += "[" + name_of(x) + "]";
    return s;
  };
  const std::string T = var_type(d);
  const std::string acc = fmt::format("acc{}", id);
  Names none;
  out += fmt::format("{}{} {}{};\n", indent(depth), T, acc, dims_decl(all));
  int dep = emit_nest(all, {}, depth, out, none);
  out += fmt::format("{}{}{} = {};\n", indent(dep), acc, dims_ref(all), identity(op, d));
  close(dep, depth, out);
  // What the body needs of earlier reductions' results outside this one's loops and registers
  // comes first, at the body's top level, where later scopes see it too.
  uint64_t inner = reduce_mask_.at(r.get()) | upcast_mask_;
  for (const UOp& x : all_ranges_)
    if (x.arg_as<AxisArg>().type == AxisType::unroll)
      inner |= uint64_t{1} << x.arg_as<AxisArg>().id;
  std::vector<UOp> pre, body;
  for (const UOp& u : needed(
           terms, [&](const UOp& u) { return !in_head(u); }, false))
    (deps(u) & inner ? body : pre).push_back(u);
  emit_nodes(pre, depth, out, head_names_);
  Names names = head_names_;
  if (preload()) {
    uint64_t mask = 0;
    for (const UOp& x : regs) mask |= uint64_t{1} << x.arg_as<AxisArg>().id;
    std::vector<UOp> outer_nodes, inner_nodes;
    for (const UOp& u : body) (deps(u) & mask ? inner_nodes : outer_nodes).push_back(u);
    dep = emit_nest(loops, outer_nodes, depth, out, names);
    for (const UOp& ld : inner_nodes) {
      if (ld.op() != Ops::LOAD) continue;
      std::vector<UOp> dims;
      for (const UOp& x : regs)
        if (has(deps(ld), x)) dims.push_back(x);
      const std::string arr = fmt::format("ld{}", next_load_++);
      out += fmt::format("{}{} {}{};\n", indent(dep), type(ld.dtype()), arr, dims_decl(dims));
      Names local = names;
      const auto srcs = needed(
          {ld.src(0)}, [&](const UOp& u) { return !local.count(u.get()) && !in_head(u); }, false);
      const int d2 = emit_nest(dims, srcs, dep, out, local);
      out += fmt::format("{}{}{} = {};\n", indent(d2), arr, dims_ref(dims), expr(ld, local));
      close(d2, dep, out);
      names[ld.get()] = arr + dims_ref(dims);
    }
    dep = emit_nest(regs, inner_nodes, dep, out, names);
  } else {
    std::vector<UOp> nest = loops;
    nest.insert(nest.end(), all.begin(), all.end());
    dep = emit_nest(nest, body, depth, out, names);
  }
  const std::string cur = acc + dims_ref(all);
  const std::string step =
      fused ? alu(Ops::MULACC, d, d, {operand(terms[0], names), operand(terms[1], names), cur},
                  nullptr)
            : combine(op, d, cur, operand(r.src(0), names));
  out += fmt::format("{}{} = {};\n", indent(dep), cur, step);
  close(dep, depth, out);
  // Fold the unrolled accumulators.
  const std::string red = fmt::format("red{}", id);
  out += fmt::format("{}{} {}{};\n", indent(depth), T, red, dims_decl(outer));
  dep = emit_nest(outer, {}, depth, out, none);
  const std::vector<UOp> unrolls(all.begin() + static_cast<long>(outer.size()), all.end());
  const std::string dst = red + dims_ref(outer);
  out += fmt::format("{}{} = {};\n", indent(dep), dst, identity(op, d));
  dep = emit_nest(unrolls, {}, dep, out, none);
  out += fmt::format("{}{} = {};\n", indent(dep), dst, combine(op, d, dst, acc + dims_ref(all)));
  close(dep, depth, out);
}

}  // namespace vkgrad
