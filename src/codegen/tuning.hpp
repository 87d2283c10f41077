// codegen: how we tune for a device, apart from what the device is (target.hpp). A TuningProfile
// holds every number and preference the heuristics read, and the lowering choices that are
// preferences rather than facts (texel buffers, shared uniform loads, the GEMM's tile height).
// Each backend picks one from its own table of device families by the Target's facts
// (src/cpu/target.cpp, src/vk/tuning.cpp); VKGRAD_TUNING=<name> forces a row of that table.
// A kernel's finds on one device are no profile's business: they live in the BEAM cache.
// Depends on nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace vkgrad {

struct Target;

struct TuningProfile {
  std::string name = "generic";

  // ---- C targets: the packed GEMM (gemm.hpp) and Winograd ----------------------------------
  // Rows of the GEMM's register tile; 0: what the vector registers hold beside a few for the
  // other operand and addresses.
  int gemm_rows = 0;
  // Packed operand panels may reach this many bytes per thread (B's block of all of k).
  int64_t panel_bytes = int64_t{1} << 20;
  // A stride-1 3 x 3 convolution over at least this many 2 x 2 output tiles, its batch's images
  // together, runs as Winograd F(2 x 2, 3 x 3): 2.25x fewer multiply-adds for transforms that
  // pay where multiply-adds are dear; each image needs winograd_min_image_tiles for its own
  // transforms to pay, or winograd_min_tiles where that is less.
  int64_t winograd_min_tiles = 256;
  int64_t winograd_min_image_tiles = 64;

  // ---- threads targets (GPU-style launches) --------------------------------------------------
  // A workgroup runs as a loop of SIMD vectors (a Vulkan device on the CPU): every invocation
  // and barrier costs, so workgroups stay small, lanes go along one axis, and register tiles
  // grow instead.
  bool workgroup_as_loop = false;
  // Invocations a launch needs to keep every core busy (a GPU's multiprocessors times the
  // subgroups each needs in flight); register tiles shrink below that. 0: no minimum.
  int64_t min_invocations = 0;
  // A reduction to fewer outputs than this groups its steps over a workgroup (Opt GROUP): with
  // reuse of a loaded operand (a matmul), without, and where a workgroup runs as a loop.
  int64_t group_reused_below = 4096;
  int64_t group_below = 65536;
  // The heuristics stage a matmul's operand tiles in shared memory (Opt STAGE; a search may
  // still try it where this is off). Needs Target::grid and Target::local_memory.
  bool stage_tiles = false;
  // A read-only buffer of 32-bit elements that a kernel loads only as vec4s is bound as a
  // uniform texel buffer of 128-bit texels and read with texelFetch (where a storage-buffer load
  // is a loop over the SIMD lanes and a texel fetch one gather); with texel_scalar_loads, one
  // loaded only as scalars too (32-bit texels). Needs Target::texel_buffers.
  bool texel_loads = false;
  bool texel_scalar_loads = false;
  // A register array of loads that every lane of a workgroup makes at the same addresses (a
  // matmul's or a convolution's weights with the outputs' channels on the grid) is loaded one
  // element per lane and shared with subgroupShuffle, where the device would fetch an address
  // every lane reads once per lane. Needs Target::subgroup_shuffle; the device runs each row of
  // a workgroup's x invocations in subgroups of subgroup_size consecutive lanes, the last one
  // with the first x % subgroup_size lanes active. The heuristics then shape tiles and lanes for
  // it (tall matmul tiles, whole-subgroup lanes, wider convolution tiles).
  bool share_uniform_loads = false;
};

// One row of a backend's table: a device family, the facts that pick it, and its profile.
struct TuningRow {
  const char* name;
  const char* family;  // what the row is for, as `vkgrad info` prints it
  bool (*matches)(const Target&);
  TuningProfile (*profile)();
};

// The first row whose `matches` holds for `target` (the last row should match everything), or
// the row VKGRAD_TUNING names where it names one of these; its profile, named after the row.
// Throws DeviceError where VKGRAD_TUNING names no row of any backend's table that starts with
// `prefix` ("cpu-", "vulkan-") or any other known prefix.
TuningProfile choose_tuning(std::span<const TuningRow> table, const Target& target,
                            const std::string& prefix);

// "name (family)" of the profile chosen for `target` from `table`, and whether VKGRAD_TUNING
// forced it, for `vkgrad info`.
std::string describe_tuning(std::span<const TuningRow> table, const TuningProfile& chosen);

// The profile's every field, for cache identities (target_key).
std::string tuning_key(const TuningProfile& t);

}  // namespace vkgrad
