// cpu: the CPU backend — generated C compiled by the system compiler (compiler.hpp), run on the
// thread pool (thread_pool.hpp), memory from the C heap. Implements runtime/device.hpp and
// describes itself for runtime/registry.hpp. Never includes anything from src/vk.
#pragma once

#include <memory>
#include <span>

#include "codegen/target.hpp"
#include "runtime/device.hpp"
#include "runtime/registry.hpp"

namespace vkgrad::cpu {

// Kernels without float64 values run with subnormal results flushed to zero (MXCSR's FTZ:
// x86 takes a microcode assist per operation on them), as Vulkan devices may; float64 keeps
// IEEE gradual underflow. make_runtime() flushes unless VKGRAD_CPU_SUBNORMALS=1.
std::unique_ptr<Runtime> make_runtime();
std::unique_ptr<Runtime> make_runtime(bool flush_subnormals);
// What the C compiler offers codegen on a CPU with this instruction set (vector registers,
// caches, the GEMM lowering), with the profile the CPU tuning table (target.cpp) chooses for it
// and the AMD family (VKGRAD_TUNING forces a row).
Target target_for(Target::Isa isa, int amd_family = 0);
// The CPU families' tuning table, most specific first.
std::span<const TuningRow> tuning_table();
// target_for(AVX-512), the same on every machine (the golden tests render with it).
Target host_target();
// target_for this processor's instruction set and family: what the runtime renders with.
Target tuned_host_target();

// The backend "CPU": one device, the host, whatever else opens.
Backend backend();

}  // namespace vkgrad::cpu
