// Public: DType, the element type of tensors and of IR nodes (scalars, vectors, pointers), and
// tinygrad's type-promotion lattice. Depends on the standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace vkgrad {

// Scalar kinds, in tinygrad's priority order. `index` is the type of symbolic index math: an
// integer as wide as the target needs (64-bit in the reference interpreter).
enum class ScalarType : uint8_t {
  void_,
  bool_,
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  bfloat16,
  float32,
  float64,
  index,
};
inline constexpr int kNumScalarTypes = 15;

// Where a pointer points: device memory, workgroup-shared memory, or registers.
enum class AddrSpace : uint8_t { global, local, reg };

// A small value type: a scalar kind, a vector width (1 for scalars), and, for pointers, the
// address space and the number of elements pointed to (-1 when unknown).
class DType {
 public:
  constexpr DType() = default;
  constexpr explicit DType(ScalarType s, int count = 1)
      : scalar_(s), count_(static_cast<uint16_t>(count)) {}

  constexpr ScalarType scalar_type() const { return scalar_; }
  constexpr int count() const { return count_; }
  constexpr bool is_ptr() const { return ptr_; }
  constexpr AddrSpace addrspace() const { return addr_; }
  constexpr int64_t size() const { return size_; }

  // The scalar element type (drops vector width and pointer-ness).
  constexpr DType scalar() const { return DType(scalar_); }
  // For a pointer, what it points to; otherwise itself.
  constexpr DType base() const { return DType(scalar_, count_); }
  // A vector of `n` of this scalar type (tinygrad's `dtypes.float.vec(4)`).
  DType vec(int n) const;
  DType ptr(int64_t size = -1, AddrSpace addr = AddrSpace::global) const;

  // Bytes of one element (a pointer counts as 8).
  int itemsize() const;
  // "float32", "int32", "bool", "float32.vec(4)", "float32*[16]" (global pointer of 16),
  // "float32.local*[64]".
  std::string name() const;
  int priority() const;

  constexpr bool is_float() const {
    return !ptr_ && (scalar_ == ScalarType::float16 || scalar_ == ScalarType::bfloat16 ||
                     scalar_ == ScalarType::float32 || scalar_ == ScalarType::float64);
  }
  constexpr bool is_unsigned() const {
    return !ptr_ && (scalar_ == ScalarType::uint8 || scalar_ == ScalarType::uint16 ||
                     scalar_ == ScalarType::uint32 || scalar_ == ScalarType::uint64);
  }
  constexpr bool is_int() const {  // signed or unsigned integer, or index; not bool
    return !ptr_ && !is_float() && scalar_ != ScalarType::bool_ && scalar_ != ScalarType::void_;
  }
  constexpr bool is_bool() const { return !ptr_ && scalar_ == ScalarType::bool_; }
  constexpr bool is_void() const { return !ptr_ && scalar_ == ScalarType::void_; }

  constexpr bool operator==(const DType&) const = default;
  size_t hash() const;

 private:
  ScalarType scalar_ = ScalarType::void_;
  bool ptr_ = false;
  AddrSpace addr_ = AddrSpace::global;
  uint16_t count_ = 1;
  int64_t size_ = -1;
};

namespace dtypes {
inline constexpr DType void_{ScalarType::void_};
inline constexpr DType bool_{ScalarType::bool_};
inline constexpr DType int8{ScalarType::int8};
inline constexpr DType uint8{ScalarType::uint8};
inline constexpr DType int16{ScalarType::int16};
inline constexpr DType uint16{ScalarType::uint16};
inline constexpr DType int32{ScalarType::int32};
inline constexpr DType uint32{ScalarType::uint32};
inline constexpr DType int64{ScalarType::int64};
inline constexpr DType uint64{ScalarType::uint64};
inline constexpr DType float16{ScalarType::float16};
inline constexpr DType bfloat16{ScalarType::bfloat16};
inline constexpr DType float32{ScalarType::float32};
inline constexpr DType float64{ScalarType::float64};
inline constexpr DType index{ScalarType::index};
inline constexpr DType default_float = float32;
inline constexpr DType default_int = int32;

// The smallest type every argument promotes to, following tinygrad's lattice
// (bool < int8/uint8 < ... < int64/uint64 < float16/bfloat16 < float32 < float64);
// e.g. int8 with uint8 gives int16, int64 with uint64 gives float16. `index` joins with any
// integer as index. Vector and pointer types are rejected (DTypeError).
DType least_upper_dtype(DType a, DType b);
DType least_upper_dtype(std::initializer_list<DType> ds);
// Integer dtypes' representable range (as int64; uint64's max saturates to INT64_MAX).
int64_t min_int(DType d);
int64_t max_int(DType d);
}  // namespace dtypes

}  // namespace vkgrad

template <>
struct std::hash<vkgrad::DType> {
  size_t operator()(const vkgrad::DType& d) const { return d.hash(); }
};
