// onnx: neural-network operators: MatMul/Gemm, Conv/ConvTranspose, pooling, normalizations,
// softmax family, reductions, ArgMax/ArgMin, TopK, CumSum, Einsum, Dropout.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

OpOutputs one(Tensor t) { return OpOutputs{tensor_value(std::move(t))}; }

// ---- convolution and pooling geometry ------------------------------------------------------

struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;  // per spatial dim
};

// Pads from `pads` or `auto_pad` for inputs of `in` spatial sizes.
Window window(const OpContext& c, const std::vector<int64_t>& in, std::vector<int64_t> kernel) {
  const size_t n = in.size();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n ||
      w.kernel.size() != n)
    c.fail(fmt::format("strides, dilations, kernel and pads must match the {} spatial dims", n));
  const std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  w.begin.assign(pads.begin(), pads.begin() + static_cast<long>(n));
  w.end.assign(pads.begin() + static_cast<long>(n), pads.end());
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; i++) {
      const int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in[i]);
      w.begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[i] = total - w.begin[i];
    }
  } else if (auto_pad == "VALID") {
    std::fill(w.begin.begin(), w.begin.end(), 0);
    std::fill(w.end.begin(), w.end.end(), 0);
  } else if (auto_pad != "NOTSET") {
    c.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  return w;
}

std::vector<int64_t> spatial(const Tensor& x) {
  return std::vector<int64_t>(x.shape().begin() + 2, x.shape().end());
}

Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& end, double value) {
  PadList p(static_cast<size_t>(x.ndim()), {0, 0});
  bool any = false;
  for (size_t i = 0; i < begin.size(); i++) {
    p[i + 2] = {begin[i], end[i]};
    any = any || begin[i] || end[i];
  }
  return any ? x.pad(p, value) : x;
}

// Negative pads crop.
Tensor pad_or_crop(const Tensor& x, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& end, double value) {
  PadList crop;
  std::vector<int64_t> b = begin, e = end;
  bool cropping = false;
  for (int d = 0; d < x.ndim(); d++) crop.emplace_back(0, x.shape(d));
  for (size_t i = 0; i < begin.size(); i++) {
    if (b[i] < 0) {
      crop[i + 2].first = -b[i];
      b[i] = 0;
      cropping = true;
    }
    if (e[i] < 0) {
      crop[i + 2].second = x.shape(static_cast<int>(i + 2)) + e[i];
      e[i] = 0;
      cropping = true;
    }
  }
  return pad_spatial(cropping ? x.shrink(crop) : x, b, e, value);
}

}  // namespace

Tensor conv_nd(const OpContext& c, Tensor x, Tensor w, std::optional<Tensor> bias) {
  const int64_t nsp = x.ndim() - 2;
  if (nsp < 1 || w.ndim() != x.ndim())
    c.fail(fmt::format("input {} and weight {} must be (N, C, spatial...) of equal rank", x.ndim(),
                       w.ndim()));
  const int64_t group = c.attr_i("group", 1);
  std::vector<int64_t> kshape(w.shape().begin() + 2, w.shape().end());
  Window win = window(c, spatial(x), c.attr_ints("kernel_shape", kshape));
  if (bias) *bias = bias->cast(x.dtype());
  if (nsp == 1) {  // as 2-D with a unit height
    x = x.unsqueeze(2);
    w = w.unsqueeze(2);
    Tensor xp = pad_or_crop(x, {0, win.begin[0]}, {0, win.end[0]}, 0.0);
    return xp.conv2d(w, bias, {1, win.strides[0]}, 0, {1, win.dilations[0]}, group).squeeze(2);
  }
  if (nsp == 2) {
    if (win.begin == win.end && win.begin[0] >= 0 && win.begin[1] >= 0)
      return x.conv2d(w, bias, {win.strides[0], win.strides[1]}, {win.begin[0], win.begin[1]},
                      {win.dilations[0], win.dilations[1]}, group);
    x = pad_or_crop(x, win.begin, win.end, 0.0);
    return x.conv2d(w, bias, {win.strides[0], win.strides[1]}, 0,
                    {win.dilations[0], win.dilations[1]}, group);
  }
  // N-d: a sum over the leading kernel dim of (N-1)-d convolutions, its output positions folded
  // into the batch; the input is stored first, as each depth tap reads it through its own view.
  x = pad_or_crop(x, win.begin, win.end, 0.0).contiguous();
  const int64_t d_in = x.shape(2), kd = w.shape(2), s = win.strides[0], dil = win.dilations[0];
  const int64_t d_out = (d_in - (kd - 1) * dil - 1) / s + 1;
  if (d_out <= 0) c.fail("the kernel is larger than the padded input");
  // Each tap is an (N-1)-d convolution with the remaining strides and dilations, unpadded.
  Node sub = c.node();
  sub.attrs.clear();
  sub.attrs["group"].kind = Attribute::Kind::Int;
  sub.attrs["group"].i = group;
  sub.attrs["strides"].kind = Attribute::Kind::Ints;
  sub.attrs["strides"].ints.assign(win.strides.begin() + 1, win.strides.end());
  sub.attrs["dilations"].kind = Attribute::Kind::Ints;
  sub.attrs["dilations"].ints.assign(win.dilations.begin() + 1, win.dilations.end());
  const OpContext sc(sub, {}, c.opset(), c.device(), false);
  Tensor acc;
  for (int64_t k = 0; k < kd; k++) {
    Tensor xs = x.slice(2, k * dil, k * dil + (d_out - 1) * s + 1, s);  // [N, C, Dout, ...]
    std::vector<int> order{0, 2, 1};
    for (int i = 3; i < xs.ndim(); i++) order.push_back(i);
    Shape merged{xs.shape(0) * d_out, xs.shape(1)};
    for (int i = 3; i < xs.ndim(); i++) merged.push_back(xs.shape(i));
    xs = xs.permute(order).reshape(merged);
    Tensor wk = w.select(2, k);
    Tensor y = conv_nd(sc, xs, wk, std::nullopt);  // [N*Dout, O, ...]
    Shape split{x.shape(0), d_out};
    for (int i = 1; i < y.ndim(); i++) split.push_back(y.shape(i));
    y = y.reshape(split);
    std::vector<int> back{0, 2, 1};
    for (int i = 3; i < y.ndim(); i++) back.push_back(i);
    y = y.permute(back);
    acc = acc.defined() ? acc + y : y;
  }
  if (bias) {
    Shape bs(static_cast<size_t>(acc.ndim()), 1);
    bs[1] = bias->numel();
    acc = acc + bias->reshape(bs);
  }
  return acc;
}

namespace {

// The strided view of `xp` that kernel offset `flat` (row-major over the kernel) reads for every
// output position, and the number of offsets.
Tensor window_view(Tensor v, const Window& w, const std::vector<int64_t>& out, int64_t flat) {
  for (size_t i = w.kernel.size(); i-- > 0;) {
    const int64_t k = flat % w.kernel[i];
    flat /= w.kernel[i];
    const int64_t start = k * w.dilations[i];
    v = v.slice(static_cast<int>(i + 2), start, start + (out[i] - 1) * w.strides[i] + 1,
                w.strides[i]);
  }
  return v;
}

int64_t window_size(const Window& w) {
  int64_t total = 1;
  for (int64_t k : w.kernel) total *= k;
  return total;
}

// Windows over the spatial dims: each kernel offset is one strided view, combined by `combine`.
Tensor pool_nd(const Tensor& xp, const Window& w, const std::vector<int64_t>& out,
               const std::function<Tensor(const Tensor&, const Tensor&)>& combine) {
  Tensor acc;
  for (int64_t flat = 0; flat < window_size(w); flat++) {
    const Tensor v = window_view(xp, w, out, flat);
    acc = acc.defined() ? combine(acc, v) : v;
  }
  return acc;
}

// Tensor::max_pool2d / avg_pool2d where the node fits them: 2-D, explicit symmetric pads of at
// most half the kernel, no ceil mode or dilations, a float input (and `allowed`).
std::optional<Tensor> pool2d_fast(const OpContext& c, bool is_max, bool allowed) {
  const Tensor x = c.in(0);
  const auto k = c.attr_ints("kernel_shape");
  const auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * k.size(), 0));
  const auto strides = c.attr_ints("strides", std::vector<int64_t>(k.size(), 1));
  const bool fits = allowed && k.size() == 2 && pads.size() == 4 && strides.size() == 2 &&
                    c.attr_s("auto_pad", "NOTSET") == "NOTSET" && !c.attr_i("ceil_mode", 0) &&
                    !c.has_attr("dilations") && pads[0] == pads[2] && pads[1] == pads[3] &&
                    2 * pads[0] <= k[0] && 2 * pads[1] <= k[1] && x.dtype().is_float();
  if (!fits) return std::nullopt;
  return is_max ? x.max_pool2d({k[0], k[1]}, Int2{strides[0], strides[1]}, {pads[0], pads[1]})
                : x.avg_pool2d({k[0], k[1]}, Int2{strides[0], strides[1]}, {pads[0], pads[1]});
}

double lowest_of(DType dt) {
  if (dt.is_float()) return -std::numeric_limits<double>::infinity();
  switch (dt.scalar_type()) {
    case ScalarType::int8:
      return -128;
    case ScalarType::int16:
      return -32768;
    case ScalarType::int32:
      return -2147483648.0;
    case ScalarType::int64:
      return -9223372036854775808.0;
    default:
      return 0;
  }
}

OpOutputs pool(OpContext& c, bool is_max) {
  // The windows are strided views of the input, one per kernel offset: the input is stored
  // first, or a reduction computing it (a conv) would run once per offset.
  const Tensor x = c.in(0).contiguous();
  const std::vector<int64_t> in = spatial(x);
  Window w = window(c, in, c.attr_ints("kernel_shape"));
  const bool ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  const size_t n = in.size();
  if (!is_max && c.has_attr("dilations")) c.fail("AveragePool with dilations is not supported");
  std::vector<int64_t> out(n);
  std::vector<int64_t> extra(n, 0);
  for (size_t i = 0; i < n; i++) {
    const int64_t span = in[i] + w.begin[i] + w.end[i] - ((w.kernel[i] - 1) * w.dilations[i] + 1);
    out[i] = (ceil_mode ? (span + w.strides[i] - 1) / w.strides[i] : span / w.strides[i]) + 1;
    // ceil_mode: a last window must start inside the input or its left padding.
    if (ceil_mode && (out[i] - 1) * w.strides[i] >= in[i] + w.begin[i]) out[i]--;
    extra[i] =
        std::max<int64_t>(0, (out[i] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 -
                                 (in[i] + w.begin[i] + w.end[i]));
  }
  std::vector<int64_t> end_total(n);
  for (size_t i = 0; i < n; i++) end_total[i] = w.end[i] + extra[i];
  if (is_max) {
    const Tensor xp = pad_spatial(x, w.begin, end_total, lowest_of(x.dtype()));
    const Tensor best =
        pool_nd(xp, w, out, [](const Tensor& a, const Tensor& b) { return a.maximum(b); });
    if (c.node().outputs.size() < 2 || c.node().outputs[1].empty()) return one(best);
    // Indices: each spatial position's flat index (row- or column-major), padded with -1, pooled
    // alongside: the first position that holds the maximum wins.
    const bool col_major = c.attr_i("storage_order", 0) != 0;
    int64_t plane = 1;
    for (int64_t d : in) plane *= d;
    std::vector<int64_t> flat(static_cast<size_t>(plane));
    for (int64_t i = 0; i < plane; i++) {
      int64_t rest = i, idx = 0, stride = 1;
      std::vector<int64_t> coord(n);
      for (size_t d = n; d-- > 0;) {
        coord[d] = rest % in[d];
        rest /= in[d];
      }
      if (col_major) {
        for (size_t d = 0; d < n; d++) {
          idx += coord[d] * stride;
          stride *= in[d];
        }
      } else {
        idx = i;
      }
      flat[static_cast<size_t>(i)] = idx;
    }
    Shape ps{1, 1};
    ps.insert(ps.end(), in.begin(), in.end());
    const Tensor pos = pad_spatial(HostArray::of_ints(std::move(flat), ps).to_tensor(x.device()),
                                   w.begin, end_total, -1.0);
    Tensor found;
    const Tensor none = Tensor::full({}, int64_t{-1}, dtypes::int64, x.device());
    for (int64_t f = 0; f < window_size(w); f++) {
      const Tensor p = window_view(pos, w, out, f);
      const Tensor hit = (window_view(xp, w, out, f) == best).logical_and(p >= 0);
      found = found.defined() ? (found >= 0).where(found, hit.where(p, none)) : hit.where(p, none);
    }
    Shape nc_shape{x.shape(0), x.shape(1)};
    for (size_t i = 0; i < n; i++) nc_shape.push_back(1);
    const Tensor base = (Tensor::arange(x.shape(0) * x.shape(1), dtypes::int64, x.device()) * plane)
                            .reshape(nc_shape);
    return OpOutputs{tensor_value(best),
                     tensor_value((found.cast(dtypes::int64) + base).cast(dtypes::int64))};
  }
  const bool include_pad = c.attr_i("count_include_pad", 0) != 0;
  const Tensor xp = pad_spatial(x, w.begin, end_total, 0.0);
  const Tensor sum = pool_nd(xp, w, out, [](const Tensor& a, const Tensor& b) { return a + b; });
  // Divisor per output: the window's elements inside the input (and inside the pads when they
  // count), never those past the end that ceil_mode adds.
  Shape ones_shape(static_cast<size_t>(x.ndim()), 1);
  for (size_t i = 0; i < n; i++) ones_shape[i + 2] = in[i];
  Tensor ones = Tensor::ones(ones_shape, x.dtype(), x.device());
  if (include_pad) ones = pad_spatial(ones, w.begin, w.end, 1.0);
  const Tensor onesp = include_pad ? pad_spatial(ones, std::vector<int64_t>(n, 0), extra, 0.0)
                                   : pad_spatial(ones, w.begin, end_total, 0.0);
  const Tensor count =
      pool_nd(onesp, w, out, [](const Tensor& a, const Tensor& b) { return a + b; });
  return one((sum / count).cast(x.dtype()));
}

// ---- reductions ----------------------------------------------------------------------------

// The axes a reduction runs over (attribute before the opset that made them an input), or
// nullopt for "no reduction" (noop_with_empty_axes with no axes).
std::optional<std::vector<int>> reduce_axes(OpContext& c, const Tensor& x, int64_t input_from) {
  std::vector<int64_t> axes;
  if (c.opset() >= input_from) {
    if (c.has(1)) axes = c.host(1).to_ints();
  } else {
    axes = c.attr_ints("axes");
  }
  std::vector<int> out;
  if (axes.empty()) {
    if (c.attr_i("noop_with_empty_axes", 0) != 0) return std::nullopt;
    for (int i = 0; i < x.ndim(); i++) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(norm_axis(a, x.ndim(), c.node().label()));
  return out;
}

void reduction(OpRegistry& r, const std::string& name, int64_t input_from,
               std::function<Tensor(const Tensor&, const std::vector<int>&, bool)> f) {
  r[name].run = [f, input_from](OpContext& c) {
    const Tensor x = c.in(0);
    const bool keep = c.attr_i("keepdims", 1) != 0;
    auto axes = reduce_axes(c, x, input_from);
    if (!axes) return one(x);
    if (x.ndim() == 0) return one(f(x.reshape({1}), {0}, false).reshape({}));
    return one(f(x, *axes, keep));
  };
}

Tensor softmax_like(OpContext& c, const Tensor& x,
                    const std::function<Tensor(const Tensor&, int)>& f) {
  if (c.opset() >= 13) {
    const int axis = norm_axis(c.attr_i("axis", -1), x.ndim(), c.node().label());
    return f(x, axis);
  }
  // Before opset 13: the input coerced to 2-D at `axis`.
  const int axis = norm_axis(c.attr_i("axis", 1), x.ndim(), c.node().label());
  int64_t rows = 1;
  for (int i = 0; i < axis; i++) rows *= x.shape(i);
  return f(x.reshape({rows, -1}), 1).reshape(x.shape());
}

Tensor hardmax(const Tensor& x, int axis) {
  const int64_t n = x.shape(axis);
  Tensor idx = x.argmax(axis, true);
  Shape s(static_cast<size_t>(x.ndim()), 1);
  s[static_cast<size_t>(axis)] = n;
  const Tensor pos = Tensor::arange(n, dtypes::int32, x.device()).reshape(s);
  return (idx == pos)
      .where(Tensor::ones({}, x.dtype(), x.device()), Tensor::zeros({}, x.dtype(), x.device()))
      .cast(x.dtype());
}

Tensor channel_param(const Tensor& p, int rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = p.numel();
  return p.reshape(s);
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  r["MatMul"].run = [](OpContext& c) { return one(c.in(0).matmul(c.in(1))); };
  r["Gemm"].run = [](OpContext& c) {
    Tensor a = c.in(0), b = c.in(1);
    if (c.attr_i("transA", 0)) a = a.transpose(0, 1);
    if (c.attr_i("transB", 0)) b = b.transpose(0, 1);
    const double alpha = c.attr_f("alpha", 1.0), beta = c.attr_f("beta", 1.0);
    Tensor y = a.matmul(b);
    if (alpha != 1.0) y = (y * alpha).cast(a.dtype());
    if (c.has(2)) {
      Tensor bias = c.in(2).cast(y.dtype());
      y = y + (beta != 1.0 ? (bias * beta).cast(y.dtype()) : bias);
    }
    return one(y);
  };

  r["Conv"].run = [](OpContext& c) {
    std::optional<Tensor> bias;
    if (c.has(2)) bias = c.in(2);
    return one(conv_nd(c, c.in(0), c.in(1), bias));
  };
  r["ConvTranspose"].run = [](OpContext& c) {
    Tensor x = c.in(0), w = c.in(1);
    const size_t n = static_cast<size_t>(x.ndim() - 2);
    if (n < 1 || n > 3) c.fail(fmt::format("{}-D ConvTranspose is not supported", n));
    const int64_t group = c.attr_i("group", 1);
    std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    kernel = c.attr_ints("kernel_shape", kernel);
    const auto strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
    const auto dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
    auto out_pad = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
    std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    const auto out_shape = c.attr_ints("output_shape");
    const std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
    const std::vector<int64_t> in = spatial(x);
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t i = 0; i < n; i++) {
        const int64_t full = strides[i] * (in[i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1;
        const int64_t want =
            !out_shape.empty() ? out_shape[out_shape.size() - n + i] : in[i] * strides[i];
        const int64_t total = full - want;
        const bool upper = auto_pad != "SAME_LOWER";
        pads[i] = upper ? total / 2 : total - total / 2;
        pads[i + n] = total - pads[i];
      }
    } else if (auto_pad == "VALID") {
      std::fill(pads.begin(), pads.end(), 0);
    }
    Tensor y;
    if (n == 3) {
      // A sum over the depth taps of 2-D transposed convolutions (depth folded into the batch),
      // each placed at depths d * stride + k * dilation.
      const int64_t nb = x.shape(0), depth = x.shape(2), kd = w.shape(2);
      const int64_t full = (depth - 1) * strides[0] + (kd - 1) * dil[0] + 1 + out_pad[0];
      const Tensor xf =
          x.permute({0, 2, 1, 3, 4}).reshape({nb * depth, x.shape(1), x.shape(3), x.shape(4)});
      for (int64_t k = 0; k < kd; k++) {
        Tensor yk = xf.conv_transpose2d(w.select(2, k), std::nullopt, {strides[1], strides[2]}, 0,
                                        {out_pad[1], out_pad[2]}, group, {dil[1], dil[2]});
        yk =
            yk.reshape({nb, depth, yk.shape(1), yk.shape(2), yk.shape(3)}).permute({0, 2, 1, 3, 4});
        // Interleave with the stride: [N, C, D, 1, H, W] -> [N, C, D * s, H, W].
        yk = yk.unsqueeze(3).pad({{0, 0}, {0, 0}, {0, 0}, {0, strides[0] - 1}, {0, 0}, {0, 0}});
        yk = yk.reshape({nb, yk.shape(1), depth * strides[0], yk.shape(4), yk.shape(5)})
                 .slice(2, 0, (depth - 1) * strides[0] + 1);
        const int64_t before = k * dil[0];
        yk = yk.pad({{0, 0}, {0, 0}, {before, full - before - yk.shape(2)}, {0, 0}, {0, 0}});
        y = y.defined() ? y + yk : yk;
      }
    } else {
      if (n == 1) {
        x = x.unsqueeze(2);
        w = w.unsqueeze(2);
      }
      auto at = [&](const std::vector<int64_t>& v, size_t i) {
        return n == 1 ? (i == 0 ? 1 : v[0]) : v[i];
      };
      y = x.conv_transpose2d(w, std::nullopt, {at(strides, 0), at(strides, 1)}, 0,
                             {n == 1 ? 0 : out_pad[0], n == 1 ? out_pad[0] : out_pad[1]}, group,
                             {at(dil, 0), at(dil, 1)});
      if (n == 1) y = y.squeeze(2);
    }
    std::vector<int64_t> b(pads.begin(), pads.begin() + static_cast<long>(n));
    std::vector<int64_t> e(pads.begin() + static_cast<long>(n), pads.end());
    for (auto& v : b) v = -v;
    for (auto& v : e) v = -v;
    y = pad_or_crop(y, b, e, 0.0);
    if (c.has(2)) y = y + channel_param(c.in(2).cast(y.dtype()), y.ndim());
    return one(y);
  };

  r["MaxPool"].run = [](OpContext& c) {
    // The Indices output needs the generic path.
    if (auto fast = pool2d_fast(c, true, c.node().outputs.size() == 1)) return one(*fast);
    return pool(c, true);
  };
  r["AveragePool"].run = [](OpContext& c) {
    // avg_pool2d counts the padding, as count_include_pad = 1 does.
    const auto pads = c.attr_ints("pads");
    const bool no_pads = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
    if (auto fast = pool2d_fast(c, false, no_pads || c.attr_i("count_include_pad", 0) != 0))
      return one(*fast);
    return pool(c, false);
  };
  r["GlobalAveragePool"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    std::vector<int> axes;
    for (int i = 2; i < x.ndim(); i++) axes.push_back(i);
    return one(x.mean(axes, true));
  };
  r["GlobalMaxPool"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    std::vector<int> axes;
    for (int i = 2; i < x.ndim(); i++) axes.push_back(i);
    return one(x.max(axes, true));
  };

  r["BatchNormalization"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    if (c.opset() >= 14 ? c.attr_i("training_mode", 0) != 0 : false)
      c.fail("training_mode = 1 is not supported (inference only)");
    const double eps = c.attr_f("epsilon", 1e-5);
    const Tensor scale = c.in(1).cast(x.dtype()), bias = c.in(2).cast(x.dtype());
    const Tensor mean = c.in(3).cast(x.dtype()), var = c.in(4).cast(x.dtype());
    const Tensor invstd = (var + eps).rsqrt();
    return one(x.batchnorm(scale, bias, mean, invstd));
  };
  r["InstanceNormalization"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    std::vector<int> axes;
    for (int i = 2; i < x.ndim(); i++) axes.push_back(i);
    const double eps = c.attr_f("epsilon", 1e-5);
    const Tensor y = x.layernorm(axes, eps);
    return one(
        (y * channel_param(c.in(1), x.ndim()) + channel_param(c.in(2), x.ndim())).cast(x.dtype()));
  };
  r["LayerNormalization"].run = [](OpContext& c) {
    const Tensor x0 = c.in(0);
    const int axis = norm_axis(c.attr_i("axis", -1), x0.ndim(), c.node().label());
    const double eps = c.attr_f("epsilon", 1e-5);
    const Tensor x = x0.dtype() == dtypes::float64 ? x0 : x0.cast(dtypes::float32);
    std::vector<int> axes;
    for (int i = axis; i < x.ndim(); i++) axes.push_back(i);
    const Tensor mean = x.mean(axes, true);
    const Tensor d = x - mean;
    const Tensor invstd = ((d * d).mean(axes, true) + eps).rsqrt();
    Tensor y = d * invstd * c.in(1).cast(x.dtype());
    if (c.has(2)) y = y + c.in(2).cast(x.dtype());
    return OpOutputs{tensor_value(y.cast(x0.dtype())), tensor_value(mean), tensor_value(invstd)};
  };
  r["MeanVarianceNormalization"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    std::vector<int> axes;
    for (int64_t a : c.attr_ints("axes", {0, 2, 3})) axes.push_back(norm_axis(a, x.ndim(), "MVN"));
    const Tensor d = x - x.mean(axes, true);
    return one((d * ((d * d).mean(axes, true) + 1e-9).rsqrt()).cast(x.dtype()));
  };
  r["LpNormalization"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const int axis = norm_axis(c.attr_i("axis", -1), x.ndim(), c.node().label());
    const int64_t p = c.attr_i("p", 2);
    const Tensor norm = p == 1 ? x.abs().sum(axis, true) : (x * x).sum(axis, true).sqrt();
    return one((x / norm).cast(x.dtype()));
  };
  r["LRN"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const int64_t size = c.attr_i("size", 1);
    const double alpha = c.attr_f("alpha", 1e-4), beta = c.attr_f("beta", 0.75),
                 bias = c.attr_f("bias", 1.0);
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    const Tensor sq = (x * x).contiguous();  // read through `size` shifted views
    PadList p(static_cast<size_t>(x.ndim()), {0, 0});
    p[1] = {before, after};
    const Tensor sp = sq.pad(p);
    Tensor sum;
    for (int64_t k = 0; k < size; k++) {
      const Tensor s = sp.slice(1, k, k + x.shape(1));
      sum = sum.defined() ? sum + s : s;
    }
    return one((x / (sum * (alpha / static_cast<double>(size)) + bias).pow(beta)).cast(x.dtype()));
  };

  r["Softmax"].run = [](OpContext& c) {
    return one(softmax_like(c, c.in(0), [](const Tensor& x, int a) { return x.softmax(a); }));
  };
  r["LogSoftmax"].run = [](OpContext& c) {
    return one(softmax_like(c, c.in(0), [](const Tensor& x, int a) { return x.log_softmax(a); }));
  };
  r["Hardmax"].run = [](OpContext& c) { return one(softmax_like(c, c.in(0), hardmax)); };

  using R = std::function<Tensor(const Tensor&, const std::vector<int>&, bool)>;
  reduction(r, "ReduceSum", 13, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return x.sum(a, k).cast(x.dtype());
            }));
  reduction(r, "ReduceMean", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return x.mean(a, k).cast(x.dtype());
            }));
  reduction(r, "ReduceMax", 18,
            R([](const Tensor& x, const std::vector<int>& a, bool k) { return x.max(a, k); }));
  reduction(r, "ReduceMin", 18,
            R([](const Tensor& x, const std::vector<int>& a, bool k) { return x.min(a, k); }));
  reduction(r, "ReduceProd", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return x.prod(a, k).cast(x.dtype());
            }));
  reduction(r, "ReduceL1", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return x.abs().sum(a, k).cast(x.dtype());
            }));
  reduction(r, "ReduceL2", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return (x * x).sum(a, k).sqrt().cast(x.dtype());
            }));
  reduction(r, "ReduceSumSquare", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return (x * x).sum(a, k).cast(x.dtype());
            }));
  reduction(r, "ReduceLogSum", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              return x.sum(a, k).log().cast(x.dtype());
            }));
  reduction(r, "ReduceLogSumExp", 18, R([](const Tensor& x, const std::vector<int>& a, bool k) {
              const Tensor m = x.max(a, true);
              const Tensor s = (x - m).exp().sum(a, true).log() + m;
              if (k) return s.cast(x.dtype());
              std::vector<int> sorted = a;
              std::sort(sorted.rbegin(), sorted.rend());
              Tensor out = s;
              for (int ax : sorted) out = out.squeeze(ax);
              return out.cast(x.dtype());
            }));

  for (const char* name : {"ArgMax", "ArgMin"}) {
    const bool is_max = std::string(name) == "ArgMax";
    r[name].run = [is_max](OpContext& c) {
      const Tensor x = c.in(0);
      const int axis = norm_axis(c.attr_i("axis", 0), x.ndim(), c.node().label());
      const bool keep = c.attr_i("keepdims", 1) != 0;
      const bool last = c.attr_i("select_last_index", 0) != 0;
      const Tensor src = last ? x.flip(axis) : x;
      Tensor idx = (is_max ? src.argmax(axis, keep) : src.argmin(axis, keep)).cast(dtypes::int64);
      if (last) idx = (x.shape(axis) - 1) - idx;
      return one(idx.cast(dtypes::int64));
    };
  }

  r["TopK"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const int64_t k = c.opset() >= 10 ? c.host(1).int_at(0) : c.attr_i("k", 1);
    const int axis = norm_axis(c.attr_i("axis", -1), x.ndim(), c.node().label());
    auto [v, i] = x.topk(k, axis, c.attr_i("largest", 1) != 0, c.attr_i("sorted", 1) != 0);
    return OpOutputs{tensor_value(v), tensor_value(i)};
  };

  r["CumSum"].run = [](OpContext& c) {
    Tensor x = c.in(0);
    const int axis = norm_axis(c.host(1).int_at(0), x.ndim(), c.node().label());
    const bool exclusive = c.attr_i("exclusive", 0) != 0, reverse = c.attr_i("reverse", 0) != 0;
    if (reverse) x = x.flip(axis);
    Tensor y = x.cumsum(axis).cast(x.dtype());
    if (exclusive) {
      PadList p(static_cast<size_t>(x.ndim()), {0, 0});
      p[static_cast<size_t>(axis)] = {1, 0};
      y = y.pad(p).slice(axis, 0, x.shape(axis));
    }
    if (reverse) y = y.flip(axis);
    return one(y);
  };

  r["Einsum"].run = [](OpContext& c) {
    std::vector<Tensor> ops;
    for (size_t i = 0; i < c.num_inputs(); i++) ops.push_back(c.in(i));
    return one(einsum(c.attr_s("equation", ""), ops));
  };

  r["Dropout"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    if (c.has(2) && c.host(2).int_at(0) != 0)
      c.fail("training_mode = true is not supported (inference only)");
    OpOutputs out{tensor_value(x)};
    if (c.node().outputs.size() > 1)
      out.push_back(tensor_value(Tensor::ones(x.shape(), dtypes::bool_, x.device())));
    return out;
  };
}

}  // namespace vkgrad::onnx
