// onnx: elementwise operators (math, comparison, logic, bitwise, casts, activations) and their
// host versions for the integer arithmetic shape computations use.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

// ---- host elementwise with broadcasting ---------------------------------------------------

Shape broadcast_shape(const Shape& a, const Shape& b, const std::string& what) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ShapeError(fmt::format("ONNX: {}: shapes [{}] and [{}] do not broadcast", what,
                                   fmt::join(a, ", "), fmt::join(b, ", ")));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// The flat index into an array of `shape` for the flat index `i` of the broadcast `out`.
int64_t source_index(int64_t i, const Shape& out, const Shape& shape) {
  int64_t idx = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(out.size()) - 1, s = static_cast<int64_t>(shape.size()) - 1;
       d >= 0; d--, s--) {
    const int64_t coord = i % out[d];
    i /= out[d];
    if (s >= 0) {
      if (shape[s] != 1) idx += coord * stride;
      stride *= shape[s];
    }
  }
  return idx;
}

template <class IntF, class FloatF>
HostArray host_map(const std::vector<const HostArray*>& in, DType out_dtype, IntF fi, FloatF ff,
                   const std::string& what) {
  Shape shape = in[0]->shape;
  for (size_t k = 1; k < in.size(); k++) shape = broadcast_shape(shape, in[k]->shape, what);
  HostArray out;
  out.dtype = out_dtype;
  out.shape = shape;
  const int64_t n = out.numel();
  const bool floats =
      std::any_of(in.begin(), in.end(), [](const HostArray* h) { return h->is_float(); });
  std::vector<double> fargs(in.size());
  std::vector<int64_t> iargs(in.size());
  for (int64_t i = 0; i < n; i++) {
    if (floats) {
      for (size_t k = 0; k < in.size(); k++)
        fargs[k] = in[k]->at(source_index(i, shape, in[k]->shape));
      const double v = ff(fargs);
      if (out_dtype.is_float())
        out.floats.push_back(v);
      else
        out.ints.push_back(static_cast<int64_t>(v));
    } else {
      for (size_t k = 0; k < in.size(); k++)
        iargs[k] = in[k]->ints[source_index(i, shape, in[k]->shape)];
      const int64_t v = fi(iargs);
      if (out_dtype.is_float())
        out.floats.push_back(static_cast<double>(v));
      else
        out.ints.push_back(v);
    }
  }
  return out;
}

std::vector<const HostArray*> host_inputs(OpContext& c) {
  std::vector<const HostArray*> in;
  for (size_t i = 0; i < c.num_inputs(); i++)
    if (c.has(i)) in.push_back(&c.host(i));
  return in;
}

// ---- registration helpers ------------------------------------------------------------------

void unary(OpRegistry& r, const std::string& name, std::function<Tensor(const Tensor&)> f) {
  r[name].run = [f](OpContext& c) { return OpOutputs{tensor_value(f(c.in(0)))}; };
}

void unary_attr(OpRegistry& r, const std::string& name,
                std::function<Tensor(const Tensor&, const OpContext&)> f) {
  r[name].run = [f](OpContext& c) { return OpOutputs{tensor_value(f(c.in(0), c))}; };
}

void binary(OpRegistry& r, const std::string& name,
            std::function<Tensor(const Tensor&, const Tensor&)> f) {
  r[name].run = [f](OpContext& c) { return OpOutputs{tensor_value(f(c.in(0), c.in(1)))}; };
}

template <class IntF, class FloatF>
void host_binary(OpRegistry& r, const std::string& name, bool to_bool, IntF fi, FloatF ff) {
  r[name].host = [=](OpContext& c) {
    auto in = host_inputs(c);
    const DType dt = to_bool ? dtypes::bool_ : in[0]->dtype;
    return OpOutputs{host_value(host_map(
        in, dt, [&](const std::vector<int64_t>& a) { return fi(a[0], a[1]); },
        [&](const std::vector<double>& a) { return ff(a[0], a[1]); }, c.node().label()))};
  };
}

Tensor same_dtype(const Tensor& x, const Tensor& like) {
  return x.dtype() == like.dtype() ? x : x.cast(like.dtype());
}

Tensor true_div(const Tensor& a, const Tensor& b) {
  if (a.dtype().is_float()) return a / b;
  return a.div(b, "trunc");
}

// C fmod: the remainder with the dividend's sign.
Tensor c_fmod(const Tensor& a, const Tensor& b) {
  if (!a.dtype().is_float()) {
    const Tensor r = a.mod(b);
    return (r != 0).logical_and((r < 0) != (a < 0)).where(r - b, r).cast(a.dtype());
  }
  const Tensor q = (a / b).trunc();
  return (a - q * b).cast(a.dtype());
}

DType cast_target(const OpContext& c) {
  return dtype_of_onnx(static_cast<int32_t>(c.attr_i("to", 0)), c.node().label());
}

Tensor onnx_cast(const Tensor& x, DType to) {
  if (x.dtype() == to) return x;
  // Float to bool is != 0; NaN is true.
  if (to.is_bool()) return x != 0;
  return x.cast(to);
}

Tensor fold_inputs(const OpContext& c,
                   const std::function<Tensor(const Tensor&, const Tensor&)>& f) {
  Tensor acc = c.in(0);
  for (size_t i = 1; i < c.num_inputs(); i++)
    if (c.has(i)) acc = f(acc, c.in(i));
  return acc;
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  // ---- unary math ----
  unary(r, "Identity", [](const Tensor& x) { return x; });
  r["Identity"].host = [](OpContext& c) { return OpOutputs{host_value(c.host(0))}; };
  unary(r, "Abs", [](const Tensor& x) { return x.abs(); });
  unary(r, "Neg", [](const Tensor& x) { return x.neg(); });
  r["Neg"].host = [](OpContext& c) {
    auto in = host_inputs(c);
    return OpOutputs{host_value(host_map(
        in, in[0]->dtype, [](const std::vector<int64_t>& a) { return -a[0]; },
        [](const std::vector<double>& a) { return -a[0]; }, "Neg"))};
  };
  unary(r, "Exp", [](const Tensor& x) { return x.exp(); });
  unary(r, "Log", [](const Tensor& x) { return x.log(); });
  unary(r, "Sqrt", [](const Tensor& x) { return x.sqrt(); });
  unary(r, "Reciprocal", [](const Tensor& x) { return x.reciprocal(); });
  unary(r, "Floor", [](const Tensor& x) { return x.floor(); });
  unary(r, "Ceil", [](const Tensor& x) { return x.ceil(); });
  unary(r, "Round", [](const Tensor& x) { return x.round(); });
  unary(r, "Sin", [](const Tensor& x) { return x.sin(); });
  unary(r, "Cos", [](const Tensor& x) { return x.cos(); });
  unary(r, "Tan", [](const Tensor& x) { return x.tan(); });
  unary(r, "Asin", [](const Tensor& x) { return x.asin(); });
  unary(r, "Acos", [](const Tensor& x) { return x.acos(); });
  unary(r, "Atan", [](const Tensor& x) { return x.atan(); });
  unary(r, "Sinh", [](const Tensor& x) { return x.sinh(); });
  unary(r, "Cosh", [](const Tensor& x) { return x.cosh(); });
  unary(r, "Asinh", [](const Tensor& x) { return x.asinh(); });
  unary(r, "Acosh", [](const Tensor& x) { return x.acosh(); });
  unary(r, "Atanh", [](const Tensor& x) { return x.atanh(); });
  unary(r, "Tanh", [](const Tensor& x) { return x.tanh(); });
  unary(r, "Sigmoid", [](const Tensor& x) { return x.sigmoid(); });
  unary(r, "Relu", [](const Tensor& x) { return x.relu(); });
  unary(r, "Erf", [](const Tensor& x) { return x.erf(); });
  unary(r, "Sign", [](const Tensor& x) { return x.sign(); });
  unary(r, "Not", [](const Tensor& x) { return x.logical_not(); });
  unary(r, "BitwiseNot", [](const Tensor& x) { return x.bitwise_not(); });
  unary(r, "IsNaN", [](const Tensor& x) { return x.isnan(); });
  unary(r, "Softsign", [](const Tensor& x) { return x / (x.abs() + 1.0); });
  unary(r, "Softplus", [](const Tensor& x) { return x.softplus(); });
  unary(r, "Mish", [](const Tensor& x) { return x.mish(); });
  unary(r, "HardSwish", [](const Tensor& x) {
    return (x * ((x * (1.0 / 6) + 0.5).clip(0.0, 1.0))).cast(x.dtype());
  });

  // ---- activations with attributes ----
  unary_attr(r, "IsInf", [](const Tensor& x, const OpContext& c) {
    return x.isinf(c.attr_i("detect_positive", 1) != 0, c.attr_i("detect_negative", 1) != 0);
  });
  unary_attr(r, "LeakyRelu", [](const Tensor& x, const OpContext& c) {
    return (x < 0).where(x * c.attr_f("alpha", 0.01), x).cast(x.dtype());
  });
  unary_attr(r, "Elu", [](const Tensor& x, const OpContext& c) {
    const double alpha = c.attr_f("alpha", 1.0);
    return (x < 0).where((x.exp() - 1.0) * alpha, x).cast(x.dtype());
  });
  unary_attr(r, "Selu", [](const Tensor& x, const OpContext& c) {
    const double alpha = c.attr_f("alpha", 1.67326319217681884765625);
    const double gamma = c.attr_f("gamma", 1.05070102214813232421875);
    return ((x <= 0).where((x.exp() - 1.0) * alpha, x) * gamma).cast(x.dtype());
  });
  unary_attr(r, "Celu", [](const Tensor& x, const OpContext& c) {
    const double alpha = c.attr_f("alpha", 1.0);
    return (x.relu() + ((x * (1.0 / alpha)).exp() - 1.0).minimum(Tensor(0.0)) * alpha)
        .cast(x.dtype());
  });
  unary_attr(r, "HardSigmoid", [](const Tensor& x, const OpContext& c) {
    return (x * c.attr_f("alpha", 0.2) + c.attr_f("beta", 0.5)).clip(0.0, 1.0).cast(x.dtype());
  });
  unary_attr(r, "ThresholdedRelu", [](const Tensor& x, const OpContext& c) {
    return (x > c.attr_f("alpha", 1.0)).where(x, 0.0).cast(x.dtype());
  });
  unary_attr(r, "Shrink", [](const Tensor& x, const OpContext& c) {
    const double bias = c.attr_f("bias", 0.0), lambd = c.attr_f("lambd", 0.5);
    return (x < -lambd).where(x + bias, (x > lambd).where(x - bias, 0)).cast(x.dtype());
  });
  unary_attr(r, "Gelu", [](const Tensor& x, const OpContext& c) {
    if (c.attr_s("approximate", "none") == "tanh") return x.gelu();
    return (x * 0.5 * ((x * (1.0 / std::sqrt(2.0))).erf() + 1.0)).cast(x.dtype());
  });
  binary(r, "PRelu", [](const Tensor& x, const Tensor& slope) {
    return (x < 0).where(x * slope, x).cast(x.dtype());
  });

  // ---- binary arithmetic ----
  binary(r, "Add", [](const Tensor& a, const Tensor& b) { return a + same_dtype(b, a); });
  binary(r, "Sub", [](const Tensor& a, const Tensor& b) { return a - same_dtype(b, a); });
  binary(r, "Mul", [](const Tensor& a, const Tensor& b) { return a * same_dtype(b, a); });
  binary(r, "Div", [](const Tensor& a, const Tensor& b) { return true_div(a, same_dtype(b, a)); });
  host_binary(
      r, "Add", false, [](int64_t a, int64_t b) { return a + b; },
      [](double a, double b) { return a + b; });
  host_binary(
      r, "Sub", false, [](int64_t a, int64_t b) { return a - b; },
      [](double a, double b) { return a - b; });
  host_binary(
      r, "Mul", false, [](int64_t a, int64_t b) { return a * b; },
      [](double a, double b) { return a * b; });
  host_binary(
      r, "Div", false, [](int64_t a, int64_t b) { return b == 0 ? 0 : a / b; },
      [](double a, double b) { return a / b; });
  binary(r, "Pow", [](const Tensor& a, const Tensor& b) {
    if (a.dtype().is_float()) return a.pow(b.cast(a.dtype())).cast(a.dtype());
    // An integer base: compute in float64 when the device has it, else float32, round back.
    return a.cast(dtypes::float32).pow(b.cast(dtypes::float32)).round().cast(a.dtype());
  });
  r["Mod"].run = [](OpContext& c) {
    const Tensor a = c.in(0), b = same_dtype(c.in(1), a);
    const bool fmod = c.attr_i("fmod", 0) != 0;
    if (!fmod && a.dtype().is_float()) c.fail("fmod must be 1 for floating-point inputs");
    return OpOutputs{tensor_value(fmod ? c_fmod(a, b) : a.mod(b).cast(a.dtype()))};
  };
  r["BitShift"].run = [](OpContext& c) {
    const Tensor a = c.in(0), b = same_dtype(c.in(1), a);
    const std::string dir = c.attr_s("direction", "");
    if (dir != "LEFT" && dir != "RIGHT")
      c.fail("direction must be LEFT or RIGHT, got '" + dir + "'");
    return OpOutputs{tensor_value(dir == "LEFT" ? a.lshift(b) : a.rshift(b))};
  };
  binary(r, "BitwiseAnd", [](const Tensor& a, const Tensor& b) { return a.bitwise_and(b); });
  binary(r, "BitwiseOr", [](const Tensor& a, const Tensor& b) { return a.bitwise_or(b); });
  binary(r, "BitwiseXor", [](const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); });
  binary(r, "And", [](const Tensor& a, const Tensor& b) { return a.logical_and(b); });
  binary(r, "Or", [](const Tensor& a, const Tensor& b) { return a.logical_or(b); });
  binary(r, "Xor", [](const Tensor& a, const Tensor& b) { return a.ne(b); });

  // ---- comparisons ----
  binary(r, "Equal", [](const Tensor& a, const Tensor& b) { return a.eq(same_dtype(b, a)); });
  binary(r, "Less", [](const Tensor& a, const Tensor& b) { return a.lt(same_dtype(b, a)); });
  binary(r, "LessOrEqual", [](const Tensor& a, const Tensor& b) { return a.le(same_dtype(b, a)); });
  binary(r, "Greater", [](const Tensor& a, const Tensor& b) { return a.gt(same_dtype(b, a)); });
  binary(r, "GreaterOrEqual",
         [](const Tensor& a, const Tensor& b) { return a.ge(same_dtype(b, a)); });
  host_binary(
      r, "Equal", true, [](int64_t a, int64_t b) -> int64_t { return a == b; },
      [](double a, double b) -> double { return a == b; });
  host_binary(
      r, "Less", true, [](int64_t a, int64_t b) -> int64_t { return a < b; },
      [](double a, double b) -> double { return a < b; });
  host_binary(
      r, "Greater", true, [](int64_t a, int64_t b) -> int64_t { return a > b; },
      [](double a, double b) -> double { return a > b; });

  // ---- n-ary ----
  r["Sum"].run = [](OpContext& c) {
    return OpOutputs{
        tensor_value(fold_inputs(c, [](const Tensor& a, const Tensor& b) { return a + b; }))};
  };
  r["Mean"].run = [](OpContext& c) {
    const Tensor s = fold_inputs(c, [](const Tensor& a, const Tensor& b) { return a + b; });
    return OpOutputs{tensor_value((s / static_cast<double>(c.num_inputs())).cast(s.dtype()))};
  };
  r["Max"].run = [](OpContext& c) {
    return OpOutputs{tensor_value(
        fold_inputs(c, [](const Tensor& a, const Tensor& b) { return a.maximum(b); }))};
  };
  r["Min"].run = [](OpContext& c) {
    return OpOutputs{tensor_value(
        fold_inputs(c, [](const Tensor& a, const Tensor& b) { return a.minimum(b); }))};
  };
  host_binary(
      r, "Max", false, [](int64_t a, int64_t b) { return std::max(a, b); },
      [](double a, double b) { return std::max(a, b); });
  host_binary(
      r, "Min", false, [](int64_t a, int64_t b) { return std::min(a, b); },
      [](double a, double b) { return std::min(a, b); });
  for (const char* n : {"Max", "Min"}) {
    OpFn h = r[n].host;
    r[n].host = [h](OpContext& c) {
      if (c.num_inputs() != 2) throw NotOnHost();
      return h(c);
    };
  }

  r["Where"].run = [](OpContext& c) {
    const Tensor a = c.in(1);
    return OpOutputs{tensor_value(c.in(0).where(a, same_dtype(c.in(2), a)).cast(a.dtype()))};
  };
  r["Where"].host = [](OpContext& c) {
    auto in = host_inputs(c);
    return OpOutputs{host_value(host_map(
        in, in[1]->dtype, [](const std::vector<int64_t>& a) { return a[0] ? a[1] : a[2]; },
        [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; }, "Where"))};
  };

  r["Clip"].run = [](OpContext& c) {
    Tensor x = c.in(0);
    if (c.opset() < 11) {
      if (c.has_attr("min")) x = x.maximum(Tensor(c.attr_f("min", 0)).cast(x.dtype()));
      if (c.has_attr("max")) x = x.minimum(Tensor(c.attr_f("max", 0)).cast(x.dtype()));
      return OpOutputs{tensor_value(x)};
    }
    if (c.has(1)) x = x.maximum(same_dtype(c.in(1), x));
    if (c.has(2)) x = x.minimum(same_dtype(c.in(2), x));
    return OpOutputs{tensor_value(x.cast(c.in(0).dtype()))};
  };

  // ---- casts ----
  r["Cast"].run = [](OpContext& c) {
    return OpOutputs{tensor_value(onnx_cast(c.in(0), cast_target(c)))};
  };
  r["Cast"].host = [](OpContext& c) {
    return OpOutputs{host_value(c.host(0).cast(cast_target(c)))};
  };
  r["CastLike"].run = [](OpContext& c) {
    return OpOutputs{tensor_value(onnx_cast(c.in(0), c.value(1).dtype()))};
  };
}

}  // namespace vkgrad::onnx
