// codegen: the lowering passes codegen (pipeline.cpp) runs in order, each in its own file, and the
// printers that end it. Exposed for the passes' tests; the engine calls codegen() only.
#pragma once

#include <string>
#include <vector>

#include "codegen/gemm/plan.hpp"
#include "codegen/program.hpp"
#include "codegen/target.hpp"
#include "ir/uop.hpp"

namespace vkgrad {

// exp2, log2 and sin that the target's language lacks (Target::native32/native64) as UOp graphs
// of plain arithmetic, branch-free (transcendental.cpp).
UOp decompose_transcendentals(const UOp& kernel, const Target& target);
// float16 and bfloat16 as float32 values, rounded after every operation, and the bit code that
// loads, stores, casts and bitcasts them (halves.cpp): no printer sees a half type.
UOp lower_halves(const UOp& kernel);
// The semantics every target shares (integer division by zero, MIN / -1, shifts by the width or
// more, max of NaN) as UOp rules, so renderers print plain operators (decompose.cpp).
UOp decompose(const UOp& kernel, const Target& target);
// On a target with Target::fused_multiply_add, each float32 REDUCE(ADD) of a product becomes
// REDUCE(MULACC) of it: the accumulator steps as fma(a, b, acc) (decompose.cpp).
UOp fuse_multiply_add(const UOp& kernel, const Target& target);
// max(a, b) of floats as decompose writes it, NaN when either is (the printers combine MAX
// reductions' accumulators with it too).
UOp float_max(const UOp& a, const UOp& b);
// Neighbouring loads and stores along a size-4 upcast range as vector accesses, on targets with
// 4-wide vectors (vectorize.cpp).
UOp fold_vectors(const UOp& kernel, const Target& target);
// Threads targets (launch.cpp): with LOCAL axes, the workgroup of their amounts on a grid of the
// global axes; else the workgroup size (GROUP's amount, else 64 lanes, fewer for tiny kernels),
// the grid (group_grid) and, for a symbolic index space, the per-launch size. Index math is int32
// in shaders: an index space or a variable beyond it is a DeviceError.
void plan_launch(const UOp& kernel, const Target& target, Program& p);
// Threads targets with Target::texel_loads (launch.cpp): p.texel, the read-only slots of 32-bit
// elements that the kernel reads one way only (as vec4s, or, with texel_scalar_loads, as
// scalars), bound as uniform texel buffers.
void plan_texels(const UOp& kernel, const Target& target, Program& p);
// Whether a kernel with these ranges (collect_ranges) launches as a grid whose workgroups are its
// LOCAL lanes (launch.cpp).
struct RangeInfo;
bool launches_as_grid(const RangeInfo& ranges, const Target& target);
// A staged reduction (Opt STAGE): each step of its stage loop, the workgroup copies the operand
// tiles its lanes share into shared memory (DEFINE_LOCAL, STOREs, one BARRIER) and the steps
// inside read them there (stage.cpp).
UOp stage_tiles(const UOp& kernel, const Target& target);
// Threads targets: the ranges become the launch's SPECIALs (launch.cpp): gidx<d> and lidx<d> on a
// grid, else digits of the flat invocation index gid; the printer defines them from the launch
// plan_launch chose.
UOp gpu_dims(const UOp& kernel, const Target& target);
// A grouped reduction (Opt GROUP) as the workgroup's lanes folding their partial results in
// shared memory: DEFINE_LOCAL, STOREs, BARRIERs and LOADs, and subgroup operations as CUSTOM
// where the target has them (group.cpp).
UOp group_reductions(const UOp& kernel, const Target& target);
// C targets: the innermost upcast range of a kernel with gated loads, to be vectorized by the C
// compiler instead of unrolled, where those loads read consecutive elements along it; else null
// (vectorize.cpp).
UOp vector_loop(const UOp& kernel);
// Print the kernel's linear list (linearize) as C into p.source; with a plan (from plan_gemm on
// the same AST), the kernel is printed as a packed GEMM instead; `vector_loop`'s loop (or none) is
// left to the C compiler's vectorizer, every other upcast and unroll loop unrolled.
void render_c(const UOp& ast, const std::vector<UOp>& list, const std::string& name,
              const GemmPlan* gemm, const UOp& vector_loop, Program& p);
// Print the kernel's linear list as a GLSL compute shader into p.source, for the launch and the
// bindings the pipeline planned (p.local_size, p.groups, p.texel).
void render_glsl(const UOp& ast, const std::vector<UOp>& list, const std::string& name,
                 const Target& target, Program& p);
}  // namespace vkgrad
