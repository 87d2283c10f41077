// cpu: the CPU backend — generated C compiled by the system compiler (compiler.hpp), run on the
// thread pool (thread_pool.hpp), memory from the C heap. Implements runtime/device.hpp and
// describes itself for runtime/registry.hpp. Never includes anything from src/vk.
#pragma once

#include <memory>

#include "codegen/target.hpp"
#include "runtime/device.hpp"
#include "runtime/registry.hpp"

namespace vkgrad::cpu {

// Kernels without float64 values run with subnormal results flushed to zero (MXCSR's FTZ:
// x86 takes a microcode assist per operation on them), as Vulkan devices may; float64 keeps
// IEEE gradual underflow. make_runtime() flushes unless VKGRAD_CPU_SUBNORMALS=1.
std::unique_ptr<Runtime> make_runtime();
std::unique_ptr<Runtime> make_runtime(bool flush_subnormals);
// What the host's C compiler offers codegen (vector registers, caches, the GEMM lowering), the
// same on every machine (the golden tests render with it).
Target host_target();
// host_target() tuned for this processor (its vector registers without AVX-512, the GEMM's
// register tile on AMD Zen 4): what the runtime renders with.
Target tuned_host_target();

// The backend "CPU": one device, the host, whatever else opens.
Backend backend();

}  // namespace vkgrad::cpu
