// bench: running the hand-written GLSL of shaders/ on a Runtime — the shader text with its
// @NAME@ placeholders filled in, compiled by Runtime::compile like any generated kernel, and
// device buffers that free themselves. Used by the Vulkan references and the dispatch cases.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device.hpp"

namespace vkgrad::bench {

// shaders/<file> with every @KEY@ replaced by its value. Throws Error when the file cannot be
// read or a placeholder is left without a value.
std::string shader_source(const std::string& file,
                          const std::vector<std::pair<std::string, std::string>>& values);

struct ShaderLaunch {
  std::array<uint32_t, 3> local_size{1, 1, 1};  // must match the shader's layout
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::vector<bool> writes;  // per buffer slot, in binding order
};

std::shared_ptr<CompiledKernel> compile_shader(
    Runtime& runtime, const std::string& name, const std::string& file,
    const std::vector<std::pair<std::string, std::string>>& values, const ShaderLaunch& launch);

// A device allocation of float32s that frees itself.
class DeviceBuffer {
 public:
  DeviceBuffer(Runtime& runtime, size_t count);
  explicit DeviceBuffer(Runtime& runtime, const std::vector<float>& data);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* handle() const { return handle_; }
  void upload(const std::vector<float>& data);
  std::vector<float> download() const;

 private:
  Runtime& runtime_;
  size_t count_;
  void* handle_;
};

}  // namespace vkgrad::bench
