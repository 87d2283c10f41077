// runtime: what the runtimes' disk caches share — where the cache lives and how keys are hashed.
// The CPU runtime keeps shared objects under <root>/cpu, the Vulkan runtime SPIR-V and pipeline
// caches under <root>/vk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace vkgrad {

// VKGRAD_CACHE_DIR, else $XDG_CACHE_HOME/vkgrad, else $HOME/.cache/vkgrad, else
// <temp>/vkgrad (empty variables count as unset). Read on every call, so tests can change it.
std::filesystem::path cache_root();

// 64-bit FNV-1a over fields; a 0 byte after each field, so ("ab", "c") and ("a", "bc") differ.
struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0u) * 0x100000001b3ull;
  }
};

}  // namespace vkgrad
