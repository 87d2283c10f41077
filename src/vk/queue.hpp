// vk: the one compute queue — submissions identified by tickets, waited on through a timeline
// semaphore (or fences where timeline semaphores are off), and one-shot command buffers for
// staging copies. Depends on device.hpp.
#pragma once

#include <volk.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "vk/device.hpp"

namespace vkgrad::vk {

class Queue {
 public:
  explicit Queue(Device& device);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Held by every caller around recording, submitting and waiting: one thread at a time uses
  // the queue and the command buffers that feed it. The methods below expect it held.
  std::mutex mu;

  // Submits `cmds` as one batch; the ticket names it for wait().
  uint64_t submit(std::span<const VkCommandBuffer> cmds);
  // Returns once submission `ticket` and every earlier one have finished.
  void wait(uint64_t ticket);
  void wait_all() { wait(last_); }
  // Records `record` into a reused one-time command buffer, submits it and waits.
  void run_once(const std::function<void(VkCommandBuffer)>& record);

 private:
  void release() noexcept;

  Device& device_;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t last_ = 0;       // ticket of the latest submission
  uint64_t completed_ = 0;  // every ticket up to this one has finished
  std::deque<std::pair<uint64_t, VkFence>> fences_in_flight_;  // without timeline semaphores
  std::vector<VkFence> spare_fences_;
  VkCommandPool once_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer once_cmd_ = VK_NULL_HANDLE;
};

}  // namespace vkgrad::vk
