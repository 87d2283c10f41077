// tests/tensor: autograd (autograd.cpp). Every differentiable op's gradient against central
// finite differences in float64 on the CPU; float32 gradients on every device against the CPU's
// float64 ones for a few models; and the semantics of requires_grad, backward, grad, detach and
// realize around them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad::testing {
namespace {

// The device under test, for check_gradients (a free function used by every case).
std::string g_device = "CPU";

class AutogradTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    g_device = dev();
  }
};

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

// The gradient, or a failure and NaNs when there is none.
Tensor grad_of(const Tensor& t) {
  if (std::optional<Tensor> g = t.grad()) return *g;
  ADD_FAILURE() << "no gradient";
  return Tensor::full(t.shape(), std::nan(""), t.dtype(), t.device());
}

// An input of a checked function: its shape and the range its random values come from.
struct Arg {
  Shape shape;
  double lo = -1.0, hi = 1.0;
};

std::vector<std::vector<double>> arg_values(const std::vector<Arg>& args, uint64_t seed) {
  std::vector<std::vector<double>> v;
  for (const Arg& a : args) v.push_back(random_values(numel_of(a.shape), a.lo, a.hi, seed++));
  return v;
}

// sum(f(inputs) * w) with fixed random weights w, so that every output element gets its own
// upstream gradient (a plain sum would hide mistakes that permute or share gradients).
Tensor weighted_loss(const Tensor& out) {
  const Tensor w = make_tensor(random_values(out.numel(), 0.5, 1.5, 4242), out.shape(), out.dtype(),
                               out.device());
  return (out * w).sum();
}

// The analytic gradients of weighted_loss(f(inputs)), one vector per input.
std::vector<std::vector<double>> analytic(const Fn& f, const std::vector<Arg>& args,
                                          const std::vector<std::vector<double>>& values, DType dt,
                                          const std::string& device) {
  Inputs ts;
  for (size_t i = 0; i < args.size(); ++i)
    ts.push_back(make_tensor(values[i], args[i].shape, dt, device).requires_grad_());
  weighted_loss(f(ts)).backward();
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) {
    const std::optional<Tensor> g = t.grad();
    out.push_back(g ? values_of(*g) : std::vector<double>(static_cast<size_t>(t.numel()), 0.0));
  }
  return out;
}

void check_against_cpu64(const std::string& what, const std::vector<Arg>& args, const Fn& f,
                         const std::string& device, double rtol = 2e-4);

// On the CPU: every input's gradient against central differences (h = 1e-6, float64). On any
// other device: the device's float32 gradients against the CPU's float64 ones (which the CPU
// instance of the same test checks against finite differences).
void check_gradients(const std::string& what, const std::vector<Arg>& args, const Fn& f,
                     double tol = 1e-6, uint64_t seed = 1) {
  if (g_device != "CPU") return check_against_cpu64(what, args, f, g_device);
  SCOPED_TRACE(what);
  const std::vector<std::vector<double>> values = arg_values(args, seed);
  const std::vector<std::vector<double>> got = analytic(f, args, values, dtypes::float64, "CPU");
  auto loss_at = [&](const std::vector<std::vector<double>>& v) {
    Inputs ts;
    for (size_t i = 0; i < args.size(); ++i)
      ts.push_back(make_tensor(v[i], args[i].shape, dtypes::float64, "CPU"));
    return weighted_loss(f(ts)).item<double>();
  };
  constexpr double h = 1e-6;
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<double> numeric(values[i].size());
    std::vector<std::vector<double>> v = values;
    for (size_t j = 0; j < v[i].size(); ++j) {
      v[i][j] = values[i][j] + h;
      const double up = loss_at(v);
      v[i][j] = values[i][j] - h;
      const double down = loss_at(v);
      v[i][j] = values[i][j];
      numeric[j] = (up - down) / (2 * h);
    }
    expect_near(got[i], numeric, tol, tol, what + ": input " + std::to_string(i));
  }
}

// Float32 gradients on `device` against float64 ones on the CPU, from the same (float32-exact)
// inputs.
void check_against_cpu64(const std::string& what, const std::vector<Arg>& args, const Fn& f,
                         const std::string& device, double rtol) {
  SCOPED_TRACE(what);
  std::vector<std::vector<double>> values = arg_values(args, 7);
  for (auto& v : values)
    for (double& x : v) x = round_to(x, dtypes::float32);
  const auto ref = analytic(f, args, values, dtypes::float64, "CPU");
  const auto got = analytic(f, args, values, dtypes::float32, device);
  for (size_t i = 0; i < args.size(); ++i) {
    double scale = 1.0;
    for (double r : ref[i]) scale = std::max(scale, std::fabs(r));
    expect_near(got[i], ref[i], rtol, rtol * scale, what + ": input " + std::to_string(i));
  }
}

// ---- finite differences: elementwise -----------------------------------------------------------

TEST_P(AutogradTest, UnaryMath) {
  const Shape s{3, 5};
  const Arg any{s}, pos{s, 0.5, 2.0}, wide{s, -2.0, 2.0};
  struct Case {
    const char* name;
    Arg arg;
    Tensor (*f)(const Tensor&);
  };
  const Case cases[] = {
      {"neg", any, [](const Tensor& x) { return -x; }},
      {"exp", any, [](const Tensor& x) { return x.exp(); }},
      {"log", pos, [](const Tensor& x) { return x.log(); }},
      {"exp2", any, [](const Tensor& x) { return x.exp2(); }},
      {"log2", pos, [](const Tensor& x) { return x.log2(); }},
      {"sqrt", pos, [](const Tensor& x) { return x.sqrt(); }},
      {"rsqrt", pos, [](const Tensor& x) { return x.rsqrt(); }},
      {"reciprocal", pos, [](const Tensor& x) { return x.reciprocal(); }},
      {"sin", wide, [](const Tensor& x) { return x.sin(); }},
      {"cos", wide, [](const Tensor& x) { return x.cos(); }},
      {"tan", any, [](const Tensor& x) { return x.tan(); }},
      {"abs", any, [](const Tensor& x) { return x.abs(); }},
      {"square", any, [](const Tensor& x) { return x.square(); }},
      {"sigmoid", wide, [](const Tensor& x) { return x.sigmoid(); }},
      {"tanh", wide, [](const Tensor& x) { return x.tanh(); }},
      {"relu", any, [](const Tensor& x) { return x.relu(); }},
      {"gelu", wide, [](const Tensor& x) { return x.gelu(); }},
      {"silu", wide, [](const Tensor& x) { return x.silu(); }},
      {"softplus", wide, [](const Tensor& x) { return x.softplus(); }},
      {"softplus beta 2", wide, [](const Tensor& x) { return x.softplus(2.0); }},
      {"elu", wide, [](const Tensor& x) { return x.elu(0.7); }},
      {"leaky_relu", any, [](const Tensor& x) { return x.leaky_relu(0.1); }},
      {"mish", wide, [](const Tensor& x) { return x.mish(); }},
      {"hardtanh", wide, [](const Tensor& x) { return x.hardtanh(); }},
      {"clip", any, [](const Tensor& x) { return x.clip(-0.5, 0.4); }},
      {"pow 3", any, [](const Tensor& x) { return x.pow(3); }},
      {"pow -2", pos, [](const Tensor& x) { return x.pow(-2); }},
      {"pow 0.5", pos, [](const Tensor& x) { return x.pow(0.5); }},
      {"pow 2.5", pos, [](const Tensor& x) { return x.pow(2.5); }},
      {"2 ** x", any, [](const Tensor& x) { return Tensor(2.0).pow(x); }},
      {"floor (zero)", wide, [](const Tensor& x) { return x.floor() + x; }},
      {"round (zero)", wide, [](const Tensor& x) { return x.round() * 3.0 + x.sign(); }},
  };
  for (const Case& c : cases) {
    auto f = c.f;
    check_gradients(c.name, {c.arg}, [f](const Inputs& in) { return f(in[0]); });
  }
}

TEST_P(AutogradTest, BinaryMathBroadcasting) {
  const Arg a{{3, 1, 4}}, b{{5, 4}};
  check_gradients("add", {a, b}, [](const Inputs& x) { return x[0] + x[1]; });
  check_gradients("sub", {a, b}, [](const Inputs& x) { return x[0] - x[1]; });
  check_gradients("mul", {a, b}, [](const Inputs& x) { return x[0] * x[1]; });
  check_gradients("div", {a, {{5, 4}, 0.5, 2.0}}, [](const Inputs& x) { return x[0] / x[1]; });
  check_gradients("maximum", {a, b}, [](const Inputs& x) { return x[0].maximum(x[1]); });
  check_gradients("minimum", {a, b}, [](const Inputs& x) { return x[0].minimum(x[1]); });
  check_gradients("pow", {{{3, 4}, 0.5, 2.0}, {{4}, -1.5, 1.5}},
                  [](const Inputs& x) { return x[0].pow(x[1]); });
  check_gradients("scalars", {b}, [](const Inputs& x) {
    return (3.0 - x[0]) * 2.5 + 1.0 / (x[0] + 2.0) - x[0] / 4.0;
  });
  check_gradients("where", {a, b},
                  [](const Inputs& x) { return where(x[0] > 0.0, x[0] * x[1], x[1].exp()); });
  check_gradients("where scalar branch", {b},
                  [](const Inputs& x) { return where(x[0] < 0.2, 0.5, x[0].square()); });
  check_gradients("clip by tensors", {b, {{4}, -1.0, -0.2}, {{5, 1}, 0.2, 1.0}},
                  [](const Inputs& x) { return x[0].clip(x[1], x[2]); });
  check_gradients("self product", {b}, [](const Inputs& x) { return x[0] * x[0] * x[0]; });
  // Through float casts; none through an integer one.
  check_gradients("casts", {{{2, 3}, -3.0, 3.0}}, [](const Inputs& x) {
    return x[0].cast(dtypes::float32).cast(dtypes::float64) * 0.0 + x[0] * 2.0 +
           x[0].cast(dtypes::int32).cast(dtypes::float64);
  });
}

// ---- finite differences: reductions ------------------------------------------------------------

TEST_P(AutogradTest, Reductions) {
  const Arg x{{3, 4, 5}};
  const Arg p{{3, 4, 5}, 0.5, 1.5};
  check_gradients("sum", {x}, [](const Inputs& t) { return t[0].sum(); });
  check_gradients("sum axis", {x}, [](const Inputs& t) { return t[0].sum(1); });
  check_gradients("sum axes keepdim", {x}, [](const Inputs& t) { return t[0].sum({0, 2}, true); });
  check_gradients("mean", {x}, [](const Inputs& t) { return t[0].mean(); });
  check_gradients("mean axis keepdim", {x}, [](const Inputs& t) { return t[0].mean(-1, true); });
  check_gradients("max", {x}, [](const Inputs& t) { return t[0].max(); });
  check_gradients("max axis", {x}, [](const Inputs& t) { return t[0].max(1); });
  check_gradients("min axes keepdim", {x}, [](const Inputs& t) { return t[0].min({0, 2}, true); });
  check_gradients("prod axis", {p}, [](const Inputs& t) { return t[0].prod(2); });
  check_gradients("prod", {{{2, 3}, 0.5, 1.5}}, [](const Inputs& t) { return t[0].prod(); });
  check_gradients("var", {x}, [](const Inputs& t) { return t[0].var(1); });
  check_gradients("var all", {x}, [](const Inputs& t) { return t[0].var(); });
  check_gradients("std axes keepdim", {x}, [](const Inputs& t) { return t[0].std({0, 2}, true); });
  check_gradients("logsumexp", {x}, [](const Inputs& t) { return t[0].logsumexp(1); });
  check_gradients("cumsum", {x}, [](const Inputs& t) { return t[0].cumsum(2); });
  check_gradients("softmax", {x}, [](const Inputs& t) { return t[0].softmax(1); });
  check_gradients("log_softmax", {x}, [](const Inputs& t) { return t[0].log_softmax(); });
  check_gradients("softmax of permuted", {x}, [](const Inputs& t) {
    return t[0].permute({2, 0, 1}).softmax(0);
  });
}

// max/min at ties: the gradient is shared equally among the tied positions (tinygrad); an
// elementwise maximum of equal values gives each side half. prod's gradient with zeros.
TEST_P(AutogradTest, TiesAndZeros) {
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 2, 2, 2}, {2, 3}, {}, dev()).requires_grad_();
  x.max(1).sum().backward();
  expect_values(grad_of(x), {2, 3}, dtypes::float32, {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3},
                1e-6);
  Tensor y = Tensor::from_vector<float>({4, 1, 4, 1}, {4}, {}, dev()).requires_grad_();
  y.min().backward();
  expect_values(grad_of(y), {4}, dtypes::float32, {0, 0.5, 0, 0.5});
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3}, {}, dev()).requires_grad_();
  Tensor b = Tensor::from_vector<float>({1, 0, 5}, {3}, {}, dev()).requires_grad_();
  a.maximum(b).sum().backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {0.5, 1, 0});
  expect_values(grad_of(b), {3}, dtypes::float32, {0.5, 0, 1});
  Tensor p =
      Tensor::from_vector<float>({2, 0, 3, 0, 0, 4, 1, 2, 3}, {3, 3}, {}, dev()).requires_grad_();
  p.prod(1).sum().backward();
  expect_values(grad_of(p), {3, 3}, dtypes::float32, {0, 6, 0, 0, 0, 0, 6, 3, 2});
}

// A reduction large enough that the scheduler splits it: backward sees the one reduction the
// tensor graph holds, so a sum's gradient is its upstream gradient (one kernel) and max shares
// its gradient equally among ties wherever they lie (1/3 each, not 1/4, 1/4 and 1/2 as two
// reductions over rows of 512 would).
TEST_P(AutogradTest, ALargeReduction) {
  const Shape s{256, 512};
  const std::vector<double> wv = random_values(256 * 512, -1, 1, 31);
  Tensor x = Tensor::zeros(s, dtypes::float32, dev()).requires_grad_();
  const Tensor w = make_tensor(wv, s, dtypes::float32, dev());
  (x * w).sum().backward();
  EXPECT_EQ(grad_of(x).schedule().size(), 1u);
  std::vector<double> want(wv.size());
  for (size_t i = 0; i < wv.size(); ++i) want[i] = round_to(wv[i], dtypes::float32);
  expect_values(grad_of(x), s, dtypes::float32, want);

  std::vector<double> v(256 * 512, 0.0);
  v[0] = v[1] = v[600] = 1;
  Tensor y = make_tensor(v, s, dtypes::float32, dev()).requires_grad_();
  y.max().backward();
  std::vector<double> share(v.size(), 0.0);
  share[0] = share[1] = share[600] = 1.0 / 3;
  expect_values(grad_of(y), s, dtypes::float32, share, 1e-6);
}

// ---- finite differences: movement --------------------------------------------------------------

TEST_P(AutogradTest, Movement) {
  const Arg x{{3, 4, 5}};
  check_gradients("reshape", {x}, [](const Inputs& t) { return t[0].reshape({6, 10}); });
  check_gradients("reshape twice", {x}, [](const Inputs& t) {
    return t[0].reshape({12, 5}).reshape({60}) * 2.0;
  });
  check_gradients("permute", {x}, [](const Inputs& t) { return t[0].permute({2, 0, 1}); });
  check_gradients("transpose", {x}, [](const Inputs& t) { return t[0].transpose(0, 2); });
  check_gradients("expand", {{{3, 1, 5}}}, [](const Inputs& t) {
    return t[0].expand({2, 3, 4, 5});
  });
  check_gradients("pad", {x}, [](const Inputs& t) { return t[0].pad({{1, 0}, {0, 2}, {1, 1}}); });
  check_gradients("pad value", {x}, [](const Inputs& t) {
    return t[0].pad({{0, 0}, {2, 1}, {0, 0}}, 1.5).exp();
  });
  check_gradients("shrink", {x}, [](const Inputs& t) {
    return t[0].shrink({{1, 3}, {0, 4}, {2, 5}});
  });
  check_gradients("flip", {x}, [](const Inputs& t) { return t[0].flip({0, 2}); });
  check_gradients("slice step", {x}, [](const Inputs& t) { return t[0].slice(2, 0, 5, 2); });
  check_gradients("select", {x}, [](const Inputs& t) { return t[0].select(1, 2); });
  check_gradients("flatten", {x}, [](const Inputs& t) { return t[0].flatten(1); });
  check_gradients("squeeze unsqueeze", {{{3, 1, 5}}},
                  [](const Inputs& t) { return t[0].squeeze(1).unsqueeze(0); });
  check_gradients("repeat", {{{2, 3}}}, [](const Inputs& t) { return t[0].repeat({2, 1, 3}); });
  check_gradients("cat", {{{2, 3}}, {{2, 1}}, {{2, 4}}}, [](const Inputs& t) {
    return cat({t[0], t[1], t[2]}, 1);
  });
  check_gradients("stack", {{{2, 3}}, {{2, 3}}}, [](const Inputs& t) {
    return stack({t[0], t[1] * 2.0}, 1);
  });
  check_gradients("split", {x}, [](const Inputs& t) {
    const std::vector<Tensor> parts = t[0].split(2, 1);
    return parts[0] * parts[1].exp();
  });
  check_gradients("chunk", {x}, [](const Inputs& t) { return t[0].chunk(3, 2)[1]; });
  const Tensor index = Tensor::from_vector<int32_t>({0, 2, 2, 1, 4, 0, 3, 3}, {2, 4}, {}, "CPU");
  check_gradients("gather", {{{2, 5}}},
                  [index](const Inputs& t) { return t[0].gather(1, index.to(t[0].device())); });
  check_gradients("non-contiguous chain", {x}, [](const Inputs& t) {
    return t[0].permute({1, 2, 0}).shrink({{1, 4}, {0, 5}, {0, 2}}).flip(1).reshape({3, 10}).T();
  });
}

// ---- finite differences: linear algebra and nn -------------------------------------------------

TEST_P(AutogradTest, Matmul) {
  check_gradients("matmul", {{{3, 4}}, {{4, 5}}},
                  [](const Inputs& t) { return t[0].matmul(t[1]); });
  check_gradients("batched broadcast", {{{2, 1, 3, 4}}, {{3, 4, 2}}},
                  [](const Inputs& t) { return t[0].matmul(t[1]); });
  check_gradients("vector @ matrix", {{{4}}, {{4, 3}}},
                  [](const Inputs& t) { return t[0].matmul(t[1]); });
  check_gradients("matrix @ vector", {{{3, 4}}, {{4}}},
                  [](const Inputs& t) { return t[0].matmul(t[1]); });
  check_gradients("transposed operands", {{{4, 3}}, {{5, 4}}},
                  [](const Inputs& t) { return t[0].T().matmul(t[1].T()); });
  check_gradients("linear", {{{3, 4}}, {{4, 5}}, {{5}}},
                  [](const Inputs& t) { return t[0].linear(t[1], t[2]); });
}

TEST_P(AutogradTest, Convolution) {
  check_gradients("conv2d", {{{1, 2, 5, 5}}, {{3, 2, 3, 3}}, {{3}}},
                  [](const Inputs& t) { return t[0].conv2d(t[1], t[2]); });
  check_gradients("conv2d stride padding groups", {{{2, 4, 5, 4}}, {{4, 2, 3, 2}}},
                  [](const Inputs& t) { return t[0].conv2d(t[1], {}, 2, 1, 1, 2); });
  check_gradients("conv2d dilation", {{{1, 1, 6, 6}}, {{2, 1, 2, 2}}}, [](const Inputs& t) {
    return t[0].conv2d(t[1], {}, 1, {1, 0}, 2);
  });
  check_gradients("conv_transpose2d", {{{1, 2, 3, 3}}, {{2, 3, 3, 3}}, {{3}}},
                  [](const Inputs& t) { return t[0].conv_transpose2d(t[1], t[2], 2, 1, 1); });
  // The input's gradient as a transposed convolution (stride 1, windows at least as many as the
  // weights), with groups and a dilation; asymmetric pads and crops (a transposed convolution's
  // own convolution); and where the weights outnumber the windows (the windows' gradient).
  check_gradients("conv2d groups dilation", {{{2, 4, 6, 5}}, {{6, 2, 2, 3}}}, [](const Inputs& t) {
    return t[0].conv2d(t[1], {}, 1, {2, 1}, {2, 1}, 2);
  });
  check_gradients("conv_transpose2d dilation output_padding", {{{1, 2, 3, 3}}, {{2, 2, 3, 2}}},
                  [](const Inputs& t) { return t[0].conv_transpose2d(t[1], {}, 2, 1, 1, 1, 2); });
  check_gradients("conv_transpose2d padding past the kernel", {{{1, 2, 6, 6}}, {{2, 3, 3, 3}}},
                  [](const Inputs& t) { return t[0].conv_transpose2d(t[1], {}, 1, 3); });
  check_gradients("conv2d weights outnumbering windows", {{{1, 2, 2, 2}}, {{8, 2, 3, 3}}},
                  [](const Inputs& t) { return t[0].conv2d(t[1], {}, 1, 1); });
}

// A stride-1 convolution's input gradient is one convolution of the output's gradient: no kernel
// computes the (N, C, H, W, kh, kw) gradients of the windows; where the weights outnumber the
// windows it is.
TEST_P(AutogradTest, AConvolutionsInputGradientIsATransposedConvolution) {
  for (const int64_t cout : {5, 40}) {
    SCOPED_TRACE("Cout " + std::to_string(cout));
    Tensor x = Tensor::rand({2, 4, 3, 3}, dtypes::float32, dev()).realize().requires_grad_();
    const Tensor w = Tensor::rand({cout, 4, 3, 3}, dtypes::float32, dev()).realize();
    const Tensor t = Tensor::rand({2, cout, 3, 3}, dtypes::float32, dev()).realize();
    (x.conv2d(w, {}, 1, 1) * t).sum().backward();
    bool windows = false;  // a kernel writing 9 gradients per input element
    for (const KernelInfo& k : grad_of(x).schedule()) {
      int64_t n = 1;
      for (int64_t d : k.global_size) n *= d;
      windows = windows || n == x.numel() * 9;
    }
    EXPECT_EQ(windows, cout > 2 * 3 * 3);
  }
}

TEST_P(AutogradTest, Pooling) {
  const Arg x{{1, 2, 5, 5}};
  check_gradients("max_pool2d", {x}, [](const Inputs& t) { return t[0].max_pool2d(2); });
  check_gradients("max_pool2d overlapping padded", {x},
                  [](const Inputs& t) { return t[0].max_pool2d(3, 1, 1); });
  check_gradients("avg_pool2d", {x}, [](const Inputs& t) { return t[0].avg_pool2d(2); });
  check_gradients("avg_pool2d stride padding", {x},
                  [](const Inputs& t) { return t[0].avg_pool2d(3, 2, 1); });
}

// A max pool's windows overlap: the gradient at its windows (which element is the maximum,
// shared among ties) is realized once, at the windows' size, and the fold back onto the input
// reads it; a max over a tensor's own elements keeps its gradient fused.
TEST_P(AutogradTest, AMaxPoolsWindowGradientIsRealizedBeforeItsFold) {
  Tensor x = Tensor::rand({2, 3, 8, 8}, dtypes::float32, dev()).requires_grad_();
  x.max_pool2d(3, 2, 1).sum().backward();
  bool windows = false;
  for (const KernelInfo& k : grad_of(x).schedule())
    windows = windows || k.global_size == Shape{2, 3, 4, 4, 3, 3};
  EXPECT_TRUE(windows);
  Tensor y = Tensor::rand({4, 8}, dtypes::float32, dev()).realize().requires_grad_();
  (y * 2.0).max(1).sum().backward();
  int full = 0;  // kernels writing (4, 8): the gradient alone, the product's chain rule fused in
  for (const KernelInfo& k : grad_of(y).schedule()) full += k.global_size == Shape{4, 8};
  EXPECT_EQ(full, 1);
}

TEST_P(AutogradTest, Normalization) {
  check_gradients("layernorm", {{{3, 5}}}, [](const Inputs& t) { return t[0].layernorm(); });
  check_gradients("layernorm axes", {{{2, 3, 4}}}, [](const Inputs& t) {
    return t[0].layernorm({1, 2});
  });
  check_gradients("batchnorm", {{{2, 3, 4}}, {{3}}, {{3}}, {{3}}, {{3}, 0.5, 2.0}},
                  [](const Inputs& t) { return t[0].batchnorm(t[1], t[2], t[3], t[4]); });
  check_gradients("batch statistics", {{{4, 3, 2}}}, [](const Inputs& t) {
    const Tensor mean = t[0].mean({0, 2});
    const Tensor invstd = (t[0].var({0, 2}) + 1e-5).rsqrt();
    return t[0].batchnorm({}, {}, mean, invstd);
  });
}

TEST_P(AutogradTest, Losses) {
  const Tensor classes = Tensor::from_vector<int32_t>({1, 0, 4, 2}, {4}, {}, "CPU");
  check_gradients("cross_entropy indices", {{{4, 5}}}, [classes](const Inputs& t) {
    return t[0].cross_entropy(classes.to(t[0].device()));
  });
  check_gradients("cross_entropy probabilities", {{{4, 5}}, {{4, 5}}},
                  [](const Inputs& t) { return t[0].cross_entropy(t[1].softmax()); });
  const Tensor spatial = Tensor::from_vector<int32_t>({0, 2, 1, 1, 2, 0}, {1, 2, 3}, {}, "CPU");
  check_gradients("cross_entropy spatial", {{{1, 3, 2, 3}}}, [spatial](const Inputs& t) {
    return t[0].cross_entropy(spatial.to(t[0].device()));
  });
  check_gradients("sparse_categorical_crossentropy", {{{4, 5}}}, [classes](const Inputs& t) {
    return t[0].sparse_categorical_crossentropy(classes.to(t[0].device()));
  });
  check_gradients("binary_crossentropy", {{{3, 4}, 0.1, 0.9}, {{3, 4}, 0.0, 1.0}},
                  [](const Inputs& t) { return t[0].binary_crossentropy(t[1]); });
  check_gradients("binary_crossentropy_logits", {{{3, 4}, -3.0, 3.0}, {{3, 4}, 0.0, 1.0}},
                  [](const Inputs& t) { return t[0].binary_crossentropy_logits(t[1]); });
}

TEST_P(AutogradTest, Attention) {
  const std::vector<Arg> qkv{{{2, 3, 4}}, {{2, 5, 4}}, {{2, 5, 3}}};
  check_gradients("scaled_dot_product_attention", qkv,
                  [](const Inputs& t) { return t[0].scaled_dot_product_attention(t[1], t[2]); });
  const Tensor mask = Tensor::from_vector<bool>({true, false, true, true, true, true, true, false,
                                                 false, true, false, true, true, true, false},
                                                {3, 5}, {}, "CPU");
  check_gradients("masked", qkv, [mask](const Inputs& t) {
    return t[0].scaled_dot_product_attention(t[1], t[2], mask.to(t[0].device()));
  });
  check_gradients("causal", {{{1, 4, 3}}, {{1, 4, 3}}, {{1, 4, 2}}}, [](const Inputs& t) {
    return t[0].scaled_dot_product_attention(t[1], t[2], {}, true);
  });
}

// ---- float32 on every device against the CPU's float64 ------------------------------------------

TEST_P(AutogradTest, MlpLossMatchesCpu64) {
  const Tensor labels = Tensor::from_vector<int32_t>({2, 0, 1, 2, 1}, {5}, {}, dev());
  check_against_cpu64(
      "mlp", {{{5, 4}}, {{4, 6}}, {{6}}, {{6, 3}}, {{3}}},
      [labels](const Inputs& t) {
        const Tensor h = t[0].linear(t[1], t[2]).relu();
        return h.linear(t[3], t[4]).cross_entropy(labels.to(t[0].device()));
      },
      dev());
}

TEST_P(AutogradTest, ConvPoolCrossEntropyMatchesCpu64) {
  const Tensor labels = Tensor::from_vector<int32_t>({1, 0}, {2}, {}, dev());
  check_against_cpu64(
      "conv+pool+cross_entropy", {{{2, 1, 6, 6}}, {{3, 1, 3, 3}}, {{3}}, {{12, 2}}},
      [labels](const Inputs& t) {
        const Tensor h = t[0].conv2d(t[1], t[2], 1, 1).relu().max_pool2d(3);
        return h.flatten(1).matmul(t[3]).cross_entropy(labels.to(t[0].device()));
      },
      dev());
}

TEST_P(AutogradTest, SoftmaxLayernormGatherCatMatchCpu64) {
  check_against_cpu64(
      "softmax", {{{3, 7}}}, [](const Inputs& t) { return t[0].softmax(); }, dev());
  check_against_cpu64(
      "layernorm", {{{4, 6}}}, [](const Inputs& t) { return t[0].layernorm(); }, dev());
  const Tensor index = Tensor::from_vector<int32_t>({0, 3, 3, 1, 2, 0}, {2, 3}, {}, dev());
  check_against_cpu64(
      "gather/cat", {{{2, 4}}, {{2, 2}}},
      [index](const Inputs& t) {
        return cat({t[0], t[1].exp()}, 1).gather(1, index.to(t[0].device())).square();
      },
      dev());
}

// ---- semantics ----------------------------------------------------------------------------------

Tensor vec(std::vector<float> v, const std::string& device) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>(v, {n}, {}, device);
}

TEST_P(AutogradTest, GradBeforeBackwardIsNullopt) {
  Tensor a = vec({1, 2, 3}, dev());
  EXPECT_FALSE(a.requires_grad());
  a.requires_grad_();
  EXPECT_TRUE(a.requires_grad());
  EXPECT_FALSE(a.grad().has_value());
  a.requires_grad_(false);
  EXPECT_FALSE(a.requires_grad());
}

TEST_P(AutogradTest, BackwardAccumulatesAndSetGradClears) {
  Tensor a = vec({1, 2, 3}, dev()).requires_grad_();
  (a * a).sum().backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {2, 4, 6});
  (a * 3.0).sum().backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {5, 7, 9});
  a.set_grad(std::nullopt);
  EXPECT_FALSE(a.grad().has_value());
  a.sum().backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {1, 1, 1});
  a.set_grad(Tensor::zeros({3}, {}, dev()));
  expect_values(grad_of(a), {3}, dtypes::float32, {0, 0, 0});
  EXPECT_THROW(a.set_grad(Tensor::zeros({2}, {}, dev())), ShapeError);
}

TEST_P(AutogradTest, BackwardNeedsOneFloatElement) {
  Tensor a = vec({1, 2, 3}, dev()).requires_grad_();
  EXPECT_THROW((a * 2.0).backward(), ShapeError);
  EXPECT_FALSE(a.grad().has_value());
  a.sum().reshape({1, 1}).backward();  // one element in any shape
  expect_values(grad_of(a), {3}, dtypes::float32, {1, 1, 1});
  EXPECT_THROW(Tensor::from_vector<int32_t>({1, 2}, {2}, {}, dev()).requires_grad_(), DTypeError);
}

TEST_P(AutogradTest, OnlyTensorsThatRequireGradGetOne) {
  Tensor a = vec({1, 2}, dev()).requires_grad_();
  Tensor b = vec({3, 4}, dev());
  Tensor unused = vec({5, 6}, dev()).requires_grad_();
  (a * b).sum().backward();
  expect_values(grad_of(a), {2}, dtypes::float32, {3, 4});
  EXPECT_FALSE(b.grad().has_value());
  EXPECT_FALSE(unused.grad().has_value());
}

TEST_P(AutogradTest, DetachStopsGradients) {
  Tensor a = vec({1, 2, 3}, dev()).requires_grad_();
  (a * a.detach()).sum().backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {1, 2, 3});
  const Tensor d = a.detach();
  EXPECT_FALSE(d.requires_grad());
  expect_values(d, {3}, dtypes::float32, {1, 2, 3});
  // A detached tensor that is realized is still not the tensor it came from.
  Tensor e = a.detach();
  e.realize();
  a.set_grad(std::nullopt);
  (a + e * 5.0).sum().backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {1, 1, 1});
}

TEST_P(AutogradTest, BackwardAfterRealizingTheLoss) {
  Tensor a = vec({1, 2, 3}, dev()).requires_grad_();
  Tensor loss = (a * a).sum();
  EXPECT_FLOAT_EQ(loss.item<float>(), 14.0f);  // realizes the loss
  loss.backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {2, 4, 6});
}

TEST_P(AutogradTest, GradientsFlowThroughRealizedIntermediates) {
  Tensor a = vec({1, 2, 3}, dev()).requires_grad_();
  Tensor h = a * 2.0;
  h.realize();
  Tensor loss = (h * h).sum();
  loss.realize();
  loss.backward();
  expect_values(grad_of(a), {3}, dtypes::float32, {8, 16, 24});
}

TEST_P(AutogradTest, ParametersRealizedAfterTheLossWasBuilt) {
  Tensor w = Tensor::randn({4}, {}, dev()).requires_grad_();  // lazy
  Tensor loss = (w * 3.0).sum();
  w.realize();
  loss.backward();
  expect_values(grad_of(w), {4}, dtypes::float32, {3, 3, 3, 3});
  // And a loss built from the realized value.
  w.set_grad(std::nullopt);
  (w * 2.0).sum().backward();
  expect_values(grad_of(w), {4}, dtypes::float32, {2, 2, 2, 2});
}

// A constant leaf (zeros, ones) is a node equal to any such constant elsewhere; requires_grad_
// makes it distinct, so another ones() in the loss is not mistaken for it.
TEST_P(AutogradTest, ConstantLeavesAreDistinct) {
  Tensor x = Tensor::ones({3}, {}, dev()).requires_grad_();
  const Tensor y = Tensor::ones({3}, {}, dev());
  (x * 2.0 + y * 3.0).sum().backward();
  expect_values(grad_of(x), {3}, dtypes::float32, {2, 2, 2});
  Tensor z = Tensor::zeros({2}, {}, dev()).requires_grad_();
  (z + 1.0).relu().sum().backward();
  expect_values(grad_of(z), {2}, dtypes::float32, {1, 1});
  Tensor s = Tensor::scalar(3.0, {}, dev()).requires_grad_();
  (s * s + Tensor::scalar(3.0, {}, dev())).backward();
  expect_values(grad_of(s), {}, dtypes::float32, {6});
}

// A tensor that requires grad in the middle of the graph gets its gradient, and the gradient
// goes on to the tensors it came from.
TEST_P(AutogradTest, IntermediateThatRequiresGrad) {
  Tensor x = vec({1, 2}, dev()).requires_grad_();
  Tensor y = (x * 3.0).requires_grad_();
  (y * y).sum().backward();
  expect_values(grad_of(y), {2}, dtypes::float32, {6, 12});
  expect_values(grad_of(x), {2}, dtypes::float32, {18, 36});
}

TEST_P(AutogradTest, BackwardIsLazyAndGradientsFuse) {
  Tensor a = vec({1, 2, 3, 4}, dev()).requires_grad_();
  Tensor b = vec({5, 6, 7, 8}, dev()).requires_grad_();
  const int64_t before = runtime_stats().kernels_run;
  (a * b).sum().backward();
  EXPECT_EQ(runtime_stats().kernels_run, before) << "backward ran kernels";
  EXPECT_EQ(a.grad()->schedule().size(), 1u);
  expect_values(grad_of(a), {4}, dtypes::float32, {5, 6, 7, 8});
  expect_values(grad_of(b), {4}, dtypes::float32, {1, 2, 3, 4});
  EXPECT_GT(runtime_stats().kernels_run, before);
}

// A model's parameters: the module's weight and the optimizer's copy are one Impl.
TEST_P(AutogradTest, CopiesOfAHandleShareTheGradient) {
  Tensor w = vec({1, -2}, dev()).requires_grad_();
  const Tensor copy = w;
  (w.relu() * 4.0).sum().backward();
  ASSERT_TRUE(copy.grad().has_value());
  expect_values(grad_of(copy), {2}, dtypes::float32, {4, 0});
}

TEST_P(AutogradTest, TwoLossesThroughOneParameterAndReuse) {
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {}, dev()).requires_grad_();
  const Tensor x = Tensor::from_vector<float>({1, -1}, {1, 2}, {}, dev());
  Tensor out = x.matmul(w);  // (1, 3): [-3, -3, -3]
  (out.sum() + out.square().sum() * 0.5).backward();
  // d/dw = x^T (1 + out) = [[1 * -2] * 3, [-1 * -2] * 3]
  expect_values(grad_of(w), {2, 3}, dtypes::float32, {-2, -2, -2, 2, 2, 2});
}

TEST_P(AutogradTest, RealizedCopiesAndRealizeAll) {
  Tensor w = vec({1, 2, 3}, dev()).requires_grad_();
  Tensor c = w.clone();
  c.realize();
  std::vector<Tensor> hs{w * 2.0, w.exp()};
  Tensor::realize_all(hs);
  (c * 5.0 + hs[0] * hs[1]).sum().backward();
  // 5 + d(2w e^w)/dw = 5 + 2 e^w (1 + w)
  std::vector<double> want;
  for (double v : {1.0, 2.0, 3.0}) want.push_back(5 + 2 * std::exp(v) * (1 + v));
  expect_values(grad_of(w), {3}, dtypes::float32, want, 1e-5);
}

// Steps of gradient descent on a least-squares loss, with assign updating the parameter in
// place of the optimizer: each step's gradient is the one of the updated value.
TEST_P(AutogradTest, GradientDescentWithAssign) {
  const Tensor x = Tensor::from_vector<float>({1, 2, -1, 0.5, 3, -2}, {3, 2}, {}, dev());
  const Tensor y = Tensor::from_vector<float>({1, -1, 2}, {3, 1}, {}, dev());
  Tensor w = Tensor::zeros({2, 1}, {}, dev()).requires_grad_();
  Tensor ref = Tensor::zeros({2, 1}, {}, dev());
  for (int step = 0; step < 3; ++step) {
    Tensor loss = (x.matmul(w) - y).square().mean();
    loss.realize();
    loss.backward();
    // d/dw mean((xw - y)^2) = 2/3 x^T (xw - y)
    const Tensor want = x.T().matmul(x.matmul(ref) - y) * (2.0 / 3.0);
    expect_near(values_of(grad_of(w)), values_of(want), 1e-5, 1e-6, "step " + std::to_string(step));
    w.assign(w.detach() - grad_of(w) * 0.1);
    w.set_grad(std::nullopt);
    ref = (ref - want * 0.1).realize();
    if (step == 1) w.realize();
  }
  expect_near(values_of(w), values_of(ref), 1e-5, 1e-6, "parameter");
}

VKGRAD_ALL_DEVICES(AutogradTest);

}  // namespace
}  // namespace vkgrad::testing
