// tests/vk: the SPIR-V and pipeline disk caches across processes. The test runs this binary
// twice as a child (VkCacheChild, which does nothing unless VKGRAD_VK_CACHE_CHILD is set) with
// one fresh VKGRAD_CACHE_DIR: the first child compiles, the second compiles nothing but its
// trials (BEAM candidates), which no cache keeps. Also: glslang on several threads at once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "vk/compile.hpp"
#include "vk/vk.hpp"
#include "vk_test_util.hpp"

namespace vkgrad::vk::testing {
namespace {

namespace fs = std::filesystem;

TEST(VkCacheChild, CompileKernelsAndTrials) {
  if (std::getenv("VKGRAD_VK_CACHE_CHILD") == nullptr) GTEST_SKIP() << "run by DiskCaches";
  const int64_t messages = validation_messages();
  auto rt = make_runtime(-1);
  const uint32_t n = 64;
  // Three kernels for use and two trials, each compiled on its own thread, all at once.
  std::vector<std::shared_ptr<CompiledKernel>> kernels(5);
  std::vector<std::thread> threads;
  for (int j = 0; j < 5; ++j)
    threads.emplace_back([&, j] {
      kernels[static_cast<size_t>(j)] = rt->compile(
          glsl_program("k" + std::to_string(j), axpb_source(n, 1.0f, static_cast<float>(j)), 2,
                       {true, false}, 1),
          j < 3 ? CompilePurpose::use : CompilePurpose::trial);
    });
  for (std::thread& t : threads) t.join();
  void* in = rt->alloc(n * sizeof(float));
  void* out = rt->alloc(n * sizeof(float));
  const std::vector<float> ones(n, 1.0f);
  rt->copy_in(in, ones.data(), n * sizeof(float));
  for (int j = 0; j < 5; ++j) {  // each kernel runs its own code: 1 * x + j
    const KernelLaunch launch{kernels[static_cast<size_t>(j)].get(), {out, in}};
    rt->run({&launch, 1}, nullptr);
    std::vector<float> got(n);
    rt->copy_out(got.data(), out, n * sizeof(float));
    EXPECT_EQ(got[n - 1], 1.0f + static_cast<float>(j)) << j;
  }
  rt->free(in);
  rt->free(out);
  kernels.clear();
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
  EXPECT_EQ(first.compiled, 5);
  EXPECT_EQ(first.hits, 0);
  EXPECT_EQ(first.pipelines, 5);
  int spv = 0, pipeline_files = 0;
  for (const auto& e : fs::directory_iterator(cache / "vk")) {
    const std::string name = e.path().filename().string();
    spv += e.path().extension() == ".spv";
    pipeline_files += name.rfind("pipeline-", 0) == 0 && e.path().extension() == ".bin";
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << "temporary file left: " << name;
  }
  EXPECT_EQ(spv, 3);  // the trials' SPIR-V is not kept
  EXPECT_EQ(pipeline_files, 1);

  const ChildCounts second = run_child(cache);
  EXPECT_EQ(second.compiled, 2);  // the trials alone
  EXPECT_EQ(second.hits, 3);
  EXPECT_EQ(second.pipelines, 5);  // created again, the kernels for use from the pipeline cache

  // A damaged SPIR-V file is compiled again, not trusted.
  for (const auto& e : fs::directory_iterator(cache / "vk"))
    if (e.path().extension() == ".spv") fs::resize_file(e.path(), 6);
  const ChildCounts third = run_child(cache);
  EXPECT_EQ(third.compiled, 5);
  fs::remove_all(cache);
}

// glslang compiles on the calling thread: kernels compiled on eight threads at once come out as
// the same SPIR-V as compiled one at a time.
TEST(VkCompile, ThreadsCompileWhatOneThreadCompiles) {
  constexpr int kKernels = 32, kThreads = 8;
  auto source = [](int j) {
    return axpb_source(64u + static_cast<uint32_t>(j), 2.0f, static_cast<float>(j));
  };
  std::vector<std::vector<uint32_t>> serial, parallel(kKernels);
  for (int j = 0; j < kKernels; ++j)
    serial.push_back(glsl_to_spirv_uncached("k" + std::to_string(j), source(j)));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int j = t; j < kKernels; j += kThreads)
        parallel[static_cast<size_t>(j)] =
            glsl_to_spirv_uncached("k" + std::to_string(j), source(j));
    });
  for (std::thread& t : threads) t.join();
  for (int j = 0; j < kKernels; ++j) {
    EXPECT_FALSE(serial[static_cast<size_t>(j)].empty());
    EXPECT_EQ(parallel[static_cast<size_t>(j)], serial[static_cast<size_t>(j)]) << j;
  }
}

}  // namespace
}  // namespace vkgrad::vk::testing
