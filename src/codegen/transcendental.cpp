// codegen: transcendentals as arithmetic — exp2, log2 and sin written once as UOp graphs, for
// the targets whose language lacks them (Target::native32 / native64), so that every printer
// prints plain operators. float16 and bfloat16 compute in float32 (the argument widened, the
// result rounded once). Every graph is branch-free (WHERE selects, never control flow), so a C
// loop computing one still vectorizes; nothing relies on fma (Vulkan's fma() may round its
// product, and C compiles with -ffp-contract=off), so every step rounds as the interpreter's does.
//
// exp2(x): x clamped to [-151, 129] (float64: [-1080, 1025]); k = rint(x) by adding and
//   subtracting 1.5 * 2^mantissa (whose bits then hold k), f = x - k in [-1/2, 1/2]; 2^f by its
//   Taylor polynomial in f ln 2 to degree 7 (float64: 13); 2^k as two powers of two built from
//   exponent bits, multiplied in one at a time so that a subnormal or infinite result rounds
//   once. NaN stays NaN, -inf gives 0, +inf gives +inf, an integer x gives 2^x exactly.
// log2(x): a subnormal x scaled by 2^(mantissa+1); x = m * 2^e with m in [sqrt(1/2), sqrt(2)) read
//   from the bits; with f = m - 1, s = f / (2 + f): ln m = f - f^2/2 + s (f^2/2 + R(s^2)), R the
//   series of 2 atanh(s) / s - 2 (to s^8; float64 s^20). The sum is split hi + lo with hi's low
//   mantissa bits cleared so that hi / ln 2 with 1 / ln 2 in two parts is exact: log2 x =
//   ((lo + hi) lo2 + lo hi2) + hi hi2 + e. Zero gives -inf, a negative x or NaN gives NaN, +inf
//   gives +inf, a power of two gives its exponent exactly.
// sin(x): float32: |x| < pi/4 is its own reduced argument. Otherwise x * 2/pi modulo 4 is computed
//   exactly enough from the bits (Payne-Hanek, in 32-bit integers so that no device needs int64):
//   the 24-bit mantissa times a 96-bit window of 2/pi's bits chosen by the exponent, in base-2^16
//   digits; bits 94-95 of the product are the quadrant, the 64 below the fraction, rounded to the
//   nearest quadrant; the fraction times pi/2 (the product exact by Dekker's split) gives the
//   reduced argument as r + rl. float64: Cody-Waite with pi/2 in three parts (33, 33 and 53 bits,
//   fdlibm's medium reduction with its error term carried), exact for |k| < 2^20, i.e.
//   |x| < 1.6e6; larger arguments lose bits. Then sin or cos of r + rl on [-pi/4, pi/4] by the
//   quadrant (Cephes' float minimax polynomials; Taylor to degree 17/18 for float64) and the
//   sign. NaN and +-inf give NaN, -0 gives -0.
// Measured error (the exact value in double or long double): exp2 1.15 ULP, log2 0.88 ULP, sin
// 0.86 ULP over every float32 argument; float64 (sampled) exp2 1.13, log2 0.87, sin 1.06 for
// |x| < 1.6e6; float16 and bfloat16 within 1 ULP of their own. The tests hold them to 1.5 ULP
// (log2 1.0): test_transcendental.cpp in the interpreter and as compiled C, test_devices.cpp on
// every device.
#include <array>
#include <bit>
#include <cmath>
#include <numbers>
#include <span>

#include "codegen/passes.hpp"
#include "ir/graph_rewrite.hpp"
#include "ir/upat.hpp"

namespace vkgrad {
namespace {

// The float type a decomposition computes in, and its bits as unsigned and signed integers.
struct Format {
  DType f, u, i;
  int mantissa, bias;
  bool f64() const { return f == dtypes::float64; }
  UOp fc(double v) const { return UOp::const_(f, v); }
  UOp uc(uint64_t v) const { return UOp::const_(u, static_cast<int64_t>(v)); }
  UOp ic(int64_t v) const { return UOp::const_(i, v); }
  uint64_t bits_of(double v) const {
    if (f64()) return std::bit_cast<uint64_t>(v);
    return std::bit_cast<uint32_t>(static_cast<float>(v));
  }
};
const Format kF32{dtypes::float32, dtypes::uint32, dtypes::int32, 23, 127};
const Format kF64{dtypes::float64, dtypes::uint64, dtypes::int64, 52, 1023};

// c[0] + x (c[1] + x (c[2] + ...)), without fma.
UOp horner(const UOp& x, std::span<const double> c) {
  UOp p = x.scalar_like(c.back());
  for (size_t j = c.size() - 1; j-- > 0;) p = x.scalar_like(c[j]) + x * p;
  return p;
}

// (ln 2)^i / i!
constexpr double kExp2Taylor[] = {1.0,
                                  0.6931471805599453,
                                  0.24022650695910072,
                                  0.05550410866482158,
                                  0.009618129107628477,
                                  0.0013333558146428443,
                                  0.0001540353039338161,
                                  1.5252733804059841e-05,
                                  1.321548679014431e-06,
                                  1.01780860092397e-07,
                                  7.054911620801123e-09,
                                  4.4455382718708116e-10,
                                  2.5678435993488206e-11,
                                  1.3691488853904128e-12};

UOp exp2_of(const UOp& x, const Format& F) {
  const double lo = F.f64() ? -1080 : -151, hi = F.f64() ? 1025 : 129;
  const UOp c = x.lt(lo).where(F.fc(lo), F.fc(hi).lt(x).where(F.fc(hi), x));
  const double magic = 1.5 * std::ldexp(1.0, F.mantissa);
  const UOp t = c + magic;  // rounds c to an integer k, held in t's low mantissa bits
  const UOp k = t - magic;
  const UOp f = c - k;
  const UOp p = horner(f, std::span(kExp2Taylor).first(F.f64() ? 14 : 8));
  const UOp ki = t.bitcast(F.i) - F.ic(static_cast<int64_t>(F.bits_of(magic)));
  const UOp k1 = ki / F.ic(2), k2 = ki - k1;
  auto pow2 = [&](const UOp& e) { return ((e + F.ic(F.bias)) << F.ic(F.mantissa)).bitcast(F.f); };
  return p * pow2(k1) * pow2(k2);
}

// 2 / (2n + 1), n >= 1: 2 atanh(s) / s = 2 + sum of these times s^(2n).
constexpr double kAtanhSeries[] = {0.6666666666666666,  0.4,
                                   0.2857142857142857,  0.2222222222222222,
                                   0.18181818181818182, 0.15384615384615385,
                                   0.13333333333333333, 0.11764705882352941,
                                   0.10526315789473684, 0.09523809523809523};

UOp log2_of(const UOp& x, const Format& F) {
  const int scale = F.mantissa + 1;
  const UOp tiny = x.lt(std::ldexp(1.0, 1 - F.bias));
  const UOp xs = tiny.where(x * std::ldexp(1.0, scale), x);
  // Moving the bits by 1 - sqrt(1/2) puts the exponent boundary at sqrt(1/2).
  const uint64_t sqrt_half = F.bits_of(std::sqrt(0.5)), one = F.bits_of(1.0);
  const UOp u = xs.bitcast(F.u) + F.uc(one - sqrt_half);
  const UOp e = (u >> F.uc(F.mantissa)).cast(F.i) - tiny.where(F.ic(F.bias + scale), F.ic(F.bias));
  const uint64_t mantissa_mask = (uint64_t{1} << F.mantissa) - 1;
  const UOp m = ((u & F.uc(mantissa_mask)) + F.uc(sqrt_half)).bitcast(F.f);
  const UOp f = m - 1.0;
  const UOp hfsq = f * 0.5 * f;
  const UOp s = f / (f + 2.0);
  const UOp z = s * s;
  const UOp R = z * horner(z, std::span(kAtanhSeries).first(F.f64() ? 10 : 4));
  const UOp r = s * (hfsq + R);
  // hi keeps 12 (float64: 21) significant bits, so that hi * hi2 is exact.
  const uint64_t hi_mask = F.f64() ? 0xffffffff00000000ull : 0xfffff000ull;
  const UOp hi = ((f - hfsq).bitcast(F.u) & F.uc(hi_mask)).bitcast(F.f);
  const UOp lo = ((f - hi) - hfsq) + r;
  // 1 / ln 2 = hi2 + lo2, hi2 rounded to 12 (float64: 32) significant bits.
  const double hi2 = F.f64() ? 0x1.71547652p+0 : 0x1.716p+0;
  const double lo2 = F.f64() ? 0x1.705fc2eefa2p-33 : -0x1.7135a8p-13;
  const UOp res = (((lo + hi) * lo2 + lo * hi2) + hi * hi2) + e.cast(F.f);
  const double inf = INFINITY;
  const UOp bits = x.bitcast(F.u), inf_bits = F.uc(F.bits_of(inf));
  return x.eq(0.0).where(F.fc(-inf),
                         inf_bits.lt(bits).where(F.fc(NAN), bits.eq(inf_bits).where(x, res)));
}

// sin or cos of r + rl (|r| <= pi/4, rl below half an ulp of r) as the quadrant q (an integer
// held in a float) says: sin(r + rl) ~ s(r) + rl (1 - r^2/2), cos(r + rl) ~ c(r) - r rl.
constexpr double kSin32[] = {-0.16666655, 0.008332161, -0.00019515296};
constexpr double kCos32[] = {0.041666646, -0.0013887316, 2.4433157e-05};
constexpr double kSin64[] = {-1.6666666666666666e-01, 8.333333333333333e-03,
                             -1.984126984126984e-04,  2.7557319223985893e-06,
                             -2.505210838544172e-08,  1.6059043836821613e-10,
                             -7.647163731819816e-13,  2.8114572543455206e-15};
constexpr double kCos64[] = {4.1666666666666664e-02, -1.3888888888888889e-03,
                             2.48015873015873e-05,   -2.755731922398589e-07,
                             2.08767569878681e-09,   -1.1470745597729725e-11,
                             4.779477332387385e-14,  -1.5619206968586225e-16};

UOp sin_kernel(const UOp& r, const UOp& rl, const UOp& q, const Format& F) {
  const std::span<const double> sin_c = F.f64() ? std::span<const double>(kSin64) : kSin32;
  const std::span<const double> cos_c = F.f64() ? std::span<const double>(kCos64) : kCos32;
  const UOp z = r * r;
  const UOp s = r + (r * z * horner(z, sin_c) + rl * (1.0 - z * 0.5));
  // 1 - z/2 rounded, and what the rounding lost added back.
  const UOp hz = z * 0.5, w = 1.0 - hz;
  const UOp c = w + ((((1.0 - w) - hz) + z * z * horner(z, cos_c)) - r * rl);
  const UOp m = q - (q * 0.25).alu(Ops::TRUNC) * 4.0;  // q mod 4, in (-4, 4)
  const UOp a = m.lt(0.0).where(m + 4.0, m);           // in [0, 4)
  const UOp v = (a.eq(1.0) | a.eq(3.0)).where(c, s);
  return F.fc(1.5).lt(a).where(-v, v);
}

// The 2/pi bits for float32's Payne-Hanek reduction: word j >= 1 holds bits 32(j-1)+1 .. 32j
// after the binary point, word 0 the 32 zero bits before it.
constexpr uint32_t kTwoOverPi[] = {0,          0xa2f9836e, 0x4e441529, 0xfc2757d1,
                                   0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab};

UOp sin32(const UOp& x) {
  const Format& F = kF32;
  auto u32 = [](uint64_t v) { return UOp::const_(dtypes::uint32, static_cast<int64_t>(v)); };
  const UOp bits = x.bitcast(dtypes::uint32);
  const UOp a = bits & u32(0x7fffffff);  // |x|'s bits
  // |x| = M * 2^(E - 150). The product's bits from 2^2 up are multiples of 4 (whole turns);
  // the window of 2/pi starts at bit E - 151 (bit 1 is 2^-1), at bit E - 120 of kTwoOverPi's
  // concatenation, so that M * window / 2^94 is x * 2/pi modulo 4.
  const UOp start = (a >> u32(23)) - u32(120);  // from 0 for |x| >= 2^-7 up to 135
  const UOp word = start >> u32(5), shift = start & u32(31);
  std::array<UOp, 5> is_word;
  for (uint32_t j = 0; j < is_word.size(); ++j) is_word[j] = word.eq(u32(j));
  auto table = [&](uint32_t j) {  // kTwoOverPi[word + j]
    UOp w = u32(kTwoOverPi[j]);
    for (uint32_t n = 1; n < is_word.size(); ++n)
      w = is_word[n].where(u32(j + n < std::size(kTwoOverPi) ? kTwoOverPi[j + n] : 0), w);
    return w;
  };
  const std::array<UOp, 4> t = {table(0), table(1), table(2), table(3)};
  // (t[j] << shift) | (t[j+1] >> (32 - shift)), the second shift in two steps so each is < 32.
  auto window = [&](int j) {
    return (t[j] << shift) | ((t[j + 1] >> u32(1)) >> (shift ^ u32(31)));
  };
  const std::array<UOp, 3> w = {window(2), window(1), window(0)};  // least significant first
  // M * window in base-2^16 digits: each digit product fits 32 bits and is added to its column
  // in two 16-bit halves, then the carries run up. Columns 0-5 hold bits 0-95.
  const UOp mant = (a & u32(0x7fffff)) | u32(0x800000);
  const std::array<UOp, 2> md = {mant & u32(0xffff), mant >> u32(16)};
  std::array<UOp, 6> col;
  for (UOp& c : col) c = u32(0);
  for (int k = 0; k < 6; ++k) {
    const UOp digit = k % 2 ? w[k / 2] >> u32(16) : w[k / 2] & u32(0xffff);
    for (int h = 0; h < 2; ++h) {
      const UOp p = md[h] * digit;
      if (k + h < 6) col[k + h] = col[k + h] + (p & u32(0xffff));
      if (k + h + 1 < 6) col[k + h + 1] = col[k + h + 1] + (p >> u32(16));
    }
  }
  std::array<UOp, 6> d;
  UOp carry = u32(0);
  for (int c = 0; c < 6; ++c) {
    const UOp v = col[c] + carry;
    d[c] = v & u32(0xffff);
    carry = v >> u32(16);
  }
  const UOp quadrant = d[5] >> u32(14);  // bits 94-95
  // The fraction's bits 93..30: hi (bits 62-93) and lo (bits 30-61).
  const UOp hi = ((d[5] & u32(0x3fff)) << u32(18)) | (d[4] << u32(2)) | (d[3] >> u32(14));
  const UOp lo = ((d[3] & u32(0x3fff)) << u32(18)) | (d[2] << u32(2)) | (d[1] >> u32(14));
  // A fraction of 1/2 or more belongs to the next quadrant: 1 - fraction, negated.
  const UOp up = hi >> u32(31), is_up = up.eq(u32(1));
  const UOp nlo = is_up.where(u32(0) - lo, lo);
  const UOp nhi = is_up.where((hi ^ u32(0xffffffff)) + lo.eq(u32(0)).where(u32(1), u32(0)), hi);
  // The fraction as fh + fl, fh the float nearest to it: nhi - float(nhi) from the float's bits
  // (a driver may fold uint(float(n)) into n), zero below 2^24 where the conversion is exact.
  const UOp fhi = nhi.cast(F.f), fbits = fhi.bitcast(dtypes::uint32);
  const UOp rounds = u32(0xffffff).lt(nhi);
  const UOp exponent = rounds.where(((fbits >> u32(23)) - u32(150)) & u32(15), u32(0));  // 1..8
  const UOp rounded = ((fbits & u32(0x7fffff)) | u32(0x800000)) << exponent;
  const UOp dhi = rounds.where(nhi - rounded, u32(0)).bitcast(dtypes::int32);
  const UOp fh = fhi * 0x1p-32;
  const UOp fl = (dhi.cast(F.f) * 0x1p32 + nlo.cast(F.f)) * 0x1p-64;
  // (fh + fl) * pi/2 with pi/2 = ph + pl, ph = ph1 + ph2 (12 bits each): fh * ph = p + e exactly.
  const double ph = 0x1.921fb6p+0, ph1 = 0x1.92p+0, ph2 = 0x1.fb6p-12, pl = -0x1.777a5cp-25;
  const UOp fh1 = (fh.bitcast(dtypes::uint32) & u32(0xfffff000)).bitcast(F.f), fh2 = fh - fh1;
  const UOp p = fh * ph;
  const UOp e = (((fh1 * ph1 - p) + fh1 * ph2) + fh2 * ph1) + fh2 * ph2;
  const UOp rlo = e + (fh * pl + fl * ph);
  const UOp r = p + rlo, rl = (p - r) + rlo;
  const UOp q = ((quadrant + up) & u32(3)).cast(F.f);
  const UOp small = a.lt(u32(F.bits_of(std::numbers::pi / 4)));
  const UOp abs_x = a.bitcast(F.f);
  const UOp v = sin_kernel(small.where(abs_x, is_up.where(-r, r)),
                           small.where(F.fc(0), is_up.where(-rl, rl)), small.where(F.fc(0), q), F);
  const UOp finite = a.lt(u32(F.bits_of(INFINITY)));
  return finite.where(u32(0x7fffffff).lt(bits).where(-v, v), F.fc(NAN));
}

UOp sin64(const UOp& x) {
  const Format& F = kF64;
  // k = rint(x * 2/pi); pi/2 = p1 + p2 + p2t with p1 and p2 of 33 bits, so k * p1 and k * p2 are
  // exact for |k| < 2^20; the rounding error of y1 - k p2 is carried into the correction.
  const double magic = 0x1.8p52;
  const UOp k = (x * 0.63661977236758134 + magic) - magic;
  const UOp y1 = x - k * 0x1.921fb544p+0;
  const UOp w1 = k * 0x1.0b4611a6p-34;
  const UOp y2 = y1 - w1;
  const UOp w2 = k * 0x1.3198a2e037073p-69 - ((y1 - y2) - w1);
  const UOp r = y2 - w2, rl = (y2 - r) - w2;
  return x.eq(0.0).where(x, sin_kernel(r, rl, k, F));  // -0 stays -0
}

UOp sin_of(const UOp& x, const Format& F) { return F.f64() ? sin64(x) : sin32(x); }

bool native(const Target& t, Ops op, DType d) {
  const Target::Native& n = d == dtypes::float64 ? t.native64 : t.native32;
  return op == Ops::EXP2 ? n.exp2 : op == Ops::LOG2 ? n.log2 : n.sin;
}

UOp lower(const Match& m) {
  const UOp& u = m.root();
  const DType d = u.dtype();
  if (d.count() != 1 || !d.is_float()) return {};
  const Format& F = d == dtypes::float64 ? kF64 : kF32;  // float16 and bfloat16 in float32
  if (native(m.ctx<Target>(), u.op(), F.f)) return {};
  const UOp x = d == F.f ? u.src(0) : u.src(0).cast(F.f);
  const UOp r = u.op() == Ops::EXP2   ? exp2_of(x, F)
                : u.op() == Ops::LOG2 ? log2_of(x, F)
                                      : sin_of(x, F);
  return d == F.f ? r : r.cast(d);
}

const PatternMatcher pm_transcendental({
    rule(UPat::ops(OpSet{Ops::EXP2, Ops::LOG2, Ops::SIN}), lower),
});

}  // namespace

UOp decompose_transcendentals(const UOp& kernel, const Target& target) {
  Target t = target;
  return graph_rewrite(kernel, pm_transcendental, t, {.name = "transcendentals"});
}

}  // namespace vkgrad
