// gguf: what the file reader and writer share with the block formats: a format by its GGML
// type number, a tensor of a file's bytes, and a tensor's bytes in a format. Depends on the
// public gguf header and tensor.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>
#include <vkgrad/gguf.hpp>

namespace vkgrad::gguf {

// The format GGUF numbers `ggml_type`, or nullptr where it is none we read.
const Format* format_of_ggml_type(uint32_t ggml_type);
// A lazy tensor of `shape` from a file's bytes in format f on `device`: F32/F16/BF16 as their
// dtypes, a quantized format as its blocks (uint8) through dequantize().
Tensor tensor_from_bytes(std::span<const uint8_t> bytes, const Format& f, const Shape& shape,
                         const std::string& device);
// The bytes of `value` stored as format f: realized and quantized on the host. ShapeError naming
// `name` where its rows are not whole blocks.
std::vector<uint8_t> tensor_bytes(const Tensor& value, const Format& f, const std::string& name);

}  // namespace vkgrad::gguf
