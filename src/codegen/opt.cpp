// codegen: kernel optimizations as explicit actions on the kernel AST's ranges.
//   upcast(g, U):   global range g of size N becomes g' (N/U, global) * U + u (U, upcast): each
//                   thread computes U neighbouring outputs, in registers, with vector loads/stores
//                   where the axis is contiguous and operand reuse where an input ignores it.
//   unroll(r, U):   reduce range r becomes r' (N/U, reduce) * U + u (U, unroll): U independent
//                   accumulators, folded after the loop (breaks the add latency chain).
// The heuristics below pick them; NOOPT=1 skips this pass entirely. A large float32 matmul skips
// them for a GemmPlan instead (plan_gemm: the blocking; render_c renders it).
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "codegen/linearize.hpp"
#include "codegen/pipeline.hpp"
#include "ir/graph_rewrite.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/upat.hpp"

namespace vkgrad {
namespace {

struct RangeInfo {
  std::vector<UOp> globals, reduces;
  std::vector<UOp> load_indices;  // index expressions of every LOAD
  int64_t next_id = 0;
};

RangeInfo collect(const UOp& ast) {
  RangeInfo info;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::RANGE) {
      const auto& a = u.arg_as<AxisArg>();
      info.next_id = std::max(info.next_id, a.id + 1);
      if (a.type == AxisType::global) info.globals.push_back(u);
      if (a.type == AxisType::reduce) info.reduces.push_back(u);
    }
    if (u.op() == Ops::LOAD) info.load_indices.push_back(u.src(0).src(1));
  }
  auto by_id = [](const UOp& a, const UOp& b) {
    return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
  };
  std::sort(info.globals.begin(), info.globals.end(), by_id);
  std::sort(info.reduces.begin(), info.reduces.end(), by_id);
  return info;
}

bool mentions(const UOp& expr, const UOp& range) {
  for (const UOp& u : toposort(expr))
    if (u == range) return true;
  return false;
}

// Some load reads the same element for every value of `g`: upcasting g reuses it.
bool has_reuse(const RangeInfo& info, const UOp& g) {
  return std::any_of(info.load_indices.begin(), info.load_indices.end(),
                     [&](const UOp& idx) { return !mentions(idx, g); });
}

// Some load reads consecutive elements as `r` steps by one (its index grows by exactly 1).
bool contiguous_along(const RangeInfo& info, const UOp& r) {
  const std::unordered_map<UOp, UOp, UOpHash> next{{r, r + 1}};
  return std::any_of(info.load_indices.begin(), info.load_indices.end(), [&](const UOp& idx) {
    return mentions(idx, r) && simplify(substitute(idx, next) - idx).is_const(1);
  });
}

// A symbolic range (size -1) is never split: no factor divides an unknown size.
int64_t pick_factor(int64_t size, std::initializer_list<int64_t> options) {
  for (int64_t f : options)
    if (size > f && size % f == 0) return f;
  return 1;
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

// A range split into an outer range and inner ranges of the given sizes and types, outermost
// first: r = outer * prod(sizes) + inner0 * prod(sizes[1:]) + ... + inner_last.
struct Split {
  UOp range;
  std::vector<std::pair<int64_t, AxisType>> inner;
};

UOp apply_splits(const UOp& ast, RangeInfo& info, std::vector<Split> splits) {
  // New axes are numbered in the order of the axes they split, so the innermost output axis's
  // upcast is the innermost loop (the contiguous one).
  std::sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
    return a.range.arg_as<AxisArg>().id < b.range.arg_as<AxisArg>().id;
  });
  std::unordered_map<UOp, UOp, UOpHash> with;
  for (const Split& sp : splits) {
    const auto& a = sp.range.arg_as<AxisArg>();
    int64_t factor = 1;
    for (const auto& [n, t] : sp.inner) factor *= n;
    UOp value = UOp::range(range_size(sp.range) / factor, a.id, a.type);
    for (const auto& [n, t] : sp.inner) value = value * n + UOp::range(n, info.next_id++, t);
    with.emplace(sp.range, value);
  }
  UOp out = substitute(ast, with);
  out = graph_rewrite(out, pm_fix_reduce, nullptr, {.name = "fix_reduce"});
  return simplify(out);
}

// The product of the ranges' sizes, symbolic ones at their maximum, saturating at 2^62 (it is
// only compared with thresholds).
int64_t prod_sizes(const std::vector<UOp>& ranges) {
  constexpr int64_t cap = int64_t{1} << 62;
  int64_t n = 1;
  for (const UOp& r : ranges) {
    const int64_t s = r.src(0).vmax();
    n = s > 0 && n > cap / s ? cap : n * s;
  }
  return n;
}

// GEMM blocking for AVX-512 (32 vector registers of 16 floats): a 12 x 32 register tile (24
// accumulators, two B vectors, A broadcast from memory); k blocks of 256 keep one B micro panel
// (256 x 32 floats, 32 KiB) in L1 while A micro panels (12 KiB) stream from an L2-resident A block
// (96 x 256). B's packed block (all of k x nc) may reach 4 MiB, twice L2: every B block packs A
// again, and at 2048^3 one thread took 92 ms with 1 MiB blocks, 80 with 2, 76 with 4, 83 with 8.
constexpr int64_t kGemmMr = 12, kGemmNr = 32, kGemmMc = 96, kGemmKc = 256;
constexpr int64_t kGemmPanelFloats = int64_t{1} << 20, kGemmMaxNc = 1024;
// Below this many multiply-adds the plain register tile is as fast and compiles quicker.
constexpr int64_t kGemmMinWork = int64_t{1} << 20;
// A batch this long is split across threads (a few CPUs, each given several batch elements).
constexpr int64_t kGemmMinSplitBatch = 8;

}  // namespace

std::optional<GemmPlan> plan_gemm(const UOp& ast) {
  std::vector<UOp> reduces;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE) reduces.push_back(u);
  if (reduces.size() != 1) return std::nullopt;
  const UOp& r = reduces[0];
  if (r.arg_as<Ops>() != Ops::ADD || r.dtype() != dtypes::float32 || r.src(0).op() != Ops::MUL)
    return std::nullopt;
  RangeInfo info = collect(ast);
  for (const UOp& x : toposort(ast))
    if (x.op() == Ops::RANGE && range_size(x) < 1) return std::nullopt;
  GemmPlan p;
  p.reduce = r, p.a = r.src(0).src(0), p.b = r.src(0).src(1), p.k = info.reduces;
  // Who reads each output range: 1 only a, 2 only b, 0 both or neither (a batch range). The
  // columns are the innermost range one operand owns, with its neighbours that operand also owns;
  // the rows are the innermost run the other operand owns, the same way (each run flattened: a
  // convolution's output rows and columns, a batch of a's rows). The rest loop around the GEMM.
  const int g = static_cast<int>(info.globals.size());
  std::vector<int> owner(info.globals.size());
  for (int i = 0; i < g; ++i) {
    const bool in_a = mentions(p.a, info.globals[i]), in_b = mentions(p.b, info.globals[i]);
    owner[i] = in_a == in_b ? 0 : in_a ? 1 : 2;
  }
  auto innermost_owned_by = [&](int who, int below) {
    for (int i = below - 1; i >= 0; --i)
      if (owner[i] != 0 && (who == 0 || owner[i] == who)) return i;
    return -1;
  };
  auto run_start = [&](int last) {
    int first = last;
    while (first > 0 && owner[first - 1] == owner[last]) --first;
    return first;
  };
  const int n_last = innermost_owned_by(0, g);
  if (n_last < 0) return std::nullopt;
  const int n_first = run_start(n_last);
  const int m_last = innermost_owned_by(3 - owner[n_last], n_first);
  if (m_last < 0) return std::nullopt;
  const int m_first = run_start(m_last);
  for (int i = 0; i < g; ++i)
    (i >= n_first && i <= n_last   ? p.n
     : i >= m_first && i <= m_last ? p.m
                                   : p.batch)
        .push_back(info.globals[i]);
  if (owner[n_last] == 1) std::swap(p.a, p.b);
  const int64_t M = prod_sizes(p.m), N = prod_sizes(p.n), K = prod_sizes(p.k);
  // B is packed for all of k at once: at least one strip of nr columns must fit the budget.
  if (M < 4 || N < 8 || K * kGemmNr > kGemmPanelFloats || M * N > (int64_t{1} << 40) / K ||
      M * N * K < kGemmMinWork)
    return std::nullopt;
  p.mr = std::min(M, kGemmMr);
  p.nr = N < kGemmNr ? 16 : kGemmNr;  // a narrow output (a classifier's 10 columns): one vector
  p.mc = kGemmMc / p.mr * p.mr;
  const int64_t k_blocks = (K + kGemmKc - 1) / kGemmKc;
  p.kc = (K + k_blocks - 1) / k_blocks;  // k in even blocks of at most kGemmKc
  const int64_t n_pad = (N + p.nr - 1) / p.nr * p.nr;
  p.nc = std::min({n_pad, kGemmMaxNc, std::max(p.nr, kGemmPanelFloats / K / p.nr * p.nr)});
  // A long batch is split: nothing is packed twice. Otherwise each thread packs all of the
  // operand along the axis it does not split: the smaller one.
  p.split = !p.batch.empty() && range_size(p.batch[0]) >= kGemmMinSplitBatch ? GemmSplit::batch
            : M <= N                                                         ? GemmSplit::columns
                                                                             : GemmSplit::rows;
  return p;
}

UOp apply_optimizations(const UOp& ast) {
  RangeInfo info = collect(ast);
  std::vector<Split> splits;
  auto split = [&](const UOp& r, int64_t factor, AxisType inner) {
    splits.push_back({r, {{factor, inner}}});
  };

  int64_t upcasted = 1;
  if (!info.reduces.empty()) {
    // Register tiles for matmul-like kernels: the innermost output axis by 16 (one vector),
    // another reused axis by 4.
    if (!info.globals.empty()) {
      const UOp& last = info.globals.back();
      if (const int64_t f = pick_factor(range_size(last), {32, 16, 8});
          f > 1 && has_reuse(info, last)) {
        split(last, f, AxisType::upcast);
        upcasted *= f;
      }
      for (auto it = info.globals.rbegin() + 1; it < info.globals.rend() && upcasted > 1; ++it)
        if (const int64_t f = pick_factor(range_size(*it), {8, 4, 2});
            f > 1 && has_reuse(info, *it)) {
          split(*it, f, AxisType::upcast);
          upcasted *= f;
          break;
        }
    }
    // Otherwise several accumulators: one per output of a run of the innermost output axis when
    // the loads run along it and not along the reduction (a column sum: vector loads instead of
    // one cache line per element), else split ones for the innermost reduction.
    if (upcasted == 1) {
      const bool columns = !info.globals.empty() && contiguous_along(info, info.globals.back()) &&
                           !contiguous_along(info, info.reduces.back());
      const UOp& axis = columns ? info.globals.back() : info.reduces.back();
      if (const int64_t f = pick_factor(range_size(axis), {32, 16, 8}); f > 1)
        split(axis, f, columns ? AxisType::upcast : AxisType::unroll);
    }
  }
  // Elementwise kernels are left as plain loops: the C compiler's loop vectorizer handles their
  // innermost loop, and unrolling a long fused chain would only multiply the compile time.
  if (splits.empty()) return ast;
  return apply_splits(ast, info, std::move(splits));
}

// GPU kernels (one invocation per output element, or per group of 4 / per tile):
//   elementwise:  the innermost output axis by 4 when it divides, so loads and the store of a
//                 contiguous axis become vec4 accesses (lavapipe: scalar 6.4-7 GB/s,
//                 vec4 10.5-13.5).
//   few outputs, long reductions (outputs < 4096, reduce size >= 256, shared memory allowed): a
//                 grouped reduction, one workgroup per output (the reduce ranges become
//                 group_reduce; the renderer splits them over the lanes and folds in shared
//                 memory).
//   matmul-like:  a register tile without shared memory, the innermost output axis by 8 as 2 x 4
//                 (the 4 innermost: vec4 loads of the reused operand) and another reused output
//                 axis by 8 or 4 (lavapipe: naive 2.1 GFLOPS, 4x4 tile 12, 8x8 tile 31).
UOp apply_gpu_optimizations(const UOp& ast, const GlslTarget& target) {
  RangeInfo info = collect(ast);
  std::vector<Split> splits;
  if (info.reduces.empty()) {
    if (!info.globals.empty() && range_size(info.globals.back()) > 0 &&
        range_size(info.globals.back()) % 4 == 0)
      splits.push_back({info.globals.back(), {{4, AxisType::upcast}}});
  } else if (target.shared_reduce && prod_sizes(info.globals) < 4096 &&
             prod_sizes(info.reduces) >= 256) {
    std::unordered_map<UOp, UOp, UOpHash> with;
    for (const UOp& r : info.reduces)
      with.emplace(r, UOp::range(r.src(0), r.arg_as<AxisArg>().id, AxisType::group_reduce));
    return substitute(ast, with);
  } else if (!info.globals.empty()) {
    const UOp& last = info.globals.back();
    if (has_reuse(info, last) && range_size(last) > 0 && range_size(last) % 4 == 0) {
      if (range_size(last) % 8 == 0)
        splits.push_back({last, {{2, AxisType::upcast}, {4, AxisType::upcast}}});
      else
        splits.push_back({last, {{4, AxisType::upcast}}});
      for (auto it = info.globals.rbegin() + 1; it < info.globals.rend(); ++it)
        if (const int64_t n = range_size(*it), f = n % 8 == 0   ? 8
                                                   : n % 4 == 0 ? 4
                                                                : 1;
            f > 1 && has_reuse(info, *it)) {
          splits.push_back({*it, {{f, AxisType::upcast}}});
          break;
        }
    }
  }
  if (splits.empty()) return ast;
  return apply_splits(ast, info, std::move(splits));
}

}  // namespace vkgrad
