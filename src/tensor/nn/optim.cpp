// tensor/nn: the optimizers of vkgrad::nn::optim. One step is one schedule: every new parameter
// and state value is built lazily from the current ones, realized together, then assigned.
#include <string>
#include <utility>
#include <vector>
#include <vkgrad/nn.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad::nn::optim {
namespace {

// The one device every parameter lives on (the optimizer's scalars live there too).
std::string common_device(const std::vector<Tensor>& params) {
  if (params.empty()) return {};
  const std::string& dev = params.front().device();
  for (const Tensor& p : params)
    if (p.device() != dev)
      throw DeviceError("optimizer: parameters on " + dev + " and " + p.device() +
                        "; one optimizer updates tensors of one device");
  return dev;
}

// A state tensor for `p` (momentum, moments): zeros like it, a scalar zero for a buffer.
Tensor state_like(const Tensor& p) {
  if (!p.requires_grad()) return Tensor::zeros({}, dtypes::float32, p.device()).realize();
  return p.zeros_like().contiguous().realize();
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params_, double lr_)
    : params(std::move(params_)), device_(common_device(params)) {
  for (const Tensor& p : params)
    if (p.requires_grad() && !p.dtype().is_float())
      throw DTypeError("optimizer: parameters must be floating point, got " + p.dtype().name());
  lr = Tensor::scalar(lr_, dtypes::float32, device_).realize();
}

void Optimizer::zero_grad() {
  for (Tensor& p : params) p.set_grad(std::nullopt);
}

void Optimizer::step() {
  std::vector<Tensor> none;
  step(none);
}

void Optimizer::step(std::vector<Tensor>& also) {
  // A parameter no backward reached is an error, as in tinygrad, before anything is built.
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].requires_grad() && !params[i].grad())
      throw Error("optimizer: parameter " + std::to_string(i) + " of shape " +
                  tensor::shape_str(params[i].shape()) +
                  " has no gradient (no backward reached it); nothing was updated");
  std::vector<Update> ups = updates();
  std::vector<Tensor> values = also;
  values.reserve(values.size() + ups.size() + params.size());
  for (const Update& u : ups) values.push_back(u.second);
  // One schedule for the whole step (and the caller's loss): every new value reads the old
  // parameters, so nothing may be assigned before all of them are computed. The buffers (tensors
  // that need no grad) go along, realized in place.
  for (const Tensor& p : params)
    if (!p.requires_grad()) values.push_back(p);
  Tensor::realize_all(values);
  for (size_t i = 0; i < also.size(); ++i) also[i] = values[i];
  for (size_t i = 0; i < ups.size(); ++i) ups[i].first.assign(values[also.size() + i]);
}

std::vector<std::pair<size_t, Tensor>> Optimizer::with_grads() const {
  std::vector<std::pair<size_t, Tensor>> out;
  for (size_t i = 0; i < params.size(); ++i)
    if (std::optional<Tensor> g = params[i].grad()) {
      if (g->shape() != params[i].shape())
        throw ShapeError("optimizer: parameter " + std::to_string(i) +
                         "'s grad has a different shape");
      out.emplace_back(i, g->detach().cast(params[i].dtype()));
    }
  return out;
}

// ---- SGD --------------------------------------------------------------------------------------

SGD::SGD(std::vector<Tensor> params_, double lr_, double momentum_, double weight_decay_,
         bool nesterov_)
    : Optimizer(std::move(params_), lr_),
      momentum(momentum_),
      weight_decay(weight_decay_),
      nesterov(nesterov_) {
  if (nesterov && momentum <= 0) throw Error("SGD: nesterov momentum requires momentum > 0");
  if (momentum != 0)
    for (const Tensor& p : params) buf_.push_back(state_like(p));
}

std::vector<Optimizer::Update> SGD::updates() {
  std::vector<Update> out;
  for (auto& [i, grad] : with_grads()) {
    const Tensor p = params[i].detach();
    Tensor g = grad;
    if (weight_decay != 0) g = g.add(p.mul(Tensor(weight_decay)));
    if (momentum != 0) {
      // buf starts at zero, so the first step's momentum * buf + g is PyTorch's buf = g.
      const Tensor buf = buf_[i].mul(Tensor(momentum)).add(g);
      out.emplace_back(buf_[i], buf);
      g = nesterov ? g.add(buf.mul(Tensor(momentum))) : buf;
    }
    out.emplace_back(params[i], p.sub(g.mul(lr.cast(p.dtype()))));
  }
  return out;
}

// ---- AdamW (Adam is AdamW with weight_decay 0) --------------------------------------------------

AdamW::AdamW(std::vector<Tensor> params_, double lr_, double b1_, double b2_, double eps_,
             double weight_decay_)
    : Optimizer(std::move(params_), lr_),
      b1(b1_),
      b2(b2_),
      eps(eps_),
      weight_decay(weight_decay_),
      t(Tensor::zeros({}, dtypes::float32, device()).contiguous().realize()) {
  for (const Tensor& p : params) {
    m.push_back(state_like(p));
    v.push_back(state_like(p));
  }
}

std::vector<Optimizer::Update> AdamW::updates() {
  std::vector<Update> out;
  const std::vector<std::pair<size_t, Tensor>> grads = with_grads();
  if (grads.empty()) return out;
  const Tensor t1 = t.add(Tensor(1.0));
  out.emplace_back(t, t1);
  // 1 - b^t from the step-count tensor (b^t = exp2(t log2 b)), not from a C++ counter.
  const Tensor bias1 = Tensor(1.0).sub(Tensor::scalar(b1, dtypes::float32, device()).pow(t1));
  const Tensor bias2 = Tensor(1.0).sub(Tensor::scalar(b2, dtypes::float32, device()).pow(t1));
  for (auto& [i, g] : grads) {
    const DType dt = params[i].dtype();
    Tensor p = params[i].detach();
    const Tensor lr_p = lr.cast(dt);
    if (weight_decay != 0) p = p.mul(Tensor(1.0).sub(lr_p.mul(Tensor(weight_decay))));
    const Tensor mi = m[i].mul(Tensor(b1)).add(g.mul(Tensor(1.0 - b1)));
    const Tensor vi = v[i].mul(Tensor(b2)).add(g.mul(g).mul(Tensor(1.0 - b2)));
    const Tensor m_hat = mi.div(bias1.cast(dt));
    const Tensor v_hat = vi.div(bias2.cast(dt));
    out.emplace_back(m[i], mi);
    out.emplace_back(v[i], vi);
    out.emplace_back(params[i], p.sub(lr_p.mul(m_hat).div(v_hat.sqrt().add(Tensor(eps)))));
  }
  return out;
}

}  // namespace vkgrad::nn::optim
