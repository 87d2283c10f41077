// gguf: metadata values (include/vkgrad/gguf.hpp's Value): construction, the typed accessors and
// their mismatch errors. Depends on the public header only.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vkgrad/error.hpp>
#include <vkgrad/gguf.hpp>

namespace vkgrad::gguf {

std::string_view type_name(ValueType t) {
  switch (t) {
    case ValueType::uint8:
      return "uint8";
    case ValueType::int8:
      return "int8";
    case ValueType::uint16:
      return "uint16";
    case ValueType::int16:
      return "int16";
    case ValueType::uint32:
      return "uint32";
    case ValueType::int32:
      return "int32";
    case ValueType::float32:
      return "float32";
    case ValueType::bool_:
      return "bool";
    case ValueType::string:
      return "string";
    case ValueType::array:
      return "array";
    case ValueType::uint64:
      return "uint64";
    case ValueType::int64:
      return "int64";
    case ValueType::float64:
      return "float64";
  }
  return "unknown";
}

namespace {

bool is_signed(ValueType t) {
  return t == ValueType::int8 || t == ValueType::int16 || t == ValueType::int32 ||
         t == ValueType::int64;
}
bool is_unsigned(ValueType t) {
  return t == ValueType::uint8 || t == ValueType::uint16 || t == ValueType::uint32 ||
         t == ValueType::uint64;
}
bool is_float(ValueType t) { return t == ValueType::float32 || t == ValueType::float64; }

[[noreturn]] void mismatch(const Value& v, std::string_view wanted) {
  throw FormatError(fmt::format("gguf: a {} value read as {}", v.to_string(), wanted));
}

}  // namespace

Value Value::array(ValueType element, std::vector<Value> items) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].type() != element)
      throw FormatError(fmt::format("gguf: array<{}> item {} is a {}", type_name(element), i,
                                    type_name(items[i].type())));
  Value v;
  v.type_ = ValueType::array;
  v.element_ = element;
  v.items_ = std::move(items);
  return v;
}

Value Value::array(std::vector<std::string> items) {
  std::vector<Value> values;
  values.reserve(items.size());
  for (std::string& s : items) values.emplace_back(std::move(s));
  return array(ValueType::string, std::move(values));
}

Value Value::array(std::span<const float> items) {
  return array(ValueType::float32, std::vector<Value>(items.begin(), items.end()));
}

Value Value::array(std::span<const int32_t> items) {
  return array(ValueType::int32, std::vector<Value>(items.begin(), items.end()));
}

int64_t Value::as_int() const {
  if (is_signed(type_)) return i_;
  if (!is_unsigned(type_)) mismatch(*this, "an integer");
  if (u_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    mismatch(*this, "an int64 (too large)");
  return static_cast<int64_t>(u_);
}

uint64_t Value::as_uint() const {
  if (is_unsigned(type_)) return u_;
  if (!is_signed(type_)) mismatch(*this, "an unsigned integer");
  if (i_ < 0) mismatch(*this, "an unsigned integer (negative)");
  return static_cast<uint64_t>(i_);
}

double Value::as_float() const {
  if (!is_float(type_)) mismatch(*this, "a float");
  return f_;
}

bool Value::as_bool() const {
  if (type_ != ValueType::bool_) mismatch(*this, "a bool");
  return u_ != 0;
}

const std::string& Value::as_string() const {
  if (type_ != ValueType::string) mismatch(*this, "a string");
  return s_;
}

const std::vector<Value>& Value::as_array() const {
  if (type_ != ValueType::array) mismatch(*this, "an array");
  return items_;
}

std::vector<std::string> Value::as_strings() const {
  if (type_ != ValueType::array || element_ != ValueType::string)
    mismatch(*this, "an array of strings");
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const Value& v : items_) out.push_back(v.s_);
  return out;
}

std::vector<float> Value::as_floats() const {
  if (type_ != ValueType::array || !is_float(element_)) mismatch(*this, "an array of floats");
  std::vector<float> out;
  out.reserve(items_.size());
  for (const Value& v : items_) out.push_back(static_cast<float>(v.f_));
  return out;
}

std::vector<int64_t> Value::as_ints() const {
  if (type_ != ValueType::array || !(is_signed(element_) || is_unsigned(element_)))
    mismatch(*this, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(items_.size());
  for (const Value& v : items_) out.push_back(v.as_int());
  return out;
}

std::string Value::to_string() const {
  if (type_ == ValueType::array)
    return fmt::format("array<{}>[{}]", type_name(element_), items_.size());
  if (type_ == ValueType::string)
    return fmt::format("string \"{}\"", s_.size() > 40 ? s_.substr(0, 40) + "..." : s_);
  if (type_ == ValueType::bool_) return u_ ? "bool true" : "bool false";
  if (is_float(type_)) return fmt::format("{} {}", type_name(type_), f_);
  if (is_signed(type_)) return fmt::format("{} {}", type_name(type_), i_);
  return fmt::format("{} {}", type_name(type_), u_);
}

}  // namespace vkgrad::gguf
