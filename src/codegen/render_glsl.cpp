// codegen: print a kernel's linear list (linearize.hpp) as a Vulkan GLSL 450 compute shader.
//
// Launch (planned by plan_launch and made SPECIALs by gpu_dims, launch.cpp): on a grid,
// gidx<d> and lidx<d> are gl_WorkGroupID and gl_LocalInvocationID's coordinates. Otherwise the
// global ranges are digits of SPECIAL("gid") and the printer defines the flat invocation index
//   gid = (gl_WorkGroupID.x + gl_WorkGroupID.y * groups.x + gl_WorkGroupID.z * groups.x *
//          groups.y) * local_size.x + gl_LocalInvocationID.x
// and padding invocations return.
// A kernel whose index space depends on its variables (Program::launch_size) reads the grid's
// shape from gl_NumWorkGroups instead of baking it in, since the runtime sizes the grid per
// launch, and always returns past the symbolic total. Variables are push constants `int
// vars[]` (after the device addresses in the VKG_BDA variant), so their bounds must fit int32.
// A grouped reduction (group_reductions, group.cpp) gives each workgroup one output: its global
// ranges are digits of SPECIAL("wgid"), the workgroup's flat index, and its lanes are lidx0. Its
// fold arrives as nodes: shared memory (DEFINE_LOCAL i is `shared T vkg_shared<i>[n]`), gated
// stores, barriers, and subgroup operations as CUSTOM text.
// Index math is `int`: a kernel's index space must fit in int32 (plan_launch checks it).
//
// Buffers: slot i is `data<i>[]` in binding i of set 0 (`restrict readonly`, slot 0 `restrict
// writeonly`). With `#define VKG_BDA 1` prepended, the same names are buffer references whose
// addresses come in a push-constant array `uvec2 addr[num_buffers]` (for buffers beyond
// maxStorageBufferRange). A vector access (fold_vectors: a LOAD of vec4 dtype, a STORE along a
// range) goes through an aliasing block `data<i>_v4[]`; the buffer's binding offset (or address)
// must then be 16-byte aligned. Where the target asks for texel loads (Target::texel_loads), a
// read-only slot of 32-bit elements read only as vec4s, or (texel_scalar_loads) only as scalars,
// is instead a uniform texel buffer `data<i>_t` (Program::texel: the runtime binds a view of the
// buffer with 32-bit or 128-bit texels), read as data<i>_at(index) or data<i>_v4_at(index):
// texelFetch in the descriptor variant, the buffer reference in the VKG_BDA one.
//
// Semantics are the C renderer's: signed integers wrap (as SPIR-V's do), small integers compute
// in 32 bits and wrap after every operation, division truncates and MOD takes the dividend's sign
// (never GLSL's `%` on signed values), float16/bfloat16 arrive as float32 values and uint16 bits
// (lower_halves). Division guards, shifts and float max arrive
// written out by decompose. Literals are exact: floats that do not survive a decimal round trip
// are written as their bits.
//
// Transcendentals: sqrt and trunc are GLSL's. exp2, log2 and sin arrive as arithmetic
// (decompose_transcendentals), since GLSL promises little for float32 (exp2: 3 + 2|x| ULP; log2:
// 2^-21 absolute near 1, which is 100% relative error for log2(1 + 2^-22); sin: 2^-11 absolute on
// [-pi, pi] only) and has none for float64; GLSL's float32 ones are printed only for a target that
// declares them native.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <vkgrad/error.hpp>

#include "codegen/glsl_functions.hpp"
#include "codegen/language.hpp"
#include "codegen/linearize.hpp"
#include "codegen/passes.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

bool is_small_int(DType d) { return d.is_int() && d != dtypes::index && d.itemsize() < 4; }

// GLSL's types: computed in (small integers in 32 bits), stored in (no half types: lower_halves).
constexpr TypeTable kGlslTypes = [] {
  TypeTable t{};
  auto row = [&](ScalarType s, const char* c, const char* st) {
    t[static_cast<size_t>(s)] = {c, st, c};
  };
  row(ScalarType::bool_, "bool", "uint8_t");
  row(ScalarType::int8, "int", "int8_t");
  row(ScalarType::uint8, "uint", "uint8_t");
  row(ScalarType::int16, "int", "int16_t");
  row(ScalarType::uint16, "uint", "uint16_t");
  row(ScalarType::int32, "int", "int");
  row(ScalarType::uint32, "uint", "uint");
  row(ScalarType::int64, "int64_t", "int64_t");
  row(ScalarType::uint64, "uint64_t", "uint64_t");
  row(ScalarType::float32, "float", "float");
  row(ScalarType::float64, "double", "double");
  row(ScalarType::index, "int", "int");
  return t;
}();
std::string glsl_type(DType d) { return type_names(kGlslTypes, d, "render_glsl").compute; }
std::string storage_type(DType d) { return type_names(kGlslTypes, d, "render_glsl").storage; }
std::string vec4_type(DType d) {
  return d.scalar() == dtypes::float32 ? "vec4" : d.scalar() == dtypes::int32 ? "ivec4" : "uvec4";
}
std::string zero_of(DType d) {
  const std::string t = glsl_type(d);
  if (t == "bool") return "false";
  if (t == "int") return "0";
  if (t == "uint") return "0u";
  if (t == "int64_t") return "0l";
  if (t == "uint64_t") return "0ul";
  if (t == "double") return "0.0lf";
  return "0.0";
}

// Wrap a 32-bit result to a small integer type, as C's conversion does.
std::string wrap(DType d, const std::string& x) {
  if (!is_small_int(d)) return x;
  const int bits = d.itemsize() * 8;
  if (d.is_unsigned()) return fmt::format("({} & {}u)", x, (1u << bits) - 1);
  return fmt::format("bitfieldExtract({}, 0, {})", x, bits);
}

std::string float_literal(double v, DType d) {
  if (d.scalar() == dtypes::float64) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    if (!std::isfinite(v) || (v == 0 && std::signbit(v)))
      return fmt::format("packDouble2x32(uvec2({}u, {}u))", static_cast<uint32_t>(bits),
                         static_cast<uint32_t>(bits >> 32));
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    s += "lf";
    return v < 0 ? "(" + s + ")" : s;
  }
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  auto as_bits = [&] { return fmt::format("uintBitsToFloat(0x{:08x}u)", bits); };
  if (!std::isfinite(f) || (f == 0 && std::signbit(f))) return as_bits();
  std::string s = fmt::format("{}", f);
  // glslang reads a literal as a double and rounds it to float: keep it only if that is exact.
  const float back = static_cast<float>(std::strtod(s.c_str(), nullptr));
  if (std::memcmp(&back, &f, 4) != 0) return as_bits();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f < 0 ? "(" + s + ")" : s;
}

std::string int_literal(int64_t i, DType d) {
  const std::string t = glsl_type(d);
  if (t == "bool") return i ? "true" : "false";
  if (t == "uint") return fmt::format("{}u", static_cast<uint32_t>(i));
  if (t == "uint64_t") return fmt::format("{}ul", static_cast<uint64_t>(i));
  if (t == "int64_t") {
    if (i == INT64_MIN) return "(-9223372036854775807l - 1l)";
    return i < 0 ? fmt::format("({}l)", i) : fmt::format("{}l", i);
  }
  if (i < INT32_MIN || i > INT32_MAX)
    throw InternalError(fmt::format("render_glsl: index constant {} exceeds int32", i));
  if (i == INT32_MIN) return "(-2147483647 - 1)";
  return i < 0 ? fmt::format("({})", i) : fmt::format("{}", i);
}

std::string const_literal(const UOp& c) {
  const DType d = c.dtype();
  const ConstValue v = c.const_value();
  if (d.is_float()) return float_literal(std::get<double>(v), d);
  if (d.is_bool()) return std::get<bool>(v) ? "true" : "false";
  return int_literal(std::get<int64_t>(v), d);
}

class GlslRenderer : public Printer {
 public:
  GlslRenderer(const UOp& ast, const std::string& name, const Target& target)
      : Printer(ast), topo_(toposort(ast)), name_(name), target_(target) {}

  void render(Program& p, const std::vector<UOp>& list) {
    check_features(list);
    texel_ = &p.texel;
    std::string body = launch_prologue(p);
    const std::vector<UOp> bufs = bindings();
    const int n = bufs.empty() ? 0 : static_cast<int>(bufs.back().arg_as<int64_t>()) + 1;
    if (!p.texel.empty()) extensions_.push_back("GL_EXT_samplerless_texture_functions");
    Names names;
    print(list, 1, body, names);

    std::string src = preamble(p);
    std::string bda, bound;
    declare_buffers(bufs, bda, bound);
    src += "#ifdef VKG_BDA\n";
    const std::string var_block = vars_.empty() ? "" : fmt::format(" int vars[{}];", vars_.size());
    src += fmt::format("layout(push_constant) uniform Addrs {{ uvec2 addr[{}];{} }} pc;\n",
                       std::max(n, 1), var_block);
    src += bda + "#else\n";
    if (!vars_.empty())
      src += fmt::format("layout(push_constant) uniform Vars {{{} }} pc;\n", var_block);
    src += bound + "#endif\n";
    for (const UOp& u : topo_)
      if (u.op() == Ops::DEFINE_LOCAL)
        src += fmt::format("shared {} vkg_shared{}[{}];\n", type(u.dtype().base()),
                           u.arg_as<int64_t>(), u.dtype().size());
    src += glsl_functions(helpers_);
    src += fmt::format("// {}\nvoid main() {{\n{}}}\n", name_, body);
    p.source = std::move(src);
  }

 private:
  // --- the shader's parts ---
  // The launch was planned by the pipeline (plan_launch): the workgroup size, the grid and,
  // for a symbolic index space, the per-launch size.
  // gid: the flat invocation index (gpu_dims), its size the kernel's index space; or the
  // grid's coordinates gidx<d> and lidx<d>.
  // wgid: a grouped reduction's flat workgroup index, its lanes lidx0.
  // The start of main's body: the variables, then the launch's indices.
  std::string launch_prologue(const Program& p) const {
    UOp total = UOp::const_(dtypes::index, int64_t{1});
    std::vector<UOp> grid;
    bool grouped = false;
    for (const UOp& u : topo_)
      if (u.op() == Ops::SPECIAL) {
        const std::string& n = u.arg_as<std::string>();
        if (n == "gid" || n == "wgid")
          total = u.src(0);
        else
          grid.push_back(u);
        grouped = grouped || n == "wgid";
      }
    const bool symbolic = !total.is_const();
    const uint32_t local = p.local_size[0];
    std::string body;
    // Variables are push constants, read once.
    for (size_t i = 0; i < vars_.size(); ++i) {
      const std::string T = glsl_type(vars_[i].dtype());
      body += fmt::format(
          "  {} {} = {};\n", T, var_names_[i],
          T == "int" ? fmt::format("pc.vars[{}]", i) : fmt::format("{}(pc.vars[{}])", T, i));
    }
    if (!grid.empty() && !grouped) {
      std::sort(grid.begin(), grid.end(), [](const UOp& a, const UOp& b) {
        return a.arg_as<std::string>() < b.arg_as<std::string>();
      });
      for (const UOp& u : grid) {
        const std::string& n = u.arg_as<std::string>();
        const char* builtin = n[0] == 'g' ? "gl_WorkGroupID" : "gl_LocalInvocationID";
        body += fmt::format("  int {} = int({}.{});\n", n, builtin, "xyz"[n.back() - '0']);
      }
    } else {
      const int64_t launched =
          int64_t{p.groups[0]} * p.groups[1] * p.groups[2] * (grouped ? 1 : int64_t{local});
      const bool padded = launched != total.vmax();
      // A symbolic launch's grid is chosen per launch: the shader reads its shape.
      const std::string wg =
          symbolic           ? "int(gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + "
                               "gl_NumWorkGroups.y * gl_WorkGroupID.z))"
          : p.groups[1] == 1 ? "int(gl_WorkGroupID.x)"
          : p.groups[2] == 1
              ? fmt::format("(int(gl_WorkGroupID.x) + int(gl_WorkGroupID.y) * {})", p.groups[0])
              : fmt::format(
                    "(int(gl_WorkGroupID.x) + int(gl_WorkGroupID.y) * {} + "
                    "int(gl_WorkGroupID.z) * {})",
                    p.groups[0], p.groups[0] * p.groups[1]);
      if (grouped) {
        body += fmt::format("  int wgid = {};\n", wg);
        body += "  int lidx0 = int(gl_LocalInvocationID.x);\n";
      } else {
        body += fmt::format("  int gid = {} * {} + int(gl_LocalInvocationID.x);\n", wg, local);
      }
      // (a whole workgroup returns or none: no barrier waits for a lane that left)
      if (padded || symbolic)
        body += fmt::format("  if ({} >= {}) return;\n", grouped ? "wgid" : "gid",
                            inline_expr(total, {}));
    }
    return body;
  }
  // One binding per slot: a slot also seen as vec4 elements (a vector DEFINE_GLOBAL) gets an
  // aliasing vec4 block beside its scalar one; a texel buffer where the pipeline said so
  // (plan_texels; the BDA variant keeps addresses).
  // The slots' buffers (scalar pointers), by slot; notes the vec4 slots.
  std::vector<UOp> bindings() {
    std::map<int64_t, UOp> by_slot;
    for (const UOp& u : topo_)
      if (u.op() == Ops::DEFINE_GLOBAL) {
        const int64_t slot = u.arg_as<int64_t>();
        if (u.dtype().base().count() > 1) vec_slots_[slot] = true;
        by_slot.emplace(slot, UOp::define_global(u.dtype().base().scalar().ptr(), slot));
      }
    std::vector<UOp> bufs;
    for (const auto& [slot, b] : by_slot) bufs.push_back(b);
    return bufs;
  }
  // The shader's first lines: the version, the extensions and the workgroup size.
  std::string preamble(const Program& p) const {
    std::string src = "#version 450\n";
    for (const std::string& e : extensions_) src += "#extension " + e + " : require\n";
    // Float controls: capability SignedZeroInfNanPreserve (4466), execution mode of the same
    // name (4461) for 32-bit floats. (glslang keeps one mode per id, so not for 64-bit too.)
    if (target_.preserve_nan)
      src +=
          "#extension GL_EXT_spirv_intrinsics : require\n"
          "spirv_execution_mode(capabilities = [4466], 4461, 32);\n";
    src +=
        "#ifdef VKG_BDA\n#extension GL_EXT_buffer_reference : require\n"
        "#extension GL_EXT_buffer_reference_uvec2 : require\n#endif\n";
    src += fmt::format("layout(local_size_x = {}, local_size_y = {}, local_size_z = {}) in;\n",
                       p.local_size[0], p.local_size[1], p.local_size[2]);
    return src;
  }
  // Each buffer's declarations: `bda` the VKG_BDA variant's buffer references, `bound` the
  // descriptor variant's bindings.
  void declare_buffers(const std::vector<UOp>& bufs, std::string& bda, std::string& bound) const {
    for (const UOp& b : bufs) {
      const int64_t slot = b.arg_as<int64_t>();
      const DType d = b.dtype().base();
      const char* access = slot == 0 ? "restrict writeonly" : "restrict readonly";
      const std::string T = storage_type(d);
      bda += fmt::format(
          "layout(buffer_reference, std430, buffer_reference_align = {}) {} buffer P{} {{ {} v[]; "
          "}};\n#define data{} P{}(pc.addr[{}]).v\n",
          d.itemsize(), access, slot, T, slot, slot, slot);
      if (texel(slot)) {  // loads read data<i>_at(index), or data<i>_v4_at(index)
        // A texture without a sampler (SPIR-V's OpImageFetch on the image itself).
        const char* image = T == "float" ? "textureBuffer"
                            : T == "int" ? "itextureBuffer"
                                         : "utextureBuffer";
        const bool vecs = vec_slots_.count(slot) != 0;
        const char* at = vecs ? "_v4_at" : "_at";
        bound += fmt::format(
            "layout(set = 0, binding = {0}) uniform {1} data{0}_t;\n"
            "#define data{0}{2}(i) texelFetch(data{0}_t, i){3}\n",
            slot, image, at, vecs ? "" : ".x");
        if (vecs)
          bda += fmt::format(
              "layout(buffer_reference, std430, buffer_reference_align = 16) {0} buffer P{1}v {{ "
              "{2} v[]; }};\n#define data{1}_v4_at(i) P{1}v(pc.addr[{1}]).v[i]\n",
              access, slot, vec4_type(d));
        else
          bda += fmt::format("#define data{0}_at(i) data{0}[i]\n", slot);
        continue;
      }
      bound +=
          fmt::format("layout(set = 0, binding = {}, std430) {} buffer B{} {{ {} data{}[]; }};\n",
                      slot, access, slot, T, slot);
      if (vec_slots_.count(slot)) {
        const std::string V = vec4_type(d);
        bound += fmt::format(
            "layout(set = 0, binding = {}, std430) {} buffer B{}v {{ {} data{}_v4[]; }};\n", slot,
            access, slot, V, slot);
        bda += fmt::format(
            "layout(buffer_reference, std430, buffer_reference_align = 16) {} buffer P{}v {{ {} "
            "v[]; }};\n#define data{}_v4 P{}v(pc.addr[{}]).v\n",
            access, slot, V, slot, slot, slot);
      }
    }
  }

  // --- features and extensions ---
  void check_features(const std::vector<UOp>& list) {
    bool s8 = false, s16 = false, i64 = false, f64 = false;
    auto note = [&](DType d, bool storage) {
      const ScalarType s = d.scalar_type();
      if (s == ScalarType::int64 || s == ScalarType::uint64) i64 = true;
      if (s == ScalarType::float64) f64 = true;
      if (storage && (s == ScalarType::bool_ || s == ScalarType::int8 || s == ScalarType::uint8))
        s8 = true;
      if (storage && (s == ScalarType::int16 || s == ScalarType::uint16)) s16 = true;
    };
    for (const UOp& u : topo_) note(u.dtype().scalar(), u.op() == Ops::DEFINE_GLOBAL);
    auto need = [](bool have, const char* what, const char* feature) {
      if (!have)
        throw DTypeError(
            fmt::format("VULKAN: {} needs {}, which this device lacks (or "
                        "VKGRAD_VK_DISABLE turned off)",
                        what, feature));
    };
    if (f64) need(target_.float64, "float64", "shaderFloat64");
    if (i64) need(target_.int64, "int64/uint64", "shaderInt64");
    if (s8) need(target_.storage8, "bool/int8/uint8 buffers", "storageBuffer8BitAccess");
    if (s16)
      need(target_.storage16, "int16/uint16/float16/bfloat16 buffers", "storageBuffer16BitAccess");
    if (i64) extensions_.push_back("GL_EXT_shader_explicit_arithmetic_types_int64");
    if (s8) extensions_.push_back("GL_EXT_shader_8bit_storage");
    if (s16) extensions_.push_back("GL_EXT_shader_16bit_storage");
    extensions_.push_back("GL_EXT_control_flow_attributes");
    // Subgroup operations (group_reductions' CUSTOM nodes) and the extension each needs.
    bool basic = false, arithmetic = false, shuffle = false;
    auto scan = [&](const UOp& u) {
      if (u.op() != Ops::CUSTOM) return;
      const std::string& t = u.arg_as<std::string>();
      arithmetic = arithmetic || t.starts_with("subgroupAdd(");
      shuffle = shuffle || t.starts_with("subgroupShuffle(");
      basic = basic || t.find("ubgroup") != std::string::npos;
    };
    for (const UOp& u : topo_) scan(u);
    // The linearizer's shuffled loads (LinearizeOptions::shuffle_lanes) are in the list only.
    for (const UOp& u : list) scan(u.op() == Ops::STORE ? u.src(1) : u);
    if (basic) extensions_.push_back("GL_KHR_shader_subgroup_basic");
    if (arithmetic) extensions_.push_back("GL_KHR_shader_subgroup_arithmetic");
    if (shuffle) extensions_.push_back("GL_KHR_shader_subgroup_shuffle");
  }

  // --- the language ---
  std::string type(DType d) const override { return d.count() > 1 ? vec4_type(d) : glsl_type(d); }
  // `precise` makes the driver keep IEEE semantics (no contraction into fma, no x*0 -> 0 or
  // x/0 -> ... folding that assumes no NaN or Inf), so results round as the C backend's do.
  std::string var_type(DType d) const override {
    return d.is_float() && d.count() == 1 ? "precise " + glsl_type(d) : type(d);
  }
  std::string literal(const UOp& c) const override { return const_literal(c); }
  void use(GlslFunction h) const { use_function(helpers_, h); }
  std::string alu(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                  const UOp& u) const override {
    const bool f64 = sd.scalar() == dtypes::float64;
    const bool b = d.is_bool() && sd.is_bool();
    auto bin = [&](const char* o) { return fmt::format("({} {} {})", s[0], o, s[1]); };
    switch (op) {
      case Ops::ADD:
      case Ops::SUB:
      case Ops::MUL:
      case Ops::SHL:
        return b ? bin(bool_infix(op)) : wrap(d, bin(infix(op)));
      case Ops::AND:
      case Ops::OR:
      case Ops::XOR:
        return bin(b ? bool_infix(op) : infix(op));
      case Ops::CMPNE:
      case Ops::CMPEQ:
      case Ops::SHR:
        return bin(infix(op));
      case Ops::NEG:
        if (d.is_bool()) return fmt::format("(!{})", s[0]);
        return wrap(d, fmt::format("(-{})", s[0]));
      case Ops::FDIV:
        // lavapipe folds x / +0.0 to 0 whatever x is (x / -0.0 survives): write out IEEE's
        // answer instead (NaN for 0 or NaN, else an infinity with x's sign).
        if (u.src(1).is_const() && std::get<double>(u.src(1).const_value()) == 0 &&
            !std::signbit(std::get<double>(u.src(1).const_value()))) {
          use(f64 ? kIsNanD : kIsNanF);
          const UOp inf = UOp::const_(d, std::numeric_limits<double>::infinity());
          const UOp nan = UOp::const_(d, std::numeric_limits<double>::quiet_NaN());
          return fmt::format("((vkg_isnan{0}({1}) || {1} == {2}) ? {3} : {1} > {2} ? {4} : -{4})",
                             f64 ? "d" : "f", s[0], s[1], const_literal(nan), const_literal(inf));
        }
        return bin("/");
      case Ops::IDIV:
      case Ops::MOD:
        return divmod(op, d, s, u);
      case Ops::MAX:  // a float max was written out by decompose
        if (d.is_bool()) return bin("||");
        if (d.is_float()) break;
        return fmt::format("max({}, {})", s[0], s[1]);
      case Ops::CMPLT:
        if (sd.is_bool()) return fmt::format("(!{} && {})", s[0], s[1]);
        return bin("<");
      case Ops::WHERE:
        return fmt::format("({} ? {} : {})", s[0], s[1], s[2]);
      case Ops::MULACC:  // floats only (fuse_multiply_add)
        return fmt::format("fma({}, {}, {})", s[0], s[1], s[2]);
      case Ops::EXP2:  // float32, where the target has them natively
      case Ops::LOG2:
      case Ops::SIN:
        if (f64) break;
        return fmt::format("{}({})",
                           op == Ops::EXP2   ? "exp2"
                           : op == Ops::LOG2 ? "log2"
                                             : "sin",
                           s[0]);
      case Ops::SQRT:
        if (f64) return fmt::format("sqrt({})", s[0]);
        use(kSqrtF);
        return fmt::format("vkg_sqrtf({})", s[0]);
      case Ops::TRUNC:
        return fmt::format("trunc({})", s[0]);
      case Ops::RECIPROCAL:
        return fmt::format("({} / {})", f64 ? "1.0lf" : "1.0", s[0]);
      default:
        break;
    }
    throw InternalError(
        fmt::format("render_glsl: no GLSL form for {} of {}", op_name(op), d.name()));
  }
  // Divisors are safe (decompose guarded zero and MIN / -1). GLSL's % is undefined for negative
  // operands (glslang emits a floored OpSMod): C's truncating remainder is written out.
  std::string divmod(Ops op, DType d, const std::vector<std::string>& s, const UOp& u) const {
    if (op == Ops::IDIV) return wrap(d, fmt::format("({} / {})", s[0], s[1]));
    const bool nonneg = d.is_unsigned() || (u.src(0).vmin() >= 0 && u.src(1).vmin() > 0);
    if (nonneg) return fmt::format("({} % {})", s[0], s[1]);
    return fmt::format("({0} - ({0} / {1}) * {1})", s[0], s[1]);
  }
  std::string cast(DType from, DType to, const std::string& x) const override {
    if (to.is_bool()) return from.is_bool() ? x : fmt::format("({} != {})", x, zero_of(from));
    const std::string T = glsl_type(to);
    // Where the driver folds double(float(x)) to x, the narrowing goes through an xor with a
    // zero it cannot prove zero (a workgroup id is below the workgroup count).
    if (target_.opaque_narrowing && from.scalar() == dtypes::float64 && T == "float")
      return fmt::format(
          "uintBitsToFloat(floatBitsToUint(float({})) ^ uint(gl_WorkGroupID.x >= "
          "gl_NumWorkGroups.x))",
          x);
    if (to.is_float()) return fmt::format("{}({})", T, x);
    // To an integer. From floats, C on x86 converts through a wider signed integer, so a
    // negative value wraps into an unsigned type instead of being undefined.
    if (from.is_float()) {
      const std::string zero = zero_of(from);
      if (T == "uint")
        return wrap(to, fmt::format("({0} < {1} ? uint(int({0})) : uint({0}))", x, zero));
      if (T == "uint64_t")
        return fmt::format("({0} < {1} ? uint64_t(int64_t({0})) : uint64_t({0}))", x, zero);
      return wrap(to, fmt::format("{}({})", T, x));
    }
    if (from.is_bool()) return fmt::format("{}({})", T, x);
    if (glsl_type(from) == T) return is_small_int(to) ? wrap(to, x) : x;
    if (target_.opaque_widening && to.itemsize() == 8 &&
        (glsl_type(from) == "int" || glsl_type(from) == "uint"))
      return fmt::format("({}({}) ^ {}(gl_WorkGroupID.x >= gl_NumWorkGroups.x))", T, x, T);
    return wrap(to, fmt::format("{}({})", T, x));
  }
  std::string bitcast(DType from, DType to, const std::string& x) const override {
    const ScalarType t = to.scalar_type();
    if (from.scalar() == dtypes::float32)
      return fmt::format("floatBits{}({})", t == ScalarType::uint32 ? "ToUint" : "ToInt", x);
    if (from.scalar() == dtypes::float64)
      return fmt::format("doubleBitsTo{}({})", t == ScalarType::uint64 ? "Uint64" : "Int64", x);
    if (t == ScalarType::float32)
      return fmt::format("{}BitsToFloat({})", glsl_type(from) == "uint" ? "uint" : "int", x);
    if (t == ScalarType::float64)
      return fmt::format("{}BitsToDouble({})", glsl_type(from) == "uint64_t" ? "uint64" : "int64",
                         x);
    // Integer to integer of the same width: a conversion that keeps the bits, then the wrap.
    return wrap(to, fmt::format("{}({})", glsl_type(to), x));
  }
  std::string load(const UOp& ld, const Names& names) const override {
    const UOp& idx = ld.src(0);
    const DType d = ld.dtype();
    // A gated load reads element 0 where its gate is off and selects zero after the load with
    // mix(), which glslang emits as OpSelect: a load inside a conditional (GLSL's ?: evaluates
    // one side) becomes a branch, which lavapipe runs as a masked per-lane loop and a GPU as
    // divergent control flow. (mix has no 64-bit integer form: those keep the conditional.)
    const bool gated = idx.src().size() > 2;
    const std::string gate = gated ? operand(idx.src(2), names) : "";
    const std::string at = gated ? fmt::format("({} ? {} : 0)", gate, operand(idx.src(1), names))
                                 : operand(idx.src(1), names);
    if (idx.src(0).op() == Ops::DEFINE_LOCAL) {  // shared memory holds computed values
      const std::string x = fmt::format("vkg_shared{}[{}]", idx.src(0).arg_as<int64_t>(), at);
      return gated ? fmt::format("mix({}, {}, {})", zero_of(d), x, gate) : x;
    }
    if (d.count() > 1) {  // a vector load (fold_vectors) through the buffer's vec4 alias
      const int64_t slot = idx.src(0).arg_as<int64_t>();
      const std::string x = texel(slot) ? fmt::format("data{}_v4_at({})", slot, at)
                                        : fmt::format("data{}_v4[{}]", slot, at);
      if (!gated) return x;
      return fmt::format("mix({}(0), {}, bvec4({}))", vec4_type(d), x, gate);
    }
    const int64_t slot = idx.src(0).arg_as<int64_t>();
    std::string x =
        texel(slot) ? fmt::format("data{}_at({})", slot, at) : fmt::format("data{}[{}]", slot, at);
    switch (d.scalar_type()) {
      case ScalarType::bool_:
        x = fmt::format("(uint({}) != 0u)", x);
        break;
      case ScalarType::int8:
      case ScalarType::int16:
        x = fmt::format("int({})", x);
        break;
      case ScalarType::uint8:
      case ScalarType::uint16:
        x = fmt::format("uint({})", x);
        break;
      default:
        break;
    }
    if (!gated) return x;
    if (d.scalar().itemsize() == 8 && d.is_int())
      return fmt::format("({} ? {} : {})", gate, x, zero_of(d));
    return fmt::format("mix({}, {}, {})", zero_of(d), x, gate);
  }
  std::string to_storage(DType d, const std::string& v) const {
    switch (d.scalar_type()) {
      case ScalarType::bool_:
        return fmt::format("uint8_t({} ? 1u : 0u)", v);
      case ScalarType::int8:
      case ScalarType::uint8:
      case ScalarType::int16:
      case ScalarType::uint16:
        return fmt::format("{}({})", storage_type(d), v);
      default:
        return v;
    }
  }
  // A gated store (a grouped reduction's lane 0, a step of its tree) stores where its gate is on.
  std::string store(const UOp& st, const Names& names, int depth) const override {
    const UOp& index = st.src(0);
    const UOp& buf = index.src(0);
    const std::string gate =
        index.src().size() > 2 ? fmt::format("if ({}) ", operand(index.src(2), names)) : "";
    const std::string value = operand(st.src(1), names);
    if (buf.op() == Ops::DEFINE_LOCAL)
      return fmt::format("{}{}vkg_shared{}[{}] = {};\n", indent(depth), gate, buf.arg_as<int64_t>(),
                         operand(index.src(1), names), value);
    // A vector store (fold_vectors) goes through the vec4 alias.
    const bool vec = buf.dtype().base().count() > 1;
    return fmt::format("{}{}data{}{}[{}] = {};\n", indent(depth), gate, buf.arg_as<int64_t>(),
                       vec ? "_v4" : "", operand(index.src(1), names),
                       vec ? value : to_storage(st.src(1).dtype(), value));
  }
  std::string barrier(int depth) const override { return indent(depth) + "barrier();\n"; }
  std::string loop_open(const UOp& r, int depth) const override {
    const AxisType t = r.arg_as<AxisArg>().type;
    const bool unroll = t != AxisType::reduce && t != AxisType::stage;
    return fmt::format("{0}{1}for (int {2} = 0; {2} < {3}; {2}++) {{\n", indent(depth),
                       unroll ? "[[unroll]] " : "", name_of(r), range_end(r));
  }
  bool texel(int64_t slot) const { return Program::is_texel(*texel_, static_cast<size_t>(slot)); }

  std::vector<UOp> topo_;
  std::string name_;
  const Target& target_;
  const std::vector<Program::Texel>* texel_ = nullptr;  // the program's
  std::vector<std::string> extensions_;
  mutable bool helpers_[kNumGlslFunctions] = {};
  std::map<int64_t, bool> vec_slots_;
};

}  // namespace

void render_glsl(const UOp& ast, const std::vector<UOp>& list, const std::string& name,
                 const Target& target, Program& p) {
  GlslRenderer(ast, name, target).render(p, list);
}

}  // namespace vkgrad
