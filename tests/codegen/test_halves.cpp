// tests/codegen: lower_halves on hand-built UOps, no device — the float32 and bit code it writes
// computes what the reference interpreter defines for float16 and bfloat16 (its own conversions),
// bit for bit: every half bit pattern decoded, float32 values of every exponent rounded (ties,
// subnormals, overflow, NaN, signed zeros), arithmetic rounded after each op, bitcasts; and no
// half type is left for a printer.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "ir/interp.hpp"

namespace vkgrad {
namespace {

bool has_half(const UOp& u) {
  for (const UOp& n : toposort(u)) {
    const DType d = n.dtype().base().scalar();
    if (d == dtypes::float16 || d == dtypes::bfloat16) return true;
  }
  return false;
}

uint32_t bits_of(const ConstValue& v) {
  return std::bit_cast<uint32_t>(static_cast<float>(std::get<double>(v)));
}

// float32 bit patterns: every exponent with mantissas around the half formats' rounding points
// (halfway cases both ways, the last bits set), zeros, infinities and NaNs, both signs.
std::vector<uint32_t> float_patterns() {
  std::vector<uint32_t> out;
  const uint32_t mantissas[] = {0,         1,         0xfffu,    0x1000u,  0x1001u,  0x2000u,
                                0x3000u,   0x7fffu,   0x8000u,   0x8001u,  0x18000u, 0x3fffffu,
                                0x400000u, 0x7fe000u, 0x7ff000u, 0x7fffffu};
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t m : mantissas) out.push_back(sign | (e << 23) | m);
  return out;
}

TEST(Halves, RoundingFloat32ToHalfTypesMatchesTheInterpreter) {
  const UOp bits = UOp::variable("b", 0, 0xffffffffll, dtypes::uint32);
  for (DType h : {dtypes::float16, dtypes::bfloat16}) {
    // float32 -> half -> float32, as bits.
    const UOp g =
        bits.bitcast(dtypes::float32).cast(h).cast(dtypes::float32).bitcast(dtypes::uint32);
    const UOp lowered = lower_halves(g);
    ASSERT_FALSE(has_half(lowered));
    for (uint32_t b : float_patterns()) {
      InterpEnv env;
      env.vars.emplace("b", b);
      const auto want = static_cast<uint32_t>(std::get<int64_t>(evaluate(g, env)));
      const auto got = static_cast<uint32_t>(std::get<int64_t>(evaluate(lowered, env)));
      const bool nan = (want & 0x7fffffffu) > 0x7f800000u;
      if (nan) {
        EXPECT_GT(got & 0x7fffffffu, 0x7f800000u) << h.name() << " " << std::hex << b;
      } else {
        EXPECT_EQ(got, want) << h.name() << " 0x" << std::hex << b;
      }
    }
  }
}

TEST(Halves, EveryHalfBitPatternDecodesAndBitcastsBack) {
  const UOp bits = UOp::variable("h", 0, 0xffff, dtypes::uint16);
  for (DType h : {dtypes::float16, dtypes::bfloat16}) {
    const UOp value = bits.bitcast(h);
    const UOp decoded = value.cast(dtypes::float32);
    const UOp back = value.bitcast(dtypes::uint16);
    const UOp ld = lower_halves(decoded), lb = lower_halves(back);
    ASSERT_FALSE(has_half(ld));
    ASSERT_FALSE(has_half(lb));
    for (int64_t v = 0; v <= 0xffff; ++v) {
      InterpEnv env;
      env.vars.emplace("h", v);
      const uint32_t want = bits_of(evaluate(decoded, env)), got = bits_of(evaluate(ld, env));
      if ((want & 0x7fffffffu) > 0x7f800000u) {
        EXPECT_GT(got & 0x7fffffffu, 0x7f800000u) << h.name() << " " << v;
      } else {
        EXPECT_EQ(got, want) << h.name() << " bits " << v;
      }
      const bool nan = (h == dtypes::float16 ? (v & 0x7fff) > 0x7c00 : (v & 0x7fff) > 0x7f80);
      if (!nan) {
        EXPECT_EQ(std::get<int64_t>(evaluate(lb, env)), v) << h.name() << " " << v;
      }
    }
  }
}

TEST(Halves, ArithmeticRoundsEveryResult) {
  const UOp a = UOp::variable("a", 0, 0xffff, dtypes::uint16).bitcast(dtypes::float16);
  const UOp b = UOp::variable("b", 0, 0xffff, dtypes::uint16).bitcast(dtypes::float16);
  const UOp e = ((a + b) * a).cast(dtypes::float32);
  const UOp l = lower_halves(e);
  ASSERT_FALSE(has_half(l));
  for (int64_t x : {0x3c00, 0x3555, 0x7bff, 0x0001, 0x8400, 0x4248})
    for (int64_t y : {0x3c01, 0x1400, 0x7bff, 0xfbff, 0x0002}) {
      InterpEnv env;
      env.vars.emplace("a", x);
      env.vars.emplace("b", y);
      EXPECT_EQ(bits_of(evaluate(l, env)), bits_of(evaluate(e, env))) << x << " " << y;
    }
}

TEST(Halves, BuffersOfHalvesHoldUint16Bits) {
  // out[i] = in[i] * 2 on float16 buffers: the loads and the store go through uint16 bits.
  const UOp out = UOp::define_global(dtypes::float16.ptr(), 0);
  const UOp in = UOp::define_global(dtypes::float16.ptr(), 1);
  const UOp i = UOp::range(8, 0, AxisType::global);
  const UOp ld =
      UOp::make(Ops::LOAD, dtypes::float16, {UOp::make(Ops::INDEX, in.dtype(), {in, i})});
  const UOp st = UOp::make(Ops::STORE, dtypes::void_,
                           {UOp::make(Ops::INDEX, out.dtype(), {out, i}), ld * 2.0});
  const UOp lowered = lower_halves(UOp::sink({st}));
  EXPECT_FALSE(has_half(lowered));
  int globals = 0;
  for (const UOp& u : toposort(lowered))
    if (u.op() == Ops::DEFINE_GLOBAL) {
      EXPECT_EQ(u.dtype().base(), dtypes::uint16);
      ++globals;
    }
  EXPECT_EQ(globals, 2);
  // A kernel without half types is returned as it is.
  const UOp f = UOp::define_global(dtypes::float32.ptr(), 0);
  const UOp plain = UOp::sink(
      {UOp::make(Ops::STORE, dtypes::void_,
                 {UOp::make(Ops::INDEX, f.dtype(), {f, i}), UOp::const_(dtypes::float32, 1.0)})});
  EXPECT_EQ(lower_halves(plain), plain);
}

}  // namespace
}  // namespace vkgrad
