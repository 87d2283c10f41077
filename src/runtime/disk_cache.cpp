// runtime: the cache root shared by the runtimes' disk caches (disk_cache.hpp).
#include "runtime/disk_cache.hpp"

#include <cstdlib>

namespace vkgrad {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

std::filesystem::path cache_root() {
  namespace fs = std::filesystem;
  if (const char* d = env("VKGRAD_CACHE_DIR")) return d;
  if (const char* d = env("XDG_CACHE_HOME")) return fs::path(d) / "vkgrad";
  if (const char* d = env("HOME")) return fs::path(d) / ".cache" / "vkgrad";
  return fs::temp_directory_path() / "vkgrad";
}

}  // namespace vkgrad
