// vk: GLSL -> SPIR-V in-process with glslang (Vulkan 1.2, SPIR-V 1.5), cached on disk by a
// hash of the source, the variant's preamble and glslang's version; optional spirv-val and
// disassembly. Also the cache folder and atomic file writes the pipeline cache shares.
// Depends on nothing else in vk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/device.hpp"

namespace vkgrad::vk {

// How a kernel's buffers reach it. `descriptors`: a storage buffer per slot in set 0.
// `device_address`: the same source with `#define VKG_BDA 1` in front, buffers addressed
// through push-constant uvec2 device addresses (for buffers beyond maxStorageBufferRange).
enum class Variant { descriptors, device_address };

// SPIR-V for `source` in `variant`: from the disk cache, else compiled (and cached, unless the
// compile is a trial). Thread-safe: glslang compiles on each calling thread. Throws
// CompileError with glslang's log and the numbered source. Validates the result with spirv-val
// rules when VKGRAD_VALIDATION=1 or VKGRAD_SPIRV_VAL=1; prints the disassembly under DEBUG>=6.
std::vector<uint32_t> glsl_to_spirv(const std::string& name, const std::string& source,
                                    Variant variant, CompilePurpose purpose = CompilePurpose::use);
// The same compile (descriptor variant) without the disk cache or the counters: for the device
// probes of quirks.hpp, which must not show in the compiles tests count.
std::vector<uint32_t> glsl_to_spirv_uncached(const std::string& name, const std::string& source);

// <cache root>/vk (runtime/disk_cache.hpp: $VKGRAD_CACHE_DIR, else $XDG_CACHE_HOME/vkgrad, ...).
std::filesystem::path cache_dir();
// Writes through a temporary file in the same folder and a rename, so readers never see a
// partial file. Best effort: returns false (and leaves nothing behind) on failure.
bool write_file_atomically(const std::filesystem::path& path, std::string_view bytes);
// The whole file, or nothing if it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace vkgrad::vk
