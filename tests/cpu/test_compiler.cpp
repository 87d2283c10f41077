// Compiler: system C compiler -> shared object, the disk and memory caches, errors, IEEE floats.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <vkgrad/error.hpp>

#include "cpu/compiler.hpp"
#include "cpu/thread_pool.hpp"

using namespace vkgrad;
using namespace vkgrad::cpu;
namespace fs = std::filesystem;

namespace {

constexpr const char* kAdd = R"(#include <stdint.h>
void add(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* out = (float*)bufs[0];
  const float* a = (const float*)bufs[1];
  const float* b = (const float*)bufs[2];
  (void)vars;
  for (int64_t i = start; i < end; ++i) out[i] = a[i] + b[i];
}
)";

// Sets an environment variable for one scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Every test gets a fresh cache folder, removed afterwards.
class CompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "vkgrad-test-cpu-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::vector<fs::path> cache_files() const {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir_ / "cpu")) files.push_back(e.path());
    return files;
  }
  fs::path dir_;
};

TEST_F(CompilerTest, CompilesAndRunsAKernel) {
  Compiler c(dir_.string());
  auto lib = c.compile(kAdd);
  ASSERT_NE(lib, nullptr);
  KernelFn add = c.kernel(lib, "add");
  std::vector<float> a(100), b(100), out(100, -1.0f);
  for (int i = 0; i < 100; ++i) a[i] = static_cast<float>(i), b[i] = 0.5f * static_cast<float>(i);
  void* bufs[] = {out.data(), a.data(), b.data()};
  add(bufs, nullptr, 0, 40);
  add(bufs, nullptr, 40, 100);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(out[i], 1.5f * static_cast<float>(i)) << i;
}

TEST_F(CompilerTest, RunsOnTheThreadPool) {
  Compiler c(dir_.string());
  KernelFn add = c.kernel(c.compile(kAdd), "add");
  ThreadPool pool(3);
  const int64_t n = 10007;
  std::vector<float> a(n, 1.0f), b(n), out(n);
  for (int64_t i = 0; i < n; ++i) b[i] = static_cast<float>(i);
  void* bufs[] = {out.data(), a.data(), b.data()};
  pool.parallel_for(n, 16, [&](int64_t s, int64_t e) { add(bufs, nullptr, s, e); });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i + 1)) << i;
}

TEST_F(CompilerTest, SameSourceTwiceIsAMemoryHit) {
  Compiler c(dir_.string());
  auto first = c.compile(kAdd);
  auto second = c.compile(kAdd);
  EXPECT_EQ(first, second);
  Compiler::Stats s = c.stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.memory_hits, 1);
  EXPECT_EQ(s.disk_hits, 0);
  EXPECT_GT(s.compile_ms, 0.0);
}

TEST_F(CompilerTest, SecondCompilerWithTheSameFolderGetsADiskHit) {
  Compiler a(dir_.string());
  auto lib_a = a.compile(kAdd);
  Compiler b(dir_.string());
  auto lib_b = b.compile(kAdd);
  EXPECT_EQ(b.stats().compiles, 0);
  EXPECT_EQ(b.stats().disk_hits, 1);
  EXPECT_EQ(lib_a->path(), lib_b->path());
  // Exactly one file, <hash>.so, in <root>/cpu: the temporary source and object are gone.
  auto files = cache_files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], fs::path(lib_a->path()));
  EXPECT_EQ(files[0].extension(), ".so");
  EXPECT_EQ(files[0].stem().string().size(), 16u);
  // Its kernel works.
  std::vector<float> x{1, 2}, y{3, 4}, out(2);
  void* bufs[] = {out.data(), x.data(), y.data()};
  b.kernel(lib_b, "add")(bufs, nullptr, 0, 2);
  EXPECT_EQ(out, (std::vector<float>{4, 6}));
}

TEST_F(CompilerTest, TheCompilerKeepsLibrariesOpen) {
  Compiler c(dir_.string());
  KernelFn add = c.kernel(c.compile(kAdd), "add");  // the caller's shared_ptr is gone at once
  std::vector<float> x{1}, y{2}, out(1);
  void* bufs[] = {out.data(), x.data(), y.data()};
  add(bufs, nullptr, 0, 1);
  EXPECT_EQ(out[0], 3.0f);
  auto lib = c.compile(kAdd);
  EXPECT_EQ(c.stats().compiles, 1);
  EXPECT_EQ(c.stats().memory_hits, 1);
  EXPECT_EQ(lib.use_count(), 2);  // ours and the Compiler's
}

// A trial (a BEAM candidate) is compiled and runs, but leaves no file and no open library behind:
// the next trial of the same source compiles again, and a use of it then fills both caches.
TEST_F(CompilerTest, ATrialLeavesNothingInTheCaches) {
  Compiler c(dir_.string());
  std::weak_ptr<Library> gone;
  {
    auto lib = c.compile(kAdd, CompilePurpose::trial);
    gone = lib;
    std::vector<float> x{1, 2}, y{3, 4}, out(2);
    void* bufs[] = {out.data(), x.data(), y.data()};
    c.kernel(lib, "add")(bufs, nullptr, 0, 2);
    EXPECT_EQ(out, (std::vector<float>{4, 6}));
    EXPECT_TRUE(cache_files().empty());
  }
  EXPECT_TRUE(gone.expired());  // closed with its last shared_ptr
  c.compile(kAdd, CompilePurpose::trial);
  EXPECT_EQ(c.stats().compiles, 2);
  EXPECT_EQ(c.stats().memory_hits, 0);
  auto used = c.compile(kAdd);
  EXPECT_EQ(c.stats().compiles, 3);
  EXPECT_EQ(cache_files().size(), 1u);
  // A trial of a source already open or on disk takes it from there.
  EXPECT_EQ(c.compile(kAdd, CompilePurpose::trial), used);
  EXPECT_EQ(c.stats().memory_hits, 1);
  Compiler other(dir_.string());
  other.compile(kAdd, CompilePurpose::trial);
  EXPECT_EQ(other.stats().disk_hits, 1);
  EXPECT_EQ(other.stats().compiles, 0);
}

// Trials compile in parallel, each to its own temporary files, and each runs its own code.
TEST_F(CompilerTest, TrialsCompileOnSeveralThreads) {
  Compiler c(dir_.string());
  constexpr int kThreads = 4;
  std::vector<std::shared_ptr<Library>> libs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::string source = kAdd;
      source.replace(source.find("a[i] + b[i]"), 11, "a[i] + b[i] + " + std::to_string(t));
      libs[static_cast<size_t>(t)] = c.compile(source, CompilePurpose::trial);
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    std::vector<float> x{1}, y{2}, out(1);
    void* bufs[] = {out.data(), x.data(), y.data()};
    c.kernel(libs[static_cast<size_t>(t)], "add")(bufs, nullptr, 0, 1);
    EXPECT_EQ(out[0], 3.0f + static_cast<float>(t)) << t;
  }
  EXPECT_EQ(c.stats().compiles, kThreads);
  EXPECT_TRUE(cache_files().empty());
}

TEST_F(CompilerTest, DifferentSourcesGetDifferentFiles) {
  Compiler c(dir_.string());
  auto a = c.compile(kAdd);
  auto b = c.compile(std::string(kAdd) + "// another kernel\n");
  EXPECT_NE(a->path(), b->path());
  EXPECT_EQ(c.stats().compiles, 2);
  EXPECT_EQ(cache_files().size(), 2u);
}

TEST_F(CompilerTest, ACorruptCachedFileIsRebuilt) {
  std::string path;
  {
    Compiler a(dir_.string());
    path = a.compile(kAdd)->path();
  }
  fs::resize_file(path, 10);  // what a crash mid-copy by some other tool would leave
  Compiler b(dir_.string());
  auto lib = b.compile(kAdd);
  EXPECT_EQ(b.stats().compiles, 1);
  EXPECT_EQ(b.stats().disk_hits, 0);
  EXPECT_NE(b.kernel(lib, "add"), nullptr);
}

TEST_F(CompilerTest, SyntaxErrorThrowsWithSourceAndCompilerOutput) {
  Compiler c(dir_.string());
  const std::string bad =
      "#include <stdint.h>\n"
      "void broken(void** bufs, const int64_t* vars, int64_t start, int64_t end) {\n"
      "  undeclared_thing_42 = 1;\n"
      "}\n";
  try {
    c.compile(bad);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(bad), std::string::npos) << what;      // the full source
    EXPECT_NE(what.find("error"), std::string::npos) << what;  // the compiler's verdict
    EXPECT_LT(what.find("undeclared_thing_42"), what.find("--- source ---")) << what;
  }
  // Still usable, and the failed compile left no files behind.
  auto lib = c.compile(kAdd);
  EXPECT_NE(c.kernel(lib, "add"), nullptr);
  EXPECT_EQ(cache_files().size(), 1u);
  EXPECT_EQ(c.stats().compiles, 2);
}

TEST_F(CompilerTest, MissingKernelIsAnError) {
  Compiler c(dir_.string());
  auto lib = c.compile(kAdd);
  EXPECT_THROW(c.kernel(lib, "sub"), Error);
  EXPECT_THROW(c.kernel(nullptr, "add"), Error);
}

// NaN and Inf follow IEEE (no fast-math), and a*b+c is not contracted into an FMA.
TEST_F(CompilerTest, FloatsBehaveAsIeee) {
  const char* src = R"(#include <stdint.h>
void ieee(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  const float* in = (const float*)bufs[0];
  float* f = (float*)bufs[1];
  int32_t* b = (int32_t*)bufs[2];
  (void)vars; (void)start; (void)end;
  float nan = in[0], zero = in[1], one = in[2];
  b[0] = nan != nan;
  b[1] = nan == nan;
  b[2] = nan < one;
  f[0] = one / zero;
  f[1] = -one / zero;
  f[2] = zero / zero;
  f[3] = 1.0f / 0.0f;
  f[4] = in[3] * in[4] + in[5];
  f[5] = nan + one;
  f[6] = -zero;
}
)";
  Compiler c(dir_.string());
  KernelFn k = c.kernel(c.compile(src), "ieee");
  const float a = 1.0f + std::ldexp(1.0f, -12);  // a*a = 1 + 2^-11 + 2^-24: rounds to 1 + 2^-11
  std::vector<float> in{std::numeric_limits<float>::quiet_NaN(), 0.0f, 1.0f, a, a,
                        -(1.0f + std::ldexp(1.0f, -11))};
  std::vector<float> f(7, 123.0f);
  std::vector<int32_t> b(3, 7);
  void* bufs[] = {in.data(), f.data(), b.data()};
  k(bufs, nullptr, 0, 1);
  EXPECT_EQ(b, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(f[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[4], 0.0f) << "a*b+c was fused into an FMA";
  EXPECT_TRUE(std::isnan(f[5]));
  EXPECT_TRUE(std::signbit(f[6]));
}

TEST_F(CompilerTest, ManyThreadsCompilingTheSameSourceCompileOnce) {
  Compiler c(dir_.string());
  std::vector<std::shared_ptr<Library>> libs(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < libs.size(); ++i)
    threads.emplace_back([&, i] { libs[i] = c.compile(kAdd); });
  for (auto& t : threads) t.join();
  for (const auto& lib : libs) EXPECT_EQ(lib, libs[0]);
  EXPECT_EQ(c.stats().compiles, 1);
  EXPECT_EQ(c.stats().memory_hits, 5);
}

TEST_F(CompilerTest, DifferentSourcesCompileInParallel) {
  Compiler c(dir_.string());
  constexpr int kSources = 4;
  std::vector<float> results(kSources);
  std::vector<std::thread> threads;
  for (int i = 0; i < kSources; ++i) {
    threads.emplace_back([&, i] {
      std::string src =
          "#include <stdint.h>\nvoid k(void** bufs, const int64_t* vars, int64_t s, "
          "int64_t e) { (void)vars; (void)s; (void)e; ((float*)bufs[0])[0] = " +
          std::to_string(i) + ".5f; }\n";
      auto lib = c.compile(src);
      float out = 0;
      void* bufs[] = {&out};
      c.kernel(lib, "k")(bufs, nullptr, 0, 1);
      results[i] = out;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kSources; ++i) EXPECT_EQ(results[i], static_cast<float>(i) + 0.5f);
  EXPECT_EQ(c.stats().compiles, kSources);
}

TEST(CompilerInfo, FindsACompilerAndRecordsItsVersionAndFlags) {
  const CompilerInfo& ci = Compiler::instance().info();
  ASSERT_FALSE(ci.path.empty());
  EXPECT_TRUE(fs::path(ci.path).is_absolute() || ci.path.find('/') != std::string::npos);
  EXPECT_FALSE(ci.version.empty());
  for (const char* f : {"-O2", "-march=native", "-fPIC", "-shared", "-ffp-contract=off"}) {
    EXPECT_NE(std::find(ci.flags.begin(), ci.flags.end(), f), ci.flags.end()) << f;
  }
  for (const auto& f : ci.flags) EXPECT_EQ(f.find("fast-math"), std::string::npos) << f;
  EXPECT_EQ(&Compiler::instance(), &Compiler::instance());
}

TEST(CompilerInfo, CcOverridesTheChoiceAndKeepsItsExtraWords) {
  ScopedEnv cc("CC", "gcc -DVKGRAD_FROM_CC=1");
  Compiler c;
  if (c.info().path.empty()) GTEST_SKIP() << "no gcc on PATH";
  EXPECT_EQ(fs::path(c.info().path).filename(), "gcc");
  ASSERT_FALSE(c.info().flags.empty());
  EXPECT_EQ(c.info().flags[0], "-DVKGRAD_FROM_CC=1");
  EXPECT_NE(c.info().version.find("gcc"), std::string::npos) << c.info().version;
}

TEST(CompilerInfo, AMissingCcIsACompileError) {
  ScopedEnv cc("CC", "vkgrad-no-such-compiler");
  Compiler c("/nonexistent");
  EXPECT_TRUE(c.info().path.empty());
  EXPECT_THROW(c.compile(kAdd), CompileError);
}

TEST(CompilerCacheDir, FollowsTheEnvironment) {
  ScopedEnv home("HOME", "/h");
  {
    ScopedEnv v("VKGRAD_CACHE_DIR", "/tmp/vk-cache");
    ScopedEnv x("XDG_CACHE_HOME", "/x");
    EXPECT_EQ(Compiler::cache_dir(), "/tmp/vk-cache");
  }
  {
    ScopedEnv v("VKGRAD_CACHE_DIR", "");
    ScopedEnv x("XDG_CACHE_HOME", "/x");
    EXPECT_EQ(Compiler::cache_dir(), "/x/vkgrad");
  }
  {
    ScopedEnv v("VKGRAD_CACHE_DIR", nullptr);
    ScopedEnv x("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(Compiler::cache_dir(), "/h/.cache/vkgrad");
  }
}

TEST_F(CompilerTest, TheInstanceReadsVkgradCacheDirOnEachCompile) {
  ScopedEnv v("VKGRAD_CACHE_DIR", dir_.c_str());
  auto lib = Compiler::instance().compile(kAdd);
  EXPECT_EQ(fs::path(lib->path()).parent_path(), dir_ / "cpu");
}

}  // namespace
