// tests/tensor: Jit capture and replay, and assign, on every device. A jitted function must give
// what the same function gives unjitted, call after call with changing data; replays must
// schedule, compile and allocate nothing; state updated with assign (a training step) must
// evolve across replays exactly as in the unjitted loop.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>
#include <vkgrad/stats.hpp>

#include "engine/realize.hpp"
#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_near;
using testing::expect_values;
using testing::make_tensor;
using testing::random_values;
using testing::values_of;

class JitTest : public testing::DeviceTest {
 protected:
  Tensor data(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1) const {
    return make_tensor(random_values(testing::numel_of(shape), lo, hi, seed), shape,
                       dtypes::float32, dev());
  }

  // Calls `fn` jitted and unjitted `calls` times with fresh inputs from `inputs(call)`; every
  // output must match, and the Jit must have captured once and replayed `expect_replays` times.
  void expect_same(const Jit::Function& fn, const std::function<std::vector<Tensor>(int)>& inputs,
                   int calls, int64_t expect_replays) {
    Jit jit(fn);
    for (int call = 0; call < calls; ++call) {
      const std::vector<Tensor> in = inputs(call);
      const std::vector<Tensor> got = jit(in);
      const std::vector<Tensor> want = fn(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].shape(), want[i].shape());
        EXPECT_EQ(got[i].dtype(), want[i].dtype());
        expect_near(values_of(got[i]), values_of(want[i]), 1e-6, 1e-6,
                    "call " + std::to_string(call) + " output " + std::to_string(i));
      }
    }
    EXPECT_EQ(jit.captures(), 1);
    EXPECT_EQ(jit.replays(), expect_replays);
  }
};

TEST_P(JitTest, ElementwiseMatchesUnjitted) {
  // `c` is neither an input nor computed in the call: read where it was at the capture.
  const Tensor c = data({3, 4}, 99).realize();
  expect_same(
      [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {in[0] * 2 + in[1].exp() - c};
      },
      [&](int call) {
        return std::vector<Tensor>{data({3, 4}, 2 * call), data({3, 4}, 2 * call + 1)};
      },
      5, 3);
}

TEST_P(JitTest, ReductionMatmulAndSoftmaxMatchUnjitted) {
  auto inputs = [&](int call) {
    return std::vector<Tensor>{data({5, 6}, 10 + call), data({6, 3}, 20 + call)};
  };
  expect_same(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {in[0].sum(1), in[0].max()};
      },
      inputs, 4, 2);
  expect_same(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {in[0].matmul(in[1]).relu()};
      },
      inputs, 4, 2);
  // Several kernels (max, exp-sum, divide) in one capture.
  expect_same(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0].softmax(-1)}; },
      inputs, 4, 2);
}

TEST_P(JitTest, SeveralRealizesInOneCall) {
  // The function realizes an intermediate itself: the capture holds two realizes, the second
  // reading the first's buffer.
  expect_same(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        Tensor h = (in[0].matmul(in[1]) + 1).realize();
        return {h.softmax(0), h.sum()};
      },
      [&](int call) {
        return std::vector<Tensor>{data({4, 6}, 30 + call), data({6, 2}, 40 + call)};
      },
      5, 3);
}

TEST_P(JitTest, ReplaysScheduleCompileAndAllocateNothing) {
  const Tensor w = data({6, 3}, 7).realize();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0].matmul(w).softmax(-1), (in[0] * in[0]).sum()};
  });
  std::vector<Tensor> xs;
  for (int i = 0; i < 5; ++i) xs.push_back(data({4, 6}, 50 + i));
  jit({xs[0]});
  jit({xs[1]});
  reset_runtime_stats();
  std::vector<std::vector<double>> got;
  for (int i = 2; i < 5; ++i) {
    std::vector<Tensor> out = jit({xs[i]});
    got.push_back(values_of(out[0]));
  }
  const RuntimeStats s = runtime_stats();
  EXPECT_EQ(s.schedules_built, 0);
  EXPECT_EQ(s.schedule_cache_hits, 0);
  EXPECT_EQ(s.kernels_rendered, 0);
  EXPECT_EQ(s.programs_compiled, 0);
  EXPECT_EQ(s.realizes, 0);
  EXPECT_EQ(s.buffers_allocated, 0);
  EXPECT_EQ(s.graph_replays, 3);
  EXPECT_GT(s.kernels_run, 0);
  EXPECT_EQ(jit.replays(), 3);
  for (int i = 2; i < 5; ++i)
    expect_near(got[i - 2], values_of(xs[i].matmul(w).softmax(-1)), 1e-6, 1e-6,
                "replay " + std::to_string(i));
}

// A replay with new input buffers only rewrites descriptors: on Vulkan it records the command
// buffers again only where the device lacks update-after-bind storage-buffer descriptors
// (lavapipe 22.3). VKGRAD_EXPECT_UPDATE_AFTER_BIND=1 (the run on Mesa 25's lavapipe) requires
// that the device has them.
TEST_P(JitTest, ReplaysWithNewBuffersRecordNothingWhereDescriptorsUpdateAfterBind) {
  const bool vulkan = dev().rfind("VULKAN", 0) == 0;
  const std::string described = engine::runtime(engine::canonical_device(dev())).describe();
  const bool update_after_bind =
      !vulkan || described.find("update-after-bind descriptors yes") != std::string::npos;
  if (vulkan && std::getenv("VKGRAD_EXPECT_UPDATE_AFTER_BIND") != nullptr) {
    ASSERT_TRUE(update_after_bind) << described;
  }
  const Tensor w = data({6, 3}, 8).realize();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {(in[0].matmul(w) + in[1]).relu().sum(1)};
  });
  std::vector<Tensor> xs, bs;
  for (int i = 0; i < 5; ++i) {
    xs.push_back(data({4, 6}, 70 + i).realize());
    bs.push_back(data({4, 3}, 80 + i).realize());
  }
  jit({xs[0], bs[0]});
  jit({xs[1], bs[1]});
  reset_runtime_stats();
  for (int i = 2; i < 5; ++i) {
    const std::vector<double> got = values_of(jit({xs[i], bs[i]})[0]);
    expect_near(got, values_of((xs[i].matmul(w) + bs[i]).relu().sum(1)), 1e-6, 1e-6,
                "replay " + std::to_string(i));
  }
  const RuntimeStats s = runtime_stats();
  EXPECT_EQ(s.graph_replays, 3);
  EXPECT_EQ(s.graph_rerecords, update_after_bind ? 0 : 3) << described;
}

TEST_P(JitTest, NewShapesCaptureAgainAndEarlierCapturesAreKept) {
  Jit jit([](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0].sum(0) * 3}; });
  for (int i = 0; i < 3; ++i) {
    const Tensor x = data({4, 5}, 60 + i);
    expect_near(values_of(jit({x})[0]), values_of(x.sum(0) * 3), 1e-6, 1e-6, "4x5");
  }
  EXPECT_EQ(jit.captures(), 1);
  EXPECT_EQ(jit.replays(), 1);
  for (int i = 0; i < 3; ++i) {
    const Tensor x = data({2, 3}, 70 + i);
    expect_near(values_of(jit({x})[0]), values_of(x.sum(0) * 3), 1e-6, 1e-6, "2x3");
  }
  EXPECT_EQ(jit.captures(), 2);
  EXPECT_EQ(jit.replays(), 2);
  // Back to the first shape: its capture replays.
  const Tensor x = data({4, 5}, 80);
  expect_near(values_of(jit({x})[0]), values_of(x.sum(0) * 3), 1e-6, 1e-6, "4x5 again");
  EXPECT_EQ(jit.captures(), 2);
  EXPECT_EQ(jit.replays(), 3);
  // Another dtype is another group too.
  const Tensor xi = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}, {2, 2}, {}, dev());
  for (int i = 0; i < 3; ++i) expect_values(jit({xi})[0], {2}, dtypes::int32, {12, 18});
  EXPECT_EQ(jit.captures(), 3);
}

TEST_P(JitTest, TrainingLoopWithAssignMatchesUnjitted) {
  // Linear regression with momentum, gradients written out by hand:
  //   g = x^T (x w - y) / n;  m = 0.9 m + g;  w = w - lr m
  // The step assigns new values to w and m; replays must carry them from call to call.
  struct Model {
    Tensor w, m;
  };
  auto make_model = [&] {
    return Model{data({4, 3}, 1).realize(), Tensor::zeros({4, 3}, dtypes::float32, dev())};
  };
  auto step = [](Model& p, const Tensor& x, const Tensor& y) {
    const Tensor err = x.matmul(p.w) - y;
    const Tensor g = x.T().matmul(err) / static_cast<double>(x.shape(0));
    p.m.assign(p.m * 0.9 + g);
    p.w.assign(p.w - 0.1 * p.m);
    return (err * err).mean();
  };
  Model jitted = make_model(), plain = make_model();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {step(jitted, in[0], in[1])};
  });
  for (int call = 0; call < 10; ++call) {
    const Tensor x = data({8, 4}, 100 + call), y = data({8, 3}, 200 + call);
    const std::vector<Tensor> got = jit({x, y});
    Tensor want = step(plain, x, y);
    std::vector<Tensor> all{want, plain.w, plain.m};
    Tensor::realize_all(all);
    const std::string at = "call " + std::to_string(call);
    expect_near(values_of(got[0]), values_of(want), 1e-5, 1e-6, at + " loss");
    expect_near(values_of(jitted.w), values_of(plain.w), 1e-5, 1e-6, at + " w");
    expect_near(values_of(jitted.m), values_of(plain.m), 1e-5, 1e-6, at + " m");
  }
  EXPECT_EQ(jit.captures(), 1);
  EXPECT_EQ(jit.replays(), 8);
}

TEST_P(JitTest, RecurrentStateReadAcrossElements) {
  // h <- tanh(h W) + x: each element of the new state reads every element of the old one, so a
  // replay that wrote the state in place would read values it had already overwritten.
  const Tensor w = data({4, 4}, 11).realize();
  Tensor h = data({1, 4}, 12).realize(),
         ref = data({1, 4}, 12);  // not a copy of h: assign would move it too
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    h.assign(h.matmul(w).tanh() + in[0]);
    return {h.sum()};
  });
  for (int call = 0; call < 7; ++call) {
    const Tensor x = data({1, 4}, 600 + call);
    const std::vector<Tensor> got = jit({x});
    ref = (ref.matmul(w).tanh() + x).realize();
    const std::string at = "call " + std::to_string(call);
    expect_near(values_of(h), values_of(ref), 1e-5, 1e-6, at + " state");
    expect_near(values_of(got[0]), values_of(ref.sum()), 1e-5, 1e-6, at + " output");
  }
  EXPECT_EQ(jit.replays(), 5);
}

TEST_P(JitTest, TrainingStepWithBackwardAndAdamMatchesUnjitted) {
  // The whole step jitted: forward, backward, Adam (moments and step count are assigned state;
  // the learning rate is a tensor read from outside, changed between calls).
  struct Net {
    Tensor w1, w2;
    std::unique_ptr<nn::optim::Adam> opt;
  };
  auto make_net = [&] {
    Net n{data({4, 8}, 3).realize().requires_grad_(), data({8, 3}, 4).realize().requires_grad_(),
          nullptr};
    n.opt = std::make_unique<nn::optim::Adam>(std::vector<Tensor>{n.w1, n.w2}, 0.01);
    return n;
  };
  auto step = [](Net& n, const Tensor& x, const Tensor& y) {
    const Tensor err = x.matmul(n.w1).relu().matmul(n.w2) - y;
    Tensor loss = (err * err).mean();
    n.opt->zero_grad();
    loss.backward();
    n.opt->step();
    return loss.detach();
  };
  Net jitted = make_net(), plain = make_net();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {step(jitted, in[0], in[1])};
  });
  for (int call = 0; call < 10; ++call) {
    if (call == 6)
      for (Net* n : {&jitted, &plain})
        n->opt->lr.assign(Tensor::scalar(0.001, dtypes::float32, dev()));
    const Tensor x = data({6, 4}, 700 + call), y = data({6, 3}, 800 + call);
    const std::vector<Tensor> got = jit({x, y});
    const Tensor want = step(plain, x, y);
    const std::string at = "call " + std::to_string(call);
    expect_near(values_of(got[0]), values_of(want), 1e-5, 1e-6, at + " loss");
    expect_near(values_of(jitted.w1), values_of(plain.w1), 1e-5, 1e-6, at + " w1");
    expect_near(values_of(jitted.w2), values_of(plain.w2), 1e-5, 1e-6, at + " w2");
  }
  EXPECT_EQ(jit.replays(), 8);
}

TEST_P(JitTest, StateAssignedBetweenCallsIsRead) {
  // The caller resets the state between replays: the next replay starts from the new value.
  Tensor acc = Tensor::zeros({3}, dtypes::float32, dev()).realize();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    acc.assign(acc + in[0]);
    return {acc * 1};
  });
  const Tensor one = Tensor::ones({3}, dtypes::float32, dev()).realize();
  for (int i = 0; i < 4; ++i) jit({one});
  expect_values(acc, {3}, dtypes::float32, {4, 4, 4});
  acc.assign(Tensor::full({3}, 10.0, dtypes::float32, dev()));
  for (int i = 0; i < 3; ++i) jit({one});
  expect_values(acc, {3}, dtypes::float32, {13, 13, 13});
  EXPECT_EQ(jit.replays(), 5);
}

TEST_P(JitTest, ATensorReadFromOutsideAndAssignedLaterIsReadAtItsNewValue) {
  // A learning rate or weight the function reads (not an input) and the caller assigns between
  // calls: replays read the new value.
  Tensor scale = Tensor::scalar(2.0, dtypes::float32, dev()).realize();
  const Tensor fixed = Tensor::full({3}, 1.0, dtypes::float32, dev()).realize();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0] * scale + fixed};
  });
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, {}, dev());
  for (int i = 0; i < 3; ++i) expect_values(jit({x})[0], {3}, dtypes::float32, {3, 5, 7});
  scale.assign(Tensor::scalar(10.0, dtypes::float32, dev()));
  expect_values(jit({x})[0], {3}, dtypes::float32, {11, 21, 31});
  scale.assign(scale * 0.5);
  expect_values(jit({x})[0], {3}, dtypes::float32, {6, 11, 16});
  EXPECT_EQ(jit.replays(), 3);
}

TEST_P(JitTest, AnEvalJitSeesWeightsATrainJitUpdates) {
  // Two Jits share a weight: one updates it (its replays move it between buffers), the other
  // reads it from outside and must follow.
  Tensor w = data({3, 3}, 13).realize();
  Jit train([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    w.assign(w - 0.1 * in[0].T().matmul(in[0].matmul(w)));
    return {};
  });
  Jit eval([&](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0].matmul(w)}; });
  Tensor ref = data({3, 3}, 13);
  const Tensor probe = data({2, 3}, 14);
  for (int call = 0; call < 6; ++call) {
    const Tensor x = data({4, 3}, 900 + call);
    train({x});
    ref = (ref - 0.1 * x.T().matmul(x.matmul(ref))).realize();
    expect_near(values_of(eval({probe})[0]), values_of(probe.matmul(ref)), 1e-5, 1e-6,
                "call " + std::to_string(call));
  }
  EXPECT_EQ(train.replays(), 4);
  EXPECT_EQ(eval.replays(), 4);
}

// Work that depends only on tensors read from outside (weights) runs on the first replay and
// again only when they change: here the Gram matrix w^T w, a kernel of its own.
TEST_P(JitTest, WorkOnParametersAloneRunsOnceAcrossReplays) {
  Tensor w = data({5, 4}, 21).realize();
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0].matmul(w.T().matmul(w))};
  };
  Jit jit(fn);
  auto check = [&](uint64_t seed, const std::string& at) {
    const Tensor x = data({3, 4}, seed);
    const int64_t before = runtime_stats().kernels_run;
    const std::vector<double> got = values_of(jit({x})[0]);
    const int64_t ran = runtime_stats().kernels_run - before;
    expect_near(got, values_of(x.matmul(w.T().matmul(w))), 1e-5, 1e-6, at);
    return ran;
  };
  check(30, "call 0");
  check(31, "capture");
  EXPECT_EQ(check(32, "first replay"), 2);  // the Gram matrix into the capture's own buffer
  EXPECT_EQ(check(33, "replay"), 1);
  EXPECT_EQ(check(34, "replay"), 1);
  // The same schedule realized plainly with other weights reuses its arena: the replay's Gram
  // matrix lives elsewhere and survives.
  const Tensor v = data({5, 4}, 22).realize();
  const Tensor other = data({3, 4}, 35).matmul(v.T().matmul(v)).realize();
  expect_near(values_of(other), values_of(data({3, 4}, 35).matmul(v.T().matmul(v))), 1e-5, 1e-6,
              "plain");
  EXPECT_EQ(check(36, "replay after a plain run"), 1);
  // A new value of the weight: the next replay computes the Gram matrix again, then not.
  w.assign(w * 0.5 + 1).realize();
  EXPECT_EQ(check(37, "after assign"), 2);
  EXPECT_EQ(check(38, "replay"), 1);
  EXPECT_EQ(jit.replays(), 6);
}

// The same when another Jit updates the weight: its replays write the weight's two buffers in
// turn, so the eval Jit may see a buffer it read before with new contents.
TEST_P(JitTest, WorkOnParametersFollowsATrainJitsUpdates) {
  Tensor w = data({3, 3}, 15).realize();
  Jit train([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    w.assign(w - 0.1 * in[0].T().matmul(in[0].matmul(w)));
    return {};
  });
  Jit eval([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0].matmul(w.T().matmul(w))};
  });
  Tensor ref = data({3, 3}, 15);
  const Tensor probe = data({2, 3}, 16);
  for (int call = 0; call < 8; ++call) {
    // Twice in a row now and then: the weight is back in the buffer it was in two steps ago.
    for (int step = 0; step < 1 + call % 2; ++step) {
      const Tensor x = data({4, 3}, 700 + 10 * call + step);
      train({x});
      ref = (ref - 0.1 * x.T().matmul(x.matmul(ref))).realize();
    }
    expect_near(values_of(eval({probe})[0]), values_of(probe.matmul(ref.T().matmul(ref))), 1e-5,
                1e-6, "call " + std::to_string(call));
  }
  EXPECT_EQ(eval.replays(), 6);
}

TEST_P(JitTest, MultipleOutputsAndAnOutputThatIsAnInput) {
  Jit jit([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0], in[0] + in[1], (in[0] * in[1]).sum()};
  });
  for (int call = 0; call < 5; ++call) {
    const Tensor x = data({2, 3}, 300 + call), y = data({2, 3}, 400 + call);
    const std::vector<Tensor> out = jit({x, y});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(values_of(out[0]), values_of(x));
    expect_near(values_of(out[1]), values_of(x + y), 1e-6, 1e-6, "sum");
    expect_near(values_of(out[2]), values_of((x * y).sum()), 1e-5, 1e-6, "dot");
    EXPECT_EQ(out[2].shape(), Shape{});
  }
  EXPECT_EQ(jit.replays(), 3);
}

TEST_P(JitTest, AnOutputFedBackAsInput) {
  // y <- softmax(y W): the input is the buffer the replay writes, so the Jit copies it first.
  const Tensor w = data({4, 4}, 9).realize();
  Jit jit([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0].matmul(w).softmax(-1)};
  });
  Tensor y = data({2, 4}, 8).realize(), ref = y;
  for (int call = 0; call < 6; ++call) {
    y = jit({y})[0];
    ref = ref.matmul(w).softmax(-1).realize();
    expect_near(values_of(y), values_of(ref), 1e-5, 1e-6, "call " + std::to_string(call));
  }
}

TEST_P(JitTest, LazyInputsAreRealizedFirst) {
  Jit jit([](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0] * in[1]}; });
  for (int call = 0; call < 4; ++call) {
    const Tensor x = data({3, 2}, 500 + call);
    // A transposed view and a duplicate: each becomes its own contiguous buffer.
    const Tensor xt = x.T();
    expect_near(values_of(jit({xt, xt})[0]), values_of(xt * xt), 1e-6, 1e-6,
                "call " + std::to_string(call));
  }
  EXPECT_EQ(jit.replays(), 2);
}

TEST_P(JitTest, OutputsAreOverwrittenByTheNextCallUnlessCloned) {
  Jit jit([](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0] + 1}; });
  const Tensor a = Tensor::full({2}, 1.0, dtypes::float32, dev()).realize();
  const Tensor b = Tensor::full({2}, 5.0, dtypes::float32, dev()).realize();
  jit({a});
  jit({a});
  const Tensor kept = jit({a})[0].clone().realize();
  jit({b});
  expect_values(kept, {2}, dtypes::float32, {2, 2});
}

TEST_P(JitTest, AssignIsAFunctionalUpdate) {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, {}, dev());
  Tensor alias = a;             // a copy of the handle: shares the update
  const Tensor before = a * 2;  // built from the old value: keeps it
  a.assign(a + 10);
  expect_values(a, {3}, dtypes::float32, {11, 12, 13});
  expect_values(alias, {3}, dtypes::float32, {11, 12, 13});
  expect_values(before, {3}, dtypes::float32, {2, 4, 6});
  // Realized first, then updated: the old buffer still serves what was built from it.
  const Tensor realized_before = (a * 1).realize();
  const Tensor lazy_before = a - 1;
  a.assign(Tensor::zeros({3}, dtypes::float32, dev()));
  expect_values(realized_before, {3}, dtypes::float32, {11, 12, 13});
  expect_values(lazy_before, {3}, dtypes::float32, {10, 11, 12});
  expect_values(a, {3}, dtypes::float32, {0, 0, 0});
}

TEST_P(JitTest, AssignLiteralsAndWeakness) {
  // A literal takes the target's dtype; the target is no longer weak after an assign.
  Tensor s = Tensor::scalar(1.0, dtypes::float16, dev());
  s.assign(2.5);
  EXPECT_EQ(s.dtype(), dtypes::float16);
  EXPECT_EQ(values_of(s), std::vector<double>{2.5});
  Tensor weak = 2;
  EXPECT_TRUE(weak.is_weak());
  weak.assign(Tensor::scalar(7, dtypes::int32));
  EXPECT_FALSE(weak.is_weak());
  EXPECT_EQ(values_of(weak), std::vector<double>{7});
  // Not weak any more: int32 * int8 stays int32 (a weak int would have adopted int8).
  EXPECT_EQ((weak * Tensor::scalar(1, dtypes::int8)).dtype(), dtypes::int32);
}

TEST_P(JitTest, AssignErrors) {
  Tensor a = Tensor::zeros({2, 3}, dtypes::float32, dev());
  EXPECT_THROW(a.assign(Tensor::zeros({3, 2}, dtypes::float32, dev())), ShapeError);
  EXPECT_THROW(a.assign(Tensor::zeros({2, 3}, dtypes::int32, dev())), DTypeError);
  try {
    a.assign(Tensor::zeros({6}, dtypes::float32, dev()));
    FAIL() << "no ShapeError";
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("assign"), std::string::npos) << what;
    EXPECT_NE(what.find("(2, 3)"), std::string::npos) << what;
    EXPECT_NE(what.find("(6,)"), std::string::npos) << what;
  }
  try {
    a.assign(Tensor::zeros({2, 3}, dtypes::float16, dev()));
    FAIL() << "no DTypeError";
  } catch (const DTypeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("float16"), std::string::npos) << what;
    EXPECT_NE(what.find("float32"), std::string::npos) << what;
  }
  for (const std::string& other : devices()) {
    if (other == a.device()) continue;
    try {
      a.assign(Tensor::zeros({2, 3}, dtypes::float32, other));
      FAIL() << "no DeviceError";
    } catch (const DeviceError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(other), std::string::npos) << what;
      EXPECT_NE(what.find(a.device()), std::string::npos) << what;
    }
  }
  expect_values(a, {2, 3}, dtypes::float32, {0, 0, 0, 0, 0, 0});  // unchanged by the failures
}

TEST_P(JitTest, AssigningAnInputIsAnError) {
  Jit jit([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor x = in[0];
    x.assign(x + 1);
    return {x};
  });
  const Tensor x = Tensor::zeros({2}, dtypes::float32, dev()).realize();
  jit({x});
  EXPECT_THROW(jit({x}), Error);
}

VKGRAD_ALL_DEVICES(JitTest);

}  // namespace
}  // namespace vkgrad
