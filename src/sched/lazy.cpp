// sched: tensor-level graph builders and shape inference (see lazy.hpp).
#include "sched/lazy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <vkgrad/error.hpp>

namespace vkgrad::lazy {
namespace {
std::atomic<int64_t> g_next_buffer_id{1};

IntTuple tuple(const std::vector<int64_t>& v) { return IntTuple(v.begin(), v.end()); }
}  // namespace

int64_t prod(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

namespace {
struct VarTable {
  std::mutex mu;
  std::deque<VarArg> vars;  // stable addresses
  std::unordered_map<std::string, int64_t> by_name;
  static VarTable& get() {
    static VarTable* t = new VarTable();
    return *t;
  }
};
}  // namespace

int64_t sym_dim(const VarArg& v) {
  VarTable& t = VarTable::get();
  std::lock_guard lock(t.mu);
  if (auto it = t.by_name.find(v.name); it != t.by_name.end()) {
    const VarArg& known = t.vars[it->second];
    if (known.min != v.min || known.max != v.max)
      throw Error(fmt::format(
          "Variable: \"{}\" is already a variable with bounds [{}, {}], not [{}, {}]; one name "
          "names one variable",
          v.name, known.min, known.max, v.min, v.max));
    return -1 - it->second;
  }
  t.vars.push_back(v);
  const int64_t id = static_cast<int64_t>(t.vars.size()) - 1;
  t.by_name.emplace(v.name, id);
  return -1 - id;
}

const VarArg& sym_var(int64_t d) {
  VarTable& t = VarTable::get();
  std::lock_guard lock(t.mu);
  return t.vars.at(static_cast<size_t>(-1 - d));
}

bool has_sym(const Shape& s) {
  for (int64_t d : s)
    if (is_sym(d)) return true;
  return false;
}

UOp dim_uop(int64_t d) {
  if (!is_sym(d)) return UOp::const_(dtypes::index, d);
  const VarArg& v = sym_var(d);
  return UOp::variable(v.name, v.min, v.max);
}

int64_t dim_max(int64_t d) { return is_sym(d) ? sym_var(d).max : d; }

int64_t prod_max(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= dim_max(d);
  return n;
}

int64_t dim_value(int64_t d, const VarValues& values) {
  if (!is_sym(d)) return d;
  const VarArg& v = sym_var(d);
  auto it = values.find(v.name);
  if (it == values.end())
    throw InternalError(fmt::format("the variable {} has no value here", v.name));
  return it->second;
}

Shape concrete(const Shape& s, const VarValues& values) {
  Shape out = s;
  for (int64_t& d : out) d = dim_value(d, values);
  return out;
}

VarValues values_at(const Shape& s, const Shape& sizes) {
  VarValues out;
  for (size_t i = 0; i < s.size(); ++i)
    if (is_sym(s[i])) out[sym_var(s[i]).name] = sizes[i];
  return out;
}

UOp reshape_bound(const UOp& x, const Shape& shape, const VarValues& values) {
  std::vector<UOp> src{x};
  for (int64_t d : shape) {
    if (!is_sym(d)) continue;
    const UOp b = dim_uop(d).bind(dim_value(d, values));
    if (std::find(src.begin(), src.end(), b) == src.end()) src.push_back(b);
  }
  return UOp::make(Ops::RESHAPE, x.dtype(), std::move(src), tuple(shape));
}

VarValues bound_values(std::span<const UOp> roots) {
  VarValues out;
  for (const UOp& u : toposort(roots)) {
    if (u.op() != Ops::BIND) continue;
    const std::string& name = u.src(0).arg_as<VarArg>().name;
    const int64_t value = std::get<int64_t>(u.src(1).const_value());
    auto [it, fresh] = out.emplace(name, value);
    if (!fresh && it->second != value)
      throw Error(fmt::format("the variable {} is bound to both {} and {} in one computation", name,
                              it->second, value));
  }
  return out;
}

UOp buffer(DType dtype, int64_t count, const std::string& device) {
  const int64_t id = g_next_buffer_id.fetch_add(1, std::memory_order_relaxed);
  return UOp::make(Ops::BUFFER, dtype,
                   {UOp::make(Ops::UNIQUE, dtypes::void_, {}, id),
                    UOp::make(Ops::DEVICE, dtypes::void_, {}, device)},
                   count);
}

int64_t buffer_id(const UOp& b) { return b.src(0).arg_as<int64_t>(); }
const std::string& buffer_device(const UOp& b) { return b.src(1).arg_as<std::string>(); }

UOp iota(int64_t n, DType dtype) { return UOp::make(Ops::IOTA, dtype, {}, n); }

UOp reshape(const UOp& x, const Shape& shape) {
  return UOp::make(Ops::RESHAPE, x.dtype(), {x}, tuple(shape));
}
UOp permute(const UOp& x, const std::vector<int64_t>& order) {
  return UOp::make(Ops::PERMUTE, x.dtype(), {x}, tuple(order));
}
UOp expand(const UOp& x, const Shape& shape) {
  return UOp::make(Ops::EXPAND, x.dtype(), {x}, tuple(shape));
}
UOp pad(const UOp& x, const PairTuple& padding) {
  return UOp::make(Ops::PAD, x.dtype(), {x}, padding);
}
UOp shrink(const UOp& x, const PairTuple& bounds) {
  return UOp::make(Ops::SHRINK, x.dtype(), {x}, bounds);
}
UOp flip(const UOp& x, const std::vector<int64_t>& flags) {
  return UOp::make(Ops::FLIP, x.dtype(), {x}, tuple(flags));
}
UOp reduce(const UOp& x, Ops op, const std::vector<int64_t>& axes) {
  IntTuple arg{static_cast<int64_t>(op)};
  arg.insert(arg.end(), axes.begin(), axes.end());
  return UOp::make(Ops::REDUCE_AXIS, x.dtype(), {x}, std::move(arg));
}
UOp contiguous(const UOp& x) { return UOp::make(Ops::CONTIGUOUS, x.dtype(), {x}); }

UOp assign(const UOp& target, const UOp& value, const Shape& offsets, const VarValues& values) {
  std::vector<UOp> src{target, value};
  for (int64_t d : offsets) {
    if (!is_sym(d)) continue;
    const UOp b = dim_uop(d).bind(dim_value(d, values));
    if (std::find(src.begin(), src.end(), b) == src.end()) src.push_back(b);
  }
  return UOp::make(Ops::ASSIGN, target.dtype(), std::move(src), tuple(offsets));
}

UOp assign_buffer(const UOp& assign) {
  UOp u = assign;
  while (u.op() == Ops::ASSIGN || u.op() == Ops::RESHAPE) u = u.src(0);
  if (u.op() != Ops::BUFFER)
    throw InternalError(fmt::format("assign: the target is a {}, not a buffer", op_name(u.op())));
  return u;
}

Ops reduce_op(const UOp& r) { return static_cast<Ops>(r.arg_as<IntTuple>()[0]); }
std::vector<int64_t> reduce_axes(const UOp& r) {
  const IntTuple& a = r.arg_as<IntTuple>();
  return std::vector<int64_t>(a.begin() + 1, a.end());
}

namespace {
Shape infer(const UOp& u, const std::vector<const Shape*>& in) {
  switch (u.op()) {
    case Ops::BUFFER:
      return {u.arg_as<int64_t>()};
    case Ops::IOTA:
      return {u.arg_as<int64_t>()};
    case Ops::CONST:
    case Ops::DEFINE_VAR:
    case Ops::BIND:
      return {};
    case Ops::RESHAPE:
    case Ops::EXPAND: {
      const IntTuple& a = u.arg_as<IntTuple>();
      return Shape(a.begin(), a.end());
    }
    case Ops::ASSIGN:
      return *in[0];
    case Ops::PERMUTE: {
      const IntTuple& order = u.arg_as<IntTuple>();
      Shape s(order.size());
      for (size_t i = 0; i < order.size(); ++i) s[i] = (*in[0])[order[i]];
      return s;
    }
    case Ops::PAD: {
      Shape s = *in[0];
      const PairTuple& p = u.arg_as<PairTuple>();
      for (size_t i = 0; i < s.size(); ++i) s[i] += p[i].first + p[i].second;
      return s;
    }
    case Ops::SHRINK: {
      Shape s = *in[0];
      const PairTuple& p = u.arg_as<PairTuple>();
      for (size_t i = 0; i < s.size(); ++i) s[i] = p[i].second - p[i].first;
      return s;
    }
    case Ops::REDUCE_AXIS: {
      Shape s = *in[0];
      for (int64_t a : reduce_axes(u)) s[a] = 1;
      return s;
    }
    default:
      if (in.empty())
        throw InternalError(fmt::format("shape_of: no shape for {}", op_name(u.op())));
      return *in[0];  // elementwise, CAST, BITCAST, CONTIGUOUS, DETACH, GRAD_RULE, FLIP, ...
  }
}
}  // namespace

const Shape& ShapeMap::operator()(const UOp& root) {
  if (auto it = shapes_.find(root.get()); it != shapes_.end()) return it->second;
  // Iterative post-order over the nodes not yet known.
  std::vector<std::pair<UOp, bool>> stack{{root, false}};
  std::vector<const Shape*> in;
  while (!stack.empty()) {
    auto [u, expanded] = stack.back();
    stack.pop_back();
    if (shapes_.count(u.get())) continue;
    if (!expanded) {
      stack.push_back({u, true});
      for (const UOp& s : u.src())
        if (!shapes_.count(s.get()) && s.op() != Ops::UNIQUE && s.op() != Ops::DEVICE)
          stack.push_back({s, false});
      continue;
    }
    in.clear();
    for (const UOp& s : u.src())
      if (s.op() != Ops::UNIQUE && s.op() != Ops::DEVICE) in.push_back(&shapes_.at(s.get()));
    shapes_.emplace(u.get(), infer(u, in));
  }
  return shapes_.at(root.get());
}

Shape shape_of(const UOp& u) {
  // One path suffices: every source of an elementwise node has its shape, and a movement op's
  // shape follows from its first source's. Walk src(0) down to a node whose argument gives its
  // shape, then back up — not the whole graph, which ShapeMap would.
  std::vector<UOp> path;
  for (UOp n = u;;) {
    path.push_back(n);
    const Ops op = n.op();
    if (n.src().empty() || op == Ops::BUFFER || op == Ops::RESHAPE || op == Ops::EXPAND ||
        op == Ops::BIND)
      break;
    n = n.src(0);
  }
  Shape s = infer(path.back(), {});
  for (auto it = path.rbegin() + 1; it != path.rend(); ++it) s = infer(*it, {&s});
  return s;
}

}  // namespace vkgrad::lazy
