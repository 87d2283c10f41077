// tests/tensor: symbolic sizes (vkgrad::Variable) on every device. A symbolic axis follows the
// tensor through the ops that keep it whole, the kernels read its size when they run, and one
// Jit capture serves every size in the variable's bounds with the same results as unjitted calls.
#include <vkgrad/jit.hpp>
#include <vkgrad/stats.hpp>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_error;
using testing::expect_near;
using testing::values_of;

class VariableTest : public testing::DeviceTest {
 protected:
  Tensor data(const Shape& shape, uint64_t seed) const {
    return testing::random_tensor(shape, seed, dev());
  }
};

TEST(Variable, BoundsAndBinding) {
  const Variable n("vt_n", 1, 8);
  EXPECT_EQ(n.name(), "vt_n");
  EXPECT_FALSE(n.value().has_value());
  EXPECT_EQ(n.bind(8).value(), 8);
  expect_error<ShapeError>([&] { n.bind(9); }, {"vt_n", "9", "[1, 8]"});
  expect_error<Error>([] { Variable("", 0, 1); }, {"name"});
  expect_error<Error>([] { Variable("vt_bad", 3, 2); }, {"vt_bad", "[3, 2]"});
  // One name, one variable.
  const Tensor x = Tensor::zeros({4});
  x.symbolic(0, n);
  expect_error<Error>([&] { x.symbolic(0, Variable("vt_n", 1, 9)); }, {"vt_n", "[1, 8]"});
}

TEST(Variable, SymbolicAxesFollowTheOps) {
  const Variable n("vt_rows", 1, 16);
  const Tensor x = Tensor::zeros({5, 4}).symbolic(0, n);
  auto sym_of = [](const Tensor& t) {
    std::vector<std::string> out;
    for (const auto& v : t.symbolic_shape()) out.push_back(v ? v->name() : "-");
    return out;
  };
  using S = std::vector<std::string>;
  EXPECT_EQ(sym_of(x), (S{"vt_rows", "-"}));
  EXPECT_EQ(x.symbolic_shape()[0]->value(), 5);
  EXPECT_EQ(sym_of(x + Tensor::ones({4})), (S{"vt_rows", "-"}));  // broadcasting
  EXPECT_EQ(sym_of(Tensor::ones({5, 1}) * x), (S{"vt_rows", "-"}));
  EXPECT_EQ(sym_of(x.sum(1)), (S{"vt_rows"}));
  EXPECT_EQ(sym_of(x.sum(0)), (S{"-"}));
  EXPECT_EQ(sym_of(x.permute({1, 0})), (S{"-", "vt_rows"}));
  EXPECT_EQ(sym_of(x.reshape({5, 2, 2})), (S{"vt_rows", "-", "-"}));
  EXPECT_EQ(sym_of(x.reshape({1, 5, 4, 1})), (S{"-", "vt_rows", "-", "-"}));
  EXPECT_EQ(sym_of(x.matmul(Tensor::ones({4, 3}))), (S{"vt_rows", "-"}));
  EXPECT_EQ(sym_of(x.shrink({{0, 5}, {1, 3}})), (S{"vt_rows", "-"}));
  EXPECT_EQ(sym_of(x.pad({{0, 0}, {1, 1}})), (S{"vt_rows", "-"}));
  EXPECT_EQ(sym_of(x.flip(0).contiguous()), (S{"vt_rows", "-"}));
  // What would break the symbol is refused.
  expect_error<ShapeError>([&] { x.reshape({20}); }, {"reshape", "symbolic", "vt_rows"});
  expect_error<ShapeError>([&] { x.pad({{1, 0}, {0, 0}}); }, {"pad", "vt_rows"});
  expect_error<ShapeError>([&] { x.shrink({{0, 3}, {0, 4}}); }, {"shrink", "vt_rows"});
  expect_error<ShapeError>([&] { Tensor::zeros({5}).symbolic(0, n.bind(6)); },
                           {"symbolic", "vt_rows", "6", "5"});
  expect_error<ShapeError>([&] { Tensor::zeros({17}).symbolic(0, n); }, {"17", "[1, 16]"});
  // Backward through a symbolic size is not supported, and says so.
  Tensor w = Tensor::ones({4}).requires_grad_();
  expect_error<Error>([&] { (x * w).sum().backward(); }, {"backward", "symbolic", "vt_rows"});
}

TEST_P(VariableTest, KernelsReadTheBoundSize) {
  const Variable n("vt_len", 1, 64);
  const Tensor w = data({6}, 1);
  for (int64_t len : {1, 7, 64}) {
    SCOPED_TRACE(len);
    const Tensor x = data({len, 6}, 10 + len);
    const Tensor xs = x.symbolic(0, n);
    // Elementwise with a broadcast, a reduction over the symbolic axis, a mean over it (divides
    // by the variable's value), and a reduction over the other axis.
    Tensor a = (xs * w).relu(), b = xs.sum(0), c = xs.mean(0), d = xs.max(1);
    std::vector<Tensor> all{a, b, c, d};
    Tensor::realize_all(all);
    const auto xv = values_of(x), wv = values_of(w);
    std::vector<double> ra(len * 6), rb(6, 0), rc(6), rd(len, -1e300);
    for (int64_t i = 0; i < len; ++i)
      for (int j = 0; j < 6; ++j) {
        const double v = xv[i * 6 + j];
        ra[i * 6 + j] = std::max(0.0, v * wv[j]);
        rb[j] += v;
        rd[i] = std::max(rd[i], v);
      }
    for (int j = 0; j < 6; ++j) rc[j] = rb[j] / static_cast<double>(len);
    EXPECT_EQ(all[0].shape(), (Shape{len, 6}));
    expect_near(values_of(all[0]), ra, 1e-6, 1e-6, "relu(x*w)");
    expect_near(values_of(all[1]), rb, 1e-5, 1e-5, "sum(0)");
    expect_near(values_of(all[2]), rc, 1e-5, 1e-5, "mean(0)");
    expect_near(values_of(all[3]), rd, 0, 0, "max(1)");
  }
}

TEST_P(VariableTest, OneScheduleServesEverySize) {
  const Variable n("vt_sched", 1, 32);
  const Tensor w = data({8, 3}, 2);
  auto run = [&](int64_t len) {
    return (data({len, 8}, 30 + len).symbolic(0, n).matmul(w) + 1.0).realize();
  };
  run(5);
  reset_runtime_stats();
  const Tensor y = run(5);  // same size: the schedule cache as always
  EXPECT_EQ(runtime_stats().schedules_built, 0);
  EXPECT_EQ(y.shape(), (Shape{5, 3}));
  reset_runtime_stats();
  run(9);  // another size: a new input buffer size, but the same kernel
  EXPECT_EQ(runtime_stats().kernels_rendered, 0);
  EXPECT_EQ(runtime_stats().programs_compiled, 0);
}

TEST_P(VariableTest, OneJitCaptureServesEverySize) {
  // A small MLP forward pass over a batch of variable size.
  const Variable batch("vt_batch", 1, 32);
  const Tensor w1 = data({8, 16}, 3), b1 = data({16}, 4), w2 = data({16, 5}, 5);
  auto forward = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor h = (in[0].matmul(w1) + b1).relu();
    const Tensor logits = h.matmul(w2);
    return {logits.log_softmax(1), logits.mean(0)};
  };
  Jit jit(forward);
  const std::vector<int64_t> sizes{4, 4, 7, 1, 32, 13, 7};
  for (size_t call = 0; call < sizes.size(); ++call) {
    const int64_t len = sizes[call];
    SCOPED_TRACE("call " + std::to_string(call) + ", batch " + std::to_string(len));
    const Tensor x = data({len, 8}, 100 + call);
    if (call >= 2) reset_runtime_stats();
    const std::vector<Tensor> got = jit({x.symbolic(0, batch)});
    if (call >= 2) {
      const RuntimeStats s = runtime_stats();
      EXPECT_EQ(s.schedules_built, 0);
      EXPECT_EQ(s.programs_compiled, 0);
      EXPECT_EQ(s.graph_replays, 1);
    }
    const std::vector<Tensor> want = forward({x});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), (Shape{len, 5}));
    EXPECT_EQ(got[1].shape(), (Shape{5}));
    expect_near(values_of(got[0]), values_of(want[0]), 1e-5, 1e-5, "log_softmax");
    expect_near(values_of(got[1]), values_of(want[1]), 1e-5, 1e-5, "mean over the batch");
  }
  EXPECT_EQ(jit.captures(), 1);
  EXPECT_EQ(jit.replays(), static_cast<int64_t>(sizes.size()) - 2);
}

TEST_P(VariableTest, AVariableBoundToOneKeepsItsAxis) {
  // Captured with the variable at 1, where sizes alone cannot tell its axis from an axis of 1:
  // the kernels must still be the ones for every size (matmul over it, a broadcast of an axis
  // of 1 against it, a reduction over it).
  const Variable n("vt_one", 1, 16);
  const Tensor w = data({3, 1, 4}, 7);
  auto f = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor x = in[0];                               // {3, n, 4}
    const Tensor scores = w.matmul(x.transpose(-1, -2));  // {3, 1, n}
    return {scores.softmax(-1).matmul(x), (x * w).sum(1), x.unsqueeze(0).squeeze(0).max(1)};
  };
  Jit jit(f);
  for (int64_t len : {1, 1, 1, 3, 5}) {
    SCOPED_TRACE(len);
    const Tensor x = data({3, len, 4}, 40 + len);
    const std::vector<Tensor> got = jit({x.symbolic(1, n)});
    const std::vector<Tensor> want = f({x});
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape());
      expect_near(values_of(got[i]), values_of(want[i]), 1e-5, 1e-6, "output " + std::to_string(i));
    }
  }
  EXPECT_EQ(jit.captures(), 1);
}

VKGRAD_ALL_DEVICES(VariableTest);

}  // namespace
}  // namespace vkgrad
