// codegen: what a device is, as the code generator sees it — one description for every backend.
// Facts only: the runtime fills them from queries and probes (src/cpu from the host's CPUID and
// C compiler, src/vk from the Vulkan device's features, limits and probe shaders), never from a
// driver or version string (the one exception is src/vk/tuning.cpp's table of facts no query
// gives). How we tune for those facts is the TuningProfile the backend chose for them
// (tuning.hpp), carried here as `tuning`. The heuristics, apply_opts and the lowering passes read
// both; no pass names a backend or bakes in a machine's constants. Depends on nothing.
#pragma once

#include <cstdint>

#include "codegen/tuning.hpp"

namespace vkgrad {

struct Target {
  enum class Language : uint8_t { c, glsl };
  Language language = Language::c;

  // What kind of device this is; the tuning tables match on these.
  enum class Kind : uint8_t { host, cpu, integrated_gpu, discrete_gpu, virtual_gpu, other };
  Kind kind = Kind::host;
  // The host CPU (C targets): its vector instruction set and, on AMD, its CPUID family (0x19:
  // Zen 4, whose 512-bit operations go through 256-bit units).
  enum class Isa : uint8_t { generic, sse, avx, avx512, neon };  // avx: AVX or AVX2
  Isa isa = Isa::generic;
  int amd_family = 0;
  // A Vulkan device's PCI vendor and driver (VkDriverId), 0 elsewhere.
  uint32_t vendor_id = 0, driver_id = 0;
  // The device fetches an address that every lane of a subgroup loads once per lane (src/vk's
  // table of facts no query gives: lavapipe before Mesa 23).
  bool per_lane_uniform_loads = false;

  // Vectors: floats per vector register and how many registers (the register tiles).
  int vector_floats = 4;
  int vector_registers = 16;

  // Launch: one invocation per output (or per upcast tile), grouped into workgroups.
  bool threads = false;        // GPU-style launch (SPECIAL indices, workgroups, a grid)
  bool local_memory = false;   // shared memory and barriers: grouped reductions (Opt GROUP)
  bool grid = false;           // multi-dimensional workgroups on a 3-D grid (Opt LOCAL)
  uint32_t subgroup_size = 1;  // invocations per subgroup (SIMD width on a CPU device)
  // subgroupAdd in compute shaders: a grouped 32-bit sum folds within each subgroup, then the
  // subgroups' partial sums in shared memory (one barrier instead of a tree of them).
  bool subgroup_arithmetic = false;
  // subgroupShuffle in full subgroups of exactly subgroup_size lanes (TuningProfile::
  // share_uniform_loads).
  bool subgroup_shuffle = false;
  // Read-only inputs may be bound as uniform texel buffers (TuningProfile::texel_loads).
  bool texel_buffers = false;
  uint32_t max_workgroup_invocations = 1;
  uint32_t max_workgroup_size[3] = {1, 1, 1};  // per dimension (x, y, z)
  uint32_t max_group_count[3] = {1, 1, 1};
  uint32_t max_shared_bytes = 0;
  uint32_t max_push_bytes = 0;

  // Data types beyond 32-bit ints and float32 (a kernel needing one the target lacks is a
  // DTypeError naming the feature).
  bool storage8 = true;   // bool, int8, uint8 buffers
  bool storage16 = true;  // int16, uint16, float16, bfloat16 buffers
  bool int64 = true;
  bool float64 = true;

  // Transcendentals the language computes itself, accurately and fast enough; the others become
  // arithmetic (decompose_transcendentals). float16 and bfloat16 compute in float32. By default
  // none: a float64 one then needs int64 for its bit manipulation.
  struct Native {
    bool exp2 = false, log2 = false, sin = false;
  };
  Native native32, native64;

  // Driver workarounds (found by the runtime's probes, src/vk/quirks.hpp). opaque_narrowing:
  // the driver folds double(float(x)) back to x, so a float64 -> float32 cast is rendered through
  // an integer operation its optimizer cannot see through.
  bool opaque_narrowing = false;
  // opaque_widening: the driver folds a widened 32-bit integer into an ordered compare with a
  // 64-bit constant and gets it wrong, so 32 -> 64-bit integer casts go through an xor with a
  // zero it cannot prove zero.
  bool opaque_widening = false;
  // preserve_nan: the language may assume floats are never NaN or infinite unless told (SPIR-V:
  // NVIDIA folds x < lo ? lo : x into a NaN-dropping min), so every GLSL shader declares the
  // float-controls mode SignedZeroInfNanPreserve for 32-bit floats where the device offers it.
  bool preserve_nan = false;
  // exact_division: the language's float32 division is correctly rounded. Vulkan allows 2.5 ULP
  // (NVIDIA's is a reciprocal and a product); without it, decompose refines each quotient.
  bool exact_division = true;
  // fused_multiply_add: a float32 sum of products accumulates with the language's fma, one
  // rounding per step (a GPU issues a multiply and an add as two instructions, an fma as one).
  // Off on the C targets, which keep every product rounded (-ffp-contract=off; their GEMM has
  // its own fma micro-kernel).
  bool fused_multiply_add = false;

  // The C targets' own part: the CPU GEMM (codegen/gemm/).
  struct Host {
    // The target renders a large float32 matmul-like kernel as a packed, blocked GEMM (Opt GEMM).
    bool gemm = false;
    // Caches the GEMM blocks for: one B micro panel in l1, an A block in l2.
    int64_t l1_bytes = 32 * 1024;
    int64_t l2_bytes = 256 * 1024;
  };
  Host host;

  // How we tune for these facts: the backend's choice from its table (tuning.hpp).
  TuningProfile tuning;
};

}  // namespace vkgrad
