// Composition of the rule families, the entry points simplify / substitute / resolve, and the
// shared term vocabulary of terms.hpp (canonical order, sums as terms, floor arithmetic).
#include "ir/symbolic/symbolic.hpp"

#include <fmt/format.h>

#include <numeric>
#include <vkgrad/error.hpp>

#include "ir/scalar.hpp"
#include "ir/symbolic/terms.hpp"

namespace vkgrad {

// ---------------------------------------------------------------- the canonical order

namespace symbolic {
namespace {

bool is_leaf(Ops op) {
  return op == Ops::DEFINE_VAR || op == Ops::SPECIAL || op == Ops::RANGE || op == Ops::CONST;
}

// The leaf a node leads with: follow first sources (a bounded walk, so deep chains stay cheap;
// the result is still a function of the node alone).
const UOp& lead(const UOp& u) {
  const UOp* p = &u;
  for (int i = 0; i < 64 && !is_leaf(p->op()) && !p->src().empty(); ++i) p = &p->src(0);
  return *p;
}

int leaf_class(Ops op) {
  switch (op) {
    case Ops::DEFINE_VAR:
      return 0;
    case Ops::SPECIAL:
      return 1;
    case Ops::RANGE:
      return 2;
    case Ops::CONST:
      return 3;
    default:
      return 4;
  }
}

template <class T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : b < a ? 1 : 0;
}

int leaf_cmp(const UOp& a, const UOp& b) {
  if (int c = three_way(leaf_class(a.op()), leaf_class(b.op()))) return c;
  if (a.op() == Ops::DEFINE_VAR) {
    if (int c = a.arg_as<VarArg>().name.compare(b.arg_as<VarArg>().name)) return c < 0 ? -1 : 1;
  } else if (a.op() == Ops::SPECIAL) {
    if (int c = a.arg_as<std::string>().compare(b.arg_as<std::string>())) return c < 0 ? -1 : 1;
  } else if (a.op() == Ops::RANGE) {
    if (int c = three_way(a.arg_as<AxisArg>().id, b.arg_as<AxisArg>().id)) return c;
  }
  return three_way(a.key(), b.key());
}

}  // namespace

int order_cmp(const UOp& a, const UOp& b) {
  if (a == b) return 0;
  if (int c = three_way(a.is_const(), b.is_const())) return c;
  const UOp& la = lead(a);
  const UOp& lb = lead(b);
  if (la != lb)
    if (int c = leaf_cmp(la, lb)) return c;
  if (int c = three_way(a != la, b != lb)) return c;  // the leaf itself first
  if (int c = three_way(a.op(), b.op())) return c;
  return three_way(a.key(), b.key());
}

// ---------------------------------------------------------------- sums as terms

namespace {
int64_t wrap_mul(DType dt, int64_t a, int64_t b) {
  return wrap_int(dt, static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
}
int64_t wrap_add(DType dt, int64_t a, int64_t b) {
  return wrap_int(dt, static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)));
}
}  // namespace

std::vector<UOp> split_product(const UOp& u) {
  std::vector<UOp> factors;
  std::vector<const UOp*> stack{&u};  // right to left, so factors come out in order
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n->op() == Ops::MUL) {
      stack.push_back(&n->src(1));
      stack.push_back(&n->src(0));
    } else {
      factors.push_back(*n);
    }
  }
  return factors;
}

UOp build_product(const std::vector<UOp>& factors) {
  UOp out;
  for (const UOp& f : factors) out = out ? out * f : f;
  return out;
}

Sum split_sum(const UOp& u) {
  Sum s;
  DType dt = u.dtype();
  // Sources are pushed right to left so that terms come out in order of appearance.
  std::vector<std::pair<const UOp*, int64_t>> stack{{&u, 1}};
  while (!stack.empty()) {
    auto [n, k] = stack.back();
    stack.pop_back();
    if (n->op() == Ops::ADD) {
      stack.emplace_back(&n->src(1), k);
      stack.emplace_back(&n->src(0), k);
    } else if (n->is_const()) {
      s.constant = wrap_add(dt, s.constant, wrap_mul(dt, k, as_int(n->const_value())));
    } else if (n->op() == Ops::MUL && (n->src(1).is_const() || n->src(0).is_const())) {
      bool c_last = n->src(1).is_const();
      const UOp& other = n->src(c_last ? 0 : 1);
      int64_t kk = wrap_mul(dt, k, as_int(n->src(c_last ? 1 : 0).const_value()));
      if (other.op() == Ops::ADD || other.is_const())
        stack.emplace_back(&other, kk);
      else
        s.terms.push_back({other, kk});
    } else {
      s.terms.push_back({*n, k});
    }
  }
  return s;
}

UOp term_node(const UOp& base, int64_t coeff) {
  return coeff == 1 ? base : base * base.const_like(coeff);
}

UOp build_sum(DType dt, const std::vector<Term>& terms, int64_t constant) {
  UOp acc;
  for (const Term& t : terms) {
    if (t.coeff == 0) continue;
    UOp n = term_node(t.base, t.coeff);
    acc = acc ? acc + n : n;
  }
  if (constant != 0 || !acc) {
    UOp c = UOp::const_(dt, constant);
    acc = acc ? acc + c : c;
  }
  return acc;
}

Bounds term_bounds(const Term& t) {
  __int128 a = __int128{t.coeff} * t.base.vmin(), b = __int128{t.coeff} * t.base.vmax();
  return a <= b ? Bounds{a, b} : Bounds{b, a};
}

Bounds sum_bounds(const Sum& s) {
  Bounds r{s.constant, s.constant};
  for (const Term& t : s.terms) {
    Bounds b = term_bounds(t);
    r.lo += b.lo;
    r.hi += b.hi;
  }
  return r;
}

bool is_signed_int(DType d) { return d.count() == 1 && d.is_int() && !d.is_unsigned(); }

bool fits(DType d, __int128 v) { return v >= dtypes::min_int(d) && v <= dtypes::max_int(d); }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }
int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
  return q;
}
int64_t gcd(int64_t a, int64_t b) {
  auto abs_u = [](int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : uint64_t(v); };
  return static_cast<int64_t>(std::gcd(abs_u(a), abs_u(b)));
}

size_t node_count(const UOp& u) { return toposort(u).size(); }

}  // namespace symbolic

// ---------------------------------------------------------------- composition and entry points

const PatternMatcher& pm_symbolic() {
  static const PatternMatcher pm = [] {
    std::vector<Rule> all;
    for (auto family : {rules_const, rules_add, rules_mul, rules_divmod, rules_cmp, rules_where}) {
      std::vector<Rule> rs = family();
      all.insert(all.end(), std::make_move_iterator(rs.begin()), std::make_move_iterator(rs.end()));
    }
    return PatternMatcher(std::move(all));
  }();
  return pm;
}

UOp simplify(const UOp& u) {
  return graph_rewrite(u, pm_symbolic(), nullptr, RewriteOptions{.name = "simplify"});
}

UOp substitute(const UOp& u, const std::unordered_map<UOp, UOp, UOpHash>& with) {
  if (with.empty()) return u;
  // One pass, parents first: a node in the map is replaced whole (its sources are not visited,
  // and its replacement is not substituted again), every other node is rebuilt from its
  // substituted sources. So {x: y, y: x} swaps and {x: x*2} doubles x once. Explicit stack.
  std::unordered_map<const UOpNode*, UOp> done;
  std::vector<std::pair<UOp, bool>> stack{{u, false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (done.count(n.get())) continue;
    if (auto it = with.find(n); it != with.end()) {
      done.emplace(n.get(), it->second);
      continue;
    }
    if (!expanded) {
      stack.emplace_back(n, true);
      for (size_t i = n.src().size(); i-- > 0;)
        if (!done.count(n.src(i).get())) stack.emplace_back(n.src(i), false);
      continue;
    }
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : n.src()) {
      src.push_back(done.at(s.get()));
      changed |= src.back() != s;
    }
    done.emplace(n.get(), changed ? n.replace(std::move(src)) : n);
  }
  return done.at(u.get());
}

bool resolve(const UOp& cond, bool default_value) {
  if (!cond.dtype().is_bool())
    throw DTypeError(fmt::format("resolve: need a bool expression, got {}", cond.dtype().name()));
  UOp s = simplify(cond);
  if (s.vmin() == s.vmax()) return s.vmin() != 0;
  return default_value;
}

}  // namespace vkgrad
