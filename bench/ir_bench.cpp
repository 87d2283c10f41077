// bench: micro-benchmarks of the IR core — interning, graph_rewrite with the symbolic simplifier,
// toposort, and a proxy for lowering one fused 200-op elementwise kernel (the figure compared
// with tinygrad's ~0.45 s). What each number means is in bench/README.md. Uses ir only.
//
// "Cold" benchmarks rebuild their graph every iteration with the timer paused: nodes cache their
// bounds, so timing a rewrite of a graph that is kept alive would time a warm cache. Nothing is
// held between iterations, so the rebuilt nodes are new allocations, not intern hits.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <iterator>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/graph_rewrite.hpp"
#include "ir/spec.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/uop.hpp"

namespace vkgrad {
namespace {

// splitmix64: small, fast, and the same sequence with every standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

UOp idx_const(int64_t v) { return UOp::const_(dtypes::index, v); }

// ---------------------------------------------------------------- interning

// HIT: rebuild a 1,000-node chain `((x + c0) + c1) + ...` that is kept alive, so every make()
// finds its node: hash, shard lock, lookup, reference count, and the source vector's allocation.
void BM_intern_hit(benchmark::State& state) {
  constexpr int kLen = 1000;
  UOp x = UOp::variable("x", 0, 100);
  std::vector<UOp> consts;
  for (int i = 0; i < kLen; ++i) consts.push_back(idx_const(i));
  UOp keep = x;
  for (const UOp& c : consts) keep = keep + c;
  for (auto _ : state) {
    UOp cur = x;
    for (const UOp& c : consts) cur = cur + c;
    benchmark::DoNotOptimize(cur.get());
  }
  state.SetItemsProcessed(state.iterations() * kLen);
}
BENCHMARK(BM_intern_hit)->Name("intern/hit/chain1000");

// MISS, created and freed one at a time: a CONST with a value never used before, dropped at
// once (allocate, insert, erase, free).
void BM_intern_miss_const(benchmark::State& state) {
  int64_t next = int64_t{1} << 40;  // far from any constant another benchmark keeps alive
  for (auto _ : state) {
    UOp c = idx_const(next++);
    benchmark::DoNotOptimize(c.get());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_intern_miss_const)->Name("intern/miss/const_created_and_freed");

// MISS, new structure: a fresh 10,000-node ADD chain per iteration (each node new because its
// source is). With `time_free` the (iterative) free of the chain is timed too; without it the
// chain is freed with the timer paused.
void BM_intern_miss_chain(benchmark::State& state, bool time_free) {
  constexpr int kLen = 10000;
  UOp x = UOp::variable("x", 0, 100);
  UOp one = idx_const(1);
  for (auto _ : state) {
    UOp cur = x;
    for (int i = 0; i < kLen; ++i) cur = cur + one;
    if (!time_free) state.PauseTiming();
    cur = UOp();
    if (!time_free) state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kLen);
}
BENCHMARK_CAPTURE(BM_intern_miss_chain, alive, false)->Name("intern/miss/chain10k_kept_alive");
BENCHMARK_CAPTURE(BM_intern_miss_chain, freed, true)->Name("intern/miss/chain10k_incl_free");

// ---------------------------------------------------------------- random index graph

// The mix of ops, in sixteenths.
enum class Kind { add, mul, idiv, mod, max, where };
constexpr std::pair<Kind, int> kMix[] = {{Kind::add, 5}, {Kind::mul, 3}, {Kind::idiv, 2},
                                         {Kind::mod, 2}, {Kind::max, 1}, {Kind::where, 3}};

Kind pick_kind(Rng& rng) {
  int r = static_cast<int>(rng.below(16));
  for (auto [kind, weight] : kMix) {
    if (r < weight) return kind;
    r -= weight;
  }
  return Kind::add;
}

// A random DAG of index math over four bounded variables, shaped like what views produce: sums
// of scaled terms, div/mod by small constants, max, and where(a < b, ...). Operands are drawn
// from earlier nodes (half from the most recent ones, half from anywhere), so subexpressions are
// shared. Depth is capped at kMaxDepth: real index expressions are shallow, and a cap keeps any
// rule set that expands products of sums from turning one node into an exponential tree.
struct IndexGraph {
  UOp root;  // SINK over every node nothing else uses
  size_t nodes = 0;
};

IndexGraph random_index_graph(size_t target, uint64_t seed) {
  constexpr int kMaxDepth = 8;
  Rng rng(seed);
  std::unordered_set<const UOpNode*> seen;
  std::unordered_set<const UOpNode*> used;
  std::vector<UOp> all;       // every distinct node, in creation order
  std::vector<UOp> pickable;  // the ones shallow enough to be an operand
  std::vector<int> depth_of;  // parallel to pickable
  std::vector<int> depth_all;

  auto note = [&](const UOp& u, int depth) {
    if (!seen.insert(u.get()).second) return;
    all.push_back(u);
    depth_all.push_back(depth);
    if (depth < kMaxDepth) {
      pickable.push_back(u);
      depth_of.push_back(depth);
    }
  };
  for (auto [name, lo, hi] : {std::tuple{"a", 0, 15}, std::tuple{"b", 0, 255},
                              std::tuple{"c", 1, 64}, std::tuple{"d", -8, 8}})
    note(UOp::variable(name, lo, hi), 0);

  auto pick = [&](int& depth) -> UOp {
    size_t n = pickable.size();
    size_t i = rng.below(2) ? n - 1 - rng.below(std::min<size_t>(n, 32)) : rng.below(n);
    depth = std::max(depth, depth_of[i]);
    return pickable[i];
  };
  auto small_const = [&](int64_t lo, int64_t hi) {
    UOp c = idx_const(rng.uniform(lo, hi));
    note(c, 0);
    return c;
  };

  while (seen.size() < target) {
    int d = 0;
    UOp u;
    switch (pick_kind(rng)) {
      case Kind::add: {
        UOp a = pick(d), b = pick(d);
        u = a + b;
        break;
      }
      case Kind::mul: {  // mostly by a constant
        UOp a = pick(d);
        UOp b = rng.below(4) ? small_const(-1, 16) : pick(d);
        u = a * b;
        break;
      }
      case Kind::idiv: {
        UOp a = pick(d);
        u = a / small_const(1, 16);
        break;
      }
      case Kind::mod: {
        UOp a = pick(d);
        u = a % small_const(1, 16);
        break;
      }
      case Kind::max: {
        UOp a = pick(d), b = pick(d);
        u = a.maximum(b);
        break;
      }
      case Kind::where: {
        UOp a = pick(d);
        UOp b = rng.below(2) ? pick(d) : small_const(0, 64);
        UOp cond = a.lt(b);
        seen.insert(cond.get());  // counted, but never an operand: it is bool
        UOp t = pick(d), f = pick(d);
        u = cond.where(t, f);
        for (const UOp& s : cond.src()) used.insert(s.get());
        break;
      }
    }
    for (const UOp& s : u.src()) used.insert(s.get());
    note(u, d + 1);
  }

  std::vector<UOp> roots;
  for (size_t i = 0; i < all.size(); ++i)
    if (depth_all[i] > 0 && !used.count(all[i].get())) roots.push_back(all[i]);
  UOp root = UOp::sink(std::move(roots));
  return {root, toposort(root).size()};
}

constexpr size_t kRewriteNodes = 100000;

// Runs `fn(graph.root)` on a freshly built 100,000-node graph each iteration; the build and the
// teardown of the graph and of the result are not timed.
template <class Fn>
void run_cold_rewrite(benchmark::State& state, Fn fn) {
  size_t nodes = 0, out_nodes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    IndexGraph g = random_index_graph(kRewriteNodes, 42);
    nodes = g.nodes;
    state.ResumeTiming();
    UOp out;
    try {
      out = fn(g.root);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
    state.PauseTiming();
    out_nodes = toposort(out).size();
    out = UOp();
    g.root = UOp();
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["out_nodes"] = static_cast<double>(out_nodes);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_rewrite_symbolic(benchmark::State& state) {
  run_cold_rewrite(state, [](const UOp& root) { return simplify(root); });
}
BENCHMARK(BM_rewrite_symbolic)
    ->Name("graph_rewrite/symbolic/random_index_100k_cold")
    ->Unit(benchmark::kMillisecond);

// The engine alone: a matcher whose one rule never fires (traversal, memo, matcher dispatch).
void BM_rewrite_noop(benchmark::State& state) {
  static const UPat any = UPat::any().named("x");
  static const PatternMatcher pm_nothing({rule(any, [](const Match&) { return UOp(); })});
  run_cold_rewrite(state, [](const UOp& root) { return graph_rewrite(root, pm_nothing); });
}
BENCHMARK(BM_rewrite_noop)
    ->Name("graph_rewrite/noop_rule/random_index_100k_cold")
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- toposort

// A 1,000,000-node DAG that is also a 1,000,000-deep chain: node i = node[i-1] + node[j], j < i
// random. Built once; each iteration sorts it and drops the result.
void BM_toposort(benchmark::State& state) {
  constexpr size_t kNodes = 1000000;
  Rng rng(7);
  std::vector<UOp> nodes{UOp::variable("x", 0, 100), UOp::variable("y", 0, 100)};
  nodes.reserve(kNodes);
  while (nodes.size() < kNodes) nodes.push_back(nodes.back() + nodes[rng.below(nodes.size())]);
  UOp root = nodes.back();
  nodes.clear();
  size_t n = 0;
  for (auto _ : state) {
    std::vector<UOp> order = toposort(root);
    n = order.size();
    benchmark::DoNotOptimize(order.data());
  }
  state.counters["nodes"] = static_cast<double>(n);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_toposort)->Name("toposort/chain_dag_1M")->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- one fused kernel

// The kernel-level AST of one fused elementwise kernel over a (1024, 768) output: six loads
// through movement-op style index expressions (reshape round trips, a permute, a reshape through
// an odd shape, a padded shift with a valid mask, an upsampling broadcast, a row broadcast), a
// 200-op float chain mixing them, a STORE, END over both ranges, SINK. Deterministic.
constexpr int kChainOps = 200;

// One step of the float chain: `ops` ALU nodes combining the running value with an operand.
struct ChainStep {
  int ops;
  UOp (*apply)(const UOp& acc, const UOp& v);
};
const ChainStep kChainSteps[] = {
    {1, [](const UOp& a, const UOp& v) { return a + v; }},
    {1, [](const UOp& a, const UOp& v) { return a * v; }},
    {1, [](const UOp& a, const UOp&) { return a * 0.5; }},
    {1, [](const UOp& a, const UOp& v) { return a.maximum(v); }},
    {1, [](const UOp& a, const UOp&) { return a.alu(Ops::EXP2); }},
    {1, [](const UOp& a, const UOp&) { return a.alu(Ops::RECIPROCAL); }},
    {2, [](const UOp& a, const UOp&) { return (a * 1.0).alu(Ops::SQRT); }},
    {2, [](const UOp& a, const UOp& v) { return a.lt(v).where(a, v); }},
    {2, [](const UOp& a, const UOp& v) { return a - v; }},  // ADD and MUL by -1
    {2, [](const UOp& a, const UOp&) { return a.maximum(a.scalar_like(1e-6)).alu(Ops::LOG2); }},
    {2, [](const UOp& a, const UOp& v) { return (a + 0.0) / v; }},
};

UOp build_kernel() {
  const DType fptr = dtypes::float32.ptr();
  UOp r0 = UOp::range(1024, 0), r1 = UOp::range(768, 1);
  UOp flat = r0 * 768 + r1;
  UOp row = flat / 768, col = flat % 768;  // unflatten: simplifies to r0, r1

  std::vector<UOp> vals;
  // Contiguous, through a reshape round trip: row*768 + col.
  vals.push_back(UOp::define_global(fptr, 1).index(row * 768 + col).load());
  // Permute: a (768, 1024) buffer read transposed.
  vals.push_back(UOp::define_global(fptr, 2).index(col * 1024 + row).load());
  // Reshape through (…, 512, 3): ((flat//3)%512)*3 + flat%3.
  vals.push_back(UOp::define_global(fptr, 3).index(flat / 3 % 512 * 3 + flat % 3).load());
  // Pad by one column on each side of a (1024, 766) buffer: read r1-1 where 1 <= r1 < 767.
  UOp valid = col.ge(1) & col.lt(767);
  vals.push_back(UOp::define_global(fptr, 4).index(row * 766 + (col - 1), valid).load());
  // Upsample 2x from (512, 384), and a per-column bias broadcast over rows.
  vals.push_back(UOp::define_global(fptr, 5).index(row / 2 * 384 + col / 2).load());
  vals.push_back(UOp::define_global(fptr, 6).index(flat % 768).load());

  Rng rng(1234);
  UOp acc = vals[0];
  auto v = [&] { return vals[rng.below(vals.size())]; };
  for (int ops = 0; ops < kChainOps;) {
    const ChainStep* step;
    do step = &kChainSteps[rng.below(std::size(kChainSteps))];
    while (ops + step->ops > kChainOps);
    acc = step->apply(acc, v());
    ops += step->ops;
    if (ops % 10 == 0) vals.push_back(acc);  // later steps reuse intermediates
  }
  UOp out = UOp::define_global(fptr, 0).index(r0 * 768 + r1);
  return UOp::sink({out.store(acc).end({r0, r1})});
}

// Counters shared by the kernel benchmarks: the AST's size, in and out.
void kernel_counters(benchmark::State& state, size_t in, size_t out) {
  state.counters["nodes"] = static_cast<double>(in);
  if (out) state.counters["out_nodes"] = static_cast<double>(out);
}

// Building the AST (and freeing it: nothing is kept between iterations).
void BM_kernel_build(benchmark::State& state) {
  size_t nodes = 0;
  for (auto _ : state) {
    UOp k = build_kernel();
    benchmark::DoNotOptimize(k.get());
    state.PauseTiming();
    nodes = toposort(k).size();
    state.ResumeTiming();
  }
  kernel_counters(state, nodes, 0);
}
BENCHMARK(BM_kernel_build)->Name("lower_kernel/build")->Unit(benchmark::kMicrosecond);

// The lowering proxy: simplify (and optionally verify) a freshly built AST; the build and the
// teardown are not timed.
void run_kernel(benchmark::State& state, bool with_verify) {
  size_t nodes = 0, out_nodes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    UOp k = build_kernel();
    state.ResumeTiming();
    UOp s;
    try {
      s = simplify(k);
      if (with_verify) verify(s, "simplify");
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
    state.PauseTiming();
    nodes = toposort(k).size();
    out_nodes = toposort(s).size();
    s = UOp();
    k = UOp();
    state.ResumeTiming();
  }
  kernel_counters(state, nodes, out_nodes);
}

void BM_kernel_simplify(benchmark::State& state) { run_kernel(state, false); }
BENCHMARK(BM_kernel_simplify)->Name("lower_kernel/simplify")->Unit(benchmark::kMicrosecond);

void BM_kernel_simplify_verify(benchmark::State& state) { run_kernel(state, true); }
BENCHMARK(BM_kernel_simplify_verify)
    ->Name("lower_kernel/simplify+verify")
    ->Unit(benchmark::kMicrosecond);

// Everything timed: build, simplify, verify, free. The figure to set beside tinygrad's ~0.45 s.
void BM_kernel_end_to_end(benchmark::State& state) {
  for (auto _ : state) {
    try {
      UOp s = simplify(build_kernel());
      verify(s, "simplify");
      benchmark::DoNotOptimize(s.get());
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
}
BENCHMARK(BM_kernel_end_to_end)
    ->Name("lower_kernel/build+simplify+verify+free")
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vkgrad

BENCHMARK_MAIN();
