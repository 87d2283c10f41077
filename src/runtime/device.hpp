// runtime: the interface a backend implements — memory, rendering a kernel AST for the device,
// compiling it, and running a list of kernels — so the engine above never names Vulkan or
// dlopen. src/cpu and src/vk implement it and are opened by device name through registry.hpp.
// Depends on codegen (Program); never includes a backend.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codegen/program.hpp"
#include "codegen/target.hpp"

namespace vkgrad {

// A compiled kernel, ready to launch. Runtimes derive from it.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  std::string name;
};

// What a kernel is compiled for. `trial`: a BEAM candidate, timed and then most likely dropped.
// Its compile reads the on-disk caches but adds nothing to them (no SPIR-V or object file, no
// entry in the driver's pipeline cache), and the runtime keeps nothing of it once the kernel is
// released: a search compiles thousands.
enum class CompilePurpose { use, trial };

struct KernelLaunch {
  const CompiledKernel* kernel = nullptr;
  std::vector<void*> buffers;  // device memory handles, in DEFINE_GLOBAL slot order
  // The values of the kernel's variables, in Program::vars order (empty when it has none). A
  // wrong count or a value outside a variable's bounds is an Error naming both.
  std::vector<int64_t> vars = {};  // (initialized: launches may be written {kernel, buffers})
};

// A recorded list of kernels (graph replay): recorded once by Runtime::capture, then run again
// with the same kernels in the same order but possibly other buffers and variable values. On
// Vulkan a replay reuses the recorded command buffer and only rewrites the bindings that changed
// (recording again where the values changed); on CPU it is a list of function pointers.
class Graph {
 public:
  virtual ~Graph() = default;
  // `launches` must name the captured kernels in the captured order (else InternalError); their
  // buffers and variable values may differ from the captured ones. Returns when all are done:
  // true if the replay had to record its commands again (counted in RuntimeStats).
  virtual bool replay(std::span<const KernelLaunch> launches) = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;      // "CPU", "VULKAN:0"
  virtual std::string describe() const = 0;  // one paragraph for `vkgrad info`
  // What a tuned kernel (a BEAM search's Opt list) is valid for: the device and its driver or
  // compiler, and the code generator's Target; two runtimes that differ here may not share one.
  virtual std::string identity() const = 0;
  // How long a device must have been kept busy before a kernel's time is its time in a busy
  // stretch (a GPU left idle clocks down): a BEAM search runs its reference kernel this long
  // before it times candidates.
  virtual double warm_up_seconds() const { return 0; }
  // What the code generator renders for (a BEAM search's actions come from it).
  virtual const Target& target() const = 0;

  // Memory: opaque handles. alloc throws OutOfMemory (and the runtime stays usable).
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* handle) noexcept = 0;
  virtual void copy_in(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_out(void* dst, const void* src, size_t bytes) = 0;

  // A Program (codegen(ast, options, target()) of a kernel AST) -> a launchable kernel.
  // compile() may be called from several threads at once.
  std::shared_ptr<CompiledKernel> compile(const Program& program) {
    return compile(program, CompilePurpose::use);
  }
  virtual std::shared_ptr<CompiledKernel> compile(const Program& program,
                                                  CompilePurpose purpose) = 0;
  // Run kernels in order; returns when all are done. Per-kernel seconds go to `seconds` when
  // it is not null (DEBUG=1 timing).
  virtual void run(std::span<const KernelLaunch> launches, std::vector<double>* seconds) = 0;
  // Record `launches` for replay (see Graph).
  virtual std::unique_ptr<Graph> capture(std::span<const KernelLaunch> launches) = 0;
};

}  // namespace vkgrad
