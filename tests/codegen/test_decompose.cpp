// tests/codegen: the decompose pass on hand-built UOps, no device — the guarded forms compute
// what the reference interpreter defines (shifts at every amount; division except by zero, where
// the interpreter refuses and the guarded form gives 0; float max), and what needs no guard is
// left alone.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "ir/interp.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

int64_t eval_int(const UOp& u) { return std::get<int64_t>(evaluate(u)); }

const Target kTarget = full_target();

TEST(Decompose, ShiftsMatchTheInterpreterAtEveryAmount) {
  for (DType d : {dtypes::int8, dtypes::uint8, dtypes::int32, dtypes::uint32, dtypes::int64}) {
    const int64_t bits = d.itemsize() * 8;
    for (int64_t a : {int64_t{1}, int64_t{-7}, int64_t{100}})
      for (int64_t s = -2; s <= bits + 3; ++s)
        for (Ops op : {Ops::SHL, Ops::SHR}) {
          const UOp e = UOp::const_(d, a).alu(op, UOp::variable("s", -2, bits + 3, d));
          const UOp g = decompose(e, kTarget);
          ASSERT_NE(g, e);
          InterpEnv env;
          env.vars.emplace("s", s);
          EXPECT_EQ(std::get<int64_t>(evaluate(g, env)),
                    std::get<int64_t>(evaluate(UOp::const_(d, a).alu(op, UOp::const_(d, s)))))
              << d.name() << " " << a << (op == Ops::SHL ? " << " : " >> ") << s;
        }
  }
}

TEST(Decompose, DivisionByZeroGivesZeroAndMinByMinusOneWraps) {
  const DType d = dtypes::int32;
  const UOp b = UOp::variable("b", -3, 3, d);
  for (int64_t a : {int64_t{7}, int64_t{-7}, int64_t{INT32_MIN}})
    for (int64_t bv = -3; bv <= 3; ++bv)
      for (Ops op : {Ops::IDIV, Ops::MOD}) {
        const UOp g = decompose(UOp::const_(d, a).alu(op, b), kTarget);
        InterpEnv env;
        env.vars.emplace("b", bv);
        const int64_t want = bv == 0 ? 0 : eval_int(UOp::const_(d, a).alu(op, UOp::const_(d, bv)));
        EXPECT_EQ(std::get<int64_t>(evaluate(g, env)), want)
            << a << " " << op_name(op) << " " << bv;
      }
}

TEST(Decompose, SafeOperandsAndIndexMathAreLeftAlone) {
  const UOp x = UOp::variable("x", -100, 100, dtypes::int32);
  for (const UOp& e : {x.alu(Ops::IDIV, UOp::const_(dtypes::int32, int64_t{3})),
                       x.alu(Ops::MOD, UOp::const_(dtypes::int32, int64_t{-5})),
                       x.alu(Ops::SHL, UOp::const_(dtypes::int32, int64_t{31})),
                       x.alu(Ops::SHR, x & UOp::const_(dtypes::int32, int64_t{31})),
                       x.maximum(x + UOp::const_(dtypes::int32, int64_t{1})),
                       UOp::variable("i", 0, 100).alu(Ops::IDIV, UOp::variable("j", 0, 7))})
    EXPECT_EQ(decompose(e, kTarget), e);
  // A divisor of -1 is guarded on signed types, not on unsigned ones.
  EXPECT_NE(decompose(x.alu(Ops::IDIV, UOp::const_(dtypes::int32, int64_t{-1})), kTarget),
            x.alu(Ops::IDIV, UOp::const_(dtypes::int32, int64_t{-1})));
  // Decomposing twice changes nothing more.
  const UOp once = decompose(x.alu(Ops::SHR, x), kTarget);
  EXPECT_EQ(decompose(once, kTarget), once);
}

// max(a, b) of floats is NaN when either is, and otherwise the larger (b where they are equal,
// so max(-0, +0) is +0 and max(+0, -0) is -0), as the interpreter's MAX.
TEST(Decompose, FloatMaxPropagatesNaN) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> values = {nan, -inf, -1.5, -0.0, 0.0, 2.0, inf};
  for (DType d : {dtypes::float32, dtypes::float64, dtypes::float16})
    for (double a : values)
      for (double b : values) {
        const UOp e = UOp::const_(d, a).maximum(UOp::const_(d, b));
        const UOp g = decompose(e, kTarget);
        ASSERT_NE(g, e);
        const double got = std::get<double>(evaluate(g));
        if (std::isnan(a) || std::isnan(b)) {
          EXPECT_TRUE(std::isnan(got)) << d.name() << " max(" << a << ", " << b << ")";
          continue;
        }
        const double want = a > b ? a : b;
        EXPECT_EQ(got, want) << d.name() << " max(" << a << ", " << b << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(want))
            << d.name() << " max(" << a << ", " << b << ")";
      }
}

// On a target whose float32 division is not correctly rounded, the refined quotient is: every
// pair of a grid of magnitudes and signs (with zeros, infinities, NaN, subnormals and the ends of
// the range), and random pairs, against the host's division, bit for bit (quotients beyond
// 2^115 within 2 ULP).
TEST(Decompose, RefinedFloatDivisionIsCorrectlyRounded) {
  Target inexact = kTarget;
  inexact.exact_division = false;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f,          -0.0f,  inf,      -inf,
                               std::nanf(""), 1e-45f, 1.1e-38f, std::numeric_limits<float>::max(),
                               3e38f,         1e-30f};
  for (float v : {1.0f, 3.0f, 7.0f, 100.0f, 0.1f, 1.0f / 3.0f, 2.7e10f, 5e-20f, 9.9e35f})
    for (float sign : {1.0f, -1.0f}) values.push_back(sign * v);
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  std::vector<std::pair<float, float>> pairs;
  for (float a : values)
    for (float b : values) pairs.emplace_back(a, b);
  for (int i = 0; i < 4000; ++i) {
    // Random finite floats with exponents within 2^-60 .. 2^60.
    auto random = [&] {
      const uint32_t bits = (next() & 0x807fffffu) | ((67u + next() % 120u) << 23);
      return std::bit_cast<float>(bits);
    };
    pairs.emplace_back(random(), random());
  }
  int refined = 0;
  for (const auto& [a, b] : pairs) {
    const UOp e = UOp::const_(dtypes::float32, a) / UOp::const_(dtypes::float32, b);
    const UOp g = decompose(e, inexact);
    ASSERT_NE(g, e);
    EXPECT_EQ(decompose(e, kTarget), e);  // a correctly rounding target keeps the division
    const float got = static_cast<float>(std::get<double>(evaluate(g)));
    const float want = a / b;
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << a << " / " << b;
      continue;
    }
    if (std::fabs(want) > 0x1p115f && !std::isinf(want)) {
      // Beyond the split's range the first guess stays: within 2 ULP.
      EXPECT_LE(std::fabs(got - want), 2 * (std::nextafter(std::fabs(want), inf) - std::fabs(want)))
          << std::hexfloat << a << " / " << b << " = " << got << ", want " << want;
      continue;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
        << std::hexfloat << a << " / " << b << " = " << got << ", want " << want;
    const float approx = a * (1.0f / b);
    refined += approx != want;
  }
  EXPECT_GT(refined, 100);  // the pairs exercise the correction, not only the first guess
}

// Only float32 sums of products fuse, and only on a target that says so; the printed kernel
// steps its accumulators with fma and folds them as a sum.
TEST(Decompose, ProductSumsFuseIntoMultiplyAddsWhereTheTargetSaysSo) {
  auto reduce_args = [](const UOp& k) {
    std::vector<Ops> out;
    for (const UOp& u : toposort(k))
      if (u.op() == Ops::REDUCE) out.push_back(u.arg_as<Ops>());
    return out;
  };
  Target fused = kTarget, plain = kTarget;
  fused.fused_multiply_add = true;
  plain.fused_multiply_add = false;
  const UOp matmul = scheduled_kernel(input({16, 32}).matmul(input({32, 8})));
  EXPECT_EQ(reduce_args(fuse_multiply_add(matmul, fused)), std::vector<Ops>{Ops::MULACC});
  EXPECT_EQ(fuse_multiply_add(matmul, plain), matmul);
  const std::pair<const char*, Tensor> others[] = {
      {"a sum", input({16, 32}).sum(1)},
      {"a max of products", (input({16, 32}) * input({16, 32})).max(1)},
      {"a float64 sum of products", (input({16, 32}).cast(dtypes::float64) * 2.0).sum(1)}};
  for (const auto& [what, t] : others)
    EXPECT_NE(reduce_args(fuse_multiply_add(scheduled_kernel(t), fused)),
              std::vector<Ops>{Ops::MULACC})
        << what;
  const std::string src = codegen(matmul, {}, fused).source;
  EXPECT_NE(src.find("fma("), std::string::npos) << src;
  EXPECT_EQ(codegen(matmul, {}, plain).source.find("fma("), std::string::npos);
}

}  // namespace
}  // namespace vkgrad
