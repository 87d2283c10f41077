// The reference interpreter: C integer semantics, wrapping per dtype, IEEE floats per dtype,
// casts and bitcasts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/scalar.hpp"

using namespace vkgrad;

namespace {

UOp k(DType d, ConstValue v) { return UOp::const_(d, v); }
UOp i8(int64_t v) { return k(dtypes::int8, v); }
UOp u8(int64_t v) { return k(dtypes::uint8, v); }
UOp i32(int64_t v) { return k(dtypes::int32, v); }
UOp u32(int64_t v) { return k(dtypes::uint32, v); }
UOp i64(int64_t v) { return k(dtypes::int64, v); }
UOp u64(int64_t v) { return k(dtypes::uint64, v); }
UOp f32(double v) { return k(dtypes::float32, v); }
UOp f64(double v) { return k(dtypes::float64, v); }

int64_t ival(const UOp& u, const InterpEnv& env = {}) {
  return std::get<int64_t>(evaluate(u, env));
}
double dval(const UOp& u) { return std::get<double>(evaluate(u)); }
bool bval(const UOp& u) { return std::get<bool>(evaluate(u)); }

TEST(Interp, TruncatingDivisionAndModulo) {
  EXPECT_EQ(ival(i32(-7) / i32(2)), -3);
  EXPECT_EQ(ival(i32(-7) % i32(2)), -1);
  EXPECT_EQ(ival(i32(7) % i32(-2)), 1);
  EXPECT_EQ(ival(i32(7) / i32(-2)), -3);
  EXPECT_EQ(ival(i32(-7) / i32(-2)), 3);
  EXPECT_EQ(ival(i32(-7) % i32(-2)), -1);
  EXPECT_EQ(ival(i32(6) / i32(3)), 2);
  EXPECT_EQ(ival(i32(INT32_MIN) / i32(-1)), INT32_MIN);  // wraps
  EXPECT_EQ(ival(i32(INT32_MIN) % i32(-1)), 0);
  EXPECT_EQ(ival(i64(INT64_MIN) / i64(-1)), INT64_MIN);
  EXPECT_EQ(ival(i64(INT64_MIN) % i64(-1)), 0);
  EXPECT_EQ(ival(i8(-128) / i8(-1)), -128);
  // Unsigned division sees the unsigned value.
  EXPECT_EQ(ival(u32(0xFFFFFFFF) / u32(2)), 0x7FFFFFFF);
  EXPECT_EQ(ival(u64(-1) / u64(2)), INT64_MAX);
  EXPECT_EQ(ival(u64(-1) % u64(10)), static_cast<int64_t>(UINT64_MAX % 10));
  EXPECT_EQ(ival(u8(200) / u8(3)), 66);
}

TEST(Interp, DivisionByZeroThrows) {
  EXPECT_THROW(evaluate(i32(1) / i32(0)), Error);
  EXPECT_THROW(evaluate(i32(1) % i32(0)), Error);
  EXPECT_THROW(evaluate(u8(1) / u8(0)), Error);
  EXPECT_THROW(evaluate(k(dtypes::index, 5) % k(dtypes::index, 0)), Error);
  // Float division by zero is IEEE, not an error.
  EXPECT_EQ(dval(f32(1.0) / f32(0.0)), INFINITY);
}

TEST(Interp, WrapsPerDtype) {
  EXPECT_EQ(ival(i8(127) + i8(1)), -128);
  EXPECT_EQ(ival(u8(0) - u8(1)), 255);
  EXPECT_EQ(ival(u8(200) + u8(100)), 44);
  EXPECT_EQ(ival(i32(INT32_MAX) + i32(1)), INT32_MIN);
  EXPECT_EQ(ival(i32(INT32_MIN) - i32(1)), INT32_MAX);
  EXPECT_EQ(ival(i32(65536) * i32(65536)), 0);
  EXPECT_EQ(ival(i32(46341) * i32(46341)), static_cast<int32_t>(2147488281u));
  EXPECT_EQ(ival(k(dtypes::int16, 32767) + k(dtypes::int16, 1)), -32768);
  EXPECT_EQ(ival(k(dtypes::uint16, 0) - k(dtypes::uint16, 1)), 65535);
  EXPECT_EQ(ival(u32(0) - u32(1)), 4294967295LL);
  EXPECT_EQ(ival(i64(INT64_MAX) + i64(1)), INT64_MIN);
  EXPECT_EQ(ival(u64(-1) + u64(1)), 0);
  EXPECT_EQ(ival(i8(-128).alu(Ops::NEG)), -128);
  EXPECT_EQ(ival(-i8(5)), -5);
}

TEST(Interp, Shifts) {
  EXPECT_EQ(ival(i32(1) << i32(4)), 16);
  EXPECT_EQ(ival(i32(1) << i32(31)), INT32_MIN);
  EXPECT_EQ(ival(i8(1) << i8(7)), -128);
  EXPECT_EQ(ival(u8(255) << u8(1)), 254);
  EXPECT_EQ(ival(i32(-16) >> i32(2)), -4);  // arithmetic for signed
  EXPECT_EQ(ival(i8(-128) >> i8(1)), -64);
  EXPECT_EQ(ival(u8(255) >> u8(1)), 127);  // logical for unsigned
  EXPECT_EQ(ival(u32(0x80000000) >> u32(31)), 1);
  EXPECT_EQ(ival(u64(-1) >> u64(63)), 1);
  EXPECT_EQ(ival(i64(-1) >> i64(63)), -1);
}

TEST(Interp, Comparisons) {
  EXPECT_TRUE(bval(i32(-1).lt(i32(0))));
  EXPECT_FALSE(bval(u32(0xFFFFFFFF).lt(u32(1))));  // unsigned: 4294967295 < 1 is false
  EXPECT_FALSE(bval(u64(-1).lt(u64(1))));
  EXPECT_TRUE(bval(u64(1).lt(u64(-1))));
  EXPECT_TRUE(bval(u8(255).gt(u8(1))));
  EXPECT_TRUE(bval(i8(-1).lt(i8(1))));
  EXPECT_TRUE(bval(i32(3).eq(i32(3))));
  EXPECT_TRUE(bval(i32(3).ne(i32(4))));
  EXPECT_TRUE(bval(i32(3).le(i32(3))));
  EXPECT_FALSE(bval(i32(3).ge(i32(4))));
  UOp t = k(dtypes::bool_, true), f = k(dtypes::bool_, false);
  EXPECT_TRUE(bval(f.lt(t)));
  EXPECT_FALSE(bval(t.lt(t)));
  EXPECT_TRUE(bval(t.ne(f)));
  EXPECT_FALSE(bval(t.logical_not()));
  EXPECT_FALSE(bval(t & f));
  EXPECT_TRUE(bval(t | f));
  EXPECT_TRUE(bval(t ^ f));
  EXPECT_TRUE(bval(t.maximum(f)));
  // Sums and products of bools (the spec allows them; 1+1 is still true).
  EXPECT_TRUE(bval(t + t));
  EXPECT_TRUE(bval(t + f));
  EXPECT_FALSE(bval(f + f));
  EXPECT_TRUE(bval(t * t));
  EXPECT_FALSE(bval(t * f));
}

TEST(Interp, Float32Rounding) {
  double got = dval(f32(0.1) + f32(0.2));
  EXPECT_EQ(got, static_cast<double>(0.1f + 0.2f));
  EXPECT_NE(got, 0.1 + 0.2);
  EXPECT_EQ(dval(f64(0.1) + f64(0.2)), 0.1 + 0.2);
  EXPECT_EQ(dval(f32(1.0) / f32(3.0)), static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(dval(f32(16777216.0) + f32(1.0)), 16777216.0);  // 2^24 + 1 rounds to even
  EXPECT_EQ(dval(f32(3.0e38) * f32(10.0)), INFINITY);       // overflows float32, not float64
  EXPECT_EQ(dval(f32(2.0).alu(Ops::SQRT)), static_cast<double>(std::sqrt(2.0f)));
  EXPECT_EQ(dval(f32(2.5).alu(Ops::TRUNC)), 2.0);
  EXPECT_EQ(dval(f32(4.0).alu(Ops::RECIPROCAL)), 0.25);
  EXPECT_EQ(dval(f32(3.0).alu(Ops::EXP2)), 8.0);
  EXPECT_EQ(dval(f32(8.0).alu(Ops::LOG2)), 3.0);
  UOp h = k(dtypes::float16, 1.0), e = k(dtypes::float16, std::ldexp(1.0, -11));
  EXPECT_EQ(dval(h + e), 1.0);  // 1 + 2^-11 ties to even in float16
  EXPECT_EQ(dval(k(dtypes::float16, 60000.0) * k(dtypes::float16, 2.0)), INFINITY);
  EXPECT_EQ(dval(k(dtypes::bfloat16, 1.0) + k(dtypes::bfloat16, std::ldexp(1.0, -8))), 1.0);
}

TEST(Interp, NanAndInfPropagate) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(dval(f32(0.0) / f32(0.0))));
  EXPECT_TRUE(std::isnan(dval(f32(nan) + f32(1.0))));
  EXPECT_TRUE(std::isnan(dval(f32(nan) * f32(0.0))));
  EXPECT_TRUE(std::isnan(dval(f32(INFINITY) - f32(INFINITY))));
  EXPECT_TRUE(std::isnan(dval(f32(nan).maximum(f32(1.0)))));
  EXPECT_TRUE(std::isnan(dval(f32(1.0).maximum(f32(nan)))));
  EXPECT_TRUE(std::isnan(dval(f32(-1.0).alu(Ops::SQRT))));
  EXPECT_EQ(dval(f32(INFINITY) + f32(1.0)), INFINITY);
  EXPECT_EQ(dval(f32(-1.0) / f32(0.0)), -INFINITY);
  EXPECT_EQ(dval(f32(0.0).alu(Ops::LOG2)), -INFINITY);
  EXPECT_FALSE(bval(f32(nan).lt(f32(1.0))));
  EXPECT_FALSE(bval(f32(1.0).lt(f32(nan))));
  EXPECT_TRUE(bval(f32(nan).ne(f32(nan))));
  EXPECT_FALSE(bval(f32(nan).eq(f32(nan))));
  EXPECT_TRUE(bval(f32(-0.0).eq(f32(0.0))));
  EXPECT_EQ(dval(f32(3.0).maximum(f32(-2.0))), 3.0);
}

TEST(Interp, Casts) {
  EXPECT_EQ(ival(f32(-3.7).cast(dtypes::int32)), -3);  // truncation
  EXPECT_EQ(ival(f32(3.7).cast(dtypes::int32)), 3);
  EXPECT_EQ(ival(f32(-0.5).cast(dtypes::int32)), 0);
  EXPECT_EQ(ival(f32(300.0).cast(dtypes::uint8)), 255);  // out of range saturates
  EXPECT_EQ(ival(i32(300).cast(dtypes::int8)), 44);      // integers wrap
  EXPECT_EQ(ival(i32(-1).cast(dtypes::uint8)), 255);
  EXPECT_EQ(ival(i32(-1).cast(dtypes::uint32)), 4294967295LL);
  EXPECT_EQ(ival(i32(-1).cast(dtypes::uint64)), -1);  // all ones
  EXPECT_EQ(ival(u32(4294967295LL).cast(dtypes::int64)), 4294967295LL);
  EXPECT_EQ(ival(u8(255).cast(dtypes::int8)), -1);
  EXPECT_TRUE(bval(i32(5).cast(dtypes::bool_)));
  EXPECT_FALSE(bval(i32(0).cast(dtypes::bool_)));
  EXPECT_TRUE(bval(i32(256).cast(dtypes::bool_)));  // != 0, not truncated to a byte
  EXPECT_TRUE(bval(f32(0.25).cast(dtypes::bool_)));
  EXPECT_EQ(ival(k(dtypes::bool_, true).cast(dtypes::int32)), 1);
  EXPECT_EQ(dval(i32(16777217).cast(dtypes::float32)), 16777216.0);
  EXPECT_EQ(dval(f64(0.1).cast(dtypes::float32)), static_cast<double>(0.1f));
  EXPECT_EQ(dval(f64(1e300).cast(dtypes::float32)), INFINITY);
  EXPECT_EQ(dval(f32(65520.0).cast(dtypes::float16)), INFINITY);
  EXPECT_EQ(dval(i32(2049).cast(dtypes::float16)), 2048.0);
}

TEST(Interp, CastFromLargeUnsigned) {
  // uint64 values above INT64_MAX are stored as their bits; a cast must see the unsigned value.
  EXPECT_EQ(dval(u64(-1).cast(dtypes::float32)),
            static_cast<double>(static_cast<float>(UINT64_MAX)));
  EXPECT_EQ(dval(u64(-1).cast(dtypes::float64)), static_cast<double>(UINT64_MAX));
  EXPECT_EQ(dval(u64(INT64_MIN).cast(dtypes::float64)), std::ldexp(1.0, 63));
  EXPECT_EQ(ival(u64(-1).cast(dtypes::int64)), -1);
  EXPECT_EQ(ival(u64(-1).cast(dtypes::uint32)), 4294967295LL);
  EXPECT_TRUE(bval(u64(INT64_MIN).cast(dtypes::bool_)));
  EXPECT_EQ(dval(u32(4294967295LL).cast(dtypes::float64)), 4294967295.0);
}

TEST(Interp, Bitcast) {
  EXPECT_EQ(ival(f32(1.0).bitcast(dtypes::int32)), 0x3f800000);
  EXPECT_EQ(ival(f32(-2.0).bitcast(dtypes::int32)), static_cast<int32_t>(0xc0000000u));
  EXPECT_EQ(ival(f32(-2.0).bitcast(dtypes::uint32)), 0xc0000000LL);
  EXPECT_EQ(dval(i32(0x40490fdb).bitcast(dtypes::float32)),
            static_cast<double>(std::bit_cast<float>(0x40490fdbu)));
  EXPECT_EQ(dval(i32(0x3f800000).bitcast(dtypes::float32)), 1.0);
  EXPECT_EQ(ival(f64(1.0).bitcast(dtypes::int64)), 0x3ff0000000000000LL);
  EXPECT_EQ(ival(k(dtypes::float16, 1.0).bitcast(dtypes::int16)), 0x3c00);
  EXPECT_EQ(ival(k(dtypes::float16, -2.0).bitcast(dtypes::uint16)), 0xc000);
  EXPECT_EQ(dval(k(dtypes::uint16, 0x3c00).bitcast(dtypes::float16)), 1.0);
  EXPECT_EQ(ival(k(dtypes::bfloat16, 1.0).bitcast(dtypes::uint16)), 0x3f80);
  EXPECT_EQ(ival(i8(-1).bitcast(dtypes::uint8)), 255);
  EXPECT_EQ(ival(u8(255).bitcast(dtypes::int8)), -1);
  EXPECT_TRUE(std::isnan(dval(i32(0x7fc00000).bitcast(dtypes::float32))));
  // Round trip of every bit pattern class through float32.
  for (uint32_t b : {0u, 0x80000000u, 0x00000001u, 0x7f7fffffu, 0x7f800000u, 0xff800000u}) {
    UOp back = i32(static_cast<int32_t>(b)).bitcast(dtypes::float32).bitcast(dtypes::int32);
    EXPECT_EQ(ival(back), static_cast<int32_t>(b)) << std::hex << b;
  }
  EXPECT_THROW(evaluate(i32(1).bitcast(dtypes::int64)), Error);
}

TEST(Interp, WhereAndMax) {
  UOp t = k(dtypes::bool_, true), f = k(dtypes::bool_, false);
  EXPECT_EQ(ival(t.where(i32(1), i32(2))), 1);
  EXPECT_EQ(ival(f.where(i32(1), i32(2))), 2);
  EXPECT_EQ(dval(f.where(f32(1.0), f32(2.5))), 2.5);
  EXPECT_EQ(ival(i32(-3).maximum(i32(2))), 2);
  EXPECT_EQ(ival(u32(0xFFFFFFFF).maximum(u32(2))), 0xFFFFFFFFLL);  // unsigned
  EXPECT_EQ(ival(u64(-1).maximum(u64(2))), -1);
  EXPECT_EQ(ival(i8(-128).maximum(i8(-1))), -1);
  EXPECT_EQ(ival(i32(-3).minimum(i32(2))), -3);
  // minimum at the ends of the range, where negating would wrap
  EXPECT_EQ(ival(u8(0).minimum(u8(5))), 0);
  EXPECT_EQ(ival(u8(255).minimum(u8(5))), 5);
  EXPECT_EQ(ival(u32(0xFFFFFFFF).minimum(u32(3))), 3);
  EXPECT_EQ(ival(u64(-1).minimum(u64(0))), 0);
  EXPECT_EQ(ival(i32(INT32_MIN).minimum(i32(0))), INT32_MIN);
  EXPECT_EQ(ival(i8(-128).minimum(i8(127))), -128);
  EXPECT_EQ(ival(k(dtypes::index, -5).minimum(k(dtypes::index, 7))), -5);
  EXPECT_EQ(dval(f32(-0.5).minimum(f32(2.0))), -0.5);
  EXPECT_FALSE(bval(k(dtypes::bool_, true).minimum(k(dtypes::bool_, false))));
  EXPECT_EQ(ival(UOp::make(Ops::MULACC, dtypes::int32, {i32(3), i32(4), i32(5)})), 17);
  EXPECT_EQ(dval(UOp::make(Ops::MULACC, dtypes::float32, {f32(3), f32(4), f32(0.5)})), 12.5);
  EXPECT_EQ(dval(UOp::make(Ops::POW, dtypes::float32, {f32(2), f32(10)})), 1024.0);
  EXPECT_EQ(ival(UOp::make(Ops::SUB, dtypes::uint8, {u8(1), u8(2)})), 255);
  EXPECT_EQ(ival(i32(6) & i32(3)), 2);
  EXPECT_EQ(ival(i32(6) | i32(3)), 7);
  EXPECT_EQ(ival(i32(6) ^ i32(3)), 5);
  EXPECT_EQ(ival(i8(-1) ^ i8(1)), -2);
}

TEST(Interp, VariablesRangesAndErrors) {
  UOp x = UOp::variable("x", 0, 100), r = UOp::range(16, 3);
  InterpEnv env;
  env.vars["x"] = 7;
  env.ranges[3] = 5;
  EXPECT_EQ(ival(x * 16 + r, env), 117);
  EXPECT_EQ(
      ival(UOp::special("gidx0", UOp::const_(dtypes::index, 4)) * 2, InterpEnv{{{"gidx0", 3}}, {}}),
      6);
  EXPECT_EQ(ival(UOp::variable("n", 0, 9).bind(4) + 1), 5);  // a bound variable needs no env
  UOp v8 = UOp::variable("b", -128, 127, dtypes::int8);
  EXPECT_EQ(ival(v8, InterpEnv{{{"b", 200}}, {}}), -56);  // wrapped to the dtype
  EXPECT_THROW(evaluate(x), Error);                       // no value for x
  EXPECT_THROW(evaluate(r), Error);                       // no value for the range
  EXPECT_THROW(evaluate(UOp::define_global(dtypes::float32.ptr(), 0).index(r).load(), env), Error);
  EXPECT_THROW(evaluate(f32(1.0) % f32(2.0)), Error);  // MOD is not defined on floats
}

TEST(Interp, ExecAluDirectly) {
  std::vector<ConstValue> v = {int64_t{-7}, int64_t{2}};
  std::vector<DType> d = {dtypes::int32, dtypes::int32};
  EXPECT_EQ(std::get<int64_t>(exec_alu(Ops::IDIV, dtypes::int32, v, d)), -3);
  EXPECT_EQ(std::get<bool>(exec_alu(Ops::CMPLT, dtypes::bool_, v, d)), true);
  std::vector<ConstValue> one = {2.5};
  std::vector<DType> fd = {dtypes::float32};
  EXPECT_EQ(std::get<int64_t>(exec_alu(Ops::CAST, dtypes::int8, one, fd)), 2);
}

}  // namespace
