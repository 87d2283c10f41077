// tests/codegen: the transcendental decompositions (transcendental.cpp), no device — evaluated by
// the reference interpreter against the C library in long double over special values,
// subnormals, every power of two, values over every exponent and (sin) arguments next to
// multiples of pi/2 and huge ones; compiled as C for the host with nothing native, which agrees
// with the interpreter bit for bit; and decomposed only where the target lacks the function.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "ir/interp.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

Target nothing_native() {
  Target t = cpu::host_target();
  t.native32 = t.native64 = {};
  return t;
}

// op(x) for a target with nothing native, after the passes that follow (decompose, simplify), as
// a function of the placeholder x.
struct Decomposed {
  UOp x, out;
  std::vector<UOp> order;
};
Decomposed decomposed(Ops op, DType d) {
  const UOp x = UOp::make(Ops::NOOP, d, {}, int64_t{0});
  const Target t = nothing_native();
  const UOp out = simplify(decompose(decompose_transcendentals(x.alu(op), t), t));
  return {x, out, toposort(out)};
}

// The decomposed graph's value at x = v, by the interpreter's arithmetic.
double evaluate_at(const Decomposed& g, double v) {
  std::unordered_map<const UOpNode*, ConstValue> val;
  std::vector<ConstValue> ops;
  std::vector<DType> dts;
  for (const UOp& u : g.order) {
    if (u == g.x) {
      val[u.get()] = v;
      continue;
    }
    if (u.is_const()) {
      val[u.get()] = u.const_value();
      continue;
    }
    ops.clear();
    dts.clear();
    for (const UOp& s : u.src()) {
      ops.push_back(val.at(s.get()));
      dts.push_back(s.dtype());
    }
    val[u.get()] = exec_alu(u.op(), u.dtype(), ops, dts);
  }
  return std::get<double>(val.at(g.out.get()));
}

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Format {
  int mantissa, emin, emax;
};
Format format_of(DType d) {
  if (d == dtypes::float64) return {52, -1022, 1023};
  if (d == dtypes::float16) return {10, -14, 15};
  if (d == dtypes::bfloat16) return {7, -126, 127};
  return {23, -126, 127};
}

double round_to(double v, DType d) {
  if (d == dtypes::float64) return v;
  return std::get<double>(
      exec_alu(Ops::CAST, d, std::vector<ConstValue>{v}, std::vector<DType>{dtypes::float64}));
}

// The error of `got` in ULP of `d` at the exact value; a result that must be exact (a special
// value, an overflow, an underflow to zero) and is not counts as infinite.
double ulps(double got, long double exact, DType d) {
  const Format f = format_of(d);
  const double want = round_to(static_cast<double>(exact), d);
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : kInf;
  if (std::isinf(want)) return got == want ? 0.0 : kInf;
  if (exact == 0) return got == 0 && std::signbit(got) == std::signbit(want) ? 0.0 : kInf;
  const double spacing =
      std::ldexp(1.0, std::max(std::ilogb(static_cast<double>(exact)), f.emin) - f.mantissa);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact)) / spacing;
}

// splitmix64: deterministic pseudo-random bits.
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Arguments for `d`: special values, every power of two and its neighbours, subnormals, random
// bit patterns (every exponent), values in [-200, 200], and multiples of pi/2 with neighbours.
std::vector<double> arguments(DType d, int random_count) {
  const Format f = format_of(d);
  std::vector<double> x = {0.0, -0.0, kInf, -kInf, std::nan(""), 1, -1, 0.5, 3, -2.5};
  // The worst float32 arguments of every one tried (exp2, log2, sin, sin's small path).
  for (uint32_t b : {0x3f006dd7u, 0x3f34f366u, 0x4eb3ea32u, 0xdbfe1792u, 0x3f4903d5u})
    x.push_back(std::bit_cast<float>(b));
  for (int e = f.emin - f.mantissa; e <= f.emax; ++e)
    for (double m : {1.0, 1.0 + std::ldexp(1.0, -f.mantissa), 2.0 - std::ldexp(1.0, -f.mantissa)})
      x.insert(x.end(), {std::ldexp(m, e), -std::ldexp(m, e)});
  uint64_t s = 7;
  for (int i = 0; i < random_count; ++i) {
    const uint64_t b = next(s);
    x.push_back(d == dtypes::float64 ? std::bit_cast<double>(b)
                                     : std::bit_cast<float>(static_cast<uint32_t>(b)));
    x.push_back((static_cast<double>(b >> 11) * 0x1p-53 - 0.5) * 400);
  }
  for (int k = 1; k < 2000; ++k) x.push_back(k * 1.5707963267948966);
  for (int k = 0; k < 2000; ++k)
    x.push_back(static_cast<double>(next(s) % 1000000) * 1.5707963267948966);
  for (double& v : x) v = round_to(v, d);
  // Each with its neighbours in float32 and float64.
  std::vector<double> out;
  for (double v : x) {
    out.push_back(v);
    if (d == dtypes::float32) {
      const uint32_t b = std::bit_cast<uint32_t>(static_cast<float>(v));
      out.insert(out.end(), {std::bit_cast<float>(b + 1), std::bit_cast<float>(b - 1)});
    } else if (d == dtypes::float64) {
      const uint64_t b = std::bit_cast<uint64_t>(v);
      out.insert(out.end(), {std::bit_cast<double>(b + 1), std::bit_cast<double>(b - 1)});
    }
  }
  return out;
}

long double exact(Ops op, long double x) {
  return op == Ops::EXP2 ? exp2l(x) : op == Ops::LOG2 ? log2l(x) : sinl(x);
}

// The measured bounds (transcendental.cpp's header), as test thresholds.
double bound(Ops op, DType d) {
  if (d == dtypes::float16 || d == dtypes::bfloat16) return 1.0;  // float32, rounded once
  if (op == Ops::LOG2) return 1.0;
  return 1.5;
}

TEST(Transcendental, WithinTheirUlpBoundsInTheInterpreter) {
  for (DType d : {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::bfloat16})
    for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN}) {
      const Decomposed g = decomposed(op, d);
      double worst = 0, at = 0;
      for (double v : arguments(d, 4000)) {
        if (op == Ops::SIN && d == dtypes::float64 && std::fabs(v) >= 1.6e6) continue;
        const double u = ulps(evaluate_at(g, v), exact(op, v), d);
        if (u > worst) worst = u, at = v;
      }
      EXPECT_LE(worst, bound(op, d)) << op_name(op) << " " << d.name() << " at " << at;
      std::printf("%s %s: worst %.3f ULP at %a\n", std::string(op_name(op)).c_str(),
                  d.name().c_str(), worst, at);
    }
}

// The C printer's text of the decomposed graphs, compiled for the host, computes what the
// interpreter does, bit for bit (NaN for NaN).
TEST(Transcendental, CompiledCAgreesWithTheInterpreter) {
  const std::unique_ptr<Runtime> rt = cpu::make_runtime(/*flush_subnormals=*/false);
  for (DType d : {dtypes::float32, dtypes::float64})
    for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN}) {
      const std::vector<double> x = arguments(d, 1000);
      const int64_t n = static_cast<int64_t>(x.size());
      const Tensor t = Tensor::empty({n}, d, "CPU");
      const Tensor y = op == Ops::EXP2 ? t.exp2() : op == Ops::LOG2 ? t.log2() : t.sin();
      const Program p = codegen(scheduled_kernel(y), {}, nothing_native());
      for (const char* f : {"exp2", "log2", "sin"})
        EXPECT_EQ(p.source.find(std::string("__builtin_") + f), std::string::npos) << p.source;
      const std::shared_ptr<CompiledKernel> k = rt->compile(p);
      const size_t bytes = static_cast<size_t>(n) * d.itemsize();
      std::vector<uint8_t> in(bytes), out(bytes);
      for (int64_t i = 0; i < n; ++i) {
        if (d == dtypes::float64)
          std::memcpy(&in[size_t(i) * 8], &x[size_t(i)], 8);
        else {
          const float f = static_cast<float>(x[size_t(i)]);
          std::memcpy(&in[size_t(i) * 4], &f, 4);
        }
      }
      void* bin = rt->alloc(bytes);
      void* bout = rt->alloc(bytes);
      rt->copy_in(bin, in.data(), bytes);
      const KernelLaunch launch{k.get(), {bout, bin}};
      rt->run({&launch, 1}, nullptr);
      rt->copy_out(out.data(), bout, bytes);
      rt->free(bin);
      rt->free(bout);
      const Decomposed g = decomposed(op, d);
      int mismatches = 0;
      for (int64_t i = 0; i < n && mismatches < 5; ++i) {
        double got;
        if (d == dtypes::float64) {
          std::memcpy(&got, &out[size_t(i) * 8], 8);
        } else {
          float f;
          std::memcpy(&f, &out[size_t(i) * 4], 4);
          got = f;
        }
        const double want = evaluate_at(g, x[size_t(i)]);
        const bool same = std::isnan(want)
                              ? std::isnan(got)
                              : std::bit_cast<uint64_t>(got) == std::bit_cast<uint64_t>(want);
        if (!same) {
          ++mismatches;
          ADD_FAILURE() << op_name(op) << " " << d.name() << "(" << x[size_t(i)] << "): C gives "
                        << got << ", the interpreter " << want;
        }
      }
    }
}

// Only what the target lacks is decomposed: the host's C keeps libm's log2 and sin (and float64
// exp2) and writes float32 exp2 out; a GLSL target with nothing native has none of them left,
// and one with float32 natives prints GLSL's. Decomposing twice changes nothing.
TEST(Transcendental, OnlyWhatTheTargetLacks) {
  auto ops_in = [](const UOp& u) {
    std::set<Ops> out;
    for (const UOp& v : toposort(u))
      if (v.op() == Ops::EXP2 || v.op() == Ops::LOG2 || v.op() == Ops::SIN) out.insert(v.op());
    return out;
  };
  const UOp x32 = UOp::make(Ops::NOOP, dtypes::float32, {}, int64_t{0});
  const UOp x64 = UOp::make(Ops::NOOP, dtypes::float64, {}, int64_t{0});
  const UOp x16 = UOp::make(Ops::NOOP, dtypes::float16, {}, int64_t{0});
  const Target host = cpu::host_target();
  for (const UOp& x : {x32, x64, x16}) {
    const UOp all = UOp::sink({x.alu(Ops::EXP2), x.alu(Ops::LOG2), x.alu(Ops::SIN)});
    const std::set<Ops> kept = ops_in(decompose_transcendentals(all, host));
    if (x == x64)
      EXPECT_EQ(kept, (std::set<Ops>{Ops::EXP2, Ops::LOG2, Ops::SIN}));
    else
      EXPECT_EQ(kept, (std::set<Ops>{Ops::LOG2, Ops::SIN})) << x.dtype().name();
    const UOp none = decompose_transcendentals(all, full_target());
    EXPECT_TRUE(ops_in(none).empty()) << x.dtype().name();
    EXPECT_EQ(decompose_transcendentals(none, full_target()), none);
  }
  Target glsl = full_target();
  glsl.native32 = {.exp2 = true, .log2 = true, .sin = true};
  const Program p =
      codegen(scheduled_kernel(input({8}).exp2() + input({8}).log2() + input({8}).sin()), {}, glsl);
  for (const char* f : {"exp2(", "log2(", "sin("})
    EXPECT_NE(p.source.find(f), std::string::npos) << f << "\n" << p.source;
}

// The graphs are branch-free arithmetic: ALU ops, casts and bitcasts of the argument and
// constants (so a C loop computing one still vectorizes).
TEST(Transcendental, GraphsAreBranchFree) {
  for (DType d : {dtypes::float32, dtypes::float64, dtypes::float16})
    for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN})
      for (const UOp& u : decomposed(op, d).order)
        EXPECT_TRUE(is_alu(u.op()) || u.op() == Ops::CAST || u.op() == Ops::BITCAST ||
                    u.op() == Ops::CONST || u.op() == Ops::NOOP)
            << op_name(op) << " " << d.name() << ": " << op_name(u.op());
}

}  // namespace
}  // namespace vkgrad
