// The slow core tests: a million-node chain through every graph walker (no recursion, so no stack
// overflow on the default thread stack), exact lifetime accounting, and interning from threads.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

#include "ir/graph_rewrite.hpp"
#include "ir/interp.hpp"
#include "ir/print.hpp"

using namespace vkgrad;

namespace {

constexpr int kDepth = 1'000'000;

// v + 1 + 1 + ... (n times): n ADD nodes deep, every ADD sharing the one constant.
UOp plus_one_chain(const UOp& v, int n) {
  UOp x = v, one = UOp::const_(v.dtype(), 1);
  for (int i = 0; i < n; ++i) x = x + one;
  return x;
}

// Walks the result of rewriting plus_one_chain(v, kDepth): kDepth ADDs of 1 down to `bottom`.
void expect_plus_one_chain(const UOp& r, const UOp& bottom) {
  int adds = 0;
  const UOp* u = &r;
  while (u->op() == Ops::ADD && u->src(1).is_const(1)) {
    ++adds;
    u = &u->src(0);
  }
  EXPECT_EQ(adds, kDepth);
  EXPECT_EQ(*u, bottom);
}

// Replaces the variable `v` by the constant 5: every node above it must be rebuilt.
const PatternMatcher& v_to_5() {
  static const PatternMatcher pm({rule(UPat::op(Ops::DEFINE_VAR).named("v"), [](const Match& m) {
    return m.root().const_like(int64_t{5});
  })});
  return pm;
}

TEST(Depth, MillionNodeChain) {
  const size_t base = UOp::live_count();
  {
    UOp v = UOp::variable("v", 0, 10, dtypes::int64);
    UOp chain = plus_one_chain(v, kDepth);
    EXPECT_EQ(UOp::live_count(), base + kDepth + 2);

    // toposort
    std::vector<UOp> order = toposort(chain);
    ASSERT_EQ(order.size(), static_cast<size_t>(kDepth) + 2);
    EXPECT_EQ(order.front(), v);
    EXPECT_EQ(order.back(), chain);
    order.clear();

    // print: linear in size, tinygrad's form at both ends
    {
      std::string s = to_string(chain);
      EXPECT_GT(s.size(), static_cast<size_t>(kDepth) * 100);
      EXPECT_LT(s.size(), static_cast<size_t>(kDepth) * 200);
      const std::string head =
          "UOp(Ops.ADD, dtypes.int64, arg=None, src=(\n"
          "  UOp(Ops.ADD, dtypes.int64, arg=None, src=(\n"
          "    UOp(Ops.ADD, dtypes.int64, arg=None, src=(\n";
      EXPECT_EQ(s.substr(0, head.size()), head);
      const std::string tail = ")),\n  x0,))";  // the shared constant is named once
      EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
      EXPECT_NE(s.find("x0:=UOp(Ops.CONST, dtypes.int64, arg=1, src=())"), std::string::npos);
    }

    // bounds
    EXPECT_EQ(chain.vmin(), kDepth);
    EXPECT_EQ(chain.vmax(), kDepth + 10);

    // interpreter
    EXPECT_EQ(std::get<int64_t>(evaluate(chain, InterpEnv{{{"v", 3}}, {}})), kDepth + 3);

    // rewrite (children first): the change at the bottom rebuilds every node above it
    UOp r = graph_rewrite(chain, v_to_5());
    expect_plus_one_chain(r, UOp::const_(dtypes::int64, 5));
  }
  EXPECT_EQ(UOp::live_count(), base);  // and destroyed, chain and rewrite alike
}

TEST(Depth, MillionNodeChainParentsFirst) {
  const size_t base = UOp::live_count();
  {
    UOp v = UOp::variable("v", 0, 10, dtypes::int64);
    UOp chain = plus_one_chain(v, kDepth);
    RewriteOptions o;
    o.parents_first = true;
    UOp r = graph_rewrite(chain, v_to_5(), nullptr, o);
    expect_plus_one_chain(r, UOp::const_(dtypes::int64, 5));
  }
  EXPECT_EQ(UOp::live_count(), base);
}

// Every node of a deep chain rewritten by a rule (x + 1 -> x + 2), in both orders.
TEST(Depth, EveryNodeRewritten) {
  constexpr int kNodes = 100'000;
  UOp v = UOp::variable("v", 0, 10, dtypes::int64);
  UOp chain = plus_one_chain(v, kNodes);
  const UPat x = UPat::var("x");
  PatternMatcher plus_two({rule(x + 1, x + 2)});
  for (bool parents_first : {false, true}) {
    RewriteOptions o;
    o.parents_first = parents_first;
    UOp r = graph_rewrite(chain, plus_two, nullptr, o);
    int adds = 0;
    const UOp* u = &r;
    while (u->op() == Ops::ADD && u->src(1).is_const(2)) {
      ++adds;
      u = &u->src(0);
    }
    EXPECT_EQ(adds, kNodes) << parents_first;
    EXPECT_EQ(*u, v);
    EXPECT_EQ(r.vmin(), 2 * kNodes);
  }
}

// A chain of distinct ops (no shared constant), destroyed from the root.
TEST(Depth, MillionDistinctNodesFreed) {
  const size_t base = UOp::live_count();
  {
    UOp x = UOp::variable("d", 0, 1, dtypes::float32);
    for (int i = 0; i < kDepth; ++i) x = x.alu(i % 2 ? Ops::SIN : Ops::SQRT);
    EXPECT_EQ(UOp::live_count(), base + kDepth + 1);
    EXPECT_EQ(toposort(x).size(), static_cast<size_t>(kDepth) + 1);
  }
  EXPECT_EQ(UOp::live_count(), base);
}

// One node with a million sources: matching every source (op_each) must not recurse per source.
TEST(Depth, MillionSourceNode) {
  UOp c = UOp::const_(dtypes::int32, 7), d = UOp::const_(dtypes::int32, 8);
  std::vector<UOp> src(kDepth, c);
  src.back() = d;
  UOp wide = UOp::sink(src);
  int calls = 0;
  auto count = [&](const Match&) {
    ++calls;
    return UOp::sink({});
  };
  // Captures shared by every source: all must be the same node (the last one differs).
  PatternMatcher same({rule(UPat::op_each(Ops::SINK, UPat::cvar("k")), count)});
  EXPECT_FALSE(same.rewrite(wide));
  src.back() = c;
  EXPECT_TRUE(same.rewrite(UOp::sink(src)));
  // No captures: every source is a CONST.
  PatternMatcher consts({rule(UPat::op_each(Ops::SINK, UPat::op(Ops::CONST)), count)});
  EXPECT_TRUE(consts.rewrite(wide));
  EXPECT_EQ(calls, 2);
  // A rewrite of every source, and the walkers, on the wide node.
  PatternMatcher seven_to_nine({rule(UPat::const_(int64_t{7}).named("s"), [](const Match& m) {
    return m.root().const_like(int64_t{9});
  })});
  UOp r = graph_rewrite(wide, seven_to_nine);
  ASSERT_EQ(r.src().size(), static_cast<size_t>(kDepth));
  EXPECT_TRUE(r.src(0).is_const(9));
  EXPECT_TRUE(r.src(kDepth - 1).is_const(8));
  EXPECT_EQ(toposort(r).size(), 3u);
}

TEST(Lifetime, HundredThousandNodeGraphDropsToBaseline) {
  const size_t base = UOp::live_count();
  {
    UOp v = UOp::variable("lv", 0, 100, dtypes::int32);
    std::vector<UOp> parts;
    UOp x = v;
    for (int i = 0; i < 50'000; ++i) {
      x = x * 3 + i;  // a MUL and an ADD per step, a new constant for most steps
      if (i % 1000 == 0) parts.push_back(x);
    }
    UOp root = UOp::sink(parts);
    EXPECT_GT(UOp::live_count(), base + 100'000);
  }
  EXPECT_EQ(UOp::live_count(), base);
}

// ------------------------------------------------------------------ threads

UOp& thread_cache() {
  thread_local UOp cache;  // constructed before the thread frees any node
  return cache;
}

// A thread-local handle is released at thread exit, after the thread's other thread-local
// objects may be gone: freeing the graph must not need any of them.
TEST(Lifetime, ThreadLocalHandleReleasedAtThreadExit) {
  const size_t base = UOp::live_count();
  std::thread t([] {
    UOp& cache = thread_cache();
    { UOp dropped = UOp::variable("tl_dropped", 0, 1) * 2 + 1; }  // frees a graph first
    cache = plus_one_chain(UOp::variable("tl", 0, 1), 1000);
  });
  t.join();
  EXPECT_EQ(UOp::live_count(), base);
}

// The same 50k-node structure from any thread (distinct nodes along a chain, shared leaves).
UOp build_graph(int n, int salt) {
  UOp x = UOp::variable("t", 0, 100, dtypes::int32);
  for (int i = 0; i < n; ++i) {
    UOp c = UOp::const_(dtypes::int32, (i + salt) % 97);
    x = (i % 3 == 0) ? x + c : (i % 3 == 1) ? x * c : x.maximum(c);
  }
  return x;
}

TEST(Threads, IdenticalGraphsInternToOneRoot) {
  const size_t base = UOp::live_count();
  {
    constexpr int kThreads = 4, kNodes = 50'000;
    std::vector<UOp> roots(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        start.arrive_and_wait();
        roots[t] = build_graph(kNodes, 0);
      });
    for (auto& t : ts) t.join();
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(roots[t].get(), roots[0].get()) << t;
    EXPECT_EQ(UOp::live_count(), base + kNodes + 1 + 97);
    EXPECT_EQ(build_graph(kNodes, 0), roots[0]);
  }
  EXPECT_EQ(UOp::live_count(), base);
}

// Threads build, check and drop the same graphs over and over, so nodes die in one thread while
// another looks them up; nothing may crash, leak, or hand out a freed node.
TEST(Threads, BuildAndDropChurn) {
  const size_t base = UOp::live_count();
  constexpr int kThreads = 4, kRounds = 100, kNodes = 1000;
  std::atomic<int> failures{0};
  std::latch start(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        int salt = (r + t) % 3;  // several threads share each structure in each round
        UOp g = build_graph(kNodes, salt);
        UOp again = build_graph(kNodes, salt);
        if (g != again) ++failures;
        if (r % 25 == 0) {
          // Evaluate to check the structure is intact, and compute bounds concurrently.
          UOp small = build_graph(30, salt);
          int64_t want = 5;
          for (int i = 0; i < 30; ++i) {
            int64_t c = (i + salt) % 97;
            want = i % 3 == 0 ? want + c : i % 3 == 1 ? want * c : std::max(want, c);
            want = static_cast<int32_t>(want);
          }
          if (std::get<int64_t>(evaluate(small, InterpEnv{{{"t", 5}}, {}})) != want) ++failures;
          (void)g.vmax();
        }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(UOp::live_count(), base);
}

// Several threads rewrite one shared graph with one matcher: the same result, pointer for pointer.
TEST(Threads, ConcurrentRewritesAgree) {
  const UPat x = UPat::var("x");
  PatternMatcher plus_two({rule(x + 1, x + 2)});
  UOp v = UOp::variable("v", 0, 10, dtypes::int64);
  UOp chain = plus_one_chain(v, 20'000);
  constexpr int kThreads = 4;
  std::vector<UOp> results(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      RewriteOptions o;
      o.parents_first = t % 2 == 1;
      results[t] = graph_rewrite(chain, plus_two, nullptr, o);
      (void)results[t].vmax();  // bounds of shared nodes computed concurrently
    });
  for (auto& t : ts) t.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(results[t].get(), results[0].get()) << t;
  EXPECT_EQ(results[0].vmin(), 40'000);
  EXPECT_EQ(results[0].vmax(), 40'010);
}

}  // namespace
