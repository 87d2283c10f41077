// onnx: signal operators: the window generators (Hann, Hamming, Blackman) and DFT as a product
// with cos/sin matrices computed on the host.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

constexpr double kPi = 3.14159265358979323846;

void window_op(OpRegistry& r, const std::string& name, double a0, double a1, double a2) {
  r[name].run = [a0, a1, a2](OpContext& c) {
    const int64_t size = c.host(0).int_at(0);
    if (size < 0) c.fail(fmt::format("size {} is negative", size));
    const bool periodic = c.attr_i("periodic", 1) != 0;
    const DType dt =
        dtype_of_onnx(static_cast<int32_t>(c.attr_i("output_datatype", 1)), c.node().label());
    const double n = static_cast<double>(periodic ? size : size - 1);
    std::vector<double> w(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; i++) {
      const double t = static_cast<double>(i) / n;
      w[static_cast<size_t>(i)] = a0 - a1 * std::cos(2 * kPi * t) + a2 * std::cos(4 * kPi * t);
    }
    HostArray h = HostArray::of_floats(std::move(w), {size}, dtypes::float64).cast(dt);
    return OpOutputs{host_value(std::move(h))};
  };
  r[name].host = r[name].run;
}

// The DFT of `re` (+ i `im`, optional) along its last axis of length n: [..., k_out] real and
// imaginary parts, as products with cos/sin matrices computed on the host.
std::pair<Tensor, Tensor> dft_last(const Tensor& re, const Tensor& im, int64_t n, int64_t k_out,
                                   bool inverse, const std::string& device) {
  const DType dt = re.dtype();
  std::vector<double> cs(static_cast<size_t>(n * k_out)), sn(static_cast<size_t>(n * k_out));
  const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t k = 0; k < k_out; k++) {
      const double ang = 2 * kPi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      cs[static_cast<size_t>(j * k_out + k)] = std::cos(ang) * scale;
      sn[static_cast<size_t>(j * k_out + k)] = sign * std::sin(ang) * scale;
    }
  const Tensor C = HostArray::of_floats(std::move(cs), {n, k_out}, dt).to_tensor(device);
  const Tensor S = HostArray::of_floats(std::move(sn), {n, k_out}, dt).to_tensor(device);
  // (re + i im)(C + i S) = re C - im S + i (re S + im C)
  Tensor out_re = re.matmul(C), out_im = re.matmul(S);
  if (im.defined()) {
    out_re = out_re - im.matmul(S);
    out_im = out_im + im.matmul(C);
  }
  return {out_re, out_im};
}

}  // namespace

void register_signal_ops(OpRegistry& r) {
  window_op(r, "HannWindow", 0.5, 0.5, 0.0);
  window_op(r, "HammingWindow", 25.0 / 46.0, 21.0 / 46.0, 0.0);
  window_op(r, "BlackmanWindow", 0.42, 0.5, 0.08);

  // DFT (opset 17): input [batch, ..., n, ..., 1 or 2]; the transform runs along `axis`.
  r["DFT"].run = [](OpContext& c) {
    Tensor x = c.in(0);
    const int rank = x.ndim();
    const int axis = norm_axis(c.attr_i("axis", 1), rank - 1, c.node().label());
    const bool inverse = c.attr_i("inverse", 0) != 0, onesided = c.attr_i("onesided", 0) != 0;
    const int64_t n_in = x.shape(axis);
    const int64_t n = c.has(1) ? c.host(1).int_at(0) : n_in;
    if (n != n_in) {  // pad with zeros or truncate the signal to dft_length
      if (n > n_in) {
        PadList p(static_cast<size_t>(rank), {0, 0});
        p[static_cast<size_t>(axis)] = {0, n - n_in};
        x = x.pad(p);
      } else {
        x = x.slice(axis, 0, n);
      }
    }
    Tensor re = x.select(-1, 0), im;
    if (x.shape(-1) == 2) im = x.select(-1, 1);
    // Move `axis` last (re/im have rank - 1 dims), transform, move back.
    const AxisLast mv = axis_last(rank - 1, axis);
    const std::vector<int>& back = mv.back;
    auto [out_re, out_im] =
        dft_last(re.permute(mv.order), im.defined() ? im.permute(mv.order) : Tensor(), n,
                 onesided ? n / 2 + 1 : n, inverse, c.device());
    return OpOutputs{
        tensor_value(stack({out_re.permute(back), out_im.permute(back)}, -1).cast(x.dtype()))};
  };

  // STFT (opset 17): signal [batch, length, 1 or 2], frame_step, window, frame_length ->
  // [batch, frames, bins, 2].
  r["STFT"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const int64_t step = c.host(1).int_at(0);
    std::optional<Tensor> window;
    if (c.has(2)) window = c.in(2);
    int64_t frame = c.has(3) ? c.host(3).int_at(0) : window ? window->shape(0) : 0;
    if (frame <= 0 || step <= 0) c.fail("frame_length and frame_step must be positive");
    const int64_t length = x.shape(1);
    const int64_t frames = (length - frame) / step + 1;
    const bool onesided = c.attr_i("onesided", 1) != 0;
    std::vector<Tensor> re_frames, im_frames;
    for (int64_t f = 0; f < frames; f++) {
      const Tensor seg = x.slice(1, f * step, f * step + frame);  // [batch, frame, 1 or 2]
      Tensor re = seg.select(-1, 0);
      if (window) re = re * window->cast(re.dtype());
      re_frames.push_back(re);
      if (x.shape(-1) == 2) {
        Tensor im = seg.select(-1, 1);
        if (window) im = im * window->cast(im.dtype());
        im_frames.push_back(im);
      }
    }
    const Tensor re = stack(re_frames, 1);  // [batch, frames, frame]
    const Tensor im = im_frames.empty() ? Tensor() : stack(im_frames, 1);
    auto [out_re, out_im] =
        dft_last(re, im, frame, onesided ? frame / 2 + 1 : frame, false, c.device());
    return OpOutputs{tensor_value(stack({out_re, out_im}, -1).cast(x.dtype()))};
  };

  // MelWeightMatrix (opset 17): [dft_length / 2 + 1, num_mel_bins] triangular filters, their
  // edges equally spaced on the mel scale and rounded down to DFT bins.
  r["MelWeightMatrix"].run = [](OpContext& c) {
    const int64_t mels = c.host(0).int_at(0), dft = c.host(1).int_at(0);
    const double rate = c.host(2).at(0), lo = c.host(3).at(0), hi = c.host(4).at(0);
    const DType dt =
        dtype_of_onnx(static_cast<int32_t>(c.attr_i("output_datatype", 1)), c.node().label());
    const int64_t bins = dft / 2 + 1;
    auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double mlo = to_mel(lo), mhi = to_mel(hi);
    const double mstep = (mhi - mlo) / static_cast<double>(mels + 2);
    std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
    for (int64_t i = 0; i < mels + 2; i++) {
      const double hz =
          700.0 * (std::pow(10.0, (static_cast<double>(i) * mstep + mlo) / 2595.0) - 1.0);
      edge[static_cast<size_t>(i)] =
          static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / rate));
    }
    std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
    auto at = [&](int64_t bin, int64_t m) -> double& {
      return w[static_cast<size_t>(bin * mels + m)];
    };
    for (int64_t m = 0; m < mels; m++) {
      const int64_t left = edge[static_cast<size_t>(m)], center = edge[static_cast<size_t>(m + 1)],
                    right = edge[static_cast<size_t>(m + 2)];
      if (center < 0 || right > bins) c.fail("a filter edge lies outside the DFT bins");
      if (center == left) {
        at(center, m) = 1.0;
      } else {
        for (int64_t j = left; j <= center; j++)
          at(j, m) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
      for (int64_t j = center; j < right; j++)
        at(j, m) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
    return OpOutputs{
        host_value(HostArray::of_floats(std::move(w), {bins, mels}, dtypes::float64).cast(dt))};
  };
}

}  // namespace vkgrad::onnx
