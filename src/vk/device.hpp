// vk: the Vulkan instance (one per process, with the Khronos validation layer under
// VKGRAD_VALIDATION=1), physical devices in selection order, what each can do (Caps, with the
// VKGRAD_VK_DISABLE switches applied; Caps::target, what codegen sees of it: tuning.cpp) and the
// logical device with one compute queue. Depends on volk and codegen's Target; knows nothing of
// kernels or memory.
#pragma once

#include <volk.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/target.hpp"

namespace vkgrad::vk {

// getenv that treats an empty value as unset.
const char* env(const char* name);

// The optional features VKGRAD_VK_DISABLE=<comma list> may turn off: true means "allowed".
// `mapped` off forces device-local memory with staging copies even where memory is also
// host-visible (exercises the path discrete GPUs take); `update_after_bind` off makes graph
// replays with new buffers re-record.
struct Switches {
  bool fp16 = true, int8 = true, int16 = true, int64 = true, float64 = true;
  bool storage8 = true, storage16 = true;
  bool push_descriptor = true, bda = true, timestamps = true, timeline = true;
  bool update_after_bind = true, mapped = true;
  bool spin_wait = true;  // a GPU's waits poll briefly before they block (Queue::wait)
  // What codegen may use, each named as the Target fact or the TuningProfile preference it gates.
  bool local_memory = true;  // grouped reductions in shared memory (Opt GROUP)
  bool grid = true;          // workgroups as a 3-D grid of multi-dimensional ones (Opt LOCAL)
  bool subgroup_arithmetic = true;  // grouped reductions fold within subgroups (subgroupAdd)
  bool fused_multiply_add = true;   // float32 sums of products accumulate with fma
  bool texel_loads = true;          // inputs read as texel buffers where the profile says so
  bool stage_tiles = true;          // matmuls stage operand tiles in shared memory (Opt STAGE)
  bool share_uniform_loads = true;  // uniform loads shared by subgroupShuffle where profiled
  // VKGRAD_VK_ENABLE=stage_tiles: staged tiles where the profile leaves them off (a device that
  // runs on the CPU; the tests run them on lavapipe this way).
  bool force_stage_tiles = false;
};
// The words of a comma-separated list (an environment switch's), spaces trimmed, empty ones
// skipped.
std::vector<std::string_view> words_of(std::string_view list);
// Parses VKGRAD_VK_DISABLE and VKGRAD_VK_ENABLE; throws DeviceError naming the known switches on
// an unknown one.
Switches read_switches();

// The process's instance. Created on first use and never destroyed: drivers and layers are
// unloaded at exit in an order we do not control, and destroying an instance after them
// crashes. Devices, which users create and destroy, are torn down properly.
class Instance {
 public:
  // Throws DeviceError when the loader, a Vulkan 1.2 instance or (with VKGRAD_VALIDATION=1) the
  // validation layer is missing. Thread-safe.
  static Instance& get();

  VkInstance handle = VK_NULL_HANDLE;
  uint32_t api_version = 0;
  bool validation = false;
  // Physical devices that support Vulkan 1.2, in selection order (discrete > integrated >
  // virtual > cpu > other; ties keep the loader's order).
  std::vector<VkPhysicalDevice> devices;
  std::string skipped;  // why devices were left out (older than Vulkan 1.2), for error messages
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;

 private:
  Instance() = default;
};

// Validation-layer messages (warnings and errors) counted process-wide.
extern std::atomic<int64_t> g_validation_messages;

// What one physical device offers, and which of it this runtime uses (`use_*`: available and
// not switched off). The structs are the driver's answers with pNext cleared.
struct Caps {
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceVulkan11Properties p11{};
  VkPhysicalDeviceVulkan12Properties p12{};
  VkPhysicalDeviceFeatures features{};
  VkPhysicalDeviceVulkan11Features f11{};
  VkPhysicalDeviceVulkan12Features f12{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t api_version = 0;                     // min(device, instance)
  uint32_t min_subgroup = 0, max_subgroup = 0;  // Vulkan 1.3 subgroup size control, else 0
  uint32_t max_push_descriptors = 0;
  uint32_t queue_family = 0;
  uint32_t timestamp_bits = 0;  // of the chosen queue family
  bool has_push_descriptor = false, has_cooperative_matrix = false;
  bool has_portability_subset = false;
  bool has_full_subgroups = false;  // Vulkan 1.3 computeFullSubgroups

  // What the runtime uses of the device; the kernels' features are in `target`.
  bool use_fp16 = false, use_int8 = false, use_int16 = false;
  bool use_push_descriptor = false, use_bda = false, use_timestamps = false;
  bool use_timeline = false, use_update_after_bind = false;
  bool use_mapped = false;
  bool use_spin_wait = false;  // a device that is not the CPU, and the switch on
  bool use_subgroup_extended_types = false;
  // What codegen sees: the device's facts and the tuning profile chosen for them (tuning.cpp),
  // with the switches applied; the runtime adds the probed quirks.
  Target target;
};
Caps query_caps(VkPhysicalDevice device, uint32_t instance_api, const Switches& switches);
// tuning.cpp: Caps::target from the queried properties and features, with the profile the
// Vulkan tuning table chooses for them and the switches applied.
Target target_of(const Caps& caps, const Switches& switches);
// The Vulkan device families' tuning table, most specific first.
std::span<const TuningRow> tuning_table();

// "VULKAN:0: llvmpipe (...) (cpu), driver llvmpipe Mesa 22.3.6, Vulkan 1.3.230"
std::string summary_line(int index, const Caps& caps);
// summary_line, then the capabilities, one topic per line.
std::string describe_caps(int index, const Caps& caps);
const char* type_name(VkPhysicalDeviceType type);

// A logical device with one compute queue and the features Caps says to use.
class Device {
 public:
  Device(VkPhysicalDevice physical, int index, const Switches& switches);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice handle = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  Caps caps;
  int index = 0;
  std::string name() const { return "VULKAN:" + std::to_string(index); }
};

}  // namespace vkgrad::vk
