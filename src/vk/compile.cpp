// vk: glslang compile, SPIR-V disk cache, spirv-val (see compile.hpp).
#include "vk/compile.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <spirv-tools/libspirv.hpp>
#include <sstream>
#include <vkgrad/error.hpp>

#include "ir/debug.hpp"
#include "runtime/disk_cache.hpp"
#include "vk/counters.hpp"
#include "vk/device.hpp"

namespace vkgrad::vk {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr const char* kBdaPreamble = "#define VKG_BDA 1\n";

const char* preamble(Variant v) { return v == Variant::device_address ? kBdaPreamble : ""; }

std::string glslang_version() {
  return fmt::format("glslang {}.{}.{}{}", GLSLANG_VERSION_MAJOR, GLSLANG_VERSION_MINOR,
                     GLSLANG_VERSION_PATCH, GLSLANG_VERSION_FLAVOR);
}

std::string cache_key(const std::string& source, Variant variant) {
  Fnv1a h;
  h.add(source);
  h.add(preamble(variant));
  h.add(glslang_version());
  h.add("vulkan1.2 spv1.5");  // the targets below: part of what the bytes depend on
  return fmt::format("{:016x}", h.h);
}

bool spirv_validation_on() {
  static const bool on = [] {
    const char* v = env("VKGRAD_VALIDATION");
    const char* s = env("VKGRAD_SPIRV_VAL");
    return (v != nullptr && std::string_view(v) != "0") ||
           (s != nullptr && std::string_view(s) != "0");
  }();
  return on;
}

std::string numbered(const std::string& source) {
  std::string out;
  std::istringstream in(source);
  int n = 1;
  for (std::string line; std::getline(in, line); ++n) out += fmt::format("{:4}: {}\n", n, line);
  return out;
}

std::vector<uint32_t> compile(const std::string& name, const std::string& source, Variant variant) {
  // glslang's process-wide state (the built-in symbol tables, behind its own lock) is set up
  // once; every other piece of a compile is the calling thread's own (its pool allocator, the
  // shader and program objects), so threads compile in parallel: a BEAM search compiles its
  // candidates on every core.
  static const bool initialized = glslang::InitializeProcess();
  (void)initialized;

  glslang::TShader shader(EShLangCompute);
  const char* text = source.c_str();
  shader.setStrings(&text, 1);
  shader.setPreamble(preamble(variant));
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
  shader.setEntryPoint("main");
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  auto fail = [&](const char* stage, const std::string& log) -> CompileError {
    return CompileError(fmt::format(
        "Vulkan: glslang {} of kernel '{}'{} failed:\n{}--- source ---\n{}", stage, name,
        variant == Variant::device_address ? " (VKG_BDA variant)" : "", log, numbered(source)));
  };
  if (!shader.parse(GetDefaultResources(), 450, false, messages))
    throw fail("compile", std::string(shader.getInfoLog()) + shader.getInfoDebugLog());
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages))
    throw fail("link", std::string(program.getInfoLog()) + program.getInfoDebugLog());
  std::vector<uint32_t> spirv;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  options.validate = false;  // spirv-val runs below, with our own switch
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
  if (spirv.empty()) throw fail("SPIR-V generation", logger.getAllMessages());
  return spirv;
}

void validate(const std::string& name, const std::vector<uint32_t>& spirv,
              const std::string& source) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string log;
  tools.SetMessageConsumer(
      [&](spv_message_level_t, const char*, const spv_position_t& pos, const char* message) {
        log += fmt::format("word {}: {}\n", pos.index, message);
      });
  if (!tools.Validate(spirv))
    throw CompileError(
        fmt::format("Vulkan: SPIR-V of kernel '{}' fails validation "
                    "(spirv-val, Vulkan 1.2):\n{}--- source ---\n{}",
                    name, log, numbered(source)));
}

void print_disassembly(const std::string& name, const std::vector<uint32_t>& spirv) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string text;
  if (tools.Disassemble(
          spirv, &text,
          SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    fmt::print(stderr, "--- SPIR-V of {} ---\n{}", name, text);
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

fs::path cache_dir() { return cache_root() / "vk"; }

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool write_file_atomically(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path temp = path.parent_path() / fmt::format("{}.tmp{}_{}", path.filename().string(),
                                                         ::getpid(), temp_counter++);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = ::close(fd) == 0 && done == bytes.size();
  if (ok) fs::rename(temp, path, ec);
  if (!ok || ec) {
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

std::vector<uint32_t> glsl_to_spirv(const std::string& name, const std::string& source,
                                    Variant variant, CompilePurpose purpose) {
  const fs::path file = cache_dir() / (cache_key(source, variant) + ".spv");
  std::vector<uint32_t> spirv;
  // A cached file that is not SPIR-V (truncated, foreign) is compiled again and replaced.
  const std::string cached = read_file(file);
  if (cached.size() >= 20 && cached.size() % 4 == 0) {
    spirv.resize(cached.size() / 4);
    std::memcpy(spirv.data(), cached.data(), cached.size());
    if (spirv[0] == kSpirvMagic)
      ++g_counters.spirv_cache_hits;
    else
      spirv.clear();
  }
  if (spirv.empty()) {
    spirv = compile(name, source, variant);
    ++g_counters.spirv_compiled;
    if (purpose == CompilePurpose::use)
      write_file_atomically(
          file, std::string_view(reinterpret_cast<const char*>(spirv.data()), spirv.size() * 4));
  }
  if (spirv_validation_on()) validate(name, spirv, source);
  if (debug_level() >= 6) print_disassembly(name, spirv);
  return spirv;
}

std::vector<uint32_t> glsl_to_spirv_uncached(const std::string& name, const std::string& source) {
  std::vector<uint32_t> spirv = compile(name, source, Variant::descriptors);
  if (spirv_validation_on()) validate(name, spirv, source);
  return spirv;
}

}  // namespace vkgrad::vk
