// bench: the `vkgrad bench` suite. Each case uploads random inputs with Tensor::from_vector and
// realizes them, then times building its result and realize() (harness.hpp: one warm-up run,
// then runs until they add up to about a second, and the median). Every result is checked
// against OpenBLAS, the C loop, a hand-written shader or double-precision host math, and a
// wrong one prints FAIL. bench/README.md describes each case, the method and the JSON.
#include "bench/suite.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vkgrad/vkgrad.hpp>

#include "bench/harness.hpp"
#include "bench/reference.h"
#include "engine/realize.hpp"
#include "vk/vk.hpp"

#ifndef VKGRAD_REFERENCE_CC
#define VKGRAD_REFERENCE_CC "the C compiler"
#endif

namespace vkgrad::bench {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

Tensor upload(const std::vector<float>& data, Shape shape, const std::string& device) {
  Tensor t = Tensor::from_vector(data, std::move(shape), std::nullopt, device);
  t.realize();
  return t;
}

// ---- timing ---------------------------------------------------------------------------------

// OpenBLAS's worker threads spin for a while after a call; let them go to sleep before vkgrad's
// threads run again.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

}  // namespace

// ---- OpenBLAS, loaded at run time -----------------------------------------------------------

struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  std::string corename;  // openblas_get_corename()
  std::string config;    // openblas_get_config(): version and build options
  std::string coretype;  // how OPENBLAS_CORETYPE was chosen
  std::string error;     // why OpenBLAS is not available
  int threads = 0;
};

namespace {

bool is_avx512_core(const std::string& name) {
  std::string n = lower(name);
  return n == "skylakex" || n == "cooperlake" || n == "sapphirerapids";
}

// OpenBLAS picks its kernels once, when it loads, from $OPENBLAS_CORETYPE or else its own CPU
// detection, which in Debian 12's 0.3.21 misses AVX-512 on CPUs it does not know (Zen 4/5,
// virtual CPUs); this machine's environment even sets Haswell, half the speed. So when the CPU
// has AVX-512 and the variable names no AVX-512 core, set SkylakeX first and only then dlopen
// the library: that is why OpenBLAS is loaded here rather than linked. `threads` > 0 sets its
// thread count (to match vkgrad's); 0 keeps its default.
OpenBlas load_openblas(const CpuInfo& cpu, int threads) {
  OpenBlas b;
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  std::string was = env != nullptr ? env : "";
  if (cpu.avx512 && !is_avx512_core(was)) {
    ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    b.coretype = fmt::format(
        "OPENBLAS_CORETYPE was {}, set to SkylakeX before loading it: the "
        "CPU has AVX-512",
        was.empty() ? "unset" : was);
  } else {
    b.coretype = was.empty() ? "OPENBLAS_CORETYPE unset: OpenBLAS detected the CPU"
                             : "OPENBLAS_CORETYPE=" + was + " (kept)";
  }
  void* lib = ::dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  // Put the environment back as it was: OpenBLAS has read it, and nothing else should see it.
  if (was.empty())
    ::unsetenv("OPENBLAS_CORETYPE");
  else
    ::setenv("OPENBLAS_CORETYPE", was.c_str(), 1);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    b.error = why != nullptr ? why : "dlopen(libopenblas.so.0) failed";
    return b;
  }
  // Never dlclosed: OpenBLAS's threads live until the process exits.
  auto sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(::dlsym(lib, "cblas_sgemm"));
  auto corename = reinterpret_cast<char* (*)()>(::dlsym(lib, "openblas_get_corename"));
  auto config = reinterpret_cast<char* (*)()>(::dlsym(lib, "openblas_get_config"));
  auto set_threads = reinterpret_cast<void (*)(int)>(::dlsym(lib, "openblas_set_num_threads"));
  auto get_threads = reinterpret_cast<int (*)()>(::dlsym(lib, "openblas_get_num_threads"));
  if (sgemm == nullptr) {
    b.error = "libopenblas.so.0 has no cblas_sgemm";
    return b;
  }
  b.sgemm = sgemm;
  if (corename != nullptr) b.corename = trim(corename());
  if (config != nullptr) b.config = trim(config());
  if (set_threads != nullptr && threads > 0) set_threads(threads);
  if (get_threads != nullptr) b.threads = get_threads();
  return b;
}

// ---- the suite ------------------------------------------------------------------------------

// ---- matmul -----------------------------------------------------------------------------------

// The largest |got - want| over every element.
double max_diff(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  return std::isnan(worst) ? INFINITY : worst;
}

// The largest |got - want| at 512 sampled elements of an n x n matmul, computed in double.
double sampled_matmul_diff(const std::vector<float>& got, const std::vector<float>& ha,
                           const std::vector<float>& hb, int64_t n) {
  Rng rng(7);
  double worst = 0;
  for (int p = 0; p < 512; ++p) {
    size_t i = rng.next() % static_cast<uint64_t>(n), j = rng.next() % static_cast<uint64_t>(n);
    double e = 0;
    for (size_t k = 0; k < static_cast<size_t>(n); ++k)
      e += static_cast<double>(ha[i * n + k]) * hb[k * n + j];
    double d = std::fabs(got[i * n + j] - e);
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst;
}

Row matmul_case(Suite& s, int64_t n) {
  Row row = s.row(fmt::format("matmul_f32_{}", n), "GFLOPS");
  size_t nn = static_cast<size_t>(n * n);
  std::vector<float> ha = random_floats(nn, 100 + static_cast<uint64_t>(n), -1, 1);
  std::vector<float> hb = random_floats(nn, 200 + static_cast<uint64_t>(n), -1, 1);
  Tensor a = upload(ha, {n, n}, s.device), b = upload(hb, {n, n}, s.device), c;
  std::vector<Sample> runs = measure([&] { return time_realize([&] { return a.matmul(b); }, c); });
  double gflop =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 1e9;
  set_ours(row, runs, gflop);
  std::vector<float> got = c.to_vector<float>();
  c = Tensor();

  // The reference: sgemm on the CPU device, the hand-written shader on Vulkan (where sgemm,
  // untimed, is only the checker).
  std::vector<float> hand;
  if (s.gpu) {
    set_reference(row, "hand GLSL 8x8 blocks", hand_matmul(s, ha, hb, n, hand), gflop);
    row.details.push_back("reference: shaders/matmul.comp, one Runtime::run of one launch");
  }
  std::vector<float> ref;
  if (s.blas && s.blas->sgemm != nullptr) {
    ref.resize(nn);
    auto bn = static_cast<blasint>(n);
    auto sgemm = [&] {
      s.blas->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, ha.data(), bn,
                    hb.data(), bn, 0.0f, ref.data(), bn);
    };
    if (s.gpu) {
      sgemm();
    } else {
      set_reference(row, "OpenBLAS sgemm", measure([&] { return time_host(sgemm); }), gflop);
      settle();
    }
  }

  // Inputs in [-1, 1): a dot product of n terms has rounding error far below 4e-6 * n, and a
  // wrong element is off by about its own size (~sqrt(n / 9)).
  double tol = 4e-6 * static_cast<double>(n);
  auto check = [&](const std::vector<float>& result, const std::string& whose) {
    double worst = ref.empty() ? sampled_matmul_diff(result, ha, hb, n) : max_diff(result, ref);
    row.details.push_back(fmt::format(
        "checked {} {}: max |diff| {:.2g}", whose,
        ref.empty() ? "at 512 elements against double" : "every element against sgemm", worst));
    if (!(worst <= tol)) row.fail(fmt::format("{}: max |diff| {:.3g} > {:.3g}", whose, worst, tol));
  };
  check(got, "vkgrad");
  if (!hand.empty()) check(hand, "the hand shader");
  return row;
}

// ---- matmul layouts at the MLP's sizes ---------------------------------------------------------

// op(A) (m x k) times op(B) (k x n), a transposed operand stored as (k, m) / (n, k) and read
// through a .T() view: the MLP step's forward x W^T (NT), weight gradient delta^T x (TN) and
// input gradient delta W (NN) at its sizes.
struct Layout {
  int64_t m, k, n;
  bool a_t, b_t;
};

Row matmul_layout_case(Suite& s, const std::string& name, Layout l) {
  Row row = s.row(name, "GFLOPS");
  std::vector<float> ha = random_floats(static_cast<size_t>(l.m * l.k), 301, -1, 1);
  std::vector<float> hb = random_floats(static_cast<size_t>(l.k * l.n), 302, -1, 1);
  Tensor a = upload(ha, l.a_t ? Shape{l.k, l.m} : Shape{l.m, l.k}, s.device),
         b = upload(hb, l.b_t ? Shape{l.n, l.k} : Shape{l.k, l.n}, s.device), c;
  std::vector<Sample> runs = measure([&] {
    return time_realize([&] { return (l.a_t ? a.T() : a).matmul(l.b_t ? b.T() : b); }, c);
  });
  const double gflop = 2.0 * static_cast<double>(l.m * l.k * l.n) / 1e9;
  set_ours(row, runs, gflop);
  row.details.push_back(fmt::format("{} x {} x {} (m x k x n), {}{}", l.m, l.k, l.n,
                                    l.a_t ? "T" : "N", l.b_t ? "T" : "N"));
  std::vector<float> got = c.to_vector<float>();
  c = Tensor();
  if (s.blas && s.blas->sgemm != nullptr && !s.gpu) {
    std::vector<float> ref(static_cast<size_t>(l.m * l.n));
    auto sgemm = [&] {
      s.blas->sgemm(
          CblasRowMajor, l.a_t ? CblasTrans : CblasNoTrans, l.b_t ? CblasTrans : CblasNoTrans,
          static_cast<blasint>(l.m), static_cast<blasint>(l.n), static_cast<blasint>(l.k), 1.0f,
          ha.data(), static_cast<blasint>(l.a_t ? l.m : l.k), hb.data(),
          static_cast<blasint>(l.b_t ? l.k : l.n), 0.0f, ref.data(), static_cast<blasint>(l.n));
    };
    set_reference(row, "OpenBLAS sgemm", measure([&] { return time_host(sgemm); }), gflop);
    settle();
  }
  // Checked against double on the host (the same bound as matmul_f32_*).
  auto at = [&](const std::vector<float>& v, int64_t i, int64_t j, int64_t cols, bool t,
                int64_t rows) {
    return static_cast<double>(v[static_cast<size_t>(t ? j * rows + i : i * cols + j)]);
  };
  double worst = 0;
  for (int64_t i = 0; i < l.m; ++i)
    for (int64_t j = 0; j < l.n; ++j) {
      double e = 0;
      for (int64_t p = 0; p < l.k; ++p)
        e += at(ha, i, p, l.k, l.a_t, l.m) * at(hb, p, j, l.n, l.b_t, l.k);
      const double d = std::fabs(got[static_cast<size_t>(i * l.n + j)] - e);
      worst = std::max(worst, std::isnan(d) ? INFINITY : d);
    }
  const double tol = 4e-6 * static_cast<double>(l.k);
  row.details.push_back(
      fmt::format("checked every element against double: max |diff| {:.2g}", worst));
  if (!(worst <= tol)) row.fail(fmt::format("max |diff| {:.3g} > {:.3g}", worst, tol));
  return row;
}

// ---- a * b + c and sum (memory bound) ---------------------------------------------------------

constexpr int64_t k16M = int64_t{1} << 24;

Row axbpc_case(Suite& s) {
  Row row = s.row("ew_axbpc_16M", "GB/s");
  const int64_t n = k16M;
  std::vector<float> ha = random_floats(n, 11, -1, 1), hb = random_floats(n, 12, -1, 1),
                     hc = random_floats(n, 13, -1, 1);
  Tensor a = upload(ha, {n}, s.device), b = upload(hb, {n}, s.device),
         c = upload(hc, {n}, s.device), out;
  double gb = 4.0 * 4.0 * static_cast<double>(n) / 1e9;  // a, b, c read; out written
  std::vector<Sample> runs = measure([&] { return time_realize([&] { return a * b + c; }, out); });
  set_ours(row, runs, gb);
  std::vector<float> got = out.to_vector<float>();
  out = Tensor();

  // The reference: the C loop on the CPU device, the hand-written vec4 shader on Vulkan.
  std::vector<float> ref(static_cast<size_t>(n), 0.0f);  // touched now: no page faults timed
  if (s.gpu) {
    set_reference(row, "hand GLSL vec4", hand_axbpc(s, ha, hb, hc, ref), gb);
    row.details.push_back("reference: shaders/saxpy.comp, one Runtime::run of one launch");
  } else {
    std::vector<Sample> ref_runs = measure([&] {
      return time_host([&] { vkgrad_ref_axbpc(ha.data(), hb.data(), hc.data(), ref.data(), n); });
    });
    set_reference(row, "C loop", ref_runs, gb);
  }

  // Two roundings (or one, fused): within 2^-22 of |a*b| + |c| of the exact value.
  auto wrong = [&](const std::vector<float>& result) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      double ab = static_cast<double>(ha[i]) * hb[i], e = ab + hc[i];
      if (!(std::fabs(result[i] - e) <= 0x1p-22 * (std::fabs(ab) + std::fabs(hc[i])) + 1e-30))
        ++bad;
    }
    return bad;
  };
  if (int64_t bad = wrong(got); bad > 0) row.fail(fmt::format("{} of {} elements wrong", bad, n));
  if (s.gpu) {
    if (int64_t bad = wrong(ref); bad > 0)
      row.fail(fmt::format("the hand shader: {} of {} elements wrong", bad, n));
    row.details.push_back("checked every element of both against the exact value");
  }
  return row;
}

Row sum_case(Suite& s) {
  Row row = s.row("sum_16M", "GB/s");
  const int64_t n = k16M;
  // Positive inputs, so a lost block of elements shows in the total.
  std::vector<float> hx = random_floats(n, 21, 0, 1);
  Tensor x = upload(hx, {n}, s.device), out;
  double gb = 4.0 * static_cast<double>(n) / 1e9;
  std::vector<Sample> runs = measure([&] { return time_realize([&] { return x.sum(); }, out); });
  set_ours(row, runs, gb);
  double got = out.item<float>();

  double exact = 0;
  for (float v : hx) exact += v;
  double rel = std::fabs(got - exact) / exact;
  // The C loop is the reference on the CPU device only: on Vulkan the case has none.
  if (!s.gpu) {
    float ref = 0;
    std::vector<Sample> ref_runs =
        measure([&] { return time_host([&] { ref = vkgrad_ref_sum(hx.data(), n); }); });
    set_reference(row, "C loop", ref_runs, gb);
    row.details.push_back(
        fmt::format("sum {:.9g}, in double {:.9g} (relative error {:.2g}; the C loop's {:.2g})",
                    got, exact, rel, std::fabs(ref - exact) / exact));
  } else {
    row.details.push_back(
        fmt::format("sum {:.9g}, in double {:.9g} (relative error {:.2g})", got, exact, rel));
  }
  if (!(rel <= 1e-5)) row.fail(fmt::format("relative error {:.3g} > 1e-5", rel));
  return row;
}

// ---- softmax and conv2d (ms) --------------------------------------------------------------------

Row softmax_case(Suite& s) {
  Row row = s.row("softmax_4096", "ms");
  const int64_t n = 4096;
  std::vector<float> hx = random_floats(static_cast<size_t>(n * n), 31, -4, 4);
  Tensor x = upload(hx, {n, n}, s.device), out;
  std::vector<Sample> runs =
      measure([&] { return time_realize([&] { return x.softmax(-1); }, out); });
  set_ours(row, runs, 0);
  std::vector<float> got = out.to_vector<float>();
  out = Tensor();

  // 16 rows spread over the matrix, in double.
  double worst = 0;
  int bad = 0;
  for (int64_t r = 0; r < n; r += n / 16 + 1) {
    const float* in = &hx[static_cast<size_t>(r * n)];
    double mx = *std::max_element(in, in + n), total = 0;
    std::vector<double> e(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) total += e[j] = std::exp(in[j] - mx);
    for (int64_t j = 0; j < n; ++j) {
      double want = e[j] / total, diff = std::fabs(got[r * n + j] - want);
      worst = std::max(worst, diff / want);
      if (!(diff <= 1e-4 * want + 1e-12)) ++bad;
    }
  }
  row.details.push_back(
      fmt::format("checked 16 rows against double: max relative error {:.2g}", worst));
  if (bad > 0) row.fail(fmt::format("{} elements off by more than 1e-4 (relative)", bad));
  return row;
}

Row conv2d_case(Suite& s) {
  Row row = s.row("conv2d_b32_c64_56_k3", "ms");
  const int64_t N = 32, C = 64, H = 56, W = 56, K = 64, R = 3;
  std::vector<float> hx = random_floats(static_cast<size_t>(N * C * H * W), 41, -1, 1);
  std::vector<float> hw = random_floats(static_cast<size_t>(K * C * R * R), 42, -1, 1);
  Tensor x = upload(hx, {N, C, H, W}, s.device), w = upload(hw, {K, C, R, R}, s.device), out;
  std::vector<Sample> runs =
      measure([&] { return time_realize([&] { return x.conv2d(w, std::nullopt, 1, 1); }, out); });
  set_ours(row, runs, 0);
  double gflop = 2.0 * N * K * H * W * C * R * R / 1e9;
  row.details.push_back(fmt::format(
      "{:.2f} GFLOP per run: {:.1f} GFLOPS{}", gflop, gflop / (*row.result.value / 1e3),
      row.kernel_value ? fmt::format(" (kernels alone: {:.1f})", gflop / (*row.kernel_value / 1e3))
                       : std::string()));
  if (out.shape() != Shape{N, K, H, W}) {
    std::vector<std::string> dims;
    for (int64_t d : out.shape()) dims.push_back(std::to_string(d));
    row.fail(fmt::format("output shape ({}), expected ({}, {}, {}, {})", fmt::join(dims, ", "), N,
                         K, H, W));
    return row;
  }
  std::vector<float> got = out.to_vector<float>();
  out = Tensor();

  // 512 sampled outputs in double; zero padding of 1 on each side.
  Rng rng(43);
  int bad = 0;
  for (int p = 0; p < 512; ++p) {
    int64_t n = rng.next() % N, k = rng.next() % K, y = rng.next() % H, xx = rng.next() % W;
    double e = 0, mag = 0;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t dy = 0; dy < R; ++dy)
        for (int64_t dx = 0; dx < R; ++dx) {
          int64_t iy = y + dy - 1, ix = xx + dx - 1;
          if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
          double t = static_cast<double>(hx[((n * C + c) * H + iy) * W + ix]) *
                     hw[((k * C + c) * R + dy) * R + dx];
          e += t;
          mag += std::fabs(t);
        }
    if (!(std::fabs(got[((n * K + k) * H + y) * W + xx] - e) <= 1e-5 * mag + 1e-6)) ++bad;
  }
  row.details.push_back("checked 512 sampled outputs against double");
  if (bad > 0) row.fail(fmt::format("{} of 512 sampled outputs wrong", bad));
  return row;
}

// ---- the 200-op elementwise chain ---------------------------------------------------------------

// A chain of kChainOps elementwise ops over three (1024, 1024) inputs, drawn from a seed (its
// "structure"): random op kinds and constants, so every seed is a graph, and a kernel source,
// never seen before. Every fourth op clamps, keeping values bounded.
constexpr int kChainOps = 200;
constexpr int64_t kChainRows = 1024, kChainCols = 1024;

struct ChainOp {
  enum class Kind : uint8_t { kMulConst, kAddConst, kAddA, kMulB, kMaxC, kMinConst, kMaxConst };
  Kind kind;
  float k;
};

std::vector<ChainOp> chain_ops(uint64_t structure) {
  using K = ChainOp::Kind;
  Rng rng(structure * 0x2545f4914f6cdd1dull + 1);
  std::vector<ChainOp> ops;
  for (int i = 0; i < kChainOps; ++i) {
    if (i % 4 == 3) {
      ops.push_back(i % 8 == 3 ? ChainOp{K::kMinConst, rng.uniform(1.5f, 2.5f)}
                               : ChainOp{K::kMaxConst, rng.uniform(-2.5f, -1.5f)});
      continue;
    }
    switch (rng.next() % 5) {
      case 0:
        ops.push_back({K::kMulConst, rng.uniform(0.5f, 1.0f)});
        break;
      case 1:
        ops.push_back({K::kAddConst, rng.uniform(-0.5f, 0.5f)});
        break;
      case 2:
        ops.push_back({K::kAddA, 0});
        break;
      case 3:
        ops.push_back({K::kMulB, 0});
        break;
      default:
        ops.push_back({K::kMaxC, 0});
        break;
    }
  }
  return ops;
}

Tensor build_chain(const std::vector<ChainOp>& ops, const Tensor& a, const Tensor& b,
                   const Tensor& c) {
  using K = ChainOp::Kind;
  Tensor x = a;
  for (const ChainOp& op : ops) {
    double k = op.k;
    switch (op.kind) {
      case K::kMulConst:
        x = x * k;
        break;
      case K::kAddConst:
        x = x + k;
        break;
      case K::kAddA:
        x = x + a;
        break;
      case K::kMulB:
        x = x * b;
        break;
      case K::kMaxC:
        x = x.maximum(c);
        break;
      case K::kMinConst:
        x = x.minimum(k);
        break;
      case K::kMaxConst:
        x = x.maximum(k);
        break;
    }
  }
  return x;
}

float chain_on_host(const std::vector<ChainOp>& ops, float a, float b, float c) {
  using K = ChainOp::Kind;
  float x = a;
  for (const ChainOp& op : ops) {
    switch (op.kind) {
      case K::kMulConst:
        x = x * op.k;
        break;
      case K::kAddConst:
        x = x + op.k;
        break;
      case K::kAddA:
        x = x + a;
        break;
      case K::kMulB:
        x = x * b;
        break;
      case K::kMaxC:
        x = std::max(x, c);
        break;
      case K::kMinConst:
        x = std::min(x, op.k);
        break;
      case K::kMaxConst:
        x = std::max(x, op.k);
        break;
    }
  }
  return x;
}

struct ChainInputs {
  std::vector<float> a, b, c;
};

ChainInputs chain_inputs(uint64_t seed) {
  size_t n = static_cast<size_t>(kChainRows * kChainCols);
  return {random_floats(n, seed, -1, 1), random_floats(n, seed + 1, 0.5f, 1.5f),
          random_floats(n, seed + 2, -1, 1)};
}

// Every 61st element against the same ops in float on the host (tolerance for rewrites that
// reassociate constants).
void check_chain(Row& row, const std::vector<ChainOp>& ops, const ChainInputs& in,
                 const Tensor& out) {
  std::vector<float> got = out.to_vector<float>();
  int64_t bad = 0, checked = 0;
  for (size_t i = 0; i < got.size(); i += 61, ++checked) {
    float want = chain_on_host(ops, in.a[i], in.b[i], in.c[i]);
    if (!(std::fabs(got[i] - want) <= 1e-4f * (1 + std::fabs(want)))) ++bad;
  }
  row.details.push_back(
      fmt::format("checked {} elements (every 61st) against the same ops on the host", checked));
  if (bad > 0) row.fail(fmt::format("{} of {} sampled elements wrong", bad, checked));
}

// A fresh, empty VKGRAD_CACHE_DIR for as long as it lives; the CPU compiler reads the variable
// at every compile (cpu::Compiler::cache_dir()).
class ScratchCacheDir {
 public:
  ScratchCacheDir() {
    if (const char* old = std::getenv("VKGRAD_CACHE_DIR")) old_ = old;
    std::string tmpl = (fs::temp_directory_path() / "vkgrad-bench-cache-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw Error("bench: cannot create a scratch cache folder in " +
                  fs::temp_directory_path().string());
    path_ = tmpl;
    ::setenv("VKGRAD_CACHE_DIR", path_.c_str(), 1);
  }
  ~ScratchCacheDir() {
    if (old_)
      ::setenv("VKGRAD_CACHE_DIR", old_->c_str(), 1);
    else
      ::unsetenv("VKGRAD_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchCacheDir(const ScratchCacheDir&) = delete;
  ScratchCacheDir& operator=(const ScratchCacheDir&) = delete;

 private:
  std::string path_;
  std::optional<std::string> old_;
};

Row chain_cold_case(Suite& s) {
  Row row = s.row("chain200_cold", "ms");
  ChainInputs in = chain_inputs(51);
  Shape shape = {kChainRows, kChainCols};
  Tensor a = upload(in.a, shape, s.device), b = upload(in.b, shape, s.device),
         c = upload(in.c, shape, s.device), out;
  uint64_t structure = 0;
  std::vector<Sample> runs = measure([&] {
    structure = s.next_structure++;
    std::vector<ChainOp> ops = chain_ops(structure);  // the program text: not timed
    ScratchCacheDir scratch;
    return time_realize([&] { return build_chain(ops, a, b, c); }, out);
  });
  s.last_cold_structure = structure;
  set_ours(row, runs, 0);
  row.kernel_value.reset();  // run_ms is in the phase line; the cold time is the point here
  row.details.push_back(phase_line(runs));
  int64_t compiled_min = runs[0].stats.programs_compiled, kernels = runs[0].stats.kernels_run;
  for (const Sample& r : runs) compiled_min = std::min(compiled_min, r.stats.programs_compiled);
  row.details.push_back(
      fmt::format("each run: a new structure, a fresh empty VKGRAD_CACHE_DIR; "
                  "{} kernel(s) run, {} program(s) compiled",
                  kernels, compiled_min));
  if (compiled_min < 1) row.fail("a run compiled nothing: not cold");
  check_chain(row, chain_ops(structure), in, out);
  return row;
}

Row chain_cached_case(Suite& s) {
  Row row = s.row("chain200_cached", "ms");
  Shape shape = {kChainRows, kChainCols};
  // Fresh input buffers every run, from a few host data sets made up front.
  std::vector<ChainInputs> sets;
  for (uint64_t i = 0; i < 3; ++i) sets.push_back(chain_inputs(61 + 10 * i));
  uint64_t structure = s.last_cold_structure ? *s.last_cold_structure : s.next_structure++;
  std::vector<ChainOp> ops = chain_ops(structure);
  Tensor out;
  size_t turn = 0, last_set = 0;
  auto once = [&] {
    last_set = turn++ % sets.size();
    const ChainInputs& in = sets[last_set];
    Tensor a = upload(in.a, shape, s.device), b = upload(in.b, shape, s.device),
           c = upload(in.c, shape, s.device);
    return time_realize([&] { return build_chain(ops, a, b, c); }, out);
  };
  if (!s.last_cold_structure) once();  // --only chain200_cached: realize the structure once
  std::vector<Sample> runs = measure(once);
  set_ours(row, runs, 0);
  row.details.push_back(phase_line(runs));
  int64_t hits = 0, built = 0, compiled = 0;
  int missed = 0;
  for (const Sample& r : runs) {
    hits += r.stats.schedule_cache_hits;
    built += r.stats.schedules_built;
    compiled += r.stats.programs_compiled;
    if (r.stats.schedule_cache_hits < 1) ++missed;
  }
  row.details.push_back(
      fmt::format("over {} runs: schedule cache hits +{}, schedules built +{}, "
                  "programs compiled +{}",
                  runs.size(), hits, built, compiled));
  if (missed > 0)
    row.fail(fmt::format("{} of {} runs missed the schedule cache", missed, runs.size()));
  check_chain(row, ops, sets[last_set], out);
  return row;
}

// ---- the table ----------------------------------------------------------------------------------

struct Case {
  std::string name;
  std::string unit;
  std::function<Row(Suite&)> run;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"matmul_f32_512", "GFLOPS", [](Suite& s) { return matmul_case(s, 512); }},
      {"matmul_f32_1024", "GFLOPS", [](Suite& s) { return matmul_case(s, 1024); }},
      {"matmul_f32_2048", "GFLOPS", [](Suite& s) { return matmul_case(s, 2048); }},
      {"matmul_mlp_nt", "GFLOPS",
       [](Suite& s) {
         return matmul_layout_case(s, "matmul_mlp_nt", {256, 784, 512, false, true});
       }},
      {"matmul_mlp_tn", "GFLOPS",
       [](Suite& s) {
         return matmul_layout_case(s, "matmul_mlp_tn", {512, 256, 784, true, false});
       }},
      {"matmul_mlp_nn", "GFLOPS",
       [](Suite& s) {
         return matmul_layout_case(s, "matmul_mlp_nn", {256, 512, 784, false, false});
       }},
      {"ew_axbpc_16M", "GB/s", axbpc_case},
      {"sum_16M", "GB/s", sum_case},
      {"softmax_4096", "ms", softmax_case},
      {"conv2d_b32_c64_56_k3", "ms", conv2d_case},
      {"chain200_cold", "ms", chain_cold_case},
      {"chain200_cached", "ms", chain_cached_case},
      {"dispatch_single_us", "us",
       [](Suite& s) { return dispatch_case(s, DispatchMode::kSingle); }},
      {"dispatch_batched_us", "us",
       [](Suite& s) { return dispatch_case(s, DispatchMode::kBatched); }},
      {"dispatch_replay_us", "us",
       [](Suite& s) { return dispatch_case(s, DispatchMode::kReplay); }},
      {"cold_start_ms", "ms", cold_start_case},
      {"mlp_step_nojit", "ms", [](Suite& s) { return mlp_step_case(s, false); }},
      {"mlp_step_jit", "ms", [](Suite& s) { return mlp_step_case(s, true); }},
      {"resnet18", "ms", [](Suite& s) { return model_case(s, "resnet18", false); }},
      {"resnet18_jit", "ms", [](Suite& s) { return model_case(s, "resnet18", true); }},
      {"resnet50", "ms", [](Suite& s) { return model_case(s, "resnet50", false); }},
      {"resnet50_jit", "ms", [](Suite& s) { return model_case(s, "resnet50", true); }},
      {"mobilenetv2", "ms", [](Suite& s) { return model_case(s, "mobilenetv2", false); }},
      {"mobilenetv2_jit", "ms", [](Suite& s) { return model_case(s, "mobilenetv2", true); }},
      {"bert_encoder", "ms", [](Suite& s) { return model_case(s, "bert_encoder", false); }},
      {"bert_encoder_jit", "ms", [](Suite& s) { return model_case(s, "bert_encoder", true); }},
      {"resnet18_train", "ms", [](Suite& s) { return resnet18_train_case(s, false); }},
      {"resnet18_train_jit", "ms", [](Suite& s) { return resnet18_train_case(s, true); }},
      {"onnx_resnet50", "ms", onnx_resnet50_case},
      {"llm_decode_q4_0", "tok/s", [](Suite& s) { return llm_case(s, "q4_0", false); }},
      {"llm_decode_q8_0", "tok/s", [](Suite& s) { return llm_case(s, "q8_0", false); }},
      {"llm_prefill_q4_0", "tok/s", [](Suite& s) { return llm_case(s, "q4_0", true); }},
      {"llm_prefill_q8_0", "tok/s", [](Suite& s) { return llm_case(s, "q8_0", true); }},
  };
  return all;
}

std::string num(double v) {
  double a = std::fabs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

constexpr const char* kRowFormat = "{:<22} {:>14} {:>14}  {:<34} {:>6} {:>5}  {}\n";

void print_row(const Row& row, const std::string& where) {
  const CaseResult& r = row.result;
  auto with_unit = [&](const std::optional<double>& v) {
    return v ? num(*v) + " " + r.unit : std::string("-");
  };
  std::string ref =
      r.reference ? fmt::format("{} {} {}", r.reference->name, num(r.reference->value), r.unit)
                  : std::string("-");
  std::string ratio = r.ratio ? fmt::format("{:.2f}", *r.ratio) : std::string("-");
  std::string runs = row.runs > 0 ? std::to_string(row.runs) : std::string("-");
  fmt::print(kRowFormat, r.name, with_unit(r.value), with_unit(row.kernel_value), ref, ratio, runs,
             row.check);
  for (const std::string& d : row.details) fmt::print("    {}\n", d);
  if (!row.skipped) fmt::print("    {}\n", where);
  std::fflush(stdout);
}

void print_header(const Suite& s, bool any_matmul, bool any_c_loop, bool any_hand) {
  const CpuInfo& cpu = s.cpu;
  fmt::print("vkgrad bench on {}\n", s.label);
  fmt::print("  host:     {}, {} logical CPUs{}, AVX-512 {}\n", cpu.model, cpu.logical,
             cpu.physical > 0 ? fmt::format(" ({} cores)", cpu.physical) : std::string(),
             cpu.avx512 ? "yes" : "no");
  if (!s.gpu)
    fmt::print("  vkgrad:   CPU backend on {} threads (every logical CPU; CPU_THREADS overrides)\n",
               s.threads);
  else
    fmt::print("  vkgrad:   device {} (tensors on \"{}\")\n", s.label, s.device);
  if (any_matmul && s.blas) {
    const OpenBlas& b = *s.blas;
    if (b.sgemm != nullptr) {
      fmt::print(
          "  OpenBLAS: core {}, {} threads{}; {}\n", b.corename.empty() ? "?" : b.corename,
          b.threads,
          s.gpu ? " (untimed here: it only checks matmul results)" : " (set to match vkgrad's)",
          b.config);
      fmt::print("            {}\n", b.coretype);
    } else {
      fmt::print("  OpenBLAS: not available ({}); matmul is checked against double\n", b.error);
    }
  }
  if (any_c_loop && !s.gpu)
    fmt::print("  C loops:  bench/reference.c, {} -O2 -march=native, one call on one thread\n",
               VKGRAD_REFERENCE_CC);
  if (any_hand)
    fmt::print("  shaders:  hand-written GLSL from {} compiled and run through the same runtime\n",
               VKGRAD_SHADERS_DIR);
  fmt::print(
      "  method:   1 warm-up, then runs until they add up to {:.0f} s (at least {}, but no run "
      "that would end past {:.1f} s); medians. \"kernels\" = runtime_stats().run_ms alone\n\n",
      kTargetMs / 1e3, kMinRuns, kMaxWallMs / 1e3);
  fmt::print(kRowFormat, "case", "ours", "kernels", "reference", "ratio", "runs", "check");
  std::fflush(stdout);
}

// "VULKAN:0 llvmpipe (LLVM 15.0.6, 256 bits)": the runtime's name and the device's.
std::string device_label(const std::string& runtime_name) {
  if (runtime_name.rfind("VULKAN:", 0) != 0) return runtime_name;
  int index = std::atoi(runtime_name.c_str() + 7);
  for (const vk::DeviceSummary& d : vk::enumerate())
    if (d.index == index) return fmt::format("{} {} ({})", runtime_name, d.name, d.type);
  return runtime_name;
}

}  // namespace

CpuInfo read_cpu_info() {
  CpuInfo info;
  std::ifstream f("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical_id;
  bool have_flags = false;
  while (std::getline(f, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "processor") {
      ++info.logical;
    } else if (key == "model name" && info.model.empty()) {
      info.model = value;
    } else if (key == "physical id") {
      physical_id = value;
    } else if (key == "core id") {
      cores.insert({physical_id, value});
    } else if (key == "flags" && !have_flags) {
      have_flags = true;
      std::istringstream words(value);
      std::set<std::string> flags;
      for (std::string w; words >> w;) {
        flags.insert(w);
        if (w.rfind("avx512", 0) == 0) info.avx512_flags.push_back(w);
      }
      info.avx512 = flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512dq") &&
                    flags.count("avx512vl");
    }
  }
  if (info.model.empty()) info.model = "unknown";
  if (info.logical == 0) info.logical = static_cast<int>(std::thread::hardware_concurrency());
  info.physical = static_cast<int>(cores.size());
  return info;
}

int cpu_backend_threads() {
  if (const char* s = std::getenv("CPU_THREADS"); s != nullptr && *s != '\0') {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (*end == '\0' && v >= 1) return static_cast<int>(v);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

const std::vector<std::string>& case_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Case& c : cases()) v.push_back(c.name);
    return v;
  }();
  return names;
}

std::vector<CaseResult> run_suite(const Options& options) {
  Suite s;
  s.device = options.device.empty() ? default_device() : options.device;
  // Opens the device (DeviceError if it cannot) and makes it the default for scalars too.
  set_default_device(s.device);
  s.runtime = &engine::runtime(engine::canonical_device(s.device));
  s.runtime_name = s.runtime->name();
  s.label = device_label(s.runtime_name);
  s.gpu = s.runtime_name.rfind("CPU", 0) != 0;
  s.cpu = read_cpu_info();
  s.threads = cpu_backend_threads();

  std::vector<const Case*> selected;
  for (const Case& c : cases())
    if (options.only.empty() ||
        std::find(options.only.begin(), options.only.end(), c.name) != options.only.end())
      selected.push_back(&c);
  bool any_matmul = false, any_c_loop = false, any_hand = false;
  for (const Case* c : selected) {
    bool matmul = c->name.rfind("matmul", 0) == 0, axbpc = c->name == "ew_axbpc_16M";
    any_matmul |= matmul;
    any_c_loop |= axbpc || c->name == "sum_16M";
    any_hand |= s.gpu && (matmul || axbpc || c->name.rfind("dispatch_", 0) == 0);
  }
  std::optional<OpenBlas> blas;
  if (any_matmul) {
    blas = load_openblas(s.cpu, s.gpu ? 0 : s.threads);
    s.blas = &*blas;
  }
  if (options.header) print_header(s, any_matmul, any_c_loop, any_hand);

  std::vector<CaseResult> results;
  for (const Case* c : selected) {
    Row row = s.row(c->name, c->unit);
    Clock::time_point t0 = Clock::now();
    try {
      row = c->run(s);
      row.result.ok = row.check == "ok";
    } catch (const std::exception& e) {
      row = s.row(c->name, c->unit);
      row.check = "ERROR";
      row.details = {e.what()};
      row.result.ok = false;
    }
    print_row(row, fmt::format("on {}; case wall time {:.1f} s", s.label, ms_since(t0) / 1e3));
    if (!row.skipped) results.push_back(row.result);
  }
  return results;
}

namespace {
// Five significant digits: the medians are not more precise than that.
double round5(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  double scale = std::pow(10.0, 4 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}
}  // namespace

std::string results_json(const std::vector<CaseResult>& results) {
  using Json = nlohmann::ordered_json;
  Json list = Json::array();
  for (const CaseResult& r : results) {
    Json o;
    o["name"] = r.name;
    o["device"] = r.device;
    o["value"] = r.value ? Json(round5(*r.value)) : Json(nullptr);
    o["unit"] = r.unit;
    o["reference"] = r.reference
                         ? Json{{"name", r.reference->name}, {"value", round5(r.reference->value)}}
                         : Json(nullptr);
    o["ratio"] = r.ratio ? Json(round5(*r.ratio)) : Json(nullptr);
    o["ok"] = r.ok;
    list.push_back(std::move(o));
  }
  return list.dump(2) + "\n";
}

}  // namespace vkgrad::bench
