// vk: the Runtime the engine sees (vk.hpp): device choice, rendering for the device's
// features, compile, memory and execution, each delegated to its file in src/vk.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <vkgrad/error.hpp>

#include "codegen/pipeline.hpp"
#include "vk/compile.hpp"
#include "vk/counters.hpp"
#include "vk/device.hpp"
#include "vk/execute.hpp"
#include "vk/pipeline.hpp"
#include "vk/quirks.hpp"
#include "vk/vk.hpp"

namespace vkgrad::vk {

AtomicCounters g_counters;

namespace {

// The device's target (Caps::target) with the quirks its probes found.
Target target_for(const Caps& c, const Quirks& q) {
  Target t = c.target;
  t.opaque_narrowing = q.narrowing_cast;
  t.opaque_widening = q.widening_compare;
  t.exact_division = !q.inexact_division;
  return t;
}

// Launch shapes beyond the device's limits are renderer bugs; catch them before the driver.
void check_launch_shape(const Device& d, const Program& p) {
  const VkPhysicalDeviceLimits& l = d.caps.props.limits;
  const uint64_t invocations = uint64_t{p.local_size[0]} * p.local_size[1] * p.local_size[2];
  bool ok = invocations <= l.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i)
    ok = ok && p.local_size[i] >= 1 && p.local_size[i] <= l.maxComputeWorkGroupSize[i] &&
         p.groups[i] >= 1 && p.groups[i] <= l.maxComputeWorkGroupCount[i];
  if (!ok)
    throw CompileError(
        fmt::format("{}: kernel '{}' has workgroup {}x{}x{} and {}x{}x{} groups; the device allows "
                    "workgroups up to {}x{}x{} ({} invocations) and {}x{}x{} groups",
                    d.name(), p.name, p.local_size[0], p.local_size[1], p.local_size[2],
                    p.groups[0], p.groups[1], p.groups[2], l.maxComputeWorkGroupSize[0],
                    l.maxComputeWorkGroupSize[1], l.maxComputeWorkGroupSize[2],
                    l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupCount[0],
                    l.maxComputeWorkGroupCount[1], l.maxComputeWorkGroupCount[2]));
  if (static_cast<int>(p.writes.size()) > p.num_buffers)
    throw CompileError(fmt::format("{}: kernel '{}' describes {} written slots for {} buffers",
                                   d.name(), p.name, p.writes.size(), p.num_buffers));
}

constexpr const char* kBareShader = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Data { float data[]; };
void main() { data[gl_GlobalInvocationID.x] += 1.0; }
)";

class VulkanRuntime final : public Runtime {
 public:
  explicit VulkanRuntime(std::shared_ptr<Executor> ex)
      : ex_(std::move(ex)),
        quirks_(find_quirks(*ex_)),
        target_(target_for(ex_->device->caps, quirks_)) {}
  ~VulkanRuntime() override {
    if (bare_buffer_ != nullptr) ex_->memory.free(bare_buffer_);
    ex_->pipelines->save();
  }

  std::string name() const override { return ex_->device->name(); }
  std::string identity() const override {
    const Caps& c = ex_->device->caps;
    std::string uuid;
    for (uint8_t b : c.p11.deviceUUID) uuid += fmt::format("{:02x}", b);
    return fmt::format("VULKAN|{}|{}|{}|{}|{}", c.props.deviceName, c.props.driverVersion,
                       c.p12.driverInfo, uuid, target_key(target_));
  }
  const Target& target() const override { return target_; }

  // A GPU idle while candidates compile clocks down (an H100 idles at 345 MHz, 1980 under
  // load): 0.1 s of its reference kernel first took BEAM's isolated time of ResNet-18's
  // r_64_56_56_64_3_3 from 0.294 to 0.158-0.215 ms (0.056 in the forward). A device that runs
  // on the CPU needs none.
  double warm_up_seconds() const override { return target_.kind == Target::Kind::cpu ? 0 : 0.1; }
  std::string describe() const override {
    const Device& d = *ex_->device;
    return fmt::format("{}\n  quirks: {}\n  {}\n  caches: {} (SPIR-V and pipelines){}",
                       describe_caps(d.index, d.caps),
                       quirks_.found.empty() ? "none" : quirks_.found, ex_->memory.describe(),
                       cache_dir().string(),
                       Instance::get().validation ? "\n  validation layer on" : "");
  }

  void* alloc(size_t bytes) override { return bytes == 0 ? nullptr : ex_->memory.alloc(bytes); }
  void free(void* handle) noexcept override { ex_->memory.free(static_cast<Allocation*>(handle)); }
  void copy_in(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) ex_->memory.write(*static_cast<const Allocation*>(dst), src, bytes);
  }
  void copy_out(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) ex_->memory.read(dst, *static_cast<const Allocation*>(src), bytes);
  }

  using Runtime::compile;
  std::shared_ptr<CompiledKernel> compile(const Program& program, CompilePurpose purpose) override {
    check_launch_shape(*ex_->device, program);
    auto kernel = std::make_shared<Kernel>(ex_->pipelines, program, purpose);
    // The pipeline run() binds is made now, so compile errors surface here.
    kernel->pipeline(ex_->device->caps.use_push_descriptor &&
                             static_cast<uint32_t>(program.num_buffers) <=
                                 ex_->device->caps.max_push_descriptors
                         ? Binding::push_descriptors
                         : Binding::descriptor_sets);
    return kernel;
  }
  void run(std::span<const KernelLaunch> launches, std::vector<double>* seconds) override {
    ex_->run(launches, seconds);
  }
  std::unique_ptr<Graph> capture(std::span<const KernelLaunch> launches) override {
    return ex_->capture(launches, ex_);
  }

  double bare_dispatch_us(int n) {
    std::lock_guard lock(bare_mu_);
    if (!bare_kernel_) {
      Program p;
      p.name = "bare_dispatch";
      p.source = kBareShader;
      p.num_buffers = 1;
      p.local_size = {64, 1, 1};
      p.writes = {true};
      bare_kernel_ = std::static_pointer_cast<Kernel>(compile(p));
      bare_buffer_ = ex_->memory.alloc(64 * sizeof(float));
    }
    return ex_->bare_dispatch_us(*bare_kernel_, *bare_buffer_, n);
  }

 private:
  std::shared_ptr<Executor> ex_;
  Quirks quirks_;
  Target target_;
  std::mutex bare_mu_;
  std::shared_ptr<Kernel> bare_kernel_;
  Allocation* bare_buffer_ = nullptr;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// VKGRAD_VK_DEVICE: an index into the selection order, or a substring of the device name.
int chosen_index(const Instance& inst) {
  const char* want = env("VKGRAD_VK_DEVICE");
  if (want == nullptr) return 0;
  const std::string w = want;
  if (std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::stoi(w);
  std::string names;
  for (size_t i = 0; i < inst.devices.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(inst.devices[i], &p);
    if (lower(p.deviceName).find(lower(w)) != std::string::npos) return static_cast<int>(i);
    names += fmt::format("{}{}: {}", names.empty() ? "" : ", ", i, p.deviceName);
  }
  throw DeviceError(
      fmt::format("Vulkan: VKGRAD_VK_DEVICE={} matches no device (devices: {})", w, names));
}

}  // namespace

std::vector<DeviceSummary> enumerate(std::string* why) {
  std::vector<DeviceSummary> out;
  try {
    const Switches sw = read_switches();
    Instance& inst = Instance::get();
    for (size_t i = 0; i < inst.devices.size(); ++i) {
      const Caps c = query_caps(inst.devices[i], inst.api_version, sw);
      const int index = static_cast<int>(i);
      out.push_back(
          {index, c.props.deviceName, type_name(c.props.deviceType), summary_line(index, c)});
    }
    if (out.empty() && why != nullptr)
      *why = "Vulkan: no devices" + (inst.skipped.empty() ? "" : " (" + inst.skipped + ")");
  } catch (const std::exception& e) {
    out.clear();
    if (why != nullptr) *why = e.what();
  }
  return out;
}

std::unique_ptr<Runtime> make_runtime(int index) {
  const Switches sw = read_switches();
  Instance& inst = Instance::get();
  if (inst.devices.empty())
    throw DeviceError("Vulkan: no devices" +
                      (inst.skipped.empty() ? "" : " (" + inst.skipped + ")"));
  if (index < 0) index = chosen_index(inst);
  if (index >= static_cast<int>(inst.devices.size()))
    throw DeviceError(
        fmt::format("Vulkan: no device VULKAN:{} (there are {})", index, inst.devices.size()));
  auto device = std::make_shared<Device>(inst.devices[index], index, sw);
  return std::make_unique<VulkanRuntime>(std::make_shared<Executor>(std::move(device)));
}

Backend backend() {
  Backend b;
  b.prefix = "VULKAN";
  b.title = "Vulkan";
  b.indexed = true;
  b.open = make_runtime;
  b.list = [](std::string* why) {
    std::vector<DeviceEntry> out;
    for (const DeviceSummary& s : enumerate(why)) {
      // enumerate() is in selection order already: the index ranks devices of one kind.
      const DeviceKind kind = s.type == "discrete" || s.type == "integrated" || s.type == "virtual"
                                  ? DeviceKind::gpu
                              : s.type == "cpu" ? DeviceKind::cpu_implementation
                                                : DeviceKind::other;
      out.push_back({s.index, s.name, s.type, kind, s.index});
    }
    return out;
  };
  b.validation_messages = validation_messages;
  return b;
}

int64_t validation_messages() { return g_validation_messages.load(); }

Counters counters() {
  const AtomicCounters& c = g_counters;
  return {c.spirv_compiled.load(),    c.spirv_cache_hits.load(),
          c.pipelines_created.load(), c.pipeline_cache_hits.load(),
          c.dispatches.load(),        c.barriers.load(),
          c.submits.load(),           c.graph_records.load(),
          c.graph_rerecords.load(),   c.descriptor_writes.load()};
}

double bare_dispatch_us(Runtime& runtime, int n) {
  auto* vk = dynamic_cast<VulkanRuntime*>(&runtime);
  if (vk == nullptr)
    throw InternalError("bare_dispatch_us: " + runtime.name() + " is not a Vulkan runtime");
  return vk->bare_dispatch_us(n);
}

}  // namespace vkgrad::vk
