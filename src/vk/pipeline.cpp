// vk: layouts, the on-disk pipeline cache and per-kernel pipelines (see pipeline.hpp).
#include "vk/pipeline.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vkgrad/error.hpp>

#include "vk/counters.hpp"
#include "vk/vk_check.hpp"

namespace vkgrad::vk {

namespace {

std::string hex(const uint8_t* bytes, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", bytes[i]);
  return s;
}

// The driver rejects foreign data itself, but a header check first keeps a file from another
// driver version or device from ever reaching it.
bool header_matches(const std::string& data, const VkPhysicalDeviceProperties& p) {
  VkPipelineCacheHeaderVersionOne h;
  if (data.size() < sizeof h) return false;
  std::memcpy(&h, data.data(), sizeof h);
  return h.headerSize >= sizeof h && h.headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         h.vendorID == p.vendorID && h.deviceID == p.deviceID &&
         std::memcmp(h.pipelineCacheUUID, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

// Saving rewrites the whole cache, so after new pipelines it happens at most this often (and
// always when the runtime closes).
constexpr auto kSaveInterval = std::chrono::seconds(1);

// Whether a module declares the GroupNonUniformShuffle capability and a workgroup whose x size
// is a multiple of `lanes` (OpExecutionMode LocalSize), as VK_PIPELINE_SHADER_STAGE_CREATE_
// REQUIRE_FULL_SUBGROUPS_BIT requires.
bool shuffles_in_full_subgroups(const std::vector<uint32_t>& spirv, uint32_t lanes) {
  constexpr uint32_t kOpCapability = 17, kOpExecutionMode = 16, kShuffle = 65, kLocalSize = 17;
  bool shuffles = false;
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t words = spirv[i] >> 16, op = spirv[i] & 0xffff;
    if (words == 0 || i + words > spirv.size()) return false;
    if (op == kOpCapability && words >= 2 && spirv[i + 1] == kShuffle) shuffles = true;
    if (op == kOpExecutionMode && words >= 4 && spirv[i + 2] == kLocalSize)
      return shuffles && lanes > 0 && spirv[i + 3] % lanes == 0;
    i += words;
  }
  return false;
}

}  // namespace

Pipelines::Pipelines(std::shared_ptr<Device> dev) : device(std::move(dev)) {
  const Caps& c = device->caps;
  cache_file_ = cache_dir() / fmt::format("pipeline-{}-{}.bin", hex(c.p11.deviceUUID, VK_UUID_SIZE),
                                          c.props.driverVersion);
  const std::string data = read_file(cache_file_);
  VkPipelineCacheCreateInfo info{.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (header_matches(data, c.props)) {
    info.initialDataSize = data.size();
    info.pInitialData = data.data();
  }
  if (vkCreatePipelineCache(device->handle, &info, nullptr, &cache_) != VK_SUCCESS) {
    info.initialDataSize = 0;  // the driver refused the file: start empty
    info.pInitialData = nullptr;
    vk_check(vkCreatePipelineCache(device->handle, &info, nullptr, &cache_),
             "vkCreatePipelineCache");
  }
  last_save_ = std::chrono::steady_clock::now();
}

Pipelines::~Pipelines() {
  save();
  VkDevice dev = device->handle;
  for (auto& [key, l] : layouts_) {
    vkDestroyPipelineLayout(dev, l.pipeline, nullptr);
    if (l.set != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(dev, l.set, nullptr);
  }
  vkDestroyPipelineCache(dev, cache_, nullptr);
}

void Pipelines::save() {
  std::lock_guard lock(mu_);
  save_locked();
}

void Pipelines::save_locked() {
  if (!dirty_) return;
  std::unique_lock cache_lock(cache_mu_);
  size_t size = 0;
  if (vkGetPipelineCacheData(device->handle, cache_, &size, nullptr) != VK_SUCCESS) return;
  std::string data(size, '\0');
  if (vkGetPipelineCacheData(device->handle, cache_, &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  write_file_atomically(cache_file_, data);  // a cache: failing to write it is not an error
  dirty_ = false;
  last_save_ = std::chrono::steady_clock::now();
}

const Layout& Pipelines::layout(Binding binding, int buffers, uint32_t push_bytes,
                                const std::vector<Program::Texel>& texel) {
  std::lock_guard lock(mu_);
  // The device-address variant has no descriptors: its texel slots read addresses too.
  auto key =
      std::make_tuple(binding, buffers, push_bytes,
                      binding == Binding::device_address ? std::vector<Program::Texel>{} : texel);
  if (auto it = layouts_.find(key); it != layouts_.end()) return it->second;
  const Caps& c = device->caps;
  VkDevice dev = device->handle;
  Layout l;
  l.push_bytes =
      (binding == Binding::device_address ? 8u * static_cast<uint32_t>(buffers) : 0u) + push_bytes;
  if (l.push_bytes > c.props.limits.maxPushConstantsSize)
    throw DeviceError(
        fmt::format("{}: a kernel needs {} bytes of push constants ({}); the device allows {}",
                    device->name(), l.push_bytes,
                    binding == Binding::device_address
                        ? fmt::format("device addresses of {} buffers{}", buffers,
                                      push_bytes > 0 ? " and the kernel's variables" : "")
                        : std::string("the kernel's variables"),
                    c.props.limits.maxPushConstantsSize));
  if (binding != Binding::device_address) {
    if (static_cast<uint32_t>(buffers) > c.props.limits.maxPerStageDescriptorStorageBuffers)
      throw DeviceError(fmt::format(
          "{}: a kernel binds {} storage buffers; the device allows {} per shader stage",
          device->name(), buffers, c.props.limits.maxPerStageDescriptorStorageBuffers));
    std::vector<VkDescriptorSetLayoutBinding> slots(static_cast<size_t>(buffers));
    for (int i = 0; i < buffers; ++i) {
      slots[i].binding = static_cast<uint32_t>(i);
      slots[i].descriptorType = Program::is_texel(texel, static_cast<size_t>(i))
                                    ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                    : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      slots[i].descriptorCount = 1;
      slots[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    std::vector<VkDescriptorBindingFlags> flags(static_cast<size_t>(buffers),
                                                VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT);
    VkDescriptorSetLayoutBindingFlagsCreateInfo binding_flags{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO};
    binding_flags.bindingCount = static_cast<uint32_t>(buffers);
    binding_flags.pBindingFlags = flags.data();
    VkDescriptorSetLayoutCreateInfo info{.sType =
                                             VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    info.bindingCount = static_cast<uint32_t>(buffers);
    info.pBindings = slots.data();
    if (binding == Binding::push_descriptors) {
      info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    } else if (c.use_update_after_bind) {
      info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT;
      info.pNext = &binding_flags;
    }
    vk_check(vkCreateDescriptorSetLayout(dev, &info, nullptr, &l.set),
             "vkCreateDescriptorSetLayout");
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, l.push_bytes};
  VkPipelineLayoutCreateInfo info{.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  info.setLayoutCount = l.set != VK_NULL_HANDLE ? 1 : 0;
  info.pSetLayouts = &l.set;
  info.pushConstantRangeCount = l.push_bytes > 0 ? 1 : 0;
  info.pPushConstantRanges = &range;
  if (VkResult r = vkCreatePipelineLayout(dev, &info, nullptr, &l.pipeline); r != VK_SUCCESS) {
    if (l.set != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(dev, l.set, nullptr);
    throw_result(r, "vkCreatePipelineLayout");
  }
  return layouts_.emplace(key, l).first->second;
}

VkPipeline Pipelines::create(const std::string& name, const std::vector<uint32_t>& spirv,
                             const Layout& layout, CompilePurpose purpose) {
  VkDevice dev = device->handle;
  VkShaderModuleCreateInfo module_info{.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv.size() * sizeof(uint32_t);
  module_info.pCode = spirv.data();
  VkShaderModule module;
  vk_check(vkCreateShaderModule(dev, &module_info, nullptr, &module), "vkCreateShaderModule");

  VkPipelineCreationFeedback feedback{}, stage_feedback{};
  VkPipelineCreationFeedbackCreateInfo feedback_info{
      VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
  feedback_info.pPipelineCreationFeedback = &feedback;
  feedback_info.pipelineStageCreationFeedbackCount = 1;
  feedback_info.pPipelineStageCreationFeedbacks = &stage_feedback;
  VkComputePipelineCreateInfo info{.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  if (device->caps.api_version >= VK_API_VERSION_1_3) info.pNext = &feedback_info;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  // A kernel that shares loads through shuffles reads every lane of its subgroups: where its
  // workgroup's x size allows, the driver is held to full subgroups (lavapipe fills them anyway:
  // TuningProfile::share_uniform_loads).
  if (device->caps.target.tuning.share_uniform_loads &&
      shuffles_in_full_subgroups(spirv, device->caps.max_subgroup))
    info.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.layout = layout.pipeline;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const bool cached = purpose == CompilePurpose::use;
  VkResult r;
  if (cached) {
    std::shared_lock lock(cache_mu_);
    r = vkCreateComputePipelines(dev, cache_, 1, &info, nullptr, &pipeline);
  } else {
    r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
  }
  if (r == VK_SUCCESS) {
    ++g_counters.pipelines_created;
    if ((feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
        (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT))
      ++g_counters.pipeline_cache_hits;
    if (cached) {
      std::lock_guard lock(mu_);
      dirty_ = true;
      if (std::chrono::steady_clock::now() - last_save_ > kSaveInterval) save_locked();
    }
  }
  vkDestroyShaderModule(dev, module, nullptr);
  if (r != VK_SUCCESS)
    throw CompileError(fmt::format("{}: vkCreateComputePipelines for kernel '{}' failed: {}",
                                   device->name(), name, result_name(r)));
  return pipeline;
}

Kernel::Kernel(std::shared_ptr<Pipelines> pipelines, const Program& p, CompilePurpose purpose)
    : source(p.source),
      num_buffers(p.num_buffers),
      groups(p.groups),
      writes(p.writes),
      texel(p.texel),
      push_bytes(p.push_bytes),
      vars(p.vars),
      launch_size(p.launch_size),
      pipelines_(std::move(pipelines)),
      purpose_(purpose) {
  name = p.name;
  // Slots the program does not describe are taken as written: a needless barrier is safe.
  writes.resize(static_cast<size_t>(num_buffers), true);
  spirv_ = glsl_to_spirv(name, source, Variant::descriptors, purpose_);
}

Kernel::~Kernel() {
  for (VkPipeline p : pipelines_by_binding_)
    if (p != VK_NULL_HANDLE) vkDestroyPipeline(pipelines_->device->handle, p, nullptr);
}

const Layout& Kernel::layout(Binding binding) {
  return pipelines_->layout(binding, num_buffers, push_bytes, texel);
}

VkPipeline Kernel::pipeline(Binding binding) {
  std::lock_guard lock(mu_);
  VkPipeline& slot = pipelines_by_binding_[static_cast<int>(binding)];
  if (slot == VK_NULL_HANDLE) {
    const Layout& l = layout(binding);
    if (binding == Binding::device_address)
      slot = pipelines_->create(
          name, glsl_to_spirv(name, source, Variant::device_address, purpose_), l, purpose_);
    else
      slot = pipelines_->create(name, spirv_, l, purpose_);
  }
  return slot;
}

}  // namespace vkgrad::vk
