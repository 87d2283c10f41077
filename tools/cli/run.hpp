// tools/cli: the `vkgrad run` command (run.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace vkgrad {

// `vkgrad run model.onnx [--device D] [--input name=file.pb ...] [--runs N]`; throws Error on
// bad arguments or a model that does not load or run.
int run_command(const std::vector<std::string_view>& args);

}  // namespace vkgrad
