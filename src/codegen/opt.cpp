// codegen: apply_opts — each Opt checked against the kernel and the target, then applied as
// splits of the kernel's ranges (see opt.hpp for what each action means).
#include "codegen/opt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/gemm/plan.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "ir/graph_rewrite.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/upat.hpp"
#include "sched/indexing.hpp"

namespace vkgrad {
namespace {

const char* op_name(OptOp op) {
  switch (op) {
    case OptOp::UPCAST:
      return "UPCAST";
    case OptOp::UNROLL:
      return "UNROLL";
    case OptOp::LOCAL:
      return "LOCAL";
    case OptOp::GROUP:
      return "GROUP";
    case OptOp::GEMM:
      return "GEMM";
    case OptOp::STAGE:
      return "STAGE";
    case OptOp::BLOCK:
      return "BLOCK";
  }
  return "?";
}

// REDUCE lists its ranges after the value; after a split, list the new ranges instead.
UOp fix_reduce(const Match& m) {
  const UOp& r = m.root();
  bool stale = false;
  for (size_t i = 1; i < r.src().size(); ++i) stale = stale || r.src(i).op() != Ops::RANGE;
  if (!stale) return {};
  std::vector<UOp> src{r.src(0)};
  for (size_t i = 1; i < r.src().size(); ++i)
    for (const UOp& u : toposort(r.src(i)))
      if (u.op() == Ops::RANGE && std::find(src.begin(), src.end(), u) == src.end())
        src.push_back(u);
  return r.replace(std::move(src));
}
const PatternMatcher pm_fix_reduce({rule(UPat::op(Ops::REDUCE), fix_reduce)});

// Each range split into an outer range and inner ranges of the given sizes and types, outermost
// first: r = outer * prod(sizes) + inner0 * prod(sizes[1:]) + ... + inner_last. New axes are
// numbered in the order of the axes they split (ranges in id order), so the innermost output
// axis's upcast is the innermost loop (the contiguous one). The outer range of the axis `staged`
// names becomes the stage loop.
using Inner = std::vector<std::pair<int64_t, AxisType>>;
UOp apply_splits(const UOp& ast, int64_t next_id,
                 const std::map<int64_t, std::pair<UOp, Inner>>& splits, int64_t staged) {
  std::unordered_map<UOp, UOp, UOpHash> with;
  for (const auto& [id, split] : splits) {
    const auto& [range, inner] = split;
    const auto& a = range.arg_as<AxisArg>();
    int64_t factor = 1;
    for (const auto& [n, t] : inner) factor *= n;
    // An axis split whole leaves no outer range (a REDUCE lists only ranges).
    UOp value = range_size(range) == factor ? UOp::const_(dtypes::index, int64_t{0})
                                            : UOp::range(range_size(range) / factor, a.id,
                                                         a.id == staged ? AxisType::stage : a.type);
    for (const auto& [n, t] : inner) value = value * n + UOp::range(n, next_id++, t);
    with.emplace(range, value);
  }
  // The index math is simplified once, by the pipeline, after every range has its final form.
  return graph_rewrite(substitute(ast, with), pm_fix_reduce, nullptr, {.name = "fix_reduce"});
}

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// GROUP(0, L): the reduce ranges, flattened to f in [0, N), become f = j * L + g with g a
// group_reduce range of L lanes and j a reduce range of ceil(N / L) steps: lane g folds f = g,
// g + L, g + 2L, ... (neighbouring lanes read neighbouring elements). Where L does not divide N,
// the steps past N read element 0 and contribute the identity.
UOp apply_group(const UOp& ast, const RangeInfo& info, int64_t lanes) {
  UOp n = UOp::const_(dtypes::index, int64_t{1});
  for (const UOp& r : info.reduces) n = n * r.src(0);
  n = simplify(n);
  const bool exact = n.is_const() && std::get<int64_t>(n.const_value()) % lanes == 0;
  const UOp steps = simplify((n + (lanes - 1)) / lanes);
  const UOp g = UOp::range(lanes, info.next_id + 1, AxisType::group_reduce);
  const UOp j = steps.is_const(1) ? UOp{} : UOp::range(steps, info.next_id, AxisType::reduce);
  const UOp flat = j ? j * lanes + g : g;
  const UOp in_range = flat.lt(n);
  const UOp at = exact ? flat : in_range.where(flat, UOp::const_(dtypes::index, int64_t{0}));
  std::unordered_map<UOp, UOp, UOpHash> digits;
  UOp inner = UOp::const_(dtypes::index, int64_t{1});
  for (size_t i = info.reduces.size(); i-- > 0;) {
    const UOp& r = info.reduces[i];
    UOp d = inner.is_const(1) ? at : at / inner;
    if (i > 0) d = d % r.src(0);
    digits.emplace(r, d);
    inner = simplify(inner * r.src(0));
  }
  std::unordered_map<UOp, UOp, UOpHash> with;
  for (const UOp& r : toposort(ast)) {
    if (r.op() != Ops::REDUCE) continue;
    UOp body = substitute(r.src(0), digits);
    if (!exact) body = in_range.where(body, reduce_identity(r.arg_as<Ops>(), r.dtype()));
    std::vector<UOp> src{body};
    if (j) src.push_back(j);
    src.push_back(g);
    with.emplace(r, r.replace(std::move(src)));
  }
  return substitute(ast, with);
}

// GROUP flattens all reduce axes into one; a reduction over only some of them (two reductions of
// one kernel over different axes) would then add its values once per lane of the others.
bool reductions_span(const UOp& ast, const RangeInfo& info) {
  for (const UOp& r : toposort(ast)) {
    if (r.op() != Ops::REDUCE) continue;
    if (r.src().size() - 1 != info.reduces.size()) return false;
    for (const UOp& axis : info.reduces)
      if (std::find(r.src().begin() + 1, r.src().end(), axis) == r.src().end()) return false;
  }
  return true;
}

}  // namespace

bool reductions_span_all_axes(const UOp& ast) { return reductions_span(ast, collect_ranges(ast)); }

int64_t group_shared_bytes(const UOp& ast, int64_t lanes) {
  int64_t bytes = 0;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE) bytes += u.dtype().itemsize() <= 4 ? 4 : 8;
  return bytes * lanes;
}

std::string to_string(const Opt& o) {
  return fmt::format("{}({}, {})", op_name(o.op), o.axis, o.amount);
}
std::string to_string(const std::vector<Opt>& opts) {
  std::string s = "[";
  for (size_t i = 0; i < opts.size(); ++i) s += (i ? ", " : "") + to_string(opts[i]);
  return s + "]";
}

std::optional<std::vector<Opt>> parse_opts(std::string_view s) {
  constexpr OptOp kOps[] = {OptOp::UPCAST, OptOp::UNROLL, OptOp::LOCAL, OptOp::GROUP,
                            OptOp::GEMM,   OptOp::STAGE,  OptOp::BLOCK};
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  std::vector<Opt> out;
  while (!s.empty()) {
    const size_t close = s.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string item(s.substr(0, close + 1));
    s.remove_prefix(close + 1);
    if (s.starts_with(", "))
      s.remove_prefix(2);
    else if (!s.empty())
      return std::nullopt;
    bool found = false;
    for (OptOp op : kOps) {
      const std::string name = std::string(op_name(op)) + "(";
      if (!item.starts_with(name)) continue;
      long long axis = 0, amount = 0;
      char end = 0;
      if (std::sscanf(item.c_str() + name.size(), "%lld, %lld%c", &axis, &amount, &end) != 3 ||
          end != ')')
        return std::nullopt;
      out.push_back({op, static_cast<int>(axis), static_cast<int64_t>(amount)});
      if (to_string(out.back()) != item) return std::nullopt;  // the one spelling to_string gives
      found = true;
    }
    if (!found) return std::nullopt;
  }
  return out;
}

std::string target_key(const Target& t) {
  return fmt::format(
      "{} kind {} isa {} {} vendor {} driver {} per-lane {} v{}x{} l1 {} l2 {} gemm {} threads {} "
      "local {} grid {} subgroup {} {} {} texel {} wg {} {},{},{} groups {},{},{} shared {} push "
      "{} s8 {} s16 {} i64 {} f64 {} native {}{}{} {}{}{} narrowing {} widening {} nan {} div {} "
      "fma {} tuning {}",
      t.language == Target::Language::c ? "c" : "glsl", static_cast<int>(t.kind),
      static_cast<int>(t.isa), t.amd_family, t.vendor_id, t.driver_id, t.per_lane_uniform_loads,
      t.vector_floats, t.vector_registers, t.host.l1_bytes, t.host.l2_bytes, t.host.gemm, t.threads,
      t.local_memory, t.grid, t.subgroup_size, t.subgroup_arithmetic, t.subgroup_shuffle,
      t.texel_buffers, t.max_workgroup_invocations, t.max_workgroup_size[0],
      t.max_workgroup_size[1], t.max_workgroup_size[2], t.max_group_count[0], t.max_group_count[1],
      t.max_group_count[2], t.max_shared_bytes, t.max_push_bytes, t.storage8, t.storage16, t.int64,
      t.float64, t.native32.exp2, t.native32.log2, t.native32.sin, t.native64.exp2, t.native64.log2,
      t.native64.sin, t.opaque_narrowing, t.opaque_widening, t.preserve_nan, t.exact_division,
      t.fused_multiply_add, tuning_key(t.tuning));
}

KernelAxes kernel_axes(const UOp& ast) {
  RangeInfo info = collect_ranges(ast);
  return {std::move(info.globals), std::move(info.reduces)};
}

namespace {

// One walk of a list over the kernel's axes, each action checked against the kernel and the
// target: what the list leaves (OptState) and the splits it makes of each range, by range id.
struct Walk {
  RangeInfo info;
  OptState state;
  std::map<int64_t, std::pair<UOp, Inner>> splits;
};

// An action the kernel or the target does not allow, named with its list.
Error opt_error(const UOp& ast, const Opt& o, const std::vector<Opt>& opts,
                const std::string& why) {
  return Error(fmt::format("apply_opts: kernel {}: {} in {}: {}", kernel_name(ast), to_string(o),
                           to_string(opts), why));
}

// Why a checked GEMM list has no plan: its actions are planned again one by one, and the first
// that leaves none is named. Only a failed plan pays for this.
[[noreturn]] void explain_gemm(const UOp& ast, const std::vector<Opt>& opts, const Target& target) {
  GemmChoice c;
  for (const Opt& o : opts) {
    auto fail = [&](const std::string& why) { throw opt_error(ast, o, opts, why); };
    if (o.op == OptOp::GEMM) {
      c.a = static_cast<GemmA>(o.axis), c.rows = o.amount;
      if (plan_gemm(ast, target, c)) continue;
      if ((o.axis == 0 && o.amount == 0) || !plan_gemm(ast, target))
        fail("the kernel is not a large float32 matmul-like kernel");
      if (static_cast<GemmA>(o.axis) == GemmA::winograd)
        fail("the kernel is no stride-1 3 x 3 convolution over even output sizes (Winograd)");
      fail("A is not read along k where it lies");
    }
    const bool tile = static_cast<GemmBlock>(o.axis) == GemmBlock::tile_vectors;
    (tile ? c.vectors : c.kc) = o.amount;
    if (plan_gemm(ast, target, c)) continue;
    if (tile) fail("the output has fewer columns than the tile");
    fail(
        "k is read in one block: by Winograd, where A is read in place, or where k has no more "
        "steps than the block");
  }
  throw Error(
      fmt::format("apply_opts: kernel {}: {}: no GEMM plan", kernel_name(ast), to_string(opts)));
}

// One action of a list in its walk: the checks and splits the action's case of walk_opts makes,
// each failure named with the action and its list.
struct OptStep {
  const UOp& ast;
  const std::vector<Opt>& opts;
  const Target& target;
  const Opt& o;
  Walk& w;
  GemmChoice& choice;  // what GEMM and its BLOCKs choose, planned once the list is walked
  int G, R;            // the kernel's global and reduce axes

  [[noreturn]] void fail(const std::string& why) const { throw opt_error(ast, o, opts, why); }
  int axis_of(int count, const char* kind) const {
    if (o.axis < 0 || o.axis >= count)
      fail(fmt::format("the kernel has no {} axis {} ({} of them)", kind, o.axis, count));
    return o.axis;
  }
  void split(const UOp& range, int64_t& size, AxisType type) const {
    OptState& st = w.state;
    if (size < 0) fail("the axis's size is symbolic");
    if (o.amount < 2 || size % o.amount != 0)
      fail(fmt::format("the amount must be at least 2 and divide the axis's size, {}", size));
    if (st.group_lanes) fail("a grouped reduction takes no other action");
    if (type == AxisType::local) {
      st.lanes *= o.amount;
    } else if (type != AxisType::reduce) {  // STAGE's inner steps are a loop
      if (st.upcast * o.amount > kMaxUpcast)
        fail(fmt::format("more than {} values per invocation", kMaxUpcast));
      st.upcast *= o.amount;
    }
    size /= o.amount;
    auto& [r, inner] = w.splits[range.arg_as<AxisArg>().id];
    r = range;
    inner.insert(inner.begin(), {o.amount, type});  // outside earlier splits of the axis
  }

  void local() const {
    OptState& st = w.state;
    if (!target.threads) fail("the target launches no workgroups");
    if (!target.grid) fail("the target launches no grid of workgroups");
    const int g = axis_of(G, "global");
    if (std::find(st.local_axes.begin(), st.local_axes.end(), g) != st.local_axes.end())
      fail("the axis is already split by LOCAL");
    if (st.local_axes.size() == 3) fail("a workgroup has at most three dimensions");
    if (st.lanes * o.amount > target.max_workgroup_invocations)
      fail(fmt::format("more than {} invocations per workgroup", target.max_workgroup_invocations));
    st.local_axes.push_back(g);
    split(w.info.globals[g], st.left[g], AxisType::local);
  }
  void group() const {
    OptState& st = w.state;
    if (!target.local_memory) fail("the target has no shared memory");
    if (R == 0) fail("the kernel has no reduction");
    axis_of(1, "first reduce");
    if (st.group_lanes || !w.splits.empty()) fail("GROUP takes no other action besides it");
    if (!power_of_two(o.amount) || o.amount < 2 || o.amount > target.max_workgroup_invocations)
      fail(fmt::format("the amount must be a power of two from 2 to {}",
                       target.max_workgroup_invocations));
    if (!reductions_span(ast, w.info))
      fail("the kernel's reductions run over different reduce axes");
    if (group_shared_bytes(ast, o.amount) > target.max_shared_bytes)
      fail(fmt::format("{} bytes of shared memory, over the target's {}",
                       group_shared_bytes(ast, o.amount), target.max_shared_bytes));
    st.group_lanes = o.amount;
  }
  void stage() const {
    OptState& st = w.state;
    if (!target.threads || !target.grid || !target.local_memory)
      fail("the target launches no workgroups with shared memory");
    if (st.staged >= 0) fail("a list stages one reduce axis");
    const int r = axis_of(R, "reduce");
    split(w.info.reduces[r], st.left[G + r], AxisType::reduce);
    st.staged = r;
  }
  void gemm() const {
    if (!target.host.gemm) fail("the target renders no packed GEMM");
    if (&o != &opts.front() || std::any_of(opts.begin(), opts.end(), [](const Opt& x) {
          return x.op != OptOp::GEMM && x.op != OptOp::BLOCK;
        }))
      fail("GEMM takes no other action besides it but BLOCK");
    if (o.axis < static_cast<int>(GemmA::planned) || o.axis > static_cast<int>(GemmA::winograd))
      fail("GEMM's axis says how A is read: 0 planned, 1 packed, 2 in place, 3 Winograd");
    if (o.amount < 0 || o.amount > gemm_max_rows(target))
      fail(fmt::format("GEMM's amount is the register tile's rows: 0 (planned) or 1 to {}",
                       gemm_max_rows(target)));
    w.state.gemm = true;
    choice.a = static_cast<GemmA>(o.axis);
    choice.rows = o.amount;
  }
  void block() const {
    if (!w.state.gemm) fail("BLOCK follows GEMM");
    if (o.axis == static_cast<int>(GemmBlock::tile_vectors)) {
      if (choice.vectors) fail("the register tile's columns are chosen once");
      if (o.amount < 1 || o.amount > kMaxTileVectors)
        fail(fmt::format("the register tile's columns are 1 to {} vectors", kMaxTileVectors));
      if (choice.rows > gemm_max_rows(target, o.amount))
        fail(fmt::format("a register tile {} vectors wide has at most {} rows", o.amount,
                         gemm_max_rows(target, o.amount)));
      choice.vectors = o.amount;
    } else if (o.axis == static_cast<int>(GemmBlock::k_block)) {
      if (choice.kc) fail("the k block is chosen once");
      if (o.amount < kMinKBlock) fail(fmt::format("a k block is {} steps or more", kMinKBlock));
      choice.kc = o.amount;
    } else {
      fail("BLOCK's axis says which size: 0 the register tile's columns, 1 the k block");
    }
  }
};

// A staged list's checks once it is walked: a workgroup, and an outer loop left to stage.
void check_stage(const UOp& ast, const std::vector<Opt>& opts, const OptState& st, int G) {
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("apply_opts: kernel {}: STAGE in {}: {}", kernel_name(ast),
                            to_string(opts), why));
  };
  if (st.local_axes.empty()) fail("staging needs a workgroup (LOCAL)");
  if (st.left[static_cast<size_t>(G + st.staged)] < 2)
    fail("the staged axis must keep an outer loop of 2 or more steps");
}

Walk walk_opts(const UOp& ast, const std::vector<Opt>& opts, const Target& target) {
  Walk w{collect_ranges(ast), {}, {}};
  const RangeInfo& info = w.info;
  OptState& st = w.state;
  const int G = static_cast<int>(info.globals.size()), R = static_cast<int>(info.reduces.size());
  st.globals = G;
  for (const UOp& r : info.globals) st.left.push_back(range_size(r));
  for (const UOp& r : info.reduces) st.left.push_back(range_size(r));
  GemmChoice choice;  // what GEMM and its BLOCKs choose, planned once the list is walked
  for (const Opt& o : opts) {
    const OptStep s{ast, opts, target, o, w, choice, G, R};
    switch (o.op) {
      case OptOp::UPCAST: {
        const int g = s.axis_of(G, "global");
        s.split(info.globals[g], st.left[g], AxisType::upcast);
        break;
      }
      case OptOp::UNROLL: {
        const int r = s.axis_of(R, "reduce");
        s.split(info.reduces[r], st.left[G + r], AxisType::unroll);
        break;
      }
      case OptOp::LOCAL:
        s.local();
        break;
      case OptOp::GROUP:
        s.group();
        break;
      case OptOp::STAGE:
        s.stage();
        break;
      case OptOp::GEMM:
        s.gemm();
        break;
      case OptOp::BLOCK:
        s.block();
        break;
    }
  }
  if (st.gemm && !plan_gemm(ast, target, choice)) explain_gemm(ast, opts, target);
  if (st.staged >= 0) check_stage(ast, opts, st, G);
  return w;
}

}  // namespace

GemmChoice gemm_choice(const std::vector<Opt>& opts) {
  GemmChoice c;
  for (const Opt& o : opts) {
    if (o.op == OptOp::GEMM) c.a = static_cast<GemmA>(o.axis), c.rows = o.amount;
    if (o.op == OptOp::BLOCK)
      (static_cast<GemmBlock>(o.axis) == GemmBlock::tile_vectors ? c.vectors : c.kc) = o.amount;
  }
  return c;
}

OptState opt_state(const UOp& ast, const std::vector<Opt>& opts, const Target& target) {
  return walk_opts(ast, opts, target).state;
}

UOp apply_opts(const UOp& ast, const std::vector<Opt>& opts, const Target& target) {
  if (opts.empty()) return ast;
  const Walk w = walk_opts(ast, opts, target);
  if (w.state.gemm) return ast;  // the renderer plans the GEMM itself
  if (w.state.group_lanes) return apply_group(ast, w.info, w.state.group_lanes);
  if (w.splits.empty()) return ast;
  const int staged = w.state.staged;
  return apply_splits(
      ast, w.info.next_id, w.splits,
      staged >= 0 ? w.info.reduces[static_cast<size_t>(staged)].arg_as<AxisArg>().id : -1);
}

}  // namespace vkgrad
