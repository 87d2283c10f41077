// Public: device names and the default device. Devices are strings: "CPU", "VULKAN",
// "VULKAN:1". Depends on the standard library only.
#pragma once

#include <string>
#include <vector>

namespace vkgrad {

// The device new tensors go to when none is named: $DEVICE if set, else the best device that
// opens (see API.md), else "CPU".
std::string default_device();
void set_default_device(const std::string& device);
// Every device that opens on this machine, best first.
std::vector<std::string> devices();
// A human-readable description of each device and its capabilities (`vkgrad info`).
std::string device_info();

}  // namespace vkgrad
