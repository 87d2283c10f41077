// Runs an ONNX image classifier: loads the model, feeds it one input (a .pb TensorProto, or a
// deterministic ramp of the input's shape), runs it twice (the second call replays the Jit
// capture) and prints the five best classes with their scores.
//
// usage: onnx_classify model.onnx [input.pb] [--device D]
#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>
#include <vkgrad/vkgrad.hpp>

int main(int argc, char** argv) {
  std::string model_path, input_path, device;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc)
      device = argv[++i];
    else if (model_path.empty())
      model_path = a;
    else
      input_path = a;
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "usage: onnx_classify model.onnx [input.pb] [--device D]\n");
    return 2;
  }
  try {
    vkgrad::onnx::Model model = vkgrad::onnx::load(model_path, device);
    const vkgrad::onnx::ValueInfo& in = model.inputs().at(0);
    vkgrad::Tensor x;
    if (!input_path.empty()) {
      x = vkgrad::onnx::load_tensor(input_path, model.device());
    } else {
      vkgrad::Shape shape = in.shape;
      for (int64_t& d : shape) d = d < 0 ? 1 : d;  // dynamic dimensions: 1
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      x = (vkgrad::Tensor::arange(n, vkgrad::dtypes::float32, model.device()) / double(n))
              .reshape(shape);
    }
    std::map<std::string, vkgrad::Tensor> out = model.run({{in.name, x}});
    out = model.run({{in.name, x}});  // a replay of the first call's capture
    const vkgrad::Tensor scores = out.at(model.outputs().at(0).name).reshape({-1});
    const std::vector<float> v = scores.cast(vkgrad::dtypes::float32).to_vector<float>();
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min<size_t>(5, v.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<long>(k), order.end(),
                      [&](size_t a, size_t b) { return v[a] > v[b]; });
    std::printf("%s on %s: %zu classes\n", model_path.c_str(), model.device().c_str(), v.size());
    for (size_t i = 0; i < k; i++) std::printf("  class %zu: %.6f\n", order[i], v[order[i]]);
  } catch (const vkgrad::Error& e) {
    std::fprintf(stderr, "onnx_classify: %s\n", e.what());
    return 1;
  }
  return 0;
}
