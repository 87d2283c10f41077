// vk: the driver-bug probes and VKGRAD_VK_QUIRKS (see quirks.hpp).
#include "vk/quirks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>
#include <vkgrad/error.hpp>

#include "vk/compile.hpp"
#include "vk/vk_check.hpp"

namespace vkgrad::vk {
namespace {

// What VKGRAD_VK_QUIRKS says about one quirk: nothing (probe it), on or off.
using Forced = std::optional<bool>;

struct ForcedQuirks {
  Forced narrowing_cast, widening_compare, inexact_division;
};

ForcedQuirks forced_quirks() {
  const char* list = env("VKGRAD_VK_QUIRKS");
  ForcedQuirks forced;
  for (std::string_view word : words_of(list != nullptr ? list : "")) {
    const bool on = word.front() != '-';
    if (!on) word.remove_prefix(1);
    if (word == "narrowing_cast")
      forced.narrowing_cast = on;
    else if (word == "widening_compare")
      forced.widening_compare = on;
    else if (word == "inexact_division")
      forced.inexact_division = on;
    else
      throw DeviceError(
          fmt::format("VKGRAD_VK_QUIRKS: unknown quirk '{}' (known: narrowing_cast, "
                      "widening_compare, inexact_division; '-name' turns one off)",
                      word));
  }
  return forced;
}

// Runs `source` (one storage buffer, read and written in place; one workgroup) on `data`. It
// uses the device's queue and memory but none of the counted paths (SPIR-V cache, pipeline
// cache, run()), so tests that count compiles and dispatches never see it.
template <typename T>
void run_probe(Executor& ex, const char* name, const char* source, std::vector<T>& data) {
  const Device& d = *ex.device;
  const std::vector<uint32_t> spirv = glsl_to_spirv_uncached(name, source);
  const Layout& layout = ex.pipelines->layout(Binding::descriptor_sets, 1, 0, {});
  const size_t bytes = data.size() * sizeof(T);

  VkShaderModule module = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  Allocation* buffer = nullptr;
  struct Cleanup {
    const Device& d;
    Executor& ex;
    VkShaderModule& module;
    VkPipeline& pipeline;
    VkDescriptorPool& pool;
    Allocation*& buffer;
    ~Cleanup() {
      if (buffer != nullptr) ex.memory.free(buffer);
      if (pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(d.handle, pool, nullptr);
      if (pipeline != VK_NULL_HANDLE) vkDestroyPipeline(d.handle, pipeline, nullptr);
      if (module != VK_NULL_HANDLE) vkDestroyShaderModule(d.handle, module, nullptr);
    }
  } cleanup{d, ex, module, pipeline, pool, buffer};

  VkShaderModuleCreateInfo module_info{.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv.size() * sizeof(uint32_t);
  module_info.pCode = spirv.data();
  vk_check(vkCreateShaderModule(d.handle, &module_info, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo info{.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.layout = layout.pipeline;
  vk_check(vkCreateComputePipelines(d.handle, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline),
           "vkCreateComputePipelines");

  buffer = ex.memory.alloc(bytes);
  ex.memory.write(*buffer, data.data(), bytes);
  pool = ex.make_descriptor_pool(1, 1);
  VkDescriptorSetAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  alloc.descriptorPool = pool;
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &layout.set;
  VkDescriptorSet set = VK_NULL_HANDLE;
  vk_check(vkAllocateDescriptorSets(d.handle, &alloc, &set), "vkAllocateDescriptorSets");
  const VkDescriptorBufferInfo range{buffer->block->buffer, buffer->offset, buffer->reserved};
  VkWriteDescriptorSet write{.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstSet = set;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &range;
  vkUpdateDescriptorSets(d.handle, 1, &write, 0, nullptr);

  {
    std::lock_guard lock(ex.queue.mu);
    ex.queue.run_once([&](VkCommandBuffer cmd) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout.pipeline, 0, 1, &set, 0,
                              nullptr);
      vkCmdDispatch(cmd, 1, 1, 1);
      VkMemoryBarrier b{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      b.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0,
                           nullptr, 0, nullptr);
    });
  }
  ex.memory.read(data.data(), *buffer, bytes);
}

// double(float(x)) in one shader, written as the renderer writes a fused cast chain: the
// doubles must come back rounded to float (2.7 -> 2.7000000476837158, 1e40 -> inf).
constexpr double kNarrowingInputs[] = {2.7, 1e40, -1e-50, 0.1};
constexpr const char* kNarrowingProbe = R"(#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0, std430) buffer Data { double data[]; };
void main() {
  uint i = gl_LocalInvocationID.x;
  precise float f = float(data[i]);
  precise double d = double(f);
  data[i + 4u] = d;
}
)";

// Empty when the driver rounds, else what it returned (for describe()).
std::string probe_narrowing_cast(Executor& ex) {
  constexpr size_t n = std::size(kNarrowingInputs);
  std::vector<double> data(2 * n, 0.0);
  std::copy(std::begin(kNarrowingInputs), std::end(kNarrowingInputs), data.begin());
  run_probe(ex, "probe_narrowing_cast", kNarrowingProbe, data);
  for (size_t i = 0; i < n; ++i) {
    const double want = static_cast<double>(static_cast<float>(kNarrowingInputs[i]));
    if (std::memcmp(&want, &data[n + i], sizeof(double)) != 0)
      return fmt::format("double(float({})) came back {:.17g}, not {:.17g}", kNarrowingInputs[i],
                         data[n + i], want);
  }
  return {};
}

// int64_t(i) compared with 64-bit constants, for i = 0..3 (the results written as doubles):
// 1l < v, v < 1l and v >= 1l must give 0 1 1 1 / 1 0 0 0 / 0 1 1 1 less the first row's shift.
constexpr const char* kWideningProbe = R"(#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 4) in;
layout(set = 0, binding = 0, std430) buffer Data { double data[]; };
void main() {
  int i = int(gl_LocalInvocationID.x);
  int64_t v = int64_t(i);
  data[i] = (1l < v) ? 1.0 : 0.0;
  data[i + 4] = (v < 1l) ? 1.0 : 0.0;
  data[i + 8] = (v >= 1l) ? 1.0 : 0.0;
}
)";

std::string probe_widening_compare(Executor& ex) {
  std::vector<double> data(12, -1.0);
  run_probe(ex, "probe_widening_compare", kWideningProbe, data);
  for (int i = 0; i < 4; ++i) {
    const double want[3] = {i > 1 ? 1.0 : 0.0, i < 1 ? 1.0 : 0.0, i >= 1 ? 1.0 : 0.0};
    for (int k = 0; k < 3; ++k)
      if (data[static_cast<size_t>(i + 4 * k)] != want[k])
        return fmt::format("int64_t({}) {} came back {}", i,
                           k == 0   ? "> 1"
                           : k == 1 ? "< 1"
                                    : ">= 1",
                           data[static_cast<size_t>(i + 4 * k)]);
  }
  return {};
}

// float32 quotients of 64 pairs (the buffer holds their bits: a, b, then the quotients), which
// must come back as the host's correctly rounded ones.
constexpr uint32_t kDivisionPairs = 64;
constexpr const char* kDivisionProbe = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Data { uint data[]; };
void main() {
  uint i = gl_LocalInvocationID.x;
  precise float q = uintBitsToFloat(data[i]) / uintBitsToFloat(data[i + 64u]);
  data[i + 128u] = floatBitsToUint(q);
}
)";

std::string probe_inexact_division(Executor& ex) {
  constexpr uint32_t n = kDivisionPairs;
  std::vector<uint32_t> data(3 * n, 0);
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    // Integers over small odd divisors (-100 / 7) and fractions over fractions.
    a[i] = i % 2 == 0 ? static_cast<float>(static_cast<int>(i * 37 % 201) - 100)
                      : 1.0f + static_cast<float>(i) * 0.37f;
    b[i] = i % 2 == 0 ? static_cast<float>(3 + 2 * (i % 5)) : 0.3f + static_cast<float>(i) * 0.11f;
    data[i] = std::bit_cast<uint32_t>(a[i]);
    data[i + n] = std::bit_cast<uint32_t>(b[i]);
  }
  run_probe(ex, "probe_inexact_division", kDivisionProbe, data);
  for (uint32_t i = 0; i < n; ++i) {
    const float want = a[i] / b[i];
    if (std::bit_cast<uint32_t>(want) != data[i + 2 * n])
      return fmt::format("{} / {} came back {:.9g}, not {:.9g}", a[i], b[i],
                         std::bit_cast<float>(data[i + 2 * n]), want);
  }
  return {};
}

// One probe's verdict: forced, or probed once per physical device (the answer is the driver's,
// and opening a device is frequent in tests).
bool decide(Executor& ex, const char* name, Forced forced, std::string (*probe)(Executor&),
            std::string& found) {
  auto note = [&](const std::string& s) { found += (found.empty() ? "" : ", ") + s; };
  if (forced) {
    note(fmt::format("{}{} (VKGRAD_VK_QUIRKS)", name, *forced ? "" : " off"));
    return *forced;
  }
  static std::mutex mu;
  static std::map<std::pair<VkPhysicalDevice, std::string>, std::string> probed;
  std::lock_guard lock(mu);
  const auto key = std::make_pair(ex.device->physical, std::string(name));
  auto it = probed.find(key);
  if (it == probed.end()) it = probed.emplace(key, probe(ex)).first;
  if (it->second.empty()) return false;
  note(fmt::format("{} (probe: {})", name, it->second));
  return true;
}

}  // namespace

Quirks find_quirks(Executor& ex) {
  Quirks q;
  const ForcedQuirks forced = forced_quirks();
  // The cast probes keep their data in float64: without it in kernels there is no such cast to
  // get wrong, and the widening probe cannot run (its quirk then stays off unless forced). The
  // division probe needs nothing beyond 32-bit types.
  const bool fp64 = ex.device->caps.target.float64;
  if (fp64 || forced.narrowing_cast)
    q.narrowing_cast =
        decide(ex, "narrowing_cast", forced.narrowing_cast, probe_narrowing_cast, q.found);
  if ((fp64 && ex.device->caps.target.int64) || forced.widening_compare)
    q.widening_compare =
        decide(ex, "widening_compare", forced.widening_compare, probe_widening_compare, q.found);
  q.inexact_division =
      decide(ex, "inexact_division", forced.inexact_division, probe_inexact_division, q.found);
  return q;
}

}  // namespace vkgrad::vk
