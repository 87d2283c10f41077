// graph_rewrite: both orders reach their fixed points, memoization, context, and cycle
// detection that names the rules; run_pass with the spec.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vkgrad/error.hpp>

#include "ir/graph_rewrite.hpp"
#include "ir/interp.hpp"
#include "ir/spec.hpp"

using namespace vkgrad;

namespace {

UOp fvar(const char* name) { return UOp::variable(name, 0, 100, dtypes::float32); }
UOp c32(int64_t v) { return UOp::const_(dtypes::int32, v); }

const UPat x = UPat::var("x");
const UPat c = UPat::cvar("c");

RewriteOptions parents_first() {
  RewriteOptions o;
  o.parents_first = true;
  return o;
}

// The name of rule i: where it was written, "test_graph_rewrite.cpp:<line>".
std::string rule_name(const PatternMatcher& pm, int i) {
  std::string name = pm.rule_at(i).name;
  EXPECT_EQ(name.rfind("test_graph_rewrite.cpp:", 0), 0u) << name;
  return name;
}

// Expect `f` to throw InternalError whose message contains every string in `parts`.
template <class F>
void expect_internal_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no InternalError";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

// ------------------------------------------------------------------ order

// SQRT(EXP2(x)) -> LOG2(x) fires only if seen before EXP2(x) -> SIN(x) rewrites the inside.
TEST(GraphRewrite, OrderDecidesWhichRuleFires) {
  PatternMatcher rules({
      rule(UPat::op(Ops::SQRT, {UPat::op(Ops::EXP2, {x})}),
           [](const Match& m) { return m[x].alu(Ops::LOG2); }),
      rule(UPat::op(Ops::EXP2, {x}), [](const Match& m) { return m[x].alu(Ops::SIN); }),
  });
  UOp v = fvar("v");
  UOp g = v.alu(Ops::EXP2).alu(Ops::SQRT) + 1.0;
  // Children first: the inside becomes SIN before SQRT is looked at.
  EXPECT_EQ(graph_rewrite(g, rules), v.alu(Ops::SIN).alu(Ops::SQRT) + 1.0);
  // Parents first: SQRT(EXP2(v)) is rewritten before its source.
  EXPECT_EQ(graph_rewrite(g, rules, nullptr, parents_first()), v.alu(Ops::LOG2) + 1.0);
  // Each result is a fixed point of the rules.
  for (const UOp& r : {v.alu(Ops::SIN).alu(Ops::SQRT) + 1.0, v.alu(Ops::LOG2) + 1.0})
    EXPECT_EQ(graph_rewrite(r, rules), r);
}

// Parents first also rewrites a node again once its sources have changed.
TEST(GraphRewrite, ParentsFirstRevisitsAfterSourcesChange) {
  PatternMatcher rules({
      rule(UPat::op(Ops::SQRT, {UPat::op(Ops::SIN, {x})}),
           [](const Match& m) { return m[x].alu(Ops::TRUNC); }),
      rule(UPat::op(Ops::EXP2, {x}), [](const Match& m) { return m[x].alu(Ops::SIN); }),
  });
  UOp v = fvar("v");
  UOp g = v.alu(Ops::EXP2).alu(Ops::SQRT);
  EXPECT_EQ(graph_rewrite(g, rules), v.alu(Ops::TRUNC));
  EXPECT_EQ(graph_rewrite(g, rules, nullptr, parents_first()), v.alu(Ops::TRUNC));
}

// Rules whose results feed further rules: both orders end where no rule applies.
TEST(GraphRewrite, FixedPointThroughChainsOfRules) {
  // Fold x + c1 + c2 and x * 1 -> x; ((((v*1)+1)+2)+3)*1 -> v + 6.
  PatternMatcher rules({
      rule((x + c) + UPat::cvar("d"),
           [](const Match& m) {
             return m[x] + (std::get<int64_t>(m[c].const_value()) +
                            std::get<int64_t>(m[UPat::cvar("d")].const_value()));
           }),
      rule(x * 1, x),
  });
  UOp v = UOp::variable("v", 0, 10, dtypes::int32);
  UOp g = (((v * 1 + 1) + 2) + 3) * 1;
  EXPECT_EQ(graph_rewrite(g, rules), v + 6);
  EXPECT_EQ(graph_rewrite(g, rules, nullptr, parents_first()), v + 6);
}

TEST(GraphRewrite, NoMatchReturnsSameGraph) {
  PatternMatcher rules({rule(x * 0, UPat::const_(int64_t{0}))});
  UOp v = UOp::variable("v", 0, 10, dtypes::int32);
  UOp g = (v + 1) * (v + 2);
  EXPECT_EQ(graph_rewrite(g, rules), g);
  EXPECT_EQ(graph_rewrite(g, rules, nullptr, parents_first()), g);
  EXPECT_EQ(graph_rewrite(g, PatternMatcher()), g);
}

// ------------------------------------------------------------------ memoization and context

TEST(GraphRewrite, SharedSubgraphRewrittenOnce) {
  struct Ctx {
    int calls = 0;
  };
  PatternMatcher rules({rule(UPat::op(Ops::EXP2, {x}), [](const Match& m) {
    ++m.ctx<Ctx>().calls;
    return m[x].alu(Ops::SIN);
  })});
  UOp v = fvar("v");
  UOp s = v.alu(Ops::EXP2);
  UOp g = (s + s) * (s + fvar("w").alu(Ops::EXP2));
  for (bool pf : {false, true}) {
    Ctx ctx;
    RewriteOptions o;
    o.parents_first = pf;
    UOp r = graph_rewrite(g, rules, ctx, o);
    UOp sin = v.alu(Ops::SIN);
    EXPECT_EQ(r, (sin + sin) * (sin + fvar("w").alu(Ops::SIN))) << pf;
    EXPECT_EQ(ctx.calls, 2) << pf;  // once per distinct EXP2 node
  }
}

TEST(GraphRewrite, DiamondGraphIsLinearNotExponential) {
  // x_{i+1} = x_i + x_i, 200 levels: 2^200 paths, 200 nodes.
  UOp v = UOp::variable("v", 0, 10, dtypes::int64);
  UOp g = v;
  for (int i = 0; i < 200; ++i) g = g + g;
  int calls = 0;
  PatternMatcher rules({rule(UPat::op(Ops::DEFINE_VAR).named("x"), [&](const Match&) {
    ++calls;
    return UOp::const_(dtypes::int64, 1);
  })});
  UOp r = graph_rewrite(g, rules);
  EXPECT_EQ(calls, 1);
  UOp want = UOp::const_(dtypes::int64, 1);
  for (int i = 0; i < 200; ++i) want = want + want;
  EXPECT_EQ(r, want);
  EXPECT_EQ(graph_rewrite(g, rules, nullptr, parents_first()), want);
  EXPECT_EQ(std::get<int64_t>(evaluate(graph_rewrite(UOp::const_(dtypes::int64, 1) + v, rules))),
            2);
}

TEST(GraphRewrite, ContextReachesRules) {
  struct Renames {
    std::string from, to;
  } ctx{"a", "b"};
  PatternMatcher rules({rule(UPat::op(Ops::DEFINE_VAR).named("x"), [](const Match& m) {
    auto& r = m.ctx<Renames>();
    const VarArg& v = m[x].arg_as<VarArg>();
    if (v.name != r.from) return UOp();
    return UOp::variable(r.to, v.min, v.max, m[x].dtype());
  })});
  UOp a = UOp::variable("a", 0, 5), b = UOp::variable("b", 0, 5), z = UOp::variable("z", 0, 5);
  EXPECT_EQ(graph_rewrite(a * 2 + z, rules, ctx), b * 2 + z);
  EXPECT_EQ(graph_rewrite(a * 2 + z, rules, static_cast<void*>(&ctx)), b * 2 + z);
  void* as_pointer = &ctx;  // a pointer variable is the context, not the address of one
  EXPECT_EQ(graph_rewrite(a * 2 + z, rules, as_pointer), b * 2 + z);
}

// ------------------------------------------------------------------ termination

// A rule that rewrites a node into something containing itself.
TEST(GraphRewriteCycle, NodeIntoItself) {
  PatternMatcher grow(
      {rule(UPat::op(Ops::DEFINE_VAR).named("x"), [](const Match& m) { return m[x] + 0; })});
  const std::string r0 = rule_name(grow, 0);
  UOp v = UOp::variable("v", 0, 10, dtypes::int32);
  expect_internal_error([&] { graph_rewrite(v * 3, grow); }, {r0, "graph_rewrite"});
  expect_internal_error([&] { graph_rewrite(v * 3, grow, nullptr, parents_first()); }, {r0});
  RewriteOptions named;
  named.name = "my_pass";
  expect_internal_error([&] { graph_rewrite(v * 3, grow, nullptr, named); }, {r0, "my_pass"});
}

// x + 0 -> x * 1 and x * 1 -> x + 0: a two-rule loop at one node.
TEST(GraphRewriteCycle, TwoRulesUndoEachOther) {
  PatternMatcher rules({
      rule(UPat::op(Ops::ADD, {x, UPat::const_(int64_t{0})}), x * 1),
      rule(UPat::op(Ops::MUL, {x, UPat::const_(int64_t{1})}), x + 0),
  });
  const std::string r0 = rule_name(rules, 0), r1 = rule_name(rules, 1);
  ASSERT_NE(r0, r1);
  UOp v = UOp::variable("v", 0, 10, dtypes::int32);
  for (bool pf : {false, true}) {
    RewriteOptions o;
    o.parents_first = pf;
    expect_internal_error([&] { graph_rewrite((v + 0) * 5, rules, nullptr, o); }, {r0, r1});
    expect_internal_error([&] { graph_rewrite(v * 1, rules, nullptr, o); }, {r0, r1});
  }
}

// x -> x+0 together with x+0 -> x.
TEST(GraphRewriteCycle, AddZeroAndRemoveZero) {
  PatternMatcher rules({
      rule(x + 0, x),
      rule(UPat::op(Ops::DEFINE_VAR).named("x"), x + 0),
  });
  const std::string r1 = rule_name(rules, 1);  // the one that grows
  UOp v = UOp::variable("v", 0, 10, dtypes::int32);
  for (bool pf : {false, true}) {
    RewriteOptions o;
    o.parents_first = pf;
    expect_internal_error([&] { graph_rewrite(v * 2, rules, nullptr, o); }, {r1});
    expect_internal_error([&] { graph_rewrite(v + 0, rules, nullptr, o); }, {r1});
  }
}

// A rule that always makes a new node (c -> c+1) never revisits one; it must still stop.
TEST(GraphRewriteCycle, EndlessNewNodesAtOneNode) {
  PatternMatcher rules({rule(UPat::cvar("c", DTypeClass::ints), [](const Match& m) {
    return m.root().const_like(std::get<int64_t>(m.root().const_value()) + 1);
  })});
  for (bool pf : {false, true}) {
    RewriteOptions o;
    o.parents_first = pf;
    o.max_rewrites_per_node = 500;
    expect_internal_error([&] { graph_rewrite(c32(0), rules, nullptr, o); },
                          {rule_name(rules, 0), "terminate"});
  }
}

// Each rewrite's result holds a new node that rewrites again: c -> (c+1) + 0, forever deeper.
// Children first, each rewrite waits on the next. (Parents first cannot tell this from a deep
// graph rewritten top-down, and would run until memory runs out.)
TEST(GraphRewriteCycle, EndlessNewNodesThroughSources) {
  PatternMatcher rules({rule(UPat::cvar("c", DTypeClass::ints), [](const Match& m) {
    UOp r = m.root();
    int64_t v = std::get<int64_t>(r.const_value());
    if (v == 0) return UOp();  // leave the 0 alone
    return UOp::make(Ops::ADD, r.dtype(), {r.const_like(v + 1), r.const_like(int64_t{0})});
  })});
  RewriteOptions o;
  o.max_rewrites_per_node = 500;
  expect_internal_error([&] { graph_rewrite(c32(1), rules, nullptr, o); },
                        {rule_name(rules, 0), "does not terminate"});
}

// EXP2(x) -> EXP2(EXP2(x)): grows at the top.
TEST(GraphRewriteCycle, GrowsAtTheTop) {
  PatternMatcher rules({rule(UPat::op(Ops::EXP2, {x}).named("e"),
                             [](const Match& m) { return m.root().alu(Ops::EXP2); })});
  UOp v = fvar("v");
  for (bool pf : {false, true}) {
    RewriteOptions o;
    o.parents_first = pf;
    o.max_rewrites_per_node = 300;
    expect_internal_error([&] { graph_rewrite(v.alu(Ops::EXP2), rules, nullptr, o); },
                          {rule_name(rules, 0)});
  }
}

// A rewrite abandoned by an error frees everything it made.
TEST(GraphRewriteCycle, ErrorLeaksNoNodes) {
  const size_t base = UOp::live_count();
  {
    PatternMatcher grow(
        {rule(UPat::op(Ops::DEFINE_VAR).named("x"), [](const Match& m) { return m[x] + 0; })});
    PatternMatcher count_up({rule(UPat::cvar("c", DTypeClass::ints), [](const Match& m) {
      return m.root().const_like(std::get<int64_t>(m.root().const_value()) + 1);
    })});
    UOp v = UOp::variable("v", 0, 10, dtypes::int32);
    UOp g = (v * 3 + 1) * (v + 2);
    for (bool pf : {false, true}) {
      RewriteOptions o;
      o.parents_first = pf;
      o.max_rewrites_per_node = 50;
      EXPECT_THROW(graph_rewrite(g, grow, nullptr, o), InternalError);
      EXPECT_THROW(graph_rewrite(g, count_up, nullptr, o), InternalError);
    }
  }
  EXPECT_EQ(UOp::live_count(), base);
}

// A long but finite chain of rewrites at one node is fine below the limit.
TEST(GraphRewrite, LongFiniteChainBelowLimit) {
  PatternMatcher rules({rule(UPat::cvar("c", DTypeClass::ints), [](const Match& m) {
    int64_t v = std::get<int64_t>(m.root().const_value());
    if (v >= 1000) return UOp();
    return m.root().const_like(v + 1);
  })});
  EXPECT_EQ(graph_rewrite(c32(0) * c32(5), rules), c32(1000) * c32(1000));
  EXPECT_EQ(graph_rewrite(c32(0) * c32(5), rules, nullptr, parents_first()), c32(1000) * c32(1000));
}

// ------------------------------------------------------------------ run_pass and the spec

TEST(RunPass, VerifyCatchesABadRewrite) {
  // A rule that makes invalid IR: CMPLT whose dtype is int32.
  PatternMatcher bad({rule(UPat::op(Ops::CMPLT, {x, c}).named("r"), [](const Match& m) {
    return UOp::make(Ops::CMPLT, dtypes::int32, {m[x], m[c]});
  })});
  UOp v = UOp::variable("v", 0, 10, dtypes::int32);
  UOp out = graph_rewrite(v.lt(3), bad);
  EXPECT_EQ(out.dtype(), dtypes::int32);
  expect_internal_error([&] { verify(out, "bad_pass"); }, {"bad_pass", "CMPLT"});
  EXPECT_NO_THROW(verify(v.lt(3), "good_pass"));
  if (!spec_enabled()) {
    // Without SPEC, run_pass only rewrites.
    EXPECT_EQ(run_pass("bad_pass", v.lt(3), bad), out);
  } else {
    expect_internal_error([&] { run_pass("bad_pass", v.lt(3), bad); }, {"bad_pass"});
  }
}

// SPEC is read once per process, so the SPEC=1 path runs in a child process.
TEST(RunPass, SpecOneVerifiesEachPass) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("SPEC", "1", 1);
        PatternMatcher bad({rule(UPat::op(Ops::CMPLT, {x, c}).named("r"), [](const Match& m) {
          return UOp::make(Ops::CMPLT, dtypes::int32, {m[x], m[c]});
        })});
        UOp v = UOp::variable("v", 0, 10, dtypes::int32);
        if (!spec_enabled()) std::exit(2);
        run_pass("good_pass", v.lt(3), PatternMatcher());  // valid: no throw
        try {
          run_pass("lower_cmp", v.lt(3), bad);
        } catch (const InternalError& e) {
          std::exit(std::string(e.what()).find("lower_cmp") != std::string::npos ? 0 : 3);
        }
        std::exit(4);
      },
      testing::ExitedWithCode(0), "");
}

}  // namespace
