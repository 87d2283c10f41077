// ir: deterministic text forms of a graph. `to_string` prints tinygrad's nested
// `UOp(Ops.ADD, dtypes.index, arg=None, src=(...))` form with shared nodes named once
// (`x3:=UOp(...)`, later just `x3`); indentation stops growing past 32 levels so a deep chain
// prints in linear space. `render` gives a compact infix expression for index math, e.g.
// `((x*4)+y)//2`; it writes shared subexpressions out in full, so it is for small expressions
// (use `to_string` for graphs). Both iterate (no recursion over the graph). Depends on uop.
#pragma once

#include <string>

#include "ir/uop.hpp"

namespace vkgrad {

std::string to_string(const UOp& u);
std::string render(const UOp& u);
std::string format_arg(const Arg& a);
std::string dtype_repr(DType d);  // "dtypes.float32", "dtypes.float32.vec(4)", ...

}  // namespace vkgrad
