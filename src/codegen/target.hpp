// codegen: what a device offers the code generator — one description for every backend. The
// runtime fills it (src/cpu for the host's C compiler, src/vk from the Vulkan device's features
// and limits); the heuristics, apply_opts and the lowering passes read it, so no pass names a
// backend or bakes in a machine's constants. Depends on nothing.
#pragma once

#include <cstdint>

namespace vkgrad {

struct Target {
  enum class Language : uint8_t { c, glsl };
  Language language = Language::c;

  // Vectors: floats per vector register and how many registers (the register tiles).
  int vector_floats = 4;
  int vector_registers = 16;
  // Caches the CPU GEMM blocks for: one B micro panel in l1, an A block in l2.
  int64_t l1_bytes = 32 * 1024;
  int64_t l2_bytes = 256 * 1024;
  // Packed operand panels may reach this many bytes per thread (B's block of all of k).
  int64_t panel_bytes = int64_t{1} << 20;
  // The target renders a large float32 matmul-like kernel as a packed, blocked GEMM (Opt GEMM).
  bool gemm = false;
  // Rows of the GEMM's register tile; 0: what the vector registers hold beside a few for the
  // other operand and addresses.
  int gemm_rows = 0;
  // A stride-1 3 x 3 convolution over at least this many 2 x 2 output tiles, its batch's images
  // together, runs as Winograd F(2 x 2, 3 x 3) (Opt GEMM(3, r)): 2.25x fewer multiply-adds for
  // transforms that pay where multiply-adds are dear. Each image needs 64 tiles (16 x 16 outputs)
  // for its own transforms to pay, or this many where it is less.
  int64_t winograd_min_tiles = 256;

  // Launch: one invocation per output (or per upcast tile), grouped into workgroups.
  bool threads = false;       // GPU-style launch (SPECIAL indices, workgroups, a grid)
  bool local_memory = false;  // shared memory and barriers: grouped reductions (Opt GROUP)
  // The heuristics stage a matmul's operand tiles in shared memory (Opt STAGE; a search may
  // still try it where this is off).
  bool shared_tiles = false;
  bool grid = false;           // multi-dimensional workgroups on a 3-D grid (Opt LOCAL)
  bool cpu_device = false;     // the device is a CPU (lavapipe): a workgroup is a loop of SIMD
                               // vectors, so the heuristics keep workgroups small
  uint32_t subgroup_size = 1;  // invocations per subgroup (SIMD width on a CPU device)
  // subgroupAdd in compute shaders: a grouped 32-bit sum folds within each subgroup, then the
  // subgroups' partial sums in shared memory (one barrier instead of a tree of them).
  bool subgroup_arithmetic = false;
  // Invocations a launch needs to keep every core busy (a GPU's multiprocessors times the
  // subgroups each needs in flight); register tiles shrink below that. 0: no minimum.
  int64_t min_invocations = 0;
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

  // Driver workarounds (found by the runtime, src/vk/quirks.hpp). opaque_narrowing: the
  // driver folds double(float(x)) back to x, so a float64 -> float32 cast is rendered through
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
  // texel_loads: a read-only buffer of 32-bit elements that a kernel loads only as vec4s is
  // bound as a uniform texel buffer of 128-bit texels and read with texelFetch; with
  // texel_scalar_loads, one loaded only as scalars too (32-bit texels). On lavapipe 22.3 a
  // storage-buffer load is a loop over the SIMD lanes with a branch per lane, a texel fetch one
  // gather (a matmul 2-3x faster, a 3 x 3 convolution about 2x); Mesa 25's lavapipe gains as much
  // from vec4 fetches (matmul 1024 7.3 -> 23 GFLOPS) but loses from scalar ones (ResNet-18 under
  // Jit 0.2 -> 0.6 s: its weights' loads, the same in every lane, are cheap storage-buffer loads).
  bool texel_loads = false;
  bool texel_scalar_loads = false;
  // shuffle_uniform_loads: a register array of loads that every lane of a workgroup makes at the
  // same addresses (a matmul's or a convolution's weights with the outputs' channels on the
  // grid) is loaded one element per lane and shared with subgroupShuffle (GLSL). The device runs
  // a workgroup as lavapipe does: each row of its x invocations in subgroups of subgroup_size
  // consecutive lanes, the last one with the first x % subgroup_size lanes active; the lanes
  // that share are those. lavapipe 22.3 fetches a texel every lane reads once per lane: in the
  // encoder's matmuls that was a sixth of their time.
  bool shuffle_uniform_loads = false;
};

}  // namespace vkgrad
