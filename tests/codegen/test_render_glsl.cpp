// tests/codegen: the GLSL renderer — launch shape, grid splitting, vec4 detection, feature checks,
// and every op on every dtype compiled by glslang and checked by spirv-val.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <vkgrad/error.hpp>
#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

std::vector<Program> render(const Tensor& t, const Target& target = full_target(),
                            bool optimize = true) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  const Schedule s = build_schedule(g.key);
  std::vector<Program> out;
  for (const ScheduleKernel& k : s.kernels)
    out.push_back(codegen(k.ast, {.optimize = optimize}, target));
  return out;
}

Tensor input(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt, "CPU"); }

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

TEST(RenderGlsl, LaunchShapeAndBindings) {
  const auto ps = render(input({256, 64}) + input({256, 64}));
  ASSERT_EQ(ps.size(), 1u);
  const Program& p = ps[0];
  EXPECT_EQ(p.local_size, (std::array<uint32_t, 3>{64, 1, 1}));
  EXPECT_EQ(p.groups, (std::array<uint32_t, 3>{64, 1, 1}));  // 16384 / 4 per thread / 64
  EXPECT_EQ(p.num_buffers, 3);
  EXPECT_EQ(p.writes, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(p.push_bytes, 0u);
  EXPECT_TRUE(contains(p.source, "layout(set = 0, binding = 0, std430) restrict writeonly"));
  EXPECT_TRUE(contains(p.source, "layout(set = 0, binding = 2, std430) restrict readonly"));
  EXPECT_FALSE(contains(p.source, "if (gid >="));  // no padding
}

TEST(RenderGlsl, SmallKernelsGetSmallWorkgroups) {
  const auto ps = render(input({5}) + input({5}), full_target(), false);
  EXPECT_EQ(ps[0].local_size[0], 8u);
  EXPECT_EQ(ps[0].groups[0], 1u);
  EXPECT_TRUE(contains(ps[0].source, "if (gid >= 5) return;"));
}

TEST(RenderGlsl, LargeKernelsSplitTheGrid) {
  // 2^23 + 4 threads of one element (no upcast): more than 65535 workgroups of 64.
  const int64_t n = (int64_t{1} << 23) + 4;
  const auto ps = render(input({n}) + input({n}), full_target(), false);
  const Program& p = ps[0];
  EXPECT_GT(p.groups[1], 1u);
  EXPECT_LE(p.groups[0], 65535u);
  EXPECT_GE(int64_t{p.groups[0]} * p.groups[1] * p.local_size[0], n);
  EXPECT_TRUE(contains(p.source, "gl_WorkGroupID.y"));
  EXPECT_TRUE(contains(p.source, "if (gid >= 8388612) return;"));
  if (have_glsl_tools()) {
    EXPECT_EQ(validate_glsl_all({{"grid", p.source}}), "");
  }
}

TEST(RenderGlsl, ElementwiseUsesVec4) {
  const std::string s = render(input({64, 64}) * input({64, 64}) + input({64, 64}))[0].source;
  for (const char* v : {"data0_v4", "data1_v4", "data2_v4", "data3_v4"})
    EXPECT_TRUE(contains(s, v)) << v << "\n" << s;
}

TEST(RenderGlsl, BroadcastAndStridedLoadsStayScalar) {
  const std::string bc = render(input({64, 1}).expand({64, 64}).contiguous())[0].source;
  EXPECT_FALSE(contains(bc, "data1_v4")) << bc;
  EXPECT_TRUE(contains(bc, "data0_v4")) << bc;
  const std::string tr = render(input({64, 64}).permute({1, 0}).contiguous())[0].source;
  EXPECT_FALSE(contains(tr, "data1_v4")) << tr;
  EXPECT_TRUE(contains(tr, "data0_v4")) << tr;
}

TEST(RenderGlsl, NooptHasNoVectorsNoTiles) {
  const std::string s = render(input({64, 64}) + input({64, 64}), full_target(), false)[0].source;
  EXPECT_FALSE(contains(s, "_v4")) << s;
  EXPECT_FALSE(contains(s, "uidx")) << s;
}

TEST(RenderGlsl, MatmulGetsARegisterTile) {
  const Program p = render(input({64, 64}).matmul(input({64, 64})))[0];
  EXPECT_TRUE(contains(p.source, "data2_v4")) << p.source;  // B read as vec4
  EXPECT_TRUE(contains(p.source, "data0_v4")) << p.source;
  EXPECT_EQ(p.name, "r_64_64_64");  // named by the scheduled axes, whatever the optimizations
  // An 8 x (2 x 4) tile, k by 4 (A read as vec4s along k); 8 invocations along the columns per
  // workgroup, so that A's loads are the same in all of them.
  EXPECT_EQ(p.opts, (std::vector<Opt>{{OptOp::UPCAST, 1, 4},
                                      {OptOp::UPCAST, 1, 2},
                                      {OptOp::UPCAST, 0, 8},
                                      {OptOp::UNROLL, 0, 4},
                                      {OptOp::LOCAL, 1, 8}}));
  EXPECT_TRUE(contains(p.source, "data1_v4")) << p.source;  // A as vec4 along k
  // Each operand loaded once per step of k into registers, one accumulator per output.
  EXPECT_TRUE(contains(p.source, "vec4 ld0[8];")) << p.source;
  EXPECT_TRUE(contains(p.source, "precise float acc0[8][2][4];")) << p.source;
  EXPECT_EQ(p.local_size, (std::array<uint32_t, 3>{8, 1, 1}));
  EXPECT_EQ(p.groups, (std::array<uint32_t, 3>{8, 1, 1}));  // the rows' blocks (the columns: 1)
  EXPECT_TRUE(contains(p.source, "int lidx0 = int(gl_LocalInvocationID.x);")) << p.source;
  EXPECT_TRUE(contains(p.source, "int gidx0 = int(gl_WorkGroupID.x);")) << p.source;
  Target flat = full_target();
  flat.grid = false;
  EXPECT_EQ(render(input({64, 64}).matmul(input({64, 64})), flat)[0].opts.size(), 4u);
}

TEST(RenderGlsl, GatedLoadsAreSelectsNotBranches) {
  // A padded read: the load's index is clamped to 0 where the gate is off and the value
  // selected after it (mix), so no load sits inside a conditional.
  const Program p = render(input({4, 8}).pad({{1, 1}, {0, 0}}) * 2.0)[0];  // vec4 loads
  EXPECT_TRUE(contains(p.source, "mix(vec4(0), data1_v4[(")) << p.source;
  const Program q = render(input({4, 7}).pad({{1, 1}, {0, 0}}) * 2.0)[0];  // scalar loads
  EXPECT_TRUE(contains(q.source, "mix(0.0, data1[(")) << q.source;
  for (const Program* x : {&p, &q}) EXPECT_FALSE(contains(x->source, "? data1")) << x->source;
}

TEST(RenderGlsl, TexelLoadsWhereTheTargetWantsThem) {
  using T = Program::Texel;
  Target texel = full_target();
  texel.tuning.texel_loads = texel.tuning.texel_scalar_loads = true;
  // Scalar loads of float32, int32 and uint32 inputs (a broadcast, a transpose) and a float16
  // one; the output and the 16-bit input stay storage buffers.
  const Tensor x = input({64, 1}).expand({64, 64}) + input({64, 64}).permute({1, 0}) +
                   input({64, 1}, dtypes::int32).expand({64, 64}).cast(dtypes::float32) +
                   input({64, 1}, dtypes::uint32).expand({64, 64}).cast(dtypes::float32) +
                   input({64, 1}, dtypes::float16).expand({64, 64}).cast(dtypes::float32);
  const Program p = render(x, texel)[0];
  EXPECT_EQ(p.texel,
            (std::vector<T>{T::none, T::float32, T::float32, T::int32, T::uint32, T::none}))
      << p.source;
  EXPECT_TRUE(contains(p.source, "uniform textureBuffer data1_t;")) << p.source;
  EXPECT_TRUE(contains(p.source, "uniform itextureBuffer data3_t;")) << p.source;
  EXPECT_TRUE(contains(p.source, "uniform utextureBuffer data4_t;")) << p.source;
  EXPECT_TRUE(contains(p.source, "data1_at(")) << p.source;
  EXPECT_TRUE(contains(p.source, "buffer B5 { uint16_t data5[]; }")) << p.source;
  // Slots read as vec4s are views of 128-bit texels (an elementwise kernel's inputs).
  const Program v = render(input({64, 64}) * input({64, 64}, dtypes::int32), texel)[0];
  EXPECT_EQ(v.texel, (std::vector<T>{T::none, T::float32x4, T::int32x4})) << v.source;
  EXPECT_TRUE(contains(v.source, "data1_v4_at(")) << v.source;
  EXPECT_TRUE(contains(v.source, "#define data2_v4_at(i) texelFetch(data2_t, i)\n")) << v.source;
  // A slot read both as vec4s and as scalars (a tensor times its transpose) keeps its storage
  // buffer.
  const Tensor a = input({64, 64});
  const Program both = render(a * a.permute({1, 0}), texel)[0];
  EXPECT_TRUE(both.texel.empty()) << both.source;
  EXPECT_TRUE(contains(both.source, "data1_v4[")) << both.source;
  EXPECT_TRUE(contains(both.source, "data1[")) << both.source;
  // Vec4 fetches only (Mesa 25's lavapipe): the scalar slots keep their storage buffers.
  Target vec4_only = texel;
  vec4_only.tuning.texel_scalar_loads = false;
  EXPECT_TRUE(render(x, vec4_only)[0].texel.empty());
  EXPECT_EQ(render(input({64, 64}) * input({64, 64}, dtypes::int32), vec4_only)[0].texel,
            (std::vector<T>{T::none, T::float32x4, T::int32x4}));
  // Off by default: the same kernel reads storage buffers.
  const Program s = render(x)[0];
  EXPECT_TRUE(s.texel.empty());
  EXPECT_FALSE(contains(s.source, "textureBuffer")) << s.source;
  if (have_glsl_tools()) {  // both variants: texel buffers, and device addresses (VKG_BDA)
    EXPECT_EQ(validate_glsl_all({{"texel", p.source}, {"texel vec4", v.source}}), "");
  }
}

TEST(RenderGlsl, UniformLoadsAreSharedThroughShuffles) {
  Target sh = full_target();
  sh.tuning.share_uniform_loads = true;
  const Tensor a = input({64, 64}), b = input({64, 64});
  // The heuristics' matmul: 16 lanes along the columns, each with 16 rows of A as vec4s along k
  // (where lanes share them, rows cost little: 16 x 4 instead of 8 x 8), the same in every lane;
  // B's vec4s differ per lane.
  const Program p = render(a.matmul(b), sh)[0];
  EXPECT_EQ(p.opts, (std::vector<Opt>{{OptOp::UPCAST, 1, 4},
                                      {OptOp::UPCAST, 0, 16},
                                      {OptOp::UNROLL, 0, 4},
                                      {OptOp::LOCAL, 1, 16}}));
  EXPECT_EQ(p.local_size, (std::array<uint32_t, 3>{16, 1, 1}));
  EXPECT_TRUE(contains(p.source, "ld0[15] = subgroupShuffle(")) << p.source;
  EXPECT_TRUE(contains(p.source, "#extension GL_KHR_shader_subgroup_shuffle : require"))
      << p.source;
  EXPECT_TRUE(contains(p.source, "int(gl_SubgroupInvocationID)")) << p.source;
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(contains(p.source, fmt::format("ld0[{}] = subgroupShuffle(", i))) << p.source;
  EXPECT_FALSE(contains(p.source, "ld1[0] = subgroupShuffle(")) << p.source;
  // Rows the lanes do not divide: 12 rows, two loads per lane, the second past the last row
  // clamped to it (min, or max of negations).
  const NormalizedGraph g =
      normalize_graph(std::vector<UOp>{tensor::uop(input({48, 64}).matmul(b))});
  const UOp ast = build_schedule(g.key).kernels.at(0).ast;
  const std::vector<Opt> twelve{
      {OptOp::UPCAST, 1, 4}, {OptOp::UPCAST, 0, 12}, {OptOp::UNROLL, 0, 4}, {OptOp::LOCAL, 1, 8}};
  const Program q = codegen(ast, {.opts = twelve}, sh);
  EXPECT_TRUE(contains(q.source, "ld0[11] = subgroupShuffle(")) << q.source;
  EXPECT_TRUE(contains(q.source, "ld0[8] = subgroupShuffle(")) << q.source;
  // A workgroup of 4 lanes: each subgroup has its first 4 active, and those share (two loads
  // each for 8 rows). One of 9 lanes leaves 1 in the last subgroup: nothing to share. A flat
  // launch (no LOCAL) has lanes that return early. The last two load as before.
  const std::vector<Opt> four{{OptOp::UPCAST, 1, 4}, {OptOp::UPCAST, 0, 8}, {OptOp::LOCAL, 1, 4}};
  const Program f = codegen(ast, {.opts = four}, sh);
  EXPECT_TRUE(contains(f.source, "ld0[7] = subgroupShuffle(")) << f.source;
  EXPECT_TRUE(contains(f.source, "3u)")) << f.source;
  EXPECT_FALSE(contains(f.source, "4u)")) << f.source;
  // Lanes 4-7 load too, an element clamped into the array (min, printed as a max of negations).
  EXPECT_TRUE(contains(f.source, "max(")) << f.source;
  const NormalizedGraph g9 =
      normalize_graph(std::vector<UOp>{tensor::uop(input({48, 64}).matmul(input({64, 72})))});
  const UOp ast9 = build_schedule(g9.key).kernels.at(0).ast;
  const std::vector<Opt> nine{{OptOp::UPCAST, 1, 4}, {OptOp::UPCAST, 0, 8}, {OptOp::LOCAL, 1, 9}};
  EXPECT_FALSE(contains(codegen(ast9, {.opts = nine}, sh).source, "subgroupShuffle"));
  const std::vector<Opt> flat{{OptOp::UPCAST, 1, 4}, {OptOp::UPCAST, 0, 8}};
  EXPECT_FALSE(contains(codegen(ast, {.opts = flat}, sh).source, "subgroupShuffle"));
  // Off by default.
  EXPECT_FALSE(contains(render(a.matmul(b))[0].source, "subgroupShuffle"));
  if (have_glsl_tools()) {
    EXPECT_EQ(validate_glsl_all({{"8", p.source}, {"12", q.source}, {"4", f.source}}), "");
  }
}

TEST(RenderGlsl, FewLongReductionsAreGrouped) {
  const Program p = render(input({4, 4096}).sum(1))[0];
  EXPECT_TRUE(contains(p.source, "barrier();")) << p.source;
  EXPECT_TRUE(contains(p.source, "shared float")) << p.source;
  // A sum folds within subgroups first, where the device has subgroup arithmetic: one barrier.
  EXPECT_TRUE(contains(p.source, "subgroupAdd(red0)")) << p.source;
  EXPECT_EQ(p.source.find("barrier();"), p.source.rfind("barrier();")) << p.source;
  Target no_subgroups = full_target();
  no_subgroups.subgroup_arithmetic = false;
  const Program q = render(input({4, 4096}).sum(1), no_subgroups)[0];
  EXPECT_FALSE(contains(q.source, "subgroup")) << q.source;
  // The pairwise tree: a barrier after the lanes' stores and after each of log2(256) steps.
  size_t barriers = 0;
  for (size_t at = q.source.find("barrier();"); at != std::string::npos;
       at = q.source.find("barrier();", at + 1))
    ++barriers;
  EXPECT_EQ(barriers, 9u) << q.source;
  // A max keeps the shared-memory tree (its NaN rule is the renderer's, not subgroupMax's).
  EXPECT_FALSE(contains(render(input({4, 4096}).max(1))[0].source, "subgroup"));
  EXPECT_EQ(p.groups[0], 4u);
  EXPECT_EQ(p.local_size[0], 256u);
  Target no_shared = full_target();
  no_shared.local_memory = false;
  EXPECT_FALSE(contains(render(input({4, 4096}).sum(1), no_shared)[0].source, "barrier"));
}

TEST(RenderGlsl, MissingFeaturesThrowDTypeError) {
  Target t = full_target();
  t.float64 = false;
  try {
    render(input({4}, dtypes::float64) + input({4}, dtypes::float64), t);
    FAIL() << "no DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_TRUE(contains(e.what(), "shaderFloat64")) << e.what();
    EXPECT_TRUE(contains(e.what(), "VKGRAD_VK_DISABLE")) << e.what();
  }
  t = full_target();
  t.int64 = false;
  EXPECT_THROW(render(input({4}, dtypes::int64) + input({4}, dtypes::int64), t), DTypeError);
  EXPECT_THROW(render(input({4}, dtypes::int32).cast(dtypes::uint64).sum(), t), DTypeError);
  t = full_target();
  t.storage8 = false;
  EXPECT_THROW(render(input({4}) < input({4}), t), DTypeError);
  t = full_target();
  t.storage16 = false;
  EXPECT_THROW(render(input({4}, dtypes::float16) + input({4}, dtypes::float16), t), DTypeError);
}

// The narrowing_cast quirk (src/vk/quirks.hpp): a float64 -> float32 cast goes through an xor
// with a zero the driver cannot prove zero; other casts render as before, and the GLSL compiles.
TEST(RenderGlsl, OpaqueNarrowingCasts) {
  Target t = full_target();
  t.opaque_narrowing = true;
  const Tensor x = input({8}, dtypes::float64).cast(dtypes::float32).cast(dtypes::float64);
  const std::string plain = render(x)[0].source, opaque = render(x, t)[0].source;
  const std::string xor_zero = "^ uint(gl_WorkGroupID.x >= gl_NumWorkGroups.x)";
  EXPECT_FALSE(contains(plain, xor_zero)) << plain;
  EXPECT_TRUE(contains(opaque, "uintBitsToFloat(floatBitsToUint(float(")) << opaque;
  EXPECT_TRUE(contains(opaque, xor_zero)) << opaque;
  // (A float64 -> float16 cast narrows to float32 first, so it takes the xor too.)
  const Tensor y = input({8}, dtypes::float32).cast(dtypes::float64) +
                   input({8}, dtypes::int32).cast(dtypes::float16).cast(dtypes::float64);
  EXPECT_EQ(render(y)[0].source, render(y, t)[0].source);
  if (have_glsl_tools()) {
    EXPECT_EQ(validate_glsl_all({{"opaque narrowing", opaque}}), "");
  }
}

// Every op on every dtype renders to GLSL that glslang compiles and spirv-val accepts. Ops are
// chained so that a few kernels per dtype cover them all (an op the dtype lacks is skipped).
TEST(RenderGlsl, EveryOpAndDtypeCompiles) {
  if (!have_glsl_tools()) GTEST_SKIP() << "glslangValidator or spirv-val not on PATH";
  const DType all[] = {dtypes::bool_,  dtypes::int8,    dtypes::uint8,    dtypes::int16,
                       dtypes::uint16, dtypes::int32,   dtypes::uint32,   dtypes::int64,
                       dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                       dtypes::float64};
  std::vector<std::pair<std::string, std::string>> srcs;
  auto add = [&](const std::string& what, const Tensor& t) {
    for (const Program& p : render(t)) srcs.emplace_back(what, p.source);
  };
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<Op> ops = {
      [](const Tensor& x, const Tensor& b) { return x - b; },
      [](const Tensor& x, const Tensor& b) { return x * b; },
      [](const Tensor& x, const Tensor&) { return -x; },
      [](const Tensor& x, const Tensor& b) { return x.maximum(b); },
      [](const Tensor& x, const Tensor& b) { return (x < b).where(x, b); },
      [](const Tensor& x, const Tensor& b) { return (x == b).where(x, b); },
      [](const Tensor& x, const Tensor& b) { return (x != b).where(b, x); },
      [](const Tensor& x, const Tensor& b) { return x.div(b, "trunc"); },
      [](const Tensor& x, const Tensor& b) { return x.mod(b); },
      [](const Tensor& x, const Tensor& b) { return (x & b) | (x ^ b); },
      [](const Tensor& x, const Tensor& b) { return x.lshift(b).rshift(b); },
      [](const Tensor& x, const Tensor& b) { return x / b; },
      [](const Tensor& x, const Tensor&) { return x.exp2() + x.log2(); },
      [](const Tensor& x, const Tensor&) { return x.sin() + x.sqrt(); },
      [](const Tensor& x, const Tensor&) { return x.trunc() + x.reciprocal(); },
  };
  for (DType d : all) {
    auto a = [d] { return input({8, 64}, d); };
    Tensor x = a() + a();
    for (const Op& op : ops) try {
        if (op(x, a()).dtype() == d) x = op(x, a());
      } catch (const Error&) {
      }
    add(d.name() + " ops", x);
    add(d.name() + " sum", a().sum(1));
    add(d.name() + " max", a().max(1));
    add(d.name() + " grouped sum", input({2, 1024}, d).sum(1));
    add(d.name() + " grouped max", input({2, 1024}, d).max(1));
    try {
      add(d.name() + " matmul", a().matmul(input({64, 8}, d)));
    } catch (const Error&) {
    }
    add(d.name() + " padded", a().pad({{1, 1}, {0, 4}}).contiguous());
    Tensor from = a().cast(dtypes::float64), into = a().cast(dtypes::float64);
    for (DType to : all) {
      from = from + a().cast(to).cast(dtypes::float64);
      into = into + input({8, 64}, to).cast(d).cast(dtypes::float64);
    }
    add(d.name() + " casts from", from);
    add(d.name() + " casts into", into);
    for (DType to : all)
      if (to.itemsize() == d.itemsize() && to != d && !d.is_bool() && !to.is_bool())
        add(d.name() + " bitcast to " + to.name(), a().bitcast(to) + a().bitcast(to));
  }
  EXPECT_EQ(validate_glsl_all(srcs), "");
}

}  // namespace
}  // namespace vkgrad
