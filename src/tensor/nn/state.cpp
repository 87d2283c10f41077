// tensor/nn: .safetensors files (safe_save, safe_load). The format: an 8-byte little-endian
// header length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {str: str}}, then the data, offsets counted from the end of the header.
// Loading maps the file read-only and checks every entry against the file's size before any
// byte of data is touched, so a malformed file is a FormatError, never a read out of bounds.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>
#include <vkgrad/nn.hpp>

namespace vkgrad::nn::state {
namespace {

using json = nlohmann::json;

// The file's data is little-endian and is handed to from_bytes as it lies.
static_assert(std::endian::native == std::endian::little, "safetensors: big-endian host");

// The reference implementation refuses headers above 100 MB; so do we (a length read from a
// corrupt file must not turn into a huge allocation).
constexpr uint64_t kMaxHeader = 100'000'000;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypes[] = {
    {dtypes::float64, "F64"},   {dtypes::float32, "F32"}, {dtypes::float16, "F16"},
    {dtypes::bfloat16, "BF16"}, {dtypes::int64, "I64"},   {dtypes::int32, "I32"},
    {dtypes::int16, "I16"},     {dtypes::int8, "I8"},     {dtypes::uint64, "U64"},
    {dtypes::uint32, "U32"},    {dtypes::uint16, "U16"},  {dtypes::uint8, "U8"},
    {dtypes::bool_, "BOOL"},
};

const char* format_name(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  throw DTypeError("safe_save: " + dtype.name() + " has no .safetensors dtype");
}

std::optional<DType> dtype_of(const std::string& name) {
  for (const DTypeName& d : kDTypes)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

// A read-only mapping of a whole file, unmapped on scope exit.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("safe_load: cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error("safe_load: " + path + " is not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        throw Error("safe_load: cannot map " + path + ": " + std::strerror(err));
      }
      data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);  // the mapping stays valid without the descriptor
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// The parsed and checked header of a mapped file: entries (by begin offset) and metadata, and
// where the data starts.
struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  const uint8_t* data = nullptr;
  uint64_t data_size = 0;
};

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw FormatError("safe_load: " + path + ": " + why);
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Entry parse_entry(const std::string& path, const std::string& name, const json& j) {
  const std::string where = "tensor \"" + name + "\"";
  if (!j.is_object()) bad(path, where + " is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!j.contains(key)) bad(path, where + " lacks \"" + key + "\"");
  const json& jd = j.at("dtype");
  if (!jd.is_string()) bad(path, where + ": \"dtype\" is not a string");
  std::optional<DType> dtype = dtype_of(jd.get<std::string>());
  if (!dtype) bad(path, where + ": unknown dtype \"" + jd.get<std::string>() + "\"");

  const json& js = j.at("shape");
  if (!js.is_array()) bad(path, where + ": \"shape\" is not an array");
  Shape shape;
  // numel * itemsize must not overflow: each factor is checked against what is left.
  uint64_t bytes = static_cast<uint64_t>(dtype->itemsize());
  bool zero = false;
  for (const json& d : js) {
    if (!d.is_number_unsigned()) bad(path, where + ": shape entries must be non-negative integers");
    const uint64_t n = d.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(path, where + ": dimension " + std::to_string(n) + " too large");
    if (n == 0) zero = true;
    if (!zero && n != 0 && bytes > std::numeric_limits<uint64_t>::max() / n)
      bad(path, where + ": shape too large");
    if (!zero) bytes *= n;
    shape.push_back(static_cast<int64_t>(n));
  }
  if (zero) bytes = 0;

  const json& jo = j.at("data_offsets");
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() ||
      !jo[1].is_number_unsigned())
    bad(path, where + ": \"data_offsets\" must be two non-negative integers");
  const uint64_t begin = jo[0].get<uint64_t>(), end = jo[1].get<uint64_t>();
  if (begin > end)
    bad(path, where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                  "] run backwards");
  if (end - begin != bytes)
    bad(path, where + ": data_offsets hold " + std::to_string(end - begin) + " bytes, " +
                  dtype->name() + " of this shape needs " + std::to_string(bytes));
  return Entry{name, *dtype, std::move(shape), begin, end};
}

Header parse_header(const std::string& path, const MappedFile& file) {
  if (file.size() < 8)
    bad(path, "file of " + std::to_string(file.size()) + " bytes has no 8-byte header length");
  const uint64_t n = read_u64_le(file.data());
  if (n > kMaxHeader) bad(path, "header length " + std::to_string(n) + " is absurd");
  if (n > file.size() - 8)
    bad(path, "header length " + std::to_string(n) + " runs past the end of the file (" +
                  std::to_string(file.size()) + " bytes)");
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  const json j = json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad(path, "header is not JSON");
  if (!j.is_object()) bad(path, "header is not a JSON object");

  Header h;
  h.data = file.data() + 8 + n;
  h.data_size = file.size() - 8 - n;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) bad(path, "\"__metadata__\" is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) bad(path, "metadata \"" + mk + "\" is not a string");
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    Entry e = parse_entry(path, key, value);
    if (e.end > h.data_size)
      bad(path, "tensor \"" + key + "\": data_offsets end " + std::to_string(e.end) +
                    " is past the data (" + std::to_string(h.data_size) + " bytes)");
    h.entries.push_back(std::move(e));
  }
  // No two tensors may share bytes (size-0 tensors share none).
  std::sort(h.entries.begin(), h.entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  const Entry* prev = nullptr;
  for (const Entry& e : h.entries) {
    if (e.begin == e.end) continue;
    if (prev && e.begin < prev->end)
      bad(path, "tensors \"" + prev->name + "\" and \"" + e.name + "\" overlap");
    prev = &e;
  }
  return h;
}

}  // namespace

void safe_save(const StateDict& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata) {
  // Realize everything in one schedule, then copy out.
  std::vector<Tensor> all;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") throw Error("safe_save: \"__metadata__\" is not a tensor name");
    format_name(t.dtype());  // unsupported dtypes fail before anything is written
    all.push_back(t.contiguous());
  }
  Tensor::realize_all(all);

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::vector<uint8_t>> blobs;
  uint64_t offset = 0;
  size_t i = 0;
  for (const auto& [name, t] : tensors) {
    blobs.push_back(all[i++].to_bytes());
    const uint64_t size = blobs.back().size();
    header[name] = {{"dtype", format_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned (as the reference writer does).
  text.append((8 - text.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("safe_save: cannot open " + path + " for writing");
  uint8_t len[8];
  for (int b = 0; b < 8; ++b) len[b] = static_cast<uint8_t>(text.size() >> (8 * b));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const std::vector<uint8_t>& blob : blobs)
    out.write(reinterpret_cast<const char*>(blob.data()),
              static_cast<std::streamsize>(blob.size()));
  out.close();
  if (!out) throw Error("safe_save: writing " + path + " failed");
}

StateDict safe_load(const std::string& path) {
  const MappedFile file(path);
  const Header h = parse_header(path, file);
  StateDict out;
  for (const Entry& e : h.entries) {
    const uint8_t* bytes = h.data + e.begin;
    const size_t size = static_cast<size_t>(e.end - e.begin);
    if (e.dtype == dtypes::bool_)
      for (size_t k = 0; k < size; ++k)
        if (bytes[k] > 1)
          bad(path, "tensor \"" + e.name + "\" holds a BOOL byte " + std::to_string(bytes[k]));
    // from_bytes copies, so the mapping can go when this returns.
    out.emplace(e.name, Tensor::from_bytes(size ? bytes : nullptr, size, e.shape, e.dtype));
  }
  return out;
}

std::map<std::string, std::string> safe_load_metadata(const std::string& path) {
  const MappedFile file(path);
  return parse_header(path, file).metadata;
}

}  // namespace vkgrad::nn::state
