// tensor: the core of Tensor — creation from host data and constants, inspection, realize and
// copies out, casts, broadcasting and promotion, the elementwise and reduction primitives, and
// the movement ops (zero-copy views). Composite operations live in ops_*.cpp beside this file.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <ostream>
#include <sstream>

#include "engine/realize.hpp"
#include "ir/scalar.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad {

// ---- helpers ------------------------------------------------------------------------------------
namespace tensor {

Tensor make(UOp uop, Shape shape, DType dtype, std::string device, bool weak) {
  auto impl = std::make_shared<Tensor::Impl>();
  impl->uop = std::move(uop);
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  impl->device = std::move(device);
  impl->weak = weak;
  return Tensor(std::move(impl));
}

const UOp& uop(const Tensor& t) { return t.impl()->uop; }

const Shape& sym_shape(const Tensor& t) {
  return t.impl()->sym.empty() ? t.shape() : t.impl()->sym;
}

Tensor with_sym(Tensor t, Shape sym) {
  if (lazy::has_sym(sym)) t.impl()->sym = std::move(sym);
  return t;
}

Shape broadcast_sym(std::span<const Tensor> ts, const Shape& shape) {
  Shape out = shape;
  bool any = false;
  for (const Tensor& t : ts) {
    const Shape& s = t.impl()->sym;
    const size_t lead = shape.size() - s.size();
    for (size_t i = 0; i < s.size(); ++i)
      if (lazy::is_sym(s[i])) out[lead + i] = s[i], any = true;
  }
  return any ? out : Shape{};
}

Tensor dim_value(int64_t d, int64_t value, DType dtype, const std::string& device) {
  return make(lazy::dim_uop(d).bind(value).cast(dtype), {}, dtype, device);
}

Tensor count_of(const Tensor& t, const std::vector<int>& axes, DType dtype) {
  double fixed = 1;
  std::optional<Tensor> vars;
  for (int a : axes) {
    const int64_t d = sym_shape(t)[a];
    if (!lazy::is_sym(d)) {
      fixed *= static_cast<double>(d);
      continue;
    }
    const Tensor value = dim_value(d, t.shape()[a], dtype, t.device());
    vars = vars ? *vars * value : value;
  }
  const Tensor f = Tensor::scalar(fixed, dtype, t.device());
  return vars ? *vars * f : f;
}

std::string resolve_device(const std::string& device) { return engine::canonical_device(device); }

std::string shape_str(const Shape& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ", "));
}

int64_t checked_numel(const Shape& shape, DType dtype, const char* op) {
  int64_t n = 1;
  bool empty = false;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0)
      throw ShapeError(fmt::format("{}: negative dimension in shape {}", op, shape_str(shape)));
    if (d == 0)
      empty = true;
    else
      overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  if (overflow)
    throw ShapeError(
        fmt::format("{}: shape {} has more elements than int64 can count", op, shape_str(shape)));
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype.itemsize()), &bytes))
    throw ShapeError(
        fmt::format("{}: shape {} of {} ({} elements) needs more bytes than int64 can count", op,
                    shape_str(shape), dtype.name(), n));
  return empty ? 0 : n;
}

int normalize_axis(int axis, const Shape& shape, const char* op) {
  const int ndim = static_cast<int>(shape.size());
  const int n = std::max(ndim, 1);
  if (axis < -n || axis >= n)
    throw ShapeError(fmt::format("{}: axis {} is out of range for shape {} ({} dimensions)", op,
                                 axis, shape_str(shape), ndim));
  return axis < 0 ? axis + n : axis;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, const Shape& shape, const char* op) {
  std::vector<int> out;
  for (int a : axes) {
    const int n = normalize_axis(a, shape, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw ShapeError(fmt::format("{}: axis {} appears twice in ({}) for shape {}", op, a,
                                   fmt::join(axes, ", "), shape_str(shape)));
    out.push_back(n);
  }
  return out;
}

Tensor constant(ConstValue v, DType dtype, const Shape& shape, const std::string& device) {
  UOp c = UOp::const_(dtype, v);
  Tensor t = make(c, {}, dtype, device);
  if (shape.empty()) return t;
  return t.reshape(Shape(shape.size(), 1)).expand(shape);
}

Tensor iota(int64_t n, DType dtype, const std::string& device) {
  if (!dtype.is_int()) throw DTypeError("iota: needs an integer dtype, got " + dtype.name());
  return make(lazy::iota(n, dtype), {n}, dtype, resolve_device(device));
}

Tensor alu(Ops op, std::span<const Tensor> srcs, DType out) {
  std::vector<UOp> src;
  for (const Tensor& s : srcs) src.push_back(uop(s));
  const Tensor& a = srcs[0];
  bool weak = true;
  for (const Tensor& s : srcs) weak = weak && s.is_weak();
  Shape sym;
  for (const Tensor& s : srcs)
    if (!s.impl()->sym.empty()) sym = s.impl()->sym;
  return with_sym(make(UOp::make(op, out, std::move(src)), a.shape(), out, a.device(), weak),
                  std::move(sym));
}
Tensor alu(Ops op, const Tensor& a, DType out) {
  return alu(op, std::span<const Tensor>(&a, 1), out);
}
Tensor alu(Ops op, const Tensor& a, const Tensor& b, DType out) {
  const Tensor s[] = {a, b};
  return alu(op, s, out);
}

Tensor reduce(const Tensor& x, Ops op, const std::vector<int>& axes, const char* name) {
  (void)name;
  if (axes.empty()) return x;
  // One REDUCE_AXIS however large: the scheduler decides how it is cut into kernels
  // (sched/split_reduce.hpp), and autograd sees the reduction as written.
  Shape out = x.shape(), sym = x.impl()->sym;
  std::vector<int64_t> ax;
  for (int a : axes) {
    out[a] = 1;
    if (!sym.empty()) sym[a] = 1;
    ax.push_back(a);
  }
  std::sort(ax.begin(), ax.end());
  return with_sym(make(lazy::reduce(uop(x), op, ax), std::move(out), x.dtype(), x.device()),
                  std::move(sym));
}

Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(fmt::format("{}: shapes {} and {} do not broadcast (dimension {}: {} vs {})",
                                   op, shape_str(a), shape_str(b), i, da, db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape, const char* op, const Shape& sym) {
  // Symbolic axes compare as their variables: an axis of 1 broadcast to a variable bound to 1
  // is still expanded (other values of the variable need it).
  const bool to_sym = lazy::has_sym(sym);
  if (t.shape() == shape && (!to_sym || sym_shape(t) == sym)) return t;
  if (t.shape().size() > shape.size())
    throw ShapeError(
        fmt::format("{}: cannot broadcast {} to {}", op, shape_str(t.shape()), shape_str(shape)));
  Shape padded(shape.size() - t.shape().size(), 1);
  padded.insert(padded.end(), t.shape().begin(), t.shape().end());
  Shape padded_sym(shape.size() - t.shape().size(), 1);
  padded_sym.insert(padded_sym.end(), sym_shape(t).begin(), sym_shape(t).end());
  const Tensor base = reshape_sym(t, padded_sym);
  if (!to_sym) return base.expand(shape);
  Shape target = sym;  // the base's own symbolic axes stay (a broadcast leaves them alone)
  for (size_t i = 0; i < shape.size(); ++i)
    if (lazy::is_sym(padded_sym[i]) || (padded[i] == shape[i] && !lazy::is_sym(sym[i])))
      target[i] = padded_sym[i];
  return expand_to(base, shape, std::move(target));
}

Tensor expand_to(const Tensor& base, Shape shape, Shape sym) {
  if (shape == base.shape() && sym == sym_shape(base)) return base;
  UOp node = lazy::expand(base.impl()->uop, lazy::has_sym(sym) ? sym : shape);
  return with_sym(
      make(std::move(node), std::move(shape), base.dtype(), base.device(), base.is_weak()),
      std::move(sym));
}

DType promote(const Tensor& a, const Tensor& b) {
  auto adopt = [](DType weak, DType strong) {
    if (weak.is_float() && !strong.is_float()) return dtypes::default_float;
    if (weak.is_int() && strong.is_bool()) return dtypes::default_int;
    return strong;
  };
  if (a.is_weak() && !b.is_weak()) return adopt(a.dtype(), b.dtype());
  if (b.is_weak() && !a.is_weak()) return adopt(b.dtype(), a.dtype());
  return dtypes::least_upper_dtype(a.dtype(), b.dtype());
}

namespace {
// The device two operands share; a weak scalar goes where the other operand is.
std::string common_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() == b.device()) return a.device();
  if (a.is_weak()) return b.device();
  if (b.is_weak()) return a.device();
  throw DeviceError(
      fmt::format("{}: operands are on different devices ({} and {})", op, a.device(), b.device()));
}

Tensor on_device(const Tensor& t, const std::string& device) {
  if (t.device() == device) return t;
  auto impl = std::make_shared<Tensor::Impl>(*t.impl());
  impl->device = device;
  return Tensor(std::move(impl));
}
}  // namespace

std::pair<Tensor, Tensor> binary_operands(const Tensor& a, const Tensor& b, const char* op) {
  const DType dt = promote(a, b);
  const Shape shape = broadcast_shape(a.shape(), b.shape(), op);
  checked_numel(shape, dt, op);
  const std::string dev = common_device(a, b, op);
  const Tensor both[] = {a, b};
  const Shape sym = broadcast_sym(both, shape);
  Tensor x = broadcast_to(on_device(a.cast(dt), dev), shape, op, sym);
  Tensor y = broadcast_to(on_device(b.cast(dt), dev), shape, op, sym);
  // Keep weakness only when both sides are literals.
  if (!(a.is_weak() && b.is_weak())) {
    if (x.is_weak()) x.impl()->weak = false;
    if (y.is_weak()) y.impl()->weak = false;
  }
  return {x, y};
}

std::vector<int> reduce_axes(const Tensor& t, const std::vector<int>& axes, const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    out.resize(t.ndim());
    std::iota(out.begin(), out.end(), 0);
  } else {
    out = normalize_axes(axes, t.shape(), op);
    if (t.ndim() == 0) out.clear();
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tensor squeeze_axes(const Tensor& t, const std::vector<int>& axes) {
  if (axes.empty()) return t;
  Shape s;
  const Shape& sym = sym_shape(t);
  for (int i = 0; i < t.ndim(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) s.push_back(sym[i]);
  return reshape_sym(t, s);
}

}  // namespace tensor

using tensor::make;
using tensor::shape_str;

// ---- creation -----------------------------------------------------------------------------------
namespace {
Tensor weak_scalar(ConstValue v, DType dt) {
  Tensor t = make(UOp::const_(dt, v), {}, dt, engine::canonical_device(""), true);
  t.impl()->literal = v;
  return t;
}

DType value_dtype(std::optional<DType> dtype, DType natural) { return dtype ? *dtype : natural; }
}  // namespace

Tensor::Tensor(double v) : Tensor(weak_scalar(v, dtypes::default_float)) {}
Tensor::Tensor(int v) : Tensor(weak_scalar(int64_t{v}, dtypes::default_int)) {}
Tensor::Tensor(int64_t v) : Tensor(weak_scalar(v, dtypes::default_int)) {}
Tensor Tensor::bool_scalar(bool v) { return weak_scalar(v, dtypes::bool_); }

const std::shared_ptr<Tensor::Impl>& Tensor::impl() const {
  if (!impl_) throw Error("Tensor: use of an empty (default-constructed) tensor");
  return impl_;
}

Tensor Tensor::scalar(double v, std::optional<DType> dtype, const std::string& device) {
  return full({}, v, dtype, device);
}

Tensor Tensor::from_host(const void* data, size_t count, DType host_dtype, bool raw16, Shape shape,
                         std::optional<DType> dtype, const std::string& device) {
  const DType dt = dtype ? *dtype : host_dtype;
  const bool ok = dt == host_dtype || (raw16 && (dt == dtypes::float16 || dt == dtypes::bfloat16));
  if (!ok)
    throw DTypeError(fmt::format("from_vector: host data of {} cannot fill a tensor of {}",
                                 host_dtype.name(), dt.name()));
  const int64_t n = tensor::checked_numel(shape, dt, "from_vector");
  if (static_cast<int64_t>(count) != n)
    throw ShapeError(fmt::format("from_vector: {} values do not fill shape {} ({} elements)", count,
                                 shape_str(shape), n));
  return from_bytes(data, count * dt.itemsize(), std::move(shape), dt, device);
}

Tensor Tensor::from_bytes(const void* data, size_t nbytes, Shape shape, DType dtype,
                          const std::string& device) {
  const int64_t n = tensor::checked_numel(shape, dtype, "from_bytes");
  const std::string dev = engine::canonical_device(device);
  if (static_cast<int64_t>(nbytes) != n * dtype.itemsize())
    throw ShapeError(fmt::format("from_bytes: {} bytes do not fill shape {} of {}", nbytes,
                                 shape_str(shape), dtype.name()));
  UOp buf = engine::upload(data, nbytes, dtype, n, dev);
  UOp view = shape == Shape{n} ? buf : lazy::reshape(buf, shape);
  return make(std::move(view), std::move(shape), dtype, dev);
}

Tensor Tensor::empty(Shape shape, std::optional<DType> dtype, const std::string& device) {
  const DType dt = value_dtype(dtype, dtypes::default_float);
  const int64_t n = tensor::checked_numel(shape, dt, "empty");
  const std::string dev = engine::canonical_device(device);
  UOp buf = engine::allocate(dt, n, dev);
  UOp view = shape == Shape{n} ? buf : lazy::reshape(buf, shape);
  return make(std::move(view), std::move(shape), dt, dev);
}

namespace {
Tensor full_value(const Shape& shape, ConstValue v, DType dt, const std::string& device,
                  const char* op = "full") {
  tensor::checked_numel(shape, dt, op);
  return tensor::constant(v, dt, shape, engine::canonical_device(device));
}
}  // namespace

Tensor Tensor::zeros(Shape shape, std::optional<DType> dtype, const std::string& device) {
  return full_value(shape, 0.0, value_dtype(dtype, dtypes::default_float), device, "zeros");
}
Tensor Tensor::ones(Shape shape, std::optional<DType> dtype, const std::string& device) {
  return full_value(shape, 1.0, value_dtype(dtype, dtypes::default_float), device, "ones");
}

Tensor Tensor::full(Shape shape, double value, std::optional<DType> dtype,
                    const std::string& device) {
  return full_value(shape, value, value_dtype(dtype, dtypes::default_float), device);
}
Tensor Tensor::full(Shape shape, int value, std::optional<DType> dtype, const std::string& device) {
  return full_value(shape, int64_t{value}, value_dtype(dtype, dtypes::default_int), device);
}
Tensor Tensor::full(Shape shape, int64_t value, std::optional<DType> dtype,
                    const std::string& device) {
  return full_value(shape, value, value_dtype(dtype, dtypes::default_int), device);
}
Tensor Tensor::full(Shape shape, bool value, std::optional<DType> dtype,
                    const std::string& device) {
  return full_value(shape, value, value_dtype(dtype, dtypes::bool_), device);
}
Tensor Tensor::zeros_like() const { return full(shape(), 0.0, dtype(), device()); }
Tensor Tensor::ones_like() const { return full(shape(), 1.0, dtype(), device()); }
Tensor Tensor::full_like(double value) const { return full(shape(), value, dtype(), device()); }

// ---- inspection
// -----------------------------------------------------------------------------------
const Shape& Tensor::shape() const { return impl()->shape; }
int64_t Tensor::shape(int dim) const {
  return shape()[tensor::normalize_axis(dim, shape(), "shape")];
}
int Tensor::ndim() const { return static_cast<int>(shape().size()); }
int64_t Tensor::numel() const { return lazy::prod(shape()); }
DType Tensor::dtype() const { return impl()->dtype; }
const std::string& Tensor::device() const { return impl()->device; }
bool Tensor::is_weak() const { return impl()->weak; }

const Tensor& Tensor::realize() const {
  Impl& im = *impl();
  if (engine::as_buffer(im.uop)) return *this;
  std::vector<UOp> roots{im.uop};
  std::vector<UOp> reading = roots;
  tensor::materialize_parameters(reading);
  std::vector<std::string> devs{im.device};
  im.uop = engine::realize(reading, devs)[0];
  tensor::keep_for_autograd(std::span(&impl(), 1), roots);
  return *this;
}
Tensor& Tensor::realize() {
  std::as_const(*this).realize();
  return *this;
}

void Tensor::realize_all(std::vector<Tensor>& tensors) {
  // Grouped by device: one realize (one schedule) per device.
  std::map<std::string, std::vector<std::shared_ptr<Impl>>> by_device;
  for (Tensor& t : tensors) {
    const std::shared_ptr<Impl>& im = t.impl();
    if (!engine::as_buffer(im->uop)) by_device[im->device].push_back(im);
  }
  for (auto& [device, impls] : by_device) {
    std::vector<UOp> roots;
    for (const auto& im : impls) roots.push_back(im->uop);
    std::vector<UOp> reading = roots;
    tensor::materialize_parameters(reading);
    const std::vector<std::string> devs(roots.size(), device);
    const std::vector<UOp> done = engine::realize(reading, devs);
    for (size_t i = 0; i < impls.size(); ++i) impls[i]->uop = done[i];
    tensor::keep_for_autograd(impls, roots);
  }
}

std::vector<KernelInfo> Tensor::schedule() const {
  if (engine::as_buffer(impl()->uop)) return {};
  std::vector<UOp> roots{impl()->uop};
  tensor::materialize_parameters(roots);  // what a realize would run after them
  std::vector<std::string> devs{device()};
  return engine::schedule_info(roots, devs);
}

void Tensor::copy_out(void* dst, size_t count, DType host_dtype, bool raw16,
                      const char* what) const {
  const DType dt = dtype();
  const bool ok = dt == host_dtype || (raw16 && (dt == dtypes::float16 || dt == dtypes::bfloat16));
  if (!ok)
    throw DTypeError(fmt::format("{}: tensor of {} {} cannot be read as {}", what,
                                 shape_str(shape()), dt.name(),
                                 raw16 ? "uint16 bits" : host_dtype.name()));
  if (static_cast<int64_t>(count) != numel())
    throw ShapeError(fmt::format("{}: {} elements requested from a tensor of shape {}", what, count,
                                 shape_str(shape())));
  if (count == 0) return;
  realize();
  engine::download(engine::as_buffer(impl()->uop), dst, count * dt.itemsize());
}

std::vector<uint8_t> Tensor::to_bytes() const {
  std::vector<uint8_t> out(static_cast<size_t>(numel() * dtype().itemsize()));
  if (out.empty()) return out;
  realize();
  engine::download(engine::as_buffer(impl()->uop), out.data(), out.size());
  return out;
}

Tensor Tensor::to(const std::string& device_name) const {
  const std::string dev = engine::canonical_device(device_name);
  if (dev == device()) return *this;
  // Across devices: through host memory (a device-to-device path comes with the second backend).
  std::vector<uint8_t> bytes = contiguous().to_bytes();
  Tensor out = from_bytes(bytes.data(), bytes.size(), shape(), dtype(), dev);
  // The copy carries gradients back to this tensor's device (autograd.cpp).
  if (!bytes.empty())
    tensor::keep_copy_for_autograd(engine::as_buffer(tensor::uop(out)), *this, dev);
  return out;
}

Tensor Tensor::cast(DType dt) const {
  if (dt == dtype()) return *this;
  if (dt.is_ptr() || dt.count() != 1 || dt.is_void() || dt == dtypes::index)
    throw DTypeError("cast: cannot cast to " + dt.name());
  if (dt.itemsize() > dtype().itemsize()) tensor::checked_numel(shape(), dt, "cast");
  if (impl()->literal && impl()->uop.op() == Ops::CONST) {
    // A literal takes the new dtype from its exact value (0.2 as float64 is 0.2, not float32's).
    Tensor out = make(UOp::const_(dt, *impl()->literal), {}, dt, device(), is_weak());
    out.impl()->literal = impl()->literal;
    return out;
  }
  Tensor out = tensor::alu(Ops::CAST, *this, dt);
  out.impl()->weak = false;
  return out;
}

Tensor Tensor::bitcast(DType dt) const {
  if (dt.itemsize() != dtype().itemsize() || dt.is_ptr() || dt.count() != 1)
    throw DTypeError(fmt::format("bitcast: {} ({} bytes) to {} ({} bytes) needs equal sizes",
                                 dtype().name(), dtype().itemsize(), dt.name(), dt.itemsize()));
  if (dt == dtype()) return *this;
  Tensor out = tensor::alu(Ops::BITCAST, *this, dt);
  out.impl()->weak = false;
  return out;
}

Tensor Tensor::contiguous() const {
  if (engine::as_buffer(impl()->uop)) return *this;
  return clone();
}
Tensor Tensor::clone() const {
  return tensor::with_sym(make(lazy::contiguous(impl()->uop), shape(), dtype(), device()),
                          impl()->sym);
}
// A DETACH node, not the same node: autograd finds tensors that require grad by their node, so
// a detached copy must not be one of them (the scheduler reads DETACH as its source).
Tensor Tensor::detach() const {
  if (impl()->uop.op() == Ops::CONST) {  // a literal carries no gradient
    Tensor out = make(impl()->uop, shape(), dtype(), device(), is_weak());
    out.impl()->literal = impl()->literal;
    return out;
  }
  return tensor::with_sym(
      make(UOp::make(Ops::DETACH, dtype(), {impl()->uop}), shape(), dtype(), device(), is_weak()),
      impl()->sym);
}

namespace {
// One element of `dt` at `p`, as to_string prints it: bools as true/false, integers exactly,
// floats in %g.
std::string element_str(const uint8_t* p, DType dt) {
  auto read = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (dt.scalar_type()) {
    case ScalarType::bool_:
      return *p ? "true" : "false";
    case ScalarType::int8:
      return fmt::format("{}", read(int8_t{}));
    case ScalarType::uint8:
      return fmt::format("{}", read(uint8_t{}));
    case ScalarType::int16:
      return fmt::format("{}", read(int16_t{}));
    case ScalarType::uint16:
      return fmt::format("{}", read(uint16_t{}));
    case ScalarType::int32:
      return fmt::format("{}", read(int32_t{}));
    case ScalarType::uint32:
      return fmt::format("{}", read(uint32_t{}));
    case ScalarType::int64:
      return fmt::format("{}", read(int64_t{}));
    case ScalarType::uint64:
      return fmt::format("{}", read(uint64_t{}));
    case ScalarType::float16:
      return fmt::format("{:g}", half_bits_to_float(read(uint16_t{})));
    case ScalarType::bfloat16:
      return fmt::format("{:g}", bf16_bits_to_float(read(uint16_t{})));
    case ScalarType::float32:
      return fmt::format("{:g}", read(float{}));
    case ScalarType::float64:
      return fmt::format("{:g}", read(double{}));
    default:
      throw DTypeError("to_string: cannot print a tensor of " + dt.name());
  }
}
}  // namespace

std::string Tensor::to_string() const {
  std::ostringstream os;
  os << "Tensor(shape=" << shape_str(shape()) << ", dtype=" << dtype().name()
     << ", device=" << device() << ")";
  if (numel() > 0 && numel() <= 256) {
    // The tensor's own bytes, converted here: printing needs nothing of the device beyond the
    // tensor's dtype (no float64 cast on a device that may lack it).
    const std::vector<uint8_t> bytes = to_bytes();
    const size_t item = static_cast<size_t>(dtype().itemsize());
    const Shape& s = shape();
    std::vector<int64_t> strides(s.size(), 1);
    for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * s[i + 1];
    const size_t n = bytes.size() / item;
    os << "\n";
    for (size_t i = 0; i < n; ++i) {
      const int64_t at = static_cast<int64_t>(i);
      for (size_t d = 0; d < s.size(); ++d)
        if (at % (strides[d] * s[d]) == 0) os << "[";
      os << element_str(bytes.data() + i * item, dtype());
      int closed = 0;
      for (size_t d = 0; d < s.size(); ++d)
        if ((at + 1) % (strides[d] * s[d]) == 0) ++closed, os << "]";
      if (i + 1 < n) os << (closed ? ",\n" : ", ");
    }
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

// ---- elementwise --------------------------------------------------------------------------------
namespace {
Tensor binary(Ops op, const Tensor& a, const Tensor& b, const char* name) {
  auto [x, y] = tensor::binary_operands(a, b, name);
  return tensor::alu(op, x, y, x.dtype());
}
Tensor compare(Ops op, const Tensor& a, const Tensor& b, const char* name) {
  auto [x, y] = tensor::binary_operands(a, b, name);
  Tensor out = tensor::alu(op, x, y, dtypes::bool_);
  out.impl()->weak = false;
  return out;
}
void require_int_or_bool(const Tensor& a, const Tensor& b, const char* name) {
  for (const Tensor* t : {&a, &b})
    if (!(t->dtype().is_int() || t->dtype().is_bool()))
      throw DTypeError(fmt::format("{}: needs integer or bool tensors, got {} {} and {} {}", name,
                                   shape_str(a.shape()), a.dtype().name(), shape_str(b.shape()),
                                   b.dtype().name()));
}
// Transcendental and float-only unary ops compute integer inputs in the default float.
Tensor float_unary(Ops op, const Tensor& x) {
  const Tensor f = x.dtype().is_float() ? x : x.cast(dtypes::default_float);
  return tensor::alu(op, f, f.dtype());
}
}  // namespace

Tensor Tensor::add(const Tensor& o) const { return binary(Ops::ADD, *this, o, "add"); }
Tensor Tensor::sub(const Tensor& o) const { return binary(Ops::SUB, *this, o, "sub"); }
Tensor Tensor::mul(const Tensor& o) const { return binary(Ops::MUL, *this, o, "mul"); }
Tensor Tensor::div(const Tensor& o) const {
  auto [x, y] = tensor::binary_operands(*this, o, "div");
  if (!x.dtype().is_float()) {
    x = x.cast(dtypes::default_float);
    y = y.cast(dtypes::default_float);
  }
  return tensor::alu(Ops::FDIV, x, y, x.dtype());
}
Tensor Tensor::neg() const {
  if (dtype().is_bool()) return logical_not();
  return tensor::alu(Ops::NEG, *this, dtype());
}
Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, *this, o, "maximum"); }
Tensor Tensor::minimum(const Tensor& o) const {
  auto [x, y] = tensor::binary_operands(*this, o, "minimum");
  if (x.dtype().is_float() || (x.dtype().is_int() && !x.dtype().is_unsigned() && false))
    return tensor::alu(Ops::MAX, x.neg(), y.neg(), x.dtype()).neg();
  // Integers and bool: exact selection (negation would overflow at the minimum value).
  const Tensor lt = tensor::alu(Ops::CMPLT, x, y, dtypes::bool_);
  const Tensor s[] = {lt, x, y};
  return tensor::alu(Ops::WHERE, s, x.dtype());
}
Tensor Tensor::where(const Tensor& a, const Tensor& b) const { return vkgrad::where(*this, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  auto [x, y] = tensor::binary_operands(a, b, "where");
  // The condition joins the values' device the way binary operands do: a literal moves, a
  // tensor on another device is a DeviceError.
  const std::string dev = tensor::common_device(cond, x, "where");
  const Tensor c = tensor::on_device(cond.cast(dtypes::bool_), dev);
  x = tensor::on_device(x, dev);
  y = tensor::on_device(y, dev);
  const Shape shape = tensor::broadcast_shape(c.shape(), x.shape(), "where");
  tensor::checked_numel(shape, x.dtype(), "where");
  const Tensor all[] = {c, x, y};
  const Shape sym = tensor::broadcast_sym(all, shape);
  const Tensor s[] = {tensor::broadcast_to(c, shape, "where", sym),
                      tensor::broadcast_to(x, shape, "where", sym),
                      tensor::broadcast_to(y, shape, "where", sym)};
  Tensor out = tensor::alu(Ops::WHERE, s, x.dtype());
  out.impl()->weak = a.is_weak() && b.is_weak();
  return out;
}

Tensor Tensor::lt(const Tensor& o) const { return compare(Ops::CMPLT, *this, o, "lt"); }
Tensor Tensor::gt(const Tensor& o) const { return compare(Ops::CMPLT, o, *this, "gt"); }
Tensor Tensor::le(const Tensor& o) const {
  return compare(Ops::CMPLT, *this, o, "le").bitwise_or(compare(Ops::CMPEQ, *this, o, "le"));
}
Tensor Tensor::ge(const Tensor& o) const { return o.le(*this); }
Tensor Tensor::eq(const Tensor& o) const { return compare(Ops::CMPEQ, *this, o, "eq"); }
Tensor Tensor::ne(const Tensor& o) const { return compare(Ops::CMPNE, *this, o, "ne"); }
Tensor Tensor::logical_not() const {
  Tensor zero = tensor::constant(false, dtypes::bool_, shape(), device());
  return tensor::alu(Ops::CMPEQ, cast(dtypes::bool_), zero, dtypes::bool_);
}

Tensor Tensor::bitwise_and(const Tensor& o) const {
  require_int_or_bool(*this, o, "bitwise_and");
  return binary(Ops::AND, *this, o, "bitwise_and");
}
Tensor Tensor::bitwise_or(const Tensor& o) const {
  require_int_or_bool(*this, o, "bitwise_or");
  return binary(Ops::OR, *this, o, "bitwise_or");
}
Tensor Tensor::bitwise_xor(const Tensor& o) const {
  require_int_or_bool(*this, o, "bitwise_xor");
  return binary(Ops::XOR, *this, o, "bitwise_xor");
}
Tensor Tensor::bitwise_not() const {
  require_int_or_bool(*this, *this, "bitwise_not");
  if (dtype().is_bool()) return logical_not();
  return tensor::alu(Ops::XOR, *this, tensor::constant(int64_t{-1}, dtype(), shape(), device()),
                     dtype());
}
Tensor Tensor::lshift(const Tensor& o) const {
  if (!dtype().is_int() || !(o.dtype().is_int() || o.is_weak()))
    throw DTypeError(fmt::format("lshift: needs integer tensors, got {} {} and {} {}",
                                 shape_str(shape()), dtype().name(), shape_str(o.shape()),
                                 o.dtype().name()));
  const Tensor y = tensor::broadcast_to(o.cast(dtype()), shape(), "lshift");
  return tensor::alu(Ops::SHL, *this, y, dtype());
}
Tensor Tensor::rshift(const Tensor& o) const {
  if (!dtype().is_int() || !(o.dtype().is_int() || o.is_weak()))
    throw DTypeError(fmt::format("rshift: needs integer tensors, got {} {} and {} {}",
                                 shape_str(shape()), dtype().name(), shape_str(o.shape()),
                                 o.dtype().name()));
  const Tensor y = tensor::broadcast_to(o.cast(dtype()), shape(), "rshift");
  return tensor::alu(Ops::SHR, *this, y, dtype());
}

Tensor Tensor::exp2() const { return float_unary(Ops::EXP2, *this); }
Tensor Tensor::log2() const { return float_unary(Ops::LOG2, *this); }
Tensor Tensor::sin() const { return float_unary(Ops::SIN, *this); }
Tensor Tensor::sqrt() const { return float_unary(Ops::SQRT, *this); }
Tensor Tensor::reciprocal() const { return float_unary(Ops::RECIPROCAL, *this); }
Tensor Tensor::trunc() const {
  if (!dtype().is_float()) return *this;
  return tensor::alu(Ops::TRUNC, *this, dtype());
}

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
Tensor operator~(const Tensor& a) { return a.bitwise_not(); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return a.lshift(b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return a.rshift(b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a = a + b; }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a = a - b; }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a = a * b; }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a = a / b; }

// ---- reductions: sum, max, prod -----------------------------------------------------------------
namespace {
DType sum_dtype(DType dt) {
  switch (dt.scalar_type()) {
    case ScalarType::bool_:
    case ScalarType::int8:
    case ScalarType::int16:
      return dtypes::int32;
    case ScalarType::uint8:
    case ScalarType::uint16:
      return dtypes::uint32;
    default:
      return dt;
  }
}
// Accumulate half floats in float32, then round once.
DType acc_dtype(DType dt) {
  return dt == dtypes::float16 || dt == dtypes::bfloat16 ? dtypes::float32 : dt;
}

Tensor reduce_op(const Tensor& x, Ops op, DType out, const std::vector<int>& axes_in, bool keepdim,
                 const char* name) {
  const std::vector<int> axes = tensor::reduce_axes(x, axes_in, name);
  const DType acc = acc_dtype(out);
  Tensor r = tensor::reduce(x.cast(acc), op, axes, name).cast(out);
  return keepdim ? r : tensor::squeeze_axes(r, axes);
}
}  // namespace

Tensor Tensor::sum(const std::vector<int>& axes, bool keepdim) const {
  return reduce_op(*this, Ops::ADD, sum_dtype(dtype()), axes, keepdim, "sum");
}
Tensor Tensor::sum(int axis, bool keepdim) const { return sum(std::vector<int>{axis}, keepdim); }
Tensor Tensor::sum() const { return sum(std::vector<int>{}, false); }
Tensor Tensor::max(const std::vector<int>& axes, bool keepdim) const {
  return reduce_op(*this, Ops::MAX, dtype(), axes, keepdim, "max");
}
Tensor Tensor::max(int axis, bool keepdim) const { return max(std::vector<int>{axis}, keepdim); }
Tensor Tensor::max() const { return max(std::vector<int>{}, false); }
Tensor Tensor::prod(const std::vector<int>& axes, bool keepdim) const {
  return reduce_op(*this, Ops::MUL, dtype(), axes, keepdim, "prod");
}
Tensor Tensor::prod(int axis, bool keepdim) const { return prod(std::vector<int>{axis}, keepdim); }
Tensor Tensor::prod() const { return prod(std::vector<int>{}, false); }

// ---- movement -----------------------------------------------------------------------------------
Tensor Tensor::reshape(Shape new_shape) const {
  int infer = -1;
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1) {
      if (infer >= 0)
        throw ShapeError(fmt::format("reshape: more than one -1 in {} (from {})",
                                     shape_str(new_shape), shape_str(shape())));
      infer = static_cast<int>(i);
    } else if (new_shape[i] < 0) {
      throw ShapeError(fmt::format("reshape: negative dimension in {} (from {})",
                                   shape_str(new_shape), shape_str(shape())));
    }
  }
  // The product of the given dimensions (a -1 counts as 1).
  int64_t known = 0;
  if (infer < 0) {
    known = tensor::checked_numel(new_shape, dtype(), "reshape");
  } else {
    Shape given = new_shape;
    given[infer] = 1;
    try {
      known = tensor::checked_numel(given, dtype(), "reshape");
    } catch (const ShapeError&) {
      throw ShapeError(fmt::format("reshape: {} (from {}) has more elements than int64 can count",
                                   shape_str(new_shape), shape_str(shape())));
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw ShapeError(fmt::format("reshape: cannot reshape {} ({} elements) to {}",
                                   shape_str(shape()), numel(), shape_str(new_shape)));
    new_shape[infer] = numel() / known;
    known *= new_shape[infer];
  }
  if (known != numel())
    throw ShapeError(fmt::format("reshape: cannot reshape {} ({} elements) to {} ({} elements)",
                                 shape_str(shape()), numel(), shape_str(new_shape), known));
  if (new_shape == shape()) return *this;
  // A symbolic axis must come through whole: the same size after the same number of elements.
  Shape sym;
  if (!impl()->sym.empty()) {
    sym = new_shape;
    std::vector<bool> used(new_shape.size(), false);
    int64_t before_in = 1;
    for (int i = 0; i < ndim(); before_in *= shape()[i], ++i) {
      if (!lazy::is_sym(impl()->sym[i])) continue;
      int64_t before_out = 1;
      size_t j = 0;
      for (; j < new_shape.size(); before_out *= new_shape[j], ++j)
        if (before_out == before_in && new_shape[j] == shape()[i] && !used[j]) break;
      if (j == new_shape.size())
        throw ShapeError(fmt::format(
            "reshape: {} to {} would merge or split the symbolic axis {} ({})", shape_str(shape()),
            shape_str(new_shape), i, lazy::sym_var(impl()->sym[i]).name));
      used[j] = true;
      sym[j] = impl()->sym[i];
    }
  }
  return tensor::reshaped(*this, std::move(new_shape), std::move(sym));
}

namespace tensor {

Tensor reshaped(const Tensor& t, Shape shape, Shape sym) {
  const Shape& target = sym.empty() ? shape : sym;
  UOp u = t.impl()->uop;
  // Reshaping a reshape composes into one view (unless it binds variables); a scalar constant
  // needs no view at all.
  if (u.op() == Ops::RESHAPE && u.src().size() == 1) u = u.src(0);
  UOp node = lazy::shape_of(u) == target ? u : lazy::reshape(u, target);
  return with_sym(make(std::move(node), std::move(shape), t.dtype(), t.device(), t.is_weak()),
                  std::move(sym));
}

Tensor reshape_sym(const Tensor& t, const Shape& sym) {
  const Shape& from = sym_shape(t);
  if (!lazy::has_sym(from)) return t.reshape(sym);
  const lazy::VarValues values = lazy::values_at(from, t.shape());
  for (int64_t d : from)
    if (lazy::is_sym(d) && std::count(sym.begin(), sym.end(), d) != 1)
      throw InternalError(
          fmt::format("reshape of {} to {}: the symbolic axis {} does not come "
                      "through once",
                      shape_str(t.shape()), shape_str(sym), lazy::sym_var(d).name));
  Shape shape = lazy::concrete(sym, values);
  if (lazy::prod(shape) != t.numel())
    throw ShapeError(
        fmt::format("reshape: cannot reshape {} to {}", shape_str(t.shape()), shape_str(shape)));
  if (shape == t.shape() && sym == from) return t;
  return reshaped(t, std::move(shape), sym);
}

}  // namespace tensor

Tensor Tensor::permute(std::vector<int> order) const {
  if (static_cast<int>(order.size()) != ndim())
    throw ShapeError(fmt::format("permute: order ({}) has {} axes, the tensor {} has {}",
                                 fmt::join(order, ", "), order.size(), shape_str(shape()), ndim()));
  std::vector<int> norm;
  try {
    norm = tensor::normalize_axes(order, shape(), "permute");
  } catch (const ShapeError&) {
    throw ShapeError(fmt::format("permute: ({}) is not a permutation of the axes of {}",
                                 fmt::join(order, ", "), shape_str(shape())));
  }
  bool identity = true;
  Shape s(ndim()), sym(impl()->sym.empty() ? 0 : ndim());
  std::vector<int64_t> ord(ndim());
  for (int i = 0; i < ndim(); ++i) {
    s[i] = shape()[norm[i]];
    if (!sym.empty()) sym[i] = impl()->sym[norm[i]];
    ord[i] = norm[i];
    identity = identity && norm[i] == i;
  }
  if (identity) return *this;
  return tensor::with_sym(
      make(lazy::permute(impl()->uop, ord), std::move(s), dtype(), device(), is_weak()),
      std::move(sym));
}

Tensor Tensor::expand(Shape new_shape) const {
  if (new_shape.size() < shape().size())
    throw ShapeError(fmt::format("expand: cannot expand {} to fewer dimensions {}",
                                 shape_str(shape()), shape_str(new_shape)));
  const size_t lead = new_shape.size() - shape().size();
  Shape src(lead, 1);
  src.insert(src.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1) new_shape[i] = src[i];
    if (new_shape[i] != src[i] && src[i] != 1)
      throw ShapeError(fmt::format("expand: cannot expand {} to {} (dimension {} is {}, not 1)",
                                   shape_str(shape()), shape_str(new_shape), i, src[i]));
    if (new_shape[i] < 0)
      throw ShapeError(fmt::format("expand: negative dimension in {}", shape_str(new_shape)));
  }
  tensor::checked_numel(new_shape, dtype(), "expand");
  const Tensor base = lead ? reshape(src) : *this;
  if (new_shape == src) return base;
  Shape sym = new_shape;
  for (size_t i = 0; i < new_shape.size(); ++i)
    if (new_shape[i] == src[i]) sym[i] = tensor::sym_shape(base)[i];
  return tensor::expand_to(base, std::move(new_shape), std::move(sym));
}

Tensor Tensor::pad(const PadList& padding, double value) const {
  if (static_cast<int>(padding.size()) != ndim())
    throw ShapeError(fmt::format("pad: {} (before, after) pairs for a tensor of shape {}",
                                 padding.size(), shape_str(shape())));
  Shape s = shape(), sym = impl()->sym;
  bool any = false;
  for (size_t i = 0; i < padding.size(); ++i) {
    if (padding[i].first < 0 || padding[i].second < 0)
      throw ShapeError(fmt::format("pad: negative padding ({}, {}) on dimension {} of {}",
                                   padding[i].first, padding[i].second, i, shape_str(shape())));
    const bool padded = padding[i].first || padding[i].second;
    if (padded && !sym.empty() && lazy::is_sym(sym[i]))
      throw ShapeError(
          fmt::format("pad: dimension {} of {} is the symbolic {}; it cannot be padded", i,
                      shape_str(shape()), lazy::sym_var(sym[i]).name));
    if (__builtin_add_overflow(s[i], padding[i].first, &s[i]) ||
        __builtin_add_overflow(s[i], padding[i].second, &s[i]))
      throw ShapeError(
          fmt::format("pad: ({}, {}) on dimension {} of {} gives more elements than "
                      "int64 can count",
                      padding[i].first, padding[i].second, i, shape_str(shape())));
    if (!sym.empty() && padded) sym[i] = s[i];
    any = any || padded;
  }
  if (!any) return *this;
  tensor::checked_numel(s, dtype(), "pad");
  Tensor zero_padded =
      tensor::with_sym(make(lazy::pad(impl()->uop, padding), s, dtype(), device()), sym);
  if (value == 0.0) return zero_padded;
  // Another value: select it where a padded mask of ones is false.
  Tensor mask =
      make(lazy::pad(tensor::constant(true, dtypes::bool_, shape(), device()).impl()->uop, padding),
           s, dtypes::bool_, device());
  return vkgrad::where(mask, zero_padded, Tensor::full(s, value, dtype(), device()));
}

Tensor Tensor::shrink(const PadList& bounds) const {
  if (static_cast<int>(bounds.size()) != ndim())
    throw ShapeError(fmt::format("shrink: {} (start, end) pairs for a tensor of shape {}",
                                 bounds.size(), shape_str(shape())));
  Shape s(ndim()), sym = impl()->sym;
  PadList arg = bounds;
  bool identity = true;
  for (int i = 0; i < ndim(); ++i) {
    const auto [b, e] = bounds[i];
    if (b < 0 || e < b || e > shape()[i])
      throw ShapeError(fmt::format("shrink: ({}, {}) is out of range for dimension {} of {}", b, e,
                                   i, shape_str(shape())));
    s[i] = e - b;
    const bool whole = b == 0 && e == shape()[i];
    identity = identity && whole;
    if (sym.empty()) continue;
    if (!lazy::is_sym(sym[i])) {
      sym[i] = s[i];
      continue;
    }
    if (!whole)
      throw ShapeError(
          fmt::format("shrink: dimension {} of {} is the symbolic {}; it can only be kept whole", i,
                      shape_str(shape()), lazy::sym_var(sym[i]).name));
    arg[i].second = sym[i];  // (0, the variable): the axis keeps its symbol
  }
  if (identity) return *this;
  return tensor::with_sym(
      make(lazy::shrink(impl()->uop, arg), std::move(s), dtype(), device(), is_weak()),
      std::move(sym));
}

Tensor Tensor::flip(std::vector<int> axes) const {
  const std::vector<int> norm = tensor::normalize_axes(axes, shape(), "flip");
  std::vector<int64_t> flags(ndim(), 0);
  bool any = false;
  for (int a : norm)
    if (shape()[a] > 1) flags[a] = 1, any = true;
  if (!any) return *this;
  return tensor::with_sym(
      make(lazy::flip(impl()->uop, flags), shape(), dtype(), device(), is_weak()), impl()->sym);
}

Tensor Tensor::symbolic(int axis, const Variable& v) const {
  const int a = tensor::normalize_axis(axis, shape(), "symbolic");
  const int64_t size = shape()[a];
  if (v.value() && *v.value() != size)
    throw ShapeError(fmt::format("symbolic: {} is bound to {}, but dimension {} of {} is {}",
                                 v.name(), *v.value(), a, shape_str(shape()), size));
  if (size < v.min() || size > v.max())
    throw ShapeError(fmt::format("symbolic: dimension {} of {} is {}, outside {}'s bounds [{}, {}]",
                                 a, shape_str(shape()), size, v.name(), v.min(), v.max()));
  Shape sym = tensor::sym_shape(*this);
  const int64_t d = lazy::sym_dim({v.name(), v.min(), v.max()});
  if (sym[a] == d) return *this;
  if (lazy::is_sym(sym[a]))
    throw ShapeError(fmt::format("symbolic: dimension {} of {} is already the symbolic {}", a,
                                 shape_str(shape()), lazy::sym_var(sym[a]).name));
  for (int i = 0; i < ndim(); ++i)
    if (sym[i] == d)
      throw ShapeError(fmt::format("symbolic: {} already stands for dimension {} of {}", v.name(),
                                   i, shape_str(shape())));
  sym[a] = d;
  const lazy::VarValues values = lazy::values_at(sym, shape());
  UOp u = impl()->uop;
  if (u.op() == Ops::RESHAPE && u.src().size() == 1) u = u.src(0);
  UOp node = lazy::reshape_bound(u, sym, values);
  return tensor::with_sym(make(std::move(node), shape(), dtype(), device(), is_weak()),
                          std::move(sym));
}

std::vector<std::optional<Variable>> Tensor::symbolic_shape() const {
  std::vector<std::optional<Variable>> out(ndim());
  for (int i = 0; i < ndim() && !impl()->sym.empty(); ++i)
    if (lazy::is_sym(impl()->sym[i])) {
      const VarArg& v = lazy::sym_var(impl()->sym[i]);
      out[i] = Variable(v.name, v.min, v.max).bind(shape()[i]);
    }
  return out;
}

Tensor Tensor::variable(const Variable& v, std::optional<DType> dtype, const std::string& device) {
  if (!v.value())
    throw Error(fmt::format("Tensor::variable: {} is not bound to a value (use {}.bind(n))",
                            v.name(), v.name()));
  return tensor::dim_value(lazy::sym_dim({v.name(), v.min(), v.max()}), *v.value(),
                           dtype ? *dtype : dtypes::default_int, engine::canonical_device(device));
}

Variable::Variable(std::string name, int64_t min, int64_t max)
    : name_(std::move(name)), min_(min), max_(max) {
  if (name_.empty()) throw Error("Variable: the name is empty");
  if (min < 0 || min > max)
    throw Error(fmt::format("Variable {}: bounds [{}, {}] need 0 <= min <= max", name_, min, max));
}

Variable Variable::bind(int64_t value) const {
  if (value < min_ || value > max_)
    throw ShapeError(
        fmt::format("Variable {}: {} is outside its bounds [{}, {}]", name_, value, min_, max_));
  Variable out = *this;
  out.value_ = value;
  return out;
}

}  // namespace vkgrad
