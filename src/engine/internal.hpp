// engine: what the engine's files share and nothing outside src/engine includes (realize.hpp is
// the engine's interface). Names no backend: devices open through runtime/registry.hpp.
#pragma once

namespace vkgrad::engine {

// Registers every backend this build has, once (backends.cpp); called before the registry is
// read.
void register_backends();

}  // namespace vkgrad::engine
