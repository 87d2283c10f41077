// UPat patterns and PatternMatcher: what a pattern matches, captures, any-order matching with
// backtracking, templates, rule names, composition and per-op indexing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vkgrad/error.hpp>

#include "ir/upat.hpp"

using namespace vkgrad;

namespace {

UOp var(const char* name, DType dt = dtypes::int32) { return UOp::variable(name, 0, 100, dt); }
UOp c32(int64_t v) { return UOp::const_(dtypes::int32, v); }

const UPat x = UPat::var("x");
const UPat y = UPat::var("y");
const UPat c = UPat::cvar("c");
const UPat c1 = UPat::cvar("c1");

// A matcher whose one rule rewrites what `p` matches to the constant 1 of its dtype (or, for
// non-scalar dtypes, to a SINK), so a test can ask "does p match u?".
bool matches(const UPat& p, const UOp& u) {
  PatternMatcher pm({rule(p, [](const Match& m) { return UOp::sink({m.root()}); })});
  return static_cast<bool>(pm.rewrite(u));
}

// ------------------------------------------------------------------ single-node checks

TEST(UPat, OpAndOpSet) {
  UOp a = var("a"), b = var("b");
  EXPECT_TRUE(matches(UPat::op(Ops::ADD), a + b));
  EXPECT_FALSE(matches(UPat::op(Ops::ADD), a * b));
  EXPECT_TRUE(matches(UPat::ops(OpSet{Ops::ADD, Ops::MUL}), a * b));
  EXPECT_FALSE(matches(UPat::ops(OpSet{Ops::ADD, Ops::MUL}), a.maximum(b)));
  EXPECT_TRUE(matches(UPat::ops(OpSet::group(kComparison)), a.lt(b)));
  EXPECT_TRUE(matches(UPat::any(), a));
  EXPECT_TRUE(matches(UPat::any(), a + b));
}

TEST(UPat, DtypeAndDtypeClass) {
  UOp i = var("i"), f = var("f", dtypes::float32), t = UOp::variable("t", 0, 1, dtypes::bool_);
  UOp ix = var("ix", dtypes::index);
  EXPECT_TRUE(matches(UPat::any().dtype(dtypes::int32), i));
  EXPECT_FALSE(matches(UPat::any().dtype(dtypes::int32), ix));
  EXPECT_TRUE(matches(UPat::var("v", DTypeClass::ints), i));
  EXPECT_TRUE(matches(UPat::var("v", DTypeClass::ints), ix));
  EXPECT_FALSE(matches(UPat::var("v", DTypeClass::ints), f));
  EXPECT_FALSE(matches(UPat::var("v", DTypeClass::ints), t));
  EXPECT_TRUE(matches(UPat::var("v", DTypeClass::floats), f));
  EXPECT_FALSE(matches(UPat::var("v", DTypeClass::floats), i));
  EXPECT_TRUE(matches(UPat::var("v", DTypeClass::bool_), t));
  EXPECT_TRUE(matches(UPat::var("v", DTypeClass::ints_or_bool), t));
  EXPECT_TRUE(matches(UPat::var("v", DTypeClass::ints_or_bool), i));
  EXPECT_FALSE(matches(UPat::var("v", DTypeClass::ints_or_bool), f));
  EXPECT_TRUE(matches(UPat::any().dtype(DTypeClass::floats), f));
  UOp g = UOp::define_global(dtypes::float32.ptr(), 0);
  EXPECT_FALSE(matches(UPat::any().dtype(DTypeClass::floats), g));  // a pointer is no float
  EXPECT_TRUE(in_class(dtypes::float32.vec(4), DTypeClass::floats));
  EXPECT_FALSE(in_class(dtypes::int32.ptr(), DTypeClass::ints));
}

TEST(UPat, Arg) {
  UOp a = UOp::variable("a", 0, 5);
  EXPECT_TRUE(matches(UPat::op(Ops::DEFINE_VAR).arg(VarArg{"a", 0, 5}), a));
  EXPECT_FALSE(matches(UPat::op(Ops::DEFINE_VAR).arg(VarArg{"a", 0, 6}), a));
  EXPECT_TRUE(matches(UPat::op(Ops::RANGE).arg(AxisArg{3, AxisType::loop}), UOp::range(8, 3)));
  EXPECT_FALSE(matches(UPat::op(Ops::RANGE).arg(AxisArg{3, AxisType::loop}), UOp::range(8, 4)));
  UOp z = UOp::const_(dtypes::float32, -0.0);
  EXPECT_TRUE(matches(UPat::op(Ops::CONST).arg(-0.0), z));
  EXPECT_FALSE(matches(UPat::op(Ops::CONST).arg(0.0), z));  // floats by bit pattern
}

TEST(UPat, ConstAndCvar) {
  EXPECT_TRUE(matches(UPat::const_(int64_t{3}), c32(3)));
  EXPECT_FALSE(matches(UPat::const_(int64_t{3}), c32(4)));
  EXPECT_TRUE(matches(UPat::const_(int64_t{3}), UOp::const_(dtypes::float32, 3.0)));
  EXPECT_TRUE(matches(UPat::const_(3.0), c32(3)));  // compared in the node's dtype
  EXPECT_TRUE(matches(UPat::const_(int64_t{-1}), UOp::const_(dtypes::uint8, 255)));
  EXPECT_FALSE(matches(UPat::const_(int64_t{3}), var("x")));
  EXPECT_TRUE(matches(UPat::const_(true), UOp::const_(dtypes::bool_, true)));
  EXPECT_TRUE(matches(c, c32(7)));
  EXPECT_FALSE(matches(c, var("x")));
  EXPECT_TRUE(matches(UPat::cvar("k", DTypeClass::floats), UOp::const_(dtypes::float32, 1.0)));
  EXPECT_FALSE(matches(UPat::cvar("k", DTypeClass::floats), c32(1)));
}

// ------------------------------------------------------------------ sources

TEST(UPat, SourcesInOrder) {
  UOp a = var("a");
  UPat p = UPat::op(Ops::IDIV, {x, c});
  EXPECT_TRUE(matches(p, a / 2));
  EXPECT_FALSE(matches(p, c32(2) / a));
  EXPECT_FALSE(matches(UPat::op(Ops::ADD, {x}), a + 2));  // exact count
  EXPECT_TRUE(matches(UPat::op(Ops::ADD, {UPat::any(), UPat::any()}), a + 2));
  // op(X, {}) demands no sources; op(X) ignores them.
  EXPECT_TRUE(matches(UPat::op(Ops::SINK, {}), UOp::sink({})));
  EXPECT_FALSE(matches(UPat::op(Ops::SINK, {}), UOp::sink({a})));
  EXPECT_TRUE(matches(UPat::op(Ops::SINK), UOp::sink({a, a, a})));
  // Exact source order for an op built with op() even when the op is commutative.
  EXPECT_FALSE(matches(UPat::op(Ops::ADD, {c, x}), a + 2));
  EXPECT_TRUE(matches(UPat::op(Ops::ADD, {c, x}).any_order(), a + 2));
}

TEST(UPat, AnyOrderForCommutativeBuilders) {
  UOp a = var("a");
  EXPECT_TRUE(matches(x + c, a + 2));
  EXPECT_TRUE(matches(x + c, c32(2) + a));
  EXPECT_TRUE(matches(x * c, c32(2) * a));
  EXPECT_TRUE(matches(x.ne(c), c32(0).ne(a)));
  EXPECT_FALSE(matches(x.lt(c), c32(0).lt(a)));  // CMPLT is ordered
  EXPECT_TRUE(matches(x.lt(c), a.lt(0)));
  EXPECT_FALSE(matches(x / c, c32(2) / a));  // IDIV too
  EXPECT_FALSE(matches(x + c, a + a));       // neither order fits
}

TEST(UPat, SameNameMeansSameNode) {
  UOp a = var("a"), b = var("b");
  EXPECT_TRUE(matches(x + x, a + a));
  EXPECT_FALSE(matches(x + x, a + b));
  EXPECT_TRUE(matches(x * y + x, a * b + a));
  EXPECT_TRUE(matches(x * y + x, b + a * b));  // ADD any order, MUL: y*x
  EXPECT_FALSE(matches(x * y + x, a * b + c32(1)));
}

TEST(UPat, AnyOrderBacktracksWhenCapturesConflict) {
  UOp v = var("v");
  // x + x*c against (v*2) + v: the first order binds x = v*2 and must be undone.
  PatternMatcher pm({rule(x + x * c, [](const Match& m) { return m[x] * (m[c] + 1); })});
  UOp r = pm.rewrite(v * 2 + v);
  ASSERT_TRUE(r);
  EXPECT_EQ(r, v * (c32(2) + 1));
  EXPECT_EQ(pm.rewrite(v + v * 2), v * (c32(2) + 1));

  // The inner any-order match must be retried when a later sibling fails: ADD in order,
  // MUL(x, y) any order, then x again. For (a*b) + b the first MUL order (x=a) fails at the
  // sibling, the second (x=b) succeeds.
  UOp a = var("a"), b = var("b");
  UPat p = UPat::op(Ops::ADD, {UPat::op(Ops::MUL, {x, y}).any_order(), x});
  PatternMatcher pm2({rule(p, [](const Match& m) { return UOp::sink({m[x], m[y]}); })});
  EXPECT_EQ(pm2.rewrite(a * b + b), UOp::sink({b, a}));
  EXPECT_EQ(pm2.rewrite(a * b + a), UOp::sink({a, b}));
  EXPECT_FALSE(pm2.rewrite(a * b + c32(1)));

  // A condition that fails for one order lets the other order be tried.
  PatternMatcher pm3({rule(
      x + y, [](const Match& m) { return UOp::sink({m[x]}); },
      [](const Match& m) { return m[x].op() == Ops::CONST; })});
  EXPECT_EQ(pm3.rewrite(a + c32(5)), UOp::sink({c32(5)}));
}

TEST(UPat, OpEachAndPrefix) {
  UOp a = var("a");
  UPat all_consts = UPat::op_each(Ops::SINK, UPat::cvar("k"));
  EXPECT_TRUE(matches(all_consts, UOp::sink({c32(1), c32(1)})));
  EXPECT_FALSE(matches(all_consts, UOp::sink({c32(1), a})));
  EXPECT_TRUE(matches(all_consts, UOp::sink({})));
  // Every source is captured under the one name, so they must all be the same node.
  EXPECT_FALSE(matches(all_consts, UOp::sink({c32(1), c32(2)})));
  EXPECT_TRUE(
      matches(UPat::op_each(Ops::SINK, UPat::op(Ops::CONST)), UOp::sink({c32(1), c32(2), c32(3)})));

  UOp g = UOp::define_global(dtypes::float32.ptr(), 0);
  UPat idx = UPat::op(Ops::INDEX, {UPat::op(Ops::DEFINE_GLOBAL)}).prefix();
  EXPECT_TRUE(matches(idx, g.index(UOp::const_(dtypes::index, 0))));
  EXPECT_TRUE(
      matches(idx, g.index(UOp::const_(dtypes::index, 0), UOp::const_(dtypes::bool_, true))));
  EXPECT_FALSE(matches(UPat::op(Ops::INDEX, {UPat::op(Ops::CONST)}).prefix(),
                       g.index(UOp::const_(dtypes::index, 0))));
  EXPECT_FALSE(matches(UPat::op(Ops::SINK, {UPat::any(), UPat::any()}).prefix(), UOp::sink({a})));
}

// op_each whose pattern has a choice inside (any order): a later source can need an earlier
// source matched the other way.
TEST(UPat, OpEachBacktracksIntoEarlierSources) {
  UOp a = var("a"), b = var("b"), cc = var("cc");
  PatternMatcher pm(
      {rule(UPat::op_each(Ops::SINK, x * UPat::any()), [](const Match& m) { return m[x]; })});
  // a*b then b*cc: only x = b fits both, found after x = a fails at the second source.
  EXPECT_EQ(pm.rewrite(UOp::sink({a * b, b * cc})), b);
  EXPECT_EQ(pm.rewrite(UOp::sink({a * b, a * cc})), a);
  EXPECT_FALSE(pm.rewrite(UOp::sink({a * b, cc * cc})));
}

// op_each without choices matches sources one after another; when what follows fails, its
// captures are undone so that another order of an enclosing any-order node starts clean.
TEST(UPat, OpEachUndoesCapturesOnFailure) {
  UOp a = var("a"), b = var("b");
  DType v2 = dtypes::int32.vec(2);
  UOp va = UOp::make(Ops::VECTORIZE, v2, {a, a}), vb = UOp::make(Ops::VECTORIZE, v2, {b, b});
  UPat p = UPat::op(Ops::ADD, {UPat::op_each(Ops::VECTORIZE, x), UPat::op(Ops::VECTORIZE, {y, y})})
               .any_order();
  PatternMatcher pm({rule(
      p,
      [](const Match& m) {
        return UOp::sink({m[x], m[y]});
      },
      [b](const Match& m) { return m[x] == b; })});
  // First order: x = a, y = b, refused by the condition; second order: x = b, y = a.
  EXPECT_EQ(pm.rewrite(UOp::make(Ops::ADD, v2, {va, vb})), UOp::sink({b, a}));
  PatternMatcher same({rule(UPat::op_each(Ops::SINK, UPat::op(Ops::NEG, {x})),
                            [](const Match& m) { return m[x]; })});
  EXPECT_EQ(same.rewrite(UOp::sink({a.alu(Ops::NEG), a.alu(Ops::NEG)})), a);
  EXPECT_FALSE(same.rewrite(UOp::sink({a.alu(Ops::NEG), b.alu(Ops::NEG)})));
}

TEST(UPat, MatchExposesRootCapturesAndContext) {
  struct Ctx {
    int calls = 0;
  } ctx;
  UOp a = var("a");
  PatternMatcher pm({rule((x + c).named("sum"), [](const Match& m) {
    ++m.ctx<Ctx>().calls;
    EXPECT_EQ(m.root().op(), Ops::ADD);
    EXPECT_EQ(m[UPat::var("sum")], m.root());  // by name, from a different UPat object
    EXPECT_EQ(m[c].op(), Ops::CONST);
    EXPECT_NE(m.raw_ctx(), nullptr);
    return m[x];
  })});
  EXPECT_EQ(pm.rewrite(a + 4, &ctx), a);
  EXPECT_EQ(ctx.calls, 1);
  PatternMatcher bad({rule(x + c, [](const Match& m) { return m[UPat::var("nope")]; })});
  EXPECT_THROW(bad.rewrite(a + 4), InternalError);
}

TEST(UPat, Conditions) {
  UOp a = var("a");
  PatternMatcher pm({rule(
      x * c, [](const Match& m) { return m[x] + m[x]; },
      [](const Match& m) { return m[c].is_const(2); })});
  EXPECT_EQ(pm.rewrite(a * 2), a + a);
  EXPECT_FALSE(pm.rewrite(a * 3));
  // A template with a condition.
  PatternMatcher pm2({rule(x * c, x + x, [](const Match& m) { return m[c].is_const(2); })});
  EXPECT_EQ(pm2.rewrite(a * 2), a + a);
  EXPECT_FALSE(pm2.rewrite(a * 3));
}

// ------------------------------------------------------------------ templates

TEST(Templates, CapturesAndConstants) {
  UOp a = var("a");
  PatternMatcher pm({
      rule(x + 0, x), rule(x * 2, x + x),
      rule(x - x, UPat::const_(int64_t{0})),  // a bare constant takes the root's dtype
  });
  EXPECT_EQ(pm.rewrite(a + 0), a);
  EXPECT_EQ(pm.rewrite(c32(0) + a), a);
  EXPECT_EQ(pm.rewrite(a * 2), a + a);
  EXPECT_EQ(pm.rewrite(a - a), c32(0));
  UOp f = var("f", dtypes::float32);
  EXPECT_EQ(pm.rewrite(f - f), UOp::const_(dtypes::float32, 0.0));
  EXPECT_EQ(pm.rewrite(f + 0), f);  // const_(0) matches the float 0.0
}

TEST(Templates, ConstantDtypeInference) {
  PatternMatcher pm({
      rule(UPat::op(Ops::NEG, {x}), x * -1),                           // const beside a capture
      rule(UPat::op(Ops::SQRT, {x}), x.lt(UPat::const_(int64_t{5}))),  // comparison: bool out
      rule(UPat::op(Ops::TRUNC, {x}),
           x.lt(UPat::const_(int64_t{3})).where(x, UPat::const_(int64_t{1}))),
      rule(UPat::op(Ops::EXP2, {x}), UPat::const_(true).where(x, UPat::const_(int64_t{0}))),
      rule(UPat::op(Ops::LOG2, {x}), (x + 1).cast(dtypes::float32)),
  });
  UOp i8 = var("b", dtypes::int8);
  EXPECT_EQ(pm.rewrite(i8.alu(Ops::NEG)), i8 * UOp::const_(dtypes::int8, -1));
  UOp r = pm.rewrite(i8.alu(Ops::SQRT));
  EXPECT_EQ(r, i8.lt(UOp::const_(dtypes::int8, 5)));
  EXPECT_EQ(r.dtype(), dtypes::bool_);
  UOp f = var("f", dtypes::float32);
  EXPECT_EQ(pm.rewrite(f.alu(Ops::TRUNC)),
            f.lt(UOp::const_(dtypes::float32, 3.0)).where(f, UOp::const_(dtypes::float32, 1.0)));
  EXPECT_EQ(pm.rewrite(f.alu(Ops::EXP2)),
            UOp::const_(dtypes::bool_, true).where(f, UOp::const_(dtypes::float32, 0.0)));
  UOp ix = var("ix", dtypes::index);
  EXPECT_EQ(pm.rewrite(ix.alu(Ops::LOG2)), (ix + 1).cast(dtypes::float32));
}

TEST(Templates, VectorComparisonIsVectorBool) {
  DType v4 = dtypes::int32.vec(4);
  UOp v = UOp::make(Ops::VECTORIZE, v4, {c32(1), c32(2), c32(3), c32(4)});
  PatternMatcher pm({rule(UPat::op(Ops::MAX, {x, y}), x.lt(y))});
  UOp r = pm.rewrite(v.maximum(v));
  ASSERT_TRUE(r);
  EXPECT_EQ(r.dtype(), dtypes::bool_.vec(4));
  EXPECT_EQ(r, v.lt(v));  // what the builder makes
}

TEST(Templates, UnboundCaptureIsAnError) {
  // op_each met no sources, so `k` was never bound; the template cannot use it.
  PatternMatcher pm({rule(UPat::op_each(Ops::SINK, UPat::cvar("k")), UPat::cvar("k") + 1)});
  EXPECT_THROW(pm.rewrite(UOp::sink({})), InternalError);
  EXPECT_EQ(pm.rewrite(UOp::sink({c32(1), c32(1)})), c32(1) + 1);
}

TEST(Templates, UnknownNameIsAnError) { EXPECT_THROW(rule(x + 0, y), InternalError); }

TEST(Templates, AnyOrderOfTooManySourcesIsAnError) {
  std::vector<UPat> src(kMaxAnyOrder, UPat::any());
  auto fn = [](const Match& m) { return m.root(); };
  EXPECT_NO_THROW(rule(UPat::op(Ops::SINK, src).any_order(), fn));
  src.push_back(UPat::any());
  EXPECT_THROW(rule(UPat::op(Ops::SINK, src).any_order(), fn), InternalError);
}

TEST(Templates, TooManyCapturesIsAnError) {
  std::vector<UPat> src;
  for (int i = 0; i <= kMaxCaptures; ++i) src.push_back(UPat::var(fmt::format("v{}", i)));
  EXPECT_THROW(rule(UPat::op(Ops::SINK, src), [](const Match& m) { return m.root(); }),
               InternalError);
}

// ------------------------------------------------------------------ rules and matchers

TEST(PatternMatcher, RuleNamesAreFileAndLine) {
  const int line = __LINE__ + 1;
  Rule r = rule(x + 0, x);
  EXPECT_EQ(r.name, "test_upat.cpp:" + std::to_string(line));
  Rule named = rule(x * 1, x).named("mul-one");
  EXPECT_EQ(named.name, "mul-one");
  PatternMatcher pm({r, named});
  int which = -1;
  EXPECT_TRUE(pm.rewrite(var("a") * 1, nullptr, &which));
  EXPECT_EQ(which, 1);
  EXPECT_EQ(pm.rule_at(which).name, "mul-one");
  EXPECT_EQ(pm.size(), 2u);
}

TEST(PatternMatcher, FirstRuleInListOrderWins) {
  UOp a = var("a");
  PatternMatcher pm({
      rule(x + c, [](const Match& m) { return m[x]; }),
      rule(x + 0, [](const Match&) { return UOp::sink({}); }),
  });
  int which = -1;
  EXPECT_EQ(pm.rewrite(a + 0, nullptr, &which), a);
  EXPECT_EQ(which, 0);
}

TEST(PatternMatcher, ComposedWithPlusKeepsOrder) {
  UOp a = var("a");
  PatternMatcher first({rule(x + 0, [](const Match&) { return UOp::sink({}); })});
  PatternMatcher second({rule(x + c, [](const Match& m) { return m[x]; })});
  PatternMatcher both = first + second;
  EXPECT_EQ(both.size(), 2u);
  EXPECT_EQ(both.rewrite(a + 0), UOp::sink({}));  // first's rule first
  EXPECT_EQ(both.rewrite(a + 5), a);              // second's rule still there
  EXPECT_EQ((second + first).rewrite(a + 0), a);
  EXPECT_EQ(first.size(), 1u);  // operands unchanged
}

TEST(PatternMatcher, IndexedByRootOp) {
  int add_calls = 0, any_calls = 0;
  PatternMatcher pm({
      rule(UPat::op(Ops::ADD).named("r"),
           [&](const Match&) {
             ++add_calls;
             return UOp();
           }),
      rule(UPat::any().named("r"),
           [&](const Match&) {
             ++any_calls;
             return UOp();
           }),
  });
  UOp a = var("a");
  pm.rewrite(a * 3);
  pm.rewrite(a.maximum(a));
  EXPECT_EQ(add_calls, 0);  // a rule for ADD never runs on MUL
  EXPECT_EQ(any_calls, 2);  // a rule with no op runs on everything
  pm.rewrite(a + 3);
  EXPECT_EQ(add_calls, 1);
  EXPECT_EQ(any_calls, 3);  // a null result lets the next rule try
}

TEST(PatternMatcher, FirstMatchVersusRewrite) {
  UOp a = var("a");
  PatternMatcher pm({
      rule(UPat::op(Ops::ADD).named("r"), [](const Match& m) { return m.root(); }),
      rule(x + c, [](const Match& m) { return m[x]; }),
  });
  // rewrite skips a rule that gives back the node itself; first_match returns it.
  int which = -1;
  EXPECT_EQ(pm.rewrite(a + 1, nullptr, &which), a);
  EXPECT_EQ(which, 1);
  EXPECT_EQ(pm.first_match(a + 1, nullptr, &which), a + 1);
  EXPECT_EQ(which, 0);
  EXPECT_FALSE(pm.rewrite(a * 2));
  EXPECT_FALSE(pm.first_match(a * 2));
  EXPECT_FALSE(PatternMatcher().rewrite(a));
}

}  // namespace
