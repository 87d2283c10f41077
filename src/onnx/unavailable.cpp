// onnx: the importer in a build without libonnx (VKGRAD_ONNX=OFF or the library missing):
// every entry point says so.
#include <vkgrad/onnx.hpp>

namespace vkgrad::onnx {
namespace {
[[noreturn]] void missing() {
  throw Error(
      "ONNX: this build of vkgrad has no ONNX support (configure with VKGRAD_ONNX=ON and "
      "Debian's libonnx-dev and libprotobuf-dev installed)");
}
}  // namespace

struct Model::Impl {};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;
const std::vector<ValueInfo>& Model::inputs() const { missing(); }
const std::vector<ValueInfo>& Model::outputs() const { missing(); }
const std::string& Model::device() const { missing(); }
int64_t Model::opset() const { missing(); }
int64_t Model::replays() const { missing(); }
int64_t Model::captures() const { missing(); }
std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>&) { missing(); }
Model load(const std::string&, const std::string&) { missing(); }
Tensor load_tensor(const std::string&, const std::string&) { missing(); }
bool available() { return false; }

}  // namespace vkgrad::onnx
