// vk: instance, physical devices, capabilities and the logical device (see device.hpp).
#include "vk/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vkgrad/error.hpp>

#include "vk/vk_check.hpp"

namespace vkgrad::vk {

std::atomic<int64_t> g_validation_messages{0};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

std::vector<std::string_view> words_of(std::string_view rest) {
  std::vector<std::string_view> out;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view word = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
    while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
    if (!word.empty()) out.push_back(word);
  }
  return out;
}

Switches read_switches() {
  Switches s;
  if (const char* on = env("VKGRAD_VK_ENABLE"))
    for (std::string_view word : words_of(on)) {
      if (word != "stage_tiles" && word != "shared_tiles")
        throw DeviceError(
            fmt::format("VKGRAD_VK_ENABLE: unknown feature '{}' (known: stage_tiles)", word));
      s.force_stage_tiles = true;
    }
  const char* list = env("VKGRAD_VK_DISABLE");
  if (list == nullptr) return s;
  struct Named {
    std::string_view name;
    bool Switches::*flag;
  };
  static constexpr Named kNames[] = {
      {"fp16", &Switches::fp16},
      {"int8", &Switches::int8},
      {"int16", &Switches::int16},
      {"int64", &Switches::int64},
      {"float64", &Switches::float64},
      {"storage8", &Switches::storage8},
      {"storage16", &Switches::storage16},
      {"push_descriptor", &Switches::push_descriptor},
      {"bda", &Switches::bda},
      {"timestamps", &Switches::timestamps},
      {"timeline", &Switches::timeline},
      {"update_after_bind", &Switches::update_after_bind},
      {"mapped", &Switches::mapped},
      {"spin_wait", &Switches::spin_wait},
      {"local_memory", &Switches::local_memory},
      {"grid", &Switches::grid},
      {"subgroup_arithmetic", &Switches::subgroup_arithmetic},
      {"fused_multiply_add", &Switches::fused_multiply_add},
      {"texel_loads", &Switches::texel_loads},
      {"stage_tiles", &Switches::stage_tiles},
      {"share_uniform_loads", &Switches::share_uniform_loads},
  };
  // The names these switches had before they took their features' names.
  static constexpr std::pair<std::string_view, std::string_view> kFormerNames[] = {
      {"fp64", "float64"},
      {"shared_reduce", "local_memory"},
      {"subgroup", "subgroup_arithmetic"},
      {"fma", "fused_multiply_add"},
      {"texel", "texel_loads"},
      {"shared_tiles", "stage_tiles"},
      {"shuffle_loads", "share_uniform_loads"},
  };
  for (std::string_view word : words_of(list)) {
    for (const auto& [former, name] : kFormerNames)
      if (word == former) word = name;
    auto it = std::find_if(std::begin(kNames), std::end(kNames),
                           [&](const Named& n) { return n.name == word; });
    if (it == std::end(kNames)) {
      std::string known;
      for (const Named& n : kNames) known += (known.empty() ? "" : ",") + std::string(n.name);
      throw DeviceError(
          fmt::format("VKGRAD_VK_DISABLE: unknown feature '{}' (known: {})", word, known));
    }
    s.*(it->flag) = false;
  }
  return s;
}

namespace {

std::string version_text(uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                     VK_API_VERSION_PATCH(v));
}

// Every warning and error the layer reports counts (tests fail on any); info and verbose
// messages, which include the loader's chatter, are never requested.
VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  ++g_validation_messages;
  fmt::print(stderr, "vkgrad: Vulkan validation {}: {}\n",
             severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
             data != nullptr && data->pMessage != nullptr ? data->pMessage : "(no message)");
  return VK_FALSE;
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

std::vector<std::string> instance_extensions() {
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  std::vector<std::string> names;
  for (const auto& e : exts) names.emplace_back(e.extensionName);
  return names;
}

void create_instance(Instance& inst) {
  if (VkResult r = volkInitialize(); r != VK_SUCCESS)
    throw DeviceError("Vulkan: no Vulkan loader (libvulkan.so.1 could not be loaded)");
  const uint32_t loader = volkGetInstanceVersion();
  if (loader < VK_API_VERSION_1_2)
    throw DeviceError(fmt::format("Vulkan: the loader supports Vulkan {}; vkgrad needs 1.2",
                                  version_text(loader)));
  inst.api_version = std::min<uint32_t>(loader, VK_API_VERSION_1_3);

  const char* validation = env("VKGRAD_VALIDATION");
  inst.validation = validation != nullptr && std::string_view(validation) != "0";
  std::vector<const char*> layers, extensions;
  if (inst.validation) {
    if (!has_layer("VK_LAYER_KHRONOS_validation"))
      throw DeviceError(
          "Vulkan: VKGRAD_VALIDATION=1 but the VK_LAYER_KHRONOS_validation layer is not "
          "installed (Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  const std::vector<std::string> available = instance_extensions();
  const bool portability =
      std::find(available.begin(), available.end(),
                VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME) != available.end();
  if (portability) extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);

  VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkgrad";
  app.pEngineName = "vkgrad";
  app.apiVersion = inst.api_version;
  // Chained into the create info so messages about instance creation itself are caught too.
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = on_validation_message;
  VkInstanceCreateInfo info{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pNext = inst.validation ? &messenger : nullptr;
  info.flags = portability ? VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR : 0;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkResult r = vkCreateInstance(&info, nullptr, &inst.handle);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw DeviceError("Vulkan: no Vulkan driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
  vk_check(r, "vkCreateInstance");
  volkLoadInstance(inst.handle);

  if (inst.validation) {
    // Creating the messenger is the instance's first use of the layer; a failure here means no
    // messages would be counted, which must not pass silently.
    vk_check(vkCreateDebugUtilsMessengerEXT(inst.handle, &messenger, nullptr, &inst.messenger),
             "vkCreateDebugUtilsMessengerEXT");
  }

  uint32_t n = 0;
  vk_check(vkEnumeratePhysicalDevices(inst.handle, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> all(n);
  if (n > 0) {
    VkResult e = vkEnumeratePhysicalDevices(inst.handle, &n, all.data());
    if (e != VK_INCOMPLETE) vk_check(e, "vkEnumeratePhysicalDevices");
    all.resize(n);
  }
  std::vector<std::pair<int, VkPhysicalDevice>> ranked;
  for (VkPhysicalDevice pd : all) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion < VK_API_VERSION_1_2) {
      inst.skipped += fmt::format("{}{} supports only Vulkan {}", inst.skipped.empty() ? "" : "; ",
                                  p.deviceName, version_text(p.apiVersion));
      continue;
    }
    ranked.emplace_back(type_rank(p.deviceType), pd);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [rank, pd] : ranked) inst.devices.push_back(pd);
}

}  // namespace

// Instance has a private constructor, so the object is built here, inside a member.
Instance& Instance::get() {
  static std::mutex mu;
  static Instance* instance = nullptr;
  std::lock_guard lock(mu);
  if (instance == nullptr) {
    // A failed attempt (no loader, say) is retried on the next call: it costs a dlopen.
    auto* fresh = new Instance();
    try {
      create_instance(*fresh);
    } catch (...) {
      if (fresh->handle != VK_NULL_HANDLE) vkDestroyInstance(fresh->handle, nullptr);
      delete fresh;
      throw;
    }
    instance = fresh;
  }
  return *instance;
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

Caps query_caps(VkPhysicalDevice pd, uint32_t instance_api, const Switches& sw) {
  Caps c;
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  auto has = [&](const char* name) {
    return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
      return std::strcmp(e.extensionName, name) == 0;
    });
  };
  c.has_push_descriptor = has(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  c.has_cooperative_matrix = has("VK_KHR_cooperative_matrix") || has("VK_NV_cooperative_matrix");
  c.has_portability_subset = has("VK_KHR_portability_subset");

  VkPhysicalDeviceProperties basic;
  vkGetPhysicalDeviceProperties(pd, &basic);
  c.api_version = std::min(basic.apiVersion, instance_api);
  const bool v13 = c.api_version >= VK_API_VERSION_1_3;

  VkPhysicalDeviceProperties2 p2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceVulkan13Properties p13{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDevicePushDescriptorPropertiesKHR push{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
  c.p11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES;
  c.p12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES;
  p2.pNext = &c.p11;
  c.p11.pNext = &c.p12;
  void** tail = &c.p12.pNext;
  if (v13) {
    *tail = &p13;
    tail = &p13.pNext;
  }
  if (c.has_push_descriptor) *tail = &push;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  c.props = p2.properties;
  c.p11.pNext = c.p12.pNext = nullptr;
  if (v13) {
    c.min_subgroup = p13.minSubgroupSize;
    c.max_subgroup = p13.maxSubgroupSize;
  }
  c.max_push_descriptors = c.has_push_descriptor ? push.maxPushDescriptors : 0;

  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  c.f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  c.f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceVulkan13Features f13{.sType =
                                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  f2.pNext = &c.f11;
  c.f11.pNext = &c.f12;
  if (v13) c.f12.pNext = &f13;
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  c.has_full_subgroups = v13 && f13.computeFullSubgroups;
  c.features = f2.features;
  c.f11.pNext = c.f12.pNext = nullptr;
  vkGetPhysicalDeviceMemoryProperties(pd, &c.memory);

  // One compute queue: the first compute family that also has timestamps, else the first.
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  int chosen = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) continue;
    if (chosen < 0 ||
        (families[chosen].timestampValidBits == 0 && families[i].timestampValidBits > 0))
      chosen = static_cast<int>(i);
  }
  if (chosen < 0)
    throw DeviceError(fmt::format("Vulkan: {} has no compute queue", c.props.deviceName));
  c.queue_family = static_cast<uint32_t>(chosen);
  c.timestamp_bits = families[chosen].timestampValidBits;

  c.use_fp16 = c.f12.shaderFloat16 && sw.fp16;
  c.use_int8 = c.f12.shaderInt8 && sw.int8;
  c.use_int16 = c.features.shaderInt16 && sw.int16;
  c.use_push_descriptor = c.has_push_descriptor && sw.push_descriptor;
  c.use_bda = c.f12.bufferDeviceAddress && sw.bda;
  c.use_timestamps = c.timestamp_bits > 0 && c.props.limits.timestampPeriod > 0 && sw.timestamps;
  c.use_timeline = c.f12.timelineSemaphore && sw.timeline;
  c.use_update_after_bind =
      c.f12.descriptorBindingStorageBufferUpdateAfterBind && sw.update_after_bind;
  c.use_mapped = sw.mapped;
  c.use_spin_wait = sw.spin_wait && c.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  c.use_subgroup_extended_types = c.f12.shaderSubgroupExtendedTypes;
  c.target = target_of(c, sw);
  return c;
}

namespace {

std::string driver_text(const Caps& c) {
  std::string name = c.p12.driverName;
  std::string info = c.p12.driverInfo;
  if (!info.empty()) return name.empty() ? info : name + " " + info;
  const uint32_t v = c.props.driverVersion;
  if (c.props.vendorID == 0x10DE)  // NVIDIA packs 10.8.8.6 bits
    return fmt::format("{} {}.{}.{}", name, v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff);
  return fmt::format("{} {}", name, version_text(v));
}

std::string subgroup_ops(VkSubgroupFeatureFlags f) {
  static constexpr std::pair<VkSubgroupFeatureFlagBits, const char*> kOps[] = {
      {VK_SUBGROUP_FEATURE_BASIC_BIT, "basic"},
      {VK_SUBGROUP_FEATURE_VOTE_BIT, "vote"},
      {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic"},
      {VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative"},
      {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered"},
      {VK_SUBGROUP_FEATURE_QUAD_BIT, "quad"},
  };
  std::string s;
  for (const auto& [bit, name] : kOps)
    if (f & bit) s += (s.empty() ? "" : " ") + std::string(name);
  return s.empty() ? "none" : s;
}

std::string bytes_text(uint64_t b) {
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 30) == 0)
    return fmt::format("{} GiB", b >> 30);
  if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0)
    return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// "yes", "no", or "off (VKGRAD_VK_DISABLE)" for a feature the device has but a switch disabled.
const char* state(bool available, bool used) {
  return used ? "yes" : available ? "off (VKGRAD_VK_DISABLE)" : "no";
}

}  // namespace

std::string summary_line(int index, const Caps& c) {
  return fmt::format("VULKAN:{}: {} ({}), driver {}, Vulkan {}", index, c.props.deviceName,
                     type_name(c.props.deviceType), driver_text(c),
                     version_text(c.props.apiVersion));
}

std::string describe_caps(int index, const Caps& c) {
  const VkPhysicalDeviceLimits& l = c.props.limits;
  std::string s = summary_line(index, c);
  s += fmt::format("\n  arithmetic: fp16 {}, int8 {}, int16 {}, int64 {}, fp64 {}",
                   state(c.f12.shaderFloat16, c.use_fp16), state(c.f12.shaderInt8, c.use_int8),
                   state(c.features.shaderInt16, c.use_int16),
                   state(c.features.shaderInt64, c.target.int64),
                   state(c.features.shaderFloat64, c.target.float64));
  s += fmt::format(", NaN-preserving float32 {}, fused multiply-add sums {}",
                   c.p12.shaderSignedZeroInfNanPreserveFloat32 ? "yes" : "no",
                   c.target.fused_multiply_add ? "yes" : "off (VKGRAD_VK_DISABLE)");
  s += fmt::format("\n  tuning {}", describe_tuning(tuning_table(), c.target.tuning));
  s += fmt::format("\n  inputs read through texel buffers {}",
                   c.target.tuning.texel_scalar_loads ? "yes (vec4s and scalars)"
                   : c.target.tuning.texel_loads      ? "yes (vec4s)"
                                                      : "no (storage buffers)");
  s += fmt::format("\n  storage: 8-bit {}, 16-bit {}",
                   state(c.f12.storageBuffer8BitAccess, c.target.storage8),
                   state(c.f11.storageBuffer16BitAccess, c.target.storage16));
  s += fmt::format("\n  subgroups: size {}", c.p11.subgroupSize);
  if (c.min_subgroup != 0 && c.min_subgroup != c.max_subgroup)
    s += fmt::format(" ({}..{})", c.min_subgroup, c.max_subgroup);
  s += fmt::format(", ops {}{}", subgroup_ops(c.p11.subgroupSupportedOperations),
                   (c.p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)
                       ? ""
                       : " (not in compute shaders)");
  s += fmt::format("; uniform loads shared by shuffles {}",
                   c.target.tuning.share_uniform_loads ? "yes"
                   : !c.target.subgroup_shuffle ? "no (no shuffles in full subgroups of one size)"
                                                : "no (the tuning profile's choice)");
  s += fmt::format(
      "\n  shared memory {}; workgroup up to {} invocations, size {}x{}x{}, count "
      "{}x{}x{}; grouped reductions in shared memory {}{}; workgroup grids (Opt LOCAL) {}; "
      "matmul tiles staged in shared memory {}",
      bytes_text(l.maxComputeSharedMemorySize), l.maxComputeWorkGroupInvocations,
      l.maxComputeWorkGroupSize[0], l.maxComputeWorkGroupSize[1], l.maxComputeWorkGroupSize[2],
      l.maxComputeWorkGroupCount[0], l.maxComputeWorkGroupCount[1], l.maxComputeWorkGroupCount[2],
      c.target.local_memory ? "yes" : "off (VKGRAD_VK_DISABLE)",
      c.target.subgroup_arithmetic ? ", folded within subgroups" : "",
      c.target.grid ? "yes" : "off (VKGRAD_VK_DISABLE)",
      c.target.tuning.stage_tiles ? "yes"
                                  : "no (the tuning profile's choice, or VKGRAD_VK_DISABLE; "
                                    "VKGRAD_VK_ENABLE=stage_tiles forces them)");
  s += fmt::format(
      "\n  buffers: maxStorageBufferRange {}, maxMemoryAllocationSize {}, buffer "
      "device address {} (larger buffers {})",
      bytes_text(l.maxStorageBufferRange), bytes_text(c.p11.maxMemoryAllocationSize),
      state(c.f12.bufferDeviceAddress, c.use_bda),
      c.use_bda ? "through device addresses" : "not usable in kernels");
  s += fmt::format(
      "\n  push constants {}; push descriptors {}; update-after-bind descriptors {}",
      bytes_text(l.maxPushConstantsSize), state(c.has_push_descriptor, c.use_push_descriptor),
      state(c.f12.descriptorBindingStorageBufferUpdateAfterBind, c.use_update_after_bind));
  s += fmt::format("\n  timeline semaphores {}; timestamps {}",
                   state(c.f12.timelineSemaphore, c.use_timeline),
                   state(c.timestamp_bits > 0, c.use_timestamps));
  if (c.timestamp_bits > 0)
    s += fmt::format(" ({} ns period, {} valid bits)", l.timestampPeriod, c.timestamp_bits);
  s += fmt::format("; cooperative matrix {}", c.has_cooperative_matrix ? "yes" : "no");
  return s;
}

Device::Device(VkPhysicalDevice pd, int idx, const Switches& sw) : physical(pd), index(idx) {
  Instance& inst = Instance::get();
  caps = query_caps(pd, inst.api_version, sw);

  std::vector<const char*> extensions;
  if (caps.use_push_descriptor) extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  // The spec requires enabling it wherever it is offered (MoltenVK).
  if (caps.has_portability_subset) extensions.push_back("VK_KHR_portability_subset");

  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features f11{.sType =
                                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{.sType =
                                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f2.pNext = &f11;
  f11.pNext = &f12;
  f2.features.shaderInt16 = caps.use_int16;
  f2.features.shaderInt64 = caps.target.int64;
  f2.features.shaderFloat64 = caps.target.float64;
  f11.storageBuffer16BitAccess = caps.target.storage16;
  f12.storageBuffer8BitAccess = caps.target.storage8;
  f12.shaderFloat16 = caps.use_fp16;
  f12.shaderInt8 = caps.use_int8;
  f12.bufferDeviceAddress = caps.use_bda;
  f12.timelineSemaphore = caps.use_timeline;
  f12.descriptorBindingStorageBufferUpdateAfterBind = caps.use_update_after_bind;
  f12.descriptorBindingUniformTexelBufferUpdateAfterBind =
      caps.use_update_after_bind && caps.target.tuning.texel_loads;
  f12.shaderSubgroupExtendedTypes = caps.use_subgroup_extended_types;
  VkPhysicalDeviceVulkan13Features f13{.sType =
                                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  f13.computeFullSubgroups = caps.target.tuning.share_uniform_loads;
  if (caps.target.tuning.share_uniform_loads) f12.pNext = &f13;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = caps.queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &f2;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkResult r = vkCreateDevice(pd, &info, nullptr, &handle);
  if (r != VK_SUCCESS)
    throw DeviceError(fmt::format("Vulkan: cannot open {} ({}): vkCreateDevice failed: {}", name(),
                                  caps.props.deviceName, result_name(r)));
  vkGetDeviceQueue(handle, caps.queue_family, 0, &queue);
}

Device::~Device() {
  if (handle != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(handle);
    vkDestroyDevice(handle, nullptr);
  }
}

}  // namespace vkgrad::vk
