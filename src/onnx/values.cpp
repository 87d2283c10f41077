// onnx: host arrays, values and the operator context (what every operator implementation uses).
#include <fmt/format.h>

#include <cstring>
#include <type_traits>

#include "ir/scalar.hpp"
#include "onnx/graph.hpp"

namespace vkgrad::onnx {

int64_t HostArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> HostArray::to_ints() const {
  if (!is_float()) return ints;
  std::vector<int64_t> out(floats.size());
  for (size_t i = 0; i < floats.size(); i++) out[i] = static_cast<int64_t>(floats[i]);
  return out;
}

std::vector<double> HostArray::to_floats() const {
  if (is_float()) return floats;
  std::vector<double> out(ints.size());
  for (size_t i = 0; i < ints.size(); i++)
    out[i] = dtype.is_unsigned() && dtype.scalar_type() == ScalarType::uint64
                 ? static_cast<double>(static_cast<uint64_t>(ints[i]))
                 : static_cast<double>(ints[i]);
  return out;
}

HostArray HostArray::cast(DType dt) const {
  HostArray out;
  out.dtype = dt;
  out.shape = shape;
  if (dt.is_float()) {
    out.floats = to_floats();
    for (double& v : out.floats) v = round_float(dt, v);
  } else if (dt.is_bool()) {
    out.ints.resize(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); i++) out.ints[i] = at(i) != 0;
  } else {
    out.ints = to_ints();
    for (int64_t& v : out.ints) v = wrap_int(dt, v);
  }
  return out;
}

Tensor HostArray::to_tensor(const std::string& device) const {
  const std::vector<uint8_t> b = bytes();
  return Tensor::from_bytes(b.data(), b.size(), shape, dtype, device);
}

namespace {

// Calls f with a value of the host type that holds one element of `dt` (float16 and bfloat16:
// uint16_t, their bits).
template <class F>
void with_host_type(DType dt, F&& f) {
  using S = ScalarType;
  switch (dt.scalar_type()) {
    case S::float32:
      return f(float{});
    case S::float64:
      return f(double{});
    case S::float16:
    case S::bfloat16:
    case S::uint16:
      return f(uint16_t{});
    case S::bool_:
    case S::uint8:
      return f(uint8_t{});
    case S::int8:
      return f(int8_t{});
    case S::int16:
      return f(int16_t{});
    case S::int32:
      return f(int32_t{});
    case S::uint32:
      return f(uint32_t{});
    case S::int64:
      return f(int64_t{});
    case S::uint64:
      return f(uint64_t{});
    default:
      throw InternalError("onnx: host array of dtype " + dt.name());
  }
}

}  // namespace

std::vector<uint8_t> HostArray::bytes() const {
  const int64_t n = numel();
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * dtype.itemsize());
  with_host_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = reinterpret_cast<T*>(bytes.data());
    for (int64_t i = 0; i < n; i++) {
      if constexpr (std::is_floating_point_v<T>)
        p[i] = static_cast<T>(floats[i]);
      else if (dtype == dtypes::float16)
        p[i] = float_to_half_bits(static_cast<float>(floats[i]));
      else if (dtype == dtypes::bfloat16)
        p[i] = float_to_bf16_bits(static_cast<float>(floats[i]));
      else
        p[i] = static_cast<T>(ints[i]);
    }
  });
  return bytes;
}

HostArray HostArray::of_ints(std::vector<int64_t> v, Shape shape, DType dt) {
  HostArray h;
  h.dtype = dt;
  h.shape = std::move(shape);
  h.ints = std::move(v);
  return h;
}

HostArray HostArray::of_floats(std::vector<double> v, Shape shape, DType dt) {
  HostArray h;
  h.dtype = dt;
  h.shape = std::move(shape);
  h.floats = std::move(v);
  return h;
}

HostArray HostArray::from_bytes(const void* data, DType dt, Shape shape) {
  HostArray h;
  h.dtype = dt;
  h.shape = std::move(shape);
  const int64_t n = h.numel();
  with_host_type(dt, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> tmp(static_cast<size_t>(n));
    if (n) std::memcpy(tmp.data(), data, static_cast<size_t>(n) * sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      h.floats.assign(tmp.begin(), tmp.end());
    } else if (dt.is_float()) {  // float16 / bfloat16 bits
      for (T b : tmp)
        h.floats.push_back(dt == dtypes::float16 ? half_bits_to_float(b) : bf16_bits_to_float(b));
    } else {
      for (T v : tmp) h.ints.push_back(static_cast<int64_t>(v));  // uint64: its bits
    }
  });
  return h;
}

DType Value::dtype() const {
  return host ? host->dtype : placeholder ? placeholder->second : tensor.dtype();
}
Shape Value::shape() const {
  return host ? host->shape : placeholder ? placeholder->first : tensor.shape();
}

std::string Node::label() const {
  return name.empty() ? op_type : fmt::format("{} '{}'", op_type, name);
}

const Value& OpContext::value(size_t i) const {
  if (!has(i)) fail(fmt::format("input {} is required", i));
  return *inputs_[i];
}

Tensor OpContext::in(size_t i) const {
  const Value& v = value(i);
  if (v.tensor.defined()) return v.tensor;
  if (!v.host) throw NotOnHost();  // a placeholder
  return v.host->to_tensor(device_);
}

const HostArray& OpContext::host(size_t i) const {
  const Value& v = value(i);
  if (v.host) return *v.host;
  if (host_only_ || !v.tensor.defined()) throw NotOnHost();
  read_indices_.push_back(i);
  const Tensor& t = v.tensor;
  const std::vector<uint8_t> bytes = t.to_bytes();
  read_back_.push_back(
      std::make_shared<HostArray>(HostArray::from_bytes(bytes.data(), t.dtype(), t.shape())));
  return *read_back_.back();
}

HostArray OpContext::host_of(const Value& v) const {
  if (v.host) return *v.host;
  if (host_only_ || !v.tensor.defined()) throw NotOnHost();
  read_computed_ = true;
  const std::vector<uint8_t> bytes = v.tensor.to_bytes();
  return HostArray::from_bytes(bytes.data(), v.tensor.dtype(), v.tensor.shape());
}

std::vector<Value> OpContext::run_subgraph(const Graph& g, const std::vector<Value>& inputs) const {
  if (!subgraph_) throw NotOnHost();  // folding: subgraphs run with the model
  return subgraph_(g, inputs);
}

const Attribute* OpContext::attr(const std::string& name) const {
  auto it = node_.attrs.find(name);
  return it == node_.attrs.end() ? nullptr : &it->second;
}

int64_t OpContext::attr_i(const std::string& name, int64_t dflt) const {
  const Attribute* a = attr(name);
  if (!a) return dflt;
  if (a->kind != Attribute::Kind::Int) fail(fmt::format("attribute '{}' must be an int", name));
  return a->i;
}

double OpContext::attr_f(const std::string& name, double dflt) const {
  const Attribute* a = attr(name);
  if (!a) return dflt;
  if (a->kind == Attribute::Kind::Int) return static_cast<double>(a->i);
  if (a->kind != Attribute::Kind::Float) fail(fmt::format("attribute '{}' must be a float", name));
  return a->f;
}

std::string OpContext::attr_s(const std::string& name, const std::string& dflt) const {
  const Attribute* a = attr(name);
  if (!a) return dflt;
  if (a->kind != Attribute::Kind::String)
    fail(fmt::format("attribute '{}' must be a string", name));
  return a->s;
}

std::vector<int64_t> OpContext::attr_ints(const std::string& name,
                                          std::vector<int64_t> dflt) const {
  const Attribute* a = attr(name);
  if (!a) return dflt;
  if (a->kind != Attribute::Kind::Ints) fail(fmt::format("attribute '{}' must be ints", name));
  return a->ints;
}

std::vector<double> OpContext::attr_floats(const std::string& name,
                                           std::vector<double> dflt) const {
  const Attribute* a = attr(name);
  if (!a) return dflt;
  if (a->kind != Attribute::Kind::Floats) fail(fmt::format("attribute '{}' must be floats", name));
  return a->floats;
}

void OpContext::fail(const std::string& what) const {
  throw Error(fmt::format("ONNX: {} (opset {}): {}", node_.label(), opset_, what));
}

AxisLast axis_last(int rank, int axis) {
  AxisLast a;
  for (int i = 0; i < rank; i++)
    if (i != axis) a.order.push_back(i);
  a.order.push_back(axis);
  a.back.resize(static_cast<size_t>(rank));
  for (int i = 0; i < rank; i++) a.back[static_cast<size_t>(a.order[static_cast<size_t>(i)])] = i;
  return a;
}

int norm_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw ShapeError(
        fmt::format("ONNX: {}: axis {} is out of range for rank {}", what, axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace vkgrad::onnx
