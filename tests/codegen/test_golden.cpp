// tests/codegen: golden C and GLSL for canonical kernels. The renderers' output for each kernel
// below must match tests/codegen/golden/<name>.c / <name>.comp byte for byte; regenerate with
// tools/regen_golden.sh (never edit the files by hand) and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

std::string golden_path(const std::string& name, const std::string& ext) {
  return std::string(VKGRAD_SOURCE_DIR) + "/tests/codegen/golden/" + name + ext;
}

// Every kernel of the tensor's schedule, rendered (optimized, or with `opts` where given) and
// concatenated.
std::string render_all(const Tensor& t, bool glsl, const CodegenOptions& opts) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  const Schedule s = build_schedule(g.key);
  std::string out;
  for (const ScheduleKernel& k : s.kernels)
    out += glsl ? codegen(k.ast, opts, full_target()).source
                : codegen(k.ast, opts, cpu::host_target()).source;
  return out;
}

void check_golden(const std::string& name, const Tensor& t, bool glsl,
                  const CodegenOptions& opts = {}) {
  const std::string path = golden_path(name, glsl ? ".comp" : ".c");
  const std::string got = render_all(t, glsl, opts);
  if (std::getenv("VKGRAD_REGEN_GOLDEN")) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "regenerated " << path;
  }
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << "missing " << path << " (run tools/regen_golden.sh)";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(got, want.str()) << "rendered source for " << name << " changed; if intended, run "
                             << "tools/regen_golden.sh and review the diff";
}

Tensor input(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt, "CPU"); }

// The canonical kernels, each checked as C and as GLSL (with the heuristics' Opts, or for the
// GPU with `gpu_opts` where given).
struct Canonical {
  const char* name;
  Tensor (*make)();
  std::vector<Opt> (*gpu_opts)() = nullptr;
};
// GoogleTest prints a case by its name, so the test names CTest sees are the same in every build
// (not the struct's bytes, pointers included).
[[maybe_unused]] void PrintTo(const Canonical& c, std::ostream* os) { *os << c.name; }
const Canonical kCanonical[] = {
    {"elementwise_add",
     [] {
       return input({25, 4}) + input({25, 4});
     }},
    {"sum_rows",
     [] {
       return input({16, 32}).sum(1);
     }},
    {"matmul",
     [] {
       return input({8, 32}).matmul(input({32, 16}));
     }},
    {"padded_flipped_view",
     [] {
       return input({5, 3}).permute({1, 0}).pad({{1, 1}, {2, 0}}).flip(1).contiguous();
     }},
    {"softmax",
     [] {
       return input({4, 10}).softmax(-1);
     }},
    {"int_division",
     [] { return input({7}, dtypes::int32).div(input({7}, dtypes::int32), "trunc"); }},
    // A packed, blocked GEMM on the CPU (2^21 multiply-adds); a register tile on the GPU.
    {"gemm",
     [] {
       return input({64, 256}).matmul(input({256, 128})).relu();
     }},
    // A grouped reduction on the GPU (few outputs, a long reduction); split accumulators in C.
    {"grouped_sum",
     [] {
       return input({4, 4096}).sum(1);
     }},
    // A 2-D workgroup set by LOCAL on the GPU: the grid's and the workgroup's coordinates.
    {"local_split",
     [] {
       return input({48, 20}) * 2.0 + 1.0;
     },
     [] {
       return std::vector<Opt>{{OptOp::LOCAL, 1, 4}, {OptOp::LOCAL, 0, 8}};
     }},
    // A symbolic outer axis: its size is read from the variable when the kernel runs.
    {"symbolic_rows",
     [] {
       return input({20, 24}).symbolic(0, Variable("n", 1, 32).bind(20)).sum(1) * 3.0;
     }},
};

class Golden : public testing::TestWithParam<Canonical> {};
TEST_P(Golden, C) { check_golden(GetParam().name, GetParam().make(), false); }
TEST_P(Golden, Glsl) {
  CodegenOptions opts;
  if (GetParam().gpu_opts) opts.opts = GetParam().gpu_opts();
  check_golden(GetParam().name, GetParam().make(), true, opts);
}
INSTANTIATE_TEST_SUITE_P(Canonical, Golden, testing::ValuesIn(kCanonical),
                         [](const testing::TestParamInfo<Canonical>& i) {
                           return std::string(i.param.name);
                         });

// Every golden shader compiles with glslang and passes spirv-val, in both buffer variants.
TEST(GoldenGlsl, CompilesAndValidates) {
  if (!have_glsl_tools()) GTEST_SKIP() << "glslangValidator or spirv-val not on PATH";
  std::vector<std::pair<std::string, std::string>> srcs;
  for (const Canonical& c : kCanonical) {
    std::ifstream f(golden_path(c.name, ".comp"));
    ASSERT_TRUE(f.good()) << c.name;
    std::stringstream src;
    src << f.rdbuf();
    // A golden file may hold several kernels; each starts at its #version line.
    const std::string all = src.str();
    for (size_t at = 0; at < all.size();) {
      size_t next = all.find("#version", at + 1);
      if (next == std::string::npos) next = all.size();
      srcs.emplace_back(c.name, all.substr(at, next - at));
      at = next;
    }
  }
  EXPECT_EQ(validate_glsl_all(srcs), "");
}

}  // namespace
}  // namespace vkgrad
