// cpu: the CPU backend — generated C compiled by the system compiler (compiler.hpp), run on the
// thread pool (thread_pool.hpp), memory from the C heap. Implements codegen/runtime.hpp.
// Never includes anything from src/vk.
#pragma once

#include <memory>

#include "codegen/runtime.hpp"
#include "codegen/target.hpp"

namespace vkgrad::cpu {

std::unique_ptr<Runtime> make_runtime();
// What the host's C compiler offers codegen (vector registers, caches, the GEMM lowering).
Target host_target();

}  // namespace vkgrad::cpu
