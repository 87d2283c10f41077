// tests/codegen: compile GLSL with the glslangValidator CLI and check the SPIR-V with spirv-val
// (both found on PATH), and the GLSL target the codegen tests render for.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/pipeline.hpp"
#include "cpu/runtime.hpp"

namespace vkgrad {

// A device with every optional feature and lavapipe's limits.
inline Target full_target() {
  Target t;
  t.language = Target::Language::glsl;
  t.threads = t.local_memory = t.grid = t.subgroup_arithmetic = true;
  t.vector_floats = 4;
  t.storage8 = t.storage16 = t.int64 = t.float64 = true;
  t.subgroup_size = 8;
  t.max_workgroup_invocations = 1024;
  for (uint32_t& n : t.max_group_count) n = 65535;
  for (uint32_t& n : t.max_workgroup_size) n = 1024;
  t.max_shared_bytes = 32768;
  t.max_push_bytes = 128;
  t.fused_multiply_add = true;
  return t;
}

// How a Vulkan device that runs on the CPU is tuned (src/vk/tuning.cpp's rows for it): a
// workgroup is a loop of SIMD vectors, and only reductions to fewer than 64 outputs group.
inline TuningProfile on_the_cpu() {
  TuningProfile p;
  p.workgroup_as_loop = true;
  p.group_reused_below = p.group_below = 64;
  return p;
}

inline bool have_glsl_tools() {
  return std::system("command -v glslangValidator >/dev/null 2>&1") == 0 &&
         std::system("command -v spirv-val >/dev/null 2>&1") == 0;
}

// "" when every source compiles (with and without VKG_BDA) and validates, else the tools' log
// and the source of each failure. The tools run two at a time.
inline std::string validate_glsl_all(const std::vector<std::pair<std::string, std::string>>& srcs) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("vkgrad_glsl_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(std::hash<std::string>{}(srcs.front().second)));
  fs::create_directories(dir);
  // VKGRAD_GLSL_DUMP=<dir> keeps a copy of every shader for reading.
  const char* dump = std::getenv("VKGRAD_GLSL_DUMP");
  for (size_t i = 0; i < srcs.size(); ++i) {
    std::ofstream(dir / ("k" + std::to_string(i) + ".comp")) << srcs[i].second;
    if (dump)
      std::ofstream(fs::path(dump) / ("k" + std::to_string(i) + ".comp"))
          << "// " << srcs[i].first << "\n"
          << srcs[i].second;
  }
  const std::string one =
      "f=$1; for v in '' '-DVKG_BDA=1'; do glslangValidator -V --target-env vulkan1.2 $v "
      "$f.comp -o $f.spv > $f.log 2>&1 && spirv-val --target-env vulkan1.2 $f.spv >> $f.log "
      "2>&1 || { echo \"variant '$v'\" >> $f.log; touch $f.fail; break; }; done";
  std::ofstream(dir / "one.sh") << one << "\n";
  std::string list;
  for (size_t i = 0; i < srcs.size(); ++i) list += "k" + std::to_string(i) + "\n";
  std::ofstream(dir / "list.txt") << list;
  const std::string cmd = "cd '" + dir.string() + "' && xargs -P 2 -n 1 sh one.sh < list.txt";
  if (std::system(cmd.c_str()) != 0) return "could not run glslangValidator/spirv-val";
  std::string report;
  for (size_t i = 0; i < srcs.size(); ++i) {
    const fs::path base = dir / ("k" + std::to_string(i));
    if (!fs::exists(base.string() + ".fail")) continue;
    std::ifstream f(base.string() + ".log");
    std::stringstream log;
    log << f.rdbuf();
    report += "=== " + srcs[i].first + " failed:\n" + log.str() + "--- source ---\n" +
              srcs[i].second + "\n";
  }
  fs::remove_all(dir);
  return report;
}

}  // namespace vkgrad
