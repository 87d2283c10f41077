// DType names, sizes, the promotion lattice, and the scalar conversions of scalar.hpp
// (float16/bfloat16 rounding, integer wrapping, C-cast conversion of constants).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>
#include <vector>
#include <vkgrad/dtype.hpp>
#include <vkgrad/error.hpp>

#include "ir/scalar.hpp"

using namespace vkgrad;

namespace {

const std::vector<DType> kScalars = {
    dtypes::bool_,    dtypes::int8,    dtypes::uint8,   dtypes::int16,  dtypes::uint16,
    dtypes::int32,    dtypes::uint32,  dtypes::int64,   dtypes::uint64, dtypes::float16,
    dtypes::bfloat16, dtypes::float32, dtypes::float64,
};

// ------------------------------------------------------------------ names and sizes

TEST(DType, ScalarNamesAndSizes) {
  struct Case {
    DType d;
    const char* name;
    int itemsize;
  };
  const Case cases[] = {
      {dtypes::void_, "void", 0},      {dtypes::bool_, "bool", 1},
      {dtypes::int8, "int8", 1},       {dtypes::uint8, "uint8", 1},
      {dtypes::int16, "int16", 2},     {dtypes::uint16, "uint16", 2},
      {dtypes::int32, "int32", 4},     {dtypes::uint32, "uint32", 4},
      {dtypes::int64, "int64", 8},     {dtypes::uint64, "uint64", 8},
      {dtypes::float16, "float16", 2}, {dtypes::bfloat16, "bfloat16", 2},
      {dtypes::float32, "float32", 4}, {dtypes::float64, "float64", 8},
      {dtypes::index, "index", 8},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.d.name(), c.name);
    EXPECT_EQ(c.d.itemsize(), c.itemsize) << c.name;
    EXPECT_EQ(c.d.count(), 1);
    EXPECT_FALSE(c.d.is_ptr());
  }
  EXPECT_EQ(dtypes::default_float, dtypes::float32);
  EXPECT_EQ(dtypes::default_int, dtypes::int32);
}

TEST(DType, VecAndPtr) {
  DType v4 = dtypes::float32.vec(4);
  EXPECT_EQ(v4.name(), "float32.vec(4)");
  EXPECT_EQ(v4.itemsize(), 16);
  EXPECT_EQ(v4.count(), 4);
  EXPECT_EQ(v4.scalar(), dtypes::float32);
  EXPECT_EQ(v4.base(), v4);
  EXPECT_EQ(dtypes::float32.vec(1), dtypes::float32);
  EXPECT_EQ(dtypes::int8.vec(3).itemsize(), 3);

  DType p = dtypes::float32.ptr();
  EXPECT_TRUE(p.is_ptr());
  EXPECT_EQ(p.name(), "float32*");
  EXPECT_EQ(p.itemsize(), 8);
  EXPECT_EQ(p.size(), -1);
  EXPECT_EQ(p.base(), dtypes::float32);
  EXPECT_EQ(p.scalar(), dtypes::float32);
  EXPECT_EQ(p.addrspace(), AddrSpace::global);
  EXPECT_EQ(dtypes::float32.ptr(16).name(), "float32*[16]");
  EXPECT_EQ(dtypes::float32.ptr(64, AddrSpace::local).name(), "float32.local*[64]");
  EXPECT_EQ(dtypes::int32.ptr(-1, AddrSpace::reg).name(), "int32.reg*");
  EXPECT_EQ(v4.ptr(8).name(), "float32.vec(4)*[8]");
  EXPECT_EQ(v4.ptr(8).base(), v4);

  // A pointer is none of the value kinds.
  EXPECT_FALSE(p.is_float());
  EXPECT_FALSE(dtypes::int32.ptr().is_int());
  EXPECT_FALSE(dtypes::uint8.ptr().is_unsigned());
  EXPECT_FALSE(dtypes::bool_.ptr().is_bool());
  EXPECT_FALSE(dtypes::void_.ptr().is_void());

  // Equality and hashing see every field.
  EXPECT_NE(dtypes::float32.ptr(16), dtypes::float32.ptr(32));
  EXPECT_NE(dtypes::float32.ptr(16), dtypes::float32.ptr(16, AddrSpace::local));
  EXPECT_NE(dtypes::float32.ptr(), dtypes::float32);
  EXPECT_NE(v4, dtypes::float32.vec(2));
  std::unordered_set<DType> set = {dtypes::float32,       dtypes::float32.ptr(), v4,
                                   dtypes::float32.ptr(), dtypes::float32,       v4.ptr(1)};
  EXPECT_EQ(set.size(), 4u);
}

TEST(DType, VecAndPtrErrors) {
  EXPECT_THROW(dtypes::float32.vec(4).vec(2), DTypeError);
  EXPECT_THROW(dtypes::float32.vec(0), DTypeError);
  EXPECT_THROW(dtypes::float32.vec(-1), DTypeError);
  EXPECT_THROW(dtypes::float32.vec(65536), DTypeError);
  EXPECT_THROW(dtypes::float32.ptr().vec(4), DTypeError);
  EXPECT_THROW(dtypes::float32.ptr().ptr(), DTypeError);
  try {
    dtypes::int32.vec(4).vec(2);
    FAIL() << "no throw";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("int32.vec(4)"), std::string::npos) << e.what();
  }
}

TEST(DType, Classes) {
  for (DType d : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64}) {
    EXPECT_TRUE(d.is_float()) << d.name();
    EXPECT_FALSE(d.is_int()) << d.name();
  }
  for (DType d : {dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64}) {
    EXPECT_TRUE(d.is_unsigned()) << d.name();
    EXPECT_TRUE(d.is_int()) << d.name();
  }
  for (DType d : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::index}) {
    EXPECT_FALSE(d.is_unsigned()) << d.name();
    EXPECT_TRUE(d.is_int()) << d.name();
  }
  EXPECT_TRUE(dtypes::bool_.is_bool());
  EXPECT_FALSE(dtypes::bool_.is_int());
  EXPECT_FALSE(dtypes::void_.is_int());
  EXPECT_TRUE(dtypes::void_.is_void());
  EXPECT_TRUE(dtypes::float32.vec(4).is_float());
}

TEST(DType, IntRanges) {
  EXPECT_EQ(dtypes::min_int(dtypes::int8), -128);
  EXPECT_EQ(dtypes::max_int(dtypes::int8), 127);
  EXPECT_EQ(dtypes::min_int(dtypes::uint8), 0);
  EXPECT_EQ(dtypes::max_int(dtypes::uint8), 255);
  EXPECT_EQ(dtypes::min_int(dtypes::int16), -32768);
  EXPECT_EQ(dtypes::max_int(dtypes::uint16), 65535);
  EXPECT_EQ(dtypes::min_int(dtypes::int32), INT32_MIN);
  EXPECT_EQ(dtypes::max_int(dtypes::int32), INT32_MAX);
  EXPECT_EQ(dtypes::max_int(dtypes::uint32), 4294967295LL);
  EXPECT_EQ(dtypes::min_int(dtypes::int64), INT64_MIN);
  EXPECT_EQ(dtypes::max_int(dtypes::int64), INT64_MAX);
  EXPECT_EQ(dtypes::max_int(dtypes::uint64), INT64_MAX);  // saturates
  EXPECT_EQ(dtypes::min_int(dtypes::index), INT64_MIN);
  EXPECT_EQ(dtypes::min_int(dtypes::bool_), 0);
  EXPECT_EQ(dtypes::max_int(dtypes::bool_), 1);
}

// ------------------------------------------------------------------ promotion lattice

// tinygrad's promo_lattice (without fp8), transcribed: the type and everything above it.
std::vector<DType> parents(DType d) {
  using namespace dtypes;
  if (d == bool_) return {int8, uint8};
  if (d == int8) return {int16};
  if (d == int16) return {int32};
  if (d == int32) return {int64};
  if (d == int64) return {float16, bfloat16};
  if (d == uint8) return {int16, uint16};
  if (d == uint16) return {int32, uint32};
  if (d == uint32) return {int64, uint64};
  if (d == uint64) return {float16, bfloat16};
  if (d == float16) return {float32};
  if (d == bfloat16) return {float32};
  if (d == float32) return {float64};
  return {};
}
void ancestors(DType d, std::unordered_set<DType>& out) {
  out.insert(d);
  for (DType p : parents(d)) ancestors(p, out);
}
// tinygrad: min(set.intersection(*[_get_recursive_parents(d) for d in ds])), ordered by priority.
DType reference_lub(DType a, DType b) {
  std::unordered_set<DType> sa, sb;
  ancestors(a, sa);
  ancestors(b, sb);
  DType best = dtypes::void_;
  for (DType d : kScalars)
    if (sa.count(d) && sb.count(d) && (best.is_void() || d.priority() < best.priority())) best = d;
  return best;
}

TEST(Promotion, NamedPairs) {
  using namespace dtypes;
  struct Case {
    DType a, b, want;
  };
  const Case cases[] = {
      {bool_, bool_, bool_},
      {bool_, int8, int8},
      {bool_, uint8, uint8},
      {int8, uint8, int16},
      {uint8, int8, int16},
      {int8, int16, int16},
      {uint8, int16, int16},
      {uint8, uint16, uint16},
      {int8, uint16, int32},
      {int16, uint16, int32},
      {int32, uint32, int64},
      {uint32, int8, int64},
      {uint32, uint64, uint64},
      {int64, uint64, float16},
      {int8, uint64, float16},
      {bool_, uint64, uint64},
      {float16, bfloat16, float32},
      {int32, float16, float16},
      {int64, bfloat16, bfloat16},
      {uint64, bfloat16, bfloat16},
      {bool_, float32, float32},
      {float16, float32, float32},
      {bfloat16, float64, float64},
      {float32, float64, float64},
      {int64, float64, float64},
      {dtypes::index, int32, dtypes::index},
      {dtypes::index, bool_, dtypes::index},
      {dtypes::index, uint64, dtypes::index},
      {dtypes::index, float32, float32},
      {dtypes::index, dtypes::index, dtypes::index},
      {int32, int32, int32},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(least_upper_dtype(c.a, c.b), c.want) << c.a.name() << " + " << c.b.name();
    EXPECT_EQ(least_upper_dtype(c.b, c.a), c.want) << c.b.name() << " + " << c.a.name();
  }
}

TEST(Promotion, EveryPairMatchesTinygradAndIsSymmetric) {
  for (DType a : kScalars)
    for (DType b : kScalars) {
      DType got = dtypes::least_upper_dtype(a, b);
      EXPECT_EQ(got, reference_lub(a, b)) << a.name() << " + " << b.name();
      EXPECT_EQ(got, dtypes::least_upper_dtype(b, a)) << a.name() << " + " << b.name();
      // An upper bound of both, and idempotent.
      EXPECT_EQ(dtypes::least_upper_dtype(got, a), got);
      EXPECT_EQ(dtypes::least_upper_dtype(got, b), got);
    }
}

TEST(Promotion, Lists) {
  using namespace dtypes;
  EXPECT_EQ(least_upper_dtype({int8}), int8);
  EXPECT_EQ(least_upper_dtype({bool_, int8, uint8}), int16);
  EXPECT_EQ(least_upper_dtype({int32, uint32, float16}), float16);
  EXPECT_EQ(least_upper_dtype({int64, uint64}), float16);
  EXPECT_EQ(least_upper_dtype({float16, bfloat16, int8}), float32);
  EXPECT_THROW(least_upper_dtype(std::initializer_list<DType>{}), DTypeError);
}

TEST(Promotion, RejectsVectorsPointersVoid) {
  using namespace dtypes;
  EXPECT_THROW(least_upper_dtype(float32.vec(4), float32), DTypeError);
  EXPECT_THROW(least_upper_dtype(float32, float32.vec(4)), DTypeError);
  EXPECT_THROW(least_upper_dtype(float32.ptr(), float32), DTypeError);
  EXPECT_THROW(least_upper_dtype(int32, int32.ptr()), DTypeError);
  EXPECT_THROW(least_upper_dtype(void_, int32), DTypeError);
  EXPECT_THROW(least_upper_dtype({float32.ptr()}), DTypeError);
  EXPECT_THROW(least_upper_dtype({int32, float32.vec(2)}), DTypeError);
}

// ------------------------------------------------------------------ float16 / bfloat16

uint16_t f16_bits(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t gcc_half(float f) { return f16_bits(static_cast<_Float16>(f)); }
uint16_t gcc_half(double d) { return f16_bits(static_cast<_Float16>(d)); }
float f(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Float16, KnownBitPatterns) {
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);                  // largest finite
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7bff);                 // below the midpoint
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);                  // midpoint rounds to even: Inf
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);                      // overflow
  EXPECT_EQ(float_to_half_bits(-1e6f), 0xfc00);                     //
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);     // tie with 0: even
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);     // above the tie
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);     // tie 1|2: even
  EXPECT_EQ(float_to_half_bits(std::ldexp(5.0f, -25)), 0x0002);     // tie 2|3: even
  EXPECT_EQ(float_to_half_bits(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: even
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie: even (up)
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  uint16_t nan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  uint16_t snan = float_to_half_bits(f(0x7f800001u));  // a NaN whose payload is below half's
  EXPECT_EQ(snan & 0x7c00, 0x7c00);
  EXPECT_NE(snan & 0x03ff, 0) << "a NaN must not become Inf";

  EXPECT_EQ(half_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(half_bits_to_float(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isinf(half_bits_to_float(0xfc00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7e00)));
}

TEST(Float16, MatchesCompilerOnManyFloats) {
  // Every float16 value, every midpoint between neighbours, and a point just either side.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float v = half_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(v)) continue;
    EXPECT_EQ(float_to_half_bits(v), gcc_half(v)) << std::hex << h;
    EXPECT_EQ(f16_bits(static_cast<_Float16>(v)), h) << "round trip " << std::hex << h;
    uint32_t b = std::bit_cast<uint32_t>(v);
    for (uint32_t step : {0x1000u, 0x0fffu, 0x1001u, 0x0001u}) {
      float w = f(b + step);
      if (std::isnan(w)) continue;
      ASSERT_EQ(float_to_half_bits(w), gcc_half(w)) << std::hex << b + step;
    }
  }
  // A sweep across the whole float range, NaNs included (compared by NaN-ness).
  for (uint64_t b = 0; b < 0x100000000ull; b += 0x1235) {
    float v = f(static_cast<uint32_t>(b));
    uint16_t want = gcc_half(v), got = float_to_half_bits(v);
    if (std::isnan(v))
      ASSERT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff)) << std::hex << b;
    else
      ASSERT_EQ(got, want) << std::hex << b;
  }
}

// Exact bfloat16 rounding of a float, computed from the two neighbours in double.
uint16_t reference_bf16(float v) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  uint32_t lo = b & 0xffff0000u, hi = lo + 0x10000u;
  double dv = v, dlo = f(lo);
  double dhi = (hi & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), dv) : f(hi);
  double a = std::fabs(dv - dlo), c = std::fabs(dhi - dv);
  if (a < c) return static_cast<uint16_t>(lo >> 16);
  if (c < a) return static_cast<uint16_t>(hi >> 16);
  return static_cast<uint16_t>(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
}

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(f(0x3f808000u)), 0x3f80);  // tie: even (down)
  EXPECT_EQ(float_to_bf16_bits(f(0x3f818000u)), 0x3f82);  // tie: even (up)
  EXPECT_EQ(float_to_bf16_bits(f(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(float_to_bf16_bits(f(0x3f807fffu)), 0x3f80);  // below the tie
  EXPECT_EQ(float_to_bf16_bits(f(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to Inf
  EXPECT_EQ(float_to_bf16_bits(f(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(float_to_bf16_bits(f(0x00000001u)), 0x0000);  // tiny subnormal
  EXPECT_EQ(float_to_bf16_bits(f(0x00018000u)), 0x0002);  // subnormal tie: even
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  uint16_t nan = float_to_bf16_bits(f(0x7f800001u));  // payload only in the dropped bits
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0) << "a NaN must not become Inf";
  EXPECT_EQ(bf16_bits_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0xc0a0), -5.0f);
}

TEST(BFloat16, MatchesExactRoundingOnManyFloats) {
  for (uint64_t b = 0; b < 0x100000000ull; b += 0x0fed) {
    float v = f(static_cast<uint32_t>(b));
    if (std::isnan(v)) continue;
    ASSERT_EQ(float_to_bf16_bits(v), reference_bf16(v)) << std::hex << b;
  }
  for (uint32_t hbits = 0; hbits < 0x10000; ++hbits) {  // every tie point
    uint32_t b = (hbits << 16) | 0x8000u;
    float v = f(b);
    if (std::isnan(v)) continue;
    ASSERT_EQ(float_to_bf16_bits(v), reference_bf16(v)) << std::hex << b;
  }
}

// ------------------------------------------------------------------ round_float, wrap, convert

TEST(RoundFloat, PerDtype) {
  EXPECT_EQ(round_float(dtypes::float64, 0.1), 0.1);
  EXPECT_EQ(round_float(dtypes::float32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(round_float(dtypes::float16, 0.1), static_cast<double>(static_cast<_Float16>(0.1)));
  EXPECT_EQ(round_float(dtypes::float16, 1e5), INFINITY);
  EXPECT_EQ(round_float(dtypes::bfloat16, 1.0 + 1.0 / 256), 1.0);  // tie: even
  EXPECT_EQ(round_float(dtypes::bfloat16, 3.0e38), bf16_bits_to_float(float_to_bf16_bits(3.0e38f)));
  EXPECT_TRUE(std::isnan(round_float(dtypes::float16, NAN)));
  EXPECT_TRUE(std::isnan(round_float(dtypes::bfloat16, NAN)));
  EXPECT_EQ(round_float(dtypes::float32, 1e300), INFINITY);
  EXPECT_EQ(round_float(dtypes::float32, -1e300), -INFINITY);
}

// A double is rounded once, to the target: going through float first would round twice.
TEST(RoundFloat, DoubleRoundsOnceToHalf) {
  double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(gcc_half(above_tie), 0x3c01);
  EXPECT_EQ(round_float(dtypes::float16, above_tie), 1.0 + std::ldexp(1.0, -10));
  double below_tie = 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
  EXPECT_EQ(round_float(dtypes::float16, below_tie), 1.0);
  // Every midpoint between finite float16 neighbours, and the doubles just either side of it,
  // against the compiler's double -> _Float16 conversion.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    double mid = (static_cast<double>(half_bits_to_float(static_cast<uint16_t>(h))) +
                  half_bits_to_float(static_cast<uint16_t>(h + 1))) /
                 2;
    for (double v : {mid, std::nextafter(mid, INFINITY), std::nextafter(mid, 0.0), -mid,
                     -std::nextafter(mid, INFINITY)})
      ASSERT_EQ(round_float(dtypes::float16, v), half_bits_to_float(gcc_half(v)))
          << std::hex << h << " " << std::hexfloat << v;
  }
}

TEST(RoundFloat, DoubleRoundsOnceToBFloat16) {
  // 1 + 2^-8 is the tie between bf16 neighbours 1 and 1+2^-7; a hair above must round up.
  double above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(round_float(dtypes::bfloat16, above_tie), 1.0 + std::ldexp(1.0, -7));
  double below_tie = 1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -40);
  EXPECT_EQ(round_float(dtypes::bfloat16, below_tie), 1.0);
}

TEST(WrapInt, PerDtype) {
  EXPECT_EQ(wrap_int(dtypes::int8, 127 + 1), -128);
  EXPECT_EQ(wrap_int(dtypes::int8, 300), 44);
  EXPECT_EQ(wrap_int(dtypes::uint8, -1), 255);
  EXPECT_EQ(wrap_int(dtypes::uint8, 256), 0);
  EXPECT_EQ(wrap_int(dtypes::int16, 32768), -32768);
  EXPECT_EQ(wrap_int(dtypes::uint16, -1), 65535);
  EXPECT_EQ(wrap_int(dtypes::int32, 2147483648LL), INT32_MIN);
  EXPECT_EQ(wrap_int(dtypes::uint32, -1), 4294967295LL);
  EXPECT_EQ(wrap_int(dtypes::int64, INT64_MIN), INT64_MIN);
  EXPECT_EQ(wrap_int(dtypes::uint64, -1), -1);  // uint64 keeps its bits
  EXPECT_EQ(wrap_int(dtypes::index, INT64_MAX), INT64_MAX);
  EXPECT_EQ(wrap_int(dtypes::bool_, 2), 1);
  EXPECT_EQ(wrap_int(dtypes::bool_, 0), 0);
}

TEST(ConvertValue, LikeACast) {
  auto i = [](ConstValue v) { return std::get<int64_t>(v); };
  auto d = [](ConstValue v) { return std::get<double>(v); };
  auto b = [](ConstValue v) { return std::get<bool>(v); };
  EXPECT_EQ(i(convert_value(int64_t{300}, dtypes::int8)), 44);
  EXPECT_EQ(i(convert_value(int64_t{-1}, dtypes::uint32)), 4294967295LL);
  EXPECT_EQ(i(convert_value(-3.7, dtypes::int32)), -3);  // truncates toward zero
  EXPECT_EQ(i(convert_value(3.7, dtypes::int32)), 3);
  EXPECT_EQ(i(convert_value(1e10, dtypes::int32)), INT32_MAX);  // saturates
  EXPECT_EQ(i(convert_value(-1e10, dtypes::int32)), INT32_MIN);
  EXPECT_EQ(i(convert_value(-5.0, dtypes::uint8)), 0);
  EXPECT_EQ(i(convert_value(NAN, dtypes::int32)), 0);
  EXPECT_EQ(i(convert_value(1e30, dtypes::int64)), INT64_MAX);
  EXPECT_EQ(i(convert_value(1.5e19, dtypes::uint64)),
            static_cast<int64_t>(static_cast<uint64_t>(1.5e19)));
  EXPECT_EQ(i(convert_value(1e30, dtypes::uint64)), -1);  // all ones
  EXPECT_EQ(i(convert_value(true, dtypes::int32)), 1);
  EXPECT_TRUE(b(convert_value(int64_t{5}, dtypes::bool_)));
  EXPECT_FALSE(b(convert_value(int64_t{0}, dtypes::bool_)));
  EXPECT_TRUE(b(convert_value(0.5, dtypes::bool_)));
  EXPECT_TRUE(b(convert_value(NAN, dtypes::bool_)));  // C: NaN is truthy
  EXPECT_FALSE(b(convert_value(-0.0, dtypes::bool_)));
  EXPECT_EQ(d(convert_value(0.1, dtypes::float32)), static_cast<double>(0.1f));
  EXPECT_EQ(d(convert_value(int64_t{3}, dtypes::float16)), 3.0);
  EXPECT_EQ(d(convert_value(true, dtypes::float32)), 1.0);
  EXPECT_EQ(d(convert_value(int64_t{2049}, dtypes::float16)), 2048.0);  // tie: even
  EXPECT_EQ(d(convert_value(int64_t{2051}, dtypes::float16)), 2052.0);
}

// Integers wider than a double's mantissa convert with one rounding, as a C cast does.
TEST(ConvertValue, LargeIntegersRoundOnce) {
  int64_t v = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;  // just above a float32 tie
  EXPECT_EQ(std::get<double>(convert_value(v, dtypes::float32)),
            static_cast<double>(static_cast<float>(v)));
  EXPECT_EQ(std::get<double>(convert_value(v, dtypes::float64)), static_cast<double>(v));
  int64_t w = (int64_t{1} << 24) + (int64_t{1} << 16) + 1;  // just above a bfloat16 tie
  EXPECT_EQ(std::get<double>(convert_value(w, dtypes::bfloat16)),
            static_cast<double>((int64_t{1} << 24) + (int64_t{1} << 17)));
  EXPECT_EQ(std::get<double>(convert_value(INT64_MIN, dtypes::float32)), -std::ldexp(1.0, 63));
}

}  // namespace
