// codegen: the lowering pipeline from a scheduled kernel AST to a Program (source, launch shape,
// buffers, variables, estimates) for a Target. pipeline.cpp lists the passes in order. Depends on
// sched (kernel AST form) and ir.
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "codegen/opt.hpp"
#include "codegen/program.hpp"
#include "codegen/target.hpp"

namespace vkgrad {

// Scheduled kernel AST (sched/schedule.hpp) -> simplified -> Opts applied -> launch planned ->
// rendered as C or GLSL, as the target's language says.
Program codegen(const UOp& ast, const CodegenOptions& options, const Target& target);

// One named pass: `fn` applied to `in`; with SPEC=1 (or `check`), the result is verified against
// the spec and an invalid node is an InternalError naming the pass and printing the node.
UOp run_pass(std::string_view name, const UOp& in, const std::function<UOp(const UOp&)>& fn,
             bool check = false);

// The kernel's name, as Tensor::schedule() gives it: E_ (elementwise) or r_ (reduce) and the
// axis sizes.
std::string kernel_name(const UOp& ast);

}  // namespace vkgrad
