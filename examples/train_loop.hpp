// The training loop the examples share: options, a step of forward, loss, backward and Adam
// (optionally through vkgrad::Jit), a progress line, and the held-out accuracy at the end. Each
// example supplies its model.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>
#include <vkgrad/jit.hpp>
#include <vkgrad/vkgrad.hpp>

#include "mnist_data.hpp"

namespace mnist {

using vkgrad::Tensor;
namespace nn = vkgrad::nn;

struct Options {
  int steps = 0;
  int batch = 0;
  double lr = 0;
  std::string device;  // empty: the default device
  std::string mnist;   // empty: synthetic digits
  bool jit = false;
  double min_accuracy = 0;
};

// Command-line options over the example's defaults; exits with a usage line on anything else.
inline Options parse(int argc, char** argv, Options o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps")
      o.steps = std::stoi(value());
    else if (a == "--batch")
      o.batch = std::stoi(value());
    else if (a == "--lr")
      o.lr = std::stod(value());
    else if (a == "--device")
      o.device = value();
    else if (a == "--mnist")
      o.mnist = value();
    else if (a == "--jit")
      o.jit = true;
    else if (a == "--min-accuracy")
      o.min_accuracy = std::stod(value());
    else {
      std::fprintf(stderr,
                   "usage: %s [--steps N] [--batch B] [--lr LR] [--device D] [--jit] "
                   "[--mnist DIR] [--min-accuracy A]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return o;
}

// Resident memory and live graph nodes: both stay flat over a long run.
inline void memory_line(int step) {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  std::printf(
      "memory at step %d: RSS %.1f MiB, %lld live graph nodes\n", step,
      static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0,
      static_cast<long long>(vkgrad::runtime_stats().live_nodes));
}

// Trains `Model` (with Adam) on the training set and reports the held-out accuracy; returns the
// exit code (1 below --min-accuracy).
template <class Model>
int train(const Options& opt) {
  if (!opt.device.empty()) vkgrad::set_default_device(opt.device);
  const std::string device = vkgrad::default_device();

  const auto [train, test] = mnist::load(opt.mnist);
  std::printf("%s: %lld training and %lld test images, device %s%s\n",
              opt.mnist.empty() ? "synthetic digits" : "MNIST",
              static_cast<long long>(train.size()), static_cast<long long>(test.size()),
              device.c_str(), opt.jit ? ", jit" : "");

  Tensor::manual_seed(0);
  Model model;
  nn::optim::Adam optimizer(model.parameters(), opt.lr);

  // One step: forward, loss, backward, and the Adam update. The loss and the batch accuracy are
  // realized in the optimizer's schedule, together with the new weights.
  auto train_step = [&](const Tensor& x, const Tensor& y) {
    Tensor::training = true;
    optimizer.zero_grad();
    const Tensor logits = model(x);
    const Tensor loss = logits.cross_entropy(y);
    loss.backward();
    std::vector<Tensor> outputs{loss, logits.argmax(1).eq(y).cast(vkgrad::dtypes::float32).mean()};
    optimizer.step(outputs);
    Tensor::training = false;
    return outputs;
  };
  vkgrad::Jit jitted_step([&](const std::vector<Tensor>& in) { return train_step(in[0], in[1]); });

  mnist::Rng rng{7};
  std::vector<int64_t> idx(static_cast<size_t>(opt.batch));
  double loss = 0, acc = 0;
  mnist::Progress progress(opt.steps);
  for (int step = 1; step <= opt.steps; ++step) {
    for (int64_t& i : idx)
      i = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(train.size()));
    const auto [x, y] = mnist::batch(train, idx, device);
    const std::vector<Tensor> out = opt.jit ? jitted_step({x, y}) : train_step(x, y);
    loss = out[0].item<float>();
    acc = out[1].item<float>();
    progress.update(step, loss, acc);
    if (step == 100 || step == opt.steps) memory_line(step);
  }

  // Held-out accuracy, 512 images at a time. With --jit the batch size is symbolic, so the last,
  // smaller batch replays the same capture.
  auto count_correct = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {model(in[0]).argmax(1).eq(in[1]).sum()};
  };
  vkgrad::Jit jitted_count(count_correct);
  const vkgrad::Variable rows_var("rows", 1, 512);
  int64_t correct = 0;
  for (int64_t begin = 0; begin < test.size(); begin += 512) {
    std::vector<int64_t> rows;
    for (int64_t i = begin; i < std::min(begin + 512, test.size()); ++i) rows.push_back(i);
    const auto [x, y] = mnist::batch(test, rows, device);
    const std::vector<Tensor> in{x.symbolic(0, rows_var), y.symbolic(0, rows_var)};
    const Tensor n = (opt.jit ? jitted_count(in) : count_correct(in))[0];
    correct += n.item<int32_t>();
  }
  const double test_acc = static_cast<double>(correct) / static_cast<double>(test.size());
  std::printf("final: loss %.4f, train batch accuracy %.3f, test accuracy %.4f\n", loss, acc,
              test_acc);
  if (test_acc < opt.min_accuracy) {
    std::printf("FAILED: test accuracy below %.3f\n", opt.min_accuracy);
    return 1;
  }
  return 0;
}

// main() of an example: parse (over the example's default steps, batch size and learning rate),
// train, report; errors are printed with the program's name.
template <class Model>
int main(int argc, char** argv, const char* program, int steps, int batch, double lr) {
  Options defaults;
  defaults.steps = steps;
  defaults.batch = batch;
  defaults.lr = lr;
  try {
    return train<Model>(parse(argc, argv, defaults));
  } catch (const std::exception& e) {  // vkgrad::Error, or a file that cannot be read
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace mnist
