// Pattern construction, compilation into rules, matching with backtracking, and templates.
#include "ir/upat.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <vkgrad/error.hpp>

#include "ir/scalar.hpp"

namespace vkgrad {

bool in_class(DType d, DTypeClass c) {
  switch (c) {
    case DTypeClass::any:
      return true;
    case DTypeClass::ints:
      return d.scalar().is_int() && !d.is_ptr();
    case DTypeClass::floats:
      return d.scalar().is_float() && !d.is_ptr();
    case DTypeClass::bool_:
      return d.scalar().is_bool() && !d.is_ptr();
    case DTypeClass::ints_or_bool:
      return (d.scalar().is_int() || d.scalar().is_bool()) && !d.is_ptr();
  }
  return false;
}

// ---------------------------------------------------------------- construction

UPat UPat::with(const std::function<void(UPatNode&)>& f) const {
  auto n = std::make_shared<UPatNode>(*n_);
  f(*n);
  return UPat(std::move(n));
}

UPat UPat::any() { return UPat(std::make_shared<UPatNode>()); }

UPat UPat::ops(OpSet ops, std::vector<UPat> src) {
  auto n = std::make_shared<UPatNode>();
  n->ops = ops;
  n->src = std::move(src);
  n->mode = SrcMode::exact;
  return UPat(std::move(n));
}
UPat UPat::ops(OpSet ops) {
  auto n = std::make_shared<UPatNode>();
  n->ops = ops;
  return UPat(std::move(n));
}
UPat UPat::op(Ops op, std::vector<UPat> src) { return ops(OpSet{op}, std::move(src)); }
UPat UPat::op(Ops op) { return ops(OpSet{op}); }

UPat UPat::var(std::string name, DTypeClass c) {
  return any().with([&](UPatNode& n) {
    n.name = std::move(name);
    n.dtype_class = c;
  });
}
UPat UPat::cvar(std::string name, DTypeClass c) {
  return op(Ops::CONST).with([&](UPatNode& n) {
    n.name = std::move(name);
    n.dtype_class = c;
  });
}
UPat UPat::const_(ConstValue v) {
  return op(Ops::CONST).with([&](UPatNode& n) { n.value = v; });
}

UPat UPat::named(std::string name) const {
  return with([&](UPatNode& n) { n.name = std::move(name); });
}
UPat UPat::dtype(DType d) const {
  return with([&](UPatNode& n) { n.dtype = d; });
}
UPat UPat::dtype(DTypeClass c) const {
  return with([&](UPatNode& n) { n.dtype_class = c; });
}
UPat UPat::arg(Arg a) const {
  return with([&](UPatNode& n) { n.arg = std::move(a); });
}
UPat UPat::any_order() const {
  return with([](UPatNode& n) { n.mode = SrcMode::any_order; });
}
UPat UPat::prefix() const {
  return with([](UPatNode& n) { n.mode = SrcMode::prefix; });
}
UPat UPat::op_each(Ops op, UPat each) {
  auto n = std::make_shared<UPatNode>();
  n->ops = OpSet{op};
  n->src = {std::move(each)};
  n->mode = SrcMode::each;
  return UPat(std::move(n));
}

UPat UPat::alu(Ops op, const UPat& o) const {
  UPat p = UPat::op(op, {*this, o});
  return is_commutative(op) ? p.any_order() : p;
}
UPat UPat::cast(DType d) const { return UPat::op(Ops::CAST, {*this}).dtype(d); }
UPat UPat::lt(const UPat& o) const { return alu(Ops::CMPLT, o); }
UPat UPat::ne(const UPat& o) const { return alu(Ops::CMPNE, o); }
UPat UPat::eq(const UPat& o) const { return alu(Ops::CMPEQ, o); }
UPat UPat::maximum(const UPat& o) const { return alu(Ops::MAX, o); }
UPat UPat::where(const UPat& a, const UPat& b) const { return UPat::op(Ops::WHERE, {*this, a, b}); }
UPat UPat::logical_not() const { return ne(UPat::const_(true)); }

UPat operator+(const UPat& a, const UPat& b) { return a.alu(Ops::ADD, b); }
UPat operator*(const UPat& a, const UPat& b) { return a.alu(Ops::MUL, b); }
UPat operator-(const UPat& a) { return a * UPat::const_(int64_t{-1}); }
UPat operator-(const UPat& a, const UPat& b) { return a + (-b); }
UPat operator/(const UPat& a, const UPat& b) { return a.alu(Ops::IDIV, b); }
UPat operator%(const UPat& a, const UPat& b) { return a.alu(Ops::MOD, b); }
UPat operator&(const UPat& a, const UPat& b) { return a.alu(Ops::AND, b); }
UPat operator|(const UPat& a, const UPat& b) { return a.alu(Ops::OR, b); }
UPat operator^(const UPat& a, const UPat& b) { return a.alu(Ops::XOR, b); }
UPat operator<<(const UPat& a, const UPat& b) { return a.alu(Ops::SHL, b); }
UPat operator>>(const UPat& a, const UPat& b) { return a.alu(Ops::SHR, b); }

// ---------------------------------------------------------------- compiling rules

namespace {

// Flatten a pattern into `out`, giving each capture name a slot (the same name, the same slot).
int compile(const UPat& p, Rule& r, std::vector<CompiledPat>& out, bool is_template) {
  int idx = static_cast<int>(out.size());
  out.push_back({&p.node(), -1, {}});
  const UPatNode& n = p.node();
  if (!n.name.empty()) {
    auto it = std::find(r.slot_names.begin(), r.slot_names.end(), n.name);
    if (it == r.slot_names.end()) {
      if (is_template) {
        // A named template node builds a new node unless its name was captured.
        if (!n.ops && !n.value)
          throw InternalError(
              fmt::format("rule {}: template uses '{}', which the pattern does "
                          "not capture",
                          r.name, n.name));
      } else {
        if (r.slot_names.size() >= kMaxCaptures)
          throw InternalError(fmt::format("rule {}: more than {} captures", r.name, kMaxCaptures));
        r.slot_names.push_back(n.name);
        out[idx].slot = static_cast<int>(r.slot_names.size()) - 1;
      }
    } else {
      out[idx].slot = static_cast<int>(it - r.slot_names.begin());
    }
    if (out[idx].slot >= 0) r.slot_nodes.emplace_back(&n, out[idx].slot);
  }
  if (is_template && out[idx].slot >= 0) return idx;  // a capture reference: no children
  bool choices = n.mode == UPat::SrcMode::any_order;
  if (choices && n.src.size() > kMaxAnyOrder)
    throw InternalError(fmt::format("rule {}: any-order match of {} sources (at most {})", r.name,
                                    n.src.size(), kMaxAnyOrder));
  for (const UPat& s : n.src) {
    int c = compile(s, r, out, is_template);
    out[idx].children.push_back(c);
    choices |= out[c].choices;
  }
  out[idx].choices = choices;
  return idx;
}

std::string location_name(const std::source_location& loc) {
  std::string_view f = loc.file_name();
  if (auto slash = f.rfind('/'); slash != std::string_view::npos) f.remove_prefix(slash + 1);
  return fmt::format("{}:{}", f, loc.line());
}

}  // namespace

int Rule::slot_of(const UPatNode& named) const {
  for (auto& [node, slot] : slot_nodes)
    if (node == &named) return slot;
  for (size_t i = 0; i < slot_names.size(); ++i)
    if (slot_names[i] == named.name) return static_cast<int>(i);
  throw InternalError(fmt::format("rule {}: no capture named '{}'", name, named.name));
}

const UOp& Match::operator[](const UPat& named) const {
  const UOp* u = slots_[rule_.slot_of(named.node())];
  if (!u)
    throw InternalError(fmt::format("rule {}: '{}' not bound", rule_.name, named.node().name));
  return *u;
}

Rule rule(const UPat& pattern, const UPat& replacement, CondFn cond, std::source_location loc) {
  Rule r;
  r.name = location_name(loc);
  compile(pattern, r, r.pattern, false);
  compile(replacement, r, r.replacement, true);
  r.keep_alive = {pattern, replacement};
  r.cond = std::move(cond);
  return r;
}

Rule rule(const UPat& pattern, RewriteFn fn, CondFn cond, std::source_location loc) {
  Rule r;
  r.name = location_name(loc);
  compile(pattern, r, r.pattern, false);
  r.keep_alive = {pattern};
  r.fn = std::move(fn);
  r.cond = std::move(cond);
  return r;
}

// ---------------------------------------------------------------- matching

namespace {

// A non-owning callable reference for continuations (no allocation per match step).
class Cont {
 public:
  template <class F>
  Cont(const F& f) : obj_(&f), call_([](const void* o) { return (*static_cast<const F*>(o))(); }) {}
  bool operator()() const { return call_(obj_); }

 private:
  const void* obj_;
  bool (*call_)(const void*);
};

struct Matcher {
  const std::vector<CompiledPat>& pats;
  std::array<const UOp*, kMaxCaptures> slots{};

  bool node_ok(const UPatNode& n, const UOp& u) const {
    if (n.ops && !n.ops->contains(u.op())) return false;
    if (n.dtype && !(*n.dtype == u.dtype())) return false;
    if (!in_class(u.dtype(), n.dtype_class)) return false;
    if (n.arg && !arg_equal(*n.arg, u.arg())) return false;
    if (n.value) {
      if (u.op() != Ops::CONST) return false;
      ConstValue want = convert_value(*n.value, u.dtype().scalar());
      if (!arg_equal(u.arg(), std::visit([](auto x) -> Arg { return x; }, want))) return false;
    }
    return true;
  }

  // Match pattern `pi` against `u`, then run `k` (the rest of the match); backtrack on failure.
  bool match(int pi, const UOp& u, Cont k) {
    const CompiledPat& cp = pats[pi];
    const UPatNode& n = *cp.node;
    if (!node_ok(n, u)) return false;
    bool bound_here = false;
    if (cp.slot >= 0) {
      if (slots[cp.slot]) {
        if (*slots[cp.slot] != u) return false;
      } else {
        slots[cp.slot] = &u;
        bound_here = true;
      }
    }
    bool ok = match_sources(cp, u, k);
    if (!ok && bound_here) slots[cp.slot] = nullptr;
    return ok;
  }

  bool match_sources(const CompiledPat& cp, const UOp& u, Cont k) {
    const auto& src = u.src();
    const size_t np = cp.children.size();
    switch (cp.node->mode) {
      case UPat::SrcMode::ignore:
        return k();
      case UPat::SrcMode::exact:
        if (src.size() != np) return false;
        return match_seq(cp, src, nullptr, 0, k);
      case UPat::SrcMode::prefix:
        if (src.size() < np) return false;
        return match_seq(cp, src, nullptr, 0, k);
      case UPat::SrcMode::each:
        if (pats[cp.children[0]].choices) return match_each(cp.children[0], src, 0, k);
        return match_each_once(cp.children[0], src, k);
      case UPat::SrcMode::any_order: {
        if (src.size() != np) return false;
        std::array<uint8_t, kMaxAnyOrder> perm{};  // np <= kMaxAnyOrder, checked in compile
        std::iota(perm.begin(), perm.begin() + np, 0);
        do {
          if (match_seq(cp, src, perm.data(), 0, k)) return true;
        } while (std::next_permutation(perm.begin(), perm.begin() + np));
        return false;
      }
    }
    return false;
  }

  bool match_seq(const CompiledPat& cp, const std::vector<UOp>& src, const uint8_t* perm, size_t i,
                 Cont k) {
    if (i == cp.children.size()) return k();
    const UOp& s = src[perm ? perm[i] : i];
    auto rest = [&] { return match_seq(cp, src, perm, i + 1, k); };
    return match(cp.children[i], s, Cont(rest));
  }

  // `each` when a source can match in one way at most: one source after another, so a node with
  // a million sources does not recurse a million deep.
  bool match_each_once(int pi, const std::vector<UOp>& src, Cont k) {
    const auto saved = slots;
    auto matched = [] { return true; };
    for (const UOp& s : src)
      if (!match(pi, s, Cont(matched))) {
        slots = saved;
        return false;
      }
    if (k()) return true;
    slots = saved;
    return false;
  }

  // `each` with choices inside: the rest of the sources (and `k`) may need another way.
  bool match_each(int pi, const std::vector<UOp>& src, size_t i, Cont k) {
    if (i == src.size()) return k();
    auto rest = [&] { return match_each(pi, src, i + 1, k); };
    return match(pi, src[i], Cont(rest));
  }
};

UOp instantiate(const Rule& r, int ti, const std::array<const UOp*, kMaxCaptures>& slots,
                DType hint) {
  const CompiledPat& cp = r.replacement[ti];
  const UPatNode& n = *cp.node;
  if (cp.slot >= 0) {
    if (!slots[cp.slot])  // e.g. the capture of an op_each that met no sources
      throw InternalError(fmt::format("rule {}: template uses '{}', which this match left unbound",
                                      r.name, n.name));
    return *slots[cp.slot];
  }
  if (n.value) return UOp::const_(n.dtype ? *n.dtype : hint, *n.value);
  if (!n.ops) throw InternalError(fmt::format("rule {}: template node without an op", r.name));
  Ops op = Ops::NOOP;
  for (int i = 0; i < kNumOps; ++i)
    if (n.ops->contains(static_cast<Ops>(i))) {
      op = static_cast<Ops>(i);
      break;
    }
  // Sources that are not bare constants decide the dtype of the constants beside them.
  std::vector<UOp> src(cp.children.size());
  DType operand = hint;
  bool have_operand = false;
  size_t first = op == Ops::WHERE ? 1 : 0;  // WHERE's branches share a dtype, not its condition
  for (size_t i = 0; i < cp.children.size(); ++i) {
    const CompiledPat& c = r.replacement[cp.children[i]];
    if (c.slot < 0 && c.node->value) continue;
    src[i] = instantiate(r, cp.children[i], slots, hint);
    if (i >= first && !have_operand) {
      operand = src[i].dtype();
      have_operand = true;
    }
  }
  for (size_t i = 0; i < cp.children.size(); ++i)
    if (!src[i]) {
      DType h = (op == Ops::WHERE && i == 0) ? dtypes::bool_ : operand;
      src[i] = instantiate(r, cp.children[i], slots, h);
    }
  DType out = n.dtype ? *n.dtype
              : is_comparison(op)
                  ? (operand.count() > 1 ? dtypes::bool_.vec(operand.count()) : dtypes::bool_)
              : src.empty() ? hint
                            : operand;
  return UOp::make(op, out, std::move(src), n.arg ? *n.arg : Arg{});
}

}  // namespace

// ---------------------------------------------------------------- PatternMatcher

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) { index(); }

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> all = rules_;
  all.insert(all.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(all));
}

void PatternMatcher::index() {
  by_op_.assign(kNumOps, {});
  for (size_t i = 0; i < rules_.size(); ++i) {
    const UPatNode& root = *rules_[i].pattern[0].node;
    for (int op = 0; op < kNumOps; ++op)
      if (!root.ops || root.ops->contains(static_cast<Ops>(op)))
        by_op_[op].push_back(static_cast<int>(i));
  }
}

UOp PatternMatcher::rewrite(const UOp& u, void* ctx, int* rule_index) const {
  return apply(u, ctx, rule_index, false);
}

UOp PatternMatcher::first_match(const UOp& u, void* ctx, int* rule_index) const {
  return apply(u, ctx, rule_index, true);
}

UOp PatternMatcher::apply(const UOp& u, void* ctx, int* rule_index, bool allow_same) const {
  if (by_op_.empty()) return {};  // a default-constructed matcher has no rules
  for (int ri : by_op_[static_cast<size_t>(u.op())]) {
    const Rule& r = rules_[ri];
    Matcher m{r.pattern};
    UOp result;
    auto accept = [&] {
      Match view(r, u, m.slots.data(), ctx);
      if (r.cond && !r.cond(view)) return false;
      UOp out = r.fn ? r.fn(view) : instantiate(r, 0, m.slots, u.dtype());
      if (!out || (out == u && !allow_same)) return false;
      result = std::move(out);
      return true;
    };
    if (m.match(0, u, Cont(accept))) {
      if (rule_index) *rule_index = ri;
      return result;
    }
  }
  return {};
}

}  // namespace vkgrad
