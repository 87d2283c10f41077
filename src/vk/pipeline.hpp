// vk: compiled kernels — descriptor-set and pipeline layouts shared by kernels with the same
// number of buffers, the VkPipelineCache kept on disk, and one VkPipeline per kernel and way
// of binding buffers, created on first use. Depends on device.hpp and compile.hpp.
#pragma once

#include <volk.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/program.hpp"
#include "runtime/device.hpp"
#include "vk/compile.hpp"
#include "vk/device.hpp"

namespace vkgrad::vk {

// How a dispatch gets its buffers; each needs its own pipeline (layouts must match exactly).
enum class Binding {
  push_descriptors,  // vkCmdPushDescriptorSetKHR (run(), where the device has it)
  descriptor_sets,   // allocated sets; update-after-bind where available (graphs, fallback)
  device_address,    // the VKG_BDA variant: addresses in push constants, no descriptors
};
constexpr int kBindings = 3;

// The format of a texel slot's view (Program::texel), and its texels' size.
inline VkFormat texel_format(Program::Texel t) {
  using T = Program::Texel;
  switch (t) {
    case T::float32:
      return VK_FORMAT_R32_SFLOAT;
    case T::int32:
      return VK_FORMAT_R32_SINT;
    case T::uint32:
      return VK_FORMAT_R32_UINT;
    case T::float32x4:
      return VK_FORMAT_R32G32B32A32_SFLOAT;
    case T::int32x4:
      return VK_FORMAT_R32G32B32A32_SINT;
    default:
      return VK_FORMAT_R32G32B32A32_UINT;
  }
}
inline VkDeviceSize texel_bytes(Program::Texel t) {
  using T = Program::Texel;
  return t == T::float32x4 || t == T::int32x4 || t == T::uint32x4 ? 16 : 4;
}

struct Layout {
  VkDescriptorSetLayout set = VK_NULL_HANDLE;  // none for device_address
  VkPipelineLayout pipeline = VK_NULL_HANDLE;
  uint32_t push_bytes = 0;  // the push-constant range, from offset 0
};

// Layouts and the pipeline cache of one device. Outlives every kernel made from it.
class Pipelines {
 public:
  explicit Pipelines(std::shared_ptr<Device> device);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // `texel`: the slots bound as uniform texel buffers (Program::texel; empty: none).
  const Layout& layout(Binding binding, int buffers, uint32_t push_bytes,
                       const std::vector<Program::Texel>& texel);
  // Thread-safe; pipelines are created in parallel. A trial's pipeline bypasses the cache.
  VkPipeline create(const std::string& name, const std::vector<uint32_t>& spirv,
                    const Layout& layout, CompilePurpose purpose);
  // Writes the pipeline cache to disk if it has new pipelines since the last save.
  void save();

  const std::shared_ptr<Device> device;

 private:
  void save_locked();
  std::mutex mu_;  // the layouts, dirty_ and last_save_
  // Creations share the pipeline cache (the driver synchronizes them); a save reads it alone.
  std::shared_mutex cache_mu_;
  std::map<std::tuple<Binding, int, uint32_t, std::vector<Program::Texel>>, Layout> layouts_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::filesystem::path cache_file_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point last_save_;
};

class Kernel final : public CompiledKernel {
 public:
  Kernel(std::shared_ptr<Pipelines> pipelines, const Program& program,
         CompilePurpose purpose = CompilePurpose::use);
  ~Kernel() override;

  // The pipeline and its layout for `binding`, created on first use (thread-safe). The
  // device_address variant is compiled from source then.
  VkPipeline pipeline(Binding binding);
  const Layout& layout(Binding binding);

  std::string source;
  int num_buffers = 0;
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::vector<bool> writes;
  std::vector<Program::Texel> texel;  // per slot (empty: every slot is a storage buffer)
  uint32_t push_bytes = 0;  // the variables' values (int32 each), after any device addresses
  std::vector<VarArg> vars;
  UOp launch_size;  // workgroups over the variables (null: `groups`)

 private:
  std::shared_ptr<Pipelines> pipelines_;
  CompilePurpose purpose_;
  std::vector<uint32_t> spirv_;  // descriptor variant
  std::mutex mu_;
  std::array<VkPipeline, kBindings> pipelines_by_binding_{};
};

}  // namespace vkgrad::vk
