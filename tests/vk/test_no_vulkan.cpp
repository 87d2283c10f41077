// tests/vk: a process whose loader finds no driver (ctest sets VK_ICD_FILENAMES and
// VK_DRIVER_FILES to a file that does not exist): no devices, and a clear DeviceError.
#include <gtest/gtest.h>

#include <vkgrad/error.hpp>

#include "vk/vk.hpp"

namespace vkgrad::vk {
namespace {

TEST(NoVulkan, EnumerateIsEmptyWithAReason) {
  std::string why;
  EXPECT_TRUE(enumerate(&why).empty());
  EXPECT_FALSE(why.empty());
  EXPECT_TRUE(enumerate().empty());  // and without a reason asked for
}

TEST(NoVulkan, MakeRuntimeThrowsDeviceError) {
  try {
    make_runtime(-1);
    FAIL() << "opened a device";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("Vulkan"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkgrad::vk
