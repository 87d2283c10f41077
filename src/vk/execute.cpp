// vk: recording, barriers, submission and graph replay (see execute.hpp).
#include "vk/execute.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "vk/counters.hpp"
#include "vk/vk_check.hpp"

namespace vkgrad::vk {

namespace {

// Disjoint half-open byte ranges, merged as they are added.
class IntervalSet {
 public:
  bool overlaps(VkDeviceSize begin, VkDeviceSize end) const {
    // Ranges are disjoint and sorted, so the last one starting before `end` has the largest
    // end of all that could overlap.
    auto it = ranges_.lower_bound(end);
    return it != ranges_.begin() && std::prev(it)->second > begin;
  }
  void add(VkDeviceSize begin, VkDeviceSize end) {
    auto it = ranges_.lower_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != ranges_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }

 private:
  std::map<VkDeviceSize, VkDeviceSize> ranges_;  // begin -> end
};

struct Pending {
  IntervalSet read, written;
};

void host_visibility_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier b{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &b, 0, nullptr, 0, nullptr);
}

void begin_buffer(VkCommandBuffer cmd, VkCommandBufferUsageFlags flags) {
  VkCommandBufferBeginInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  info.flags = flags;
  vk_check(vkBeginCommandBuffer(cmd, &info), "vkBeginCommandBuffer");
}

VkCommandPool make_command_pool(const Device& d, VkCommandPoolCreateFlags flags) {
  VkCommandPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  info.flags = flags;
  info.queueFamilyIndex = d.caps.queue_family;
  VkCommandPool pool;
  vk_check(vkCreateCommandPool(d.handle, &info, nullptr, &pool), "vkCreateCommandPool");
  return pool;
}

VkCommandBuffer allocate_command_buffer(const Device& d, VkCommandPool pool) {
  VkCommandBufferAllocateInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cmd;
  vk_check(vkAllocateCommandBuffers(d.handle, &info, &cmd), "vkAllocateCommandBuffers");
  return cmd;
}

}  // namespace

std::vector<bool> plan_barriers(std::span<const Prepared> launches) {
  std::vector<bool> barrier(launches.size(), false);
  std::unordered_map<VkBuffer, Pending> pending;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Prepared& p = launches[i];
    const std::vector<bool>& writes = p.kernel->writes;
    bool hazard = false;
    for (size_t s = 0; s < p.bound.size() && !hazard; ++s) {
      auto it = pending.find(p.bound[s].buffer);
      if (it == pending.end()) continue;
      const VkDeviceSize b = p.bound[s].offset, e = b + p.bound[s].range;
      hazard = it->second.written.overlaps(b, e) || (writes[s] && it->second.read.overlaps(b, e));
    }
    if (hazard) {
      barrier[i] = true;
      pending.clear();
    }
    for (size_t s = 0; s < p.bound.size(); ++s) {
      const VkDeviceSize b = p.bound[s].offset, e = b + p.bound[s].range;
      Pending& q = pending[p.bound[s].buffer];
      (writes[s] ? q.written : q.read).add(b, e);
    }
  }
  return barrier;
}

void record_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier b{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b, 0, nullptr, 0, nullptr);
  ++g_counters.barriers;
}

// ---------------------------------------------------------------- Executor

Executor::Executor(std::shared_ptr<Device> dev)
    : device(std::move(dev)),
      pipelines(std::make_shared<Pipelines>(device)),
      queue(*device),
      memory(*device, queue) {
  try {
    for (Frame& f : frames_) {
      f.pool = make_command_pool(*device, 0);
      f.cmd = allocate_command_buffer(*device, f.pool);
      if (device->caps.use_timestamps) {
        VkQueryPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        info.queryType = VK_QUERY_TYPE_TIMESTAMP;
        info.queryCount = 2 * kChunk;
        vk_check(vkCreateQueryPool(device->handle, &info, nullptr, &f.queries),
                 "vkCreateQueryPool");
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

Executor::~Executor() {
  {
    std::lock_guard lock(queue.mu);
    try {
      queue.wait_all();
    } catch (const Error&) {  // a lost device: nothing left to wait for
    }
  }
  release();
}

void Executor::release() noexcept {
  VkDevice dev = device->handle;
  for (Frame& f : frames_) {
    for (VkDescriptorPool p : f.descriptor_pools) vkDestroyDescriptorPool(dev, p, nullptr);
    f.descriptor_pools.clear();
    if (f.queries != VK_NULL_HANDLE) vkDestroyQueryPool(dev, f.queries, nullptr);
    if (f.pool != VK_NULL_HANDLE) vkDestroyCommandPool(dev, f.pool, nullptr);
    f = Frame{};
  }
}

VkDescriptorPool Executor::make_descriptor_pool(uint32_t sets, uint32_t descriptors) {
  const VkDescriptorPoolSize sizes[] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(descriptors, 1u)},
      {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, std::max(descriptors, 1u)}};
  VkDescriptorPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  // Sets of update-after-bind layouts must come from update-after-bind pools.
  if (device->caps.use_update_after_bind)
    info.flags = VK_DESCRIPTOR_POOL_CREATE_UPDATE_AFTER_BIND_BIT;
  info.maxSets = std::max(sets, 1u);
  info.poolSizeCount = device->caps.target.tuning.texel_loads ? 2 : 1;
  info.pPoolSizes = sizes;
  VkDescriptorPool pool;
  vk_check(vkCreateDescriptorPool(device->handle, &info, nullptr, &pool), "vkCreateDescriptorPool");
  return pool;
}

Prepared Executor::prepare(const KernelLaunch& launch, Binding preferred) {
  auto* kernel = const_cast<Kernel*>(dynamic_cast<const Kernel*>(launch.kernel));
  if (kernel == nullptr)
    throw InternalError(
        fmt::format("{}: launch of a kernel not compiled by this runtime", device->name()));
  // A launch may pass more buffers than the kernel declares: simplification can remove every
  // read of an input (a size-0 view, a multiply by zero). The extra ones are not bound.
  if (static_cast<int>(launch.buffers.size()) < kernel->num_buffers)
    throw InternalError(fmt::format("{}: kernel '{}' takes {} buffers, the launch passes {}",
                                    device->name(), kernel->name, kernel->num_buffers,
                                    launch.buffers.size()));
  Prepared p;
  p.kernel = kernel;
  p.binding = preferred;
  check_var_values(kernel->name, kernel->vars, launch.vars);
  p.vars = launch.vars;
  p.groups = kernel->launch_size
                 ? group_grid(evaluate_size(kernel->launch_size, kernel->vars, launch.vars),
                              device->caps.props.limits.maxComputeWorkGroupCount)
                 : kernel->groups;
  if (preferred == Binding::push_descriptors &&
      static_cast<uint32_t>(kernel->num_buffers) > device->caps.max_push_descriptors)
    p.binding = Binding::descriptor_sets;
  const VkDeviceSize max_range = device->caps.props.limits.maxStorageBufferRange;
  for (size_t slot = 0; slot < static_cast<size_t>(kernel->num_buffers); ++slot) {
    void* handle = launch.buffers[slot];
    const Allocation& a = handle != nullptr ? *static_cast<Allocation*>(handle) : memory.dummy();
    p.bound.push_back(
        {a.block, a.block->buffer, a.offset, a.reserved, a.block->address + a.offset});
    // A texel buffer's limit counts its texels.
    const bool texel = Program::is_texel(kernel->texel, slot);
    const VkDeviceSize limit =
        texel ? texel_bytes(kernel->texel[slot]) * device->caps.props.limits.maxTexelBufferElements
              : max_range;
    if (a.reserved > limit) {
      if (!device->caps.use_bda)
        throw DeviceError(fmt::format(
            "{}: kernel '{}' binds a buffer of {} bytes, beyond {} ({} bytes), "
            "and buffer device address is {}",
            device->name(), kernel->name, a.size,
            texel ? "maxTexelBufferElements" : "maxStorageBufferRange", limit,
            device->caps.f12.bufferDeviceAddress ? "switched off (VKGRAD_VK_DISABLE=bda)"
                                                 : "not supported"));
      p.binding = Binding::device_address;
    }
  }
  return p;
}

VkWriteDescriptorSet Executor::slot_write(const Prepared& p, size_t s, VkDescriptorBufferInfo* info,
                                          VkBufferView* view) {
  const Bound& b = p.bound[s];
  VkWriteDescriptorSet w{.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstBinding = static_cast<uint32_t>(s);
  w.descriptorCount = 1;
  if (Program::is_texel(p.kernel->texel, s)) {
    *view = memory.texel_view(*b.block, b.offset, b.range, texel_format(p.kernel->texel[s]));
    w.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    w.pTexelBufferView = view;
  } else {
    *info = {b.buffer, b.offset, b.range};
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = info;
  }
  return w;
}

void Executor::write_set(VkDescriptorSet set, const Prepared& p, const Prepared* old) {
  std::vector<VkDescriptorBufferInfo> infos(p.bound.size());
  std::vector<VkBufferView> views(p.bound.size());
  std::vector<VkWriteDescriptorSet> writes;
  writes.reserve(p.bound.size());
  for (size_t s = 0; s < p.bound.size(); ++s) {
    if (old != nullptr && old->bound[s] == p.bound[s]) continue;
    writes.push_back(slot_write(p, s, &infos[s], &views[s]));
    writes.back().dstSet = set;
  }
  if (writes.empty()) return;
  vkUpdateDescriptorSets(device->handle, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);
  g_counters.descriptor_writes += static_cast<int64_t>(writes.size());
}

void Executor::record_dispatch(VkCommandBuffer cmd, const Prepared& p, VkDescriptorSet set,
                               VkPipeline* bound_pipeline) {
  Kernel& k = *p.kernel;
  const Layout& layout = k.layout(p.binding);
  const VkPipeline pipeline = k.pipeline(p.binding);
  if (pipeline != *bound_pipeline) {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    *bound_pipeline = pipeline;
  }
  const size_t n = p.bound.size();
  switch (p.binding) {
    case Binding::push_descriptors: {
      if (n == 0) break;
      std::vector<VkDescriptorBufferInfo> infos(n);
      std::vector<VkBufferView> views(n);
      std::vector<VkWriteDescriptorSet> writes(n);
      for (size_t s = 0; s < n; ++s) writes[s] = slot_write(p, s, &infos[s], &views[s]);
      vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout.pipeline, 0,
                                static_cast<uint32_t>(n), writes.data());
      break;
    }
    case Binding::descriptor_sets:
      if (set != VK_NULL_HANDLE)
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout.pipeline, 0, 1, &set, 0,
                                nullptr);
      break;
    case Binding::device_address:  // the addresses are push constants
      break;
  }
  // Push constants: the device addresses (uvec2 addr[num_buffers]: little-endian 64-bit
  // addresses have that layout), then the variables' values as int32 (the renderer checked
  // their bounds fit).
  std::vector<uint32_t> constants;
  if (p.binding == Binding::device_address)
    for (const Bound& b : p.bound) {
      constants.push_back(static_cast<uint32_t>(b.address));
      constants.push_back(static_cast<uint32_t>(b.address >> 32));
    }
  for (int64_t v : p.vars) constants.push_back(static_cast<uint32_t>(v));
  if (!constants.empty())
    vkCmdPushConstants(cmd, layout.pipeline, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(constants.size() * sizeof(uint32_t)),
                       constants.data());
  vkCmdDispatch(cmd, p.groups[0], p.groups[1], p.groups[2]);
  ++g_counters.dispatches;
}

VkDescriptorSet Executor::allocate_set(Frame& f, Kernel& k) {
  const VkDescriptorSetLayout layout = k.layout(Binding::descriptor_sets).set;
  while (true) {
    if (f.pools_used == f.descriptor_pools.size())
      f.descriptor_pools.push_back(make_descriptor_pool(kChunk, kChunk * 8));
    VkDescriptorSetAllocateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    info.descriptorPool = f.descriptor_pools[f.pools_used];
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = vkAllocateDescriptorSets(device->handle, &info, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      throw_result(r, "vkAllocateDescriptorSets");
    ++f.pools_used;  // full: continue in the next pool
  }
}

void Executor::begin(Frame& f) {
  queue.wait(f.ticket);  // the frame's previous submission must be done before reuse
  vk_check(vkResetCommandPool(device->handle, f.pool, 0), "vkResetCommandPool");
  for (size_t i = 0; i < f.descriptor_pools.size(); ++i)
    vk_check(vkResetDescriptorPool(device->handle, f.descriptor_pools[i], 0),
             "vkResetDescriptorPool");
  f.pools_used = 0;
  begin_buffer(f.cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
}

void Executor::run(std::span<const KernelLaunch> launches, std::vector<double>* seconds) {
  const Binding preferred =
      device->caps.use_push_descriptor ? Binding::push_descriptors : Binding::descriptor_sets;
  std::vector<Prepared> prepared;
  prepared.reserve(launches.size());
  for (const KernelLaunch& l : launches) prepared.push_back(prepare(l, preferred));
  if (prepared.empty()) return;

  // Timing wants each kernel alone on the device: a barrier before every dispatch, and
  // without timestamps one submission per kernel timed on the host.
  const bool timed = seconds != nullptr;
  const bool host_timed = timed && !device->caps.use_timestamps;
  std::vector<bool> barriers =
      timed ? std::vector<bool>(prepared.size(), true) : plan_barriers(prepared);
  const size_t chunk = host_timed ? 1 : kChunk;
  const uint64_t mask = device->caps.timestamp_bits >= 64
                            ? ~uint64_t{0}
                            : (uint64_t{1} << device->caps.timestamp_bits) - 1;

  std::lock_guard lock(queue.mu);
  size_t frame = 0;
  for (size_t start = 0; start < prepared.size(); start += chunk, frame ^= 1) {
    const size_t end = std::min(prepared.size(), start + chunk);
    Frame& f = frames_[frame];
    begin(f);
    const bool stamps = timed && !host_timed;
    if (stamps) vkCmdResetQueryPool(f.cmd, f.queries, 0, static_cast<uint32_t>(2 * (end - start)));
    VkPipeline bound = VK_NULL_HANDLE;
    for (size_t i = start; i < end; ++i) {
      if (barriers[i] && i > 0) record_barrier(f.cmd);
      VkDescriptorSet set = VK_NULL_HANDLE;
      if (prepared[i].binding == Binding::descriptor_sets && !prepared[i].bound.empty()) {
        set = allocate_set(f, *prepared[i].kernel);
        write_set(set, prepared[i], nullptr);
      }
      const auto q = static_cast<uint32_t>(2 * (i - start));
      if (stamps) vkCmdWriteTimestamp(f.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, f.queries, q);
      record_dispatch(f.cmd, prepared[i], set, &bound);
      if (stamps)
        vkCmdWriteTimestamp(f.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, f.queries, q + 1);
    }
    host_visibility_barrier(f.cmd);
    vk_check(vkEndCommandBuffer(f.cmd), "vkEndCommandBuffer");
    const auto t0 = std::chrono::steady_clock::now();
    f.ticket = queue.submit({&f.cmd, 1});
    if (!timed) continue;
    queue.wait(f.ticket);
    if (host_timed) {
      seconds->push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      continue;
    }
    std::vector<uint64_t> ticks(2 * (end - start));
    vk_check(
        vkGetQueryPoolResults(device->handle, f.queries, 0, static_cast<uint32_t>(ticks.size()),
                              ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
    const double period_ns = device->caps.props.limits.timestampPeriod;
    for (size_t i = 0; i < end - start; ++i)
      seconds->push_back(static_cast<double>((ticks[2 * i + 1] - ticks[2 * i]) & mask) * period_ns *
                         1e-9);
  }
  queue.wait_all();
}

double Executor::bare_dispatch_us(Kernel& kernel, const Allocation& buffer, int n) {
  KernelLaunch launch{&kernel, {const_cast<Allocation*>(&buffer)}};
  const Prepared p = prepare(launch, Binding::descriptor_sets);
  run({&launch, 1}, nullptr);  // warm: the driver compiles the pipeline at its first dispatch
  std::lock_guard lock(queue.mu);
  Frame& f = frames_[0];
  begin(f);
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (p.binding == Binding::descriptor_sets) {
    set = allocate_set(f, kernel);
    write_set(set, p, nullptr);
  }
  const Layout& layout = kernel.layout(p.binding);
  vkCmdBindPipeline(f.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline(p.binding));
  if (set != VK_NULL_HANDLE)
    vkCmdBindDescriptorSets(f.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout.pipeline, 0, 1, &set, 0,
                            nullptr);
  else
    vkCmdPushConstants(f.cmd, layout.pipeline, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8,
                       &p.bound[0].address);
  VkMemoryBarrier b{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  for (int i = 0; i < n; ++i) {
    vkCmdDispatch(f.cmd, kernel.groups[0], kernel.groups[1], kernel.groups[2]);
    vkCmdPipelineBarrier(f.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b, 0, nullptr, 0, nullptr);
  }
  host_visibility_barrier(f.cmd);
  vk_check(vkEndCommandBuffer(f.cmd), "vkEndCommandBuffer");
  const auto t0 = std::chrono::steady_clock::now();
  f.ticket = queue.submit({&f.cmd, 1});
  queue.wait(f.ticket);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s * 1e6 / std::max(n, 1);
}

// ---------------------------------------------------------------- CommandGraph

namespace {

// A captured list. Descriptor sets (update-after-bind where the device has it) hold the
// buffers, so a replay with other buffers rewrites only the changed descriptors and resubmits
// the same command buffers. It re-records when that cannot work: a barrier the new buffers
// need is missing, a launch changes between descriptors and device addresses (or its
// addresses, which live in the command buffer, change), or descriptors changed on a device
// without update-after-bind.
class CommandGraph final : public Graph {
 public:
  CommandGraph(std::shared_ptr<Executor> ex, std::vector<Prepared> launches)
      : ex_(std::move(ex)), launches_(std::move(launches)) {
    const Device& d = *ex_->device;
    pool_ = make_command_pool(d, 0);
    uint32_t descriptors = 0;
    for (const Prepared& p : launches_) descriptors += static_cast<uint32_t>(p.bound.size());
    try {
      descriptor_pool_ =
          ex_->make_descriptor_pool(static_cast<uint32_t>(launches_.size()), descriptors);
      sets_.assign(launches_.size(), VK_NULL_HANDLE);
      for (size_t i = 0; i < launches_.size(); ++i) {
        if (launches_[i].bound.empty()) continue;
        VkDescriptorSetLayout layout = launches_[i].kernel->layout(Binding::descriptor_sets).set;
        VkDescriptorSetAllocateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        info.descriptorPool = descriptor_pool_;
        info.descriptorSetCount = 1;
        info.pSetLayouts = &layout;
        vk_check(vkAllocateDescriptorSets(d.handle, &info, &sets_[i]), "vkAllocateDescriptorSets");
        // A device-address launch binds buffers too large for a descriptor: its set waits.
        if (launches_[i].binding != Binding::device_address)
          ex_->write_set(sets_[i], launches_[i], nullptr);
      }
      for (size_t start = 0; start < launches_.size(); start += kChunk)
        cmds_.push_back(allocate_command_buffer(d, pool_));
      std::lock_guard lock(ex_->queue.mu);
      record(plan_barriers(launches_));
    } catch (...) {
      release();
      throw;
    }
  }
  ~CommandGraph() override { release(); }

  bool replay(std::span<const KernelLaunch> launches) override {
    if (launches.size() != launches_.size())
      throw InternalError(fmt::format("{}: graph replay of {} kernels, {} captured",
                                      ex_->device->name(), launches.size(), launches_.size()));
    std::vector<Prepared> next;
    next.reserve(launches.size());
    for (size_t i = 0; i < launches.size(); ++i) {
      if (launches[i].kernel != launches_[i].kernel)
        throw InternalError(fmt::format("{}: graph replay: kernel {} is not the captured '{}'",
                                        ex_->device->name(), i, launches_[i].kernel->name));
      next.push_back(ex_->prepare(launches[i], Binding::descriptor_sets));
    }
    std::lock_guard lock(ex_->queue.mu);
    const std::vector<bool> needed = plan_barriers(next);
    const bool update_after_bind = ex_->device->caps.use_update_after_bind;
    bool rerecord = false;
    for (size_t i = 0; i < next.size() && !rerecord; ++i) {
      const bool changed = next[i].bound != launches_[i].bound;
      // Variable values live in the command buffer (push constants and the grid).
      rerecord = (needed[i] && !barriers_[i]) || next[i].binding != launches_[i].binding ||
                 next[i].vars != launches_[i].vars ||
                 (changed && (!update_after_bind || next[i].binding == Binding::device_address));
    }
    for (size_t i = 0; i < next.size(); ++i)
      if (sets_[i] != VK_NULL_HANDLE && next[i].binding != Binding::device_address)
        ex_->write_set(sets_[i], next[i],
                       launches_[i].binding == Binding::device_address ? nullptr : &launches_[i]);
    launches_ = std::move(next);
    if (rerecord) {
      ++g_counters.graph_rerecords;
      record(needed);
    }
    ex_->queue.wait(ex_->queue.submit(cmds_));
    return rerecord;
  }

 private:
  // Expects the queue's mutex held; no submission of cmds_ may be pending.
  void record(const std::vector<bool>& barriers) {
    ++g_counters.graph_records;
    barriers_ = barriers;
    vk_check(vkResetCommandPool(ex_->device->handle, pool_, 0), "vkResetCommandPool");
    for (size_t c = 0; c < cmds_.size(); ++c) {
      VkCommandBuffer cmd = cmds_[c];
      begin_buffer(cmd, 0);
      VkPipeline bound = VK_NULL_HANDLE;
      const size_t end = std::min(launches_.size(), (c + 1) * kChunk);
      for (size_t i = c * kChunk; i < end; ++i) {
        if (barriers_[i] && i > 0) record_barrier(cmd);
        ex_->record_dispatch(cmd, launches_[i], sets_[i], &bound);
      }
      host_visibility_barrier(cmd);
      vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    }
  }

  void release() noexcept {
    VkDevice dev = ex_->device->handle;
    if (descriptor_pool_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
    if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev, pool_, nullptr);
    descriptor_pool_ = VK_NULL_HANDLE;
    pool_ = VK_NULL_HANDLE;
  }

  std::shared_ptr<Executor> ex_;
  std::vector<Prepared> launches_;  // what the command buffers and sets hold now
  std::vector<bool> barriers_;      // recorded before launch i
  std::vector<VkDescriptorSet> sets_;
  std::vector<VkCommandBuffer> cmds_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
};

}  // namespace

std::unique_ptr<Graph> Executor::capture(std::span<const KernelLaunch> launches,
                                         const std::shared_ptr<Executor>& self) {
  std::vector<Prepared> prepared;
  prepared.reserve(launches.size());
  for (const KernelLaunch& l : launches) prepared.push_back(prepare(l, Binding::descriptor_sets));
  return std::make_unique<CommandGraph>(self, std::move(prepared));
}

}  // namespace vkgrad::vk
