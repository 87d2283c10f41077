// codegen: the GLSL printer's helper functions (see glsl_functions.hpp).
#include "codegen/glsl_functions.hpp"

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
    R"(float vkg_sqrtf(float x) { return x < 0.0 ? uintBitsToFloat(0x7fc00000u) : sqrt(x); }
)",
};

}  // namespace

void use_function(bool (&used)[kNumGlslFunctions], GlslFunction h) { used[h] = true; }

std::string glsl_functions(const bool (&used)[kNumGlslFunctions]) {
  std::string out;
  for (int h = 0; h < kNumGlslFunctions; ++h) {
    if (!used[h]) continue;
    out += kFunctionText[h];
  }
  return out;
}

}  // namespace vkgrad
