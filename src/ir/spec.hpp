// ir: the spec, a PatternMatcher whose rules say which (op, dtype, src, arg) combinations are
// valid IR; `verify` checks every node of a graph against it. `run_pass` calls it after each
// pass when SPEC=1. Depends on uop, upat and print.
#pragma once

#include <string_view>

#include "ir/upat.hpp"

namespace vkgrad {

extern const PatternMatcher pm_spec;

// Throws InternalError naming the pass and printing the first invalid node.
void verify(const UOp& root, std::string_view pass = "verify");
// True when the environment sets SPEC to a nonzero value (read once).
bool spec_enabled();

}  // namespace vkgrad
