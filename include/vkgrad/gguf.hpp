// Public: GGUF files (llama.cpp's model format, versions 2 and 3). open() maps a file and reads
// its typed metadata and tensor table; tensor() gives a lazy Tensor whose quantized blocks stay
// on the device as bytes, dequantized inside whatever kernel reads them; save() writes a v3 file,
// quantizing with our own quantizers into llama.cpp's block layouts. Depends on tensor.hpp only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <vkgrad/tensor.hpp>

namespace vkgrad::gguf {

// GGUF's value types, by their numbers in the file.
enum class ValueType : uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  bool_ = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};
std::string_view type_name(ValueType t);

// One metadata value of any GGUF type. The constructors pick the type from the C++ type
// (int32_t -> int32, uint32_t -> uint32, float -> float32, double -> float64, ...); of() gives
// any type explicitly. The accessors throw FormatError naming both types on a mismatch:
// as_int / as_uint take every integer type (as_uint rejects a negative value, as_int one past
// int64), as_float the two float types, as_bool only bool.
class Value {
 public:
  Value() = default;  // uint8 0
  Value(int8_t v) : type_(ValueType::int8), i_(v) {}
  Value(uint8_t v) : type_(ValueType::uint8), u_(v) {}
  Value(int16_t v) : type_(ValueType::int16), i_(v) {}
  Value(uint16_t v) : type_(ValueType::uint16), u_(v) {}
  Value(int32_t v) : type_(ValueType::int32), i_(v) {}
  Value(uint32_t v) : type_(ValueType::uint32), u_(v) {}
  Value(int64_t v) : type_(ValueType::int64), i_(v) {}
  Value(uint64_t v) : type_(ValueType::uint64), u_(v) {}
  Value(float v) : type_(ValueType::float32), f_(v) {}
  Value(double v) : type_(ValueType::float64), f_(v) {}
  Value(bool v) : type_(ValueType::bool_), u_(v) {}
  Value(std::string v) : type_(ValueType::string), s_(std::move(v)) {}
  Value(const char* v) : type_(ValueType::string), s_(v) {}
  // An array of `element` values; every item must have that type (FormatError otherwise).
  static Value array(ValueType element, std::vector<Value> items);
  static Value array(std::vector<std::string> items);
  static Value array(std::span<const float> items);
  static Value array(std::span<const int32_t> items);

  ValueType type() const { return type_; }
  ValueType element_type() const { return element_; }  // arrays only
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_float() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const std::vector<Value>& as_array() const;
  // Arrays of one type as a vector: strings, floats (float types), integers (integer types).
  std::vector<std::string> as_strings() const;
  std::vector<float> as_floats() const;
  std::vector<int64_t> as_ints() const;
  std::string to_string() const;  // short: "uint32 22", "string \"llama\"", "array<string>[32000]"

 private:
  ValueType type_ = ValueType::uint8;
  ValueType element_ = ValueType::uint8;
  int64_t i_ = 0;
  uint64_t u_ = 0;
  double f_ = 0;
  std::string s_;
  std::vector<Value> items_;
};

// One tensor of the file's table. `type` is the GGML type name ("F32", "F16", "BF16", "Q4_0",
// "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"); `shape` is row-major
// (GGUF's ne reversed: a token embedding of ne {n_embd, n_vocab} has shape {n_vocab, n_embd});
// `offset` counts from the start of the data section, `bytes` is the tensor's size there.
struct TensorInfo {
  std::string name;
  std::string type;
  Shape shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// A block format: how many values one block holds and its bytes (F32: 1 value, 4 bytes).
struct Format {
  std::string_view name;
  uint32_t ggml_type = 0;  // the number GGUF stores
  int64_t block_values = 1;
  int64_t block_bytes = 0;
  bool quantized = false;
};
// The format of a type name; FormatError listing the supported names for any other.
const Format& format(std::string_view type);
// Every supported format, in GGML type order.
std::span<const Format> formats();

class File {
 public:
  File();
  uint32_t version() const;
  uint64_t alignment() const;  // general.alignment, 32 by default
  const std::string& path() const;
  const std::map<std::string, Value>& metadata() const;
  // A metadata value; Error naming the key (and the file) where it is absent.
  const Value& at(const std::string& key) const;
  const Value* find(const std::string& key) const;  // nullptr where absent
  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find_tensor(const std::string& name) const;  // nullptr where absent
  // The bytes of one tensor in the mapped file; Error naming the tensor where absent.
  std::span<const uint8_t> data(const std::string& name) const;
  // The tensor as a lazy Tensor on `device` (empty: the default device): F32 as float32, F16 and
  // BF16 as their dtypes, a quantized type as its raw blocks (uint8 on the device) dequantized
  // to float32 by the expression of dequantize(). Error naming a tensor that is absent.
  Tensor tensor(const std::string& name, const std::string& device = "") const;

 private:
  friend File open(const std::string& path);
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Maps a GGUF v2 or v3 file and reads its header, metadata and tensor table. FormatError naming
// the file and what is wrong: bad magic, an unsupported version, a truncated file, an unknown
// value or tensor type, a shape that does not fill whole blocks, a tensor past the end.
File open(const std::string& path);

// The float32 values of `blocks`, a uint8 tensor holding shape's values in `type`'s blocks
// (row-major; each row a whole number of blocks), as a lazy elementwise expression over the bytes:
// a kernel that reads the result reads the blocks, and nothing full-precision is stored unless
// the result is realized alone. ShapeError where the sizes do not match.
Tensor dequantize(const Tensor& blocks, std::string_view type, const Shape& shape);

// The host quantizers: values (row-major, each row `row` values, a whole number of blocks) in
// `type`'s block layout, byte for byte as llama.cpp lays it out. F32, F16 and BF16 give their
// little-endian bytes. ShapeError where the rows are not whole blocks.
std::vector<uint8_t> quantize(std::span<const float> values, std::string_view type, int64_t row);
// One tensor for save(): its value (realized and read back as float32, or written as is where
// it is already F32/F16/BF16 of that type) and the type to store it as.
struct SaveTensor {
  std::string name;
  Tensor value;
  std::string type = "F32";
};
// Writes a GGUF v3 file: the metadata (general.alignment, if given, sets the data alignment),
// then the tensor table and the data, each tensor aligned. Error naming a duplicate tensor name;
// ShapeError where a tensor's rows are not whole blocks of its type.
void save(const std::string& path, const std::map<std::string, Value>& metadata,
          const std::vector<SaveTensor>& tensors);

}  // namespace vkgrad::gguf
