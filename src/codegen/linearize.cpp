// codegen: linearize (the kernel as a flat list of statements) and the shared half of printing
// it (see linearize.hpp).
#include "codegen/linearize.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <unordered_set>
#include <vkgrad/error.hpp>

#include "codegen/language.hpp"
#include "codegen/passes.hpp"
#include "codegen/ranges.hpp"
#include "ir/print.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "sched/indexing.hpp"  // reduce_identity

namespace vkgrad {

std::string indent(int depth) { return std::string(static_cast<size_t>(depth) * 2, ' '); }

namespace {

bool has(uint64_t mask, const UOp& r) { return (mask >> r.arg_as<AxisArg>().id) & 1; }

// A register element (or the whole register, with no index) and its value.
bool is_register(const UOp& u) { return u.op() == Ops::INDEX && u.src(0).op() == Ops::DEFINE_REG; }
bool is_register_load(const UOp& u) { return u.op() == Ops::LOAD && is_register(u.src(0)); }

// Printed where used, in the kernel AST and in the list alike.
bool is_leaf(const UOp& u) {
  return u.op() == Ops::CONST || u.op() == Ops::RANGE || u.op() == Ops::SPECIAL ||
         u.op() == Ops::DEFINE_VAR || u.op() == Ops::DEFINE_GLOBAL || u.op() == Ops::DEFINE_LOCAL ||
         u.op() == Ops::INDEX;
}

// Nodes of the kernel AST that are never computed into a variable. The kernel's own store is the
// epilogue's; a store to shared memory is a statement among the nodes.
bool is_inline(const UOp& u) {
  return is_leaf(u) || u.op() == Ops::SINK ||
         (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL);
}

// Printed where used in the list: never an entry.
bool is_operand(const UOp& u) {
  return is_leaf(u) || u.op() == Ops::DEFINE_REG || u.op() == Ops::GEP || is_register_load(u);
}

// The nodes reachable from `roots`: not below a SPECIAL (its size is the launch's, not the
// kernel's to compute), nor, unless `into_reduces`, below a REDUCE.
std::unordered_set<const UOpNode*> reachable(const std::vector<UOp>& roots, bool into_reduces) {
  std::unordered_set<const UOpNode*> seen;
  std::vector<UOp> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (!seen.insert(u.get()).second) continue;
    if ((u.op() == Ops::REDUCE && !into_reduces) || u.op() == Ops::SPECIAL) continue;
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  return seen;
}

// A float MAX combines as decompose writes it; the other ops as themselves.
UOp combine(Ops op, DType d, const UOp& a, const UOp& b) {
  if (op == Ops::MAX && d.is_float()) return float_max(a, b);
  return UOp::make(op, d, {a, b});
}

UOp reg_index(const UOp& reg, const std::vector<UOp>& ranges) {
  std::vector<UOp> src{reg};
  src.insert(src.end(), ranges.begin(), ranges.end());
  return UOp::make(Ops::INDEX, reg.dtype(), std::move(src));
}

class Linearizer {
 public:
  Linearizer(const UOp& ast, const LinearizeOptions& options)
      : ast_(ast), options_(options), topo_(toposort(ast)) {
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
  }

  std::vector<UOp> run() {
    for (const UOp& r : ranges_of(AxisType::global)) open(r);
    // Head: values every later scope may use.
    const UOp& store = ast_.src(0);
    std::vector<UOp> roots{store};
    for (const UOp& u : topo_)
      if (u.op() == Ops::REDUCE) roots.push_back(u.src(0));
    emit_nodes(needed(
                   roots, [&](const UOp& u) { return in_head(u); }, true),
               head_);
    for (const UOp& u : topo_)
      if (u.op() == Ops::REDUCE) emit_reduce(u);
    emit_epilogue();
    close_to(0);
    return std::move(list_);
  }

 private:
  using Scope = std::unordered_set<const UOpNode*>;  // the nodes listed in a scope

  uint64_t deps(const UOp& u) const { return deps_.at(u.get()); }

  std::vector<UOp> ranges_of(AxisType t) const {
    std::vector<UOp> out;
    for (const UOp& r : all_ranges_)
      if (r.arg_as<AxisArg>().type == t) out.push_back(r);
    return out;
  }

  bool in_head(const UOp& u) const {
    const uint64_t d = deps(u);
    if (u.op() == Ops::REDUCE || reduce_value_.at(u.get())) return false;
    if (d & upcast_mask_) return false;
    for (const auto& [r, own] : reduce_mask_)
      if (d & own) return false;
    for (const UOp& r : all_ranges_)
      if (r.arg_as<AxisArg>().type == AxisType::unroll && has(d, r)) return false;
    return true;
  }

  // Nodes reachable from roots that satisfy `keep`, in topological order; with `into_reduces`,
  // also through the bodies of REDUCEs.
  template <class Keep>
  std::vector<UOp> needed(const std::vector<UOp>& roots, Keep keep, bool into_reduces) const {
    const auto seen = reachable(roots, into_reduces);
    std::vector<UOp> out;
    for (const UOp& u : topo_)
      if (seen.count(u.get()) && !is_inline(u) && keep(u)) out.push_back(u);
    return out;
  }

  // Accumulator dims: the upcast ranges the result depends on, then the reduce's unroll ranges.
  std::vector<UOp> acc_dims(const UOp& r, bool with_unroll) const {
    std::vector<UOp> dims;
    const uint64_t d = deps(r);
    for (const UOp& x : all_ranges_)
      if (x.arg_as<AxisArg>().type == AxisType::upcast && has(d, x)) dims.push_back(x);
    if (with_unroll)
      for (size_t i = 1; i < r.src().size(); ++i)
        if (r.src(i).arg_as<AxisArg>().type == AxisType::unroll) dims.push_back(r.src(i));
    return dims;
  }

  // --- the list ---
  void push(const UOp& u) { list_.push_back(u); }
  void open(const UOp& r) {
    push(r);
    open_.push_back(r);
  }
  // Closes the innermost loops until `n` stay open.
  void close_to(size_t n) {
    while (open_.size() > n) {
      push(UOp::make(Ops::END, dtypes::void_, {open_.back()}));
      open_.pop_back();
    }
  }
  UOp define_reg(DType d, const std::vector<UOp>& dims, std::string name) {
    int64_t n = 1;
    for (const UOp& x : dims) n *= range_size(x);
    const UOp reg = UOp::make(Ops::DEFINE_REG, d.ptr(n, AddrSpace::reg), dims, std::move(name));
    push(reg);
    return reg;
  }

  // `u` with what replaced its sources: a REDUCE by its folded register, a preloaded load by its
  // register array.
  UOp rebuild(const UOp& u) {
    if (auto it = replaced_.find(u.get()); it != replaced_.end()) return it->second;
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      src.push_back(rebuild(s));
      changed = changed || src.back() != s;
    }
    UOp out = changed ? u.replace(std::move(src)) : u;
    memo_.emplace(u.get(), out);
    return out;
  }
  void replace(const UOp& from, const UOp& to) {
    replaced_[from.get()] = to;
    memo_.clear();
  }

  void emit_nodes(const std::vector<UOp>& nodes, Scope& scope) {
    for (const UOp& u : nodes) {
      if (!scope.insert(u.get()).second) continue;
      // A REDUCE is read through its register; a vector's element where it is used.
      if (u.op() == Ops::REDUCE || u.op() == Ops::GEP) continue;
      push(rebuild(u));
    }
  }

  // Opens `loops`, listing each of `nodes` inside the innermost (or, hoisting, the outermost loop
  // where its ranges exist). The caller closes the loops.
  void emit_nest(const std::vector<UOp>& loops, const std::vector<UOp>& nodes, Scope& scope) {
    std::vector<std::vector<UOp>> at(loops.size() + 1);
    for (const UOp& u : nodes) {
      size_t level = loops.size();
      if (options_.hoist) {
        const uint64_t p = deps(u);
        level = 0;
        for (size_t i = 0; i < loops.size(); ++i)
          if (has(p, loops[i])) level = i + 1;
      }
      at[level].push_back(u);
    }
    emit_nodes(at[0], scope);
    for (size_t i = 0; i < loops.size(); ++i) {
      open(loops[i]);
      emit_nodes(at[i + 1], scope);
    }
  }

  void emit_reduce(const UOp& r) {
    const int id = reduces_++;
    // A sum of products that fuse_multiply_add marked steps as MULACC(a, b, acc) and folds as a
    // sum.
    const bool fused = r.arg_as<Ops>() == Ops::MULACC;
    const Ops op = fused ? Ops::ADD : r.arg_as<Ops>();
    const DType d = r.dtype();
    const std::vector<UOp> terms =
        fused ? std::vector<UOp>{r.src(0).src(0), r.src(0).src(1)} : std::vector<UOp>{r.src(0)};
    // Preloading keeps one accumulator per output and walks the unroll ranges inside the
    // register nest (registers are scarce; other lanes hide the add latency).
    // regs: the upcast and unroll ranges the body's register nest walks.
    const std::vector<UOp> outer = acc_dims(r, false), regs = acc_dims(r, true);
    const std::vector<UOp>& all = options_.preload ? outer : regs;
    std::vector<UOp> loops;
    for (size_t i = 1; i < r.src().size(); ++i)
      if (r.src(i).arg_as<AxisArg>().type != AxisType::unroll) loops.push_back(r.src(i));
    const size_t base = open_.size();
    Scope none;
    const UOp acc = define_reg(d, all, fmt::format("acc{}", id));
    const UOp cur = reg_index(acc, all);
    emit_nest(all, {}, none);
    push(cur.store(reduce_identity(op, d)));
    close_to(base);
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
    emit_nodes(pre, head_);
    Scope scope = head_;
    std::vector<UOp> preloaded;
    if (options_.preload) {
      uint64_t mask = 0;
      for (const UOp& x : regs) mask |= uint64_t{1} << x.arg_as<AxisArg>().id;
      std::vector<UOp> outer_nodes, inner_nodes;
      for (const UOp& u : body) (deps(u) & mask ? inner_nodes : outer_nodes).push_back(u);
      emit_nest(loops, outer_nodes, scope);
      for (const UOp& ld : inner_nodes) {
        if (ld.op() != Ops::LOAD) continue;
        std::vector<UOp> dims;
        for (const UOp& x : regs)
          if (has(deps(ld), x)) dims.push_back(x);
        const UOp arr = define_reg(ld.dtype(), dims, fmt::format("ld{}", loads_++));
        if (shuffled(ld, dims)) {
          emit_shuffled(ld, dims, arr, scope);
        } else {
          const size_t level = open_.size();
          Scope local = scope;
          emit_nest(dims,
                    needed(
                        {ld.src(0)},
                        [&](const UOp& u) { return !local.count(u.get()) && !in_head(u); }, false),
                    local);
          push(reg_index(arr, dims).store(rebuild(ld)));
          close_to(level);
        }
        scope.insert(ld.get());
        replace(ld, reg_index(arr, dims).load());
        preloaded.push_back(ld);
      }
      emit_nest(regs, inner_nodes, scope);
    } else {
      std::vector<UOp> nest = loops;
      nest.insert(nest.end(), all.begin(), all.end());
      emit_nest(nest, body, scope);
    }
    const UOp step =
        fused ? UOp::make(Ops::MULACC, d, {rebuild(terms[0]), rebuild(terms[1]), cur.load()})
              : combine(op, d, cur.load(), rebuild(r.src(0)));
    push(cur.store(step));
    close_to(base);
    for (const UOp& ld : preloaded) replaced_.erase(ld.get());
    memo_.clear();
    // Fold the unrolled accumulators.
    const UOp red = define_reg(d, outer, fmt::format("red{}", id));
    const UOp dst = reg_index(red, outer);
    emit_nest(outer, {}, none);
    push(dst.store(reduce_identity(op, d)));
    const std::vector<UOp> unrolls(all.begin() + static_cast<long>(outer.size()), all.end());
    emit_nest(unrolls, {}, none);
    push(dst.store(combine(op, d, dst.load(), cur.load())));
    close_to(base);
    replace(r, dst.load());
  }

  // Whether the preloaded `ld` over `dims` is shared through subgroup shuffles
  // (LinearizeOptions::shuffle_lanes): 32-bit elements, at least two, at an address that no lane
  // index and no reduction's result (an index computed from data) enters.
  bool shuffled(const UOp& ld, const std::vector<UOp>& dims) const {
    if (options_.shuffle_lanes < 2 || reduce_value_.at(ld.get())) return false;
    const DType s = ld.dtype().scalar();
    if (s != dtypes::float32 && s != dtypes::int32 && s != dtypes::uint32) return false;
    if (prod_sizes(dims) < 2) return false;
    for (const UOp& u : toposort(ld))
      if (u.op() == Ops::SPECIAL && u.arg_as<std::string>().rfind("gidx", 0) != 0) return false;
    return true;
  }

  // `arr` (over `dims`, E elements) filled from `ld` through shuffles: with S sharing lanes, lane
  // l loads element min(l + S * q, E - 1) for each q < ceil(E / S) (the lanes past S, where a
  // subgroup holds more, and the last round's past E load an element nobody reads from them, in
  // bounds), and element e is lane e % S's q = e / S, stored as unrolled statements.
  void emit_shuffled(const UOp& ld, const std::vector<UOp>& dims, const UOp& arr, Scope& scope) {
    const int64_t S = options_.shuffle_lanes, n = prod_sizes(dims);
    const UOp lane =
        UOp::make(Ops::CUSTOM, dtypes::index, {}, std::string("int(gl_SubgroupInvocationID)"));
    std::vector<UOp> mine;
    for (int64_t q = 0; q * S < n; ++q) {
      std::unordered_map<UOp, UOp, UOpHash> at;
      digits_of((lane + q * S).minimum(UOp::const_(dtypes::index, n - 1)), dims, at);
      const UOp fetch = simplify(substitute(ld, at));
      keep_.push_back(fetch);
      for (const UOp& u : toposort(fetch)) {
        if (is_inline(u) || !scope.insert(u.get()).second) continue;
        push(rebuild(u));
      }
      mine.push_back(rebuild(fetch));
    }
    for (int64_t e = 0; e < n; ++e) {
      std::unordered_map<UOp, UOp, UOpHash> digits;
      digits_of(UOp::const_(dtypes::index, e), dims, digits);
      std::vector<UOp> at{arr};
      for (const UOp& x : dims) at.push_back(simplify(digits.at(x)));
      const UOp value = UOp::make(Ops::CUSTOM, ld.dtype(), {mine[static_cast<size_t>(e / S)]},
                                  fmt::format("subgroupShuffle({{0}}, {}u)", e % S));
      push(UOp::make(Ops::INDEX, arr.dtype(), std::move(at)).store(value));
    }
  }

  void emit_epilogue() {
    const UOp& st = ast_.src(0);
    Scope scope = head_;
    const size_t base = open_.size();
    if (st.src().size() < 3) {
      emit_nest(ranges_of(AxisType::upcast),
                needed(
                    {st}, [&](const UOp& u) { return !in_head(u); }, false),
                scope);
      push(rebuild(st));
      close_to(base);
      return;
    }
    // A vector store (fold_vectors): the value is gathered along its range (the innermost upcast
    // range) into a vector register, stored after that loop.
    const UOp& u = st.src(2);
    const uint64_t bit = uint64_t{1} << u.arg_as<AxisArg>().id;
    std::vector<UOp> outer_nodes, inner_nodes;
    for (const UOp& x : needed(
             {st.src(1), st.src(0).src(1)}, [&](const UOp& x) { return !in_head(x); }, false))
      (deps(x) & bit ? inner_nodes : outer_nodes).push_back(x);
    std::vector<UOp> ups = ranges_of(AxisType::upcast);
    ups.pop_back();
    emit_nest(ups, outer_nodes, scope);
    const size_t level = open_.size();
    const UOp vec = define_reg(st.src(0).dtype().base(), {}, "v");
    emit_nest({u}, inner_nodes, scope);
    push(UOp::make(Ops::INDEX, st.src(1).dtype().ptr(1, AddrSpace::reg), {vec, u})
             .store(rebuild(st.src(1))));
    close_to(level);
    const UOp& index = st.src(0);
    push(UOp::make(Ops::INDEX, index.dtype(), {index.src(0), rebuild(index.src(1))})
             .store(reg_index(vec, {}).load()));
    close_to(base);
  }

  UOp ast_;
  LinearizeOptions options_;
  std::vector<UOp> topo_;
  std::vector<UOp> all_ranges_;  // sorted by axis id
  uint64_t upcast_mask_ = 0;
  std::unordered_map<const UOpNode*, uint64_t> deps_;         // range ids a node depends on
  std::unordered_map<const UOpNode*, bool> reduce_value_;     // depends on a REDUCE's result
  std::unordered_map<const UOpNode*, uint64_t> reduce_mask_;  // a REDUCE's own ranges
  Scope head_;
  std::unordered_map<const UOpNode*, UOp> replaced_, memo_;
  std::vector<UOp> list_, open_;
  int reduces_ = 0, loads_ = 0;
  std::vector<UOp> keep_;  // nodes made while listing (shuffled loads): memo_ keys stay theirs
};

}  // namespace

std::vector<UOp> linearize(const UOp& ast, const LinearizeOptions& options) {
  return Linearizer(ast, options).run();
}

void verify_linear(const std::vector<UOp>& list) {
  // scopes.back(): what the innermost open loop's body has listed so far.
  std::vector<std::unordered_set<const UOpNode*>> scopes(1);
  std::vector<UOp> open;
  auto listed = [&](const UOp& u) {
    for (const auto& s : scopes)
      if (s.count(u.get())) return true;
    return false;
  };
  auto fail = [](const UOp& u, const char* why) {
    throw InternalError(
        fmt::format("spec failed after linearize: {} {}\n{}", op_name(u.op()), why, to_string(u)));
  };
  // Whether `u` can be printed here: listed, or an operand (or, `whole`, any node) whose own
  // sources can.
  std::unordered_set<const UOpNode*> ok;
  auto check = [&](auto& self, const UOp& u, bool whole) -> void {
    if (ok.count(u.get()) || listed(u)) return;
    if (u.op() == Ops::RANGE) {
      if (std::find(open.begin(), open.end(), u) == open.end()) fail(u, "read outside its loop");
      return;
    }
    if (u.op() == Ops::DEFINE_REG) fail(u, "read before it is declared");
    if (u.op() == Ops::SPECIAL) return;  // defined by the printer from the launch
    if (!whole && !is_operand(u)) fail(u, "read before it is computed");
    for (const UOp& s : u.src()) self(self, s, whole);
    if (!whole) ok.insert(u.get());
  };
  for (const UOp& u : list) {
    switch (u.op()) {
      case Ops::RANGE:
        check(check, u.src(0), true);
        open.push_back(u);
        scopes.emplace_back();
        ok.clear();
        continue;
      case Ops::END:
        if (open.empty() || open.back() != u.src(0)) fail(u, "closes a loop that is not open");
        open.pop_back();
        scopes.pop_back();
        ok.clear();
        continue;
      case Ops::DEFINE_REG:
        scopes.back().insert(u.get());
        continue;
      case Ops::STORE:
        check(check, u.src(0), false);
        check(check, u.src(1), is_register(u.src(0)));
        for (size_t i = 2; i < u.src().size(); ++i) check(check, u.src(i), false);
        scopes.back().insert(u.get());  // a barrier orders it
        continue;
      default:
        if (is_operand(u)) fail(u, "listed as a statement");
        for (const UOp& s : u.src()) check(check, s, false);
        scopes.back().insert(u.get());
    }
  }
  if (!open.empty()) fail(open.back(), "left open");
}

std::vector<UOp> values_of(const std::vector<UOp>& roots, const std::vector<UOp>& order) {
  const auto seen = reachable(roots, false);
  std::vector<UOp> out;
  for (const UOp& u : order)
    if (seen.count(u.get()) && !is_inline(u) && !is_operand(u) && u.op() != Ops::REDUCE)
      out.push_back(u);
  return out;
}

// ---------------------------------------------------------------- Printer

Printer::Printer(const UOp& ast) : vars_(kernel_vars(ast)) {
  // Variables are named var_<name>; a name that collides once made an identifier gets its index.
  for (size_t i = 0; i < vars_.size(); ++i) {
    std::string n = "var_" + c_identifier(vars_[i].arg_as<VarArg>().name);
    if (std::find(var_names_.begin(), var_names_.end(), n) != var_names_.end())
      n += fmt::format("_{}", i);
    var_names_.push_back(std::move(n));
  }
}

std::string Printer::name_of(const UOp& r) {
  const auto& a = r.arg_as<AxisArg>();
  const char* p =
      a.type == AxisType::global ? "gidx"
      : a.type == AxisType::reduce || a.type == AxisType::group_reduce || a.type == AxisType::stage
          ? "ridx"
          : "uidx";
  return fmt::format("{}{}", p, a.id);
}

std::string Printer::operand(const UOp& u, const Names& names) const {
  switch (u.op()) {
    case Ops::CONST:
      return literal(u);
    case Ops::RANGE:
      return name_of(u);
    case Ops::SPECIAL:
      return u.arg_as<std::string>();
    case Ops::DEFINE_VAR: {
      const auto it = std::find(vars_.begin(), vars_.end(), u);
      return var_names_[static_cast<size_t>(it - vars_.begin())];
    }
    case Ops::GEP:  // a vector's element, read where it is used
      return fmt::format("{}[{}]", operand(u.src(0), names), operand(u.src(1), names));
    default:
      break;
  }
  if (is_register(u)) {  // reg[i][j]
    auto it = names.find(u.src(0).get());
    if (it == names.end()) throw InternalError("codegen: a register used before it is declared");
    std::string s = it->second;
    for (size_t i = 1; i < u.src().size(); ++i) s += "[" + operand(u.src(i), names) + "]";
    return s;
  }
  if (is_register_load(u)) return operand(u.src(0), names);
  auto it = names.find(u.get());
  if (it == names.end())
    throw InternalError(fmt::format("codegen: {} used before it is computed", op_name(u.op())));
  return it->second;
}

std::string Printer::inline_expr(const UOp& e, const Names& names) const {
  Names local = names;
  auto walk = [&](auto& self, const UOp& u) -> void {
    if (local.count(u.get()) || is_operand(u) || u.op() == Ops::INDEX) {
      if (u.op() == Ops::GEP || is_register(u) || is_register_load(u))
        for (const UOp& s : u.src()) self(self, s);
      return;
    }
    for (const UOp& s : u.src()) self(self, s);
    local[u.get()] = expr(u, local);
  };
  walk(walk, e);
  return operand(e, local);
}

std::string Printer::barrier(int) const {
  throw InternalError("codegen: a BARRIER for a language without shared memory");
}

std::string Printer::range_end(const UOp& r) const {
  const int64_t n = range_size(r);
  return n >= 0 ? std::to_string(n) : inline_expr(r.src(0), {});
}

std::string Printer::expr(const UOp& u, const Names& names) const {
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
  return alu(u.op(), u.dtype(), u.src(0).dtype(), s, u);
}

void Printer::print(const std::vector<UOp>& list, int depth, std::string& out, Names& names) {
  for (const UOp& u : list) {
    switch (u.op()) {
      case Ops::RANGE:
        out += loop_open(u, depth++);
        break;
      case Ops::END:
        out += fmt::format("{}}}\n", indent(--depth));
        break;
      case Ops::DEFINE_REG: {
        // Registers of loaded values need none of an accumulator's qualifiers.
        const DType d = u.dtype().base();
        const std::string& arg = u.arg_as<std::string>();
        const std::string name = arg == "v" ? fmt::format("v{}", next_var_++) : arg;
        out += fmt::format("{}{} {}", indent(depth), arg.starts_with("ld") ? type(d) : var_type(d),
                           name);
        names[u.get()] = name;
        for (const UOp& x : u.src()) out += fmt::format("[{}]", range_size(x));
        out += ";\n";
        break;
      }
      case Ops::STORE:
        if (is_register(u.src(0))) {
          const UOp& v = u.src(1);
          out += fmt::format("{}{} = {};\n", indent(depth), operand(u.src(0), names),
                             v.is_const() ? register_literal(v) : inline_expr(v, names));
        } else {
          out += store(u, names, depth);
          names[u.get()] = "";  // done (a barrier orders it)
        }
        break;
      case Ops::BARRIER:
        out += barrier(depth);
        names[u.get()] = "";  // done (the loads after it name it)
        break;
      default: {
        const std::string v = fmt::format("v{}", next_var_++);
        const std::string e = expr(u, names);
        out += fmt::format("{}{} {} = {};\n", indent(depth), var_type(u.dtype()), v, e);
        names[u.get()] = v;
      }
    }
  }
}

}  // namespace vkgrad
