// onnx: reading .onnx and .pb files with Debian's libonnx (protobuf messages) into the
// importer's Graph. The only file that includes the protobuf headers.
#include <fcntl.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

namespace fs = std::filesystem;
using TP = ::onnx::TensorProto;

// Constants up to this many elements are also kept on the host, where shape arithmetic and
// attribute-like inputs (Reshape's shape, Slice's starts) read them without a device round trip.
constexpr int64_t kHostLimit = 4096;

// A file mapped read-only: the parser and the uploads read its pages directly, so a large raw
// initializer is copied once into its message and once to the device, and external data only
// to the device.
class MappedFile {
 public:
  MappedFile(const std::string& path, const std::string& what) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw FormatError(fmt::format("ONNX: cannot open {} '{}'", what, path));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw FormatError(fmt::format("ONNX: {} '{}' is not a readable file", what, path));
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) {
        ::close(fd_);
        throw FormatError(fmt::format("ONNX: cannot map {} '{}'", what, path));
      }
      data_ = static_cast<const char*>(p);
    }
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// The external data files one parse maps, each once.
using Files = std::map<std::string, std::unique_ptr<MappedFile>>;

int64_t checked_numel(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw FormatError(fmt::format("ONNX: {} has a negative dimension", what));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw FormatError(fmt::format("ONNX: {} has too many elements", what));
    n *= d;
  }
  return n;
}

// A tensor's element bytes: a view of the message's raw_data, or bytes we own (typed fields,
// external data).
struct Decoded {
  DType dtype;
  Shape shape;
  int64_t numel = 0;
  std::string owned;
  const char* data = nullptr;
  size_t nbytes = 0;
};

// A typed field's values converted to Dst's little-endian bytes; returns how many there were.
template <class Dst, class Src>
int pack(const Src& src, std::string& out) {
  out.resize(src.size() * sizeof(Dst));
  auto* p = reinterpret_cast<Dst*>(out.data());
  for (int i = 0; i < src.size(); i++) p[i] = static_cast<Dst>(src.Get(i));
  return src.size();
}

Decoded decode(const TP& t, const std::string& dir, Files& files) {
  const std::string what = fmt::format("tensor '{}'", t.name());
  Decoded d;
  d.dtype = dtype_of_onnx(t.data_type(), what);
  d.shape.assign(t.dims().begin(), t.dims().end());
  d.numel = checked_numel(d.shape, what);
  const size_t want = static_cast<size_t>(d.numel) * d.dtype.itemsize();
  if (t.data_location() == TP::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      try {
        if (kv.key() == "offset") offset = std::stoll(kv.value());
        if (kv.key() == "length") length = std::stoll(kv.value());
      } catch (const std::exception&) {
        throw FormatError(
            fmt::format("ONNX: {} has a bad external data {} '{}'", what, kv.key(), kv.value()));
      }
    }
    if (location.empty())
      throw FormatError(fmt::format("ONNX: {} is external but names no location", what));
    const std::string file = (fs::path(dir) / location).string();
    auto& mapped = files[file];
    if (!mapped) {
      if (!fs::exists(file))
        throw FormatError(
            fmt::format("ONNX: external data file '{}' of {} is missing", file, what));
      mapped = std::make_unique<MappedFile>(file, "external data file");
    }
    const int64_t size = static_cast<int64_t>(mapped->size());
    if (length < 0) length = size - offset;
    if (offset < 0 || offset + length > size || static_cast<size_t>(length) != want)
      throw FormatError(fmt::format(
          "ONNX: external data of {} ('{}', offset {}, length {}) does not hold its {} bytes "
          "(the file has {})",
          what, file, offset, length, want, size));
    d.data = mapped->data() + offset;
    d.nbytes = want;
    return d;
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != want)
      throw FormatError(fmt::format("ONNX: {} of shape [{}] holds {} bytes of raw data, not {}",
                                    what, fmt::join(d.shape, ", "), t.raw_data().size(), want));
    d.data = t.raw_data().data();
    d.nbytes = want;
    return d;
  } else {
    using S = ScalarType;
    int count = -1;
    switch (d.dtype.scalar_type()) {
      case S::float32:
        count = pack<float>(t.float_data(), d.owned);
        break;
      case S::float64:
        count = pack<double>(t.double_data(), d.owned);
        break;
      case S::int64:
        count = pack<int64_t>(t.int64_data(), d.owned);
        break;
      case S::uint64:
        count = pack<uint64_t>(t.uint64_data(), d.owned);
        break;
      case S::uint32:
        count = pack<uint32_t>(t.uint64_data(), d.owned);
        break;
      case S::int32:
        count = pack<int32_t>(t.int32_data(), d.owned);
        break;
      case S::int16:
        count = pack<int16_t>(t.int32_data(), d.owned);
        break;
      case S::uint16:
      case S::float16:
      case S::bfloat16:
        count = pack<uint16_t>(t.int32_data(), d.owned);
        break;
      case S::int8:
        count = pack<int8_t>(t.int32_data(), d.owned);
        break;
      case S::uint8:
      case S::bool_:
        count = pack<uint8_t>(t.int32_data(), d.owned);
        break;
      default:
        break;
    }
    if (count != d.numel)
      throw FormatError(fmt::format("ONNX: {} of shape [{}] holds {} values, not {}", what,
                                    fmt::join(d.shape, ", "), count, d.numel));
  }
  d.data = d.owned.data();
  d.nbytes = d.owned.size();
  return d;
}

// Initializers and Constant tensors: on the device, and on the host too when small.
Value to_value(const Decoded& d, const std::string& device, bool upload) {
  Value v;
  if (d.numel <= kHostLimit)
    v.host = std::make_shared<HostArray>(HostArray::from_bytes(d.data, d.dtype, d.shape));
  if (upload || !v.host) v.tensor = Tensor::from_bytes(d.data, d.nbytes, d.shape, d.dtype, device);
  return v;
}

// A subgraph's inputs and outputs may leave their type out (`typed` false): float32, no shape.
ValueInfo value_info(const ::onnx::ValueInfoProto& vi, bool typed = true) {
  ValueInfo out;
  out.name = vi.name();
  out.dtype = dtypes::float32;
  if (!typed && !vi.has_type()) return out;
  if (!vi.type().has_tensor_type())
    throw Error(
        fmt::format("ONNX: value '{}' is not a tensor (sequences, maps and optionals are "
                    "not supported)",
                    vi.name()));
  const auto& tt = vi.type().tensor_type();
  out.dtype = dtype_of_onnx(tt.elem_type(), fmt::format("value '{}'", vi.name()));
  if (tt.has_shape()) {
    for (const auto& dim : tt.shape().dim()) {
      if (dim.has_dim_value()) {
        out.shape.push_back(dim.dim_value());
        out.dim_names.emplace_back();
      } else {
        out.shape.push_back(-1);
        out.dim_names.push_back(dim.has_dim_param() ? dim.dim_param() : std::string());
      }
    }
  }
  return out;
}

void parse_graph(const ::onnx::GraphProto& graph, Graph& g, const std::string& device, bool sub,
                 Files& files);

Attribute attribute(const ::onnx::AttributeProto& a, const Graph& owner, const std::string& device,
                    Files& files) {
  const std::string& dir = owner.dir;
  Attribute out;
  using A = ::onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT:
      out.kind = Attribute::Kind::Float;
      out.f = a.f();
      break;
    case A::INT:
      out.kind = Attribute::Kind::Int;
      out.i = a.i();
      break;
    case A::STRING:
      out.kind = Attribute::Kind::String;
      out.s = a.s();
      break;
    case A::FLOATS:
      out.kind = Attribute::Kind::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      out.kind = Attribute::Kind::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      out.kind = Attribute::Kind::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case A::TENSOR: {
      out.kind = Attribute::Kind::Tensor;
      const Decoded d = decode(a.t(), dir, files);
      out.tensor = std::make_shared<HostArray>(HostArray::from_bytes(d.data, d.dtype, d.shape));
      break;
    }
    case A::GRAPH: {
      out.kind = Attribute::Kind::Graph;
      auto sub = std::make_shared<Graph>();
      sub->dir = owner.dir;
      sub->opset = owner.opset;
      parse_graph(a.g(), *sub, device, true, files);
      out.graph = std::move(sub);
      break;
    }
    default:
      out.kind = Attribute::Kind::Other;
      break;
  }
  return out;
}

void parse_graph(const ::onnx::GraphProto& graph, Graph& g, const std::string& device, bool sub,
                 Files& files) {
  for (const auto& init : graph.initializer()) {
    const Decoded d = decode(init, g.dir, files);
    g.constants[init.name()] = to_value(d, device, true);
  }
  if (graph.sparse_initializer_size() > 0)
    throw Error(fmt::format("ONNX: graph '{}' has sparse initializers, which are not supported",
                            graph.name()));
  for (const auto& in : graph.input()) {
    if (g.constants.count(in.name())) continue;
    g.inputs.push_back(value_info(in, !sub));
    if (!in.type().tensor_type().has_shape()) g.unranked.insert(in.name());
  }
  for (const auto& out : graph.output()) g.outputs.push_back(value_info(out, !sub));

  g.nodes.reserve(graph.node_size());
  for (const auto& n : graph.node()) {
    Node node;
    node.op_type = n.op_type();
    node.name = n.name();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      if (!a.ref_attr_name().empty())
        throw Error(
            fmt::format("ONNX: {} uses a reference attribute ('{}'), only valid inside "
                        "functions",
                        node.label(), a.name()));
      node.attrs[a.name()] = attribute(a, g, device, files);
    }
    g.nodes.push_back(std::move(node));
  }
}

}  // namespace

Graph parse_model(const std::string& path, const std::string& device) {
  const MappedFile bytes(path, "model file");
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw FormatError(
        fmt::format("ONNX: '{}' is not a valid ONNX model (malformed or truncated "
                    "protobuf)",
                    path));
  if (!model.has_graph())
    throw FormatError(fmt::format("ONNX: '{}' has no graph (truncated file?)", path));
  Graph g;
  g.dir = fs::path(path).parent_path().string();
  g.opset = -1;
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = op.version();
  if (g.opset < 0) {
    if (model.opset_import_size() == 0)
      throw FormatError(fmt::format("ONNX: '{}' imports no opset (truncated file?)", path));
    g.opset = 1;  // only other domains imported: default-domain ops are then unversioned
  }

  Files files;
  parse_graph(model.graph(), g, device, false, files);
  return g;
}

Value parse_tensor_file(const std::string& path, const std::string& device) {
  const MappedFile bytes(path, "tensor file");
  TP t;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw FormatError(fmt::format("ONNX: '{}' is not a serialized TensorProto", path));
  if (!t.has_data_type() || t.data_type() == TP::UNDEFINED)
    throw FormatError(
        fmt::format("ONNX: '{}' is not a serialized TensorProto (no data type)", path));
  Files files;
  const Decoded d = decode(t, fs::path(path).parent_path().string(), files);
  Value v;
  v.tensor = Tensor::from_bytes(d.data, d.nbytes, d.shape, d.dtype, device);
  return v;
}

DType dtype_of_onnx(int32_t elem_type, const std::string& where) {
  switch (elem_type) {
    case TP::FLOAT:
      return dtypes::float32;
    case TP::DOUBLE:
      return dtypes::float64;
    case TP::FLOAT16:
      return dtypes::float16;
    case TP::BFLOAT16:
      return dtypes::bfloat16;
    case TP::INT8:
      return dtypes::int8;
    case TP::INT16:
      return dtypes::int16;
    case TP::INT32:
      return dtypes::int32;
    case TP::INT64:
      return dtypes::int64;
    case TP::UINT8:
      return dtypes::uint8;
    case TP::UINT16:
      return dtypes::uint16;
    case TP::UINT32:
      return dtypes::uint32;
    case TP::UINT64:
      return dtypes::uint64;
    case TP::BOOL:
      return dtypes::bool_;
    default:
      break;
  }
  std::string name = ::onnx::TensorProto_DataType_IsValid(elem_type)
                         ? ::onnx::TensorProto_DataType_Name(elem_type)
                         : fmt::format("element type {}", elem_type);
  throw Error(fmt::format("ONNX: {} has dtype {}, which vkgrad does not support", where, name));
}

}  // namespace vkgrad::onnx
