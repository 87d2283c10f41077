// cpu: what the host's CPU and C compiler offer codegen (its facts, from CPUID) and the tuning
// table of CPU families (see runtime.hpp).
#include <algorithm>
#include <span>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cpu/runtime.hpp"

namespace vkgrad::cpu {
namespace {

using Isa = Target::Isa;

// Packed panels up to 4 MiB per thread: B's strip over all of k stays within a core's share of
// a last-level cache.
TuningProfile with_panels() {
  TuningProfile p;
  p.panel_bytes = int64_t{4} << 20;
  return p;
}

// The CPU families, most specific first; the first whose facts hold is chosen.
const TuningRow kRows[] = {
    {"cpu-avx512-zen4", "AMD Zen 4: AVX-512 through 256-bit units",
     [](const Target& t) { return t.isa == Isa::avx512 && t.amd_family == 0x19; },
     [] {
       // With multiply-adds at half AVX-512's rate, an 8-row tile and Winograd from a 28 x 28
       // output.
       TuningProfile p = with_panels();
       p.gemm_rows = 8;
       p.winograd_min_tiles = 14 * 14;
       return p;
     }},
    {"cpu-avx512", "AVX-512", [](const Target& t) { return t.isa == Isa::avx512; }, with_panels},
    {"cpu-avx2", "AVX or AVX2: 16 registers of 8 floats",
     [](const Target& t) { return t.isa == Isa::avx; },
     [] {
       // A 6-row tile of two vectors takes 12 of the 16 registers and leaves B's two vectors and
       // A's broadcast; with a quarter of AVX-512's multiply-adds per cycle, Winograd pays from a
       // 14 x 14 output.
       TuningProfile p = with_panels();
       p.gemm_rows = 6;
       p.winograd_min_tiles = 7 * 7;
       return p;
     }},
    {"cpu-sse", "SSE: 16 registers of 4 floats", [](const Target& t) { return t.isa == Isa::sse; },
     [] {
       TuningProfile p = with_panels();
       p.gemm_rows = 6;
       p.winograd_min_tiles = 7 * 7;
       return p;
     }},
    {"cpu-neon", "NEON: 32 registers of 4 floats",
     [](const Target& t) { return t.isa == Isa::neon; }, with_panels},
    {"cpu-generic", "any other CPU", [](const Target&) { return true; }, with_panels},
};

// The AMD family of this processor (CPUID leaf 1, base plus extended family), else 0.
int host_amd_family() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return 0;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  if (!amd || __get_cpuid(1, &a, &b, &c, &d) == 0) return 0;
  const unsigned base = (a >> 8) & 0xfu;
  return static_cast<int>(base == 0xfu ? base + ((a >> 20) & 0xffu) : base);
#else
  return 0;
#endif
}

Isa host_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::avx512;
  return __builtin_cpu_supports("avx") ? Isa::avx : Isa::sse;
#elif defined(__aarch64__)
  return Isa::neon;
#else
  return Isa::generic;
#endif
}

}  // namespace

std::span<const TuningRow> tuning_table() { return kRows; }

Target target_for(Target::Isa isa, int amd_family) {
  Target t;
  t.language = Target::Language::c;
  t.kind = Target::Kind::host;
  t.isa = isa;
  t.amd_family = amd_family;
  // The kernels are compiled for the CPU with its widest vectors preferred
  // (-mprefer-vector-width=512 on AVX-512); the GEMM's vectors are GCC vector types of that
  // width, its register tile sized by their count. Elsewhere than on x86 and ARM, GCC lowers the
  // 16-float vectors to what the CPU has.
  t.vector_floats = isa == Isa::avx ? 8 : isa == Isa::sse || isa == Isa::neon ? 4 : 16;
  t.vector_registers = isa == Isa::avx || isa == Isa::sse ? 16 : 32;
  t.host = {.gemm = true, .l1_bytes = 32 * 1024, .l2_bytes = 384 * 1024};
  // libm's log2 and sin, and float64 exp2; float32 exp2 is our own: a libm call per element would
  // keep the loop vectorizer from vectorizing softmax's exp.
  t.native32 = {.exp2 = false, .log2 = true, .sin = true};
  t.native64 = {.exp2 = true, .log2 = true, .sin = true};
  t.tuning = choose_tuning(kRows, t, "cpu-");
  return t;
}

Target host_target() { return target_for(Isa::avx512, 0); }

Target tuned_host_target() {
  static const Target t = target_for(host_isa(), host_amd_family());
  return t;
}

}  // namespace vkgrad::cpu
