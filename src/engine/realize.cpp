// engine: devices, buffer storage and realize (see realize.hpp).
//
// Buffer lifetime: storage is allocated when a BUFFER node is made here and freed by the IR's
// buffer-free hook when that node dies, so a buffer lives exactly as long as some tensor or lazy
// graph can still read it.
//
// realize: normalize the graph (buffers become placeholders) -> look the structure up in the
// schedule cache -> on a miss, schedule, render and compile every kernel (kernels are cached by
// their AST, which is interned) -> allocate outputs, bind inputs and the schedule's reusable
// intermediate arena -> run.
#include "engine/realize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vkgrad/device.hpp>
#include <vkgrad/stats.hpp>

#include "codegen/pipeline.hpp"
#include "engine/internal.hpp"
#include "ir/print.hpp"
#include "runtime/registry.hpp"
#include "sched/schedule.hpp"

namespace vkgrad {
namespace engine {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
int debug_level() {
  static const int level = env_int("DEBUG", 0);
  return level;
}
bool noopt() {
  static const bool v = env_int("NOOPT", 0) != 0;
  return v;
}

// ---- devices
// --------------------------------------------------------------------------------------
struct Devices {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Runtime>> open;
  std::string default_device;

  static Devices& get() {
    static Devices* d = new Devices();  // never destroyed: buffers may be freed at exit
    return *d;
  }
};

// Device names are a backend's prefix ("CPU", "VULKAN") and, for a backend with several devices,
// "PREFIX:N" (runtime/registry.hpp). "VULKAN" is the Vulkan device picked by VKGRAD_VK_DEVICE or
// the selection order (discrete > integrated > virtual > cpu); "VULKAN:N" naming the picked
// device is the same device as "VULKAN" (and canonicalizes to it).
std::span<const Backend> all_backends() {
  register_backends();
  return backends();
}

// The device everything falls back to: the host backend's.
std::string host_device() {
  for (const Backend& b : all_backends())
    if (b.host) return b.prefix;
  throw InternalError("engine: no host backend registered");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Runtime& runtime_of(const std::string& device) {
  Devices& d = Devices::get();
  std::lock_guard lock(d.mu);
  auto it = d.open.find(device);
  if (it != d.open.end()) return *it->second;
  register_backends();
  try {
    return *d.open.emplace(device, open_device(device)).first->second;
  } catch (const DeviceError& e) {
    const std::string why = e.what();
    if (why.find(device) != std::string::npos) throw;
    throw DeviceError(fmt::format("device {} does not open: {}", device, why));
  }
}

// ---- stats
// ----------------------------------------------------------------------------------------
std::mutex g_stats_mu;
RuntimeStats g_stats;
int64_t g_validation_base = 0;  // validation_messages() at the last reset

// The validation messages every backend has reported so far.
int64_t validation_messages() {
  int64_t n = 0;
  for (const Backend& b : all_backends())
    if (b.validation_messages) n += b.validation_messages();
  return n;
}

// ---- storage
// ----------------------------------------------------------------------------------------
struct Storage {
  Runtime* runtime = nullptr;
  void* handle = nullptr;
  size_t bytes = 0;
};
struct StorageTable {
  std::mutex mu;
  std::unordered_map<int64_t, Storage> by_id;
  static StorageTable& get() {
    static StorageTable* t = new StorageTable();  // outlives every BUFFER node
    return *t;
  }
};

void free_buffer(const UOpNode& node) noexcept {
  const int64_t id = node.src[0].arg_as<int64_t>();
  Storage s;
  {
    StorageTable& t = StorageTable::get();
    std::lock_guard lock(t.mu);
    auto it = t.by_id.find(id);
    if (it == t.by_id.end()) return;
    s = it->second;
    t.by_id.erase(it);
  }
  if (s.runtime) s.runtime->free(s.handle);
}

const bool g_hook_installed = [] {
  set_buffer_free_hook(&free_buffer);
  return true;
}();

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
  return b;
}

Storage storage_of(const UOp& buffer) {
  StorageTable& t = StorageTable::get();
  std::lock_guard lock(t.mu);
  auto it = t.by_id.find(lazy::buffer_id(buffer));
  if (it == t.by_id.end()) throw InternalError("engine: a BUFFER without storage");
  return it->second;
}

// ---- schedule cache -----------------------------------------------------------------------------
struct CachedSchedule {
  UOp key;  // keeps the normalized graph (and so the cache key) alive
  Schedule schedule;
  std::vector<std::shared_ptr<CompiledKernel>> kernels;
  // Per kernel: the variables its compiled program reads (Program::vars), whose values each
  // launch passes in that order (codegen may simplify a variable of the AST away).
  std::vector<std::vector<std::string>> var_names;
  std::vector<Estimates> estimates;  // per kernel (DEBUG=2, kernel_times())
  std::vector<void*> arena;          // per arena slot, allocated once and reused by every run
  Runtime* runtime = nullptr;
  std::mutex run_mu;  // one run at a time uses the arena
  ~CachedSchedule() {
    for (void* h : arena)
      if (runtime) runtime->free(h);
  }
};

struct ScheduleCache {
  std::mutex mu;
  // By (runtime, normalized graph): a graph without buffers (arange, full) names no device.
  std::map<std::pair<const Runtime*, const UOpNode*>, std::shared_ptr<CachedSchedule>> by_key;
  // Compiled kernels by (runtime, interned kernel AST): one AST compiles once per device.
  struct KernelKey {
    const Runtime* runtime;
    const UOpNode* ast;
    bool operator==(const KernelKey&) const = default;
  };
  struct KernelKeyHash {
    size_t operator()(const KernelKey& k) const {
      return std::hash<const void*>()(k.runtime) * 31 + std::hash<const void*>()(k.ast);
    }
  };
  struct Compiled {
    UOp ast;  // keeps the key's node alive
    std::shared_ptr<CompiledKernel> kernel;
    std::vector<std::string> vars;
    Estimates estimates;
  };
  std::unordered_map<KernelKey, Compiled, KernelKeyHash> kernels;
  static ScheduleCache& get() {
    static ScheduleCache* c = new ScheduleCache();
    return *c;
  }
};
constexpr size_t kMaxCachedSchedules = 4096;

std::shared_ptr<CachedSchedule> lookup_or_build(const NormalizedGraph& g,
                                                const std::string& device) {
  ScheduleCache& cache = ScheduleCache::get();
  {
    std::lock_guard lock(cache.mu);
    auto it = cache.by_key.find({&runtime_of(device), g.key.get()});
    if (it != cache.by_key.end()) {
      std::lock_guard s(g_stats_mu);
      ++g_stats.schedule_cache_hits;
      return it->second;
    }
  }
  auto t0 = Clock::now();
  auto cs = std::make_shared<CachedSchedule>();
  cs->key = g.key;
  cs->schedule = build_schedule(g.key);
  cs->runtime = &runtime_of(device);
  const double sched_ms = ms_since(t0);
  if (debug_level() >= 3) {
    std::fprintf(stderr, "schedule: %zu kernels, %zu buffers\n", cs->schedule.kernels.size(),
                 cs->schedule.buffers.size());
  }
  double codegen_ms = 0, compile_ms = 0;
  int64_t rendered = 0, compiled = 0;
  const CodegenOptions opts{.optimize = !noopt()};
  for (const ScheduleKernel& k : cs->schedule.kernels) {
    std::shared_ptr<CompiledKernel> ck;
    std::vector<std::string> vars;
    Estimates est;
    {
      std::lock_guard lock(cache.mu);
      auto it = cache.kernels.find({cs->runtime, k.ast.get()});
      if (it != cache.kernels.end())
        ck = it->second.kernel, vars = it->second.vars, est = it->second.estimates;
    }
    if (!ck) {
      auto t1 = Clock::now();
      Program p = cs->runtime->render(k.ast, opts);
      codegen_ms += ms_since(t1);
      ++rendered;
      if (debug_level() >= 5) std::fprintf(stderr, "%s\n", to_string(k.ast).c_str());
      if (debug_level() >= 4) std::fprintf(stderr, "%s\n", p.source.c_str());
      auto t2 = Clock::now();
      ck = cs->runtime->compile(p);
      compile_ms += ms_since(t2);
      ++compiled;
      for (const VarArg& v : p.vars) vars.push_back(v.name);
      est = p.estimates;
      std::lock_guard lock(cache.mu);
      cache.kernels.emplace(ScheduleCache::KernelKey{cs->runtime, k.ast.get()},
                            ScheduleCache::Compiled{k.ast, ck, vars, est});
    }
    if (debug_level() >= 3)
      std::fprintf(stderr, "  kernel %zu: %s, %zu buffers\n", cs->kernels.size(), ck->name.c_str(),
                   k.buffers.size());
    cs->kernels.push_back(std::move(ck));
    cs->var_names.push_back(std::move(vars));
    cs->estimates.push_back(est);
  }
  for (int64_t bytes : cs->schedule.arena_slot_bytes)
    cs->arena.push_back(cs->runtime->alloc(static_cast<size_t>(bytes)));
  {
    std::lock_guard s(g_stats_mu);
    ++g_stats.schedules_built;
    g_stats.schedule_ms += sched_ms;
    g_stats.codegen_ms += codegen_ms;
    g_stats.compile_ms += compile_ms;
    g_stats.kernels_rendered += rendered;
    g_stats.programs_compiled += compiled;
  }
  std::lock_guard lock(cache.mu);
  if (cache.by_key.size() >= kMaxCachedSchedules) cache.by_key.clear();
  return cache.by_key.emplace(std::make_pair(cs->runtime, g.key.get()), cs).first->second;
}

thread_local std::vector<RecordedRun>* t_recorder = nullptr;

// ---- kernel times
// ---------------------------------------------------------------------------------
std::atomic<bool> g_kernel_timing{false};
struct KernelTotals {
  std::mutex mu;
  std::map<const CompiledKernel*, KernelTime> by_kernel;
  // The kernels are held so that no other kernel reuses an address that keys a total.
  std::vector<std::shared_ptr<CompiledKernel>> held;
  static KernelTotals& get() {
    static KernelTotals* t = new KernelTotals();
    return *t;
  }
};

std::string rate(double amount, double ms, const char* unit) {
  return ms > 0 && amount > 0 ? fmt::format("{:8.2f} {}", amount / ms * 1e-6, unit) : "";
}

// Adds one realize's kernel times to the totals and, at DEBUG>=2, prints them as a table.
void record_times(const CachedSchedule& cs, const std::string& device,
                  const std::vector<double>& seconds) {
  double total = 0;
  for (double t : seconds) total += t;
  if (g_kernel_timing) {
    KernelTotals& kt = KernelTotals::get();
    std::lock_guard lock(kt.mu);
    for (size_t k = 0; k < seconds.size(); ++k) {
      auto [it, fresh] = kt.by_kernel.try_emplace(cs.kernels[k].get());
      KernelTime& t = it->second;
      if (fresh) {
        t.name = cs.kernels[k]->name, t.device = cs.runtime->name();
        kt.held.push_back(cs.kernels[k]);
      }
      ++t.runs;
      t.ms += seconds[k] * 1e3;
      t.gflop += cs.estimates[k].ops * 1e-9;
      t.gbyte += cs.estimates[k].bytes * 1e-9;
    }
  }
  if (debug_level() < 2 || seconds.empty()) return;
  std::fprintf(stderr, "*** %s: %zu kernels, %.3f ms of device time\n", device.c_str(),
               seconds.size(), total * 1e3);
  std::fprintf(stderr, "    %-32s %10s %6s %15s %13s\n", "kernel", "ms", "share", "compute",
               "memory");
  for (size_t k = 0; k < seconds.size(); ++k) {
    const double ms = seconds[k] * 1e3;
    std::fprintf(stderr, "    %-32s %10.3f %5.1f%% %15s %13s\n", cs.kernels[k]->name.c_str(), ms,
                 total > 0 ? 100 * seconds[k] / total : 0.0,
                 rate(cs.estimates[k].ops, ms, "GFLOPS").c_str(),
                 rate(cs.estimates[k].bytes, ms, "GB/s").c_str());
  }
}

}  // namespace

// ---- public engine API
// ------------------------------------------------------------------------------
std::string canonical_device(const std::string& device) {
  if (device.empty()) return vkgrad::default_device();
  std::string d = upper(device);
  for (const Backend& b : all_backends()) {
    if (d.rfind(b.prefix + ":", 0) != 0) continue;
    if (!b.indexed) {
      if (d == b.prefix + ":0") d = b.prefix;  // "CPU:0": the backend's only device
    } else {
      // The device the backend picks has one name, its prefix ("VULKAN"), so both spellings
      // share its buffers.
      try {
        if (runtime_of(b.prefix).name() == d) return b.prefix;
      } catch (const DeviceError&) {
        // No device picked; "VULKAN:N" may still open below or explain why not.
      }
    }
    break;
  }
  runtime_of(d);  // throws DeviceError if it cannot open
  return d;
}

Runtime& runtime(const std::string& canonical_device) { return runtime_of(canonical_device); }

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

std::vector<RecordedRun>* set_run_recorder(std::vector<RecordedRun>* recorder) {
  return std::exchange(t_recorder, recorder);
}
std::vector<RecordedRun>* run_recorder() { return t_recorder; }

void count_graph_replay(int64_t kernels, double run_ms) {
  std::lock_guard s(g_stats_mu);
  ++g_stats.graph_replays;
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
  const bool timed = debug_level() >= 1 || g_kernel_timing;
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
    t_recorder->push_back({cs->runtime, std::move(launches), std::move(var_names), g.inputs,
                           std::move(written), cs, &cs->run_mu});
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

// ---- public device API
// ------------------------------------------------------------------------------
std::string default_device() {
  engine::Devices& d = engine::Devices::get();
  {
    std::lock_guard lock(d.mu);
    if (!d.default_device.empty()) return d.default_device;
  }
  std::string dev = engine::host_device();
  if (const char* env = std::getenv("DEVICE"); env && *env) {
    dev = engine::canonical_device(env);
  } else {
    // A GPU when one opens. A CPU implementation of a GPU API (lavapipe) is slower than the host
    // backend, so it is used only when asked for by name.
    std::string reason;
    for (const Backend& b : engine::all_backends()) {
      if (b.host) continue;
      std::string why;
      const std::vector<DeviceEntry> found = b.list(&why);
      if (found.empty()) {
        reason = fmt::format("no {} device: {}", b.title, why);
        continue;
      }
      const DeviceEntry& best = *std::min_element(found.begin(), found.end(), better);
      if (best.kind != DeviceKind::gpu) {
        reason =
            fmt::format("the only {} device, '{}', is a CPU implementation (DEVICE={} uses it)",
                        b.title, best.label, b.prefix);
        continue;
      }
      try {
        engine::runtime_of(b.prefix);
        dev = b.prefix;
        reason = fmt::format("{} device '{}' ({})", b.title, best.label, best.type);
        break;
      } catch (const Error& e) {
        reason = fmt::format("{} device '{}' did not open: {}", b.title, best.label, e.what());
      }
    }
    if (engine::debug_level() >= 1)
      std::fprintf(stderr, "default device %s: %s\n", dev.c_str(), reason.c_str());
  }
  std::lock_guard lock(d.mu);
  if (d.default_device.empty()) d.default_device = dev;
  return d.default_device;
}

void set_default_device(const std::string& device) {
  const std::string dev = engine::canonical_device(device.empty() ? engine::host_device() : device);
  engine::Devices& d = engine::Devices::get();
  std::lock_guard lock(d.mu);
  d.default_device = dev;
}

std::vector<std::string> devices() {
  std::vector<std::string> out;
  for (const Backend& b : engine::all_backends()) {
    for (const DeviceEntry& e : b.list(nullptr)) {
      try {
        out.push_back(engine::canonical_device(device_name(b, e)));
      } catch (const Error&) {
        // Listed by its backend but does not open: not usable here.
      }
    }
  }
  return out;
}

std::string device_info() {
  std::string out;
  for (const std::string& d : devices()) out += engine::runtime_of(d).describe() + "\n";
  for (const Backend& b : engine::all_backends()) {
    std::string why;
    if (!b.host && b.list(&why).empty()) out += b.prefix + ": not available (" + why + ")\n";
  }
  return out;
}

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
    engine::g_stats = {};
    engine::g_validation_base = engine::validation_messages();
  }
  engine::KernelTotals& kt = engine::KernelTotals::get();
  std::lock_guard lock(kt.mu);
  kt.by_kernel.clear();
  kt.held.clear();
}

void set_kernel_timing(bool on) { engine::g_kernel_timing = on; }
bool kernel_timing() { return engine::g_kernel_timing; }

std::vector<KernelTime> kernel_times() {
  engine::KernelTotals& kt = engine::KernelTotals::get();
  std::vector<KernelTime> out;
  {
    std::lock_guard lock(kt.mu);
    for (const auto& [k, t] : kt.by_kernel) out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace vkgrad
