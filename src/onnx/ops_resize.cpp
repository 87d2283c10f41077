// onnx: Resize and Upsample. Each resized axis is one matrix product: the output positions'
// weights over the input positions (nearest: one 1 per row; linear: two taps; cubic: four) are
// computed on the host from the shapes alone and applied along that axis.
#include <fmt/format.h>

#include <cmath>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

struct ResizeMode {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
};

// The source coordinate of output position x along an axis.
// `out` is the output length the coordinates are relative to: in * scale (unrounded) when
// scales were given, as ONNX's reference computes it.
double source_coord(const ResizeMode& m, double x, int64_t in, double out, double scale,
                    double roi_start, double roi_end) {
  if (m.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m.coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m.coord == "align_corners")
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
  if (m.coord == "asymmetric") return x / scale;
  if (m.coord == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m.coord == "tf_crop_and_resize")
    return out > 1 ? roi_start * static_cast<double>(in - 1) +
                         x * (roi_end - roi_start) * static_cast<double>(in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
  throw Error("ONNX: Resize: coordinate_transformation_mode '" + m.coord + "' is not supported");
}

int64_t nearest_index(const ResizeMode& m, double xo, int64_t in) {
  double v;
  if (m.nearest == "round_prefer_floor")
    v = xo == std::floor(xo) + 0.5 ? std::floor(xo) : std::round(xo);
  else if (m.nearest == "round_prefer_ceil")
    v = xo == std::floor(xo) + 0.5 ? std::ceil(xo) : std::round(xo);
  else if (m.nearest == "floor")
    v = std::floor(xo);
  else if (m.nearest == "ceil")
    v = std::ceil(xo);
  else
    throw Error("ONNX: Resize: nearest_mode '" + m.nearest + "' is not supported");
  return std::clamp<int64_t>(static_cast<int64_t>(v), 0, in - 1);
}

// Row-major [out, in] weights, and per output whether it lies outside (tf_crop_and_resize).
std::pair<std::vector<double>, std::vector<double>> axis_weights(const ResizeMode& m, int64_t in,
                                                                 int64_t out, double out_len,
                                                                 double scale, double rs,
                                                                 double re) {
  std::vector<double> w(static_cast<size_t>(out * in), 0.0), outside(static_cast<size_t>(out), 0.0);
  for (int64_t x = 0; x < out; x++) {
    double xo = source_coord(m, static_cast<double>(x), in, out_len, scale, rs, re);
    double* row = &w[static_cast<size_t>(x * in)];
    if (m.coord == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {
      outside[static_cast<size_t>(x)] = 1.0;
      continue;
    }
    if (m.mode == "nearest") {
      row[nearest_index(m, xo, in)] = 1.0;
    } else if (m.mode == "linear") {
      xo = std::clamp(xo, 0.0, static_cast<double>(in - 1));
      const int64_t x0 = static_cast<int64_t>(std::floor(xo));
      const int64_t x1 = std::min(x0 + 1, in - 1);
      const double t = xo - static_cast<double>(x0);
      row[x0] += 1.0 - t;
      row[x1] += t;
    } else if (m.mode == "cubic") {
      const double a = m.cubic_a;
      const int64_t x0 = static_cast<int64_t>(std::floor(xo));
      const double t = xo - static_cast<double>(x0);
      auto near = [&](double s) { return ((a + 2) * s - (a + 3)) * s * s + 1; };
      auto far = [&](double s) { return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a; };
      const double coef[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
      double total = 0;
      for (int k = 0; k < 4; k++) {
        int64_t src = x0 - 1 + k;
        if (src < 0 || src >= in) {
          if (m.exclude_outside) continue;
          src = std::clamp<int64_t>(src, 0, in - 1);
        }
        row[src] += coef[k];
        total += coef[k];
      }
      if (m.exclude_outside && total != 0)
        for (int64_t k = 0; k < in; k++) row[k] /= total;
    } else {
      throw Error("ONNX: Resize: mode '" + m.mode + "' is not supported");
    }
  }
  return {w, outside};
}

OpOutputs resize(OpContext& c, bool upsample) {
  Tensor x = c.in(0);
  const int rank = x.ndim();
  ResizeMode m;
  m.mode = c.attr_s("mode", "nearest");
  if (upsample || c.opset() < 11) {
    m.coord = "asymmetric";
    m.nearest = "floor";
  } else {
    m.coord = c.attr_s("coordinate_transformation_mode", "half_pixel");
    m.nearest = c.attr_s("nearest_mode", "round_prefer_floor");
  }
  m.cubic_a = c.attr_f("cubic_coeff_a", -0.75);
  m.exclude_outside = c.attr_i("exclude_outside", 0) != 0;
  m.extrapolation = c.attr_f("extrapolation_value", 0.0);
  if (m.mode == "bilinear" || m.mode == "trilinear") m.mode = "linear";

  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (upsample) {
    scales = c.opset() >= 9 ? c.host(1).to_floats() : c.attr_floats("scales");
  } else if (c.opset() < 11) {
    scales = c.host(1).to_floats();
  } else {
    if (c.has(1) && c.host(1).numel() > 0) roi = c.host(1).to_floats();
    if (c.has(2) && c.host(2).numel() > 0) scales = c.host(2).to_floats();
    if (c.has(3) && c.host(3).numel() > 0) sizes = c.host(3).to_ints();
  }
  if (c.has_attr("axes") || c.attr_s("keep_aspect_ratio_policy", "stretch") != "stretch")
    c.fail("the axes and keep_aspect_ratio_policy attributes are not supported");
  if (scales.empty() == sizes.empty()) c.fail("exactly one of scales and sizes must be given");
  if (!scales.empty() && static_cast<int>(scales.size()) != rank)
    c.fail(fmt::format("{} scales for a rank-{} input", scales.size(), rank));
  if (!sizes.empty() && static_cast<int>(sizes.size()) != rank)
    c.fail(fmt::format("{} sizes for a rank-{} input", sizes.size(), rank));

  const DType dt = x.dtype();
  Tensor y = dt.is_float() ? x : x.cast(dtypes::float32);
  for (int d = 0; d < rank; d++) {
    const int64_t in = x.shape(d);
    const int64_t out =
        sizes.empty() ? static_cast<int64_t>(
                            std::floor(static_cast<double>(in) * scales[static_cast<size_t>(d)]))
                      : sizes[static_cast<size_t>(d)];
    const double scale = sizes.empty() ? scales[static_cast<size_t>(d)]
                                       : static_cast<double>(out) / static_cast<double>(in);
    const bool has_roi = m.coord == "tf_crop_and_resize";
    if (out == in && scale == 1.0 && !has_roi) continue;
    const double rs = has_roi ? roi.at(static_cast<size_t>(d)) : 0.0;
    const double re = has_roi ? roi.at(static_cast<size_t>(d + rank)) : 1.0;
    const double out_len =
        sizes.empty() ? static_cast<double>(in) * scale : static_cast<double>(out);
    auto [w, outside] = axis_weights(m, in, out, out_len, scale, rs, re);
    // y moved so axis d is last, times W^T: [..., in] @ [in, out].
    const AxisLast mv = axis_last(rank, d);
    const Tensor wt =
        HostArray::of_floats(std::move(w), {out, in}, y.dtype()).to_tensor(c.device());
    Tensor moved = y.permute(mv.order).matmul(wt.transpose(0, 1));
    if (has_roi) {
      const Tensor mask =
          HostArray::of_floats(std::move(outside), {out}, y.dtype()).to_tensor(c.device());
      moved = (mask != 0).where(Tensor(m.extrapolation).cast(y.dtype()), moved);
    }
    y = moved.permute(mv.back);
  }
  if (!dt.is_float()) y = y.round().cast(dt);
  return OpOutputs{tensor_value(y.cast(dt))};
}

// GridSample: each output position reads X at a normalized grid point through taps (1 nearest,
// 4 bilinear, 16 bicubic). The taps become one sparse-as-dense weight matrix per image,
// [Hout*Wout, H*W], applied as one batched matmul.
OpOutputs grid_sample(OpContext& c) {
  const Tensor x = c.in(0), grid = c.in(1);
  if (x.ndim() != 4 || grid.ndim() != 4 || grid.shape(3) != 2)
    c.fail("only 2-D sampling (X [N, C, H, W], grid [N, Hout, Wout, 2]) is supported");
  const std::string mode = c.attr_s("mode", "bilinear");
  const std::string pad = c.attr_s("padding_mode", "zeros");
  const bool align = c.attr_i("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    c.fail("mode '" + mode + "' is not bilinear, nearest or bicubic");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    c.fail("padding_mode '" + pad + "' is not zeros, border or reflection");
  const int64_t n = x.shape(0), ch = x.shape(1), h = x.shape(2), w = x.shape(3);
  const int64_t ho = grid.shape(1), wo = grid.shape(2), p = ho * wo, q = h * w;
  const DType ft = dtypes::float32;
  const Tensor g = grid.cast(ft).reshape({n, p, 2});
  // Pixel coordinates.
  auto denorm = [&](const Tensor& v, int64_t size) {
    const double s = static_cast<double>(size);
    return align ? (v + 1.0) * ((s - 1) / 2) : ((v + 1.0) * s - 1.0) * 0.5;
  };
  auto reflect = [&](const Tensor& v, int64_t size) {
    const double lo = align ? 0.0 : -0.5, hi = align ? static_cast<double>(size - 1) : size - 0.5;
    const double rng = hi - lo;
    if (rng <= 0) return Tensor::zeros({}, ft, x.device()).expand(v.shape());
    const Tensor below = v<lo, above = v> hi;
    const Tensor dx = below.where(lo - v, above.where(v - hi, 0.0));
    const Tensor k = (dx / rng).floor();
    const Tensor rem = dx - k * rng;
    const Tensor even = (k - (k * 0.5).floor() * 2.0) == 0.0;
    const Tensor from_lo = even.where(rem + lo, hi - rem), from_hi = even.where(hi - rem, rem + lo);
    return below.where(from_lo, above.where(from_hi, v)).cast(ft);
  };
  Tensor px = denorm(g.select(-1, 0), w), py = denorm(g.select(-1, 1), h);  // [N, P]
  if (pad == "reflection") {
    px = reflect(px, w);
    py = reflect(py, h);
  }
  // One tap: integer pixel (iy, ix) with weight wt, all [N, P].
  Tensor m;
  const Tensor cols = Tensor::arange(q, dtypes::int64, x.device()).reshape({1, 1, q});
  auto tap = [&](const Tensor& iy, const Tensor& ix, const Tensor& wt) {
    Tensor yy = iy.cast(dtypes::int64), xx = ix.cast(dtypes::int64);
    Tensor weight = wt.cast(ft);
    if (pad == "zeros") {
      const Tensor inside = (yy >= 0).logical_and(yy < h).logical_and(xx >= 0).logical_and(xx < w);
      weight = inside.where(weight, 0.0).cast(ft);
    }
    yy = yy.clip(int64_t{0}, h - 1);
    xx = xx.clip(int64_t{0}, w - 1);
    const Tensor idx = (yy * w + xx).unsqueeze(-1);  // [N, P, 1]
    const Tensor part = (idx == cols).where(weight.unsqueeze(-1), 0.0).cast(ft);
    m = m.defined() ? m + part : part;
  };
  if (mode == "nearest") {
    tap(py.round(), px.round(), Tensor::ones({}, ft, x.device()).expand({n, p}));
  } else if (mode == "bilinear") {
    const Tensor x0 = px.floor(), y0 = py.floor();
    const Tensor fx = px - x0, fy = py - y0;
    tap(y0, x0, (1.0 - fy) * (1.0 - fx));
    tap(y0, x0 + 1.0, (1.0 - fy) * fx);
    tap(y0 + 1.0, x0, fy * (1.0 - fx));
    tap(y0 + 1.0, x0 + 1.0, fy * fx);
  } else {
    const double a = -0.75;
    auto coeffs = [&](const Tensor& t) {
      auto near = [&](const Tensor& s) { return ((s * (a + 2)) - (a + 3)) * s * s + 1.0; };
      auto far = [&](const Tensor& s) { return ((s * a - 5 * a) * s + 8 * a) * s - 4 * a; };
      return std::vector<Tensor>{far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)};
    };
    const Tensor x0 = px.floor(), y0 = py.floor();
    const auto cx = coeffs(px - x0), cy = coeffs(py - y0);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++)
        tap(y0 + static_cast<double>(i - 1), x0 + static_cast<double>(j - 1),
            cy[static_cast<size_t>(i)] * cx[static_cast<size_t>(j)]);
  }
  // [N, C, Q] @ [N, Q, P] -> [N, C, P]
  const Tensor out = x.cast(ft).reshape({n, ch, q}).matmul(m.transpose(1, 2));
  return OpOutputs{tensor_value(out.reshape({n, ch, ho, wo}).cast(x.dtype()))};
}

// RoiAlign: each region's output bins average (or take the max of) bilinear samples of its
// image. The sample positions depend on the region's coordinates, read on the host; each region
// is then one product of its image [C, H*W] with a weight matrix [H*W, bins] (avg), or the max
// over per-sample, per-corner weighted gathers (max, as onnxruntime defines it).
OpOutputs roi_align(OpContext& c) {
  const Tensor x = c.in(0);
  const HostArray& rois = c.host(1);
  const HostArray& batch = c.host(2);
  if (x.ndim() != 4 || rois.shape.size() != 2 || rois.shape[1] != 4)
    c.fail("X must be [N, C, H, W] and rois [num_rois, 4]");
  const std::string mode = c.attr_s("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail("mode '" + mode + "' is not avg or max");
  const bool half_pixel =
      c.attr_s("coordinate_transformation_mode",
               c.opset() >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  const int64_t oh = c.attr_i("output_height", 1), ow = c.attr_i("output_width", 1);
  const int64_t ratio = c.attr_i("sampling_ratio", 0);
  const double scale = c.attr_f("spatial_scale", 1.0);
  const int64_t ch = x.shape(1), h = x.shape(2), w = x.shape(3), q = h * w, p = oh * ow;
  const DType ft = x.dtype();
  std::vector<Tensor> outs;
  for (int64_t r = 0; r < rois.shape[0]; r++) {
    const double off = half_pixel ? 0.5 : 0.0;
    const double x1 = rois.at(r * 4) * scale - off, y1 = rois.at(r * 4 + 1) * scale - off;
    const double x2 = rois.at(r * 4 + 2) * scale - off, y2 = rois.at(r * 4 + 3) * scale - off;
    double rw = x2 - x1, rh = y2 - y1;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    const int64_t gh =
        ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
    const int64_t gw =
        ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    // Per sample: its four corners (flat index, weight) for every bin; weight 0 outside.
    struct Corner {
      int64_t at;
      double wt;
    };
    const int64_t samples = gh * gw;
    std::vector<double> avg(static_cast<size_t>(p * q), 0.0);
    std::vector<std::vector<double>> corner_mats;
    if (mode == "max")
      corner_mats.assign(static_cast<size_t>(samples * 4),
                         std::vector<double>(static_cast<size_t>(p * q), 0.0));
    for (int64_t ph = 0; ph < oh; ph++)
      for (int64_t pw = 0; pw < ow; pw++)
        for (int64_t iy = 0; iy < gh; iy++)
          for (int64_t ix = 0; ix < gw; ix++) {
            double yy = y1 + static_cast<double>(ph) * bh +
                        (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
            double xx = x1 + static_cast<double>(pw) * bw +
                        (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
            if (yy < -1.0 || yy > static_cast<double>(h) || xx < -1.0 ||
                xx > static_cast<double>(w))
              continue;
            yy = std::max(yy, 0.0);
            xx = std::max(xx, 0.0);
            int64_t ylo = static_cast<int64_t>(yy), xlo = static_cast<int64_t>(xx), yhi, xhi;
            if (ylo >= h - 1) {
              yhi = ylo = h - 1;
              yy = static_cast<double>(ylo);
            } else {
              yhi = ylo + 1;
            }
            if (xlo >= w - 1) {
              xhi = xlo = w - 1;
              xx = static_cast<double>(xlo);
            } else {
              xhi = xlo + 1;
            }
            const double ly = yy - static_cast<double>(ylo), lx = xx - static_cast<double>(xlo);
            const double hy = 1.0 - ly, hx = 1.0 - lx;
            const Corner corners[4] = {{ylo * w + xlo, hy * hx},
                                       {ylo * w + xhi, hy * lx},
                                       {yhi * w + xlo, ly * hx},
                                       {yhi * w + xhi, ly * lx}};
            const int64_t bin = ph * ow + pw, sample = iy * gw + ix;
            for (int k = 0; k < 4; k++) {
              if (mode == "avg")
                avg[static_cast<size_t>(bin * q + corners[k].at)] += corners[k].wt / count;
              else
                corner_mats[static_cast<size_t>(sample * 4 + k)]
                           [static_cast<size_t>(bin * q + corners[k].at)] = corners[k].wt;
            }
          }
    int64_t b = batch.int_at(r);
    if (b < 0 || b >= x.shape(0)) c.fail(fmt::format("batch index {} is out of range", b));
    const Tensor img = x.select(0, b).reshape({ch, q});
    Tensor y;
    if (mode == "avg") {
      y = img.matmul(
          HostArray::of_floats(std::move(avg), {p, q}, ft).to_tensor(c.device()).transpose(0, 1));
    } else {
      for (auto& m : corner_mats) {
        const Tensor v = img.matmul(
            HostArray::of_floats(std::move(m), {p, q}, ft).to_tensor(c.device()).transpose(0, 1));
        y = y.defined() ? y.maximum(v) : v;
      }
      if (!y.defined()) y = Tensor::zeros({ch, p}, ft, c.device());
    }
    outs.push_back(y.reshape({ch, oh, ow}));
  }
  if (outs.empty()) return OpOutputs{tensor_value(Tensor::zeros({0, ch, oh, ow}, ft, c.device()))};
  return OpOutputs{tensor_value(stack(outs, 0).cast(ft))};
}

}  // namespace

void register_misc_ops(OpRegistry& r) {
  r["RoiAlign"].run = roi_align;
  r["GridSample"].run = grid_sample;
  r["Resize"].run = [](OpContext& c) { return resize(c, false); };
  r["Upsample"].run = [](OpContext& c) { return resize(c, true); };
}

const OpRegistry& registry() {
  static const OpRegistry table = [] {
    OpRegistry r;
    register_math_ops(r);
    register_nn_ops(r);
    register_shape_ops(r);
    register_misc_ops(r);
    register_loss_ops(r);
    register_quant_ops(r);
    register_signal_ops(r);
    register_host_ops(r);
    register_rnn_ops(r);
    register_control_ops(r);
    return r;
  }();
  return table;
}

}  // namespace vkgrad::onnx
