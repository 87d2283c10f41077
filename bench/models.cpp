// bench: whole networks at batch 1 (examples/models: ResNet-18, ResNet-50, MobileNetV2 on 224²
// images, a BERT-style encoder on 128 tokens), with random parameters realized before timing.
// Each model has two cases: a plain forward (build the lazy graph and realize it) and the same
// forward under vkgrad::Jit. The plain case also times every kernel of one more forward and
// names the three slowest with their share of the device time. Checks: the output is finite,
// and the Jit's output equals the plain forward's.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vkgrad/beam.hpp>
#include <vkgrad/jit.hpp>
#include <vkgrad/nn.hpp>
#include <vkgrad/onnx.hpp>

#include "bench/harness.hpp"
#include "models/bert_encoder.hpp"
#include "models/mobilenet_v2.hpp"
#include "models/resnet.hpp"

namespace vkgrad::bench {
namespace {

struct Network {
  std::function<Tensor(const Tensor&)> forward;
  Shape input;
  std::shared_ptr<void> model;  // keeps the model alive
};

// While alive, no kernel is searched: a model's parameters' initialization is no part of its
// forward or step, and `vkgrad tune` (an enclosing BEAM override) searches those only. The BEAM
// cache is read as before (not under `vkgrad bench --beam`'s heuristics or
// VKGRAD_IGNORE_BEAM_CACHE).
Beam no_search() {
  BeamOptions options = beam_options();
  options.width = 0;
  options.progress = false;
  return Beam(options);
}

template <class M>
Network network(M model, Shape input, const std::string& device) {
  auto m = std::make_shared<M>(std::move(model));
  {
    const Beam setup = no_search();
    m->to(device);
  }
  return {[m](const Tensor& x) { return m->forward(x); }, std::move(input), m};
}

Network make_network(const std::string& name, const std::string& device) {
  Tensor::manual_seed(11);
  if (name == "resnet18") return network(models::resnet18(), {1, 3, 224, 224}, device);
  if (name == "resnet50") return network(models::resnet50(), {1, 3, 224, 224}, device);
  if (name == "mobilenetv2") return network(models::MobileNetV2(), {1, 3, 224, 224}, device);
  return network(models::BertEncoder(), {1, 128, 256}, device);
}

// "slowest kernels of T ms: a 1.20 ms (30%), ..." for the first n (slowest) of `times`.
std::string slowest_kernels(const std::vector<KernelTime>& times, size_t n) {
  double total = 0;
  for (const KernelTime& t : times) total += t.ms;
  std::string out = fmt::format("slowest kernels of {:.1f} ms: ", total);
  for (size_t i = 0; i < std::min(n, times.size()); ++i)
    out += fmt::format("{}{} {:.2f} ms ({:.0f}%)", i ? ", " : "", times[i].name, times[i].ms,
                       total > 0 ? 100 * times[i].ms / total : 0.0);
  return out;
}

}  // namespace

Row model_case(Suite& s, const std::string& name, bool jit) {
  Row row = s.row(jit ? name + "_jit" : name, "ms");
  const RuntimeStats start = runtime_stats();
  Network net = make_network(name, s.device);
  Shape shape = net.input;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const Tensor x = Tensor::from_vector(random_floats(static_cast<size_t>(numel), 5, -1, 1), shape,
                                       std::nullopt, s.device)
                       .realize();
  Jit jitted(
      [&](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {net.forward(in[0])}; });

  const std::vector<float> plain = net.forward(x).to_vector<float>();
  if (jit) jitted({x}), jitted({x});  // a plain run, then the capture
  const int64_t replays_before = jitted.replays();
  const RuntimeStats before = runtime_stats();
  Tensor out;
  // A plain forward's phases: building the lazy graph, the schedule cache's lookup, the kernels
  // and what is left (the engine's bookkeeping around them).
  std::vector<Sample> runs = measure([&] {
    if (!jit) return time_realize([&] { return net.forward(x); }, out);
    return time_with_stats([&] { out = jitted({x})[0]; });
  });
  const RuntimeStats after = runtime_stats();
  set_ours(row, runs, 0);
  const double forwards = static_cast<double>(runs.size() + 1);  // measure() adds a warm-up
  row.details.push_back(fmt::format(
      "{:.0f} kernels per forward; schedules built during the timed forwards: {}, programs "
      "compiled: {}",
      static_cast<double>(after.kernels_run - before.kernels_run) / forwards,
      after.schedules_built - before.schedules_built,
      after.programs_compiled - before.programs_compiled));
  // Kernels compiled for this case (its parameters' and its forward's) that a BEAM search tuned
  // or the BEAM cache served.
  if (const int64_t searched = before.beam_searches - start.beam_searches,
      cached = before.beam_cache_hits - start.beam_cache_hits;
      searched > 0 || cached > 0)
    row.details.push_back(fmt::format("BEAM: {} kernels searched, {} Opt lists from the BEAM cache",
                                      searched, cached));
  if (jit && jitted.replays() - replays_before < static_cast<int64_t>(runs.size()) + 1)
    row.fail("some timed forwards were not replays");
  if (!jit) {
    row.details.push_back(phase_line(runs));
    const bool was = kernel_timing();
    reset_runtime_stats();
    set_kernel_timing(true);
    net.forward(x).realize();
    set_kernel_timing(was);
    row.details.push_back(slowest_kernels(kernel_times(), 3));
  }
  const std::vector<float> got = out.to_vector<float>();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      row.fail("the output is not finite");
      return row;
    }
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - plain[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(plain[i])));
  }
  if (got.size() != plain.size() || worst > 1e-4 * std::max(1.0, scale))
    row.fail(fmt::format("the output differs from the first plain forward's by {:.3g}", worst));
  return row;
}

// One training step of ResNet-18 (torchvision's architecture, 100 classes) on a batch of 16
// 64 x 64 images: BatchNorm on the batch's statistics (Tensor::training, the running ones
// updated), cross entropy against fixed labels, backward(), SGD with momentum 0.9 — plainly
// and under vkgrad::Jit. The loss must fall over the timed steps (the same batch each step).
Row resnet18_train_case(Suite& s, bool jit) {
  Row row = s.row(jit ? "resnet18_train_jit" : "resnet18_train", "ms");
  constexpr int64_t kBatch = 16, kSide = 64, kClasses = 100;
  Tensor::manual_seed(13);
  models::ResNet model = models::resnet18(kClasses);
  {
    const Beam setup = no_search();
    model.to(s.device);
  }
  // The whole state: the running statistics are the optimizer's buffers, realized with each step.
  nn::optim::SGD opt(model.state(), 0.01, 0.9);
  Rng rng(17);
  std::vector<int32_t> labels(static_cast<size_t>(kBatch));
  for (int32_t& v : labels) v = static_cast<int32_t>(rng.next() % kClasses);
  const Tensor x = Tensor::from_vector(random_floats(kBatch * 3 * kSide * kSide, 19, -1, 1),
                                       {kBatch, 3, kSide, kSide}, std::nullopt, s.device)
                       .realize();
  const Tensor y = Tensor::from_vector<int32_t>(labels, {kBatch}, std::nullopt, s.device).realize();
  const bool was_training = Tensor::training;
  Tensor::training = true;
  const auto step = training_step([&](const Tensor& in) { return model.forward(in); }, opt);
  Jit jitted(step);
  auto once = [&] { return jit ? jitted({x, y})[0] : step({x, y})[0]; };
  const float first = once().item<float>();
  once();  // the Jit's capture
  const RuntimeStats before = runtime_stats();
  Tensor loss;
  std::vector<Sample> runs = measure([&] { return time_with_stats([&] { loss = once(); }); });
  const RuntimeStats after = runtime_stats();
  Tensor::training = was_training;
  set_ours(row, runs, 0);
  const double steps = static_cast<double>(runs.size() + 1);  // measure() adds a warm-up
  row.details.push_back(
      fmt::format("{:.0f} kernels per step; schedules built during the timed steps: {}, programs "
                  "compiled: {}",
                  static_cast<double>(after.kernels_run - before.kernels_run) / steps,
                  after.schedules_built - before.schedules_built,
                  after.programs_compiled - before.programs_compiled));
  const float last = loss.item<float>();
  row.details.push_back(fmt::format("loss {:.4f} at the first step, {:.4f} after {:.0f} more",
                                    first, last, steps + 1));
  if (!(std::isfinite(last) && last < first)) row.fail("the loss did not fall");
  return row;
}

// The ONNX light ResNet-50 (../shared/onnx-models, or VKGRAD_ONNX_MODELS) through
// vkgrad::onnx at batch 1, against the C++-built ResNet-50 under Jit timed in the same case:
// the ratio is how close the importer's graph comes to the hand-built one.
Row onnx_resnet50_case(Suite& s) {
  Row row = s.row("onnx_resnet50", "ms");
  const char* env = std::getenv("VKGRAD_ONNX_MODELS");
  const std::filesystem::path dir =
      std::filesystem::path(env ? env : VKGRAD_ONNX_MODELS_DIR) / "resnet50";
  if (!onnx::available() || !std::filesystem::exists(dir / "model.onnx")) {
    row.skipped = true;
    row.check = onnx::available() ? "skipped: no " + (dir / "model.onnx").string()
                                  : "skipped: built without ONNX";
    return row;
  }
  const auto t0 = std::chrono::steady_clock::now();
  onnx::Model model = onnx::load((dir / "model.onnx").string(), s.device);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const onnx::ValueInfo& in = model.inputs().at(0);
  Shape shape = in.shape;
  for (int64_t& d : shape)
    if (d < 0) d = 1;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const Tensor x = Tensor::from_vector(random_floats(static_cast<size_t>(numel), 5, -1, 1), shape,
                                       std::nullopt, s.device)
                       .realize();
  const auto t1 = std::chrono::steady_clock::now();
  Tensor out = model.run({{in.name, x}}).begin()->second;
  const double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  const RuntimeStats before = runtime_stats();
  std::vector<Sample> runs = measure([&] {
    return time_host([&] { out = model.run({{in.name, x}}).begin()->second; });
  });
  const RuntimeStats after = runtime_stats();
  set_ours(row, runs, 0);
  row.details.push_back(fmt::format(
      "load {:.0f} ms, first run {:.0f} ms, {:.0f} kernels per forward", load_ms, first_ms,
      static_cast<double>(after.kernels_run - before.kernels_run) /
          static_cast<double>(runs.size() + 1)));

  Network net = make_network("resnet50", s.device);
  Jit jitted(
      [&](const std::vector<Tensor>& v) -> std::vector<Tensor> { return {net.forward(v[0])}; });
  const Tensor xc = x.reshape({1, 3, 224, 224});
  jitted({xc}), jitted({xc});
  std::vector<Sample> ref = measure([&] { return time_host([&] { (void)jitted({xc}); }); });
  set_reference_time(row, "C++ resnet50_jit", median_ms(ref));
  for (float v : out.to_vector<float>())
    if (!std::isfinite(v)) {
      row.fail("the output is not finite");
      break;
    }
  return row;
}

}  // namespace vkgrad::bench
