// bounds.cpp: vmin/vmax must hold every value a node can take (checked exhaustively over small
// ranges for every integer op), and are tight where that is cheap.
#include "check.hpp"

using namespace vkgrad;
using namespace vkgrad::test;

namespace {

struct Span {
  int64_t lo, hi;
};

::testing::AssertionResult bounded(const UOp& e, int64_t lo, int64_t hi) {
  if (e.vmin() == lo && e.vmax() == hi) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << render(e) << " has bounds [" << e.vmin() << ", "
                                       << e.vmax() << "], expected [" << lo << ", " << hi << "]";
}

// Every value of `e` over every assignment lies within [vmin, vmax].
::testing::AssertionResult conservative(const UOp& e) {
  for (const InterpEnv& env : assignments(variables_of({e}))) {
    int64_t v = 0;
    try {
      v = as_int(evaluate(e, env));
    } catch (const Error&) {
      continue;  // division by zero
    }
    if (v < e.vmin() || v > e.vmax())
      return ::testing::AssertionFailure()
             << render(e) << " = " << v << " at " << show(env) << " is outside [" << e.vmin()
             << ", " << e.vmax() << "]";
  }
  return ::testing::AssertionSuccess();
}

TEST(Bounds, AreConservativeForEveryBinaryOp) {
  const std::vector<Span> spans = {{-6, -6}, {-6, -1}, {-4, 3}, {-1, 1}, {0, 0},
                                   {0, 5},   {1, 1},   {2, 6},  {-3, 0}, {3, 7}};
  const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::IDIV,  Ops::MOD,   Ops::MAX,
                     Ops::AND, Ops::OR,  Ops::XOR, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
  for (DType dt : {dtypes::index, dtypes::int32, dtypes::int8})
    for (const Span& p : spans)
      for (const Span& q : spans)
        for (Ops op : ops) {
          UOp a = var("a", p.lo, p.hi, dt), b = var("b", q.lo, q.hi, dt);
          EXPECT_TRUE(conservative(UOp::make(op, is_comparison(op) ? dtypes::bool_ : dt, {a, b})));
          EXPECT_TRUE(conservative(UOp::make(op, is_comparison(op) ? dtypes::bool_ : dt, {a, a})));
        }
}

TEST(Bounds, AreConservativeForShiftsCastsAndWhere) {
  UOp a = var("a", -6, 6, dtypes::int32), s = var("s", 0, 3, dtypes::int32);
  UOp k = var("k", 0, 40, dtypes::int32);
  EXPECT_TRUE(conservative(a << s));
  EXPECT_TRUE(conservative(k >> s));
  EXPECT_TRUE(conservative(a.cast(dtypes::int8)));
  EXPECT_TRUE(conservative((k * 10).cast(dtypes::int8)));  // wraps: full int8
  EXPECT_TRUE(conservative(a.cast(dtypes::bool_)));
  EXPECT_TRUE(conservative(a.lt(s).where(a, k)));
  EXPECT_TRUE(conservative(UOp::make(Ops::NEG, dtypes::int32, {a})));
}

TEST(Bounds, Arithmetic) {
  UOp a = var("a", -3, 5), b = var("b", 2, 4);
  EXPECT_TRUE(bounded(a + b, -1, 9));
  EXPECT_TRUE(bounded(a * b, -12, 20));
  EXPECT_TRUE(bounded(a * -2, -10, 6));
  EXPECT_TRUE(bounded(a / b, -1, 2));  // truncating corners
  EXPECT_TRUE(bounded(a.maximum(b), 2, 5));
  EXPECT_TRUE(bounded(a.lt(b).where(a, b), -3, 5));
  EXPECT_TRUE(bounded(UOp::range(8, 0), 0, 7));
  EXPECT_TRUE(bounded(UOp::special("gidx0", idx(16)), 0, 15));
}

TEST(Bounds, ModTakesTheDividendsSign) {
  UOp n = var("n", -20, 20), x = var("x", 0, 20);
  EXPECT_TRUE(bounded(n % 4, -3, 3));
  EXPECT_TRUE(bounded(x % 4, 0, 3));
  EXPECT_TRUE(bounded(var("m", -20, -1) % 4, -3, 0));
  EXPECT_TRUE(bounded(n % var("d", -4, -2), -3, 3));
}

TEST(Bounds, TightWhereCheap) {
  UOp a = var("a", -3, 2), s = var("s", -3, 3);
  EXPECT_TRUE(bounded(a * a, 0, 9));   // a square is nonnegative
  EXPECT_TRUE(bounded(s % 5, -3, 3));  // |s| < 5: s % 5 is s
  EXPECT_TRUE(bounded(a.lt(a), 0, 0));
  EXPECT_TRUE(bounded(a.ne(a), 0, 0));
  EXPECT_TRUE(bounded(a.eq(a), 1, 1));
}

TEST(Bounds, ComparisonsOfDisjointRanges) {
  UOp a = var("a", 0, 4), b = var("b", 5, 9);
  EXPECT_TRUE(bounded(a.lt(b), 1, 1));
  EXPECT_TRUE(bounded(b.lt(a), 0, 0));
  EXPECT_TRUE(bounded(a.ne(b), 1, 1));
  EXPECT_TRUE(bounded(a.eq(b), 0, 0));
}

TEST(Bounds, OverflowWidensToTheDtype) {
  UOp a = var("a", 0, 100000, dtypes::int32);
  EXPECT_TRUE(bounded(a * a, -2147483648LL, 2147483647));
  EXPECT_TRUE(bounded(a * 10, 0, 1000000));
}

TEST(Bounds, FloatsAreUnknown) {
  UOp f = var("f", 0, 1, dtypes::float32);
  EXPECT_EQ(f.vmin(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.vmax(), std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(bounded(f.lt(f32(2.0)), 0, 1));
  EXPECT_TRUE(bounded(f.ne(f), 0, 1));  // NaN != NaN
  EXPECT_TRUE(bounded(f.lt(f), 0, 0));  // but never NaN < NaN
}

TEST(Bounds, Uint64BeyondInt64IsAnyPattern) {
  // x - 1 wraps to 2^64 - 1 (int64 pattern -1) at x = 0: no int64 range holds it but the full one
  UOp x = var("x", 0, 10, dtypes::uint64);
  UOp e = x + UOp::const_(dtypes::uint64, int64_t{-1});
  EXPECT_TRUE(conservative(e));
  EXPECT_TRUE(bounded(e, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  EXPECT_TRUE(bounded(e.lt(UOp::const_(dtypes::uint64, 100)), 0, 1));
  EXPECT_TRUE(conservative(e.maximum(UOp::const_(dtypes::uint64, 5))));
  EXPECT_TRUE(conservative(e / UOp::const_(dtypes::uint64, 3)));
  EXPECT_TRUE(bounded(UOp::const_(dtypes::uint64, int64_t{-1}), std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max()));
  UOp u32 = var("u", 0, 10, dtypes::uint32);
  EXPECT_TRUE(bounded(u32 + UOp::const_(dtypes::uint32, int64_t{-1}), 0, 4294967295LL));
}

}  // namespace
