// examples/models: MobileNetV2 with torchvision's architecture: inverted residual blocks (1x1
// expansion, depthwise 3x3, 1x1 projection, each with BatchNorm; ReLU6 after the first two; a
// residual add where the shape is kept). Input (N, 3, H, W), output (N, num_classes) logits.
#pragma once

#include <memory>

#include "models/common.hpp"

namespace models {

class MobileNetV2 {
 public:
  explicit MobileNetV2(int64_t num_classes = 1000)
      : first_(3, 32, 3, 2), last_(320, 1280, 1), fc_(1280, num_classes) {
    // (expansion t, output channels c, repeats n, first stride s), as in the paper.
    const int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int64_t in = 32;
    for (const auto& [t, c, n, s] : settings)
      for (int64_t i = 0; i < n; ++i) {
        blocks_.push_back(std::make_unique<Block>(in, c, i == 0 ? s : 1, t));
        in = c;
      }
  }

  Tensor forward(const Tensor& x) {
    Tensor y = relu6(first_(x));
    for (auto& b : blocks_) y = (*b)(y);
    return fc_(relu6(last_(y)).mean({2, 3}));
  }

  std::vector<Tensor> state() const {
    std::vector<Tensor> out;
    first_.state(out);
    for (const auto& b : blocks_) b->state(out);
    last_.state(out);
    append_state(out, fc_);
    return out;
  }
  void to(const std::string& device) { to_device(state(), device); }

 private:
  static Tensor relu6(const Tensor& x) { return x.clip(0.0, 6.0); }

  struct Block {
    std::unique_ptr<ConvBn> expand;  // absent when the expansion factor is 1
    ConvBn depthwise, project;
    bool residual;
    Block(int64_t in, int64_t out, int64_t stride, int64_t t)
        : depthwise(in * t, in * t, 3, stride, in * t),
          project(in * t, out, 1),
          residual(stride == 1 && in == out) {
      if (t != 1) expand = std::make_unique<ConvBn>(in, in * t, 1);
    }
    Tensor operator()(const Tensor& x) {
      Tensor y = expand ? relu6((*expand)(x)) : x;
      y = project(relu6(depthwise(y)));
      return residual ? x + y : y;
    }
    void state(std::vector<Tensor>& out) const {
      if (expand) expand->state(out);
      depthwise.state(out);
      project.state(out);
    }
  };

  ConvBn first_, last_;
  std::vector<std::unique_ptr<Block>> blocks_;
  nn::Linear fc_;
};

}  // namespace models
