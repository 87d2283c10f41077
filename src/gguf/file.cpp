// gguf: reading and writing GGUF files. open() maps the file read-only and parses the header,
// the metadata and the tensor table through a bounds-checked cursor, so a short or corrupt file
// is a FormatError at the offset where it fails; save() writes version 3. Depends on tensor (the
// values saved), the public header and formats.hpp.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <vkgrad/error.hpp>
#include <vkgrad/gguf.hpp>

#include "gguf/formats.hpp"

namespace vkgrad::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;

// A read-only mapping of a whole file, unmapped with the last File that shares it.
struct Mapping {
  const uint8_t* data = nullptr;
  size_t size = 0;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  explicit Mapping(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw FormatError(fmt::format("gguf: cannot open {}: {}", path, strerror(errno)));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw FormatError(fmt::format("gguf: {} is not a regular file", path));
    }
    size = static_cast<size_t>(st.st_size);
    if (size > 0) {
      void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        throw FormatError(fmt::format("gguf: cannot map {}: {}", path, strerror(errno)));
      }
      data = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
  }
  ~Mapping() {
    if (data) munmap(const_cast<uint8_t*>(data), size);
  }
};

// Reads little-endian fields from the mapping; every read past the end names the file, what it
// was reading and the offset.
struct Cursor {
  const std::string& path;
  const uint8_t* data;
  size_t size;
  size_t at = 0;

  [[noreturn]] void fail(std::string_view what) const {
    throw FormatError(fmt::format("gguf: {}: {} at byte {}", path, what, at));
  }
  const uint8_t* take(uint64_t n, std::string_view what) {
    if (n > size - at) fail(fmt::format("truncated file: {} needs {} bytes", what, n));
    const uint8_t* p = data + at;
    at += n;
    return p;
  }
  template <class T>
  T read(std::string_view what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string string(std::string_view what) {
    const auto n = read<uint64_t>(what);
    const uint8_t* p = take(n, what);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
};

Value read_value(Cursor& c, ValueType type, const std::string& key, int depth);

Value read_array(Cursor& c, const std::string& key, int depth) {
  const auto element = static_cast<ValueType>(c.read<uint32_t>("an array's type"));
  const auto n = c.read<uint64_t>("an array's length");
  if (depth > 0 && element == ValueType::array) c.fail(fmt::format("{}: nested array", key));
  // Each item takes at least one byte, so a count beyond the bytes left is a truncated file
  // (and never a huge allocation).
  if (n > c.size - c.at) c.fail(fmt::format("truncated file: {}'s {} items", key, n));
  std::vector<Value> items;
  items.reserve(n);
  for (uint64_t i = 0; i < n; ++i) items.push_back(read_value(c, element, key, depth + 1));
  return Value::array(element, std::move(items));
}

Value read_value(Cursor& c, ValueType type, const std::string& key, int depth) {
  switch (type) {
    case ValueType::uint8:
      return c.read<uint8_t>(key);
    case ValueType::int8:
      return c.read<int8_t>(key);
    case ValueType::uint16:
      return c.read<uint16_t>(key);
    case ValueType::int16:
      return c.read<int16_t>(key);
    case ValueType::uint32:
      return c.read<uint32_t>(key);
    case ValueType::int32:
      return c.read<int32_t>(key);
    case ValueType::float32:
      return c.read<float>(key);
    case ValueType::bool_: {
      const auto b = c.read<uint8_t>(key);
      if (b > 1) c.fail(fmt::format("{}: bool value {}", key, b));
      return b != 0;
    }
    case ValueType::string:
      return c.string(key);
    case ValueType::array:
      return read_array(c, key, depth);
    case ValueType::uint64:
      return c.read<uint64_t>(key);
    case ValueType::int64:
      return c.read<int64_t>(key);
    case ValueType::float64:
      return c.read<double>(key);
  }
  c.fail(fmt::format("{}: unknown value type {}", key, static_cast<uint32_t>(type)));
}

TensorInfo read_tensor_info(Cursor& c) {
  TensorInfo t;
  t.name = c.string("a tensor's name");
  const auto dims = c.read<uint32_t>("a tensor's dimension count");
  if (dims == 0 || dims > kMaxDims)
    c.fail(fmt::format("tensor {}: {} dimensions (1 to {})", t.name, dims, kMaxDims));
  Shape ne(dims);
  for (auto& n : ne) {
    const auto v = c.read<uint64_t>("a tensor's size");
    if (v == 0 || v > (uint64_t{1} << 40)) c.fail(fmt::format("tensor {}: size {}", t.name, v));
    n = static_cast<int64_t>(v);
  }
  t.shape.assign(ne.rbegin(), ne.rend());
  const auto type = c.read<uint32_t>("a tensor's type");
  const Format* f = format_of_ggml_type(type);
  if (!f) c.fail(fmt::format("tensor {}: unknown or unsupported tensor type {}", t.name, type));
  t.type = std::string(f->name);
  t.offset = c.read<uint64_t>("a tensor's offset");
  if (ne[0] % f->block_values != 0)
    c.fail(fmt::format("tensor {}: {} rows of {} values are not whole {}-value blocks of {}",
                       t.name, f->name, ne[0], f->block_values, f->name));
  uint64_t n = 1;
  for (int64_t d : ne) {
    if (n > (uint64_t{1} << 50) / static_cast<uint64_t>(d))
      c.fail(fmt::format("tensor {}: too many values", t.name));
    n *= static_cast<uint64_t>(d);
  }
  t.bytes = n / static_cast<uint64_t>(f->block_values) * static_cast<uint64_t>(f->block_bytes);
  return t;
}

}  // namespace

struct File::Impl {
  std::string path;
  std::shared_ptr<Mapping> mapping;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  size_t data_offset = 0;
  std::map<std::string, Value> metadata;
  std::vector<TensorInfo> tensors;
  std::map<std::string, size_t> index;
};

File::File() : impl_(std::make_shared<Impl>()) {}
uint32_t File::version() const { return impl_->version; }
uint64_t File::alignment() const { return impl_->alignment; }
const std::string& File::path() const { return impl_->path; }
const std::map<std::string, Value>& File::metadata() const { return impl_->metadata; }
const std::vector<TensorInfo>& File::tensors() const { return impl_->tensors; }

const Value* File::find(const std::string& key) const {
  auto it = impl_->metadata.find(key);
  return it == impl_->metadata.end() ? nullptr : &it->second;
}

const Value& File::at(const std::string& key) const {
  if (const Value* v = find(key)) return *v;
  throw Error(fmt::format("gguf: {} has no metadata key {}", impl_->path, key));
}

const TensorInfo* File::find_tensor(const std::string& name) const {
  auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->tensors[it->second];
}

std::span<const uint8_t> File::data(const std::string& name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw Error(fmt::format("gguf: {} has no tensor {}", impl_->path, name));
  return {impl_->mapping->data + impl_->data_offset + t->offset, t->bytes};
}

Tensor File::tensor(const std::string& name, const std::string& device) const {
  const std::span<const uint8_t> bytes = data(name);
  const TensorInfo& t = *find_tensor(name);
  return tensor_from_bytes(bytes, format(t.type), t.shape, device);
}

File open(const std::string& path) {
  auto impl = std::make_shared<File::Impl>();
  impl->path = path;
  impl->mapping = std::make_shared<Mapping>(path);
  Cursor c{path, impl->mapping->data, impl->mapping->size};
  if (c.size < 4 || c.read<uint32_t>("the magic") != kMagic) {
    c.at = 0;
    c.fail("bad magic (not a GGUF file)");
  }
  impl->version = c.read<uint32_t>("the version");
  if (impl->version != 2 && impl->version != 3)
    c.fail(fmt::format("unsupported version {} (2 and 3 are read)", impl->version));
  const auto tensor_count = c.read<uint64_t>("the tensor count");
  const auto kv_count = c.read<uint64_t>("the metadata count");
  if (tensor_count > c.size || kv_count > c.size) c.fail("truncated file: counts past its end");
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.string("a metadata key");
    const auto type = static_cast<ValueType>(c.read<uint32_t>("a metadata type"));
    if (static_cast<uint32_t>(type) > static_cast<uint32_t>(ValueType::float64))
      c.fail(fmt::format("{}: unknown value type {}", key, static_cast<uint32_t>(type)));
    Value v = read_value(c, type, key, 0);
    if (!impl->metadata.emplace(key, std::move(v)).second)
      c.fail(fmt::format("duplicate metadata key {}", key));
  }
  if (auto it = impl->metadata.find("general.alignment"); it != impl->metadata.end()) {
    const uint64_t a = it->second.as_uint();
    if (a == 0 || (a & (a - 1)) != 0)
      c.fail(fmt::format("general.alignment {} is not a power of two", a));
    impl->alignment = a;
  }
  for (uint64_t i = 0; i < tensor_count; ++i) {
    TensorInfo t = read_tensor_info(c);
    if (!impl->index.emplace(t.name, impl->tensors.size()).second)
      c.fail(fmt::format("duplicate tensor {}", t.name));
    impl->tensors.push_back(std::move(t));
  }
  impl->data_offset = (c.at + impl->alignment - 1) / impl->alignment * impl->alignment;
  for (const TensorInfo& t : impl->tensors) {
    if (t.offset % impl->alignment != 0)
      c.fail(fmt::format("tensor {}: offset {} is not aligned to {}", t.name, t.offset,
                         impl->alignment));
    if (impl->data_offset > c.size || t.offset > c.size - impl->data_offset ||
        t.bytes > c.size - impl->data_offset - t.offset)
      throw FormatError(fmt::format(
          "gguf: {}: tensor {} ({} bytes at data offset {}) runs past the end of the file "
          "({} bytes)",
          path, t.name, t.bytes, t.offset, c.size));
  }
  File f;
  f.impl_ = std::move(impl);
  return f;
}

namespace {

// Appends little-endian fields to a byte vector.
struct Writer {
  std::vector<uint8_t> out;
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void string(const std::string& s) {
    put<uint64_t>(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void value(const Value& v) {
    switch (v.type()) {
      case ValueType::uint8:
        return put<uint8_t>(static_cast<uint8_t>(v.as_uint()));
      case ValueType::int8:
        return put<int8_t>(static_cast<int8_t>(v.as_int()));
      case ValueType::uint16:
        return put<uint16_t>(static_cast<uint16_t>(v.as_uint()));
      case ValueType::int16:
        return put<int16_t>(static_cast<int16_t>(v.as_int()));
      case ValueType::uint32:
        return put<uint32_t>(static_cast<uint32_t>(v.as_uint()));
      case ValueType::int32:
        return put<int32_t>(static_cast<int32_t>(v.as_int()));
      case ValueType::float32:
        return put<float>(static_cast<float>(v.as_float()));
      case ValueType::bool_:
        return put<uint8_t>(v.as_bool() ? 1 : 0);
      case ValueType::string:
        return string(v.as_string());
      case ValueType::array:
        put<uint32_t>(static_cast<uint32_t>(v.element_type()));
        put<uint64_t>(v.as_array().size());
        for (const Value& item : v.as_array()) value(item);
        return;
      case ValueType::uint64:
        return put<uint64_t>(v.as_uint());
      case ValueType::int64:
        return put<int64_t>(v.as_int());
      case ValueType::float64:
        return put<double>(v.as_float());
    }
  }
  void pad_to(uint64_t alignment) {
    while (out.size() % alignment != 0) out.push_back(0);
  }
};

}  // namespace

void save(const std::string& path, const std::map<std::string, Value>& metadata,
          const std::vector<SaveTensor>& tensors) {
  uint64_t alignment = kDefaultAlignment;
  if (auto it = metadata.find("general.alignment"); it != metadata.end()) {
    alignment = it->second.as_uint();
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      throw Error(fmt::format("gguf::save: general.alignment {} is not a power of two", alignment));
  }
  std::set<std::string> names;
  std::vector<std::vector<uint8_t>> data;
  for (const SaveTensor& t : tensors) {
    if (!names.insert(t.name).second)
      throw Error(fmt::format("gguf::save: tensor {} is listed twice", t.name));
    if (t.value.ndim() < 1 || t.value.ndim() > static_cast<int>(kMaxDims))
      throw ShapeError(fmt::format("gguf::save: tensor {} has {} dimensions (1 to {})", t.name,
                                   t.value.ndim(), kMaxDims));
    data.push_back(tensor_bytes(t.value, format(t.type), t.name));
  }
  Writer w;
  w.put<uint32_t>(kMagic);
  w.put<uint32_t>(3);
  w.put<uint64_t>(tensors.size());
  w.put<uint64_t>(metadata.size());
  for (const auto& [key, v] : metadata) {
    w.string(key);
    w.put<uint32_t>(static_cast<uint32_t>(v.type()));
    w.value(v);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].value.shape();
    w.string(tensors[i].name);
    w.put<uint32_t>(static_cast<uint32_t>(s.size()));
    for (auto it = s.rbegin(); it != s.rend(); ++it) w.put<uint64_t>(static_cast<uint64_t>(*it));
    w.put<uint32_t>(format(tensors[i].type).ggml_type);
    w.put<uint64_t>(offset);
    offset = (offset + data[i].size() + alignment - 1) / alignment * alignment;
  }
  w.pad_to(alignment);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(fmt::format("gguf::save: cannot write {}", path));
  f.write(reinterpret_cast<const char*>(w.out.data()), static_cast<std::streamsize>(w.out.size()));
  static const char zeros[256] = {};
  for (const std::vector<uint8_t>& d : data) {
    f.write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
    const uint64_t pad = (alignment - d.size() % alignment) % alignment;
    for (uint64_t left = pad; left > 0; left -= std::min<uint64_t>(left, sizeof zeros))
      f.write(zeros, static_cast<std::streamsize>(std::min<uint64_t>(left, sizeof zeros)));
  }
  if (!f) throw Error(fmt::format("gguf::save: writing {} failed", path));
}

}  // namespace vkgrad::gguf
