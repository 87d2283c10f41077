// tests/tensor: the layers of vkgrad::nn (nn/modules.cpp) on every device: forward values with
// given weights against double-precision loops, default initialization (shapes, ranges,
// requires_grad), BatchNorm2d's running statistics, state dicts and their errors.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad::testing {
namespace {

// Layers create their tensors on the default device: each test makes it the one under test.
class ModuleTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    before_ = default_device();
    set_default_device(dev());
  }
  void TearDown() override {
    set_default_device(before_);
    DeviceTest::TearDown();
  }

 private:
  std::string before_;
};

// Tensor::training on for one scope.
struct TrainingMode {
  bool before = Tensor::training;
  TrainingMode() { Tensor::training = true; }
  ~TrainingMode() { Tensor::training = before; }
};

std::vector<double> rand32(int64_t n, double lo, double hi, uint64_t seed) {
  std::vector<double> v = random_values(n, lo, hi, seed);
  for (double& x : v) x = round_to(x, dtypes::float32);
  return v;
}

Tensor f32(const std::vector<double>& v, const Shape& s, const std::string& dev) {
  return make_tensor(v, s, dtypes::float32, dev);
}

void expect_in_range(const Tensor& t, double bound, const std::string& what) {
  double lo = 0, hi = 0;
  for (double x : values_of(t)) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GE(lo, -bound) << what;
  EXPECT_LE(hi, bound) << what;
  // Drawn from the whole interval, not a corner of it.
  if (t.numel() >= 64) {
    EXPECT_LT(lo, -bound / 2) << what;
    EXPECT_GT(hi, bound / 2) << what;
  }
}

std::vector<std::string> keys(const nn::StateDict& sd) {
  std::vector<std::string> out;
  for (const auto& [k, v] : sd) out.push_back(k);
  return out;
}

template <class E, class F>
void expect_throw_containing(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an exception mentioning " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---- Linear -------------------------------------------------------------------------------------

TEST_P(ModuleTest, LinearInit) {
  Tensor::manual_seed(1);
  nn::Linear l(16, 8);
  EXPECT_EQ(l.weight.shape(), (Shape{8, 16}));
  ASSERT_TRUE(l.bias.has_value());
  EXPECT_EQ(l.bias->shape(), (Shape{8}));
  EXPECT_EQ(l.weight.dtype(), dtypes::float32);
  EXPECT_TRUE(l.weight.requires_grad());
  EXPECT_TRUE(l.bias->requires_grad());
  expect_in_range(l.weight, 1.0 / 4.0, "weight");
  expect_in_range(*l.bias, 1.0 / 4.0, "bias");
  EXPECT_EQ(l.parameters().size(), 2u);
  EXPECT_EQ(keys(l.state_dict()), (std::vector<std::string>{"bias", "weight"}));

  nn::Linear nb(3, 2, false);
  EXPECT_FALSE(nb.bias.has_value());
  EXPECT_EQ(nb.parameters().size(), 1u);
  EXPECT_EQ(keys(nb.state_dict()), (std::vector<std::string>{"weight"}));
}

TEST_P(ModuleTest, LinearForward) {
  const int64_t n = 3, in = 5, out = 4;
  const std::vector<double> x = rand32(n * in, -1, 1, 1), w = rand32(out * in, -1, 1, 2),
                            b = rand32(out, -1, 1, 3);
  nn::Linear l(in, out);
  l.weight = f32(w, {out, in}, dev());
  l.bias = f32(b, {out}, dev());
  std::vector<double> want(n * out);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b[o];
      for (int64_t k = 0; k < in; ++k) s += x[i * in + k] * w[o * in + k];
      want[i * out + o] = s;
    }
  expect_values(l(f32(x, {n, in}, dev())), {n, out}, dtypes::float32, want, 1e-5, 1e-5);
  // Leading batch dimensions pass through.
  expect_values(l(f32(x, {1, n, in}, dev())), {1, n, out}, dtypes::float32, want, 1e-5, 1e-5);
}

// ---- Conv2d -------------------------------------------------------------------------------------

TEST_P(ModuleTest, Conv2dInit) {
  Tensor::manual_seed(2);
  nn::Conv2d c(4, 6, 3, 1, 1, 1, 2);
  EXPECT_EQ(c.weight.shape(), (Shape{6, 2, 3, 3}));
  ASSERT_TRUE(c.bias.has_value());
  EXPECT_EQ(c.bias->shape(), (Shape{6}));
  expect_in_range(c.weight, 1.0 / std::sqrt(18.0), "weight");  // fan_in = 4/2 * 3 * 3
  expect_in_range(*c.bias, 1.0 / std::sqrt(18.0), "bias");
  EXPECT_TRUE(c.weight.requires_grad());
  EXPECT_EQ(c.parameters().size(), 2u);
  nn::Conv2d rect(1, 2, {3, 2}, 1, 0, 1, 1, false);
  EXPECT_EQ(rect.weight.shape(), (Shape{2, 1, 3, 2}));
  EXPECT_FALSE(rect.bias.has_value());
  EXPECT_THROW(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), ShapeError);  // 3 channels in 2 groups
}

TEST_P(ModuleTest, Conv2dForward) {
  // (1, 2, 5, 4) input, 3 filters of 3x3, stride 2, padding 1.
  const int64_t C = 2, H = 5, W = 4, O = 3, K = 3, S = 2, P = 1;
  const int64_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  const std::vector<double> x = rand32(C * H * W, -1, 1, 4), w = rand32(O * C * K * K, -1, 1, 5),
                            b = rand32(O, -1, 1, 6);
  nn::Conv2d c(C, O, K, S, P);
  c.weight = f32(w, {O, C, K, K}, dev());
  c.bias = f32(b, {O}, dev());
  std::vector<double> want(O * OH * OW);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double s = b[o];
        for (int64_t ci = 0; ci < C; ++ci)
          for (int64_t u = 0; u < K; ++u)
            for (int64_t v = 0; v < K; ++v) {
              const int64_t y = i * S - P + u, z = j * S - P + v;
              if (y < 0 || y >= H || z < 0 || z >= W) continue;
              s += x[(ci * H + y) * W + z] * w[((o * C + ci) * K + u) * K + v];
            }
        want[(o * OH + i) * OW + j] = s;
      }
  expect_values(c(f32(x, {1, C, H, W}, dev())), {1, O, OH, OW}, dtypes::float32, want, 1e-5, 1e-5);
}

// ---- BatchNorm2d --------------------------------------------------------------------------------

TEST_P(ModuleTest, BatchNorm2dInit) {
  nn::BatchNorm2d bn(3);
  Batch batch;
  batch.add(bn.weight, {3}, dtypes::float32, {1, 1, 1});
  batch.add(*bn.bias, {3}, dtypes::float32, {0, 0, 0});
  batch.add(bn.running_mean, {3}, dtypes::float32, {0, 0, 0});
  batch.add(bn.running_var, {3}, dtypes::float32, {1, 1, 1});
  batch.add(bn.num_batches_tracked, {}, dtypes::int64, {0});
  batch.check();
  EXPECT_TRUE(bn.weight.requires_grad());
  EXPECT_FALSE(bn.running_mean.requires_grad());
  EXPECT_EQ(bn.parameters().size(), 2u);
  EXPECT_EQ(keys(bn.state_dict()),
            (std::vector<std::string>{"bias", "num_batches_tracked", "running_mean", "running_var",
                                      "weight"}));
}

TEST_P(ModuleTest, BatchNorm2dTrainingAndEval) {
  const int64_t N = 2, C = 3, H = 2, W = 3, HW = H * W, n = N * HW;
  const std::vector<double> x = rand32(N * C * HW, -2, 3, 7), g = rand32(C, 0.5, 1.5, 8),
                            bb = rand32(C, -1, 1, 9);
  nn::BatchNorm2d bn(C, 1e-5, 0.1);
  bn.weight = f32(g, {C}, dev());
  bn.bias = f32(bb, {C}, dev());
  bn.running_mean = Tensor::zeros({C}, dtypes::float32, dev());
  bn.running_var = Tensor::ones({C}, dtypes::float32, dev());
  bn.num_batches_tracked = Tensor::zeros({}, dtypes::int64, dev());
  auto at = [&](int64_t i, int64_t c, int64_t k) { return x[(i * C + c) * HW + k]; };
  std::vector<double> mean(C, 0), var(C, 0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < HW; ++k) mean[c] += at(i, c, k) / n;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < HW; ++k) var[c] += std::pow(at(i, c, k) - mean[c], 2) / n;
  }
  auto normalized = [&](const std::vector<double>& m, const std::vector<double>& v) {
    std::vector<double> out(x.size());
    for (int64_t i = 0; i < N; ++i)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < HW; ++k)
          out[(i * C + c) * HW + k] = (at(i, c, k) - m[c]) / std::sqrt(v[c] + 1e-5) * g[c] + bb[c];
    return out;
  };
  const Tensor xt = f32(x, {N, C, H, W}, dev());
  {
    TrainingMode training;
    expect_values(bn(xt), {N, C, H, W}, dtypes::float32, normalized(mean, var), 1e-4, 1e-5);
  }
  std::vector<double> rm(C), rv(C);
  for (int64_t c = 0; c < C; ++c) {
    rm[c] = 0.1 * mean[c];
    rv[c] = 0.9 + 0.1 * var[c] * n / (n - 1);  // the running variance is unbiased
  }
  Batch batch;
  batch.add(bn.running_mean, {C}, dtypes::float32, rm, 1e-5, 1e-6);
  batch.add(bn.running_var, {C}, dtypes::float32, rv, 1e-5, 1e-6);
  batch.add(bn.num_batches_tracked, {}, dtypes::int64, {1});
  batch.check();
  // Eval mode normalizes by the running statistics and leaves them alone.
  expect_values(bn(xt), {N, C, H, W}, dtypes::float32, normalized(rm, rv), 1e-4, 1e-5);
  expect_values(bn.num_batches_tracked, {}, dtypes::int64, {1});
}

// ---- LayerNorm ----------------------------------------------------------------------------------

TEST_P(ModuleTest, LayerNorm) {
  const int64_t R = 3, D = 6;
  const std::vector<double> x = rand32(R * D, -3, 3, 10), g = rand32(D, 0.5, 2, 11),
                            b = rand32(D, -1, 1, 12);
  nn::LayerNorm ln(D);
  ASSERT_TRUE(ln.weight && ln.bias);
  expect_values(*ln.weight, {D}, dtypes::float32, std::vector<double>(D, 1.0));
  EXPECT_TRUE(ln.weight->requires_grad());
  ln.weight = f32(g, {D}, dev());
  ln.bias = f32(b, {D}, dev());
  std::vector<double> want(x.size()), plain(x.size());
  for (int64_t r = 0; r < R; ++r) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < D; ++k) m += x[r * D + k] / D;
    for (int64_t k = 0; k < D; ++k) v += std::pow(x[r * D + k] - m, 2) / D;
    for (int64_t k = 0; k < D; ++k) {
      plain[r * D + k] = (x[r * D + k] - m) / std::sqrt(v + 1e-5);
      want[r * D + k] = plain[r * D + k] * g[k] + b[k];
    }
  }
  const Tensor xt = f32(x, {R, D}, dev());
  expect_values(ln(xt), {R, D}, dtypes::float32, want, 1e-4, 1e-5);
  nn::LayerNorm bare(D, 1e-5, false);
  EXPECT_TRUE(bare.parameters().empty());
  expect_values(bare(xt), {R, D}, dtypes::float32, plain, 1e-4, 1e-5);
  // Over the trailing two dimensions: the same rows seen as (R, 2, 3).
  nn::LayerNorm two(Shape{2, 3}, 1e-5, false);
  expect_values(two(xt.reshape({R, 2, 3})), {R, 2, 3}, dtypes::float32, plain, 1e-4, 1e-5);
  EXPECT_THROW(ln(f32(x, {D, R}, dev())), ShapeError);
}

// ---- Embedding ----------------------------------------------------------------------------------

TEST_P(ModuleTest, Embedding) {
  const int64_t V = 7, D = 3;
  Tensor::manual_seed(3);
  nn::Embedding e(V, D);
  EXPECT_EQ(e.weight.shape(), (Shape{V, D}));
  EXPECT_TRUE(e.weight.requires_grad());
  const std::vector<double> w = rand32(V * D, -1, 1, 13);
  e.weight = f32(w, {V, D}, dev());
  const std::vector<double> idx = {3, 0, 6, 6, 1, 2};
  std::vector<double> want;
  for (double i : idx)
    for (int64_t d = 0; d < D; ++d) want.push_back(w[static_cast<int64_t>(i) * D + d]);
  expect_values(e(make_tensor(idx, {2, 3}, dtypes::int32, dev())), {2, 3, D}, dtypes::float32,
                want);
  EXPECT_THROW(e(f32(idx, {6}, dev())), DTypeError);
}

TEST_P(ModuleTest, EmbeddingInitIsStandardNormal) {
  Tensor::manual_seed(4);
  nn::Embedding e(500, 8);
  const std::vector<double> w = values_of(e.weight);
  double m = 0, v = 0;
  for (double x : w) m += x / w.size();
  for (double x : w) v += (x - m) * (x - m) / w.size();
  EXPECT_NEAR(m, 0.0, 0.05);
  EXPECT_NEAR(v, 1.0, 0.08);
}

// ---- state dicts --------------------------------------------------------------------------------

TEST_P(ModuleTest, StateDictRoundTrip) {
  Tensor::manual_seed(5);
  nn::Linear a(4, 3), b(4, 3);
  const std::vector<double> wa = values_of(a.weight), ba = values_of(*a.bias);
  const Tensor b_weight = b.weight;  // a handle taken before loading sees the new value
  b.load_state_dict(a.state_dict());
  expect_values(b.weight, {3, 4}, dtypes::float32, wa);
  expect_values(*b.bias, {3}, dtypes::float32, ba);
  expect_values(b_weight, {3, 4}, dtypes::float32, wa);

  nn::BatchNorm2d bn1(2), bn2(2);
  bn1.running_mean = make_tensor({0.5, -0.5}, {2}, dtypes::float32, dev());
  bn1.num_batches_tracked = make_tensor({7}, {}, dtypes::int64, dev());
  bn2.load_state_dict(bn1.state_dict());
  expect_values(bn2.running_mean, {2}, dtypes::float32, {0.5, -0.5});
  expect_values(bn2.num_batches_tracked, {}, dtypes::int64, {7});
}

TEST_P(ModuleTest, LoadStateDictErrors) {
  nn::Linear l(4, 3);
  l.weight = make_tensor(std::vector<double>(12, 1.0), {3, 4}, dtypes::float32, dev());
  const nn::StateDict good{{"weight", Tensor::zeros({3, 4}, {}, dev())},
                           {"bias", Tensor::zeros({3}, {}, dev())}};
  nn::StateDict missing = good;
  missing.erase("bias");
  expect_throw_containing<Error>([&] { l.load_state_dict(missing); }, "bias");
  nn::StateDict extra = good;
  extra.emplace("scale", Tensor::zeros({3}, {}, dev()));
  expect_throw_containing<Error>([&] { l.load_state_dict(extra); }, "scale");
  nn::StateDict shape = good;
  shape["weight"] = Tensor::zeros({4, 3}, {}, dev());
  expect_throw_containing<ShapeError>([&] { l.load_state_dict(shape); }, "weight");
  nn::StateDict dtype = good;
  dtype["bias"] = Tensor::zeros({3}, dtypes::float16, dev());
  expect_throw_containing<DTypeError>([&] { l.load_state_dict(dtype); }, "bias");
  // Nothing was loaded by the failed calls.
  expect_values(l.weight, {3, 4}, dtypes::float32, std::vector<double>(12, 1.0));
}

TEST_P(ModuleTest, StateHelpersOverSeveralLayers) {
  nn::Linear l1(2, 3), l2(3, 1, false);
  EXPECT_EQ(nn::state::get_parameters(l1, l2).size(), 3u);
  nn::StateDict sd = nn::state::get_state_dict(l1, "l1.");
  sd.merge(nn::state::get_state_dict(l2, "l2."));
  EXPECT_EQ(keys(sd), (std::vector<std::string>{"l1.bias", "l1.weight", "l2.weight"}));
  nn::Linear m1(2, 3), m2(3, 1, false);
  nn::state::load_state_dict(m1, sd, "l1.");
  nn::state::load_state_dict(m2, sd, "l2.");
  expect_values(m2.weight, {1, 3}, dtypes::float32, values_of(l2.weight));
}

// ---- autograd through the layers ----------------------------------------------------------------

TEST_P(ModuleTest, LinearGradients) {
  // loss = sum(x W^T + b): dW[o][k] = sum_i x[i][k], db[o] = n.
  const int64_t n = 4, in = 3, out = 2;
  const std::vector<double> x = rand32(n * in, -1, 1, 14);
  nn::Linear l(in, out);
  l(f32(x, {n, in}, dev())).sum().backward();
  ASSERT_TRUE(l.weight.grad() && l.bias->grad());
  std::vector<double> dw(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < in; ++k) dw[o * in + k] += x[i * in + k];
  expect_values(*l.weight.grad(), {out, in}, dtypes::float32, dw, 1e-5, 1e-6);
  expect_values(*l.bias->grad(), {out}, dtypes::float32, {4, 4}, 1e-6, 0);
}

TEST_P(ModuleTest, GradientsReachEveryParameter) {
  Tensor::manual_seed(6);
  TrainingMode training;
  nn::Conv2d conv(2, 4, 3, 1, 1);
  nn::BatchNorm2d bn(4);
  nn::LayerNorm ln(5);
  nn::Embedding emb(6, 5);
  nn::Linear head(4 * 5 * 5, 5);
  const Tensor x = f32(rand32(2 * 2 * 5 * 5, -1, 1, 15), {2, 2, 5, 5}, dev());
  const Tensor idx = make_tensor({0, 5, 2, 2}, {2, 2}, dtypes::int32, dev());
  const Tensor h = head(bn(conv(x)).relu().flatten(1));  // (2, 5)
  const Tensor e = ln(emb(idx)).sum(1);                  // (2, 5)
  h.mul(e).square().mean().backward();
  const std::vector<Tensor> params = nn::state::get_parameters(conv, bn, ln, emb, head);
  ASSERT_EQ(params.size(), 9u);
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    ASSERT_TRUE(p.grad().has_value());
    EXPECT_EQ(p.grad()->shape(), p.shape());
    grads.push_back(p.grad()->abs().sum());
  }
  Tensor::realize_all(grads);
  for (size_t i = 0; i < grads.size(); ++i) {
    const double g = grads[i].item<float>();
    EXPECT_TRUE(std::isfinite(g)) << "parameter " << i;
  }
  // Embedding rows 1, 3 and 4 were not looked up: their gradient is zero, the others not.
  const std::vector<double> eg = values_of(emb.weight.grad()->abs().sum(1));
  EXPECT_EQ(eg[1], 0.0);
  EXPECT_EQ(eg[3], 0.0);
  EXPECT_GT(eg[0], 0.0);
  EXPECT_GT(eg[5], 0.0);
}

VKGRAD_ALL_DEVICES(ModuleTest);

}  // namespace
}  // namespace vkgrad::testing
