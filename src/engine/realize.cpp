// engine: realize — normalize the graph (buffers become placeholders) -> look the structure up
// in the schedule cache -> on a miss, schedule, render and compile every kernel (kernel_cache.cpp)
// -> allocate outputs, bind inputs and the schedule's reusable intermediate arena -> run. Also
// schedule_info, the Jit's run recorder, the DEBUG and NOOPT switches and RuntimeStats.
#include "engine/realize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vkgrad/stats.hpp>

#include "codegen/pipeline.hpp"
#include "engine/internal.hpp"
#include "ir/debug.hpp"
#include "sched/lazy.hpp"
#include "sched/schedule.hpp"

namespace vkgrad {
namespace engine {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

int64_t g_validation_base = 0;  // validation_messages() at the last reset

thread_local std::vector<RecordedRun>* t_recorder = nullptr;

}  // namespace

bool noopt() {
  static const bool v = env_int("NOOPT", 0) != 0;
  return v;
}

std::mutex g_stats_mu;
RuntimeStats g_stats;

std::vector<RecordedRun>* set_run_recorder(std::vector<RecordedRun>* recorder) {
  return std::exchange(t_recorder, recorder);
}
std::vector<RecordedRun>* run_recorder() { return t_recorder; }

void count_graph_replay(int64_t kernels, double run_ms, bool recorded) {
  std::lock_guard s(g_stats_mu);
  ++g_stats.graph_replays;
  g_stats.graph_rerecords += recorded ? 1 : 0;
  g_stats.kernels_run += kernels;
  g_stats.run_ms += run_ms;
}

std::vector<UOp> realize(std::span<const UOp> roots, std::span<const std::string> devices) {
  std::vector<UOp> out(roots.begin(), roots.end());
  std::vector<UOp> todo;
  std::vector<size_t> where;
  for (size_t i = 0; i < roots.size(); ++i)
    if (!as_buffer(roots[i])) {
      todo.push_back(roots[i]);
      where.push_back(i);
    }
  if (todo.empty()) return out;
  const std::string device = devices[where[0]];
  for (size_t i : where)
    if (devices[i] != device)
      throw DeviceError(
          fmt::format("realize: tensors on {} and {} in one realize", device, devices[i]));

  auto t0 = Clock::now();
  const NormalizedGraph g = normalize_graph(todo);
  const double normalize_ms = ms_since(t0);
  // A kernel runs on one device and reads only its buffers: a buffer of another device in the
  // graph (an op that mixed devices) is refused here rather than read as foreign memory.
  for (const UOp& b : g.inputs)
    if (lazy::buffer_device(b) != device)
      throw DeviceError(fmt::format(
          "realize: a computation on {} reads a buffer on {} ({} elements of {}); move it with "
          "to(\"{}\") first",
          device, lazy::buffer_device(b), b.arg_as<int64_t>(), b.dtype().base().name(), device));
  std::shared_ptr<CachedSchedule> cs = lookup_or_build(g, device);
  const Schedule& sched = cs->schedule;

  // Bind buffers: inputs, fresh outputs, the arena.
  auto t1 = Clock::now();
  std::vector<void*> handles(sched.buffers.size(), nullptr);
  std::vector<UOp> outputs(todo.size());
  for (size_t b = 0; b < sched.buffers.size(); ++b) {
    const ScheduleBuffer& sb = sched.buffers[b];
    switch (sb.kind) {
      case ScheduleBuffer::Kind::input:
        handles[b] = storage_of(g.inputs[sb.index]).handle;
        break;
      case ScheduleBuffer::Kind::intermediate:
        handles[b] = cs->arena[sb.index];
        break;
      case ScheduleBuffer::Kind::output: {
        UOp nb = new_buffer(sb.dtype, sb.count, device);
        handles[b] = storage_of(nb).handle;
        outputs[sb.index] = nb;
        break;
      }
    }
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    const ScheduleBuffer& sb = sched.buffers[sched.outputs[i]];
    if (sb.kind == ScheduleBuffer::Kind::input) {
      outputs[i] = g.inputs[sb.index];  // the root was an input all along
    } else if (!outputs[i]) {
      outputs[i] = outputs[sb.index];  // the same node asked for twice
    }
  }
  std::vector<KernelLaunch> launches;
  std::vector<std::vector<std::string>> var_names(sched.kernels.size());
  launches.reserve(sched.kernels.size());
  for (size_t k = 0; k < sched.kernels.size(); ++k) {
    KernelLaunch l{cs->kernels[k].get(), {}, {}};
    for (int b : sched.kernels[k].buffers) l.buffers.push_back(handles[b]);
    for (const std::string& v : cs->var_names[k]) {
      auto it = g.vars.find(v);
      if (it == g.vars.end())
        throw InternalError(fmt::format(
            "realize: kernel {} reads the variable {}, which is not bound", launches.size(), v));
      l.vars.push_back(it->second);
    }
    var_names[k] = cs->var_names[k];
    launches.push_back(std::move(l));
  }
  std::vector<double> seconds;
  const bool timed = debug_level() >= 1 || kernel_timing();
  {
    std::lock_guard run(cs->run_mu);
    cs->runtime->run(launches, timed ? &seconds : nullptr);
  }
  const double run_ms = ms_since(t1);
  if (debug_level() == 1)
    for (size_t k = 0; k < seconds.size(); ++k)
      std::fprintf(stderr, "*** %-6s %4zu %-24s %3zu bufs  %9.3f ms\n", device.c_str(), k,
                   launches[k].kernel->name.c_str(), launches[k].buffers.size(), seconds[k] * 1e3);
  if (timed) record_times(*cs, device, seconds);
  {
    std::lock_guard s(g_stats_mu);
    ++g_stats.realizes;
    g_stats.schedule_ms += normalize_ms;
    g_stats.run_ms += run_ms;
    g_stats.kernels_run += static_cast<int64_t>(launches.size());
  }
  if (t_recorder && !launches.empty()) {
    std::vector<UOp> written;
    for (const UOp& o : outputs)
      if (o && std::find(g.inputs.begin(), g.inputs.end(), o) == g.inputs.end())
        written.push_back(o);
    std::vector<size_t> arena_bytes;
    for (const ScheduleKernel& k : sched.kernels) {
      const ScheduleBuffer& sb = sched.buffers[static_cast<size_t>(k.buffers[0])];
      // An input written in place (an ASSIGN's target) is written by the run too.
      if (sb.kind == ScheduleBuffer::Kind::input &&
          std::find(written.begin(), written.end(), g.inputs[sb.index]) == written.end())
        written.push_back(g.inputs[sb.index]);
      arena_bytes.push_back(sb.kind == ScheduleBuffer::Kind::intermediate
                                ? static_cast<size_t>(sched.arena_slot_bytes[sb.index])
                                : 0);
    }
    t_recorder->push_back({cs->runtime, std::move(launches), std::move(var_names),
                           std::move(arena_bytes), g.inputs, std::move(written), cs, &cs->run_mu});
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    const Shape& shape = sched.output_shapes[i];
    out[where[i]] = lazy::has_sym(shape) ? lazy::reshape_bound(outputs[i], shape, g.vars)
                                         : view_of(outputs[i], shape);
  }
  return out;
}

std::vector<KernelInfo> schedule_info(std::span<const UOp> roots,
                                      std::span<const std::string> devices) {
  std::vector<UOp> todo;
  for (const UOp& r : roots)
    if (!as_buffer(r)) todo.push_back(r);
  if (todo.empty()) return {};
  const NormalizedGraph g = normalize_graph(todo);
  const Schedule sched = build_schedule(g.key);
  std::vector<KernelInfo> out;
  for (const ScheduleKernel& k : sched.kernels)
    out.push_back({kernel_name(k.ast), devices[0], static_cast<int64_t>(k.buffers.size()),
                   lazy::concrete(k.global_shape, g.vars)});
  return out;
}

}  // namespace engine

RuntimeStats runtime_stats() {
  std::lock_guard lock(engine::g_stats_mu);
  RuntimeStats s = engine::g_stats;
  s.validation_messages = engine::validation_messages() - engine::g_validation_base;
  s.live_nodes = static_cast<int64_t>(UOp::live_count());
  return s;
}
void reset_runtime_stats() {
  {
    std::lock_guard lock(engine::g_stats_mu);
    const int64_t live = engine::g_stats.device_bytes;
    engine::g_stats = {};
    engine::g_stats.device_bytes = engine::g_stats.peak_device_bytes = live;
    engine::g_validation_base = engine::validation_messages();
  }
  engine::clear_kernel_times();
}

}  // namespace vkgrad
