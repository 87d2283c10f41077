// bench: the hand-written shader references on Vulkan (hand_shaders.hpp, harness.hpp): out =
// a*b + c as vec4s (shaders/saxpy.comp) and a register-blocked matmul (shaders/matmul.comp),
// timed like any reference: Runtime::run of one launch on buffers uploaded once.
#include "bench/hand_shaders.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <vkgrad/vkgrad.hpp>

#include "bench/harness.hpp"

#ifndef VKGRAD_SHADERS_DIR
#error "VKGRAD_SHADERS_DIR (the shaders/ folder) must be defined by the build"
#endif

namespace vkgrad::bench {

std::string shader_source(const std::string& file,
                          const std::vector<std::pair<std::string, std::string>>& values) {
  std::string path = std::string(VKGRAD_SHADERS_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) throw Error("bench: cannot read the shader " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string src = text.str();
  for (const auto& [key, value] : values) {
    std::string placeholder = "@" + key + "@";
    for (size_t at = src.find(placeholder); at != std::string::npos;
         at = src.find(placeholder, at + value.size()))
      src.replace(at, placeholder.size(), value);
  }
  // A placeholder is @ followed by an upper-case name and @; GLSL itself never uses '@'.
  if (size_t at = src.find('@'); at != std::string::npos)
    throw Error(fmt::format("bench: {} has a placeholder without a value: '{}'", path,
                            src.substr(at, src.find('@', at + 1) - at + 1)));
  return src;
}

std::shared_ptr<CompiledKernel> compile_shader(
    Runtime& runtime, const std::string& name, const std::string& file,
    const std::vector<std::pair<std::string, std::string>>& values, const ShaderLaunch& launch) {
  Program p;
  p.name = name;
  p.source = shader_source(file, values);
  p.num_buffers = static_cast<int>(launch.writes.size());
  p.local_size = launch.local_size;
  p.groups = launch.groups;
  p.writes = launch.writes;
  p.push_bytes = 0;
  return runtime.compile(p);
}

DeviceBuffer::DeviceBuffer(Runtime& runtime, size_t count)
    : runtime_(runtime), count_(count), handle_(runtime.alloc(count * sizeof(float))) {}

DeviceBuffer::DeviceBuffer(Runtime& runtime, const std::vector<float>& data)
    : DeviceBuffer(runtime, data.size()) {
  upload(data);
}

DeviceBuffer::~DeviceBuffer() { runtime_.free(handle_); }

void DeviceBuffer::upload(const std::vector<float>& data) {
  if (data.size() != count_) throw InternalError("bench: DeviceBuffer::upload: size mismatch");
  runtime_.copy_in(handle_, data.data(), count_ * sizeof(float));
}

std::vector<float> DeviceBuffer::download() const {
  std::vector<float> out(count_);
  runtime_.copy_out(out.data(), handle_, count_ * sizeof(float));
  return out;
}

namespace {

std::vector<Sample> time_launch(Runtime& rt, const KernelLaunch& launch) {
  return measure([&] { return time_host([&] { rt.run({&launch, 1}, nullptr); }); });
}

}  // namespace

std::vector<Sample> hand_axbpc(Suite& s, const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c, std::vector<float>& out) {
  Runtime& rt = *s.runtime;
  if (a.size() % 4 != 0) throw InternalError("bench: saxpy.comp needs a multiple of 4 elements");
  const size_t n4 = a.size() / 4;
  constexpr uint32_t kLocal = 256;  // 16M floats: 16384 workgroups, under the 65535 limit
  ShaderLaunch launch{{kLocal, 1, 1},
                      {static_cast<uint32_t>((n4 + kLocal - 1) / kLocal), 1, 1},
                      {true, false, false, false}};
  auto kernel =
      compile_shader(rt, "hand_saxpy", "saxpy.comp",
                     {{"LOCAL", std::to_string(kLocal)}, {"N4", std::to_string(n4)}}, launch);
  DeviceBuffer dout(rt, a.size()), da(rt, a), db(rt, b), dc(rt, c);
  KernelLaunch l{kernel.get(), {dout.handle(), da.handle(), db.handle(), dc.handle()}};
  std::vector<Sample> runs = time_launch(rt, l);
  out = dout.download();
  return runs;
}

std::vector<Sample> hand_matmul(Suite& s, const std::vector<float>& a, const std::vector<float>& b,
                                int64_t n, std::vector<float>& out) {
  Runtime& rt = *s.runtime;
  if (n % 64 != 0) throw InternalError("bench: matmul.comp needs n to be a multiple of 64");
  // 8 x 8 invocations per workgroup, each an 8 x 8 block of C.
  const auto groups = static_cast<uint32_t>(n / 64);
  ShaderLaunch launch{{8, 8, 1}, {groups, groups, 1}, {true, false, false}};
  auto kernel = compile_shader(rt, fmt::format("hand_matmul_{}", n), "matmul.comp",
                               {{"N", std::to_string(n)}}, launch);
  DeviceBuffer dc(rt, static_cast<size_t>(n * n)), da(rt, a), db(rt, b);
  KernelLaunch l{kernel.get(), {dc.handle(), da.handle(), db.handle()}};
  std::vector<Sample> runs = time_launch(rt, l);
  out = dc.download();
  return runs;
}

}  // namespace vkgrad::bench
