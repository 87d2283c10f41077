// tensor: elementwise math composed from the core's primitives (exp2, log2, sin, sqrt, reciprocal,
// trunc, comparisons, where, integer IDIV/MOD): rounding division and floor modulo, pow,
// clip, logic, the transcendental and activation functions, and dropout. Compositions follow
// tinygrad's tensor.py unless a comment says why not (mostly: NaN, -0 and overflow edges).
//
// Float composites of float16/bfloat16 inputs run in float32 and round once at the end, on every
// backend: rounding every intermediate to 11 bits would count fully, e.g. cos x = sin(pi/2 - x)
// would lose |x| * 2^-11 absolute. Integer and bool inputs compute in
// float32 and stay float32 (tinygrad).
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vkgrad/tensor.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {

namespace tensor {
// The tensor float math on x runs on, and the dtype of its result (see the top of the file).
Tensor math_operand(const Tensor& x) {
  const DType d = x.dtype();
  return d == dtypes::float32 || d == dtypes::float64 ? x : x.cast(dtypes::float32);
}
DType math_result(const Tensor& x) { return x.dtype().is_float() ? x.dtype() : dtypes::float32; }
}  // namespace tensor

using tensor::math_operand;
using tensor::math_result;

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kPi = 3.14159265358979323846;

// The composites, in the dtype of their (float32 or float64) argument.
Tensor exp_of(const Tensor& x) { return (x * (1.0 / kLn2)).exp2(); }
Tensor log_of(const Tensor& x) { return x.log2() * kLn2; }
Tensor sigmoid_of(const Tensor& x) { return (1.0 + (x * (-1.0 / kLn2)).exp2()).reciprocal(); }
// 2 sigmoid(2x) - 1 (tinygrad): saturates cleanly; absolute error ~1 ulp of 1 near 0.
Tensor tanh_of(const Tensor& x) { return 2.0 * sigmoid_of(2.0 * x) - 1.0; }
// softplus(x) = (max(bx, 0) + log1p(exp(-|bx|))) / b, which neither overflows for large bx nor
// loses the tail for very negative bx. log1p(u) = u * log(w) / (w - 1) with w = 1 + u
// (Goldberg's trick: a few ulp, since w - 1 is exact).
Tensor softplus_of(const Tensor& x, double beta) {
  const Tensor bx = x * beta;
  const Tensor u = exp_of(-bx.abs());
  const Tensor w = 1.0 + u;
  const Tensor log1p_u = (w == 1.0).where(u, log_of(w) * u / (w - 1.0));
  return (bx.relu() + log1p_u) * (1.0 / beta);
}

// Integer division and remainder with the same answers on every device. x / 0 and MIN / -1 trap
// in C on x86 and are undefined in GLSL, so those divisors are replaced by 1 and the results
// chosen here: x // 0 == 0 and x % 0 == 0 (NumPy's answers), x // -1 == -x (wrapping, so MIN
// stays MIN). With a constant divisor the guards fold away.
struct IntQuotient {
  Tensor q, r;  // truncating quotient and C remainder (sign of the dividend)
};
IntQuotient int_divmod(const Tensor& a, const Tensor& b) {
  const DType dt = a.dtype();
  const Tensor is_zero = b == 0;
  Tensor q, r;
  if (dt.is_unsigned()) {
    const Tensor d = is_zero.where(1, b);
    q = tensor::alu(Ops::IDIV, a, d, dt);
    r = tensor::alu(Ops::MOD, a, d, dt);
    return {is_zero.where(0, q), r};
  }
  const Tensor is_minus_one = b == -1;
  const Tensor d = is_zero.logical_or(is_minus_one).where(1, b);
  q = tensor::alu(Ops::IDIV, a, d, dt);
  r = tensor::alu(Ops::MOD, a, d, dt);  // 0 where d was replaced: x % 1 == 0
  q = is_minus_one.where(-a, q);
  return {is_zero.where(0, q), r};
}

// Bool operands of integer division are computed as int32 and stay int32 (as PyTorch).
std::pair<Tensor, Tensor> division_operands(const Tensor& x, const Tensor& o, const char* op) {
  auto [a, b] = tensor::binary_operands(x, o, op);
  if (a.dtype().is_bool()) return {a.cast(dtypes::int32), b.cast(dtypes::int32)};
  return {a, b};
}

// The value of a weak or 0-d constant exponent (`x.pow(2)`), if `t` is one.
std::optional<double> constant_value(const Tensor& t) {
  if (t.ndim() != 0) return std::nullopt;
  const UOp& u = tensor::uop(t);
  if (u.op() != Ops::CONST) return std::nullopt;
  // A literal's exact value, not its CONST in the literal's default dtype (2^40 wraps in int32).
  const ConstValue v = t.impl()->literal.value_or(u.const_value());
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<bool>(v) ? 1.0 : 0.0;
}

// x**n for an integer constant n by squaring and multiplying (exact for integers, one
// rounding per multiply for floats); n < 0 is (x**-n) reciprocal for floats.
Tensor pow_by_squaring(const Tensor& x, uint64_t n) {
  Tensor result, base = x;
  for (; n != 0; n >>= 1) {
    if (n & 1) result = result.defined() ? result * base : base;
    if (n > 1) base = base * base;
  }
  return result.defined() ? result : x.ones_like();
}

// Float pow (tinygrad's xpow): |b|**e = exp2(e * log2|b|); a negative base gives NaN for a
// non-integer exponent and flips the sign for an odd one. x**0 == 1 and 1**y == 1 for every x
// and y, NaN included (C's pow).
Tensor float_pow(const Tensor& b, const Tensor& e) {
  const Tensor magnitude = (b.abs().log2() * e).exp2();
  const Tensor t = e.abs().trunc();
  // t - 2*trunc(t/2) is exact in floating point; == 1 is false for Inf/NaN exponents.
  const Tensor odd = (t - (t * 0.5).trunc() * 2.0) == 1.0;
  const Tensor negative_factor =
      (e != e.trunc())
          .where(std::numeric_limits<double>::quiet_NaN(), odd.where(-1.0, b.ones_like()));
  // The sign applied as a factor, not as a branch: the NaN factor of the unused branch would
  // turn its zero gradient into NaN (0 * NaN) in backward.
  const Tensor signed_result = magnitude * (b < 0).where(negative_factor, b.ones_like());
  return (e == 0).logical_or(b == 1).where(1.0, signed_result);
}

// Integer pow by squaring over the exponent's bits, wrapping like integer multiplication.
// A negative exponent gives trunc(b**e): 1 for b == 1, ±1 for b == -1, 0 otherwise (also for
// b == 0, where Python raises).
Tensor int_pow(const Tensor& b, const Tensor& e) {
  const DType dt = b.dtype();
  Tensor ex = dt.is_unsigned() ? e : (e < 0).where(0, e);
  Tensor result = b.ones_like(), base = b;
  const int bits = dt.itemsize() * 8 - (dt.is_unsigned() ? 0 : 1);
  for (int i = 0; i < bits; ++i) {
    result = (ex & 1).ne(0).where(result * base, result);
    if (i + 1 == bits) break;
    ex = ex >> 1;
    // Squaring only while exponent bits remain changes nothing, and the WHERE keeps the integer
    // simplifier from flattening x^(2^k) into a product of 2^k factors.
    base = ex.ne(0).where(base * base, base);
  }
  if (dt.is_unsigned()) return result;
  const Tensor odd = (e & 1).ne(0);
  const Tensor minus_one_pow = odd.where(-1, b.ones_like());
  const Tensor negative = (b == 1).where(1, (b == -1).where(minus_one_pow, b.zeros_like()));
  return (e < 0).where(negative, result);
}

}  // namespace

// ---- division, modulo, pow, clip, logic --------------------------------------------------------

Tensor Tensor::div(const Tensor& o, const std::string& rounding_mode) const {
  if (rounding_mode.empty()) return div(o);
  if (rounding_mode != "trunc" && rounding_mode != "floor")
    throw Error("div: rounding_mode must be \"trunc\", \"floor\" or \"\", got \"" + rounding_mode +
                "\"");
  auto [a, b] = division_operands(*this, o, "div");
  if (a.dtype().is_float()) {
    const Tensor q = a.div(b);
    return rounding_mode == "trunc" ? q.trunc() : q.floor();
  }
  const auto [q, r] = int_divmod(a, b);
  if (rounding_mode == "trunc" || a.dtype().is_unsigned()) return q;
  // Floor: one less where the remainder is nonzero and its sign differs from the divisor's.
  return (r != 0).logical_and((r < 0) != (b < 0)).where(q - 1, q);
}

Tensor Tensor::mod(const Tensor& o) const {
  auto [a, b] = division_operands(*this, o, "mod");
  if (a.dtype().is_float()) return a - a.div(b).floor() * b;  // tinygrad's float modulo
  const Tensor r = int_divmod(a, b).r;
  if (a.dtype().is_unsigned()) return r;
  // Python's %: the remainder takes the divisor's sign.
  return (r != 0).logical_and((r < 0) != (b < 0)).where(r + b, r);
}

Tensor Tensor::pow(const Tensor& o) const {
  auto [b, e] = tensor::binary_operands(*this, o, "pow");
  if (b.dtype().is_bool())
    return int_pow(b.cast(dtypes::int32), e.cast(dtypes::int32)).cast(dtypes::bool_);
  const std::optional<double> c = constant_value(o);
  if (!b.dtype().is_float()) {
    if (c && *c >= 0 && *c <= 64) return pow_by_squaring(b, static_cast<uint64_t>(*c));
    return int_pow(b, e);
  }
  const DType out = b.dtype();
  const Tensor fb = math_operand(b);
  // Small integer constants multiply: more accurate than exp2(log2), and right for negative
  // bases without the sign fix-up.
  if (c && *c == std::trunc(*c) && std::fabs(*c) <= 64) {
    const Tensor p = pow_by_squaring(fb, static_cast<uint64_t>(std::fabs(*c)));
    return (*c < 0 ? p.reciprocal() : p).cast(out);
  }
  if (c && *c == 0.5) return fb.sqrt().cast(out);
  if (c && *c == -0.5) return fb.sqrt().reciprocal().cast(out);
  return float_pow(fb, math_operand(e)).cast(out);
}

Tensor Tensor::clip(const Tensor& lo, const Tensor& hi) const { return maximum(lo).minimum(hi); }

Tensor Tensor::logical_and(const Tensor& o) const {
  auto [a, b] = tensor::binary_operands(cast(dtypes::bool_), o.cast(dtypes::bool_), "logical_and");
  return tensor::alu(Ops::AND, a, b, dtypes::bool_);
}

Tensor Tensor::logical_or(const Tensor& o) const {
  auto [a, b] = tensor::binary_operands(cast(dtypes::bool_), o.cast(dtypes::bool_), "logical_or");
  return tensor::alu(Ops::OR, a, b, dtypes::bool_);
}

// ---- transcendental -----------------------------------------------------------------------------

Tensor Tensor::exp() const { return exp_of(math_operand(*this)).cast(math_result(*this)); }
Tensor Tensor::log() const { return log_of(math_operand(*this)).cast(math_result(*this)); }
Tensor Tensor::rsqrt() const {
  return math_operand(*this).sqrt().reciprocal().cast(math_result(*this));
}
// cos x = sin(pi/2 - x); tan = sin / cos.
Tensor Tensor::cos() const {
  return (kPi / 2 - math_operand(*this)).sin().cast(math_result(*this));
}
Tensor Tensor::tan() const {
  const Tensor x = math_operand(*this);
  return (x.sin() / (kPi / 2 - x).sin()).cast(math_result(*this));
}

// ---- sign and rounding --------------------------------------------------------------------------

// x < 0 ? -x : x. Unsigned and bool are their own absolute value; -0.0 stays -0.0.
Tensor Tensor::abs() const {
  if (dtype().is_unsigned() || dtype().is_bool()) return *this;
  return (*this < 0).where(-*this, *this);
}

// -1, 0 or 1 in the input's dtype; zeros keep their sign and NaN stays NaN.
Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  return (*this < 0).where(-1, (*this > 0).where(1, *this));
}

Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  const Tensor t = trunc();
  return (t > *this).where(t - 1, t);
}

Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  const Tensor t = trunc();
  return (t < *this).where(t + 1, t);
}

// Half to even from the exact split x = t + f (t = trunc x): away from zero when |f| > 1/2,
// or when |f| == 1/2 and t is odd. Not tinygrad's (x ± 0.5) form, which rounds 0.49999997
// up in float32 and overflows an int32 cast above 2^31.
Tensor Tensor::round() const {
  if (!dtype().is_float()) return *this;
  const Tensor t = trunc();
  const Tensor f = (*this - t).abs();
  const Tensor t_odd = (t - (t * 0.5).trunc() * 2.0) != 0;
  const Tensor away = (f > 0.5).logical_or((f == 0.5).logical_and(t_odd));
  return away.where((*this < 0).where(t - 1, t + 1), t);
}

// ---- activations --------------------------------------------------------------------------------

Tensor Tensor::relu() const { return (*this < 0).where(0, *this); }  // NaN stays NaN
Tensor Tensor::sigmoid() const { return sigmoid_of(math_operand(*this)).cast(math_result(*this)); }

Tensor Tensor::tanh() const { return tanh_of(math_operand(*this)).cast(math_result(*this)); }

Tensor Tensor::gelu() const {
  const Tensor x = math_operand(*this);
  const Tensor inner = std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x);
  return (0.5 * x * (1.0 + tanh_of(inner))).cast(math_result(*this));
}

Tensor Tensor::silu() const {
  const Tensor x = math_operand(*this);
  return (x * sigmoid_of(x)).cast(math_result(*this));
}

Tensor Tensor::softplus(double beta) const {
  return softplus_of(math_operand(*this), beta).cast(math_result(*this));
}

Tensor Tensor::elu(double alpha) const {
  const Tensor x = math_operand(*this);
  return (x > 0).where(x, alpha * (exp_of(x) - 1.0)).cast(math_result(*this));
}

Tensor Tensor::leaky_relu(double slope) const { return (*this < 0).where(*this * slope, *this); }

Tensor Tensor::hardtanh(double min_val, double max_val) const { return clip(min_val, max_val); }

Tensor Tensor::mish() const {
  const Tensor x = math_operand(*this);
  return (x * tanh_of(softplus_of(x, 1.0))).cast(math_result(*this));
}

Tensor Tensor::square() const { return *this * *this; }

// Inverted dropout (tinygrad): keep each element with probability 1 - p, scaled by 1 / (1 - p)
// so the expectation is unchanged. The identity unless Tensor::training.
Tensor Tensor::dropout(double p) const {
  if (!(p >= 0.0 && p <= 1.0))
    throw Error("dropout: p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0.0) return *this;
  if (p == 1.0) return (*this * 1.0).zeros_like();  // the dtype the scaled result would have
  const Tensor keep = Tensor::rand(shape(), dtypes::float32, device()) >= p;
  return keep.where(*this * (1.0 / (1.0 - p)), 0);
}

}  // namespace vkgrad
