// vk: every VkResult is checked here, in one place. A failed call throws DeviceError (or
// OutOfMemory for the out-of-memory results) naming the call and the result. Depends on volk.
#pragma once

#include <volk.h>

#include <string>

namespace vkgrad::vk {

// "VK_ERROR_DEVICE_LOST" and friends; "VkResult(<n>)" for codes this table does not know.
std::string result_name(VkResult result);

// Throws for any result other than VK_SUCCESS (and VK_INCOMPLETE, which callers that use it
// handle themselves). `what` names the call: "vkCreateDevice".
[[noreturn]] void throw_result(VkResult result, const char* what);
inline void vk_check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw_result(result, what);
}

}  // namespace vkgrad::vk
