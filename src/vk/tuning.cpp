// vk: what codegen sees of a Vulkan device (Caps::target): its facts from the queried properties
// and features, the one table of facts no query gives, and the tuning table of device families.
#include <fmt/format.h>

#include <cstdio>
#include <span>

#include "vk/device.hpp"

namespace vkgrad::vk {
namespace {

// Facts that no Vulkan query gives, each with its reason: matched by driver and by the release
// its driverInfo names (the one place some drivers name it). Nothing else reads a driver's
// strings or versions.
struct UnqueryableFact {
  VkDriverId driver;
  int below_major;  // releases before this one (the first number of driverInfo after "Mesa ")
  bool Target::*fact;
  const char* reason;
};
const UnqueryableFact kUnqueryable[] = {
    {VK_DRIVER_ID_MESA_LLVMPIPE, 23, &Target::per_lane_uniform_loads,
     "lavapipe before Mesa 23 runs a storage-buffer load as a loop over the SIMD lanes with a "
     "branch per lane, and fetches a texel every lane reads once per lane; only timing shows it, "
     "and its driverVersion is 0.0.1 in every release, so driverInfo (\"Mesa 22.3.6 (LLVM "
     "15.0.6)\") is what tells"},
};

void apply_unqueryable(const Caps& c, Target& t) {
  int major = 0;
  std::sscanf(c.p12.driverInfo, "Mesa %d", &major);
  for (const UnqueryableFact& f : kUnqueryable)
    if (c.p12.driverID == f.driver && major > 0 && major < f.below_major) t.*(f.fact) = true;
}

bool lavapipe(const Target& t) { return t.driver_id == VK_DRIVER_ID_MESA_LLVMPIPE; }

// A device that runs on the CPU: a workgroup is a loop of SIMD vectors and a barrier a switch
// between them, so a few workgroups keep it busy and every invocation costs.
TuningProfile on_the_cpu() {
  TuningProfile p;
  p.workgroup_as_loop = true;
  p.group_reused_below = p.group_below = 64;
  return p;
}

// The device families, most specific first; the first whose facts hold is chosen.
const TuningRow kRows[] = {
    {"vulkan-lavapipe22", "lavapipe before Mesa 23: lanes loop over loads a subgroup shares",
     [](const Target& t) { return lavapipe(t) && t.per_lane_uniform_loads; },
     [] {
       // Texel fetches gather where its storage-buffer loads loop over the lanes, scalar ones
       // too, and loads every lane shares come once per subgroup through shuffles.
       TuningProfile p = on_the_cpu();
       p.texel_loads = p.texel_scalar_loads = true;
       p.share_uniform_loads = true;
       return p;
     }},
    {"vulkan-lavapipe", "lavapipe", lavapipe,
     [] {
       // vec4 texel fetches gather where storage-buffer loads loop over the lanes; scalar ones
       // are slower than its storage-buffer loads from Mesa 23 on.
       TuningProfile p = on_the_cpu();
       p.texel_loads = true;
       return p;
     }},
    {"vulkan-cpu", "a Vulkan device that runs on the CPU",
     [](const Target& t) { return t.kind == Target::Kind::cpu; }, on_the_cpu},
    {"vulkan-gpu", "a GPU", [](const Target&) { return true; },
     [] {
       // Tens of thousands of invocations in flight (132 multiprocessors of an H100 or H200
       // times the subgroups each needs), and matmul tiles staged in shared memory.
       TuningProfile p;
       p.min_invocations = 65536;
       p.stage_tiles = true;
       return p;
     }},
};

Target::Kind kind_of(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return Target::Kind::cpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return Target::Kind::integrated_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return Target::Kind::discrete_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return Target::Kind::virtual_gpu;
    default:
      return Target::Kind::other;
  }
}

}  // namespace

std::span<const TuningRow> tuning_table() { return kRows; }

Target target_of(const Caps& c, const Switches& sw) {
  const VkPhysicalDeviceLimits& l = c.props.limits;
  Target t;
  t.language = Target::Language::glsl;
  t.kind = kind_of(c.props.deviceType);
  t.vendor_id = c.props.vendorID;
  t.driver_id = static_cast<uint32_t>(c.p12.driverID);
  apply_unqueryable(c, t);
  t.threads = true;
  t.vector_floats = 4;  // vec4 loads and stores
  t.storage8 = c.f12.storageBuffer8BitAccess && sw.storage8;
  t.storage16 = c.f11.storageBuffer16BitAccess && sw.storage16;
  t.int64 = c.features.shaderInt64 && sw.int64;
  t.float64 = c.features.shaderFloat64 && sw.float64;
  t.local_memory = sw.local_memory;
  t.grid = sw.grid;
  t.fused_multiply_add = sw.fused_multiply_add;
  const bool compute = (c.p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  const VkSubgroupFeatureFlags ops = c.p11.subgroupSupportedOperations;
  t.subgroup_size = c.p11.subgroupSize;
  t.subgroup_arithmetic =
      sw.subgroup_arithmetic && compute && (ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  // Full subgroups of one size make every lane's share of a shuffle defined.
  t.subgroup_shuffle = c.has_full_subgroups && c.min_subgroup == c.max_subgroup &&
                       c.p11.subgroupSize > 1 && compute &&
                       (ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  // Graphs whose sets are updated after binding need the same of texel buffers.
  t.texel_buffers =
      !c.use_update_after_bind || c.f12.descriptorBindingUniformTexelBufferUpdateAfterBind;
  for (int i = 0; i < 3; ++i) {
    t.max_group_count[i] = l.maxComputeWorkGroupCount[i];
    t.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
  }
  t.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  t.max_shared_bytes = l.maxComputeSharedMemorySize;
  t.max_push_bytes = l.maxPushConstantsSize;
  t.preserve_nan = c.p12.shaderSignedZeroInfNanPreserveFloat32;

  // The profile, then what the facts and the switches allow of it.
  TuningProfile& p = t.tuning = choose_tuning(kRows, t, "vulkan-");
  p.stage_tiles =
      (p.stage_tiles || sw.force_stage_tiles) && sw.stage_tiles && t.grid && t.local_memory;
  p.texel_loads = p.texel_loads && sw.texel_loads && t.texel_buffers;
  p.texel_scalar_loads = p.texel_scalar_loads && p.texel_loads;
  // The loads shared are the scalar texel fetches each lane would make.
  p.share_uniform_loads =
      p.share_uniform_loads && sw.share_uniform_loads && t.subgroup_shuffle && p.texel_scalar_loads;
  return t;
}

}  // namespace vkgrad::vk
