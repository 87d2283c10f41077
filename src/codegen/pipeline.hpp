// codegen: the lowering pipeline from a scheduled kernel AST to source. pipeline.cpp lists the
// passes in order. Depends on sched (kernel AST form) and ir.
#pragma once

#include "codegen/program.hpp"

namespace vkgrad {

// Scheduled kernel AST (sched/schedule.hpp) -> optimized AST -> C source.
Program codegen_c(const UOp& ast, const CodegenOptions& options);
// The same for a Vulkan compute shader (render_glsl.cpp): GLSL 450 source plus launch shape.
Program codegen_glsl(const UOp& ast, const CodegenOptions& options, const GlslTarget& target);

// The passes, exposed for tests.
UOp simplify_indices(const UOp& ast);     // symbolic simplification of index/valid math
UOp apply_optimizations(const UOp& ast);  // upcast output axes, split reduce accumulators
// The GPU's: vec4 upcasts, register tiles for matmul-like kernels, grouped reductions.
UOp apply_gpu_optimizations(const UOp& ast, const GlslTarget& target);
// Fills p.source, p.parallel_size and p.launch_size.
void render_c(const UOp& ast, const std::string& name, Program& p);
// Fills p.source and the launch fields (local_size, groups, writes, num_buffers, push_bytes,
// launch_size).
void render_glsl(const UOp& ast, const std::string& name, const GlslTarget& target, Program& p);
std::string kernel_name(const UOp& ast);

}  // namespace vkgrad
