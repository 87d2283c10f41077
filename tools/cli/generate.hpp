// tools/cli: the `vkgrad generate` command (generate.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace vkgrad {

// `vkgrad generate model.gguf -p TEXT [-n N] [--device D] [--temp T] [--top-k K] [--top-p P]
// [--seed S] [--ctx N]`: streams the generated text, then the load time, the time to the first
// token and the prefill and decode rates. Throws Error on a model that does not load or run.
int generate_command(const std::vector<std::string_view>& args);

}  // namespace vkgrad
