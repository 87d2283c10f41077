// The slow core tests: a million-node chain through every graph walker (no recursion, so no stack
// overflow on the default thread stack), exact lifetime accounting, and interning from threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
static auto T0 = std::chrono::steady_clock::now();
static void tick(const char* w){auto t=std::chrono::steady_clock::now();fprintf(stderr,"%s %.3f\n",w,std::chrono::duration<double>(t-T0).count());T0=t;}
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

TEST(Depth, MillionNodeChain) {
  const size_t base = UOp::live_count();
  {
    UOp v = UOp::variable("v", 0, 10, dtypes::int64);
    tick("start");UOp chain = plus_one_chain(v, kDepth);tick("build");
    EXPECT_EQ(UOp::live_count(), base + kDepth + 2);

    // toposort
    std::vector<UOp> order = toposort(chain);
    ASSERT_EQ(order.size(), static_cast<size_t>(kDepth) + 2);
    EXPECT_EQ(order.front(), v);
    EXPECT_EQ(order.back(), chain);
    order.clear();tick("topo");

    // print: linear in size, tinygrad's form at both ends
    {
      std::string s = to_string(chain);tick("print");
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
    EXPECT_EQ(chain.vmax(), kDepth + 10);tick("bounds");

    // interpreter
    EXPECT_EQ(std::get<int64_t>(evaluate(chain, InterpEnv{{{"v", 3}}, {}})), kDepth + 3);tick("eval");

    // rewrite, in both orders: every +1 becomes +2
    const UPat x = UPat::var("x");
    PatternMatcher plus_two({rule(x + 1, x + 2)});
    for (bool parents_first : {false, true}) {
      RewriteOptions o;
      o.parents_first = parents_first;
      UOp r = graph_rewrite(chain, plus_two, nullptr, o);tick("rewrite");
      EXPECT_EQ(r.op(), Ops::ADD);
      EXPECT_TRUE(r.src(1).is_const(2));
      EXPECT_EQ(r.vmin(), 2 * int64_t{kDepth});
      EXPECT_EQ(std::get<int64_t>(evaluate(r, InterpEnv{{{"v", 1}}, {}})), 2 * int64_t{kDepth} + 1);
      // Walk the whole result: kDepth ADDs of 2 down to v.
      int adds = 0;
      const UOp* u = &r;
      while (u->op() == Ops::ADD && u->src(1).is_const(2)) {
        ++adds;
        u = &u->src(0);
      }
      EXPECT_EQ(adds, kDepth);
      EXPECT_EQ(*u, v);tick("check");
    }
  tick("x");}tick("free");
  EXPECT_EQ(UOp::live_count(), base);
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
  constexpr int kThreads = 4, kRounds = 150, kNodes = 1500;
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

}  // namespace
