// cpu: the CPU backend (see runtime.hpp).
#include "cpu/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>
#if defined(__x86_64__) || defined(__i386__)
#include <sys/mman.h>
#include <xmmintrin.h>
#endif

#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "cpu/compiler.hpp"
#include "cpu/thread_pool.hpp"

namespace vkgrad::cpu {
namespace {

// Below this much work (loop iterations of the whole kernel), a kernel runs on the calling
// thread: waking the pool costs more than it saves.
constexpr int64_t kParallelWork = 1 << 15;

// Subnormal floats (below 2^-126 in magnitude for float32): x86's vector units take a microcode
// assist per operation on them, and a training step whose values decay toward them (ResNet-18's
// SGD with momentum on a loss near zero) ran its weight updates 5x slower, the step 150 -> 210 ms,
// in one process of three. A kernel without float64 values runs with MXCSR's flush-to-zero bit
// set (runtime.hpp): its results are never subnormal. Not denormals-are-zero: subnormal inputs
// are read exactly (libm's log2f scales them by bit manipulation, which DAZ arithmetic breaks).
// The thread's own mode comes back after the kernel: the calling thread is the application's.
bool subnormals_from_env() {
  const char* v = std::getenv("VKGRAD_CPU_SUBNORMALS");
  return v != nullptr && std::string_view(v) == "1";
}

class SubnormalsFlushed {
 public:
#if defined(__x86_64__) || defined(__i386__)
  explicit SubnormalsFlushed(bool on) : saved_(on ? _mm_getcsr() : 0), on_(on) {
    if (on_) _mm_setcsr(saved_ | kFlushToZero);
  }
  ~SubnormalsFlushed() {
    if (on_) _mm_setcsr(saved_);
  }
#else
  explicit SubnormalsFlushed(bool) {}
#endif
  SubnormalsFlushed(const SubnormalsFlushed&) = delete;
  SubnormalsFlushed& operator=(const SubnormalsFlushed&) = delete;

#if defined(__x86_64__) || defined(__i386__)
 private:
  static constexpr unsigned kFlushToZero = 0x8000;
  unsigned saved_;
  bool on_;
#endif
};

class CpuKernel final : public CompiledKernel {
 public:
  KernelFn fn = nullptr;
  bool flush_subnormals = false;  // runs with subnormals flushed (no float64 value in it)
  std::shared_ptr<Library> lib;
  int64_t parallel_size = 1;
  int64_t work = 1;  // of the constant ranges
  // Symbolic kernels: the variables, the outermost trip count over them (null: parallel_size)
  // and the ends of the symbolic ranges, which multiply `work`.
  std::vector<VarArg> vars;
  UOp launch_size;
  std::vector<UOp> symbolic_ends;
  int64_t scratch_floats = 0;  // per thread, passed after the buffers (Program::host)
};

// This thread's kernel scratch, 64-byte aligned, grown to the largest request and freed with
// the thread.
float* thread_scratch(int64_t floats) {
  struct Scratch {
    std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
    int64_t floats = 0;
  };
  thread_local Scratch s;
  if (s.floats < floats) {
    s.data.reset(static_cast<float*>(
        std::aligned_alloc(64, static_cast<size_t>((floats + 15) / 16 * 16) * sizeof(float))));
    if (!s.data) throw OutOfMemory(fmt::format("CPU: {} bytes of kernel scratch", floats * 4));
    s.floats = floats;
  }
  return s.data.get();
}

// Saturating product (work is only compared with kParallelWork).
int64_t times(int64_t work, int64_t n) {
  constexpr int64_t cap = int64_t{1} << 40;
  return n > 0 && work > cap / n ? cap : work * n;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

class CpuRuntime final : public Runtime {
 public:
  explicit CpuRuntime(bool flush_subnormals) : flush_subnormals_(flush_subnormals) {}
  std::string name() const override { return "CPU"; }
  std::string identity() const override {
    const CompilerInfo& ci = Compiler::instance().info();
    return fmt::format("CPU|{}|{} threads|{}|{}", cpu_model(), ThreadPool::global().size(),
                       ci.version, target_key(target_));
  }
  const Target& target() const override { return target_; }

  std::string describe() const override {
    const CompilerInfo& ci = Compiler::instance().info();
    return fmt::format(
        "CPU: {}, {} threads; C compiler {} ({}); cache {}; float32 subnormals {}; tuning {}",
        cpu_model(), ThreadPool::global().size(), ci.path.empty() ? "none found" : ci.path,
        ci.version, Compiler::cache_dir(), flush_subnormals_ ? "flushed to zero" : "kept",
        describe_tuning(tuning_table(), target_.tuning));
  }
  // Freed blocks are kept by size and handed out again (as tinygrad's LRU allocator does): a
  // realize that allocates the same output sizes every step then touches no fresh pages.
  void* alloc(size_t bytes) override {
    if (bytes == 0) return nullptr;
    const size_t size = (bytes + 63) / 64 * 64;
    {
      std::lock_guard lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
        sizes_[p] = size;
        return p;
      }
    }
    void* p = fresh(size);
    if (!p) {
      trim(0);  // give the cache back and try once more
      p = fresh(size);
    }
    if (!p) throw OutOfMemory(fmt::format("CPU: cannot allocate {} bytes", bytes));
    std::lock_guard lock(mu_);
    sizes_[p] = size;
    return p;
  }
  // Fresh memory. A block of 2 MiB or more is aligned to 2 MiB and asks for transparent huge
  // pages: a kernel streaming a large weight then walks a few TLB entries, not one per 4 KiB.
  static void* fresh(size_t size) {
    if (size < kHugePage) return std::aligned_alloc(64, size);
    void* p = std::aligned_alloc(kHugePage, (size + kHugePage - 1) / kHugePage * kHugePage);
    if (p) ::madvise(p, size, MADV_HUGEPAGE);
    return p;
  }
  void free(void* handle) noexcept override {
    if (!handle) return;
    std::lock_guard lock(mu_);
    auto it = sizes_.find(handle);
    const size_t size = it == sizes_.end() ? 0 : it->second;
    if (it != sizes_.end()) sizes_.erase(it);
    if (size == 0 || size > kMaxCachedBytes / 4) {
      std::free(handle);
      return;
    }
    free_[size].push_back(handle);
    cached_bytes_ += size;
    if (cached_bytes_ > kMaxCachedBytes) trim_locked(kMaxCachedBytes / 2);
  }
  ~CpuRuntime() override { trim(0); }

  void copy_in(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_out(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  using Runtime::compile;
  std::shared_ptr<CompiledKernel> compile(const Program& p, CompilePurpose purpose) override {
    auto k = std::make_shared<CpuKernel>();
    k->name = p.name;
    k->lib = Compiler::instance().compile(p.source, purpose);
    k->fn = Compiler::instance().kernel(k->lib, p.name);
    k->parallel_size = p.parallel_size;
    k->vars = p.vars;
    k->launch_size = p.launch_size;
    k->scratch_floats = p.host.scratch_floats;
    k->flush_subnormals =
        flush_subnormals_ && std::none_of(p.uops.begin(), p.uops.end(), [](const UOp& u) {
          return u.dtype().base().scalar() == dtypes::float64;
        });
    // Loop iterations of the whole kernel: each range once (the linear list opens some again).
    k->work = 1;
    std::unordered_set<const UOpNode*> seen;
    for (const UOp& u : p.uops) {
      if (u.op() != Ops::RANGE || !seen.insert(u.get()).second) continue;
      if (range_size(u) < 0)
        k->symbolic_ends.push_back(u.src(0));
      else
        k->work = times(k->work, range_size(u));
    }
    return k;
  }
  void run(std::span<const KernelLaunch> launches, std::vector<double>* seconds) override {
    for (const KernelLaunch& l : launches) {
      const auto t0 = std::chrono::steady_clock::now();
      launch(static_cast<const CpuKernel&>(*l.kernel), l);
      if (seconds)
        seconds->push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::unique_ptr<Graph> capture(std::span<const KernelLaunch> launches) override;

  static void launch(const CpuKernel& k, const KernelLaunch& l) {
    ThreadPool& pool = ThreadPool::global();
    void** bufs = const_cast<void**>(l.buffers.data());
    check_var_values(k.name, k.vars, l.vars);
    const int64_t* vars = l.vars.data();
    const int64_t size =
        k.launch_size ? evaluate_size(k.launch_size, k.vars, l.vars) : k.parallel_size;
    int64_t work = k.work;
    for (const UOp& end : k.symbolic_ends) work = times(work, evaluate_size(end, k.vars, l.vars));
    // A kernel with scratch gets this thread's after its buffers.
    auto call = [&](int64_t b, int64_t e) {
      const SubnormalsFlushed flushed(k.flush_subnormals);
      if (k.scratch_floats == 0) return k.fn(bufs, vars, b, e);
      std::vector<void*> with_scratch(l.buffers);
      with_scratch.push_back(thread_scratch(k.scratch_floats));
      k.fn(with_scratch.data(), vars, b, e);
    };
    if (work < kParallelWork || size < 2 || pool.size() == 1) {
      call(0, size);
    } else {
      const int64_t grain = std::max<int64_t>(1, size / (pool.size() * 4));
      pool.parallel_for(size, grain, call);
    }
  }

 private:
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;
  static constexpr size_t kHugePage = size_t{2} << 20;
  void trim(size_t keep) {
    std::lock_guard lock(mu_);
    trim_locked(keep);
  }
  void trim_locked(size_t keep) {
    for (auto it = free_.begin(); it != free_.end() && cached_bytes_ > keep;) {
      for (void* p : it->second) std::free(p);
      cached_bytes_ -= it->first * it->second.size();
      it = free_.erase(it);
    }
  }
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  std::unordered_map<void*, size_t> sizes_;
  size_t cached_bytes_ = 0;

  const Target target_ = tuned_host_target();
  const bool flush_subnormals_;
};

// A captured list is the kernels' entry points; a replay calls them with the new buffers.
class CpuGraph final : public Graph {
 public:
  explicit CpuGraph(std::span<const KernelLaunch> launches) {
    for (const KernelLaunch& l : launches)
      kernels_.push_back(static_cast<const CpuKernel*>(l.kernel));
  }
  bool replay(std::span<const KernelLaunch> launches) override {
    if (launches.size() != kernels_.size())
      throw InternalError(fmt::format("CPU graph: replay of {} kernels, {} captured",
                                      launches.size(), kernels_.size()));
    for (size_t i = 0; i < launches.size(); ++i) {
      if (launches[i].kernel != kernels_[i])
        throw InternalError(fmt::format("CPU graph: kernel {} differs from the captured one", i));
      CpuRuntime::launch(*kernels_[i], launches[i]);
    }
    return false;
  }

 private:
  std::vector<const CpuKernel*> kernels_;
};

std::unique_ptr<Graph> CpuRuntime::capture(std::span<const KernelLaunch> launches) {
  return std::make_unique<CpuGraph>(launches);
}

}  // namespace

std::unique_ptr<Runtime> make_runtime() { return make_runtime(!subnormals_from_env()); }
std::unique_ptr<Runtime> make_runtime(bool flush_subnormals) {
  return std::make_unique<CpuRuntime>(flush_subnormals);
}

Backend backend() {
  Backend b;
  b.prefix = "CPU";
  b.title = "CPU";
  b.host = true;
  b.open = [](int) { return make_runtime(); };
  b.list = [](std::string*) {
    return std::vector<DeviceEntry>{{0, "CPU", "host", DeviceKind::host, 0}};
  };
  return b;
}

}  // namespace vkgrad::cpu
