// tools/cli: the `vkgrad tune` command and its report (tune.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace vkgrad {

// `vkgrad tune --only A,B [--device D] [--beam N] [--seconds S] [--import F] [--export F]`: the
// cases run once with BEAM search on, then a table of the kernels searched; or a tuning table
// imported into, or exported from, the BEAM cache.
int tune_command(const std::vector<std::string_view>& args);

}  // namespace vkgrad
