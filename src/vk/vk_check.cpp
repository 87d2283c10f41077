// vk: VkResult checking (see vk_check.hpp).
#include "vk/vk_check.hpp"

#include <fmt/format.h>

#include <vkgrad/error.hpp>

namespace vkgrad::vk {

std::string result_name(VkResult result) {
  switch (result) {
#define VKGRAD_RESULT(name) \
  case name:                \
    return #name;
    VKGRAD_RESULT(VK_SUCCESS)
    VKGRAD_RESULT(VK_NOT_READY)
    VKGRAD_RESULT(VK_TIMEOUT)
    VKGRAD_RESULT(VK_INCOMPLETE)
    VKGRAD_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKGRAD_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKGRAD_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    VKGRAD_RESULT(VK_ERROR_DEVICE_LOST)
    VKGRAD_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    VKGRAD_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    VKGRAD_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKGRAD_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    VKGRAD_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKGRAD_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    VKGRAD_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKGRAD_RESULT(VK_ERROR_FRAGMENTED_POOL)
    VKGRAD_RESULT(VK_ERROR_UNKNOWN)
    VKGRAD_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    VKGRAD_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VKGRAD_RESULT(VK_ERROR_FRAGMENTATION)
    VKGRAD_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    VKGRAD_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKGRAD_RESULT
    default:
      return fmt::format("VkResult({})", static_cast<int>(result));
  }
}

void throw_result(VkResult result, const char* what) {
  const std::string msg = fmt::format("Vulkan: {} failed: {}", what, result_name(result));
  if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY)
    throw OutOfMemory(msg);
  throw DeviceError(msg);
}

}  // namespace vkgrad::vk
