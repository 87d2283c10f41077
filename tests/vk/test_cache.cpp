// tests/vk: the SPIR-V and pipeline disk caches across processes. The test runs this binary
// twice as a child (VkCacheChild, which does nothing unless VKGRAD_VK_CACHE_CHILD is set) with
// one fresh VKGRAD_CACHE_DIR: the first child compiles, the second compiles nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "vk/vk.hpp"
#include "vk_test_util.hpp"

namespace vkgrad::vk::testing {
namespace {

namespace fs = std::filesystem;

TEST(VkCacheChild, CompileThreeKernels) {
  if (std::getenv("VKGRAD_VK_CACHE_CHILD") == nullptr) GTEST_SKIP() << "run by DiskCaches";
  const int64_t messages = validation_messages();
  auto rt = make_runtime(-1);
  const uint32_t n = 64;
  std::vector<std::shared_ptr<CompiledKernel>> kernels;
  for (int j = 0; j < 3; ++j)
    kernels.push_back(rt->compile(glsl_program("k" + std::to_string(j),
                                               axpb_source(n, 1.0f, static_cast<float>(j)), 2,
                                               {true, false}, 1)));
  void* in = rt->alloc(n * sizeof(float));
  void* out = rt->alloc(n * sizeof(float));
  const KernelLaunch launch{kernels[2].get(), {out, in}};
  rt->run({&launch, 1}, nullptr);
  rt->free(in);
  rt->free(out);
  rt.reset();
  const Counters c = counters();
  std::printf("CACHE spirv_compiled=%lld spirv_cache_hits=%lld pipelines_created=%lld\n",
              static_cast<long long>(c.spirv_compiled), static_cast<long long>(c.spirv_cache_hits),
              static_cast<long long>(c.pipelines_created));
  EXPECT_EQ(validation_messages(), messages);
}

struct ChildCounts {
  long long compiled = -1, hits = -1, pipelines = -1;
};

ChildCounts run_child(const fs::path& cache) {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  // The parent's sharding (GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS) would leave the child no test.
  const std::string cmd =
      "env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE "
      "VKGRAD_VK_CACHE_CHILD=1 VKGRAD_CACHE_DIR='" +
      cache.string() + "' '" + exe + "' --gtest_filter=VkCacheChild.* 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buf;
  while (pipe != nullptr && std::fgets(buf.data(), buf.size(), pipe) != nullptr)
    output += buf.data();
  const int status = pipe != nullptr ? ::pclose(pipe) : -1;
  EXPECT_EQ(status, 0) << output;
  ChildCounts c;
  std::smatch m;
  const std::regex line(
      R"(CACHE spirv_compiled=(\d+) spirv_cache_hits=(\d+) pipelines_created=(\d+))");
  if (std::regex_search(output, m, line)) {
    c.compiled = std::stoll(m[1]);
    c.hits = std::stoll(m[2]);
    c.pipelines = std::stoll(m[3]);
  } else {
    ADD_FAILURE() << "no counts in the child's output:\n" << output;
  }
  return c;
}

TEST(VkCache, SecondProcessCompilesNothing) {
  const fs::path cache =
      fs::temp_directory_path() / ("vkgrad-vk-cache-test-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const ChildCounts first = run_child(cache);
  EXPECT_EQ(first.compiled, 3);
  EXPECT_EQ(first.hits, 0);
  EXPECT_EQ(first.pipelines, 3);
  int spv = 0, pipeline_files = 0;
  for (const auto& e : fs::directory_iterator(cache / "vk")) {
    const std::string name = e.path().filename().string();
    spv += e.path().extension() == ".spv";
    pipeline_files += name.rfind("pipeline-", 0) == 0 && e.path().extension() == ".bin";
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << "temporary file left: " << name;
  }
  EXPECT_EQ(spv, 3);
  EXPECT_EQ(pipeline_files, 1);

  const ChildCounts second = run_child(cache);
  EXPECT_EQ(second.compiled, 0);
  EXPECT_EQ(second.hits, 3);
  EXPECT_EQ(second.pipelines, 3);  // created again, from the pipeline cache

  // A damaged SPIR-V file is compiled again, not trusted.
  for (const auto& e : fs::directory_iterator(cache / "vk"))
    if (e.path().extension() == ".spv") fs::resize_file(e.path(), 6);
  const ChildCounts third = run_child(cache);
  EXPECT_EQ(third.compiled, 3);
  fs::remove_all(cache);
}

}  // namespace
}  // namespace vkgrad::vk::testing
