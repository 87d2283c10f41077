// tests/codegen: kernels with symbolic sizes (DEFINE_VAR) — Program::vars and launch_size, the
// rendered C and GLSL (which glslang and spirv-val accept), names, and optimizations that leave
// symbolic ranges whole.
#include <gtest/gtest.h>

#include <vkgrad/error.hpp>

#include "codegen/language.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "symbolic_kernels.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

using namespace symbolic_kernels;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// The symbolic ranges of an optimized kernel, as (type, end) pairs.
std::vector<std::pair<AxisType, UOp>> symbolic_ranges(const UOp& ast) {
  std::vector<std::pair<AxisType, UOp>> out;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE && range_size(u) < 0)
      out.emplace_back(u.arg_as<AxisArg>().type, u.src(0));
  return out;
}

TEST(RenderVars, ProgramListsTheVariables) {
  for (const Case& c : all_cases()) {
    const Program p = codegen(c.ast, {}, cpu::host_target());
    ASSERT_EQ(p.vars.size(), 1u) << c.name;
    EXPECT_EQ(p.vars[0], (VarArg{"n", kMin, kMax})) << c.name;
    const Program g = codegen(c.ast, {}, full_target());
    EXPECT_EQ(g.vars, p.vars) << c.name;
    EXPECT_EQ(g.push_bytes, 4u) << c.name;
  }
}

TEST(RenderVars, VariablesAreSortedByName) {
  const UOp rows = UOp::variable("rows", 1, 64), cols = UOp::variable("cols", 1, 64);
  const UOp i = UOp::range(rows, 0, AxisType::global), j = UOp::range(cols, 1, AxisType::global);
  const UOp flat = i * cols + j;
  const UOp ast =
      UOp::sink({buffer(0, 4096).index(flat).store(buffer(1, 4096).index(flat).load() + 1.0)});
  const Program p = codegen(ast, {}, cpu::host_target());
  ASSERT_EQ(p.vars.size(), 2u);
  EXPECT_EQ(p.vars[0].name, "cols");
  EXPECT_EQ(p.vars[1].name, "rows");
  EXPECT_TRUE(contains(p.source, "const int64_t var_cols = vars[0];")) << p.source;
  EXPECT_TRUE(contains(p.source, "const int64_t var_rows = vars[1];")) << p.source;
  EXPECT_EQ(p.name, "E_rows_cols");
  const Program g = codegen(ast, {}, full_target());
  EXPECT_TRUE(contains(g.source, "int var_cols = pc.vars[0];")) << g.source;
  EXPECT_TRUE(contains(g.source, "int var_rows = pc.vars[1];")) << g.source;
  EXPECT_EQ(g.push_bytes, 8u);
  if (have_glsl_tools()) {
    EXPECT_EQ(validate_glsl_all({{"two vars", g.source}}), "");
  }
}

TEST(RenderVars, OneNameWithTwoBoundsIsAnInternalError) {
  const UOp a = UOp::variable("n", 1, 10), b = UOp::variable("n", 1, 20);
  const UOp i = UOp::range(a, 0, AxisType::global);
  const UOp ast = UOp::sink(
      {buffer(0, 20).index(i).store(buffer(1, 20).index(i).load() * b.cast(dtypes::float32))});
  EXPECT_THROW(codegen(ast, {}, cpu::host_target()), InternalError);
  EXPECT_THROW(codegen(ast, {}, full_target()), InternalError);
}

TEST(RenderVars, NamesBecomeIdentifiers) {
  EXPECT_EQ(c_identifier("n"), "n");
  EXPECT_EQ(c_identifier("batch size"), "batch_size");
  EXPECT_EQ(c_identifier("__start-pos__"), "start_pos");
  EXPECT_EQ(c_identifier("a__b"), "a_b");
  EXPECT_EQ(c_identifier("+"), "v");
  const UOp n = UOp::variable("start pos", 1, 8);
  const UOp i = UOp::range(n, 0, AxisType::global);
  const UOp ast = UOp::sink({buffer(0, 8).index(i).store(buffer(1, 8).index(i).load())});
  const Program p = codegen(ast, {}, cpu::host_target());
  EXPECT_EQ(p.name, "E_start_pos");
  EXPECT_TRUE(contains(p.source, "const int64_t var_start_pos = vars[0];")) << p.source;
}

TEST(RenderVars, CLoopsReadTheVariable) {
  const Program p = codegen(row_sums().ast, {}, cpu::host_target());
  EXPECT_EQ(p.name, "r_n_16");  // named by the scheduled axes
  // The constant reduction is still split into accumulators.
  EXPECT_EQ(p.opts, (std::vector<Opt>{{OptOp::UNROLL, 0, 8}}));
  EXPECT_TRUE(contains(p.source, "const int64_t var_n = vars[0];")) << p.source;
  EXPECT_FALSE(contains(p.source, "(void)vars;")) << p.source;
  EXPECT_EQ(p.parallel_size, kMax);
  ASSERT_TRUE(p.launch_size);
  EXPECT_EQ(evaluate_size(p.launch_size, p.vars, std::vector<int64_t>{37}), 37);

  const Program s = codegen(scaled_columns().ast, {}, cpu::host_target());
  EXPECT_TRUE(contains(s.source, "gidx1 < var_n;")) << s.source;
  EXPECT_FALSE(s.launch_size);  // the outermost axis is constant
  EXPECT_EQ(s.parallel_size, 4);

  const Program r = codegen(sum().ast, {}, cpu::host_target());
  EXPECT_TRUE(contains(r.source, "ridx0 < var_n;")) << r.source;
}

TEST(RenderVars, GlslReadsPushConstantsAndSizesTheGridPerLaunch) {
  const Program p = codegen(elementwise().ast, {.optimize = false}, full_target());
  EXPECT_EQ(p.name, "E_n");
  EXPECT_TRUE(contains(p.source, "layout(push_constant) uniform Vars { int vars[1]; } pc;"))
      << p.source;
  EXPECT_TRUE(contains(p.source, "uniform Addrs { uvec2 addr[2]; int vars[1]; } pc;")) << p.source;
  EXPECT_TRUE(contains(p.source, "gl_NumWorkGroups.x")) << p.source;
  EXPECT_TRUE(contains(p.source, "if (gid >= var_n) return;")) << p.source;
  EXPECT_EQ(p.local_size[0], 64u);
  EXPECT_EQ(p.groups[0], 16u);  // at n's maximum: 1000 / 64, rounded up
  ASSERT_TRUE(p.launch_size);
  for (int64_t n : {1, 64, 65, 1000})
    EXPECT_EQ(evaluate_size(p.launch_size, p.vars, std::vector<int64_t>{n}), (n + 63) / 64);

  // The outer axis is the invocation index divided by n (the inner one, gid % n, only served the
  // index: the store and the load are at gid itself).
  const Program s = codegen(scaled_columns().ast, {}, full_target());
  EXPECT_TRUE(contains(s.source, " = (gid / var_n);")) << s.source;
  EXPECT_TRUE(contains(s.source, "data0[gid] = ")) << s.source;
}

TEST(RenderVars, LaunchSizeEvaluatesAndValuesAreChecked) {
  const std::vector<VarArg> vars{{"m", 0, 4}, {"n", 1, 10}};
  const UOp e = UOp::variable("m", 0, 4) * UOp::variable("n", 1, 10) + 3;
  EXPECT_EQ(evaluate_size(e, vars, std::vector<int64_t>{2, 7}), 17);
  EXPECT_NO_THROW(check_var_values("k", vars, std::vector<int64_t>{0, 10}));
  try {
    check_var_values("E_n", vars, std::vector<int64_t>{0, 11});
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_TRUE(contains(err.what(), "E_n")) << err.what();
    EXPECT_TRUE(contains(err.what(), "'n'")) << err.what();
  }
  EXPECT_THROW(check_var_values("k", vars, std::vector<int64_t>{1}), Error);
  const uint32_t caps[3] = {65535, 65535, 65535};
  EXPECT_EQ(group_grid(0, caps), (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(group_grid(70000, caps), (std::array<uint32_t, 3>{35000, 2, 1}));
}

TEST(RenderVars, OptimizationsNeverSplitASymbolicRange) {
  for (const Case& c : all_cases()) {
    const UOp k = simplify(c.ast);
    const auto before = symbolic_ranges(k);
    ASSERT_FALSE(before.empty()) << c.name;
    const Target cpu = cpu::host_target(), gpu_target = full_target();
    EXPECT_EQ(symbolic_ranges(apply_opts(k, heuristic_opts(k, cpu), cpu)), before) << c.name;
    const std::vector<Opt> opts = heuristic_opts(k, gpu_target);
    // GROUP flattens every reduce range into lanes and steps, the last step gated: no split.
    if (!opts.empty() && opts[0].op == OptOp::GROUP) continue;
    const auto gpu = symbolic_ranges(apply_opts(k, opts, gpu_target));
    ASSERT_EQ(gpu.size(), before.size()) << c.name;
    for (size_t i = 0; i < gpu.size(); ++i) EXPECT_EQ(gpu[i].second, before[i].second) << c.name;
  }
  // The constant axis beside a symbolic one is still optimized: vec4 on the GPU.
  EXPECT_TRUE(contains(codegen(rows_plus_bias().ast, {}, full_target()).source, "data0_v4"));
}

TEST(RenderVars, FewOutputsOfASymbolicReductionReduceInAWorkgroup) {
  const Program p = codegen(sum().ast, {}, full_target());
  EXPECT_EQ(p.local_size[0], 256u);
  EXPECT_FALSE(p.launch_size);  // one output: one workgroup whatever n is
  // ceil(n / 256) steps per lane; the last one reads in range only where it is below n.
  EXPECT_TRUE(contains(p.source, " < ((var_n + 255) / 256); ")) << p.source;
  EXPECT_TRUE(contains(p.source, " < var_n);")) << p.source;
}

TEST(RenderVars, EveryCaseCompilesWithGlslang) {
  if (!have_glsl_tools()) GTEST_SKIP() << "glslangValidator or spirv-val not on PATH";
  std::vector<std::pair<std::string, std::string>> srcs;
  for (const Case& c : all_cases())
    for (bool optimize : {true, false})
      srcs.emplace_back(c.name + (optimize ? "" : " NOOPT"),
                        codegen(c.ast, {.optimize = optimize}, full_target()).source);
  EXPECT_EQ(validate_glsl_all(srcs), "");
}

TEST(RenderVars, AVariableBeyondInt32IsRefusedByTheGlslRenderer) {
  const UOp n = UOp::variable("n", 1, int64_t{1} << 33);
  const UOp i = UOp::range(4, 0, AxisType::global);
  const UOp ast = UOp::sink(
      {buffer(0, 4).index(i).store(buffer(1, 4).index(i).load() * n.cast(dtypes::float32))});
  EXPECT_THROW(codegen(ast, {}, full_target()), DeviceError);
  EXPECT_NO_THROW(codegen(ast, {}, cpu::host_target()));
}

}  // namespace
}  // namespace vkgrad
