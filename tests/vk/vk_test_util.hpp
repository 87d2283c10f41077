// tests/vk: helpers shared by the Vulkan runtime tests — hand-written GLSL kernels following
// the renderer's contract (buffer slot i = set 0 binding i; the VKG_BDA variant takes device
// addresses in push constants) and a fixture that fails a test on any validation message.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vk/vk.hpp"

namespace vkgrad::vk::testing {

inline Program glsl_program(std::string name, std::string source, int num_buffers,
                            std::vector<bool> writes, uint32_t groups_x, uint32_t local_x = 64) {
  Program p;
  p.name = std::move(name);
  p.source = std::move(source);
  p.num_buffers = num_buffers;
  p.writes = std::move(writes);
  p.local_size = {local_x, 1, 1};
  p.groups = {groups_x, 1, 1};
  return p;
}

// out[i] = in[i] * mul + add for i < n (buffers: 0 out, 1 in).
inline std::string axpb_source(uint32_t n, float mul, float add) {
  return "#version 450\n"
         "layout(local_size_x = 64) in;\n"
         "layout(set = 0, binding = 0, std430) writeonly buffer Out { float out_[]; };\n"
         "layout(set = 0, binding = 1, std430) readonly buffer In { float in_[]; };\n"
         "void main() {\n"
         "  uint i = gl_GlobalInvocationID.x;\n"
         "  if (i < " +
         std::to_string(n) + "u) out_[i] = in_[i] * " + std::to_string(mul) + " + " +
         std::to_string(add) +
         ";\n"
         "}\n";
}

// x[i] += 1 for i < n (buffer 0, read and written).
inline std::string increment_source(uint32_t n) {
  return "#version 450\n"
         "layout(local_size_x = 64) in;\n"
         "layout(set = 0, binding = 0, std430) buffer X { float x[]; };\n"
         "void main() {\n"
         "  uint i = gl_GlobalInvocationID.x;\n"
         "  if (i < " +
         std::to_string(n) +
         "u) x[i] += 1.0;\n"
         "}\n";
}

inline uint32_t groups_for(uint32_t n) { return (n + 63) / 64; }

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    messages_ = validation_messages();
    rt = make_runtime(-1);
  }
  void TearDown() override {
    rt.reset();  // destroying the device may report leaks too
    EXPECT_EQ(validation_messages(), messages_) << "the validation layer reported messages";
  }

  void* upload(const std::vector<float>& v) {
    void* h = rt->alloc(v.size() * sizeof(float));
    rt->copy_in(h, v.data(), v.size() * sizeof(float));
    return h;
  }
  std::vector<float> download(void* h, size_t n) {
    std::vector<float> v(n);
    rt->copy_out(v.data(), h, n * sizeof(float));
    return v;
  }

  std::unique_ptr<Runtime> rt;

 private:
  int64_t messages_ = 0;
};

}  // namespace vkgrad::vk::testing
