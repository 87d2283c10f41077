// vk: queue submissions and waits (see queue.hpp).
#include "vk/queue.hpp"

#include <chrono>
#include <cstdint>

#include "vk/counters.hpp"
#include "vk/vk_check.hpp"

namespace vkgrad::vk {

// How long Queue::wait polls a GPU's timeline before it blocks.
constexpr std::chrono::microseconds kSpinWait{200};

Queue::Queue(Device& device) : device_(device) {
  VkDevice dev = device_.handle;
  if (device_.caps.use_timeline) {
    VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    type.initialValue = 0;
    VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    vk_check(vkCreateSemaphore(dev, &info, nullptr, &timeline_), "vkCreateSemaphore");
  }
  VkCommandPoolCreateInfo pool{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool.queueFamilyIndex = device_.caps.queue_family;
  try {
    vk_check(vkCreateCommandPool(dev, &pool, nullptr, &once_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = once_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    vk_check(vkAllocateCommandBuffers(dev, &alloc, &once_cmd_), "vkAllocateCommandBuffers");
  } catch (...) {
    release();
    throw;
  }
}

Queue::~Queue() { release(); }

void Queue::release() noexcept {
  VkDevice dev = device_.handle;
  vkQueueWaitIdle(device_.queue);
  for (auto& [ticket, fence] : fences_in_flight_) vkDestroyFence(dev, fence, nullptr);
  fences_in_flight_.clear();
  for (VkFence f : spare_fences_) vkDestroyFence(dev, f, nullptr);
  spare_fences_.clear();
  if (once_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev, once_pool_, nullptr);
  once_pool_ = VK_NULL_HANDLE;
  if (timeline_ != VK_NULL_HANDLE) vkDestroySemaphore(dev, timeline_, nullptr);
  timeline_ = VK_NULL_HANDLE;
}

uint64_t Queue::submit(std::span<const VkCommandBuffer> cmds) {
  const uint64_t ticket = last_ + 1;
  VkSubmitInfo info{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = static_cast<uint32_t>(cmds.size());
  info.pCommandBuffers = cmds.data();
  VkTimelineSemaphoreSubmitInfo timeline{.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  VkFence fence = VK_NULL_HANDLE;
  if (timeline_ != VK_NULL_HANDLE) {
    timeline.signalSemaphoreValueCount = 1;
    timeline.pSignalSemaphoreValues = &ticket;
    info.pNext = &timeline;
    info.signalSemaphoreCount = 1;
    info.pSignalSemaphores = &timeline_;
  } else {
    if (spare_fences_.empty()) {
      VkFenceCreateInfo fi{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VkFence f;
      vk_check(vkCreateFence(device_.handle, &fi, nullptr, &f), "vkCreateFence");
      spare_fences_.push_back(f);
    }
    fence = spare_fences_.back();
  }
  vk_check(vkQueueSubmit(device_.queue, 1, &info, fence), "vkQueueSubmit");
  if (fence != VK_NULL_HANDLE) {
    spare_fences_.pop_back();
    fences_in_flight_.emplace_back(ticket, fence);
  }
  last_ = ticket;
  ++g_counters.submits;
  return ticket;
}

void Queue::wait(uint64_t ticket) {
  if (ticket <= completed_) return;
  if (timeline_ != VK_NULL_HANDLE && device_.caps.use_spin_wait) {
    // A GPU finishes a short submission in microseconds, and waking a thread blocked on the
    // driver costs tens of them: poll the counter for a while first. (Not on a device that runs
    // on the CPU: its workers need the cores.)
    const auto until = std::chrono::steady_clock::now() + kSpinWait;
    do {
      uint64_t value = 0;
      vk_check(vkGetSemaphoreCounterValue(device_.handle, timeline_, &value),
               "vkGetSemaphoreCounterValue");
      if (value >= ticket) {
        completed_ = ticket;
        return;
      }
    } while (std::chrono::steady_clock::now() < until);
  }
  if (timeline_ != VK_NULL_HANDLE) {
    VkSemaphoreWaitInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    info.semaphoreCount = 1;
    info.pSemaphores = &timeline_;
    info.pValues = &ticket;
    vk_check(vkWaitSemaphores(device_.handle, &info, UINT64_MAX), "vkWaitSemaphores");
  } else {
    while (!fences_in_flight_.empty() && fences_in_flight_.front().first <= ticket) {
      VkFence f = fences_in_flight_.front().second;
      vk_check(vkWaitForFences(device_.handle, 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      vk_check(vkResetFences(device_.handle, 1, &f), "vkResetFences");
      fences_in_flight_.pop_front();
      spare_fences_.push_back(f);
    }
  }
  completed_ = ticket;
}

void Queue::run_once(const std::function<void(VkCommandBuffer)>& record) {
  wait_all();  // the one-time command buffer may still be pending from the previous call
  vk_check(vkResetCommandPool(device_.handle, once_pool_, 0), "vkResetCommandPool");
  VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(once_cmd_, &begin), "vkBeginCommandBuffer");
  record(once_cmd_);
  vk_check(vkEndCommandBuffer(once_cmd_), "vkEndCommandBuffer");
  wait(submit({&once_cmd_, 1}));
}

}  // namespace vkgrad::vk
