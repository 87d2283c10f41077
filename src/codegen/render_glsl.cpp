// codegen: linearize a kernel AST and render it as a Vulkan GLSL compute shader.
#include <vkgrad/error.hpp>

#include "codegen/pipeline.hpp"

namespace vkgrad {

Program codegen_glsl(const UOp& ast, const CodegenOptions& options, const GlslTarget& target) {
  (void)ast, (void)options, (void)target;
  throw InternalError("codegen_glsl: GLSL renderer missing");
}

}  // namespace vkgrad
