// Public: vkgrad::nn — the layers (Linear, Conv2d, BatchNorm2d, LayerNorm, Embedding), the
// optimizers (nn::optim::SGD, Adam, AdamW) and state helpers (nn::state: parameters, state dicts,
// .safetensors files). Built on the Tensor API only (tensor.hpp); no library internals.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <vkgrad/tensor.hpp>

namespace vkgrad::nn {

// Tensors by name, e.g. {"weight": ..., "bias": ...}; sorted, so files and listings are stable.
using StateDict = std::map<std::string, Tensor>;

// What every layer shares: parameters(), state_dict() and load_state_dict() are written once
// here over the list of named tensors a layer declares. Tensors are handles, so the tensors
// returned share storage with the layer's members: an optimizer's assign() updates the layer.
class Module {
 public:
  virtual ~Module() = default;

  // The trainable tensors (requires_grad), in state_dict() order.
  std::vector<Tensor> parameters() const;
  // Parameters and buffers (BatchNorm2d's running statistics) by name.
  StateDict state_dict() const;
  // Gives every tensor of the layer the value of its entry (moved to the layer's device).
  // A shape or dtype mismatch throws ShapeError/DTypeError, a missing or extra key Error; the
  // layer is unchanged when anything throws.
  void load_state_dict(const StateDict& state);

 protected:
  struct Named {
    std::string name;
    Tensor tensor;
    bool parameter;  // false for buffers (running statistics, counters)
  };
  virtual std::vector<Named> named_tensors() const = 0;
};

// y = x W^T + b, W of shape (out, in). W and b start as U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's
// kaiming_uniform_(a=sqrt(5)) and its bias rule, as tinygrad).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor operator()(const Tensor& x) const;

  Tensor weight;               // (out, in)
  std::optional<Tensor> bias;  // (out)

 protected:
  std::vector<Named> named_tensors() const override;
};

// 2-D convolution over (N, C, H, W). W of shape (out, in / groups, kh, kw); W and b start as
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * kh * kw.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Int2 kernel_size, Int2 stride = 1,
         Int2 padding = 0, Int2 dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;

  Tensor weight;
  std::optional<Tensor> bias;
  Int2 stride, padding, dilation;
  int64_t groups;

 protected:
  std::vector<Named> named_tensors() const override;
};

// Batch normalization over the channels of (N, C, H, W) (any (N, C, ...) works).
// With Tensor::training, normalizes by the batch's statistics and updates the running ones
// (running = (1 - momentum) * running + momentum * batch, the variance unbiased, as PyTorch) with
// assign(), outside autograd; otherwise normalizes by the running statistics.
// The running statistics are updated lazily: each training forward adds a step to their graph,
// computed when something realizes them (an eval forward's output, safe_save). A training loop
// that never reads them should realize them now and then (Tensor::realize_all over the
// buffers) so that graph stays short.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1);
  Tensor operator()(const Tensor& x);

  Tensor weight;               // (C), ones
  std::optional<Tensor> bias;  // (C), zeros
  Tensor running_mean;         // (C), zeros
  Tensor running_var;          // (C), ones
  Tensor num_batches_tracked;  // (), int64: training forwards so far
  double eps, momentum;

 protected:
  std::vector<Named> named_tensors() const override;
};

// Normalizes over the trailing dimensions `normalized_shape` (mean 0, variance 1), then scales
// and shifts elementwise (weight ones, bias zeros) when elementwise_affine.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor operator()(const Tensor& x) const;

  Shape normalized_shape;
  std::optional<Tensor> weight;
  std::optional<Tensor> bias;
  double eps;

 protected:
  std::vector<Named> named_tensors() const override;
};

// A lookup table: integer indices of any shape (...) give (..., dim) rows of `weight`
// (vocab, dim), which starts as N(0, 1) like PyTorch's. Indices must be integers (DTypeError);
// an index outside [0, vocab) gives a row of zeros (checking would need a device sync).
class Embedding : public Module {
 public:
  Embedding(int64_t vocab_size, int64_t embed_size);
  Tensor operator()(const Tensor& idx) const;

  Tensor weight;  // (vocab, dim)

 protected:
  std::vector<Named> named_tensors() const override;
};

namespace optim {

// An optimizer owns handles to its parameters and its state tensors (momentum buffers, moments,
// the step count). step() builds every new value lazily, realizes them all in one schedule (one
// command buffer on Vulkan) and assign()s them, so a step is one batch of kernels and replays
// under vkgrad::Jit, which carries assigned state from replay to replay. A parameter without a
// grad (no backward reached it) makes step() throw Error naming it, before anything is updated.
// Tensors in `params` that do not require grad (a model's whole state():
// BatchNorm's running statistics, its batch count) are buffers, as in tinygrad: never updated by
// the optimizer, of any dtype, but realized in every step's schedule, so the assign()s a training
// forward made to them run with the step instead of chaining lazily from step to step. The other
// hyperparameters are baked into the kernels as constants.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Every parameter's grad becomes std::nullopt.
  void zero_grad();
  void step();
  // step(), with `also` (the loss, metrics) realized in the same schedule.
  void step(std::vector<Tensor>& also);

  std::vector<Tensor> params;
  // A float32 scalar on the parameters' device, read by the kernels (not a constant in them):
  // lr.assign(Tensor::scalar(new_lr, dtypes::float32, device)) changes it without compiling
  // anything new; a step replayed by vkgrad::Jit reads the new value too (the Jit follows
  // assign()s made between calls).
  Tensor lr;

 protected:
  Optimizer(std::vector<Tensor> params, double lr);
  // The (target, new value) pairs of one step: parameters and state tensors.
  using Update = std::pair<Tensor, Tensor>;
  virtual std::vector<Update> updates() = 0;
  // The parameters that have a grad this step, with their index in `params`.
  std::vector<std::pair<size_t, Tensor>> with_grads() const;
  const std::string& device() const { return device_; }

 private:
  std::string device_;
};

// PyTorch's SGD (dampening 0): g = grad + weight_decay * p; with momentum,
// buf = momentum * buf + g (buf = g on the first step) and g = nesterov ? g + momentum * buf : buf;
// then p -= lr * g.
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, double lr = 0.001, double momentum = 0.0,
               double weight_decay = 0.0, bool nesterov = false);

  double momentum, weight_decay;
  bool nesterov;

 protected:
  std::vector<Update> updates() override;

 private:
  std::vector<Tensor> buf_;  // momentum buffers (zeros: the first step's buf is then g)
};

// PyTorch's Adam and AdamW: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). AdamW first decays the parameter
// (decoupled): p *= 1 - lr * weight_decay. Adam is AdamW with weight_decay 0.
// t is a float32 scalar tensor assigned t + 1 each step (not a C++ counter), so a step replayed
// by vkgrad::Jit reads the current count rather than the one it was captured with.
class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
                 double eps = 1e-8, double weight_decay = 0.01);

  double b1, b2, eps, weight_decay;
  Tensor t;  // steps taken so far (float32 scalar)
  std::vector<Tensor> m, v;

 protected:
  std::vector<Update> updates() override;
};

class Adam : public AdamW {
 public:
  explicit Adam(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
                double eps = 1e-8)
      : AdamW(std::move(params), lr, b1, b2, eps, 0.0) {}
};

}  // namespace optim

namespace state {

// The trainable tensors of one or more layers (anything with parameters()), in argument order:
// get_parameters(l1, l2, l3).
template <class... Ms>
std::vector<Tensor> get_parameters(const Ms&... modules) {
  std::vector<Tensor> out;
  (
      [&] {
        std::vector<Tensor> p = modules.parameters();
        out.insert(out.end(), p.begin(), p.end());
      }(),
      ...);
  return out;
}

// A layer's state dict with every key prefixed ("l1." + "weight"), for models made of layers.
template <class M>
StateDict get_state_dict(const M& module, const std::string& prefix = "") {
  StateDict out;
  for (auto& [k, t] : module.state_dict()) out.emplace(prefix + k, t);
  return out;
}

// The entries of `state` under `prefix` loaded into `module` (the prefix removed); the same
// errors as Module::load_state_dict for the keys under the prefix.
template <class M>
void load_state_dict(M& module, const StateDict& state, const std::string& prefix = "") {
  StateDict mine;
  for (auto& [k, t] : state)
    if (k.compare(0, prefix.size(), prefix) == 0) mine.emplace(k.substr(prefix.size()), t);
  module.load_state_dict(mine);
}

// Writes a .safetensors file: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {...}}, then the raw data.
// Every dtype the format and vkgrad share is written (F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32
// U16 U8 BOOL). Error when the file cannot be written.
void safe_save(const StateDict& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});
// Reads a .safetensors file (memory-mapped) into tensors on the default device. A malformed
// file throws FormatError (nothing is read outside the file); a missing one, Error.
StateDict safe_load(const std::string& path);
// The "__metadata__" strings of a .safetensors file (empty when it has none).
std::map<std::string, std::string> safe_load_metadata(const std::string& path);

}  // namespace state
}  // namespace vkgrad::nn
