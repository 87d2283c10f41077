// vk: block suballocation and host copies (see memory.hpp).
#include "vk/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vkgrad/error.hpp>

#include "vk/vk_check.hpp"

namespace vkgrad::vk {

namespace {

constexpr VkDeviceSize kBlockSize = VkDeviceSize{64} << 20;
constexpr VkDeviceSize kStagingSize = VkDeviceSize{16} << 20;

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

// The memory type in `bits` with all of `required`, preferring more of `preferred`; -1 if none.
int pick_type(const VkPhysicalDeviceMemoryProperties& mem, uint32_t bits,
              VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((bits & (1u << i)) == 0 || (f & required) != required) continue;
    const int score = __builtin_popcount(f & preferred);
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  return best;
}

}  // namespace

Memory::Memory(Device& device, Queue& queue) : device_(device), queue_(queue) {
  const Caps& c = device_.caps;
  const VkPhysicalDeviceMemoryProperties& mem = c.memory;
  VkDeviceSize largest_local = 0;
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      largest_local = std::max(largest_local, mem.memoryHeaps[i].size);

  // Direct mode only where the host-visible device-local type spans the big heap: a 256 MiB
  // BAR window on a discrete GPU is not where tensors should live.
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags visible =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags nice =
      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  int type = c.use_mapped ? pick_type(mem, ~0u, visible, nice) : -1;
  if (type >= 0 && mem.memoryHeaps[mem.memoryTypes[type].heapIndex].size >= largest_local) {
    direct_ = true;
  } else {
    type = pick_type(mem, ~0u, local, 0);
    if (type < 0) type = pick_type(mem, ~0u, 0, local);
    if (type < 0) throw DeviceError(fmt::format("{}: no usable memory type", device_.name()));
  }
  block_type_ = static_cast<uint32_t>(type);
  coherent_ = (mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  cached_ = (mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
  heap_size_ = mem.memoryHeaps[mem.memoryTypes[type].heapIndex].size;
  max_allocation_ = std::min(heap_size_, c.p11.maxMemoryAllocationSize);
  // Small heaps get smaller blocks, so one block never claims a large share of them.
  block_size_ = std::max<VkDeviceSize>(VkDeviceSize{1} << 20, std::min(kBlockSize, heap_size_ / 8));
  alignment_ = std::max<VkDeviceSize>(16, c.props.limits.minStorageBufferOffsetAlignment);
  if (c.target.tuning.texel_loads)
    alignment_ = std::max<VkDeviceSize>(alignment_, c.props.limits.minTexelBufferOffsetAlignment);
  if (direct_ && !coherent_)  // flushed ranges of neighbours must not overlap
    alignment_ = std::max<VkDeviceSize>(alignment_, c.props.limits.nonCoherentAtomSize);
}

Memory::~Memory() {
  for (auto& b : blocks_) destroy_block(b.get());
  blocks_.clear();
  delete dummy_;
  VkDevice dev = device_.handle;
  if (staging_ != VK_NULL_HANDLE) vkDestroyBuffer(dev, staging_, nullptr);
  if (staging_memory_ != VK_NULL_HANDLE) vkFreeMemory(dev, staging_memory_, nullptr);
}

std::string Memory::describe() const {
  return fmt::format("memory: {} (memory type {}, heap {} MiB), blocks of {} MiB",
                     !direct_  ? "device-local, copies through a staging buffer"
                     : cached_ ? "device-local and host-visible, copies are memcpy"
                               : "device-local and host-visible, uncached: copies in are memcpy, "
                                 "copies out through a staging buffer",
                     block_type_, heap_size_ >> 20, block_size_ >> 20);
}

Block* Memory::new_block(VkDeviceSize size, bool dedicated) {
  VkDevice dev = device_.handle;
  auto b = std::make_unique<Block>();
  b->size = size;
  b->dedicated = dedicated;
  VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (device_.caps.use_bda) info.usage |= VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  if (device_.caps.target.tuning.texel_loads)
    info.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(dev, &info, nullptr, &b->buffer);
  if (r != VK_SUCCESS) return nullptr;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, b->buffer, &req);
  VkMemoryAllocateFlagsInfo flags{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.pNext = device_.caps.use_bda ? &flags : nullptr;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = block_type_;
  if ((req.memoryTypeBits & (1u << block_type_)) == 0 ||
      (r = vkAllocateMemory(dev, &alloc, nullptr, &b->memory)) != VK_SUCCESS ||
      (r = vkBindBufferMemory(dev, b->buffer, b->memory, 0)) != VK_SUCCESS) {
    destroy_block(b.get());
    return nullptr;
  }
  if (direct_) {
    void* p = nullptr;
    if (vkMapMemory(dev, b->memory, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) {
      destroy_block(b.get());
      return nullptr;
    }
    b->mapped = static_cast<std::byte*>(p);
  }
  if (device_.caps.use_bda) {
    VkBufferDeviceAddressInfo ai{.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    ai.buffer = b->buffer;
    b->address = vkGetBufferDeviceAddress(dev, &ai);
  }
  b->free.emplace(0, size);
  blocks_.push_back(std::move(b));
  return blocks_.back().get();
}

void Memory::destroy_block(Block* b) noexcept {
  VkDevice dev = device_.handle;
  for (const auto& [key, view] : b->views) vkDestroyBufferView(dev, view, nullptr);
  b->views.clear();
  if (b->mapped != nullptr) vkUnmapMemory(dev, b->memory);
  if (b->buffer != VK_NULL_HANDLE) vkDestroyBuffer(dev, b->buffer, nullptr);
  if (b->memory != VK_NULL_HANDLE) vkFreeMemory(dev, b->memory, nullptr);
  b->mapped = nullptr;
  b->buffer = VK_NULL_HANDLE;
  b->memory = VK_NULL_HANDLE;
}

void Memory::release_empty_blocks() noexcept {
  cached_dedicated_ = 0;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if ((*it)->used == 0) {
      destroy_block(it->get());
      it = blocks_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Memory::try_place(Block& b, VkDeviceSize reserved, VkDeviceSize* offset) {
  for (auto it = b.free.begin(); it != b.free.end(); ++it) {
    if (it->second < reserved) continue;
    *offset = it->first;
    const VkDeviceSize rest = it->second - reserved;
    b.free.erase(it);
    if (rest > 0) b.free.emplace(*offset + reserved, rest);
    b.used += reserved;
    return true;
  }
  return false;
}

Allocation* Memory::alloc(size_t bytes) {
  const VkDeviceSize reserved = align_up(std::max<VkDeviceSize>(bytes, 1), alignment_);
  if (reserved > max_allocation_)
    throw OutOfMemory(fmt::format(
        "{}: cannot allocate {} bytes: larger than the largest allocation the device allows "
        "({} bytes: heap {} bytes, maxMemoryAllocationSize {} bytes)",
        device_.name(), bytes, max_allocation_, heap_size_,
        device_.caps.p11.maxMemoryAllocationSize));
  std::lock_guard lock(mu_);
  const bool dedicated = reserved > block_size_ / 2;
  VkDeviceSize offset = 0;
  Block* home = nullptr;
  for (auto& b : blocks_) {
    // Shared blocks take small allocations; an empty cached dedicated block of exactly this
    // size takes a big one.
    const bool fits =
        dedicated ? b->dedicated && b->used == 0 && b->size == reserved : !b->dedicated;
    if (fits && try_place(*b, reserved, &offset)) {
      home = b.get();
      if (dedicated) cached_dedicated_ -= b->size;
      break;
    }
  }
  if (home == nullptr) {
    const VkDeviceSize size = dedicated ? reserved : block_size_;
    home = new_block(size, dedicated);
    if (home == nullptr) {
      // Give every empty block back and try once more before reporting.
      release_empty_blocks();
      home = new_block(size, dedicated);
    }
    if (home == nullptr)
      throw OutOfMemory(
          fmt::format("{}: cannot allocate {} bytes (device memory exhausted; a "
                      "block of {} bytes could not be allocated)",
                      device_.name(), bytes, size));
    try_place(*home, reserved, &offset);
  }
  return new Allocation{home, offset, bytes, reserved};
}

void Memory::free(Allocation* a) noexcept {
  if (a == nullptr) return;
  std::lock_guard lock(mu_);
  Block* b = a->block;
  VkDeviceSize begin = a->offset, end = a->offset + a->reserved;
  auto next = b->free.lower_bound(begin);
  if (next != b->free.end() && next->first == end) {
    end += next->second;
    next = b->free.erase(next);
  }
  if (next != b->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      b->free.erase(prev);
    }
  }
  b->free.emplace(begin, end - begin);
  b->used -= a->reserved;
  delete a;
  if (b->used != 0) return;
  // Keep one empty shared block as a spare, and empty dedicated blocks up to an eighth of the
  // heap for reuse by size; the rest goes back (and everything empty does before an allocation
  // is refused).
  if (b->dedicated && cached_dedicated_ + b->size <= heap_size_ / 8) {
    cached_dedicated_ += b->size;
    return;
  }
  const bool other_spare = std::any_of(blocks_.begin(), blocks_.end(), [&](const auto& o) {
    return o.get() != b && !o->dedicated && o->used == 0;
  });
  if (b->dedicated || other_spare) {
    destroy_block(b);
    std::erase_if(blocks_, [&](const auto& o) { return o.get() == b; });
  }
}

VkBufferView Memory::texel_view(Block& block, VkDeviceSize offset, VkDeviceSize range,
                                VkFormat format) {
  std::lock_guard lock(views_mu_);
  auto [it, fresh] = block.views.try_emplace({offset, range, format}, VK_NULL_HANDLE);
  if (!fresh) return it->second;
  VkBufferViewCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  info.buffer = block.buffer;
  info.format = format;
  info.offset = offset;
  info.range = range;
  if (VkResult r = vkCreateBufferView(device_.handle, &info, nullptr, &it->second);
      r != VK_SUCCESS) {
    block.views.erase(it);
    throw_result(r, "vkCreateBufferView");
  }
  return it->second;
}

const Allocation& Memory::dummy() {
  std::lock_guard lock(dummy_mu_);
  if (dummy_ == nullptr) dummy_ = alloc(16);
  return *dummy_;
}

// The range of a mapped block to flush or invalidate: [offset, offset + size) widened to
// nonCoherentAtomSize.
VkMappedMemoryRange Memory::atom_range(const Block& b, VkDeviceSize offset,
                                       VkDeviceSize size) const {
  const VkDeviceSize atom = device_.caps.props.limits.nonCoherentAtomSize;
  VkMappedMemoryRange r{.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  r.memory = b.memory;
  r.offset = offset / atom * atom;
  r.size = std::min(align_up(offset + size, atom), b.size) - r.offset;
  return r;
}

void Memory::flush(const Block& b, VkDeviceSize offset, VkDeviceSize size) {
  if (coherent_) return;
  const VkMappedMemoryRange r = atom_range(b, offset, size);
  vk_check(vkFlushMappedMemoryRanges(device_.handle, 1, &r), "vkFlushMappedMemoryRanges");
}

void Memory::invalidate(const Block& b, VkDeviceSize offset, VkDeviceSize size) {
  if (coherent_) return;
  const VkMappedMemoryRange r = atom_range(b, offset, size);
  vk_check(vkInvalidateMappedMemoryRanges(device_.handle, 1, &r), "vkInvalidateMappedMemoryRanges");
}

void Memory::ensure_staging() {
  if (staging_ != VK_NULL_HANDLE) return;
  VkDevice dev = device_.handle;
  staging_size_ = std::min(kStagingSize, block_size_);
  VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = staging_size_;
  info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  vk_check(vkCreateBuffer(dev, &info, nullptr, &staging_), "vkCreateBuffer (staging)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, staging_, &req);
  int type = pick_type(device_.caps.memory, req.memoryTypeBits,
                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (type < 0)
    type = pick_type(device_.caps.memory, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (type < 0) throw DeviceError(fmt::format("{}: no host-visible memory type", device_.name()));
  staging_coherent_ = (device_.caps.memory.memoryTypes[type].propertyFlags &
                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(type);
  vk_check(vkAllocateMemory(dev, &alloc, nullptr, &staging_memory_), "vkAllocateMemory (staging)");
  vk_check(vkBindBufferMemory(dev, staging_, staging_memory_, 0), "vkBindBufferMemory");
  void* p = nullptr;
  vk_check(vkMapMemory(dev, staging_memory_, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
  staging_mapped_ = static_cast<std::byte*>(p);
}

namespace {

// Orders a staging copy after earlier dispatches (which may read or write the range) and
// makes its result visible to later dispatches and to the host.
void copy_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_access,
                  VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier b{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

}  // namespace

void Memory::write(const Allocation& dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (bytes > dst.size)
    throw InternalError(fmt::format("{}: copy_in of {} bytes into a buffer of {}", device_.name(),
                                    bytes, dst.size));
  const Block& b = *dst.block;
  if (direct_) {
    std::memcpy(b.mapped + dst.offset, src, bytes);
    flush(b, dst.offset, bytes);
    return;
  }
  std::lock_guard lock(queue_.mu);
  ensure_staging();
  const auto* from = static_cast<const std::byte*>(src);
  for (size_t done = 0; done < bytes;) {
    const VkDeviceSize n = std::min<VkDeviceSize>(staging_size_, bytes - done);
    std::memcpy(staging_mapped_, from + done, n);
    if (!staging_coherent_) {
      VkMappedMemoryRange r{.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
      r.memory = staging_memory_;
      r.size = VK_WHOLE_SIZE;
      vk_check(vkFlushMappedMemoryRanges(device_.handle, 1, &r), "vkFlushMappedMemoryRanges");
    }
    queue_.run_once([&](VkCommandBuffer cmd) {
      copy_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
      VkBufferCopy region{0, dst.offset + done, n};
      vkCmdCopyBuffer(cmd, staging_, b.buffer, 1, &region);
      copy_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    });
    done += n;
  }
}

void Memory::read(void* dst, const Allocation& src, size_t bytes) {
  if (bytes == 0) return;
  if (bytes > src.size)
    throw InternalError(fmt::format("{}: copy_out of {} bytes from a buffer of {}", device_.name(),
                                    bytes, src.size));
  const Block& b = *src.block;
  if (direct_ && cached_) {
    invalidate(b, src.offset, bytes);
    std::memcpy(dst, b.mapped + src.offset, bytes);
    return;
  }
  std::lock_guard lock(queue_.mu);
  ensure_staging();
  auto* to = static_cast<std::byte*>(dst);
  for (size_t done = 0; done < bytes;) {
    const VkDeviceSize n = std::min<VkDeviceSize>(staging_size_, bytes - done);
    queue_.run_once([&](VkCommandBuffer cmd) {
      copy_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
      VkBufferCopy region{src.offset + done, 0, n};
      vkCmdCopyBuffer(cmd, b.buffer, staging_, 1, &region);
      copy_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    });
    if (!staging_coherent_) {
      VkMappedMemoryRange r{.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
      r.memory = staging_memory_;
      r.size = VK_WHOLE_SIZE;
      vk_check(vkInvalidateMappedMemoryRanges(device_.handle, 1, &r),
               "vkInvalidateMappedMemoryRanges");
    }
    std::memcpy(to + done, staging_mapped_, n);
    done += n;
  }
}

}  // namespace vkgrad::vk
