// engine: device names, the open devices, the default device and the device list, through the
// backend registry (runtime/registry.hpp) only.
//
// Device names are a backend's prefix ("CPU", "VULKAN") and, for a backend with several devices,
// "PREFIX:N" (runtime/registry.hpp). "VULKAN" is the Vulkan device picked by VKGRAD_VK_DEVICE or
// the selection order (discrete > integrated > virtual > cpu); "VULKAN:N" naming the picked
// device is the same device as "VULKAN" (and canonicalizes to it).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <span>
#include <utility>
#include <vkgrad/device.hpp>

#include "engine/internal.hpp"
#include "ir/debug.hpp"
#include "runtime/registry.hpp"

namespace vkgrad {
namespace engine {
namespace {

struct Devices {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Runtime>> open;
  std::string default_device;

  static Devices& get() {
    static Devices* d = new Devices();  // never destroyed: buffers may be freed at exit
    return *d;
  }
};

std::span<const Backend> all_backends() {
  register_backends();
  return backends();
}

// The device everything falls back to: the host backend's.
std::string host_device() {
  for (const Backend& b : all_backends())
    if (b.host) return b.prefix;
  throw InternalError("engine: no host backend registered");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Runtime& runtime_of(const std::string& device) {
  Devices& d = Devices::get();
  std::lock_guard lock(d.mu);
  auto it = d.open.find(device);
  if (it != d.open.end()) return *it->second;
  register_backends();
  try {
    return *d.open.emplace(device, open_device(device)).first->second;
  } catch (const DeviceError& e) {
    const std::string why = e.what();
    if (why.find(device) != std::string::npos) throw;
    throw DeviceError(fmt::format("device {} does not open: {}", device, why));
  }
}

int64_t validation_messages() {
  int64_t n = 0;
  for (const Backend& b : all_backends())
    if (b.validation_messages) n += b.validation_messages();
  return n;
}

std::string canonical_device(const std::string& device) {
  if (device.empty()) return vkgrad::default_device();
  std::string d = upper(device);
  for (const Backend& b : all_backends()) {
    if (d.rfind(b.prefix + ":", 0) != 0) continue;
    if (!b.indexed) {
      if (d == b.prefix + ":0") d = b.prefix;  // "CPU:0": the backend's only device
    } else {
      // The device the backend picks has one name, its prefix ("VULKAN"), so both spellings
      // share its buffers.
      try {
        if (runtime_of(b.prefix).name() == d) return b.prefix;
      } catch (const DeviceError&) {
        // No device picked; "VULKAN:N" may still open below or explain why not.
      }
    }
    break;
  }
  runtime_of(d);  // throws DeviceError if it cannot open
  return d;
}

Runtime& runtime(const std::string& canonical_device) { return runtime_of(canonical_device); }

}  // namespace engine

// ---- public device API --------------------------------------------------------------------------
std::string default_device() {
  engine::Devices& d = engine::Devices::get();
  {
    std::lock_guard lock(d.mu);
    if (!d.default_device.empty()) return d.default_device;
  }
  std::string dev = engine::host_device();
  if (const char* env = std::getenv("DEVICE"); env && *env) {
    dev = engine::canonical_device(env);
  } else {
    // A GPU when one opens. A CPU implementation of a GPU API (lavapipe) is slower than the host
    // backend, so it is used only when asked for by name.
    std::string reason;
    for (const Backend& b : engine::all_backends()) {
      if (b.host) continue;
      std::string why;
      const std::vector<DeviceEntry> found = b.list(&why);
      if (found.empty()) {
        reason = fmt::format("no {} device: {}", b.title, why);
        continue;
      }
      const DeviceEntry& best = *std::min_element(found.begin(), found.end(), better);
      if (best.kind != DeviceKind::gpu) {
        reason =
            fmt::format("the only {} device, '{}', is a CPU implementation (DEVICE={} uses it)",
                        b.title, best.label, b.prefix);
        continue;
      }
      try {
        engine::runtime_of(b.prefix);
        dev = b.prefix;
        reason = fmt::format("{} device '{}' ({})", b.title, best.label, best.type);
        break;
      } catch (const Error& e) {
        reason = fmt::format("{} device '{}' did not open: {}", b.title, best.label, e.what());
      }
    }
    if (debug_level() >= 1)
      std::fprintf(stderr, "default device %s: %s\n", dev.c_str(), reason.c_str());
  }
  std::lock_guard lock(d.mu);
  if (d.default_device.empty()) d.default_device = dev;
  return d.default_device;
}

void set_default_device(const std::string& device) {
  const std::string dev = engine::canonical_device(device.empty() ? engine::host_device() : device);
  engine::Devices& d = engine::Devices::get();
  std::lock_guard lock(d.mu);
  d.default_device = dev;
}

// Best first: every GPU (discrete > integrated > virtual), then the CPU backend, then CPU
// implementations of a GPU API such as lavapipe (slower than the CPU backend); ties keep the
// registration and listing order.
std::vector<std::string> devices() {
  std::vector<std::pair<DeviceEntry, std::string>> found;
  for (const Backend& b : engine::all_backends())
    for (const DeviceEntry& e : b.list(nullptr)) found.emplace_back(e, device_name(b, e));
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& x, const auto& y) { return better(x.first, y.first); });
  std::vector<std::string> out;
  for (const auto& [entry, name] : found) {
    try {
      out.push_back(engine::canonical_device(name));
    } catch (const Error&) {
      // Listed by its backend but does not open: not usable here.
    }
  }
  return out;
}

std::string device_info() {
  std::string out;
  for (const std::string& d : devices()) out += engine::runtime_of(d).describe() + "\n";
  for (const Backend& b : engine::all_backends()) {
    std::string why;
    if (!b.host && b.list(&why).empty()) out += b.prefix + ": not available (" + why + ")\n";
  }
  return out;
}

}  // namespace vkgrad
