// codegen: the GLSL printer's library — functions a shader gets only when it uses them
// (NaN tests by the bits, a sqrt that is NaN below zero), in one fixed order so the output is
// deterministic. Depends on nothing.
#pragma once

#include <string>

namespace vkgrad {

enum GlslFunction : int { kIsNanF, kIsNanD, kSqrtF, kNumGlslFunctions };

// Marks `h` used.
void use_function(bool (&used)[kNumGlslFunctions], GlslFunction h);
// The used helpers' code, in their fixed order.
std::string glsl_functions(const bool (&used)[kNumGlslFunctions]);

}  // namespace vkgrad
