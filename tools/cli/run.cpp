// tools/cli: `vkgrad run model.onnx [--device D] [--input name=file.pb ...] [--runs N]` loads an
// ONNX model, feeds it the given inputs (or random ones, dynamic dimensions set to 1), and
// prints its inputs and outputs, a summary of each output, the load, first-call and median
// times, and the kernels one call launches.
#include "run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vkgrad/vkgrad.hpp>

namespace vkgrad {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string shape_text(const Shape& s, const std::vector<std::string>& names = {}) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < s.size(); i++)
    parts.push_back(s[i] >= 0 ? std::to_string(s[i])
                              : (i < names.size() && !names[i].empty() ? names[i] : "?"));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

Tensor random_input(const onnx::ValueInfo& info, const std::string& device) {
  Shape shape = info.shape;
  for (int64_t& d : shape)
    if (d < 0) d = 1;
  if (info.dtype.is_float()) return Tensor::uniform(shape, -1.0, 1.0, info.dtype, device);
  return Tensor::zeros(shape, info.dtype, device);
}

std::string summary(const Tensor& t) {
  if (t.numel() == 0) return "empty";
  // Converted on the host's device: the model's device may have no float64.
  const std::vector<double> v = t.to("CPU").cast(dtypes::float64).to_vector<double>();
  double lo = v[0], hi = v[0], sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  std::vector<std::string> head;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 5); i++)
    head.push_back(fmt::format("{:.6g}", v[i]));
  return fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}  first [{}{}]", lo, hi,
                     sum / static_cast<double>(v.size()), fmt::join(head, ", "),
                     v.size() > 5 ? ", ..." : "");
}

}  // namespace

int run_command(const std::vector<std::string_view>& args) {
  std::string path, device;
  std::vector<std::pair<std::string, std::string>> files;
  int runs = 10;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string_view a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(fmt::format("run: {} needs a value", a));
      return std::string(args[++i]);
    };
    if (a == "--device") {
      device = value();
      std::transform(device.begin(), device.end(), device.begin(), ::toupper);
    } else if (a == "--input") {
      const std::string kv = value();
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("run: --input takes name=file.pb, got '" + kv + "'");
      files.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--runs") {
      runs = std::atoi(value().c_str());
      if (runs < 1) throw Error("run: --runs must be at least 1");
    } else if (!a.empty() && a[0] == '-') {
      throw Error(fmt::format("run: unknown option '{}'", a));
    } else if (path.empty()) {
      path = a;
    } else {
      throw Error(fmt::format("run: unexpected argument '{}'", a));
    }
  }
  if (path.empty()) throw Error("run: name the model file (vkgrad run model.onnx)");

  auto t0 = Clock::now();
  onnx::Model model = onnx::load(path, device);
  const double load_ms = ms_since(t0);
  fmt::print("model    {} (opset {}) on {}, loaded in {:.1f} ms\n", path, model.opset(),
             model.device(), load_ms);
  for (const auto& in : model.inputs())
    fmt::print("input    {}  {} {}\n", in.name, in.dtype.name(),
               shape_text(in.shape, in.dim_names));
  for (const auto& out : model.outputs())
    fmt::print("output   {}  {} {}\n", out.name, out.dtype.name(),
               shape_text(out.shape, out.dim_names));

  std::map<std::string, Tensor> inputs;
  for (const auto& [name, file] : files) inputs[name] = onnx::load_tensor(file, model.device());
  for (const auto& in : model.inputs())
    if (!inputs.count(in.name)) inputs[in.name] = random_input(in, model.device()).realize();

  t0 = Clock::now();
  std::map<std::string, Tensor> outputs = model.run(inputs);
  const double first_ms = ms_since(t0);
  std::vector<double> times;
  int64_t kernels = 0;
  for (int r = 0; r < runs; r++) {
    const int64_t k0 = runtime_stats().kernels_run;
    t0 = Clock::now();
    outputs = model.run(inputs);
    times.push_back(ms_since(t0));
    kernels = runtime_stats().kernels_run - k0;
  }
  std::sort(times.begin(), times.end());
  fmt::print("\n");
  for (const auto& out : model.outputs()) {
    const Tensor& t = outputs.at(out.name);
    fmt::print("{}  {} {}: {}\n", out.name, t.dtype().name(), shape_text(t.shape()), summary(t));
  }
  fmt::print(
      "\nfirst call {:.2f} ms, median of {} calls {:.3f} ms, {} kernels per call "
      "({} Jit replays)\n",
      first_ms, runs, times[times.size() / 2], kernels, model.replays());
  return 0;
}

}  // namespace vkgrad
