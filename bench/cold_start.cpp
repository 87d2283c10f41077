// bench: cold_start_ms (harness.hpp) and the child it runs (suite.hpp). The CLI starts itself
// as `vkgrad cold-start-child --device D`, which opens the device, realizes a small fused
// computation and reads it back; the parent times from posix_spawn to the moment the child's
// result line arrives on the pipe, so exec, dynamic loading, static initialisation, opening the
// device, compiling (from the disk caches) and running all count. One run first warms the
// caches (the child inherits VKGRAD_CACHE_DIR), then five are timed.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/harness.hpp"

extern char** environ;

namespace vkgrad::bench {
namespace {

constexpr int64_t kChildElements = 4096;
constexpr int kColdRuns = 5;
constexpr const char* kResultTag = "cold-start-result";

float child_value(float x) { return std::max(x * 2.0f + 1.0f, x * x); }

struct ChildRun {
  double result_ms = 0;  // spawn -> the result line read by the parent
  double exit_ms = 0;    // spawn -> the child reaped
  double self_ms = 0;    // the child's own main() -> result
  int bad = -1;          // wrong elements the child found
  int status = 0;
  std::string output;  // everything it wrote (stdout and stderr)
};

ChildRun spawn_child(const std::string& device) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(fmt::format("bench: pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> args = {exe, "cold-start-child", "--device", device};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  ChildRun r;
  pid_t pid = 0;
  Clock::time_point t0 = Clock::now();
  int err = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    throw Error(fmt::format("bench: cannot start {}: {}", exe, std::strerror(err)));
  }
  char buf[4096];
  for (;;) {
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.output.append(buf, static_cast<size_t>(got));
    if (r.result_ms == 0 && r.output.find(kResultTag) != std::string::npos &&
        r.output.find('\n', r.output.find(kResultTag)) != std::string::npos)
      r.result_ms = ms_since(t0);
  }
  ::close(fds[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  r.exit_ms = ms_since(t0);
  if (size_t at = r.output.find(kResultTag); at != std::string::npos)
    std::sscanf(r.output.c_str() + at + std::strlen(kResultTag), " ms=%lf bad=%d", &r.self_ms,
                &r.bad);
  // A child that found wrong values exits 1 after its result line: the case then fails.
  bool exited = WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 0 || r.bad > 0);
  if (!exited || r.result_ms == 0 || r.bad < 0)
    throw Error(fmt::format("bench: the cold-start child {} (status {:#x}); its output:\n{}",
                            r.result_ms == 0 || r.bad < 0 ? "printed no result" : "failed",
                            r.status, r.output));
  return r;
}

}  // namespace

Row cold_start_case(Suite& s) {
  Row row = s.row("cold_start_ms", "ms");
  ChildRun warm = spawn_child(s.device);
  std::vector<ChildRun> runs;
  for (int i = 0; i < kColdRuns; ++i) runs.push_back(spawn_child(s.device));
  std::vector<double> result, exit, self;
  int bad = 0;
  for (const ChildRun& r : runs) {
    result.push_back(r.result_ms);
    exit.push_back(r.exit_ms);
    self.push_back(r.self_ms);
    bad += r.bad;
  }
  row.result.value = median(result);
  row.runs = kColdRuns;
  row.details.push_back(fmt::format(
      "`vkgrad cold-start-child --device {}`: spawn -> result {:.1f} ms, its own main() -> "
      "result {:.1f} ms, spawn -> exit {:.1f} ms (medians); the warm-up run took {:.1f} ms",
      s.device, median(result), median(self), median(exit), warm.result_ms));
  if (bad != 0 || warm.bad != 0)
    row.fail(fmt::format("the child found {} wrong elements", bad + warm.bad));
  return row;
}

int cold_start_child(const std::string& device, std::chrono::steady_clock::time_point main_start) {
  set_default_device(device);  // opens it; the scalars below live there too
  std::vector<float> x(static_cast<size_t>(kChildElements));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int64_t>(i) - kChildElements / 2) / 1024.0f;
  Tensor t = Tensor::from_vector(x, {kChildElements}, std::nullopt, device);
  std::vector<float> got = (t * 2.0 + 1.0).maximum(t * t).to_vector<float>();
  double ms = ms_since(main_start);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::fabs(got[i] - child_value(x[i])) <= 1e-6f * (1 + std::fabs(child_value(x[i])))))
      ++bad;
  std::printf("%s ms=%.3f bad=%d\n", kResultTag, ms, bad);
  std::fflush(stdout);
  return bad == 0 ? 0 : 1;
}

}  // namespace vkgrad::bench
