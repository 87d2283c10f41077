// tools/cli: `vkgrad make-model`, a Llama-family GGUF file of random weights (make_model.cpp),
// for the LLM bench cases, the peers' runs on the same files, and trying `vkgrad generate`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vkgrad {

// `vkgrad make-model F [--arch llama|qwen2|qwen3] [--type T] [--shape tiny|tinyllama|7b]`:
// writes F with our own quantizer; norms stay F32.
int make_model_command(const std::vector<std::string_view>& args);

// Writes that file (shape "tiny", "tinyllama" or "7b") and returns its tensor count; Error on an
// unknown architecture, type or shape.
size_t write_random_model(const std::string& path, const std::string& arch, const std::string& type,
                          const std::string& shape_name);

}  // namespace vkgrad
