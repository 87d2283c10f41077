// engine: turns tensor-level graphs into results — device names, buffer storage (owned by BUFFER
// nodes), realize (schedule cache, memory plan, compile, run) and runtime counters. Depends on
// sched and the runtime interface; names no backend (backends.cpp registers them) and knows
// nothing of Tensor.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>
#include <vkgrad/tensor.hpp>

#include "ir/uop.hpp"
#include "runtime/device.hpp"

namespace vkgrad::engine {

// "" -> the default device; "cpu" -> "CPU"; DeviceError naming the device if it cannot open.
std::string canonical_device(const std::string& device);
// The backend of a canonical device name (opened on first use; lives until the process ends).
Runtime& runtime(const std::string& canonical_device);

// A BUFFER node on `device` holding a copy of `nbytes` bytes (count elements of dtype).
UOp upload(const void* data, size_t nbytes, DType dtype, int64_t count, const std::string& device);
// A new, uninitialised BUFFER node.
UOp allocate(DType dtype, int64_t count, const std::string& device);
// Copies a realized BUFFER's bytes out.
void download(const UOp& buffer, void* dst, size_t nbytes);

// Realizes each root (a tensor-level node) and returns, for each, a node that reads the result
// from a buffer: RESHAPE(BUFFER) with the root's shape (or the BUFFER itself when 1-D).
std::vector<UOp> realize(std::span<const UOp> roots, std::span<const std::string> devices);
// The kernels realize() would run for these roots.
std::vector<KernelInfo> schedule_info(std::span<const UOp> roots,
                                      std::span<const std::string> devices);

// The BUFFER under a plain contiguous view (BUFFER or RESHAPE(BUFFER)), else a null UOp.
UOp as_buffer(const UOp& u);
// The inverse: a BUFFER seen with `shape` (the BUFFER itself when the shape is its 1-D size).
UOp view_of(const UOp& buffer, const Shape& shape);
// The runtime's handle for a BUFFER node's storage (what KernelLaunch::buffers holds).
void* buffer_handle(const UOp& buffer);
// A node kept alive exactly as long as a BUFFER: the graph the buffer's value came from, for a
// value the engine did not compute there (the frontend's cross-device copies, whose gradients
// must find their source however the buffer is reached). A null UOp where none was set.
void set_origin(const UOp& buffer, UOp origin);
UOp origin(const UOp& buffer);

// ---- recording, for the Jit (engine/jit.hpp) ----------------------------------------------------
// What one realize ran. It holds everything the launches point at, so that a replay finds the
// same kernels and arena and no handle is freed or handed to another buffer meanwhile.
struct RecordedRun {
  Runtime* runtime = nullptr;
  std::vector<KernelLaunch> launches;
  std::vector<std::vector<std::string>> var_names;  // per launch: its variables, in vars order
  // Per launch: the bytes of the arena slot it writes (its slot 0), or 0 when it writes a buffer
  // of its own (an output).
  std::vector<size_t> arena_bytes;
  std::vector<UOp> inputs;         // BUFFER nodes the kernels read
  std::vector<UOp> outputs;        // BUFFER nodes the kernels write
  std::shared_ptr<void> schedule;  // the cached schedule: compiled kernels and arena
  std::mutex* run_mu = nullptr;    // the schedule's lock on its arena
};
// While a recorder is set on this thread, every realize that runs kernels appends a RecordedRun
// (it still runs them). Returns the recorder it replaces; nullptr removes it.
std::vector<RecordedRun>* set_run_recorder(std::vector<RecordedRun>* recorder);
std::vector<RecordedRun>* run_recorder();
// Counts one graph replay of `kernels` launches in RuntimeStats (`recorded`: it recorded again).
void count_graph_replay(int64_t kernels, double run_ms, bool recorded);

}  // namespace vkgrad::engine
