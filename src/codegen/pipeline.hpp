// codegen: the lowering pipeline from a scheduled kernel AST to source. pipeline.cpp lists the
// passes in order. Depends on sched (kernel AST form) and ir.
#pragma once

#include <optional>

#include "codegen/program.hpp"

namespace vkgrad {

// Scheduled kernel AST (sched/schedule.hpp) -> optimized AST -> C source.
Program codegen_c(const UOp& ast, const CodegenOptions& options);
// The same for a Vulkan compute shader (render_glsl.cpp): GLSL 450 source plus launch shape.
Program codegen_glsl(const UOp& ast, const CodegenOptions& options, const GlslTarget& target);

// A float32 matmul-like kernel that the CPU renders as a blocked GEMM on packed panels:
//   out[batch, m, n] = epilogue(sum over k of a[batch, m, k] * b[batch, k, n])
// (a ignores n, b ignores m; any index math, masks and elementwise ops inside a and b are
// evaluated once per element while packing, so transposed and fused operands cost no more; m, n
// and k may each be several ranges flattened into one, as a convolution's channels and window).
enum class GemmSplit { rows, columns, batch };  // what the threads split
struct GemmPlan {
  UOp reduce;              // REDUCE(ADD) over k of MUL(a, b)
  UOp a, b;                // the operands
  std::vector<UOp> m, n;   // output rows, output columns (the innermost output ranges)
  std::vector<UOp> k;      // the reduce ranges
  std::vector<UOp> batch;  // the other output ranges (each list outermost first; m, n and k are
                           // each flattened into one index)
  int64_t mr = 0, nr = 0;  // register tile: mr x nr accumulators
  int64_t mc = 0, kc = 0;  // A block packed at a time (mc x kc, L2), kc also B's micro panel
  int64_t nc = 0;          // B block packed at a time: all of k x nc columns (up to 4 MiB)
  // Rows: each thread packs all of B; columns: all of A; batch (the first batch range): neither.
  GemmSplit split = GemmSplit::rows;
};

// The passes, exposed for tests.
UOp simplify_indices(const UOp& ast);     // symbolic simplification of index/valid math
UOp apply_optimizations(const UOp& ast);  // upcast output axes, split reduce accumulators
// The GEMM plan for a large float32 matmul-like kernel on the CPU, or none.
std::optional<GemmPlan> plan_gemm(const UOp& ast);
// The GPU's: vec4 upcasts, register tiles for matmul-like kernels, grouped reductions.
UOp apply_gpu_optimizations(const UOp& ast, const GlslTarget& target);
// Fills p.source, p.parallel_size and p.launch_size; with a plan (from plan_gemm on the same
// AST), the kernel is rendered as a packed GEMM.
void render_c(const UOp& ast, const std::string& name, const GemmPlan* gemm, Program& p);
// Fills p.source and the launch fields (local_size, groups, writes, num_buffers, push_bytes,
// launch_size).
void render_glsl(const UOp& ast, const std::string& name, const GlslTarget& target, Program& p);
std::string kernel_name(const UOp& ast);

}  // namespace vkgrad
