// vk: the Vulkan backend — instance and device through volk (no link-time libvulkan), memory
// suballocated from large blocks, GLSL compiled in-process by glslang with SPIR-V and pipeline
// disk caches, every realize recorded into one command buffer, and graph replay. Implements
// runtime/device.hpp and describes itself for runtime/registry.hpp; the engine sees only this
// header. Never includes anything from src/cpu.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/registry.hpp"

namespace vkgrad::vk {

// One physical device as the loader reports it. Never opens a logical device.
struct DeviceSummary {
  int index = 0;     // position in selection order (the N of "VULKAN:N")
  std::string name;  // deviceName
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  std::string line;  // one-line summary for `vkgrad info`
};

// Physical devices in selection order (discrete > integrated > virtual > cpu; ties keep the
// loader's order). Empty when there is no loader or no device; `why` (if given) then gets the
// reason. Never throws.
std::vector<DeviceSummary> enumerate(std::string* why = nullptr);

// Opens device `index` of enumerate() (-1: VKGRAD_VK_DEVICE=<index|name substring>, else the
// first). Throws DeviceError with the reason when Vulkan or the device cannot open.
std::unique_ptr<Runtime> make_runtime(int index);

// The backend "VULKAN": the devices of enumerate() as "VULKAN:N" (GPUs by type, then CPU
// implementations such as lavapipe), opened by make_runtime; "VULKAN" is make_runtime(-1).
Backend backend();

// Messages the Khronos validation layer reported so far (VKGRAD_VALIDATION=1), process-wide.
// Every message is also printed to stderr.
int64_t validation_messages();

// Process-wide event counts, so tests can prove what the runtime did (and did not) do.
struct Counters {
  int64_t spirv_compiled = 0;       // GLSL -> SPIR-V compiles by glslang
  int64_t spirv_cache_hits = 0;     // SPIR-V read from the disk cache instead
  int64_t pipelines_created = 0;    // vkCreateComputePipelines calls
  int64_t pipeline_cache_hits = 0;  // of those, served by the VkPipelineCache (if reported)
  int64_t dispatches = 0;           // vkCmdDispatch recorded
  int64_t barriers = 0;             // compute -> compute barriers recorded between dispatches
  int64_t submits = 0;              // vkQueueSubmit calls
  int64_t graph_records = 0;        // graph command buffers recorded (capture and re-records)
  int64_t graph_rerecords = 0;      // replays that had to record again
  int64_t descriptor_writes = 0;    // descriptors written into descriptor sets
};
Counters counters();

// Benchmark reference: microseconds per dispatch of `n` dependent dispatches of a trivial
// shader recorded by a bare loop (bind pipeline once, vkCmdDispatch + barrier each) into one
// command buffer, submitted once. `runtime` must come from make_runtime.
double bare_dispatch_us(Runtime& runtime, int n);

}  // namespace vkgrad::vk
