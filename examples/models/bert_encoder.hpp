// examples/models: a BERT-style transformer encoder (post-LayerNorm, as BERT): each layer is
// multi-head self-attention and a GELU feed-forward network, each followed by a residual add and
// LayerNorm. Input (N, S, d) hidden states, output the same shape.
#pragma once

#include <memory>

#include "models/common.hpp"

namespace models {

class BertEncoder {
 public:
  BertEncoder(int layers = 4, int64_t d = 256, int64_t heads = 4, int64_t ffn = 1024)
      : heads_(heads) {
    for (int i = 0; i < layers; ++i) layers_.push_back(std::make_unique<Layer>(d, ffn));
  }

  Tensor forward(const Tensor& x) const {
    Tensor y = x;
    for (const auto& l : layers_) y = l->forward(y, heads_);
    return y;
  }

  std::vector<Tensor> state() const {
    std::vector<Tensor> out;
    for (const auto& l : layers_)
      for (const nn::Module* m : l->modules()) append_state(out, *m);
    return out;
  }
  void to(const std::string& device) { to_device(state(), device); }

 private:
  struct Layer {
    nn::Linear q, k, v, o, up, down;
    nn::LayerNorm ln1, ln2;
    Layer(int64_t d, int64_t ffn)
        : q(d, d), k(d, d), v(d, d), o(d, d), up(d, ffn), down(ffn, d), ln1(d), ln2(d) {}
    Tensor forward(const Tensor& x, int64_t heads) const {
      const int64_t n = x.shape()[0], s = x.shape()[1], d = x.shape()[2];
      auto split = [&](const Tensor& t) {
        return t.reshape({n, s, heads, d / heads}).transpose(1, 2);
      };
      Tensor a = split(q(x)).scaled_dot_product_attention(split(k(x)), split(v(x)));
      Tensor h = ln1(x + o(a.transpose(1, 2).reshape({n, s, d})));
      return ln2(h + down(up(h).gelu()));
    }
    std::vector<const nn::Module*> modules() const {
      return {&q, &k, &v, &o, &up, &down, &ln1, &ln2};
    }
  };

  int64_t heads_;
  std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace models
