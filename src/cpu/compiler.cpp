// Compiler: find the system C compiler, run it with posix_spawn, cache objects on disk, dlopen.
#include "cpu/compiler.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vkgrad/error.hpp>

#include "runtime/disk_cache.hpp"

namespace vkgrad::cpu {

namespace fs = std::filesystem;

namespace {

// Every flag kernels are compiled with, in one place. No fast-math in any form (NaN and Inf are
// IEEE, every libm call returns what libm returns); no FMA contraction, so a*b+c rounds twice
// unless the kernel asks for a fused multiply-add itself (the GEMM micro kernel does). Kernels
// never read errno, so libm calls need not set it (-fno-math-errno changes no value, and lets a
// loop-invariant exp2 leave its loop and sqrt become a vector instruction). Full-width vectors
// where the CPU has AVX-512 (compilers default to 256 bits there).
constexpr std::array<std::string_view, 8> kFlags = {
    "-O2",     "-march=native",        "-mprefer-vector-width=512", "-fPIC",
    "-shared", "-fno-strict-aliasing", "-ffp-contract=off",         "-fno-math-errno"};
// Link inputs, after the source file: generated kernels may call libm (sqrtf, expf, ...).
constexpr std::string_view kLibs = "-lm";
// Searched on PATH in this order when $CC is not set.
constexpr std::array<std::string_view, 3> kCandidates = {"clang", "gcc", "cc"};

std::string errno_text(int err) { return std::strerror(err); }

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) words.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// `name` itself if it contains a slash, else the first PATH entry holding an executable `name`
// (an empty entry means the current folder, as in the shell). Empty if none.
std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : std::string();
  const char* path = env("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    fs::path candidate = fs::path(dir.empty() ? "." : std::string(dir)) / name;
    if (is_executable(candidate)) return candidate.string();
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

struct RunResult {
  int status = -1;     // as from waitpid
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (a path) with stdin from /dev/null and stdout + stderr captured. The pipe is
// close-on-exec, so children spawned by other threads at the same time do not inherit it.
RunResult run_captured(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error("cpu: pipe2 failed: " + errno_text(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    throw Error(fmt::format("cpu: cannot run {}: {}", argv[0], errno_text(err)));
  }
  RunResult r;
  std::array<char, 4096> buf;
  while (true) {
    ssize_t got = ::read(fds[0], buf.data(), buf.size());
    if (got > 0) {
      r.output.append(buf.data(), static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

bool succeeded(const RunResult& r) { return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

std::string describe(const RunResult& r) {
  if (WIFEXITED(r.status)) return fmt::format("exit code {}", WEXITSTATUS(r.status));
  if (WIFSIGNALED(r.status)) return fmt::format("killed by signal {}", WTERMSIG(r.status));
  return fmt::format("wait status {}", r.status);
}

// The first processor's identity from /proc/cpuinfo (x86 and Arm field names), so that a cache
// folder shared between machines (an NFS home) never hands -march=native code to another CPU.
const std::string& host_cpu_id() {
  static const std::string id = [] {
    static constexpr std::array<std::string_view, 6> keys = {
        "vendor_id", "model name", "flags", "CPU implementer", "CPU part", "Features"};
    std::string out;
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line) && !line.empty();) {
      std::string_view key = std::string_view(line).substr(0, line.find(':'));
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
      for (std::string_view k : keys) {
        if (key == k) out += line + '\n';
      }
    }
    return out;
  }();
  return id;
}

std::string cache_key(const std::string& source, const CompilerInfo& ci) {
  Fnv1a h;
  h.add(source);
  h.add(ci.path);
  h.add(ci.version);
  for (const auto& f : ci.flags) h.add(f);
  h.add(kLibs);
  h.add(host_cpu_id());
  return fmt::format("{:016x}", h.h);
}

void write_file(const fs::path& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(fmt::format("cpu: cannot create {}: {}", path.string(), errno_text(errno)));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw Error(fmt::format("cpu: cannot write {}: {}", path.string(), errno_text(err)));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

// Removes the temporary files of one compile however it ends.
struct TempFiles {
  std::vector<fs::path> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const auto& p : paths) fs::remove(p, ec);
  }
};

std::atomic<uint64_t> temp_counter{0};

}  // namespace

// ---------------------------------------------------------------- Library

Library::~Library() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

// ---------------------------------------------------------------- Compiler

struct Compiler::Slot {
  std::mutex mu;
  std::shared_ptr<Library> lib;
};

Compiler& Compiler::instance() {
  static Compiler compiler;
  return compiler;
}

Compiler::Compiler(std::string cache_root) : cache_root_(std::move(cache_root)) {}

std::string Compiler::cache_dir() { return cache_root().string(); }

const CompilerInfo& Compiler::info() const {
  std::call_once(info_once_, [this] {
    std::vector<std::string> words;
    if (const char* cc = env("CC")) words = split_words(cc);
    if (!words.empty()) {
      info_.path = find_executable(words[0]);
      words.erase(words.begin());
    } else {
      for (std::string_view name : kCandidates) {
        info_.path = find_executable(std::string(name));
        if (!info_.path.empty()) break;
      }
    }
    info_.flags = words;
    for (std::string_view f : kFlags) info_.flags.emplace_back(f);
    if (info_.path.empty()) return;
    words.insert(words.begin(), info_.path);
    words.emplace_back("--version");
    RunResult r = run_captured(words);
    if (succeeded(r)) info_.version = r.output.substr(0, r.output.find('\n'));
  });
  return info_;
}

std::shared_ptr<Compiler::Slot> Compiler::slot(const std::string& key, bool make) {
  std::lock_guard lock(mu_);
  if (!make) {
    auto it = slots_.find(key);
    return it == slots_.end() ? nullptr : it->second;
  }
  auto& s = slots_[key];
  if (!s) s = std::make_shared<Slot>();
  return s;
}

std::shared_ptr<Library> Compiler::compile(const std::string& source, CompilePurpose purpose) {
  const CompilerInfo& ci = info();
  if (ci.path.empty()) {
    const char* cc = env("CC");
    throw CompileError(cc != nullptr
                           ? fmt::format("cpu: CC={} is not an executable (searched PATH)", cc)
                           : std::string("cpu: no C compiler found: none of clang, gcc, cc is "
                                         "on PATH (or set CC)"));
  }
  const std::string key = cache_key(source, ci);
  const bool trial = purpose == CompilePurpose::trial;
  std::shared_ptr<Slot> s = slot(key, !trial);  // a trial keeps no slot, but uses an open one
  std::unique_lock<std::mutex> slot_lock;
  if (s) {
    slot_lock = std::unique_lock(s->mu);
    if (s->lib) {
      std::lock_guard lock(mu_);
      ++stats_.memory_hits;
      return s->lib;
    }
  }

  const fs::path dir = fs::path(cache_root_.empty() ? cache_dir() : cache_root_) / "cpu";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(fmt::format("cpu: cannot create cache folder {}: {}", dir.string(), ec.message()));
  const fs::path file = dir / (key + ".so");

  auto open = [&](const fs::path& path, std::string* error) -> std::shared_ptr<Library> {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* msg = ::dlerror();
      *error = msg != nullptr ? msg : "unknown dlopen error";
      return nullptr;
    }
    return std::shared_ptr<Library>(new Library(handle, path.string()));
  };

  // A cached file that will not open (truncated by a crash, foreign) is rebuilt and replaced.
  std::string error;
  std::shared_ptr<Library> lib;
  if (fs::exists(file, ec) && (lib = open(file, &error))) {
    std::lock_guard lock(mu_);
    ++stats_.disk_hits;
  } else {
    const std::string stem = fmt::format("{}.tmp{}_{}", key, ::getpid(), temp_counter++);
    TempFiles temps{{dir / (stem + ".c"), dir / (stem + ".so")}};
    write_file(temps.paths[0], source);
    std::vector<std::string> argv{ci.path};
    argv.insert(argv.end(), ci.flags.begin(), ci.flags.end());
    argv.insert(argv.end(), {"-o", temps.paths[1].string(), temps.paths[0].string()});
    argv.emplace_back(kLibs);

    auto t0 = std::chrono::steady_clock::now();
    RunResult r = run_captured(argv);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard lock(mu_);
      ++stats_.compiles;
      stats_.compile_ms += ms;
    }
    if (!succeeded(r)) {
      throw CompileError(fmt::format(
          "cpu: C compiler failed ({})\ncommand: {}\n--- compiler output ---\n{}--- source ---\n{}",
          describe(r), join(argv), r.output, source));
    }
    // A trial's object is opened where it was built, then removed with the source.
    const fs::path& built = trial ? temps.paths[1] : file;
    if (!trial) {
      fs::rename(temps.paths[1], file, ec);
      if (ec) {
        throw Error(fmt::format("cpu: cannot move {} to {}: {}", temps.paths[1].string(),
                                file.string(), ec.message()));
      }
    }
    if (!(lib = open(built, &error))) {
      throw CompileError(fmt::format("cpu: dlopen {} failed: {}\n--- source ---\n{}",
                                     built.string(), error, source));
    }
  }
  if (!trial) s->lib = lib;
  return lib;
}

KernelFn Compiler::kernel(const std::shared_ptr<Library>& lib, const std::string& name) const {
  if (!lib) throw Error(fmt::format("cpu: kernel '{}' looked up in no library", name));
  ::dlerror();
  void* sym = ::dlsym(lib->handle_, name.c_str());
  if (sym == nullptr) throw Error(fmt::format("cpu: no kernel '{}' in {}", name, lib->path()));
  return reinterpret_cast<KernelFn>(sym);
}

Compiler::Stats Compiler::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace vkgrad::cpu
