// examples/models: ResNet-18 and ResNet-50 with torchvision's architecture (BasicBlock and
// Bottleneck, BatchNorm after every conv, the stride on the 3x3 conv, a 1x1 conv + BN
// downsample where the shape changes). Input (N, 3, H, W), output (N, num_classes) logits.
#pragma once

#include <memory>

#include "models/common.hpp"

namespace models {

class ResNet {
 public:
  // blocks per stage: {2, 2, 2, 2} with basic blocks is ResNet-18, {3, 4, 6, 3} with
  // bottlenecks ResNet-50.
  ResNet(std::vector<int> blocks, bool bottleneck, int64_t num_classes = 1000)
      : stem_(3, 64, 7, 2), fc_(512 * (bottleneck ? 4 : 1), num_classes) {
    const int64_t expansion = bottleneck ? 4 : 1;
    int64_t in = 64;
    for (size_t stage = 0; stage < blocks.size(); ++stage) {
      const int64_t width = int64_t{64} << stage;
      for (int b = 0; b < blocks[stage]; ++b) {
        const int64_t stride = b == 0 && stage > 0 ? 2 : 1;
        blocks_.push_back(std::make_unique<Block>(in, width, stride, bottleneck));
        in = width * expansion;
      }
    }
  }

  Tensor forward(const Tensor& x) {
    Tensor y = stem_(x).relu().max_pool2d(3, 2, 1);
    for (auto& b : blocks_) y = (*b)(y);
    return fc_(y.mean({2, 3}));
  }

  std::vector<Tensor> state() const {
    std::vector<Tensor> out;
    stem_.state(out);
    for (const auto& b : blocks_) b->state(out);
    append_state(out, fc_);
    return out;
  }
  void to(const std::string& device) { to_device(state(), device); }

 private:
  struct Block {
    std::vector<ConvBn> convs;           // 2 (basic) or 3 (bottleneck), ReLU between them
    std::unique_ptr<ConvBn> downsample;  // 1x1 conv + BN where the shape changes
    Block(int64_t in, int64_t width, int64_t stride, bool bottleneck) {
      const int64_t out = bottleneck ? width * 4 : width;
      if (bottleneck) {
        convs.emplace_back(in, width, 1);
        convs.emplace_back(width, width, 3, stride);
        convs.emplace_back(width, out, 1);
      } else {
        convs.emplace_back(in, width, 3, stride);
        convs.emplace_back(width, width, 3);
      }
      if (stride != 1 || in != out) downsample = std::make_unique<ConvBn>(in, out, 1, stride);
    }
    Tensor operator()(const Tensor& x) {
      Tensor y = x;
      for (size_t i = 0; i < convs.size(); ++i) {
        y = convs[i](y);
        if (i + 1 < convs.size()) y = y.relu();
      }
      return (y + (downsample ? (*downsample)(x) : x)).relu();
    }
    void state(std::vector<Tensor>& out) const {
      for (const ConvBn& c : convs) c.state(out);
      if (downsample) downsample->state(out);
    }
  };

  ConvBn stem_;
  std::vector<std::unique_ptr<Block>> blocks_;
  nn::Linear fc_;
};

inline ResNet resnet18(int64_t num_classes = 1000) { return {{2, 2, 2, 2}, false, num_classes}; }
inline ResNet resnet50(int64_t num_classes = 1000) { return {{3, 4, 6, 3}, true, num_classes}; }

}  // namespace models
