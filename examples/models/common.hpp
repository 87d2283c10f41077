// examples/models: model definitions written against the public API only, as a user would write
// them (torchvision's ResNet and MobileNetV2, a BERT-style encoder). `vkgrad bench` times them;
// copy them into your own program. Every model is a struct with `forward(x)`, `state()` (every
// parameter and buffer) and `to(device)`, which moves the state to a device and realizes it.
#pragma once

#include <string>
#include <vector>
#include <vkgrad/vkgrad.hpp>

namespace models {

using vkgrad::Tensor;
namespace nn = vkgrad::nn;

// Moves every tensor to `device` and realizes it in place: a fresh random init is computed once
// here, not inside every forward.
inline void to_device(const std::vector<Tensor>& state, const std::string& device) {
  for (Tensor t : state) t.assign(t.to(device).realize());
}

template <class M>
void append_state(std::vector<Tensor>& out, const M& module) {
  for (auto& [name, t] : module.state_dict()) out.push_back(t);
}

// Conv (no bias) followed by BatchNorm: the unit every convolutional network here is made of.
// In eval mode (Tensor::training false, the default) BatchNorm uses its running statistics.
struct ConvBn {
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  ConvBn(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1)
      : conv(in, out, kernel, stride, kernel / 2, 1, groups, false), bn(out) {}
  Tensor operator()(const Tensor& x) { return bn(conv(x)); }
  void state(std::vector<Tensor>& out) const {
    append_state(out, conv);
    append_state(out, bn);
  }
};

}  // namespace models
