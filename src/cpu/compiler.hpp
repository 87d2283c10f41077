// cpu: C source -> the system C compiler -> a shared object, cached on disk by hash, dlopen'ed.
// Exports KernelFn (the entry point every generated C kernel has), Library (an open shared
// object) and Compiler (compile, look up kernels, cache statistics).
// Depends on nothing but <vkgrad/error.hpp> and the C library; never includes anything from vk.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device.hpp"  // CompilePurpose

namespace vkgrad::cpu {

// The uniform entry point of every generated kernel:
//   void name(void** bufs, const int64_t* vars, int64_t start, int64_t end);
// bufs: buffer base pointers; vars: bound symbolic variables; [start, end): the slice of the
// kernel's outermost parallel axis this call computes.
using KernelFn = void (*)(void** bufs, const int64_t* vars, int64_t start, int64_t end);

// The compiler that builds kernels: `path` is the executable, `flags` every argument given
// before `-o` (words after the first of $CC, then the fixed flags), `version` the first line of
// `--version`. All three go into the cache key.
struct CompilerInfo {
  std::string path;
  std::string version;
  std::vector<std::string> flags;
};

// A dlopen'ed shared object; dlclose'd when the last shared_ptr to it goes (the Compiler that
// opened it holds one until it is destroyed).
class Library {
 public:
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  const std::string& path() const { return path_; }  // the cached file it was opened from

 private:
  friend class Compiler;
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

// Compiles C sources with the flags in compiler.cpp's kFlags: -O2 -march=native, and no
// fast-math of any kind (NaN and Inf behave as IEEE says; no FMA contraction, so a kernel's
// rounding does not depend on how the optimizer scheduled it).
//
// Caching: the key is a 64-bit FNV-1a hash of the source, compiler path, version, flags and the
// host CPU's identity (-march=native code must not be loaded on another CPU sharing the cache).
// The object is stored as <cache root>/cpu/<key>.so, written under a temporary name and renamed
// into place, so concurrent processes never see a half-written file. In memory, each key maps to
// its Library for the Compiler's lifetime (a second compile of a source is a memory hit), so a
// KernelFn stays valid even after the caller drops its shared_ptr.
//
// Thread-safe: compile() may be called from many threads; different sources compile in
// parallel, the same source compiles once.
class Compiler {
 public:
  static Compiler& instance();  // process-wide; its cache root is cache_dir(), read per compile
  // cache_root empty: use cache_dir() (re-read on every compile). Tests pass a scratch folder.
  explicit Compiler(std::string cache_root = {});
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  // The compiler used, found on first call: $CC if set (its first word searched on PATH, the
  // other words kept as flags), else the first of clang, gcc, cc on PATH. `path` is empty if
  // none was found; compile() then throws CompileError.
  const CompilerInfo& info() const;

  // Compile (or find in a cache) and dlopen with RTLD_NOW | RTLD_LOCAL. Throws CompileError
  // with the command, the compiler's output and the full source when compilation fails. A
  // trial's object is read from the caches where it is there, else compiled to a temporary file
  // removed once open: neither cache keeps it, and it closes with its last shared_ptr.
  std::shared_ptr<Library> compile(const std::string& source,
                                   CompilePurpose purpose = CompilePurpose::use);
  // dlsym; Error naming the symbol and the file if it is missing.
  KernelFn kernel(const std::shared_ptr<Library>& lib, const std::string& name) const;

  // compiles: compiler runs (missed both caches); disk_hits: opened a cached file;
  // memory_hits: returned a Library already open; compile_ms: wall time in compiler runs.
  struct Stats {
    int64_t compiles = 0, disk_hits = 0, memory_hits = 0;
    double compile_ms = 0;
  };
  Stats stats() const;

  // The shared cache root (runtime/disk_cache.hpp's cache_root()); compile() creates it on demand.
  static std::string cache_dir();

 private:
  struct Slot;  // one per key: serializes compiling it, keeps its Library open
  // The key's slot; made where there is none unless `make` is false (then null).
  std::shared_ptr<Slot> slot(const std::string& key, bool make = true);

  std::string cache_root_;
  mutable std::once_flag info_once_;
  mutable CompilerInfo info_;
  mutable std::mutex mu_;  // guards slots_ and stats_
  std::map<std::string, std::shared_ptr<Slot>> slots_;
  Stats stats_;
};

}  // namespace vkgrad::cpu
