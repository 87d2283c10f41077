// Public: ONNX models in. load() parses an .onnx file (with Debian's libonnx/protobuf), checks
// that vkgrad supports every node at the model's opset, uploads the initializers and returns a
// Model whose run() builds the lazy Tensor graph for the given inputs and realizes the outputs.
// Calls with the same input shapes replay one Jit capture; a dynamic batch dimension becomes a
// Variable, so one capture serves every batch size up to a bound (VKGRAD_ONNX_MAX_DIM, 16), and
// a size called three times gets a capture of its own with the size compiled in (faster
// kernels). Depends on tensor.hpp only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <vkgrad/tensor.hpp>

namespace vkgrad::onnx {

// A graph input or output: its dtype and shape, with -1 for a dynamic dimension and that
// dimension's symbolic name in dim_names (empty strings where the size is fixed, or where the
// file names no symbol).
struct ValueInfo {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<std::string> dim_names;
};

class Model {
 public:
  struct Impl;

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  // Graph inputs that have no initializer, and the graph outputs, in graph order.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  const std::string& device() const;
  int64_t opset() const;  // the default domain's opset the file imports

  // Every graph output by name, realized on the model's device, in tensors of their own (a later
  // call does not overwrite them). Inputs on another device are moved; a missing or unknown
  // name or a wrong shape is a ShapeError, a wrong dtype a DTypeError (each naming the input).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  // Calls served by replaying a capture, and captures made (see Jit).
  int64_t replays() const;
  int64_t captures() const;

  explicit Model(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// Parses `path` (external data files are looked up beside it) and uploads the initializers to
// `device` (empty: the default device). FormatError for a malformed, truncated or unreadable
// file or a missing external data file; Error naming the op type, the node's name and the opset
// for anything vkgrad does not support.
Model load(const std::string& path, const std::string& device = "");

// One serialized TensorProto (the .pb files of ONNX test data sets), on `device`.
Tensor load_tensor(const std::string& path, const std::string& device = "");

// Whether this build of vkgrad has ONNX support (VKGRAD_ONNX=ON and libonnx found); without it
// load() and load_tensor() throw Error saying so.
bool available();

}  // namespace vkgrad::onnx
