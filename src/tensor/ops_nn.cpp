// tensor: linear algebra and the functional nn ops, written tinygrad's way so each is a handful
// of kernels: matmul is a broadcast multiply reduced over a last axis (one kernel, fused with an
// elementwise epilogue), conv2d and the pools are views of sliding windows (_pool) reduced the
// same way, the losses are log_softmax plus a one-hot compare.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {

using tensor::shape_str;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// "(2, 3) float32", for messages that name an operand.
std::string desc(const Tensor& t) { return shape_str(t.shape()) + " " + t.dtype().name(); }

std::string pair_str(Int2 v) {
  return "(" + std::to_string(v.h) + ", " + std::to_string(v.w) + ")";
}

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Pads the last two dimensions by (before, after) pairs that may be negative (a negative amount
// crops, as tinygrad's _pad_constant): conv_transpose2d asks for that when padding > (k-1)*d.
Tensor pad_last2(const Tensor& x, const PadList& hw, double value) {
  const auto nd = static_cast<size_t>(x.ndim());
  PadList crop(nd), grow(nd, {0, 0});
  bool any_crop = false, any_grow = false;
  for (size_t i = 0; i < nd; ++i) crop[i] = {0, x.shape()[i]};
  for (size_t j = 0; j < 2; ++j) {
    const size_t i = nd - 2 + j;
    const auto [before, after] = hw[j];
    crop[i] = {std::max<int64_t>(0, -before), x.shape()[i] - std::max<int64_t>(0, -after)};
    grow[i] = {std::max<int64_t>(0, before), std::max<int64_t>(0, after)};
    any_crop |= before < 0 || after < 0;
    any_grow |= before > 0 || after > 0;
  }
  Tensor y = any_crop ? x.shrink(crop) : x;
  return any_grow ? y.pad(grow, value) : y;
}

// tinygrad's _pool: the sliding windows of the last k.size() dimensions as views, shaped
// (..., o_1, ..., o_n, k_1, ..., k_n). Callers have checked d*(k-1)+1 <= i for each dimension.
Tensor pool(const Tensor& x, const Shape& k, const Shape& s, const Shape& d) {
  const size_t nk = k.size();
  const size_t noop = static_cast<size_t>(x.ndim()) - nk;
  const Shape lead(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(noop));
  Shape in(x.shape().begin() + static_cast<std::ptrdiff_t>(noop), x.shape().end());
  Shape o(nk);
  bool simple = true;
  for (size_t j = 0; j < nk; ++j) {
    o[j] = ceil_div(in[j] - d[j] * (k[j] - 1), s[j]);
    simple = simple && k[j] <= s[j] && d[j] == 1;
  }
  auto keep = [&](const Shape& tail) {  // shrink bounds: lead dims whole, then (0, tail[j])
    PadList b;
    for (int64_t n : lead) b.emplace_back(0, n);
    for (int64_t n : tail) b.emplace_back(0, n);
    return b;
  };
  std::vector<int> order(noop);
  for (size_t i = 0; i < noop; ++i) order[i] = static_cast<int>(i);
  if (simple) {  // non-overlapping windows: pad/crop to o*s, split into (o, s), keep (o, k)
    PadList pads(noop + nk, {0, 0});
    Shape span, split, win;
    for (size_t j = 0; j < nk; ++j) {
      pads[noop + j] = {0, std::max<int64_t>(0, o[j] * s[j] - in[j])};
      span.push_back(o[j] * s[j]);
      split.insert(split.end(), {o[j], s[j]});
      win.insert(win.end(), {o[j], k[j]});
    }
    Tensor y = x.pad(pads).shrink(keep(span)).reshape(concat(lead, split)).shrink(keep(win));
    for (size_t j = 0; j < nk; ++j) order.push_back(static_cast<int>(noop + 2 * j));
    for (size_t j = 0; j < nk; ++j) order.push_back(static_cast<int>(noop + 2 * j + 1));
    return y.permute(order);
  }
  // Overlapping windows: repeat the input so that row r of a (k, i*f + d) reshape starts d*r
  // elements further along; a stride is then a (o, s) split keeping column 0.
  Shape reps(noop, 1), flat, rows, rows_o, rows_os, rows_o1, kept;
  for (size_t j = 0; j < nk; ++j) {
    const int64_t f = std::max<int64_t>(1, ceil_div(o[j] * s[j] - d[j], in[j]));
    const int64_t row = in[j] * f + d[j];
    reps.push_back(ceil_div(k[j] * row, in[j]));
    flat.push_back(k[j] * row);
    rows.insert(rows.end(), {k[j], row});
    rows_o.insert(rows_o.end(), {k[j], o[j] * s[j]});
    rows_os.insert(rows_os.end(), {k[j], o[j], s[j]});
    rows_o1.insert(rows_o1.end(), {k[j], o[j], 1});
    kept.insert(kept.end(), {k[j], o[j]});
  }
  Tensor y = x.repeat(reps).shrink(keep(flat)).reshape(concat(lead, rows));
  y = y.shrink(keep(rows_o)).reshape(concat(lead, rows_os));
  y = y.shrink(keep(rows_o1)).reshape(concat(lead, kept));
  for (size_t j = 0; j < nk; ++j) order.push_back(static_cast<int>(noop + 2 * j + 1));
  for (size_t j = 0; j < nk; ++j) order.push_back(static_cast<int>(noop + 2 * j));
  return y.permute(order);
}

void check_positive(Int2 v, const char* what, const char* op, const Tensor& x) {
  if (v.h <= 0 || v.w <= 0)
    throw ShapeError(std::string(op) + ": " + what + " must be positive, got " + pair_str(v) +
                     " (input " + desc(x) + ")");
}

// The windows of a padded input xp (N, G*Cin, H, W) for weights w (G*Rcout, Cin, kh, kw),
// broadcast against the weights as (N, G, Rcout, oh, ow, Cin, kh, kw).
Tensor windows(const Tensor& xp, const Tensor& w, Int2 stride, Int2 dilation, int64_t groups) {
  const int64_t bs = xp.shape(0), cin = w.shape(1), rcout = w.shape(0) / groups;
  const int64_t kh = w.shape(2), kw = w.shape(3);
  const Tensor win = pool(xp, {kh, kw}, {stride.h, stride.w}, {dilation.h, dilation.w});
  const int64_t oh = win.shape(2), ow = win.shape(3);
  return win.reshape({bs, groups, cin, 1, oh, ow, kh, kw})
      .expand({bs, groups, cin, rcout, oh, ow, kh, kw})
      .permute({0, 1, 3, 4, 5, 2, 6, 7});
}

// Grouped weights (G*A, B, kh, kw) as those of the convolution that transposes theirs: each
// group's two channel dimensions swapped and the taps flipped, (G*B, A, kh, kw). Used by
// conv_transpose2d's stride-1 form and by a convolution's input gradient.
Tensor transposed_weights(const Tensor& w, int64_t groups) {
  return w.unflatten(0, {groups, -1}).transpose(1, 2).flip({3, 4}).flatten(0, 1);
}

// conv2d of a 4-D input with explicit (before, after) pads per spatial dimension (negative
// crops). x (N, G*Cin, H, W), w (G*Rcout, Cin, kh, kw): windows (N, G*Cin, oh, ow, kh, kw) are
// broadcast against the weight as (N, G, Rcout, oh, ow, Cin, kh, kw) and summed over the last
// three axes — one reduce kernel.
Tensor conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Int2 stride,
            const PadList& pads, Int2 dilation, int64_t groups, const char* op) {
  const int64_t bs = x.shape(0), cin = w.shape(1), cout = w.shape(0);
  const int64_t kh = w.shape(2), kw = w.shape(3), rcout = cout / groups;
  Tensor xp = pad_last2(x, pads, 0.0);
  const int64_t h = xp.shape(2), wd = xp.shape(3);
  if (h < dilation.h * (kh - 1) + 1 || wd < dilation.w * (kw - 1) + 1)
    throw ShapeError(std::string(op) + ": kernel " + pair_str({kh, kw}) + " with dilation " +
                     pair_str(dilation) + " is larger than the padded input " + pair_str({h, wd}) +
                     " (input " + desc(x) + ", weight " + desc(w) + ")");
  const Tensor win = windows(xp, w, stride, dilation, groups);
  const int64_t oh = win.shape(3), ow = win.shape(4);
  Tensor out = win.mul(w.reshape({1, groups, rcout, 1, 1, cin, kh, kw}))
                   .sum(std::vector<int>{-1, -2, -3})
                   .reshape({bs, cout, oh, ow});
  // The input's gradient (conv_gradient) as a convolution of the output's with the weights
  // flipped and transposed (a copy of them, so the GEMM reads them in place), instead of each
  // window's gradient (N x Cin x oh x ow x kh x kw products, summed over the output channels)
  // folded back over the overlapping windows: where the windows are at least as many as the
  // weights (N x groups x oh x ow >= Cout), as in a network's wide early layers (ResNet-18's
  // step at batch 16: 64 channels at 16 x 16, 3.9 -> 1.4 ms a conv). A strided one keeps the
  // windows' gradient (its transposed form would be a sub-pixel convolution of more products).
  if (stride.h == 1 && stride.w == 1 && (kh > 1 || kw > 1 || dilation.h > 1 || dilation.w > 1) &&
      bs * groups * oh * ow >= cout && out.dtype().is_float() &&
      !lazy::has_sym(tensor::sym_shape(x))) {
    const IntTuple arg{static_cast<int64_t>(tensor::GradRule::conv2d),
                       pads[0].first,
                       pads[0].second,
                       pads[1].first,
                       pads[1].second,
                       dilation.h,
                       dilation.w,
                       groups};
    out = tensor::make(UOp::make(Ops::GRAD_RULE, out.dtype(),
                                 {tensor::uop(out), tensor::uop(x), tensor::uop(w)}, arg),
                       out.shape(), out.dtype(), out.device());
  }
  return bias ? out.add(bias->reshape({1, cout, 1, 1})) : out;
}

void check_bias(const std::optional<Tensor>& bias, int64_t cout, const char* op, const Tensor& w) {
  if (bias && (bias->ndim() != 1 || bias->shape(0) != cout))
    throw ShapeError(std::string(op) + ": bias " + desc(*bias) + " must have shape (" +
                     std::to_string(cout) + ") for weight " + desc(w));
}

// The pools: (..., H, W) -> (..., oh, ow, kh, kw) windows of the input padded with `value`.
Tensor pool2d(const Tensor& x, Int2 kernel, std::optional<Int2> stride, Int2 padding, double value,
              const char* op) {
  const Int2 s = stride.value_or(kernel);
  if (x.ndim() < 2)
    throw ShapeError(std::string(op) + ": input must have at least 2 dimensions, got " + desc(x));
  check_positive(kernel, "kernel size", op, x);
  check_positive(s, "stride", op, x);
  if (padding.h < 0 || padding.w < 0 || 2 * padding.h > kernel.h || 2 * padding.w > kernel.w)
    throw ShapeError(std::string(op) + ": padding " + pair_str(padding) +
                     " must be between 0 and half the kernel size " + pair_str(kernel) +
                     " (input " + desc(x) + ")");
  const int64_t h = x.shape(-2) + 2 * padding.h, w = x.shape(-1) + 2 * padding.w;
  if (h < kernel.h || w < kernel.w)
    throw ShapeError(std::string(op) + ": kernel " + pair_str(kernel) +
                     " is larger than the padded input " + pair_str({h, w}) + " (input " + desc(x) +
                     ")");
  Tensor xp = pad_last2(x, {{padding.h, padding.h}, {padding.w, padding.w}}, value);
  return pool(xp, {kernel.h, kernel.w}, {s.h, s.w}, {1, 1});
}

// The lowest value of `dt` (as a double): what max pooling pads with.
double lowest(DType dt) {
  if (dt.is_float()) return -std::numeric_limits<double>::infinity();
  if (dt.is_bool() || dt.is_unsigned()) return 0.0;
  return -std::ldexp(1.0, dt.itemsize() * 8 - 1);
}

// For the class-index losses: true where index == class, with the classes along `dim` of the
// result (index.unsqueeze(dim) == arange(n) laid out along dim).
Tensor class_mask(const Tensor& index, int64_t n, int dim) {
  const DType wide = n > std::numeric_limits<int32_t>::max() ? dtypes::int64 : dtypes::int32;
  Tensor idx = index.dtype().itemsize() < wide.itemsize() ? index.cast(wide) : index;
  Tensor classes = tensor::iota(n, wide, index.device());
  if (classes.dtype() != idx.dtype()) classes = classes.cast(idx.dtype());
  Shape s(static_cast<size_t>(index.ndim() + 1 - dim), 1);
  s[0] = n;
  return idx.unsqueeze(dim).eq(classes.reshape(s));
}

// -log_softmax picked out at each class index along `axis`, averaged.
Tensor index_nll(const Tensor& logits, const Tensor& target, int axis) {
  Tensor logp = logits.log_softmax(axis);
  Tensor picked = class_mask(target, logits.shape(axis), axis).where(logp, Tensor(0));
  return picked.sum(axis).mean().neg();
}

}  // namespace

// ---- matmul -------------------------------------------------------------------------------------

// tinygrad's dot: a (..., M, K) -> (..., M, 1, K), b (..., K, N) -> (..., 1, N, K) (a transposed
// view, so N is b's stride-1 axis), multiply and sum the last axis. 1-D operands skip the
// inserted axis, as NumPy drops them from the result.
Tensor matmul(const Tensor& a, const Tensor& b) {
  const int dx = a.ndim(), dw = b.ndim();
  if (dx == 0 || dw == 0)
    throw ShapeError("matmul: both operands need at least 1 dimension, got " + desc(a) + " and " +
                     desc(b));
  const int axis_w = -std::min(dw, 2);
  const int64_t k = a.shape(-1);
  if (k != b.shape(axis_w))
    throw ShapeError("matmul: inner dimensions differ: " + desc(a) + " @ " + desc(b) + " (" +
                     std::to_string(k) + " != " + std::to_string(b.shape(axis_w)) + ")");
  if (dx >= 2 && dw >= 2) {
    const Shape ba(a.shape().begin(), a.shape().end() - 2),
        bb(b.shape().begin(), b.shape().end() - 2);
    try {
      tensor::broadcast_shape(ba, bb, "matmul");
    } catch (const ShapeError&) {
      throw ShapeError("matmul: batch dimensions " + shape_str(ba) + " and " + shape_str(bb) +
                       " do not broadcast: " + desc(a) + " @ " + desc(b));
    }
  }
  const int inserted = std::min({dx - 1, dw - 1, 1});
  // The operands' symbolic shapes with the axes of 1 inserted (a variable keeps its axis even
  // when bound to 1).
  const Shape &as = tensor::sym_shape(a), &bs = tensor::sym_shape(b);
  Shape xs(as.begin(), as.end() - 1);
  xs.insert(xs.end(), static_cast<size_t>(inserted), 1);
  xs.push_back(as.back());
  Shape ws(bs.begin(), bs.end() - std::min(dw, 2));
  ws.insert(ws.end(), static_cast<size_t>(inserted), 1);
  ws.insert(ws.end(), bs.end() + axis_w, bs.end());
  const Tensor x = tensor::reshape_sym(a, xs), w = tensor::reshape_sym(b, ws);
  // The product before the sum: (..., M, N, K) elements, each index of it computed.
  Shape wt = w.shape();
  std::swap(wt.back(), wt[wt.size() - static_cast<size_t>(-axis_w)]);
  tensor::checked_numel(tensor::broadcast_shape(x.shape(), wt, "matmul"),
                        dtypes::least_upper_dtype(a.dtype(), b.dtype()), "matmul");
  Tensor out = x.mul(w.transpose(-1, axis_w)).sum(-1);
  const DType dt = dtypes::least_upper_dtype(a.dtype(), b.dtype());
  return out.dtype() == dt ? out : out.cast(dt);
}

Tensor Tensor::matmul(const Tensor& o) const { return vkgrad::matmul(*this, o); }

Tensor Tensor::linear(const Tensor& weight, const std::optional<Tensor>& bias) const {
  Tensor out = weight.ndim() == 1 ? mul(weight) : matmul(weight);
  return bias ? out.add(*bias) : out;
}

// ---- convolutions -------------------------------------------------------------------------------

Tensor Tensor::conv2d(const Tensor& weight, const std::optional<Tensor>& bias, Int2 stride,
                      Int2 padding, Int2 dilation, int64_t groups) const {
  const char* op = "conv2d";
  if (ndim() == 3) {  // unbatched (C, H, W), as PyTorch
    return unsqueeze(0).conv2d(weight, bias, stride, padding, dilation, groups).squeeze(0);
  }
  if (ndim() != 4 || weight.ndim() != 4)
    throw ShapeError(
        "conv2d: input must be (N, C, H, W) or (C, H, W) and weight (Cout, Cin/groups, "
        "kh, kw), got input " +
        desc(*this) + " and weight " + desc(weight));
  if (groups <= 0)
    throw ShapeError("conv2d: groups must be positive, got " + std::to_string(groups) + " (input " +
                     desc(*this) + ", weight " + desc(weight) + ")");
  if (shape(1) != groups * weight.shape(1))
    throw ShapeError("conv2d: input " + desc(*this) + " has " + std::to_string(shape(1)) +
                     " channels but weight " + desc(weight) +
                     " with groups=" + std::to_string(groups) + " expects " +
                     std::to_string(groups * weight.shape(1)));
  if (weight.shape(0) % groups != 0)
    throw ShapeError("conv2d: output channels " + std::to_string(weight.shape(0)) + " of weight " +
                     desc(weight) + " are not divisible by groups=" + std::to_string(groups));
  check_positive(stride, "stride", op, *this);
  check_positive(dilation, "dilation", op, *this);
  if (padding.h < 0 || padding.w < 0)
    throw ShapeError("conv2d: padding must be non-negative, got " + pair_str(padding) + " (input " +
                     desc(*this) + ")");
  check_bias(bias, weight.shape(0), op, weight);
  return conv(*this, weight, bias, stride, {{padding.h, padding.h}, {padding.w, padding.w}},
              dilation, groups, op);
}

namespace {

// conv_transpose2d of stride s > 1 and dilation 1 in its sub-pixel form. Uncropped, output row
// Y = s * q + r sums x[q - j] * w[r + s * j] over the T = ceil(k / s) taps j of phase r (taps past
// k are zeros): per phase a stride-1 convolution of x padded by T - 1, with the phase's taps
// reversed. All s_h * s_w phases are one conv2d with that many times the output channels (per
// group: (phase row, phase column, channel)); its result, stored, is interleaved (depth to space)
// and cropped by the padding (zeros past its end where output_padding reaches there). It computes
// T^2 s^2 taps per s^2 outputs where spreading the input computes k^2 per output: a quarter of
// the work for k = 4, s = 2. Returns nothing where the crop would not fit (a padding of k or
// more): the spread form reports those.
std::optional<Tensor> conv_transpose_phases(const Tensor& x, const Tensor& weight, Int2 stride,
                                            Int2 padding, Int2 output_padding, int64_t groups) {
  const int64_t n = x.shape(0), h = x.shape(2), wd = x.shape(3);
  const int64_t kh = weight.shape(2), kw = weight.shape(3), rin = weight.shape(0) / groups,
                rout = weight.shape(1);
  const int64_t sh = stride.h, sw = stride.w, th = ceil_div(kh, sh), tw = ceil_div(kw, sw);
  const int64_t hout = (h - 1) * sh - 2 * padding.h + kh + output_padding.h,
                wout = (wd - 1) * sw - 2 * padding.w + kw + output_padding.w;
  if (padding.h >= kh || padding.w >= kw || hout <= 0 || wout <= 0) return std::nullopt;
  const Tensor w = weight.reshape({groups, rin, rout, kh, kw})
                       .pad({{0, 0}, {0, 0}, {0, 0}, {0, th * sh - kh}, {0, tw * sw - kw}})
                       .reshape({groups, rin, rout, th, sh, tw, sw})
                       .flip({3, 5})
                       .permute({0, 4, 6, 2, 1, 3, 5})
                       .reshape({groups * sh * sw * rout, rin, th, tw});
  const int64_t hq = h + th - 1, wq = wd + tw - 1;
  const Tensor z = conv(x, w, std::nullopt, 1, {{th - 1, th - 1}, {tw - 1, tw - 1}}, 1, groups,
                        "conv_transpose2d")
                       .contiguous();
  const Tensor y = z.reshape({n, groups, sh, sw, rout, hq, wq})
                       .permute({0, 1, 4, 5, 2, 6, 3})
                       .reshape({n, groups * rout, hq * sh, wq * sw});
  return pad_last2(
      y, {{-padding.h, padding.h + hout - hq * sh}, {-padding.w, padding.w + wout - wq * sw}}, 0.0);
}

}  // namespace

// tinygrad's conv_transpose2d: spread the input by `stride` (s-1 zeros between elements), then a
// stride-1 conv2d with the kernel flipped, its in/out channels swapped per group, and padding
// (k-1)*d - p before and (k-1)*d - p + output_padding after. With dilation 1, a stride above 1
// takes the sub-pixel form instead (conv_transpose_phases).
Tensor Tensor::conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias,
                                Int2 stride, Int2 padding, Int2 output_padding, int64_t groups,
                                Int2 dilation) const {
  const char* op = "conv_transpose2d";
  if (ndim() == 3) {
    return unsqueeze(0)
        .conv_transpose2d(weight, bias, stride, padding, output_padding, groups, dilation)
        .squeeze(0);
  }
  if (ndim() != 4 || weight.ndim() != 4)
    throw ShapeError(
        "conv_transpose2d: input must be (N, C, H, W) or (C, H, W) and weight "
        "(Cin, Cout/groups, kh, kw), got input " +
        desc(*this) + " and weight " + desc(weight));
  if (groups <= 0)
    throw ShapeError("conv_transpose2d: groups must be positive, got " + std::to_string(groups) +
                     " (input " + desc(*this) + ", weight " + desc(weight) + ")");
  if (shape(1) != weight.shape(0) || weight.shape(0) % groups != 0)
    throw ShapeError("conv_transpose2d: input " + desc(*this) + " has " + std::to_string(shape(1)) +
                     " channels but weight " + desc(weight) +
                     " with groups=" + std::to_string(groups) + " expects " +
                     std::to_string(weight.shape(0)) + " (divisible by groups)");
  check_positive(stride, "stride", op, *this);
  check_positive(dilation, "dilation", op, *this);
  if (padding.h < 0 || padding.w < 0 || output_padding.h < 0 || output_padding.w < 0)
    throw ShapeError("conv_transpose2d: padding " + pair_str(padding) + " and output_padding " +
                     pair_str(output_padding) + " must be non-negative (input " + desc(*this) +
                     ")");
  if ((output_padding.h >= stride.h && output_padding.h >= dilation.h) ||
      (output_padding.w >= stride.w && output_padding.w >= dilation.w))
    throw ShapeError("conv_transpose2d: output_padding " + pair_str(output_padding) +
                     " must be smaller than stride " + pair_str(stride) + " or dilation " +
                     pair_str(dilation) + " (input " + desc(*this) + ")");
  const int64_t kh = weight.shape(2), kw = weight.shape(3);
  const int64_t cout = weight.shape(1) * groups;
  check_bias(bias, cout, op, weight);
  if (dilation.h == 1 && dilation.w == 1 && (stride.h > 1 || stride.w > 1))
    if (std::optional<Tensor> y =
            conv_transpose_phases(*this, weight, stride, padding, output_padding, groups))
      return bias ? y->add(bias->reshape({1, cout, 1, 1})) : *y;
  Tensor w = transposed_weights(weight, groups);
  Tensor x = *this;
  if (stride.h > 1 || stride.w > 1) {
    const int64_t n = shape(0), c = shape(1), h = shape(2), wd = shape(3);
    x = x.reshape({n, c, h, 1, wd, 1})
            .pad({{0, 0}, {0, 0}, {0, 0}, {0, stride.h - 1}, {0, 0}, {0, stride.w - 1}})
            .reshape({n, c, h * stride.h, wd * stride.w})
            .shrink({{0, n},
                     {0, c},
                     {0, h * stride.h - (stride.h - 1)},
                     {0, wd * stride.w - (stride.w - 1)}});
  }
  const int64_t ph = (kh - 1) * dilation.h - padding.h, pw = (kw - 1) * dilation.w - padding.w;
  return conv(x, w, bias, 1, {{ph, ph + output_padding.h}, {pw, pw + output_padding.w}}, dilation,
              groups, op);
}

// ---- pools --------------------------------------------------------------------------------------

Tensor Tensor::max_pool2d(Int2 kernel, std::optional<Int2> stride, Int2 padding) const {
  return pool2d(*this, kernel, stride, padding, lowest(dtype()), "max_pool2d")
      .max(std::vector<int>{-2, -1});
}

// Padding counts toward the average (PyTorch's count_include_pad=True).
Tensor Tensor::avg_pool2d(Int2 kernel, std::optional<Int2> stride, Int2 padding) const {
  return pool2d(*this, kernel, stride, padding, 0.0, "avg_pool2d").mean(std::vector<int>{-2, -1});
}

// ---- normalization ------------------------------------------------------------------------------

Tensor Tensor::layernorm(int axis, double eps) const {
  return layernorm(std::vector<int>{axis}, eps);
}

Tensor Tensor::layernorm(const std::vector<int>& axes, double eps) const {
  Tensor y = sub(mean(axes, true));
  return y.mul(y.mul(y).mean(axes, true).add(Tensor(eps)).rsqrt());
}

// tinygrad's batchnorm over axis 1: (x - mean) * weight * invstd + bias, each parameter a (C,)
// vector (invstd may instead be any shape that broadcasts against x).
Tensor Tensor::batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                         const Tensor& mean, const Tensor& invstd) const {
  if (ndim() < 2) throw ShapeError("batchnorm: input must be (N, C, ...), got " + desc(*this));
  const int64_t c = shape(1);
  Shape s(static_cast<size_t>(ndim()), 1);
  s[1] = c;
  auto channel = [&](const Tensor& p, const char* what) {
    if (p.ndim() != 1 || p.shape(0) != c)
      throw ShapeError(std::string("batchnorm: ") + what + " " + desc(p) + " must have shape (" +
                       std::to_string(c) + ") for input " + desc(*this));
    return p.reshape(s);
  };
  Tensor x = sub(channel(mean, "mean"));
  if (weight) x = x.mul(channel(*weight, "weight"));
  x = x.mul(invstd.ndim() == 1 ? channel(invstd, "invstd") : invstd);
  return bias ? x.add(channel(*bias, "bias")) : x;
}

// ---- losses (mean reduction) --------------------------------------------------------------------

// Input (N, C, d1, ...) or (C); target class indices (N, d1, ...) / () of an integer dtype, or
// class probabilities of the input's shape. Indices outside [0, C) contribute 0 (no check: it
// would need a device sync).
Tensor Tensor::cross_entropy(const Tensor& target) const {
  if (ndim() == 0)
    throw ShapeError("cross_entropy: input must be (N, C, ...) or (C), got " + desc(*this));
  const int axis = ndim() >= 2 ? 1 : 0;
  if (target.dtype().is_int()) {
    Shape expect = shape();
    expect.erase(expect.begin() + axis);
    if (target.shape() != expect)
      throw ShapeError("cross_entropy: class-index target " + desc(target) + " must have shape " +
                       shape_str(expect) + " for input " + desc(*this));
    return index_nll(*this, target, axis);
  }
  if (!target.dtype().is_float())
    throw DTypeError(
        "cross_entropy: target must hold class indices (integer) or probabilities "
        "(float), got " +
        desc(target) + " for input " + desc(*this));
  if (target.shape() != shape())
    throw ShapeError("cross_entropy: probability target " + desc(target) +
                     " must have the input's shape " + desc(*this));
  return log_softmax(axis).mul(target).sum(axis).mean().neg();
}

// Inputs are probabilities; log is clamped at -100 as PyTorch's BCELoss (so p = 0 or 1 gives a
// finite loss instead of 0 * inf = NaN).
Tensor Tensor::binary_crossentropy(const Tensor& target) const {
  if (target.shape() != shape())
    throw ShapeError("binary_crossentropy: target " + desc(target) +
                     " must have the input's shape " + desc(*this));
  const Tensor floor_log(-100.0);
  Tensor pos = log().maximum(floor_log), neg = Tensor(1.0).sub(*this).log().maximum(floor_log);
  return target.mul(pos).add(Tensor(1.0).sub(target).mul(neg)).mean().neg();
}

// max(x, 0) - x*y + log(1 + exp(-|x|)): stable for logits of any size.
Tensor Tensor::binary_crossentropy_logits(const Tensor& target) const {
  if (target.shape() != shape())
    throw ShapeError("binary_crossentropy_logits: target " + desc(target) +
                     " must have the input's shape " + desc(*this));
  Tensor soft = abs().neg().exp().add(Tensor(1.0)).log();
  return maximum(Tensor(0)).sub(mul(target)).add(soft).mean();
}

// Classes along the last axis; integer targets of the input's shape without it.
Tensor Tensor::sparse_categorical_crossentropy(const Tensor& target) const {
  if (!target.dtype().is_int())
    throw DTypeError("sparse_categorical_crossentropy: target must be an integer tensor, got " +
                     desc(target) + " for input " + desc(*this));
  if (ndim() == 0 || target.shape() != Shape(shape().begin(), shape().end() - 1))
    throw ShapeError("sparse_categorical_crossentropy: target " + desc(target) +
                     " must have the input's shape without its last (class) axis, input " +
                     desc(*this));
  return index_nll(*this, target, ndim() - 1);
}

// ---- attention ----------------------------------------------------------------------------------

// softmax(q @ k^T / sqrt(E) masked) @ v. The mask is a bool keep-mask (true attends) or an
// additive float mask; is_causal keeps j <= i (top-left aligned, PyTorch's tril). A row with
// nothing kept is NaN, as PyTorch.
Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                            const std::optional<Tensor>& mask,
                                            bool is_causal) const {
  const std::string args = "query " + desc(*this) + ", key " + desc(key) + ", value " + desc(value);
  if (ndim() < 2 || key.ndim() < 2 || value.ndim() < 2)
    throw ShapeError(
        "scaled_dot_product_attention: query, key and value need at least 2 "
        "dimensions, got " +
        args);
  if (shape(-1) != key.shape(-1) || key.shape(-2) != value.shape(-2))
    throw ShapeError(
        "scaled_dot_product_attention: query and key must share the embedding size "
        "and key and value the sequence length, got " +
        args);
  if (is_causal && mask)
    throw Error("scaled_dot_product_attention: give a mask or is_causal, not both (" + args + ")");
  const DType acc =
      dtypes::least_upper_dtype(dtypes::least_upper_dtype(dtype(), key.dtype()), dtypes::float32);
  Tensor q = dtype() == acc ? *this : cast(acc);
  Tensor k = key.dtype() == acc ? key : key.cast(acc);
  Tensor qk =
      q.matmul(k.transpose(-2, -1)).mul(Tensor(1.0 / std::sqrt(static_cast<double>(shape(-1)))));
  const double ninf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    const int64_t l = shape(-2), s = key.shape(-2);
    Tensor rows = tensor::iota(l, dtypes::int32, device()).reshape({l, 1});
    Tensor cols = tensor::iota(s, dtypes::int32, device()).reshape({1, s});
    qk = rows.ge(cols).where(qk, Tensor(ninf));
  } else if (mask) {
    qk = mask->dtype().is_bool() ? mask->where(qk, Tensor(ninf)) : qk.add(*mask);
  }
  if (dtype().is_float() && qk.dtype() != dtype()) qk = qk.cast(dtype());
  return qk.softmax(-1).matmul(value);
}

// ---- the convolution's gradient rule ------------------------------------------------------------

namespace tensor {

// conv()'s GRAD_RULE, arg (rule, before h, after h, before w, after w, dh, dw, groups), of a
// stride-1 convolution: g (N, Cout, oh, ow) to x as the convolution of g, padded by what the
// taps reach past it less the forward's pads, with the weights flipped and each group's in and
// out channels swapped (the transposed convolution; any pads, crops included); to w as the
// windows' products with g summed over the batch and the outputs.
std::vector<std::optional<Tensor>> conv_gradient(const Tensor& x, const Tensor& w, const Tensor& g,
                                                 const IntTuple& arg, bool want_x, bool want_w) {
  const PadList pads{{arg[1], arg[2]}, {arg[3], arg[4]}};
  const Int2 dilation{arg[5], arg[6]};
  const int64_t groups = arg[7];
  std::vector<std::optional<Tensor>> out(2);
  if (want_x) {
    PadList reach(2);
    for (int j = 0; j < 2; ++j) {
      const int64_t d = j ? dilation.w : dilation.h;
      reach[j] = {(w.shape(2 + j) - 1) * d - pads[j].first,
                  x.shape(2 + j) + pads[j].first - g.shape(2 + j)};
    }
    const Tensor wt = transposed_weights(w, groups).contiguous();
    out[0] = conv(g, wt, std::nullopt, 1, reach, dilation, groups, "conv2d backward");
  }
  if (want_w) {
    const int64_t bs = x.shape(0), rcout = w.shape(0) / groups;
    const Tensor win = windows(pad_last2(x, pads, 0.0), w, 1, dilation, groups);
    out[1] = g.reshape({bs, groups, rcout, g.shape(2), g.shape(3), 1, 1, 1})
                 .mul(win)
                 .sum(std::vector<int>{0, 3, 4}, true)
                 .reshape(w.shape());
  }
  return out;
}

}  // namespace tensor

}  // namespace vkgrad
