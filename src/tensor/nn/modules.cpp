// tensor/nn: the layers of vkgrad::nn and the Module base (parameters, state dicts). Layers are
// compositions of public Tensor methods; nothing here reaches below the Tensor API.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>
#include <vkgrad/nn.hpp>

namespace vkgrad::nn {
namespace {

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// PyTorch's default for Linear and Conv2d weights and biases (kaiming_uniform_ with a = sqrt(5)
// reduces to this bound): U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
Tensor uniform_init(const Shape& shape, int64_t fan_in) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  Tensor t = Tensor::uniform(shape, -bound, bound);
  t.requires_grad_();
  return t;
}

Tensor trainable(Tensor t) {
  t.requires_grad_();
  return t;
}

void check_positive(int64_t v, const char* what, const char* layer) {
  if (v <= 0)
    throw ShapeError(std::string(layer) + ": " + what + " must be positive, got " +
                     std::to_string(v));
}

}  // namespace

// ---- Module -----------------------------------------------------------------------------------

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (const Named& n : named_tensors())
    if (n.parameter) out.push_back(n.tensor);
  return out;
}

StateDict Module::state_dict() const {
  StateDict out;
  for (const Named& n : named_tensors()) out.emplace(n.name, n.tensor);
  return out;
}

void Module::load_state_dict(const StateDict& state) {
  const std::vector<Named> mine = named_tensors();
  std::set<std::string> names;
  // Every check first, so a bad dict leaves the layer as it was.
  for (const Named& n : mine) {
    names.insert(n.name);
    auto it = state.find(n.name);
    if (it == state.end()) throw Error("load_state_dict: missing key \"" + n.name + "\"");
    const Tensor& v = it->second;
    if (v.shape() != n.tensor.shape())
      throw ShapeError("load_state_dict: \"" + n.name + "\" has shape " + shape_str(v.shape()) +
                       ", the layer's is " + shape_str(n.tensor.shape()));
    if (v.dtype() != n.tensor.dtype())
      throw DTypeError("load_state_dict: \"" + n.name + "\" is " + v.dtype().name() +
                       ", the layer's is " + n.tensor.dtype().name());
  }
  for (const auto& [k, v] : state)
    if (!names.count(k)) throw Error("load_state_dict: unexpected key \"" + k + "\"");
  for (const Named& n : mine) {
    Tensor target = n.tensor;  // a handle: assigning through it updates the layer's member
    target.assign(state.at(n.name).to(target.device()).detach());
  }
}

// ---- Linear -----------------------------------------------------------------------------------

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : weight(uniform_init({out_features, in_features}, in_features)) {
  check_positive(out_features, "out_features", "Linear");
  if (in_features < 0)
    throw ShapeError("Linear: in_features must be non-negative, got " +
                     std::to_string(in_features));
  if (with_bias) bias = uniform_init({out_features}, in_features);
}

Tensor Linear::operator()(const Tensor& x) const { return x.linear(weight.T(), bias); }

std::vector<Module::Named> Linear::named_tensors() const {
  std::vector<Named> out{{"weight", weight, true}};
  if (bias) out.push_back({"bias", *bias, true});
  return out;
}

// ---- Conv2d -----------------------------------------------------------------------------------

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Int2 kernel_size, Int2 stride_,
               Int2 padding_, Int2 dilation_, int64_t groups_, bool with_bias)
    : stride(stride_), padding(padding_), dilation(dilation_), groups(groups_) {
  check_positive(in_channels, "in_channels", "Conv2d");
  check_positive(out_channels, "out_channels", "Conv2d");
  check_positive(groups, "groups", "Conv2d");
  check_positive(kernel_size.h, "kernel height", "Conv2d");
  check_positive(kernel_size.w, "kernel width", "Conv2d");
  if (in_channels % groups != 0 || out_channels % groups != 0)
    throw ShapeError("Conv2d: in_channels " + std::to_string(in_channels) + " and out_channels " +
                     std::to_string(out_channels) + " must be divisible by groups " +
                     std::to_string(groups));
  const int64_t fan_in = in_channels / groups * kernel_size.h * kernel_size.w;
  weight = uniform_init({out_channels, in_channels / groups, kernel_size.h, kernel_size.w}, fan_in);
  if (with_bias) bias = uniform_init({out_channels}, fan_in);
}

Tensor Conv2d::operator()(const Tensor& x) const {
  return x.conv2d(weight, bias, stride, padding, dilation, groups);
}

std::vector<Module::Named> Conv2d::named_tensors() const {
  std::vector<Named> out{{"weight", weight, true}};
  if (bias) out.push_back({"bias", *bias, true});
  return out;
}

// ---- BatchNorm2d ------------------------------------------------------------------------------

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps_, double momentum_)
    : weight(trainable(Tensor::ones({num_features}))),
      bias(trainable(Tensor::zeros({num_features}))),
      running_mean(Tensor::zeros({num_features})),
      running_var(Tensor::ones({num_features})),
      num_batches_tracked(Tensor::zeros({}, dtypes::int64)),
      eps(eps_),
      momentum(momentum_) {
  check_positive(num_features, "num_features", "BatchNorm2d");
}

Tensor BatchNorm2d::operator()(const Tensor& x) {
  if (x.ndim() < 2 || x.shape(1) != weight.shape(0))
    throw ShapeError("BatchNorm2d: expected input (N, " + std::to_string(weight.shape(0)) +
                     ", ...), got " + shape_str(x.shape()));
  if (!Tensor::training)
    return x.batchnorm(weight, bias, running_mean, running_var.add(Tensor(eps)).rsqrt());

  std::vector<int> axes;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != 1) axes.push_back(d);
  Shape channel(static_cast<size_t>(x.ndim()), 1);
  channel[1] = -1;
  const Tensor batch_mean = x.mean(axes);
  // The mean is detached inside the variance: d var / d mean = -2 mean(x - mean) = 0, so the
  // gradient is the same and the backward graph smaller (tinygrad does the same).
  const Tensor centered = x.sub(batch_mean.detach().reshape(channel));
  const Tensor batch_var = centered.mul(centered).mean(axes);

  // Running statistics: outside autograd, the variance unbiased (n / (n - 1)) as PyTorch.
  const double n = static_cast<double>(x.numel() / x.shape(1));
  const double unbias = n > 1 ? n / (n - 1) : 1.0;
  running_mean.assign(running_mean.mul(Tensor(1.0 - momentum))
                          .add(batch_mean.detach().mul(Tensor(momentum)))
                          .cast(running_mean.dtype()));
  running_var.assign(running_var.mul(Tensor(1.0 - momentum))
                         .add(batch_var.detach().mul(Tensor(momentum * unbias)))
                         .cast(running_var.dtype()));
  num_batches_tracked.assign(num_batches_tracked.add(Tensor(1)));
  return x.batchnorm(weight, bias, batch_mean, batch_var.add(Tensor(eps)).rsqrt());
}

std::vector<Module::Named> BatchNorm2d::named_tensors() const {
  std::vector<Named> out{{"weight", weight, true}};
  if (bias) out.push_back({"bias", *bias, true});
  out.push_back({"running_mean", running_mean, false});
  out.push_back({"running_var", running_var, false});
  out.push_back({"num_batches_tracked", num_batches_tracked, false});
  return out;
}

// ---- LayerNorm --------------------------------------------------------------------------------

LayerNorm::LayerNorm(int64_t n, double eps_, bool elementwise_affine)
    : LayerNorm(Shape{n}, eps_, elementwise_affine) {}

LayerNorm::LayerNorm(Shape shape, double eps_, bool elementwise_affine)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (normalized_shape.empty()) throw ShapeError("LayerNorm: normalized_shape must not be empty");
  for (int64_t d : normalized_shape) check_positive(d, "normalized_shape", "LayerNorm");
  if (elementwise_affine) {
    weight = trainable(Tensor::ones(normalized_shape));
    bias = trainable(Tensor::zeros(normalized_shape));
  }
}

Tensor LayerNorm::operator()(const Tensor& x) const {
  const size_t k = normalized_shape.size();
  const Shape& xs = x.shape();
  if (xs.size() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(),
                                   xs.end() - static_cast<std::ptrdiff_t>(k)))
    throw ShapeError("LayerNorm: input " + shape_str(xs) + " does not end in " +
                     shape_str(normalized_shape));
  std::vector<int> axes;
  for (size_t i = 0; i < k; ++i) axes.push_back(-1 - static_cast<int>(i));
  Tensor y = x.layernorm(axes, eps);
  if (weight) y = y.mul(*weight);
  if (bias) y = y.add(*bias);
  return y;
}

std::vector<Module::Named> LayerNorm::named_tensors() const {
  std::vector<Named> out;
  if (weight) out.push_back({"weight", *weight, true});
  if (bias) out.push_back({"bias", *bias, true});
  return out;
}

// ---- Embedding --------------------------------------------------------------------------------

Embedding::Embedding(int64_t vocab_size, int64_t embed_size)
    : weight(trainable(Tensor::randn({vocab_size, embed_size}))) {
  check_positive(vocab_size, "vocab_size", "Embedding");
  check_positive(embed_size, "embed_size", "Embedding");
}

// A one-hot matmul, as tinygrad: (..., 1) == arange(vocab) picks each row. It is a matmul and
// a comparison, so the backward pass is a matmul too (no scatter).
Tensor Embedding::operator()(const Tensor& idx) const {
  if (!idx.dtype().is_int())
    throw DTypeError("Embedding: indices must be an integer tensor, got " + idx.dtype().name() +
                     " of shape " + shape_str(idx.shape()));
  const int64_t vocab = weight.shape(0);
  const Tensor classes = Tensor::arange(vocab, idx.dtype(), idx.device());
  const Tensor hot = idx.unsqueeze(-1).eq(classes).cast(weight.dtype());
  return hot.matmul(weight);
}

std::vector<Module::Named> Embedding::named_tensors() const { return {{"weight", weight, true}}; }

}  // namespace vkgrad::nn
