// vk: device memory. Buffers are suballocated (first fit, coalescing free lists) from 64 MiB
// blocks, each covered by one VkBuffer; anything over half a block gets a dedicated block.
// Where device-local memory is also host-visible over the whole heap (lavapipe, integrated
// GPUs), copies are memcpy; otherwise they go through a host-visible staging buffer.
// Depends on device.hpp and queue.hpp.
#pragma once

#include <volk.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vk/device.hpp"
#include "vk/queue.hpp"

namespace vkgrad::vk {

struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  std::byte* mapped = nullptr;  // whole block, persistently mapped (host-visible memory only)
  VkDeviceAddress address = 0;  // of `buffer`, when buffer device address is on
  bool dedicated = false;
  std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, disjoint, never adjacent
  VkDeviceSize used = 0;
  // Uniform texel buffer views of ranges of `buffer` (offset, range, format), made on first use
  // (Memory::texel_view) and destroyed with the block.
  std::map<std::tuple<VkDeviceSize, VkDeviceSize, VkFormat>, VkBufferView> views;
};

// What Runtime::alloc hands out (as void*): a range of a block's buffer.
struct Allocation {
  Block* block = nullptr;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;      // bytes asked for
  VkDeviceSize reserved = 0;  // bytes taken from the block (size aligned up)
};

class Memory {
 public:
  Memory(Device& device, Queue& queue);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // `bytes` > 0. Throws OutOfMemory with the byte count; the device stays usable.
  Allocation* alloc(size_t bytes);
  void free(Allocation* a) noexcept;
  // Host <-> device copies of the first `bytes` of an allocation. No GPU work may be pending on
  // the allocation (run() and replay() return only once theirs is done).
  void write(const Allocation& dst, const void* src, size_t bytes);
  void read(void* dst, const Allocation& src, size_t bytes);
  // A small allocation bound where a launch passes a null handle (zero-size buffers).
  const Allocation& dummy();
  // A view of `range` bytes of `block` from `offset` as texels of `format`
  // (TuningProfile::texel_loads), kept with the block. Thread-safe.
  VkBufferView texel_view(Block& block, VkDeviceSize offset, VkDeviceSize range, VkFormat format);

  bool direct() const { return direct_; }
  std::string describe() const;

 private:
  Block* new_block(VkDeviceSize size, bool dedicated);
  void destroy_block(Block* b) noexcept;
  void release_empty_blocks() noexcept;
  bool try_place(Block& b, VkDeviceSize reserved, VkDeviceSize* offset);
  void ensure_staging();
  VkMappedMemoryRange atom_range(const Block& b, VkDeviceSize offset, VkDeviceSize size) const;
  void flush(const Block& b, VkDeviceSize offset, VkDeviceSize size);
  void invalidate(const Block& b, VkDeviceSize offset, VkDeviceSize size);

  Device& device_;
  Queue& queue_;
  std::mutex mu_;
  bool direct_ = false;
  bool coherent_ = true;  // of the block memory type (direct mode)
  // Of the block memory type too: the host reads it through its own caches. Where it does not (a
  // discrete GPU's memory mapped through its PCIe window: an H200 read it at about 25 MB/s),
  // read() copies through the staging buffer, in host memory, even in direct mode.
  bool cached_ = true;
  uint32_t block_type_ = 0;
  VkDeviceSize heap_size_ = 0;
  VkDeviceSize max_allocation_ = 0;
  VkDeviceSize block_size_ = 0;
  VkDeviceSize alignment_ = 16;
  std::vector<std::unique_ptr<Block>> blocks_;
  // Empty dedicated blocks kept for a later allocation of the same size (a realize that makes a
  // big output every step then reuses memory whose pages are already touched).
  VkDeviceSize cached_dedicated_ = 0;
  std::mutex dummy_mu_;
  std::mutex views_mu_;
  Allocation* dummy_ = nullptr;

  // Staging (non-direct mode, and reads of uncached direct memory): one host-visible buffer,
  // cached where a type is; copies larger than it go in chunks.
  VkBuffer staging_ = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory_ = VK_NULL_HANDLE;
  std::byte* staging_mapped_ = nullptr;
  VkDeviceSize staging_size_ = 0;
  bool staging_coherent_ = true;
};

}  // namespace vkgrad::vk
