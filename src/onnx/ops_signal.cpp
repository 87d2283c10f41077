// onnx: signal operators: the window generators (Hann, Hamming, Blackman) and DFT as a product
// with cos/sin matrices computed on the host.
#include <fmt/format.h>

#include <cmath>

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
    const DType dt = x.dtype();
    Tensor re = x.select(-1, 0), im;
    if (x.shape(-1) == 2) im = x.select(-1, 1);
    const int64_t k_out = onesided ? n / 2 + 1 : n;
    std::vector<double> cs(static_cast<size_t>(n * k_out)), sn(static_cast<size_t>(n * k_out));
    const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t k = 0; k < k_out; k++) {
        const double ang = 2 * kPi * static_cast<double>((j * k) % n) / static_cast<double>(n);
        cs[static_cast<size_t>(j * k_out + k)] = std::cos(ang) * scale;
        sn[static_cast<size_t>(j * k_out + k)] = sign * std::sin(ang) * scale;
      }
    const Tensor C = HostArray::of_floats(std::move(cs), {n, k_out}, dt).to_tensor(c.device());
    const Tensor S = HostArray::of_floats(std::move(sn), {n, k_out}, dt).to_tensor(c.device());
    // Move `axis` last (re/im have rank - 1 dims), multiply, move back.
    const int r1 = rank - 1;
    std::vector<int> order;
    for (int i = 0; i < r1; i++)
      if (i != axis) order.push_back(i);
    order.push_back(axis);
    std::vector<int> back(static_cast<size_t>(r1));
    for (int i = 0; i < r1; i++) back[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
    const Tensor rm = re.permute(order);
    // (re + i im)(C + i S) = re C - im S + i (re S + im C)
    Tensor out_re = rm.matmul(C), out_im = rm.matmul(S);
    if (im.defined()) {
      const Tensor imm = im.permute(order);
      out_re = out_re - imm.matmul(S);
      out_im = out_im + imm.matmul(C);
    }
    return OpOutputs{
        tensor_value(stack({out_re.permute(back), out_im.permute(back)}, -1).cast(dt))};
  };
}

}  // namespace vkgrad::onnx
