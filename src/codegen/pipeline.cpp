// codegen: the table of contents — each pass in order, each checked against the spec when SPEC=1.
#include "codegen/pipeline.hpp"

#include "codegen/linearize.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {
std::vector<VarArg> var_args(const UOp& ast) {
  std::vector<VarArg> out;
  for (const UOp& v : kernel_vars(ast)) out.push_back(v.arg_as<VarArg>());
  return out;
}
}  // namespace

UOp simplify_indices(const UOp& ast) { return simplify(ast); }

Program codegen_c(const UOp& ast, const CodegenOptions& options) {
  Program p;
  p.name = kernel_name(ast);      // 0. E_/r_ name from the scheduled axes (as schedule() says)
  UOp k = simplify_indices(ast);  // 1. index and valid math, simplified
  // 2. a large matmul becomes a packed, blocked GEMM; other kernels get upcasts and split
  //    accumulators
  const std::optional<GemmPlan> gemm = options.optimize ? plan_gemm(k) : std::nullopt;
  if (options.optimize && !gemm) k = apply_optimizations(k);
  render_c(k, p.name, gemm ? &*gemm : nullptr, p);  // 4. linearize into loops and render C
  for (const UOp& u : toposort(k))
    if (u.op() == Ops::DEFINE_GLOBAL)
      p.num_buffers = std::max<int>(p.num_buffers, u.arg_as<int64_t>() + 1);
  p.uops = toposort(k);
  p.vars = var_args(k);
  p.estimates = estimate(ast);
  return p;
}

Program codegen_glsl(const UOp& ast, const CodegenOptions& options, const GlslTarget& target) {
  Program p;
  p.name = kernel_name(ast);                                     // 0. E_/r_ name
  UOp k = simplify_indices(ast);                                 // 1. index and valid math
  if (options.optimize) k = apply_gpu_optimizations(k, target);  // 2. vec4, tiles, groups
  render_glsl(k, p.name, target, p);                             // 4. linearize, render GLSL
  p.uops = toposort(k);
  p.vars = var_args(k);
  p.estimates = estimate(ast);
  return p;
}

}  // namespace vkgrad
