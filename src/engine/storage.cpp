// engine: buffer storage. Storage is allocated when a BUFFER node is made here and freed by the
// IR's buffer-free hook when that node dies, so a buffer lives exactly as long as some tensor or
// lazy graph can still read it.
#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "engine/internal.hpp"
#include "sched/lazy.hpp"

namespace vkgrad::engine {
namespace {

struct StorageTable {
  std::mutex mu;
  std::unordered_map<int64_t, Storage> by_id;
  std::unordered_map<int64_t, UOp> origins;  // set_origin's nodes, by buffer id
  static StorageTable& get() {
    static StorageTable* t = new StorageTable();  // outlives every BUFFER node
    return *t;
  }
};

void free_buffer(const UOpNode& node) noexcept {
  const int64_t id = node.src[0].arg_as<int64_t>();
  Storage s;
  UOp origin;  // released after the lock: the graph it holds may free buffers in turn
  {
    StorageTable& t = StorageTable::get();
    std::lock_guard lock(t.mu);
    if (auto o = t.origins.find(id); o != t.origins.end()) {
      origin = std::move(o->second);
      t.origins.erase(o);
    }
    auto it = t.by_id.find(id);
    if (it == t.by_id.end()) return;
    s = it->second;
    t.by_id.erase(it);
  }
  if (s.runtime) s.runtime->free(s.handle);
  std::lock_guard stats(g_stats_mu);
  g_stats.device_bytes -= static_cast<int64_t>(s.bytes);
}

const bool g_hook_installed = [] {
  set_buffer_free_hook(&free_buffer);
  return true;
}();

}  // namespace

UOp new_buffer(DType dtype, int64_t count, const std::string& device) {
  (void)g_hook_installed;
  Runtime& rt = runtime_of(device);
  const size_t bytes = static_cast<size_t>(count) * dtype.itemsize();
  void* handle = rt.alloc(bytes);
  UOp b = lazy::buffer(dtype, count, device);
  {
    StorageTable& t = StorageTable::get();
    std::lock_guard lock(t.mu);
    t.by_id[lazy::buffer_id(b)] = {&rt, handle, bytes};
  }
  std::lock_guard s(g_stats_mu);
  ++g_stats.buffers_allocated;
  g_stats.device_bytes += static_cast<int64_t>(bytes);
  g_stats.peak_device_bytes = std::max(g_stats.peak_device_bytes, g_stats.device_bytes);
  return b;
}

Storage storage_of(const UOp& buffer) {
  StorageTable& t = StorageTable::get();
  std::lock_guard lock(t.mu);
  auto it = t.by_id.find(lazy::buffer_id(buffer));
  if (it == t.by_id.end()) throw InternalError("engine: a BUFFER without storage");
  return it->second;
}

UOp upload(const void* data, size_t nbytes, DType dtype, int64_t count, const std::string& device) {
  UOp b = new_buffer(dtype, count, device);
  const Storage s = storage_of(b);
  s.runtime->copy_in(s.handle, data, nbytes);
  return b;
}

UOp allocate(DType dtype, int64_t count, const std::string& device) {
  return new_buffer(dtype, count, device);
}

void download(const UOp& buffer, void* dst, size_t nbytes) {
  const Storage s = storage_of(buffer);
  s.runtime->copy_out(dst, s.handle, nbytes);
}

UOp view_of(const UOp& buffer, const Shape& shape) {
  return shape == Shape{buffer.arg_as<int64_t>()} ? buffer : lazy::reshape(buffer, shape);
}

UOp as_buffer(const UOp& u) {
  if (u.op() == Ops::BUFFER) return u;
  if (u.op() == Ops::RESHAPE && u.src(0).op() == Ops::BUFFER) return u.src(0);
  return {};
}

void* buffer_handle(const UOp& buffer) { return storage_of(buffer).handle; }

void set_origin(const UOp& buffer, UOp origin) {
  StorageTable& t = StorageTable::get();
  UOp old;  // released after the lock
  std::lock_guard lock(t.mu);
  if (!t.by_id.count(lazy::buffer_id(buffer)))
    throw InternalError("engine: set_origin on a BUFFER without storage");
  UOp& slot = t.origins[lazy::buffer_id(buffer)];
  old = std::exchange(slot, std::move(origin));
}

UOp origin(const UOp& buffer) {
  StorageTable& t = StorageTable::get();
  std::lock_guard lock(t.mu);
  auto it = t.origins.find(lazy::buffer_id(buffer));
  return it == t.origins.end() ? UOp() : it->second;
}

}  // namespace vkgrad::engine
