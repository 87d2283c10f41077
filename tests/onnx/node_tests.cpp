// tests/onnx: ONNX's backend node tests as a conformance suite. Each case folder holds a
// one-node model and test_data_set_0/{input,output}_N.pb; every case runs on the device and its
// outputs are compared with the expected ones (rtol 1e-3, atol 1e-7, ONNX's defaults). Cases the
// project accepts as failing are listed with their reasons in expected_failures.txt; any other
// failure, or a listed case that passes, fails the run.
//
// Usage: onnx_node_tests --data DIR --device D --expected FILE [--only SUBSTRING] [--verbose]
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include <vkgrad/vkgrad.hpp>

namespace fs = std::filesystem;
using namespace vkgrad;

namespace {

std::vector<double> host_values(const Tensor& t) {
  const std::vector<uint8_t> b = t.to_bytes();
  const int64_t n = t.numel();
  std::vector<double> out(static_cast<size_t>(n));
  auto get = [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; i++) {
      T v;
      std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
      out[static_cast<size_t>(i)] = static_cast<double>(v);
    }
  };
  switch (t.dtype().scalar_type()) {
    case ScalarType::float32:
      get(float{});
      break;
    case ScalarType::float64:
      get(double{});
      break;
    case ScalarType::int8:
      get(int8_t{});
      break;
    case ScalarType::uint8:
    case ScalarType::bool_:
      get(uint8_t{});
      break;
    case ScalarType::int16:
      get(int16_t{});
      break;
    case ScalarType::uint16:
      get(uint16_t{});
      break;
    case ScalarType::int32:
      get(int32_t{});
      break;
    case ScalarType::uint32:
      get(uint32_t{});
      break;
    case ScalarType::int64:
      get(int64_t{});
      break;
    case ScalarType::uint64:
      get(uint64_t{});
      break;
    case ScalarType::float16:
    case ScalarType::bfloat16: {
      const Tensor f = t.cast(dtypes::float32);
      return host_values(f);
    }
    default:
      break;
  }
  return out;
}

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Empty when the output matches; otherwise why not.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return "dtype " + got.dtype().name() + ", expected " + want.dtype().name();
  if (got.shape() != want.shape())
    return "shape " + shape_text(got.shape()) + ", expected " + shape_text(want.shape());
  const std::vector<double> g = host_values(got), w = host_values(want);
  const bool exact = !want.dtype().is_float();
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < g.size(); i++) {
    const double a = g[i], e = w[i];
    bool ok;
    if (exact)
      ok = a == e;
    else if (std::isnan(e))
      ok = std::isnan(a);
    else if (std::isinf(e))
      ok = a == e;
    else
      ok = std::abs(a - e) <= atol + rtol * std::abs(e);
    if (!ok) {
      if (!bad) {
        std::ostringstream os;
        os << "element " << i << ": " << a << ", expected " << e;
        first = os.str();
      }
      bad++;
    }
  }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(g.size()) + " elements differ (" + first +
         ")";
}

struct Expected {
  std::map<std::string, std::string> reason;  // case -> reason, for this device
};

// Lines: "case  reason" or "DEVICE: case  reason"; '#' starts a comment.
Expected read_expected(const std::string& path, const std::string& device) {
  Expected e;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    std::istringstream ls(line);
    std::string first;
    if (!(ls >> first)) continue;
    std::string name = first;
    if (first.back() == ':') {
      if (first.substr(0, first.size() - 1) != device) continue;
      if (!(ls >> name)) continue;
    }
    std::string reason;
    std::getline(ls, reason);
    const size_t start = reason.find_first_not_of(' ');
    e.reason[name] = start == std::string::npos ? "" : reason.substr(start);
  }
  return e;
}

std::string run_case(const fs::path& dir, const std::string& device) {
  onnx::Model model = onnx::load((dir / "model.onnx").string(), device);
  const fs::path data = dir / "test_data_set_0";
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < model.inputs().size(); i++) {
    const fs::path f = data / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(f)) return "missing " + f.filename().string();
    Tensor t = onnx::load_tensor(f.string(), device);
    // ONNX 1.12's generators store bfloat16 data as UINT16 tensors: the bits, reinterpreted.
    if (t.dtype() == dtypes::uint16 && model.inputs()[i].dtype == dtypes::bfloat16)
      t = t.bitcast(dtypes::bfloat16);
    inputs[model.inputs()[i].name] = t;
  }
  std::map<std::string, Tensor> outputs = model.run(inputs);
  for (size_t i = 0; i < model.outputs().size(); i++) {
    const fs::path f = data / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(f)) continue;
    Tensor want = onnx::load_tensor(f.string(), "CPU");
    const std::string& name = model.outputs()[i].name;
    if (want.dtype() == dtypes::uint16 && model.outputs()[i].dtype == dtypes::bfloat16)
      want = want.bitcast(dtypes::bfloat16);
    const std::string why = compare(outputs.at(name).to("CPU"), want, 1e-3, 1e-7);
    if (!why.empty()) return "output '" + name + "': " + why;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, device = "CPU", expected_file, only;
  bool verbose = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--data")
      data = next();
    else if (a == "--device")
      device = next();
    else if (a == "--expected")
      expected_file = next();
    else if (a == "--only")
      only = next();
    else if (a == "--verbose")
      verbose = true;
    else {
      std::cerr << "usage: onnx_node_tests --data DIR --device D --expected FILE [--only S] "
                   "[--verbose]\n";
      return 2;
    }
  }
  if (!onnx::available()) {
    std::cout << "onnx_node_tests: this build has no ONNX support\n";
    return 77;
  }
  const std::vector<std::string> devs = devices();
  if (std::find(devs.begin(), devs.end(), device) == devs.end()) {
    std::cout << "onnx_node_tests: device " << device << " is not available here\n";
    return 77;
  }
  const fs::path root = fs::path(data) / "node";
  if (!fs::is_directory(root)) {
    std::cerr << "onnx_node_tests: no node tests under " << root << "\n";
    return 1;
  }
  const Expected expected = read_expected(expected_file, device);
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && e.path().filename().string().find(only) != std::string::npos)
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  int passed = 0, failed = 0, xfail = 0, xpass = 0;
  const int64_t validation_before = runtime_stats().validation_messages;
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    std::string why;
    const int64_t v0 = runtime_stats().validation_messages;
    try {
      why = run_case(dir, device);
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    if (why.empty() && runtime_stats().validation_messages != v0)
      why = "the Vulkan validation layer reported problems";
    const auto listed = expected.reason.find(name);
    if (why.empty()) {
      if (listed != expected.reason.end()) {
        xpass++;
        std::cout << "UNEXPECTED PASS " << name << " (listed: " << listed->second << ")\n";
      } else {
        passed++;
        if (verbose) std::cout << "ok " << name << "\n";
      }
    } else if (listed != expected.reason.end()) {
      xfail++;
      if (verbose) std::cout << "expected failure " << name << ": " << why << "\n";
    } else {
      failed++;
      std::cout << "FAIL " << name << ": " << why << "\n";
    }
  }
  std::cout << device << ": " << passed << " passed, " << failed << " failed, " << xfail
            << " expected failures";
  if (xpass) std::cout << ", " << xpass << " listed as expected failures but passed";
  std::cout << " (of " << cases.size() << " cases)\n";
  (void)validation_before;
  return failed == 0 && xpass == 0 ? 0 : 1;
}
