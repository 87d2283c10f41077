// codegen: the table of contents — each pass in order, each checked against the spec when SPEC=1.
#include "codegen/pipeline.hpp"

#include <cstdio>
#include <cstdlib>

#include "codegen/linearize.hpp"
#include "ir/spec.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

int debug_level() {
  static const int level = [] {
    const char* v = std::getenv("DEBUG");
    return v && *v ? std::atoi(v) : 0;
  }();
  return level;
}

std::vector<VarArg> var_args(const UOp& ast) {
  std::vector<VarArg> out;
  for (const UOp& v : kernel_vars(ast)) out.push_back(v.arg_as<VarArg>());
  return out;
}

}  // namespace

UOp run_pass(std::string_view name, const UOp& in, const std::function<UOp(const UOp&)>& fn,
             bool check) {
  UOp out = fn(in);
  if (check || spec_enabled()) verify(out, name);
  return out;
}

Program codegen(const UOp& ast, const CodegenOptions& options, const Target& target) {
  Program p;
  p.name = kernel_name(ast);    // the name Tensor::schedule() gives the kernel
  p.estimates = estimate(ast);  // work and traffic, for DEBUG=2 and kernel_times()
  UOp k = run_pass("simplify", ast, [](const UOp& u) { return simplify(u); });
  p.opts = options.opts       ? *options.opts
           : options.optimize ? heuristic_opts(k, target)
                              : std::vector<Opt>{};
  if (debug_level() >= 3)
    std::fprintf(stderr, "  opts %s: %s (%s)\n", p.name.c_str(), to_string(p.opts).c_str(),
                 options.opts       ? "given"
                 : options.optimize ? "heuristics"
                                    : "NOOPT");
  k = run_pass("apply_opts", k, [&](const UOp& u) { return apply_opts(u, p.opts, target); });
  k = run_pass("fold_vectors", k, [&](const UOp& u) { return fold_vectors(u, target); });
  k = run_pass("decompose", k, [&](const UOp& u) { return decompose(u, target); });
  const bool gemm = p.opts.size() == 1 && p.opts[0].op == OptOp::GEMM;
  if (target.threads) plan_launch(k, p.opts, target, p);
  k = run_pass("gpu_dims", k, [&](const UOp& u) { return gpu_dims(u, target); });
  p.uops = toposort(k);
  p.vars = var_args(k);
  for (const UOp& u : p.uops)
    if (u.op() == Ops::DEFINE_GLOBAL)
      p.num_buffers = std::max<int>(p.num_buffers, static_cast<int>(u.arg_as<int64_t>()) + 1);
  if (target.language == Target::Language::glsl) {
    render_glsl(k, p.name, target, p);
  } else {
    const std::optional<GemmPlan> plan = gemm ? plan_gemm(k, target) : std::nullopt;
    render_c(k, p.name, plan ? &*plan : nullptr, p);
  }
  return p;
}

}  // namespace vkgrad
