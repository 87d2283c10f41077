// ir: DEBUG, the process's debug level, which every stage's output reads (codegen's Opt lists and
// sources, the engine's kernel runs and timings, the Vulkan compiler's messages).
#pragma once

namespace vkgrad {

// DEBUG from the environment (an empty value counts as unset), read once.
int debug_level();

}  // namespace vkgrad
