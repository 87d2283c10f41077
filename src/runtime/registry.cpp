// runtime: the backend registry (see registry.hpp).
#include "runtime/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <vkgrad/error.hpp>

namespace vkgrad {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<Backend> backends;
  bool fixed = false;  // read by someone: the vector no longer changes

  static Registry& get() {
    static Registry* r = new Registry();  // never destroyed: runtimes may be used at exit
    return *r;
  }
};

std::string names(std::span<const Backend> all) {
  std::string out;
  for (const Backend& b : all) {
    out += (out.empty() ? "" : ", ") + b.prefix;
    if (b.indexed) out += ", " + b.prefix + ":N";
  }
  return out;
}

}  // namespace

void register_backend(Backend backend) {
  Registry& r = Registry::get();
  std::lock_guard lock(r.mu);
  if (r.fixed)
    throw InternalError(fmt::format("runtime: backend {} registered after the first device lookup",
                                    backend.prefix));
  for (const Backend& b : r.backends)
    if (b.prefix == backend.prefix)
      throw InternalError(fmt::format("runtime: backend {} registered twice", backend.prefix));
  r.backends.push_back(std::move(backend));
}

std::span<const Backend> backends() {
  Registry& r = Registry::get();
  std::lock_guard lock(r.mu);
  r.fixed = true;
  return r.backends;
}

std::unique_ptr<Runtime> open_device(const std::string& name) {
  const std::span<const Backend> all = backends();
  for (const Backend& b : all) {
    if (name == b.prefix) return b.open(-1);
    if (!b.indexed || name.rfind(b.prefix + ":", 0) != 0) continue;
    const std::string n = name.substr(b.prefix.size() + 1);
    if (!n.empty() && n.size() < 6 && std::all_of(n.begin(), n.end(), ::isdigit))
      return b.open(std::stoi(n));
  }
  throw DeviceError(fmt::format("unknown device '{}' (device names: {})", name, names(all)));
}

std::string device_name(const Backend& backend, const DeviceEntry& device) {
  return backend.indexed ? fmt::format("{}:{}", backend.prefix, device.index) : backend.prefix;
}

bool better(const DeviceEntry& a, const DeviceEntry& b) {
  return a.kind != b.kind ? a.kind < b.kind : a.rank < b.rank;
}

}  // namespace vkgrad
