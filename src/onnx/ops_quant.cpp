// onnx: quantization operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and
// the integer products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Integer products
// accumulate in float32, which is exact while the sums stay below 2^24 (an 8-bit product summed
// over up to 256 terms), and are rounded back.
#include <fmt/format.h>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

OpOutputs one(Tensor t) { return OpOutputs{tensor_value(std::move(t))}; }

std::pair<double, double> int_range(DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::uint8:
      return {0, 255};
    case ScalarType::int8:
      return {-128, 127};
    case ScalarType::uint16:
      return {0, 65535};
    case ScalarType::int16:
      return {-32768, 32767};
    case ScalarType::int32:
      return {-2147483648.0, 2147483647.0};
    default:
      throw Error("ONNX: quantization to " + dt.name() + " is not supported");
  }
}

// A per-axis parameter (1-D of the axis's size) shaped to broadcast against a rank-`rank` input.
Tensor per_axis(const Tensor& p, int rank, int axis) {
  if (p.ndim() == 0 || p.numel() == 1) return p.reshape({});
  Shape s(static_cast<size_t>(rank), 1);
  s[static_cast<size_t>(axis)] = p.numel();
  return p.reshape(s);
}

// The axis of per-axis parameters; unused (0) when the scale is a scalar.
int quant_axis(const OpContext& c, const Tensor& x) {
  if (c.value(1).shape().empty() || c.in(1).numel() == 1) return 0;
  return norm_axis(c.attr_i("axis", 1), x.ndim(), c.node().label());
}

Tensor saturate(const Tensor& v, DType dt) {
  auto [lo, hi] = int_range(dt);
  return v.round().clip(lo, hi).cast(dt);
}

Tensor as_float(const Tensor& x) { return x.cast(dtypes::float32); }

// (x - zero_point) in float32; zero_point optional and per-row/column for matmul operands.
Tensor centered(const Tensor& x, const std::optional<Tensor>& zp, const Shape& zp_shape) {
  Tensor f = as_float(x);
  if (!zp) return f;
  return f - as_float(*zp).reshape(zp_shape);
}

std::optional<Tensor> optional_in(const OpContext& c, size_t i) {
  if (c.has(i)) return c.in(i);
  return std::nullopt;
}

Shape zp_shape_a(const std::optional<Tensor>& zp, const Tensor& a) {
  if (!zp || zp->numel() == 1) return {};
  return Shape{zp->numel(), 1};  // per row of A
  (void)a;
}

Shape zp_shape_b(const std::optional<Tensor>& zp) {
  if (!zp || zp->numel() == 1) return {};
  return Shape{1, zp->numel()};  // per column of B
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  r["QuantizeLinear"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const int axis = quant_axis(c, x);
    const Tensor scale = per_axis(c.in(1), x.ndim(), axis);
    const DType out = c.has(2) ? c.value(2).dtype() : dtypes::uint8;
    Tensor v = (as_float(x) / as_float(scale)).round();
    if (c.has(2)) v = v + as_float(per_axis(c.in(2), x.ndim(), axis));
    return one(saturate(v, out));
  };
  r["DequantizeLinear"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const int axis = quant_axis(c, x);
    const Tensor scale = per_axis(c.in(1), x.ndim(), axis);
    Tensor v = as_float(x);
    if (c.has(2)) v = v - as_float(per_axis(c.in(2), x.ndim(), axis));
    return one((v * as_float(scale)).cast(c.value(1).dtype()));
  };
  r["DynamicQuantizeLinear"].run = [](OpContext& c) {
    const Tensor x = as_float(c.in(0));
    const Tensor lo = x.min().minimum(Tensor(0.0)), hi = x.max().maximum(Tensor(0.0));
    const Tensor scale = ((hi - lo) / 255.0).cast(dtypes::float32);
    const Tensor zp = saturate((0.0 - lo / scale), dtypes::uint8);
    const Tensor y = saturate((x / scale).round() + as_float(zp), dtypes::uint8);
    return OpOutputs{tensor_value(y), tensor_value(scale), tensor_value(zp)};
  };
  r["MatMulInteger"].run = [](OpContext& c) {
    const Tensor a = c.in(0), b = c.in(1);
    const auto azp = optional_in(c, 2), bzp = optional_in(c, 3);
    const Tensor y = centered(a, azp, zp_shape_a(azp, a)).matmul(centered(b, bzp, zp_shape_b(bzp)));
    return one(y.round().cast(dtypes::int32));
  };
  r["QLinearMatMul"].run = [](OpContext& c) {
    const Tensor a = c.in(0), b = c.in(3);
    const auto azp = optional_in(c, 2), bzp = optional_in(c, 5);
    const Tensor acc =
        centered(a, azp, zp_shape_a(azp, a)).matmul(centered(b, bzp, zp_shape_b(bzp)));
    const Tensor scale = as_float(c.in(1)) * as_float(c.in(4)) / as_float(c.in(6));
    const DType out = c.value(7).dtype();
    return one(saturate((acc * scale).round() + as_float(c.in(7)), out));
  };
  r["ConvInteger"].run = [](OpContext& c) {
    Tensor x = as_float(c.in(0)), w = as_float(c.in(1));
    if (c.has(2)) x = x - as_float(c.in(2)).reshape({});
    if (c.has(3)) w = w - per_axis(as_float(c.in(3)), w.ndim(), 0);
    return one(conv_nd(c, x, w, std::nullopt).round().cast(dtypes::int32));
  };
  r["QLinearConv"].run = [](OpContext& c) {
    Tensor x = as_float(c.in(0)) - as_float(c.in(2)).reshape({});
    Tensor w = as_float(c.in(3)) - per_axis(as_float(c.in(5)), c.in(3).ndim(), 0);
    std::optional<Tensor> bias;
    if (c.has(8)) bias = as_float(c.in(8));
    // Bias is int32 in units of x_scale * w_scale.
    const Tensor xs = as_float(c.in(1)), ws = per_axis(as_float(c.in(4)), c.in(3).ndim(), 0);
    Tensor acc = conv_nd(c, x, w, std::nullopt);
    if (bias) acc = acc + per_axis(*bias, acc.ndim(), 1);
    const Tensor wsc = ws.ndim() == 0 ? ws : ws.reshape({1, -1}).reshape([&] {
      Shape s(static_cast<size_t>(acc.ndim()), 1);
      s[1] = ws.numel();
      return s;
    }());
    const Tensor scale = xs * wsc / as_float(c.in(6));
    const DType out = c.value(7).dtype();
    return one(saturate((acc * scale).round() + as_float(c.in(7)), out));
  };
}

}  // namespace vkgrad::onnx
