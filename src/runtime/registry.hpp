// runtime: the backend registry — each backend under the prefix of its device names ("CPU",
// "VULKAN") with how to list and open its devices, so the engine opens, names and orders
// devices without naming a backend. Depends on device.hpp; never includes src/vk or src/cpu.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/device.hpp"

namespace vkgrad {

// The kinds of device, best first. A CPU implementation of a GPU API (lavapipe) comes after the
// host: the CPU backend runs the same kernels faster on the same cores.
enum class DeviceKind { gpu, host, cpu_implementation, other };

// One device as its backend lists it (listing never opens it).
struct DeviceEntry {
  int index = 0;      // the N of "PREFIX:N" (0 for a backend with one device)
  std::string label;  // the device's own name ("llvmpipe (LLVM 15.0.6, 256 bits)")
  std::string type;   // the backend's word for it ("discrete", "cpu", "host")
  DeviceKind kind = DeviceKind::other;
  int rank = 0;  // order among devices of the same kind, lowest first
};

struct Backend {
  std::string prefix;    // "CPU", "VULKAN": the device names
  std::string title;     // the backend in messages: "Vulkan"
  bool indexed = false;  // its devices are "PREFIX:N"; "PREFIX" alone is the one it picks
  bool host = false;     // runs on the host CPU: the device when no other opens
  // Opens device `index` of `list` (-1: the one "PREFIX" names). Throws DeviceError with why.
  std::function<std::unique_ptr<Runtime>(int index)> open;
  // Its devices; empty, with `why` (if given) set to the reason, when there are none. Never throws.
  std::function<std::vector<DeviceEntry>(std::string* why)> list;
  // Validation messages reported so far, process-wide (null when the backend has none).
  std::function<int64_t()> validation_messages;
};

// Adds a backend. Backends are all registered before the first call to backends(); registering
// one after it, or a prefix twice, is an InternalError.
void register_backend(Backend backend);
// In registration order (the order of device names in messages). Fixed from the first call on.
std::span<const Backend> backends();

// Opens the device an upper-case name names: "PREFIX", or "PREFIX:N" for an indexed backend.
// DeviceError listing the device names when no backend has it.
std::unique_ptr<Runtime> open_device(const std::string& name);
// The name a listed device opens under: "CPU", "VULKAN:1".
std::string device_name(const Backend& backend, const DeviceEntry& device);
// Best first: by kind, then rank.
bool better(const DeviceEntry& a, const DeviceEntry& b);

}  // namespace vkgrad
