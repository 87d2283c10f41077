// engine: timing BEAM candidates on scratch buffers and checking their output (see
// beam_timing.hpp, beam.hpp).
#include "engine/beam_timing.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vkgrad/error.hpp>

#include "codegen/pipeline.hpp"
#include "engine/beam.hpp"
#include "ir/debug.hpp"

namespace vkgrad::engine {
namespace {

std::mutex g_hook_mu;
std::function<void(const std::vector<Opt>&, std::vector<uint8_t>&)> g_hook;

constexpr int kRuns = 3;
constexpr double kEarlyDrop = 1e-3;  // seconds (Search::time)

// Each slot's element type, from the kernel's DEFINE_GLOBALs.
std::vector<DType> slot_dtypes(const UOp& ast, size_t slots) {
  std::vector<DType> out(slots, dtypes::uint8);
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::DEFINE_GLOBAL) {
      const auto slot = static_cast<size_t>(u.arg_as<int64_t>());
      if (slot < slots) out[slot] = u.dtype().base().scalar();
    }
  return out;
}

// Inputs: floats uniform in [-1, 1]; everything else zero (an integer input may be an index).
std::vector<uint8_t> random_bytes(DType d, size_t bytes, std::mt19937& rng) {
  std::vector<uint8_t> out(bytes, 0);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if (d == dtypes::float32) {
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      const float f = static_cast<float>(u(rng));
      std::memcpy(out.data() + i, &f, 4);
    }
  } else if (d == dtypes::float64) {
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      const double f = u(rng);
      std::memcpy(out.data() + i, &f, 8);
    }
  }
  return out;
}

template <class T>
bool close_floats(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i + sizeof(T) <= a.size(); i += sizeof(T)) {
    T x, y;
    std::memcpy(&x, a.data() + i, sizeof(T));
    std::memcpy(&y, b.data() + i, sizeof(T));
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::abs(x - y) <= T(1e-4) + T(1e-3) * std::abs(y))) return false;
  }
  return true;
}
// Exact for integers; float32 and float64 within a tolerance (a reordered sum rounds otherwise).
bool same_output(DType d, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return false;
  if (d == dtypes::float32) return close_floats<float>(a, b);
  if (d == dtypes::float64) return close_floats<double>(a, b);
  return a == b;
}

}  // namespace

namespace beam_detail {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Search::Search(Runtime& rt, const UOp& ast, std::span<const size_t> slot_bytes)
    : rt_(rt), ast_(ast), bytes_(slot_bytes.begin(), slot_bytes.end()) {
  const std::vector<DType> types = slot_dtypes(ast, bytes_.size());
  out_dtype_ = types.empty() ? dtypes::uint8 : types[0];
  std::mt19937 rng(1234);
  try {
    for (size_t i = 0; i < bytes_.size(); ++i) {
      bufs_.push_back(rt_.alloc(std::max<size_t>(bytes_[i], 16)));
      if (i > 0) {
        const std::vector<uint8_t> in = random_bytes(types[i], bytes_[i], rng);
        rt_.copy_in(bufs_[i], in.data(), in.size());
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

std::vector<Opt> Search::reference() {
  const Program p = codegen(ast_, {.optimize = true}, rt_.target());
  sources_.insert(p.source);
  reference_kernel_ = rt_.compile(p);
  run_alone(*reference_kernel_);  // lavapipe compiles a pipeline's code at its first dispatch
  warm_up();
  time_reference();
  reference_ = output();
  return p.opts;
}

double Search::time_reference() {
  const double t = time(*reference_kernel_, 0).value();
  reference_best_ = std::min(reference_best_, t);
  reference_at_ = std::chrono::steady_clock::now();
  return t;
}

std::vector<double> Search::relative_times(std::span<const CompiledKernel* const> kernels) {
  std::vector<double> out;
  double before = time_reference();
  for (const CompiledKernel* k : kernels) {
    const double t = time(*k, 0).value();
    const double after = time_reference();
    out.push_back(t / std::min(before, after));
    before = after;
  }
  return out;
}

std::vector<std::shared_ptr<CompiledKernel>> Search::build(
    const std::vector<std::vector<Opt>>& lists) {
  std::vector<std::shared_ptr<CompiledKernel>> out(lists.size());
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu, sources_mu;
  auto work = [&] {
    for (size_t i; (i = next++) < lists.size();) {
      try {
        const Program p = codegen(ast_, {.opts = lists[i]}, rt_.target());
        {
          std::lock_guard lock(sources_mu);
          if (!sources_.insert(p.source).second) continue;
        }
        out[i] = rt_.compile(p, CompilePurpose::trial);
      } catch (const Error& e) {  // an action that does not apply, a limit exceeded
        if (debug_level() >= 4)
          std::fprintf(stderr, "beam: %s: %s\n", to_string(lists[i]).c_str(), e.what());
      } catch (...) {
        std::lock_guard lock(failure_mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t n =
      std::min<size_t>(lists.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

void Search::warm_up() {
  const double seconds = rt_.warm_up_seconds();
  if (seconds <= 0 || !reference_kernel_) return;
  const std::vector<KernelLaunch> batch(16, KernelLaunch{reference_kernel_.get(), bufs_});
  const auto start = std::chrono::steady_clock::now();
  while (seconds_since(start) < seconds) rt_.run(batch, nullptr);
  timing_seconds_ += seconds_since(start);
}

std::optional<double> Search::measure(const CompiledKernel& k, const std::vector<Opt>& opts,
                                      double limit) {
  const auto start = std::chrono::steady_clock::now();
  run_alone(k);
  std::vector<uint8_t> out = output();
  {
    std::lock_guard lock(g_hook_mu);
    if (g_hook) g_hook(opts, out);
  }
  const bool same = same_output(out_dtype_, out, reference_);
  check_seconds_ += seconds_since(start);
  if (!same) {
    if (debug_level() >= 1)
      std::fprintf(stderr, "beam: %s gives another output than the heuristics' kernel: dropped\n",
                   to_string(opts).c_str());
    return std::nullopt;
  }
  return time(k, limit);
}

std::optional<double> Search::time(const CompiledKernel& k, double limit) {
  const auto start = std::chrono::steady_clock::now();
  const double alone = run_alone(k);
  if (limit > 0 && alone > 2 * limit && alone > kEarlyDrop) {
    ++slow_;
    timing_seconds_ += seconds_since(start);
    return std::nullopt;
  }
  const std::vector<KernelLaunch> launches(kRuns, KernelLaunch{&k, bufs_});
  std::vector<double> seconds;
  rt_.run(launches, &seconds);
  timing_seconds_ += seconds_since(start);
  double best = alone;
  for (const double t : seconds) best = std::min(best, t);
  if (limit > 0 && best > limit && best > kEarlyDrop) {
    ++slow_;
    return std::nullopt;
  }
  return best;
}

double Search::run_alone(const CompiledKernel& k) {
  const KernelLaunch launch{&k, bufs_};
  std::vector<double> seconds;
  rt_.run({&launch, 1}, &seconds);
  return seconds.empty() ? 0 : seconds[0];
}

std::vector<uint8_t> Search::output() {
  std::vector<uint8_t> out(bytes_.empty() ? 0 : bytes_[0]);
  if (!out.empty()) rt_.copy_out(out.data(), bufs_[0], out.size());
  return out;
}

void Search::release() noexcept {
  for (void* b : bufs_) rt_.free(b);
  bufs_.clear();
}

}  // namespace beam_detail

void set_beam_output_hook(std::function<void(const std::vector<Opt>&, std::vector<uint8_t>&)> f) {
  std::lock_guard lock(g_hook_mu);
  g_hook = std::move(f);
}

}  // namespace vkgrad::engine
