// vk: running kernels. Executor owns one device's queue, memory and pipelines; run() records a
// list of launches into one command buffer (bounded chunks for long lists) with a barrier only
// where a dispatch touches a byte range an earlier one wrote (or writes one an earlier one
// read), submits once and waits once. CommandGraph is a captured list replayed without
// re-recording: new buffers only rewrite descriptors. Depends on the rest of vk.
#pragma once

#include <volk.h>

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "runtime/device.hpp"
#include "vk/device.hpp"
#include "vk/memory.hpp"
#include "vk/pipeline.hpp"
#include "vk/queue.hpp"

namespace vkgrad::vk {

// One buffer slot of a launch, resolved to a range of a block's VkBuffer.
struct Bound {
  Block* block = nullptr;  // owns `buffer` (and its texel views)
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0, range = 0;
  VkDeviceAddress address = 0;
  bool operator==(const Bound&) const = default;
};

// A launch resolved for recording.
struct Prepared {
  Kernel* kernel = nullptr;
  Binding binding = Binding::descriptor_sets;
  std::vector<Bound> bound;
  std::vector<int64_t> vars;                // the variables' values (push constants)
  std::array<uint32_t, 3> groups{1, 1, 1};  // the grid, for these values
};

// Dispatches per command buffer: one submission never holds more, so it never runs for long.
constexpr size_t kChunk = 512;

class Executor {
 public:
  explicit Executor(std::shared_ptr<Device> device);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Resolves handles (null: the dummy buffer) and picks the binding: device addresses when a
  // buffer exceeds maxStorageBufferRange (DeviceError if that is off), else `preferred`. Checks
  // the variables' values and sizes the grid for them.
  Prepared prepare(const KernelLaunch& launch, Binding preferred);
  void run(std::span<const KernelLaunch> launches, std::vector<double>* seconds);
  std::unique_ptr<Graph> capture(std::span<const KernelLaunch> launches,
                                 const std::shared_ptr<Executor>& self);
  // See vk.hpp: `n` dependent dispatches of `kernel` on `buffer`, recorded by a bare loop.
  double bare_dispatch_us(Kernel& kernel, const Allocation& buffer, int n);

  // Binds a prepared launch's pipeline and buffers (`set` for descriptor_sets) and dispatches.
  void record_dispatch(VkCommandBuffer cmd, const Prepared& p, VkDescriptorSet set,
                       VkPipeline* bound_pipeline);
  // Writes p's buffers into `set`; only the slots that differ from `old` when it is given.
  void write_set(VkDescriptorSet set, const Prepared& p, const Prepared* old);
  // Slot s's descriptor (the caller sets dstSet): a storage buffer described in `*info`, or a
  // uniform texel buffer through the view in `*view`.
  VkWriteDescriptorSet slot_write(const Prepared& p, size_t s, VkDescriptorBufferInfo* info,
                                  VkBufferView* view);
  VkDescriptorPool make_descriptor_pool(uint32_t sets, uint32_t descriptors);

  const std::shared_ptr<Device> device;
  const std::shared_ptr<Pipelines> pipelines;
  Queue queue;
  Memory memory;

 private:
  struct Frame {
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    uint64_t ticket = 0;
    std::vector<VkDescriptorPool> descriptor_pools;  // descriptor_sets binding only
    size_t pools_used = 0;
    VkQueryPool queries = VK_NULL_HANDLE;  // 2 per dispatch, when timing
  };
  VkDescriptorSet allocate_set(Frame& f, Kernel& k);
  void begin(Frame& f);
  void release() noexcept;

  std::array<Frame, 2> frames_;
};

// Where barriers go: before launch i when it reads or overwrites bytes written since the last
// barrier, or writes bytes read since it. Exposed for tests.
std::vector<bool> plan_barriers(std::span<const Prepared> launches);

// The global compute -> compute memory barrier that run() and graphs record.
void record_barrier(VkCommandBuffer cmd);

}  // namespace vkgrad::vk
