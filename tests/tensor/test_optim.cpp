// tests/tensor: the optimizers of vkgrad::nn::optim (nn/optim.cpp) on every device. Gradients
// are set by hand (set_grad), so these need no autograd; each step is compared with PyTorch's
// update formulas evaluated in double precision here.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/realize.hpp"
#include "harness.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::testing {
namespace {

class OptimTest : public DeviceTest {};

using Vec = std::vector<double>;

Vec rand32(int64_t n, double lo, double hi, uint64_t seed) {
  Vec v = random_values(n, lo, hi, seed);
  for (double& x : v) x = round_to(x, dtypes::float32);
  return v;
}

constexpr int64_t kN = 6;
const Shape kShape{2, 3};

// Three steps' gradients, fixed.
std::vector<Vec> three_grads() {
  return {rand32(kN, -1, 1, 21), rand32(kN, -1, 1, 22), rand32(kN, -2, 2, 23)};
}

// torch.optim.SGD (dampening 0).
std::vector<Vec> sgd_ref(Vec p, const std::vector<Vec>& grads, double lr, double momentum,
                         double wd, bool nesterov) {
  std::vector<Vec> out;
  Vec buf(p.size(), 0.0);
  for (size_t step = 0; step < grads.size(); ++step) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grads[step][i] + wd * p[i];
      if (momentum != 0) {
        buf[i] = step == 0 ? g : momentum * buf[i] + g;
        g = nesterov ? g + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * g;
    }
    out.push_back(p);
  }
  return out;
}

struct AdamState {
  std::vector<Vec> p, m, v;
};

// torch.optim.AdamW (torch.optim.Adam when wd = 0).
AdamState adamw_ref(Vec p, const std::vector<Vec>& grads, double lr, double b1, double b2,
                    double eps, double wd) {
  AdamState out;
  Vec m(p.size(), 0.0), v(p.size(), 0.0);
  for (size_t step = 0; step < grads.size(); ++step) {
    const double t = static_cast<double>(step + 1);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = grads[step][i];
      p[i] *= 1 - lr * wd;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(b1, t)), v_hat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
    out.p.push_back(p);
    out.m.push_back(m);
    out.v.push_back(v);
  }
  return out;
}

Tensor param(const Vec& v, const std::string& dev) {
  Tensor t = make_tensor(v, kShape, dtypes::float32, dev);
  t.requires_grad_();
  return t;
}

void set_grad(Tensor& p, const Vec& g, const std::string& dev) {
  p.set_grad(make_tensor(g, kShape, dtypes::float32, dev));
}

struct SgdCase {
  double lr, momentum, wd;
  bool nesterov;
};

TEST_P(OptimTest, SgdMatchesPyTorch) {
  const Vec p0 = rand32(kN, -1, 1, 20);
  const std::vector<Vec> grads = three_grads();
  for (const SgdCase& c :
       {SgdCase{0.1, 0, 0, false}, SgdCase{0.1, 0.9, 0, false}, SgdCase{0.05, 0.9, 0, true},
        SgdCase{0.1, 0, 0.01, false}, SgdCase{0.05, 0.8, 0.1, true}}) {
    SCOPED_TRACE("lr " + std::to_string(c.lr) + " momentum " + std::to_string(c.momentum) +
                 " weight_decay " + std::to_string(c.wd) + (c.nesterov ? " nesterov" : ""));
    Tensor p = param(p0, dev());
    nn::optim::SGD opt({p}, c.lr, c.momentum, c.wd, c.nesterov);
    const std::vector<Vec> want = sgd_ref(p0, grads, c.lr, c.momentum, c.wd, c.nesterov);
    for (size_t s = 0; s < grads.size(); ++s) {
      set_grad(p, grads[s], dev());
      opt.step();
      expect_values(p, kShape, dtypes::float32, want[s], 1e-5, 1e-6);
    }
  }
}

TEST_P(OptimTest, SgdDefaults) {
  const Vec p0 = rand32(kN, -1, 1, 24);
  const std::vector<Vec> grads = three_grads();
  Tensor p = param(p0, dev());
  nn::optim::SGD opt({p});  // lr 0.001, no momentum
  set_grad(p, grads[0], dev());
  opt.step();
  expect_values(p, kShape, dtypes::float32, sgd_ref(p0, {grads[0]}, 0.001, 0, 0, false)[0], 1e-6,
                1e-7);
  EXPECT_THROW(nn::optim::SGD({p}, 0.1, 0.0, 0.0, true), Error);  // nesterov needs momentum
}

TEST_P(OptimTest, AdamMatchesPyTorch) {
  const Vec p0 = rand32(kN, -1, 1, 25);
  const std::vector<Vec> grads = three_grads();
  Tensor p = param(p0, dev());
  nn::optim::Adam opt({p}, 0.01);
  const AdamState want = adamw_ref(p0, grads, 0.01, 0.9, 0.999, 1e-8, 0.0);
  for (size_t s = 0; s < grads.size(); ++s) {
    set_grad(p, grads[s], dev());
    opt.step();
    Batch batch;
    batch.context = "step " + std::to_string(s + 1);
    batch.add(p, kShape, dtypes::float32, want.p[s], 1e-5, 1e-6);
    batch.add(opt.m[0], kShape, dtypes::float32, want.m[s], 1e-5, 1e-7);
    batch.add(opt.v[0], kShape, dtypes::float32, want.v[s], 1e-5, 1e-9);
    batch.add(opt.t, {}, dtypes::float32, {static_cast<double>(s + 1)});
    batch.check();
  }
}

TEST_P(OptimTest, AdamWMatchesPyTorch) {
  const Vec p0 = rand32(kN, -1, 1, 26);
  const std::vector<Vec> grads = three_grads();
  for (double wd : {0.01, 0.5}) {
    SCOPED_TRACE("weight_decay " + std::to_string(wd));
    Tensor p = param(p0, dev());
    nn::optim::AdamW opt({p}, 0.02, 0.8, 0.99, 1e-6, wd);
    const AdamState want = adamw_ref(p0, grads, 0.02, 0.8, 0.99, 1e-6, wd);
    for (size_t s = 0; s < grads.size(); ++s) {
      set_grad(p, grads[s], dev());
      opt.step();
      expect_values(p, kShape, dtypes::float32, want.p[s], 1e-5, 1e-6);
    }
  }
  // The default weight decay is 0.01.
  Tensor p = param(p0, dev());
  nn::optim::AdamW opt({p});
  EXPECT_EQ(opt.weight_decay, 0.01);
  set_grad(p, grads[0], dev());
  opt.step();
  expect_values(p, kShape, dtypes::float32,
                adamw_ref(p0, {grads[0]}, 0.001, 0.9, 0.999, 1e-8, 0.01).p[0], 1e-5, 1e-7);
}

// A parameter without a gradient (after zero_grad, or one no backward reached) makes step() an
// Error naming it, and nothing moves, not even the step count.
TEST_P(OptimTest, ZeroGradAndParametersWithoutGrad) {
  const Vec a0 = rand32(kN, -1, 1, 27), b0 = rand32(kN, -1, 1, 28);
  const std::vector<Vec> grads = three_grads();
  Tensor a = param(a0, dev()), b = param(b0, dev());
  nn::optim::Adam opt({a, b}, 0.01);
  set_grad(a, grads[0], dev());
  set_grad(b, grads[1], dev());
  opt.zero_grad();
  EXPECT_FALSE(a.grad().has_value());
  EXPECT_FALSE(b.grad().has_value());
  expect_error<Error>([&] { opt.step(); }, {"optimizer", "parameter 0", "(2, 3)", "no gradient"});
  set_grad(a, grads[0], dev());  // b has none
  expect_error<Error>([&] { opt.step(); }, {"parameter 1", "no gradient"});
  expect_values(a, kShape, dtypes::float32, a0);
  expect_values(b, kShape, dtypes::float32, b0);
  expect_values(opt.t, {}, dtypes::float32, {0});

  set_grad(b, grads[1], dev());
  opt.step();
  expect_values(a, kShape, dtypes::float32,
                adamw_ref(a0, {grads[0]}, 0.01, 0.9, 0.999, 1e-8, 0).p[0], 1e-5, 1e-6);
  expect_values(b, kShape, dtypes::float32,
                adamw_ref(b0, {grads[1]}, 0.01, 0.9, 0.999, 1e-8, 0).p[0], 1e-5, 1e-6);
}

// A layer's whole state given to the optimizer: what needs no grad (BatchNorm's running
// statistics, its batch count, an int64) is a buffer, realized by each step in place (not left
// to chain lazily from step to step through every step's forward) and not updated by it.
TEST_P(OptimTest, BuffersAreRealizedWithEachStep) {
  nn::BatchNorm2d bn(3, 1e-5, 0.1);
  bn.weight = Tensor::ones({3}, dtypes::float32, dev());
  bn.weight.requires_grad_();
  bn.bias = Tensor::zeros({3}, dtypes::float32, dev());
  bn.bias->requires_grad_();
  bn.running_mean = Tensor::zeros({3}, dtypes::float32, dev());
  bn.running_var = Tensor::ones({3}, dtypes::float32, dev());
  bn.num_batches_tracked = Tensor::zeros({}, dtypes::int64, dev());
  std::vector<Tensor> state;
  for (auto& [name, t] : bn.state_dict()) state.push_back(t);
  nn::optim::SGD opt(state, 0.1, 0.9);
  const Vec xs = rand32(2 * 3 * 4, -1, 1, 41);
  const Tensor x = make_tensor(xs, {2, 3, 2, 2}, dtypes::float32, dev());
  const bool was = Tensor::training;
  Tensor::training = true;
  for (int step = 1; step <= 2; ++step) {
    opt.zero_grad();
    bn(x).mul(x).sum().backward();
    opt.step();
    for (const Tensor* t : {&bn.running_mean, &bn.num_batches_tracked})
      EXPECT_TRUE(engine::as_buffer(tensor::uop(*t))) << "step " << step;
  }
  Tensor::training = was;
  // The batch mean m of each channel, the same each step: 0.1 m, then 0.9 * 0.1 m + 0.1 m.
  Vec want(3, 0.0);
  for (int64_t c = 0; c < 3; ++c) {
    double m = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 4; ++i) m += xs[size_t((b * 3 + c) * 4 + i)] / 8;
    want[size_t(c)] = 0.19 * m;
  }
  expect_values(bn.running_mean, {3}, dtypes::float32, want, 1e-5, 1e-6);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
}

TEST_P(OptimTest, LearningRateIsATensor) {
  const Vec p0 = rand32(kN, -1, 1, 29);
  const std::vector<Vec> grads = three_grads();
  Tensor p = param(p0, dev());
  nn::optim::SGD opt({p}, 0.1);
  set_grad(p, grads[0], dev());
  opt.step();
  opt.lr.assign(Tensor::scalar(0.5, dtypes::float32, dev()));
  set_grad(p, grads[1], dev());
  opt.step();
  Vec want = p0;
  for (int64_t i = 0; i < kN; ++i) want[i] -= 0.1 * grads[0][i] + 0.5 * grads[1][i];
  expect_values(p, kShape, dtypes::float32, want, 1e-5, 1e-6);
}

TEST_P(OptimTest, StepRealizesExtraTensorsAndKeepsOldValues) {
  const Vec p0 = rand32(kN, -1, 1, 30);
  const std::vector<Vec> grads = three_grads();
  Tensor p = param(p0, dev());
  nn::optim::SGD opt({p}, 0.1);
  Tensor before = p.mul(2.0);  // built from the value before the step
  std::vector<Tensor> also{p.sum()};
  set_grad(p, grads[0], dev());
  opt.step(also);
  double sum = 0;
  Vec twice(kN);
  for (int64_t i = 0; i < kN; ++i) {
    sum += p0[i];
    twice[i] = 2 * p0[i];
  }
  expect_values(also[0], {}, dtypes::float32, {sum}, 1e-6, 1e-6);
  expect_values(before, kShape, dtypes::float32, twice);
  expect_values(p, kShape, dtypes::float32, sgd_ref(p0, {grads[0]}, 0.1, 0, 0, false)[0], 1e-6,
                1e-7);
}

TEST_P(OptimTest, TrainsALinearModelWithAutograd) {
  // y = x w* + 0.5 learned from 64 samples: each optimizer drives the loss far below its start.
  const std::string before = default_device();
  set_default_device(dev());
  const Tensor x = make_tensor(rand32(64 * 3, -1, 1, 31), {64, 3}, dtypes::float32, dev());
  const Tensor y = x.matmul(make_tensor({1.5, -2, 0.5}, {3, 1}, dtypes::float32, dev())).add(0.5);
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    Tensor::manual_seed(7);
    nn::Linear model(3, 1);
    std::unique_ptr<nn::optim::Optimizer> opt;
    if (which == 0) opt = std::make_unique<nn::optim::SGD>(model.parameters(), 0.1, 0.9);
    if (which == 1) opt = std::make_unique<nn::optim::Adam>(model.parameters(), 0.1);
    if (which == 2) opt = std::make_unique<nn::optim::AdamW>(model.parameters(), 0.1);
    double first = 0, last = 0;
    for (int step = 0; step < 40; ++step) {
      opt->zero_grad();
      Tensor loss = model(x).sub(y).square().mean();
      loss.backward();
      std::vector<Tensor> also{loss};
      opt->step(also);
      (step == 0 ? first : last) = also[0].item<float>();
    }
    EXPECT_LT(last, first * 0.05) << "first " << first << ", last " << last;
  }
  set_default_device(before);
}

// A tensor that needs no grad may have any dtype (a buffer: a step realizes it and leaves it).
TEST_P(OptimTest, IntegerTensorsAreBuffers) {
  Tensor i = make_tensor({1, 2}, {2}, dtypes::int32, dev());
  nn::optim::SGD opt({i}, 0.1, 0.9);
  opt.step();
  expect_values(i, {2}, dtypes::int32, {1, 2});
}

VKGRAD_ALL_DEVICES(OptimTest);

}  // namespace
}  // namespace vkgrad::testing
