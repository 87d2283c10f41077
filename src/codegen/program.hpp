// codegen: what codegen hands a runtime — one kernel's rendered source and how to launch it.
// Depends on ir and codegen/opt.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/opt.hpp"
#include "ir/uop.hpp"

namespace vkgrad {

// A kernel's work per launch, estimated from its AST at the variables' maxima (DEBUG=2's GFLOPS
// and GB/s): every ALU op on values (not index math) times the trip count of the ranges it sits
// in, and every buffer access once over the span of elements its index reaches (a matmul's
// operand counts once, not once per output it feeds).
struct Estimates {
  double ops = 0;
  double bytes = 0;
};
Estimates estimate(const UOp& ast);

struct Program {
  std::string name;           // tinygrad-style: E_ (elementwise) or r_ (reduce) + axis sizes
  std::string source;         // the whole translation unit
  int64_t parallel_size = 1;  // trip count of the outermost global loop (split across threads)
  int num_buffers = 0;
  std::vector<UOp> uops;  // the linear list (linearize), a GEMM's AST nodes (DEBUG=5)

  // C programs only: floats of 64-byte aligned scratch each thread needs (a GEMM's packed
  // panels), passed as bufs[num_buffers]; 0 when none.
  struct Host {
    int64_t scratch_floats = 0;
  };
  Host host;

  // GPU programs (GLSL) only. The shader's workgroup size is baked into its source; a launch
  // dispatches `groups` workgroups (already split into a 2-D/3-D grid when one dimension would
  // exceed the device's maxComputeWorkGroupCount).
  std::array<uint32_t, 3> local_size{1, 1, 1};
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::vector<bool> writes;  // per buffer slot: the kernel writes it (else it only reads it)
  // Per buffer slot: bound as a uniform texel buffer of these texels (Target::texel_loads: one
  // 32-bit element, or four for a slot read only as vec4s) in the descriptor variants, else
  // (none) as a storage buffer. Empty: none is.
  enum class Texel : uint8_t { none, float32, int32, uint32, float32x4, int32x4, uint32x4 };
  std::vector<Texel> texel;
  // Whether `texel` binds slot i as a texel buffer.
  static bool is_texel(const std::vector<Texel>& texel, size_t i) {
    return i < texel.size() && texel[i] != Texel::none;
  }
  uint32_t push_bytes = 0;  // push-constant bytes the descriptor variant declares (0: none)

  // Symbolic kernels: the DEFINE_VARs the kernel reads, sorted by name (a launch passes their
  // values in this order, KernelLaunch::vars), and, where the launch size depends on them, that
  // size as an index expression over them, evaluated per launch (evaluate_size): on CPU the
  // outermost global loop's trip count, on the GPU the number of workgroups, split into a grid
  // by group_grid. parallel_size and groups then hold the size at the variables' maxima.
  std::vector<VarArg> vars;
  UOp launch_size;  // null when the launch size is constant

  Estimates estimates;
  std::vector<Opt> opts;  // the Opts applied (heuristics', given, or none)
};

// A launch's variable values checked against the kernel's variables: as many, each within its
// bounds; else Error naming the kernel and the variable.
void check_var_values(std::string_view kernel, std::span<const VarArg> vars,
                      std::span<const int64_t> values);
// An index expression over `vars` at `values` (in `vars` order).
int64_t evaluate_size(const UOp& expr, std::span<const VarArg> vars,
                      std::span<const int64_t> values);
// `groups` workgroups as a grid: x first, filled as evenly as the rest of the grid allows where
// one dimension would exceed the device's limit (DeviceError beyond the whole grid).
std::array<uint32_t, 3> group_grid(int64_t groups, const uint32_t (&max_group_count)[3]);

// The program's uops (the linear list) numbered, one per line: index, op, dtype, its sources
// (an earlier entry's number, or the node printed where it is used: a constant, buf<slot>,
// INDEX(buf1, 7), ...), its argument (DEBUG=5).
std::string uop_listing(const Program& p);

struct CodegenOptions {
  bool optimize = true;  // false with NOOPT=1: no Opts
  // An Opt list to apply instead of the heuristics' (a search's candidate, a test); an action
  // that does not apply is an Error (apply_opts).
  std::optional<std::vector<Opt>> opts = std::nullopt;
  // Where `opts` came from, for DEBUG>=2 ("the BEAM cache", "a search"); empty: "given".
  std::string origin = {};
};

}  // namespace vkgrad
