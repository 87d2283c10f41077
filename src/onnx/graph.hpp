// onnx: the importer's own view of a model, free of protobuf: nodes with decoded attributes,
// host arrays for constants the importer folds, and the values the interpreter passes between
// nodes. parse.cpp fills it from the file; model.cpp runs it; ops_*.cpp implement the operators.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <vkgrad/onnx.hpp>
#include <vkgrad/tensor.hpp>

namespace vkgrad::onnx {

// A small array known on the host: constants, shapes and everything computed only from them.
// Integer and bool dtypes hold `ints`, float dtypes hold `floats`.
struct HostArray {
  DType dtype = dtypes::float32;
  Shape shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  int64_t numel() const;
  bool is_float() const { return dtype.is_float(); }
  double at(int64_t i) const { return is_float() ? floats[i] : static_cast<double>(ints[i]); }
  int64_t int_at(int64_t i) const { return is_float() ? static_cast<int64_t>(floats[i]) : ints[i]; }
  std::vector<int64_t> to_ints() const;
  std::vector<double> to_floats() const;
  // The same values stored as `dt` (C conversion semantics; bool is != 0).
  HostArray cast(DType dt) const;
  Tensor to_tensor(const std::string& device) const;
  std::vector<uint8_t> bytes() const;  // little-endian elements of `dtype`

  static HostArray of_ints(std::vector<int64_t> v, Shape shape, DType dt = dtypes::int64);
  static HostArray of_floats(std::vector<double> v, Shape shape, DType dt = dtypes::float32);
  // From little-endian element bytes of `dt`.
  static HostArray from_bytes(const void* data, DType dt, Shape shape);
};

struct Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Other };
  Kind kind = Kind::Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const HostArray> tensor;
  std::shared_ptr<const Graph> graph;  // a subgraph (If's branches, Loop's and Scan's body)
};

struct Node {
  std::string op_type, name, domain;
  std::vector<std::string> inputs, outputs;  // "" marks an omitted optional input
  std::map<std::string, Attribute> attrs;
  std::string label() const;  // "Conv 'conv1'" for messages
};

// A value flowing between nodes: a device tensor, a host array, or both. While the importer
// folds constants, a graph input of fixed shape is a placeholder: its shape and dtype are known,
// its values are not.
struct Value {
  Tensor tensor;                    // undefined until needed when `host` is set
  std::shared_ptr<HostArray> host;  // set for constants and host-folded results
  std::optional<std::pair<Shape, DType>> placeholder;
  DType dtype() const;
  Shape shape() const;
};

struct Graph {
  int64_t opset = 0;
  std::string dir;  // the model file's folder (external data)
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs, outputs;
  std::set<std::string> unranked;          // inputs whose file gives no shape at all
  std::map<std::string, Value> constants;  // initializers, Constant nodes, folded values
};

// Runs a subgraph with its inputs bound to `inputs` (its outer names resolve in the calling
// node's scope); returns its outputs in order.
using SubgraphRunner = std::function<std::vector<Value>(const Graph&, const std::vector<Value>&)>;

// Thrown while the importer folds constants, by an op that needs a value known only at run time.
struct NotOnHost {};
// Thrown when a graph built on symbolic sizes reads such a size on the host (Shape, Size): the
// model is then built on concrete sizes.
struct NeedsConcrete {};

// What an operator sees: its node, its inputs, the opset and the device.
class OpContext {
 public:
  OpContext(const Node& node, std::vector<const Value*> inputs, int64_t opset,
            const std::string& device, bool host_only, SubgraphRunner subgraph = {})
      : node_(node),
        inputs_(std::move(inputs)),
        opset_(opset),
        device_(device),
        host_only_(host_only),
        subgraph_(std::move(subgraph)) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const std::string& device() const { return device_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Value& value(size_t i) const;
  // Input i as a device tensor (a host array is uploaded).
  Tensor in(size_t i) const;
  // Input i as a host array. A device tensor is read back (a host read, which pins the model's
  // Jit captures to this input's values).
  const HostArray& host(size_t i) const;
  bool is_host(size_t i) const { return has(i) && value(i).host != nullptr; }
  // A value the op computed (a subgraph's output) read on the host; the model then runs
  // without Jit replay.
  HostArray host_of(const Value& v) const;
  std::vector<Value> run_subgraph(const Graph& g, const std::vector<Value>& inputs) const;
  bool read_computed() const { return read_computed_; }
  // True while the importer folds constants: an op that cannot work on the host throws.

  bool has_attr(const std::string& name) const { return node_.attrs.count(name) != 0; }
  int64_t attr_i(const std::string& name, int64_t dflt) const;
  double attr_f(const std::string& name, double dflt) const;
  std::string attr_s(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> dflt = {}) const;
  std::vector<double> attr_floats(const std::string& name, std::vector<double> dflt = {}) const;
  const Attribute* attr(const std::string& name) const;

  // Error naming this node and the opset.
  [[noreturn]] void fail(const std::string& what) const;
  // The inputs that were device tensors read back during this op.
  const std::vector<size_t>& read_back() const { return read_indices_; }

 private:
  const Node& node_;
  std::vector<const Value*> inputs_;
  int64_t opset_;
  const std::string& device_;
  bool host_only_;
  mutable std::vector<std::shared_ptr<HostArray>> read_back_;
  mutable std::vector<size_t> read_indices_;
  SubgraphRunner subgraph_;
  mutable bool read_computed_ = false;
};

using OpOutputs = std::vector<Value>;
using OpFn = std::function<OpOutputs(OpContext&)>;

struct OpDef {
  OpFn run;
  // Host implementation, used when every input is known on the host (shape arithmetic).
  OpFn host;
  int64_t min_opset = 1;
  bool pure = true;  // false for ops whose result is not a function of their inputs (random)
};

using OpRegistry = std::map<std::string, OpDef>;
const OpRegistry& registry();

void register_math_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_loss_ops(OpRegistry& r);
void register_quant_ops(OpRegistry& r);
void register_signal_ops(OpRegistry& r);
void register_host_ops(OpRegistry& r);
void register_rnn_ops(OpRegistry& r);
void register_control_ops(OpRegistry& r);

// Conv over any number of spatial dims with the node's strides, pads (or auto_pad), dilations
// and group (ops_nn.cpp); quantized convolutions reuse it.
Tensor conv_nd(const OpContext& c, Tensor x, Tensor w, std::optional<Tensor> bias);

// Shorthands for operator implementations.
inline Value tensor_value(Tensor t) {
  Value v;
  v.tensor = std::move(t);
  return v;
}
inline Value host_value(HostArray h) {
  Value v;
  v.host = std::make_shared<HostArray>(std::move(h));
  return v;
}
// The permutation that moves `axis` of a rank-`rank` tensor last, and its inverse.
struct AxisLast {
  std::vector<int> order, back;
};
AxisLast axis_last(int rank, int axis);

// Normalizes a possibly negative axis for rank `rank`; ShapeError naming `what` when out of range.
int norm_axis(int64_t axis, int64_t rank, const std::string& what);

// The vkgrad dtype of an ONNX TensorProto element type; Error for unsupported types.
DType dtype_of_onnx(int32_t elem_type, const std::string& where);

Graph parse_model(const std::string& path, const std::string& device);
Value parse_tensor_file(const std::string& path, const std::string& device);

}  // namespace vkgrad::onnx
