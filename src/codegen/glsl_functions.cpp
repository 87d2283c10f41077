// codegen: the GLSL printer's helper functions (see glsl_functions.hpp). Tolerances of our own
// transcendentals are in render_glsl.cpp's header and are checked by tests/tensor.
#include "codegen/glsl_functions.hpp"

#include "codegen/language.hpp"

namespace vkgrad {
namespace {

constexpr const char* kFunctionText[kNumGlslFunctions] = {
    // kIsNanF, kIsNanD: by the bits, so no fast-math assumption can fold them away.
    R"(bool vkg_isnanf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
)",
    R"(bool vkg_isnand(double x) {
  uvec2 u = unpackDouble2x32(x);
  uint hi = u.y & 0x7fffffffu;
  return hi > 0x7ff00000u || (hi == 0x7ff00000u && u.x != 0u);
}
)",
    // kHalf, kBf16: the shared conversions (language.hpp), spelled for GLSL by glsl_functions.
    "",
    "",
    // float32 exp2: x = n + f with |f| <= 0.5, 2^f = sum (f ln2)^i / i! (i <= 8), then 2^n;
    // GLSL's exp2 promises only 3 + 2|x| ULP.
    R"(float vkg_exp2f(float x) {
  if (vkg_isnanf(x)) return x;
  if (x >= 128.0) return uintBitsToFloat(0x7f800000u);
  if (x < -151.0) return 0.0;
  float n = roundEven(x), f = x - n;
  float p = 1.3215487e-06;
  p = fma(p, f, 1.5252734e-05);
  p = fma(p, f, 0.0001540353);
  p = fma(p, f, 0.0013333558);
  p = fma(p, f, 0.009618129);
  p = fma(p, f, 0.05550411);
  p = fma(p, f, 0.2402265);
  p = fma(p, f, 0.6931472);
  p = fma(p, f, 1.0);
  int e = int(n);
  return ldexp(ldexp(p, e / 2), e - e / 2);
}
)",
    // float32 log2: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1)
    // (series to s^11); GLSL's log2 promises only 2^-21 absolute error near 1.
    R"(float vkg_log2f(float x) {
  if (vkg_isnanf(x) || x < 0.0) return uintBitsToFloat(0x7fc00000u);
  if (x == 0.0) return uintBitsToFloat(0xff800000u);
  if (floatBitsToUint(x) == 0x7f800000u) return x;
  int bias = 0;
  if (x < 1.1754944e-38) { x *= 16777216.0; bias = 24; }
  int e;
  float m = frexp(x, e);
  if (m < 0.70710677) { m *= 2.0; e -= 1; }
  float s = (m - 1.0) / (m + 1.0), z = s * s;
  float p = 0.09090909;
  p = fma(p, z, 0.11111111);
  p = fma(p, z, 0.14285715);
  p = fma(p, z, 0.2);
  p = fma(p, z, 0.33333334);
  float ln = 2.0 * fma(s * z, p, s);
  return float(e - bias) + ln * 1.442695;
}
)",
    R"(float vkg_sqrtf(float x) { return x < 0.0 ? uintBitsToFloat(0x7fc00000u) : sqrt(x); }
)",
    // sin or cos of the reduced |r| <= pi/4 by quadrant k (Cephes' minimax polynomials).
    R"(float vkg_sin_poly(float r, float k) {
  float z = r * r;
  float s = r + r * z * (-0.16666655 + z * (0.008332161 + z * -0.00019515296));
  float c = 1.0 - 0.5 * z + z * z * (0.041666646 + z * (-0.0013887316 + z * 2.4433157e-05));
  uint q = uint(int(k - 4.0 * floor(k * 0.25)));
  float v = (q & 1u) != 0u ? c : s;
  return (q & 2u) != 0u ? -v : v;
}
)",
    // float32 sin on a device without float64: Cody-Waite reduction r = x - k*pi/2 with pi/2 in
    // three parts of 8, 13 and 24 bits, so k*part is exact in float for |k| < 2^13 (|x| < 8192)
    // without relying on fma (Vulkan's fma may round its product). Beyond 8192 the reduction
    // loses bits (absolute error about |x| * 2^-37).
    R"(float vkg_sinf(float x) {
  if (vkg_isnanf(x) || abs(x) == uintBitsToFloat(0x7f800000u)) return uintBitsToFloat(0x7fc00000u);
  float k = roundEven(x * 0.63661975);
  precise float r = ((x - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.54978995489188216e-8;
  return vkg_sin_poly(r, k);
}
)",
    // float32 sin where float64 exists: the reduction in double, with pi/2 as a 33-bit part (so
    // k * part is exact for |k| < 2^20) plus the rest, then the float polynomial.
    R"(float vkg_sinf(float x) {
  if (vkg_isnanf(x) || abs(x) == uintBitsToFloat(0x7f800000u)) return uintBitsToFloat(0x7fc00000u);
  precise double k = roundEven(double(x) * 0.63661977236758134lf);
  precise double r = (double(x) - k * 1.57079632673412561417lf) - k * 6.07710050650619224932e-11lf;
  return vkg_sin_poly(float(r), float(k));
}
)",
    // float64 exp2: x = n + f with |f| <= 0.5, 2^f = sum (f ln2)^i / i! (i <= 14), then 2^n.
    R"(double vkg_exp2d(double x) {
  if (vkg_isnand(x)) return x;
  if (x > 1024.0lf) return packDouble2x32(uvec2(0u, 0x7ff00000u));
  if (x < -1080.0lf) return 0.0lf;
  double n = roundEven(x), f = x - n;
  double p = 6.778726354822545e-14lf;
  p = fma(p, f, 1.3691488853904128e-12lf);
  p = fma(p, f, 2.5678435993488206e-11lf);
  p = fma(p, f, 4.4455382718708116e-10lf);
  p = fma(p, f, 7.054911620801123e-09lf);
  p = fma(p, f, 1.01780860092397e-07lf);
  p = fma(p, f, 1.321548679014431e-06lf);
  p = fma(p, f, 1.5252733804059841e-05lf);
  p = fma(p, f, 0.0001540353039338161lf);
  p = fma(p, f, 0.0013333558146428443lf);
  p = fma(p, f, 0.009618129107628477lf);
  p = fma(p, f, 0.05550410866482158lf);
  p = fma(p, f, 0.24022650695910072lf);
  p = fma(p, f, 0.6931471805599453lf);
  p = fma(p, f, 1.0lf);
  int e = int(n);
  return ldexp(ldexp(p, e / 2), e - e / 2);
}
)",
    // float64 log2: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1).
    R"(double vkg_log2d(double x) {
  if (vkg_isnand(x) || x < 0.0lf) return packDouble2x32(uvec2(0u, 0x7ff80000u));
  if (x == 0.0lf) return packDouble2x32(uvec2(0u, 0xfff00000u));
  if (x == packDouble2x32(uvec2(0u, 0x7ff00000u))) return x;
  int bias = 0;
  if (x < 2.2250738585072014e-308lf) { x *= 18014398509481984.0lf; bias = 54; }
  int e;
  double m = frexp(x, e);
  if (m < 0.7071067811865476lf) { m *= 2.0lf; e -= 1; }
  double s = (m - 1.0lf) / (m + 1.0lf), z = s * s;
  double p = 1.0lf / 21.0lf;
  p = fma(p, z, 1.0lf / 19.0lf);
  p = fma(p, z, 1.0lf / 17.0lf);
  p = fma(p, z, 1.0lf / 15.0lf);
  p = fma(p, z, 1.0lf / 13.0lf);
  p = fma(p, z, 1.0lf / 11.0lf);
  p = fma(p, z, 1.0lf / 9.0lf);
  p = fma(p, z, 1.0lf / 7.0lf);
  p = fma(p, z, 1.0lf / 5.0lf);
  p = fma(p, z, 1.0lf / 3.0lf);
  double ln = 2.0lf * fma(s * z, p, s);
  return double(e - bias) + ln * 1.4426950408889634lf;
}
)",
    // float64 sin: Cody-Waite reduction by pi/2 in three fma steps, Taylor polynomials on
    // [-pi/4, pi/4] (truncation error below 1e-19).
    R"(double vkg_sind(double x) {
  if (vkg_isnand(x) || abs(x) == packDouble2x32(uvec2(0u, 0x7ff00000u))) return packDouble2x32(uvec2(0u, 0x7ff80000u));
  // pi/2 = P1 + P2 + P2T with P1 and P2 of 33 bits: k * P1 and k * P2 are exact for |k| < 2^20,
  // and the rounding error of the second subtraction is carried (as fdlibm's medium case does).
  precise double k = roundEven(x * 0.63661977236758134lf);
  precise double t = x - k * 1.57079632673412561417lf;
  precise double w = k * 6.07710050630396597660e-11lf;
  precise double r = t - w;
  w = k * 2.02226624879595063154e-21lf - ((t - r) - w);
  r = r - w;
  double z = r * r;
  double s = 2.8114572543455206e-15lf;
  s = fma(s, z, -7.647163731819816e-13lf);
  s = fma(s, z, 1.6059043836821613e-10lf);
  s = fma(s, z, -2.505210838544172e-08lf);
  s = fma(s, z, 2.7557319223985893e-06lf);
  s = fma(s, z, -1.984126984126984e-04lf);
  s = fma(s, z, 8.333333333333333e-03lf);
  s = fma(s, z, -1.6666666666666666e-01lf);
  s = fma(r * z, s, r);
  double c = -1.5619206968586225e-16lf;
  c = fma(c, z, 4.779477332387385e-14lf);
  c = fma(c, z, -1.1470745597729725e-11lf);
  c = fma(c, z, 2.08767569878681e-09lf);
  c = fma(c, z, -2.755731922398589e-07lf);
  c = fma(c, z, 2.48015873015873e-05lf);
  c = fma(c, z, -1.3888888888888889e-03lf);
  c = fma(c, z, 4.1666666666666664e-02lf);
  c = fma(c, z, -0.5lf);
  c = fma(c, z, 1.0lf);
  uint q = uint(int(k - 4.0lf * floor(k * 0.25lf)));
  double v = (q & 1u) != 0u ? c : s;
  return (q & 2u) != 0u ? -v : v;
}
)",
};

// The shared half conversions in GLSL's words.
constexpr const char* kGlslHalfMacros = R"(#define VKG_FN
#define VKG_U32 uint
#define vkg_u2f uintBitsToFloat
#define vkg_f2u floatBitsToUint
)";

}  // namespace

void use_function(bool (&used)[kNumGlslFunctions], GlslFunction h) {
  if (h == kBf16) h = kHalf;  // one block holds both conversions
  used[h] = true;
  if (h == kExp2F || h == kLog2F || h == kSinF || h == kSinFD) used[kIsNanF] = true;
  if (h == kSinF || h == kSinFD) used[kSinPoly] = true;
  if (h == kExp2D || h == kLog2D || h == kSinD) used[kIsNanD] = true;
}

std::string glsl_functions(const bool (&used)[kNumGlslFunctions]) {
  std::string out;
  for (int h = 0; h < kNumGlslFunctions; ++h) {
    if (!used[h]) continue;
    if (h == kHalf) out += std::string(kGlslHalfMacros) + kHalfConversions;
    out += kFunctionText[h];
  }
  return out;
}

}  // namespace vkgrad
