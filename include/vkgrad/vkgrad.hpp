// Public: the one header applications include. It pulls in the whole public API.
#pragma once

#include <vkgrad/beam.hpp>
#include <vkgrad/device.hpp>
#include <vkgrad/dtype.hpp>
#include <vkgrad/error.hpp>
#include <vkgrad/gguf.hpp>
#include <vkgrad/jit.hpp>
#include <vkgrad/llm.hpp>
#include <vkgrad/nn.hpp>
#include <vkgrad/onnx.hpp>
#include <vkgrad/stats.hpp>
#include <vkgrad/tensor.hpp>
