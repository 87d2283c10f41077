// codegen: the table of contents — each pass in order, each checked against the spec when SPEC=1.
#include "codegen/pipeline.hpp"

#include <cstdio>
#include <cstdlib>

#include "codegen/linearize.hpp"
#include "codegen/passes.hpp"
#include "codegen/ranges.hpp"
#include "ir/debug.hpp"
#include "ir/spec.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

std::vector<VarArg> var_args(const UOp& ast) {
  std::vector<VarArg> out;
  for (const UOp& v : kernel_vars(ast)) out.push_back(v.arg_as<VarArg>());
  return out;
}

// LinearizeOptions::shuffle_lanes for a kernel on a target that shares uniform loads through
// shuffles, launched on a grid (no lane returns early): a subgroup's lanes, or, where the
// workgroup's x size is no whole number of subgroups, the lanes active in the last subgroup of
// each row (its x size modulo the subgroup's: TuningProfile::share_uniform_loads); else 0.
int64_t shuffle_lanes(const std::vector<UOp>& nodes, const Target& target, const Program& p) {
  const int64_t s = target.subgroup_size, x = p.local_size[0];
  if (!target.tuning.share_uniform_loads || s < 2) return 0;
  for (const UOp& u : nodes)
    if (u.op() == Ops::SPECIAL && u.arg_as<std::string>().rfind("gidx", 0) != 0 &&
        u.arg_as<std::string>().rfind("lidx", 0) != 0)
      return 0;
  const int64_t lanes = x % s == 0 ? s : x % s;
  return lanes >= 2 ? lanes : 0;
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
  // The scheduler hands over its kernels simplified; codegen simplifies the index math once more,
  // after the Opts and the launch gave every range its final form.
  UOp k = ast;
  const char* rule = nullptr;  // the heuristics' rule that chose p.opts
  if (options.opts) {
    p.opts = *options.opts;
  } else if (options.optimize) {
    HeuristicChoice choice = choose_heuristic(k, target);
    p.opts = std::move(choice.opts);
    rule = choice.rule;
  }
  if (debug_level() >= 2)
    std::fprintf(stderr, "  opts %s: %s (%s%s%s)\n", p.name.c_str(), to_string(p.opts).c_str(),
                 options.opts       ? (options.origin.empty() ? "given" : options.origin.c_str())
                 : options.optimize ? "heuristics"
                                    : "NOOPT",
                 rule && debug_level() >= 3 ? ": " : "", rule && debug_level() >= 3 ? rule : "");
  k = run_pass("apply_opts", k, [&](const UOp& u) { return apply_opts(u, p.opts, target); });
  k = run_pass("fold_vectors", k, [&](const UOp& u) { return fold_vectors(u, target); });
  k = run_pass("stage_tiles", k, [&](const UOp& u) { return stage_tiles(u, target); });
  k = run_pass("transcendentals", k,
               [&](const UOp& u) { return decompose_transcendentals(u, target); });
  k = run_pass("halves", k, [](const UOp& u) { return lower_halves(u); });
  k = run_pass("decompose", k, [&](const UOp& u) { return decompose(u, target); });
  const bool gemm = !p.opts.empty() && p.opts[0].op == OptOp::GEMM;
  if (target.threads) plan_launch(k, target, p);
  k = run_pass("gpu_dims", k, [&](const UOp& u) { return gpu_dims(u, target); });
  k = run_pass("group_reductions", k, [&](const UOp& u) { return group_reductions(u, target); });
  k = run_pass("simplify", k, [](const UOp& u) { return simplify(u); });
  k = run_pass("fuse_multiply_add", k, [&](const UOp& u) { return fuse_multiply_add(u, target); });
  p.vars = var_args(k);
  const std::vector<UOp> nodes = toposort(k);
  for (const UOp& u : nodes)
    if (u.op() == Ops::DEFINE_GLOBAL)
      p.num_buffers = std::max<int>(p.num_buffers, static_cast<int>(u.arg_as<int64_t>()) + 1);
  // The buffers: slot 0 is written, the others read; variables are 4-byte push constants.
  p.writes.assign(static_cast<size_t>(p.num_buffers), false);
  if (p.num_buffers > 0) p.writes[0] = true;
  if (target.threads) p.push_bytes = static_cast<uint32_t>(4 * p.vars.size());
  // A CPU GEMM is printed from its plan; every other kernel from its flat list of statements.
  const std::optional<GemmPlan> plan = gemm && target.language == Target::Language::c
                                           ? plan_gemm(k, target, gemm_choice(p.opts))
                                           : std::nullopt;
  if (plan) {
    p.uops = nodes;
  } else {
    p.uops = linearize(k, {.hoist = target.threads,
                           .preload = target.threads,
                           .shuffle_lanes = shuffle_lanes(nodes, target, p)});
    if (spec_enabled()) verify_linear(p.uops);
  }
  if (target.language == Target::Language::glsl) {
    plan_texels(k, target, p);
    render_glsl(k, p.uops, p.name, target, p);
    return p;
  }
  // CPU launch: the threads split the outermost global loop (a symbolic one is sized per launch),
  // or the GEMM's rows, columns or batch, with the plan's scratch per thread.
  if (plan) {
    p.parallel_size = plan->parallel;
    p.host.scratch_floats = plan->scratch_floats;
  } else if (const KernelAxes axes = kernel_axes(k); !axes.globals.empty()) {
    p.parallel_size = axes.globals[0].src(0).vmax();
    if (range_size(axes.globals[0]) < 0) p.launch_size = axes.globals[0].src(0);
  }
  render_c(k, p.uops, p.name, plan ? &*plan : nullptr, plan ? UOp{} : vector_loop(k), p);
  return p;
}

}  // namespace vkgrad
