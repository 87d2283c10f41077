// tools/cli: `vkgrad make-model`, a Llama-family GGUF file of random weights (make_model.cpp),
// for the LLM bench cases, the peers' runs on the same files, and trying `vkgrad generate`.
#pragma once

#include <string_view>
#include <vector>

namespace vkgrad {

// `vkgrad make-model F [--arch llama|qwen2|qwen3] [--type T] [--shape tiny|tinyllama|7b]`:
// writes F with our own quantizer; norms stay F32.
int make_model_command(const std::vector<std::string_view>& args);

}  // namespace vkgrad
