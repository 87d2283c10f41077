// tests/tensor: the elementwise math of src/tensor/ops_math.cpp on every device — rounding
// division and floor modulo, pow, clip, logic, transcendental and activation functions, rounding,
// dropout — against values computed in double precision (or exact integer arithmetic) here.
// Results of one dtype are packed into one tensor (rows()) so that a dtype costs one kernel.
//
// Tolerances: elementwise results use default_rtol(dtype). Composites of exp2/log2/sin get
// transcendental_rtol(dtype): in float32, exp(x) = exp2(x * log2 e) turns the rounding of
// x * log2 e into a relative error of |x log2 e| ulp (up to ~15 ulp on [-10, 10]); float16 and
// bfloat16 composites run in float32 and round once, so they keep default_rtol. Functions with a
// zero crossing (tanh, gelu, cos, ...) also get an absolute tolerance of a few float32 ulp of 1,
// since 2 sigmoid(2x) - 1 and sin(pi/2 - x) cancel there.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ir/interp.hpp"

namespace vkgrad {
namespace {

using testing::expect_values;
using testing::make_tensor;
using testing::random_ints;
using testing::random_values;
using testing::round_to;
using testing::values_of;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

double transcendental_rtol(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::float16:
    case ScalarType::bfloat16:
      return testing::default_rtol(d);
    case ScalarType::float64:
      return 1e-12;
    default:
      return 1e-5;
  }
}
// A few ulp of 1.0 in the dtype the math runs in: the absolute error of results that cancel
// near zero.
double unit_atol(DType d) { return d == dtypes::float64 ? 1e-14 : 2e-6; }

using testing::expect_rows;
using testing::Row;

std::vector<double> map1(const std::vector<double>& a, const std::function<double(double)>& f) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = f(a[i]);
  return out;
}
std::vector<double> map2(const std::vector<double>& a, const std::vector<double>& b,
                         const std::function<double(double, double)>& f) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = f(a[i], b[i]);
  return out;
}
std::vector<double> rounded(std::vector<double> v, DType d) {
  for (double& x : v) x = round_to(x, d);
  return v;
}

// ---- double-precision references
// -----------------------------------------------------------------
double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_softplus(double x, double b) {
  const double bx = b * x;
  return (std::max(bx, 0.0) + std::log1p(std::exp(-std::fabs(bx)))) / b;
}
double ref_gelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double ref_sign(double x) { return std::isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0; }
// Python's // and % for integers, with this library's answers for a zero divisor (0 and 0).
double floor_div(double a, double b) { return b == 0 ? 0 : std::floor(a / b); }
double floor_mod(double a, double b) { return b == 0 ? 0 : a - std::floor(a / b) * b; }
double trunc_div(double a, double b) { return b == 0 ? 0 : std::trunc(a / b); }

// An elementwise op, its reference, the input range it is tested on, and its tolerance kind.
struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;
  bool transcendental;  // a composite of exp2/log2/sin: transcendental_rtol and unit_atol
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -10,
       10, true},
      {"log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.01,
       100, true},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); },
       [](double x) { return 1 / std::sqrt(x); }, 0.01, 100, false},
      {"cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -10,
       10, true},
      {"tan", [](const Tensor& x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.3,
       1.3, true},
      {"abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -10,
       10, false},
      {"sign", [](const Tensor& x) { return x.sign(); }, ref_sign, -10, 10, false},
      {"floor", [](const Tensor& x) { return x.floor(); }, [](double x) { return std::floor(x); },
       -10, 10, false},
      {"ceil", [](const Tensor& x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -10,
       10, false},
      {"round", [](const Tensor& x) { return x.round(); },
       [](double x) { return std::nearbyint(x); }, -10, 10, false},
      {"relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); },
       -10, 10, false},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, ref_sigmoid, -20, 20, true},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -10,
       10, true},
      {"gelu", [](const Tensor& x) { return x.gelu(); }, ref_gelu, -6, 6, true},
      {"silu", [](const Tensor& x) { return x.silu(); },
       [](double x) { return x * ref_sigmoid(x); }, -10, 10, true},
      {"softplus", [](const Tensor& x) { return x.softplus(); },
       [](double x) { return ref_softplus(x, 1); }, -20, 20, true},
      {"softplus(2)", [](const Tensor& x) { return x.softplus(2.0); },
       [](double x) { return ref_softplus(x, 2); }, -20, 20, true},
      {"elu(0.5)", [](const Tensor& x) { return x.elu(0.5); },
       [](double x) { return x > 0 ? x : 0.5 * (std::exp(x) - 1); }, -10, 10, true},
      {"leaky_relu(0.1)", [](const Tensor& x) { return x.leaky_relu(0.1); },
       [](double x) { return x < 0 ? 0.1 * x : x; }, -10, 10, false},
      {"hardtanh(-0.5, 0.7)", [](const Tensor& x) { return x.hardtanh(-0.5, 0.7); },
       [](double x) { return std::clamp(x, -0.5, 0.7); }, -2, 2, false},
      {"mish", [](const Tensor& x) { return x.mish(); },
       [](double x) { return x * std::tanh(ref_softplus(x, 1)); }, -10, 10, true},
      {"square", [](const Tensor& x) { return x.square(); }, [](double x) { return x * x; }, -10,
       10, false},
  };
}

// Runs every case on `n` inputs of `dt` (values rounded to dt first), all in one kernel. The
// reference sees the stored input and its result is rounded to dt (what an exact op returns).
void check_unary(const std::vector<UnaryCase>& cases, DType dt, int64_t n, const std::string& dev) {
  std::vector<Row> rs;
  uint64_t seed = 1;
  for (const UnaryCase& c : cases) {
    const std::vector<double> in = rounded(random_values(n, c.lo, c.hi, seed++), dt);
    const Tensor x = make_tensor(in, {n}, dt, dev);
    const double rtol = c.transcendental ? transcendental_rtol(dt) : testing::default_rtol(dt);
    const double atol = c.transcendental ? unit_atol(dt) : 0.0;
    rs.push_back({c.name, c.op(x), rounded(map1(in, c.ref), dt), rtol, atol});
  }
  expect_rows(rs);
}

class MathTest : public testing::DeviceTest {};

TEST_P(MathTest, UnaryFloat32) { check_unary(unary_cases(), dtypes::float32, 257, dev()); }

TEST_P(MathTest, UnaryOtherFloatDTypes) {
  std::vector<UnaryCase> some;
  for (const UnaryCase& c : unary_cases())
    if (c.name == "exp" || c.name == "log" || c.name == "sigmoid" || c.name == "tanh" ||
        c.name == "round" || c.name == "floor" || c.name == "ceil" || c.name == "abs" ||
        c.name == "sign" || c.name == "cos" || c.name == "softplus")
      some.push_back(c);
  for (DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::float64}) {
    SCOPED_TRACE(dt.name());
    check_unary(some, dt, 17, dev());
  }
}

TEST_P(MathTest, OddAndEmptySizes) {
  for (int64_t n : {1, 3, 17, 1023}) {
    const std::vector<double> in = rounded(random_values(n, -5, 5, 7), dtypes::float32);
    expect_values(make_tensor(in, {n}, dtypes::float32, dev()).sigmoid(), {n}, dtypes::float32,
                  map1(in, ref_sigmoid), 1e-5, 2e-6);
  }
  const Tensor empty = Tensor::zeros({2, 0}, dtypes::float32, dev());
  expect_values(empty.exp().round(), {2, 0}, dtypes::float32, {});
  expect_values(empty.pow(2.5).div(empty, "floor"), {2, 0}, dtypes::float32, {});
}

// Permuted, expanded, flipped and shrunk views go through the composites unchanged.
TEST_P(MathTest, NonContiguousInputs) {
  const std::vector<double> in = rounded(random_values(15, -4, 4, 3), dtypes::float32);
  const Tensor x = make_tensor(in, {3, 5}, dtypes::float32, dev());
  auto at = [&](int64_t i, int64_t j) { return in[static_cast<size_t>(i * 5 + j)]; };
  std::vector<double> permuted, expanded, flipped, shrunk;
  for (int64_t j = 0; j < 5; ++j)
    for (int64_t i = 0; i < 3; ++i) permuted.push_back(at(i, j));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      expanded.push_back(at(1, j));
      flipped.push_back(at(2 - i, j));
    }
  for (int64_t i = 1; i < 3; ++i)
    for (int64_t j = 2; j < 5; ++j) shrunk.push_back(at(i, j));
  auto f = [](const Tensor& t) { return t.round() + t.tanh() * t.abs(); };
  auto ref = [](double v) { return std::nearbyint(v) + std::tanh(v) * std::fabs(v); };
  const double rtol = 1e-5, atol = 1e-5;
  expect_values(f(x.permute({1, 0})), {5, 3}, dtypes::float32, map1(permuted, ref), rtol, atol);
  expect_values(f(x.shrink({{1, 2}, {0, 5}}).expand({3, 5})), {3, 5}, dtypes::float32,
                map1(expanded, ref), rtol, atol);
  expect_values(f(x.flip(std::vector<int>{0})), {3, 5}, dtypes::float32, map1(flipped, ref), rtol,
                atol);
  expect_values(f(x.shrink({{1, 3}, {2, 5}})), {2, 3}, dtypes::float32, map1(shrunk, ref), rtol,
                atol);
}

// Ties, the float32 neighbour of 0.5, integers beyond 2^23, signed zeros, Inf and NaN.
TEST_P(MathTest, RoundingSpecials) {
  const std::vector<double> in = {0.5,        1.5,         2.5,   -0.5, -1.5,      -2.5,
                                  0.49999997, -0.49999997, 3.5,   -3.5, 1e7 + 0.5, 8388609.0,
                                  -0.0,       kInf,        -kInf, kNaN, 2.75,      -2.25};
  const int64_t n = static_cast<int64_t>(in.size());
  for (DType dt : {dtypes::float32, dtypes::float64}) {
    SCOPED_TRACE(dt.name());
    const std::vector<double> v = rounded(in, dt);
    const Tensor x = make_tensor(v, {n}, dt, dev());
    expect_rows({{"round", x.round(), map1(v, [](double a) { return std::nearbyint(a); })},
                 {"floor", x.floor(), map1(v, [](double a) { return std::floor(a); })},
                 {"ceil", x.ceil(), map1(v, [](double a) { return std::ceil(a); })},
                 {"trunc", x.trunc(), map1(v, [](double a) { return std::trunc(a); })},
                 {"abs", x.abs(), map1(v, [](double a) { return std::fabs(a); })},
                 {"sign", x.sign(), map1(v, ref_sign)},
                 {"relu", x.relu(), map1(v, [](double a) {
                    return std::isnan(a) ? a : a > 0 ? a : 0;
                  })}});
  }
}

// Overflowing and saturating inputs: no NaN where the true value is finite or infinite.
TEST_P(MathTest, TranscendentalSpecials) {
  const std::vector<double> in = {-kInf, -1000, -100, -1e-3, -0.0, 0.0,
                                  1e-3,  100,   1000, kInf,  kNaN};
  const Tensor x = make_tensor(in, {11}, dtypes::float32, dev());
  const double r = 1e-5, a = 1e-6;
  expect_rows(
      {{"exp", x.exp(), rounded(map1(in, [](double v) { return std::exp(v); }), dtypes::float32), r,
        a},
       {"sigmoid", x.sigmoid(), map1(in, ref_sigmoid), r, a},
       {"tanh", x.tanh(), map1(in, [](double v) { return std::tanh(v); }), r, a},
       {"softplus", x.softplus(),
        map1(in, [](double v) { return std::isinf(v) && v > 0 ? v : ref_softplus(v, 1); }), r, a},
       {"silu", x.silu(), map1(in, [](double v) { return v == -kInf ? kNaN : v * ref_sigmoid(v); }),
        r, a}});
  const std::vector<double> pos = {0.0, 1.0, kInf, -1.0, kNaN};
  const Tensor p = make_tensor(pos, {5}, dtypes::float32, dev());
  expect_rows({{"log", p.log(), {-kInf, 0.0, kInf, kNaN, kNaN}, r, a},
               {"rsqrt", p.rsqrt(), {kInf, 1.0, 0.0, kNaN, kNaN}, r, a}});
}

// Transcendental functions of integer and bool tensors compute in float32 (tinygrad).
TEST_P(MathTest, IntegerInputsGiveFloat32) {
  const std::vector<double> in = {-3, -1, 0, 2, 5};
  const Tensor x = make_tensor(in, {5}, dtypes::int32, dev());
  const double r = 1e-5, a = 2e-6;
  expect_rows({{"exp", x.exp(),
                rounded(map1(in, [](double v) { return std::exp(v); }), dtypes::float32), r, a},
               {"sigmoid", x.sigmoid(), map1(in, ref_sigmoid), r, a},
               {"cos", x.cos(), map1(in, [](double v) { return std::cos(v); }), r, a},
               {"gelu", x.gelu(), map1(in, ref_gelu), r, a}});
  // ... while the integer-preserving ones keep the dtype.
  expect_rows({{"abs", x.abs(), {3, 1, 0, 2, 5}},
               {"sign", x.sign(), {-1, -1, 0, 1, 1}},
               {"floor", x.floor(), in},
               {"round", x.round(), in},
               {"relu", x.relu(), {0, 0, 0, 2, 5}},
               {"square", x.square(), {9, 1, 0, 4, 25}}});
  const Tensor u = make_tensor({0, 1, 200}, {3}, dtypes::uint8, dev());
  expect_values(u.sign(), {3}, dtypes::uint8, {0, 1, 1});
  expect_values(u.abs(), {3}, dtypes::uint8, {0, 1, 200});
}

// ---- division and modulo
// -------------------------------------------------------------------------

// Every sign combination, zero divisors, and the minimum divided by -1.
TEST_P(MathTest, IntegerDivisionAndModulo) {
  std::vector<double> a = {7, -7, 7, -7, 6, -6, 0, 5, -5, 1, -1, 100, -100, 3};
  std::vector<double> b = {2, 2, -2, -2, 3, 3, 4, 0, 0, 7, 7, -7, 7, 1};
  a.push_back(INT32_MIN);
  b.push_back(-1);
  a.push_back(INT32_MIN);
  b.push_back(3);
  const int64_t n = static_cast<int64_t>(a.size());
  const Tensor ta = make_tensor(a, {n}, dtypes::int32, dev());
  const Tensor tb = make_tensor(b, {n}, dtypes::int32, dev());
  std::vector<double> trunc_q = map2(a, b, trunc_div), floor_q = map2(a, b, floor_div);
  trunc_q[n - 2] = floor_q[n - 2] = INT32_MIN;  // wraps, as integer negation
  expect_rows({{"trunc", ta.div(tb, "trunc"), trunc_q},
               {"floor", ta.div(tb, "floor"), floor_q},
               {"mod", ta.mod(tb), map2(a, b, floor_mod)}});
  expect_values(ta.div(tb, ""), {n}, dtypes::float32, map2(a, b, [](double x, double y) {
                  return static_cast<double>(static_cast<float>(x) / static_cast<float>(y));
                }));

  // Small and unsigned types, and a scalar divisor.
  const std::vector<double> a8 = random_ints(33, -128, 127, 5), b8 = random_ints(33, -9, 9, 6);
  const Tensor t8 = make_tensor(a8, {33}, dtypes::int8, dev());
  const Tensor d8 = make_tensor(b8, {33}, dtypes::int8, dev());
  std::vector<double> floor8 = map2(a8, b8, floor_div);
  for (double& q : floor8) q = round_to(q, dtypes::int8);  // -128 // -1 wraps
  expect_rows(
      {{"floor", t8.div(d8, "floor"), floor8},
       {"mod", t8.mod(d8), map2(a8, b8, floor_mod)},
       {"floor by 3", t8.div(3, "floor"), map1(a8, [](double x) { return std::floor(x / 3); })},
       {"mod -3", t8.mod(-3), map1(a8, [](double x) { return floor_mod(x, -3); })}});
  const std::vector<double> au = random_ints(33, 0, 255, 8), bu = random_ints(33, 0, 20, 9);
  const Tensor tu = make_tensor(au, {33}, dtypes::uint8, dev());
  const Tensor du = make_tensor(bu, {33}, dtypes::uint8, dev());
  expect_rows({{"floor", tu.div(du, "floor"), map2(au, bu, floor_div)},
               {"trunc", tu.div(du, "trunc"), map2(au, bu, trunc_div)},
               {"mod", tu.mod(du), map2(au, bu, floor_mod)}});
  const Tensor big = make_tensor({-(1e12 + 7), 1e12 + 7}, {2}, dtypes::int64, dev());
  expect_values(big.div(int64_t{1000}, "floor"), {2}, dtypes::int64, {-1e9 - 1, 1e9});
  expect_values(big.mod(int64_t{1000}), {2}, dtypes::int64, {993, 7});
}

// Shifts by the type's width or more, or by a negative amount, give 0 (and -1 for a negative
// value shifted right) on every device, as the reference interpreter defines them.
TEST_P(MathTest, ShiftsAgreeWithTheInterpreterAtEveryAmount) {
  for (DType d : {dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::int32, dtypes::uint32,
                  dtypes::int64, dtypes::uint64}) {
    const int bits = static_cast<int>(d.itemsize()) * 8;
    std::vector<double> a, s;
    for (int amount = -3; amount <= bits + 5; ++amount)
      for (double v : {1.0, 5.0, d.is_unsigned() ? 200.0 : -7.0, d.is_unsigned() ? 77.0 : -1.0}) {
        a.push_back(v);
        s.push_back(d.is_unsigned() && amount < 0 ? bits + 40 + amount : amount);
      }
    const int64_t n = static_cast<int64_t>(a.size());
    std::vector<double> shl(a.size()), shr(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      auto eval = [&](Ops op) {
        const UOp e = UOp::const_(d, static_cast<int64_t>(a[i]))
                          .alu(op, UOp::const_(d, static_cast<int64_t>(s[i])));
        const ConstValue v = evaluate(e);
        return d.is_unsigned() ? static_cast<double>(static_cast<uint64_t>(std::get<int64_t>(v)))
                               : static_cast<double>(std::get<int64_t>(v));
      };
      shl[i] = eval(Ops::SHL);
      shr[i] = eval(Ops::SHR);
    }
    const Tensor ta = make_tensor(a, {n}, d, dev()), ts = make_tensor(s, {n}, d, dev());
    expect_values(ta << ts, {n}, d, shl);
    expect_values(ta >> ts, {n}, d, shr);
  }
}

TEST_P(MathTest, FloatDivisionAndModulo) {
  const std::vector<double> a = rounded(random_values(65, -20, 20, 11), dtypes::float32);
  std::vector<double> b = rounded(random_values(65, -6, 6, 12), dtypes::float32);
  for (double& v : b)
    if (std::fabs(v) < 0.1) v = 0.5;
  const Tensor ta = make_tensor(a, {65}, dtypes::float32, dev());
  const Tensor tb = make_tensor(b, {65}, dtypes::float32, dev());
  auto q32 = [](double x, double y) { return static_cast<double>(static_cast<float>(x / y)); };
  expect_rows(
      {{"trunc", ta.div(tb, "trunc"),
        map2(a, b, [&](double x, double y) { return std::trunc(q32(x, y)); })},
       {"floor", ta.div(tb, "floor"),
        map2(a, b, [&](double x, double y) { return std::floor(q32(x, y)); })},
       {"mod", ta.mod(tb), map2(a, b, [](double x, double y) { return x - std::floor(x / y) * y; }),
        1e-5, 1e-5}});
  // int tensor with a float divisor promotes; an int with an int divisor by broadcasting.
  const Tensor i = make_tensor({-7, -1, 0, 5}, {4, 1}, dtypes::int32, dev());
  expect_values(i.div(2.5, "floor"), {4, 1}, dtypes::float32, {-3, -1, 0, 2});
  expect_values(i.mod(make_tensor({3, -3}, {1, 2}, dtypes::int32, dev())), {4, 2}, dtypes::int32,
                {2, -1, 2, -1, 0, 0, 2, -1});
  EXPECT_THROW((void)i.div(i, "round"), Error);
}

// ---- pow ----------------------------------------------------------------------------------------

TEST_P(MathTest, PowFloat) {
  const int64_t n = 65;
  const std::vector<double> base = rounded(random_values(n, 0.1, 10, 21), dtypes::float32);
  const std::vector<double> ex = rounded(random_values(n, -3, 3, 22), dtypes::float32);
  const Tensor tb = make_tensor(base, {n}, dtypes::float32, dev());
  const Tensor te = make_tensor(ex, {n}, dtypes::float32, dev());
  auto p = [](double e) { return [e](double x) { return std::pow(x, e); }; };
  // exp2(e log2 b): relative error ~|e log2 b| ulp (<= 10 here) for the tensor exponent.
  expect_rows(
      {{"tensor exponent", tb.pow(te),
        map2(base, ex, [](double x, double y) { return std::pow(x, y); }), 1e-5},
       {"^2", tb.pow(2), map1(base, p(2)), 2e-6},
       {"^3", tb.pow(3), map1(base, p(3)), 4e-6},
       {"^-2", tb.pow(-2), map1(base, p(-2)), 4e-6},
       {"^0.5", tb.pow(0.5), map1(base, p(0.5)), 2e-6},
       {"^-0.5", tb.pow(-0.5), map1(base, p(-0.5)), 4e-6},
       {"^0", tb.pow(0), map1(base, p(0))},
       {"^1.7", tb.pow(1.7), map1(base, p(1.7)), 1e-5},
       {"2^x", Tensor(2.0).pow(te), map1(ex, [](double y) { return std::pow(2.0, y); }), 1e-5}});

  // Negative bases: integer exponents give signed results, others NaN; 0^0 = 1, 0^-1 = Inf,
  // 1^NaN = 1, NaN^0 = 1.
  const std::vector<double> nb = {-2, -2, -2, -2, -0.5, -3, 0, 0, 0, 1, kNaN, 2, -2, -1};
  const std::vector<double> ne = {2, 3, -1, 0.5, 3, 0, 0, -1, 2, kNaN, 0, kInf, kInf, 16777215};
  const Tensor tnb = make_tensor(nb, {14}, dtypes::float32, dev());
  const Tensor tne = make_tensor(ne, {14}, dtypes::float32, dev());
  expect_values(tnb.pow(tne), {14}, dtypes::float32,
                {4, -8, -0.5, kNaN, -0.125, 1, 1, kInf, 0, 1, 1, kInf, kInf, -1}, 1e-5);
  // float64 keeps a literal exponent exact: 2.0000001 is not 2 (as float32 would make it).
  const std::vector<double> b64 = random_values(9, 0.5, 4, 23);
  expect_values(make_tensor(b64, {9}, dtypes::float64, dev()).pow(2.0000001), {9}, dtypes::float64,
                map1(b64, p(2.0000001)), 1e-13);
  // Broadcasting: a column of bases against a row of exponents; float16 stays float16.
  const Tensor col = make_tensor({1.5, 2, 3}, {3, 1}, dtypes::float16, dev());
  const Tensor row = make_tensor({0, 1, 2, -1}, {4}, dtypes::float16, dev());
  expect_values(col.pow(row), {3, 4}, dtypes::float16,
                {1, 1.5, 2.25, 1 / 1.5, 1, 2, 4, 0.5, 1, 3, 9, 1 / 3.0}, 2e-3);
}

TEST_P(MathTest, PowInteger) {
  const std::vector<double> base = random_ints(33, -6, 6, 31), ex = random_ints(33, 0, 9, 32);
  const Tensor tb = make_tensor(base, {33}, dtypes::int32, dev());
  const Tensor te = make_tensor(ex, {33}, dtypes::int32, dev());
  auto ipow = [](double b, double e) {
    int64_t r = 1;
    for (int i = 0; i < static_cast<int>(e); ++i) r *= static_cast<int64_t>(b);
    return static_cast<double>(r);
  };
  expect_rows({{"tensor exponent", tb.pow(te), map2(base, ex, ipow)},
               {"^3", tb.pow(3), map1(base, [&](double b) { return ipow(b, 3); })},
               {"^0", tb.pow(0), map1(base, [](double) { return 1.0; })}});
  // Negative exponents truncate: 1, +-1, 0. int8 wraps like its multiplication.
  const Tensor nb = make_tensor({1, -1, -1, 2, -3, 0, 5}, {7}, dtypes::int32, dev());
  const Tensor ne = make_tensor({-5, -1, -2, -1, -2, 3, 1}, {7}, dtypes::int32, dev());
  expect_values(nb.pow(ne), {7}, dtypes::int32, {1, -1, 1, 0, 0, 0, 5});
  const Tensor b8 = make_tensor({3, -3, 2, 7}, {4}, dtypes::int8, dev());
  const Tensor e8 = make_tensor({5, 5, 7, 2}, {4}, dtypes::int8, dev());
  expect_values(
      b8.pow(e8), {4}, dtypes::int8,
      {round_to(243, dtypes::int8), round_to(-243, dtypes::int8), round_to(128, dtypes::int8), 49});
  // An int base with a float exponent computes in float32.
  expect_values(make_tensor({4, 9}, {2}, dtypes::int32, dev()).pow(0.5), {2}, dtypes::float32,
                {2, 3});
}

// ---- clip, logic, dropout ----------------------------------------------------------------------

TEST_P(MathTest, ClipAndLogic) {
  const std::vector<double> in = rounded(random_values(17, -3, 3, 41), dtypes::float32);
  const Tensor x = make_tensor(in, {17}, dtypes::float32, dev());
  expect_values(x.clip(-1, 0.5), {17}, dtypes::float32,
                map1(in, [](double v) { return std::clamp(v, -1.0, 0.5); }));
  // Tensor bounds broadcast.
  const Tensor m = make_tensor({-5, 0, 5, 10}, {2, 2}, dtypes::int32, dev());
  const Tensor lo = make_tensor({-1, 1}, {2}, dtypes::int32, dev());
  expect_values(m.clip(lo, 6), {2, 2}, dtypes::int32, {-1, 1, 5, 6});

  const Tensor a = make_tensor({0, 1, 2, -0.5, kNaN, 0}, {6}, dtypes::float32, dev());
  const Tensor b = make_tensor({0, 0, 3, 1, 0, 0}, {6}, dtypes::int32, dev());
  expect_rows({{"and", a.logical_and(b), {0, 0, 1, 1, 0, 0}},
               {"or", a.logical_or(b), {0, 1, 1, 1, 1, 0}},
               {"and true", a.logical_and(true), {0, 1, 1, 1, 1, 0}},
               {"or false", b.logical_or(false), {0, 0, 1, 1, 0, 0}}});
  const Tensor col = make_tensor({0, 1}, {2, 1}, dtypes::bool_, dev());
  const Tensor row = make_tensor({0, 1, 1}, {3}, dtypes::bool_, dev());
  expect_values(col.logical_and(row), {2, 3}, dtypes::bool_, {0, 0, 0, 0, 1, 1});
}

// Sets Tensor::training for a scope, and restores it even when a check throws.
struct TrainingScope {
  bool saved = Tensor::training;
  TrainingScope() { Tensor::training = true; }
  ~TrainingScope() { Tensor::training = saved; }
};

TEST_P(MathTest, Dropout) {
  const Tensor x = Tensor::ones({64, 64}, dtypes::float32, dev());
  ASSERT_FALSE(Tensor::training);
  expect_values(x.dropout(0.5), {64, 64}, dtypes::float32, std::vector<double>(4096, 1.0));
  std::vector<double> got, all, none;
  {
    TrainingScope training;
    got = values_of(x.dropout(0.25));
    all = values_of(x.dropout(1.0));
    none = values_of(x.dropout(0.0));
  }
  int64_t kept = 0;
  for (double v : got) {
    EXPECT_TRUE(v == 0.0 || std::fabs(v - 1 / 0.75) < 1e-6) << v;
    kept += v != 0.0;
  }
  // Bernoulli(0.75) over 4096: standard deviation ~28, so 6 sigma is ~165.
  EXPECT_NEAR(static_cast<double>(kept), 3072, 170);
  for (double v : all) EXPECT_EQ(v, 0.0);
  for (double v : none) EXPECT_EQ(v, 1.0);
  EXPECT_THROW((void)x.dropout(1.5), Error);
}

VKGRAD_ALL_DEVICES(MathTest);

}  // namespace
}  // namespace vkgrad
