// DType names, sizes and tinygrad's promotion lattice.
#include <fmt/format.h>

#include <array>
#include <limits>
#include <vkgrad/dtype.hpp>
#include <vkgrad/error.hpp>

namespace vkgrad {
namespace {

struct ScalarInfo {
  const char* name;
  int itemsize;
  int priority;
};

constexpr std::array<ScalarInfo, kNumScalarTypes> kInfo = {{
    {"void", 0, -1},
    {"bool", 1, 0},
    {"int8", 1, 1},
    {"uint8", 1, 2},
    {"int16", 2, 3},
    {"uint16", 2, 4},
    {"int32", 4, 5},
    {"uint32", 4, 6},
    {"int64", 8, 7},
    {"uint64", 8, 8},
    {"float16", 2, 9},
    {"bfloat16", 2, 10},
    {"float32", 4, 11},
    {"float64", 8, 12},
    {"index", 8, -1},
}};

const ScalarInfo& info(ScalarType s) { return kInfo[static_cast<size_t>(s)]; }

constexpr uint32_t bit(ScalarType s) { return 1u << static_cast<unsigned>(s); }

// Each type's direct parents in the lattice.
constexpr uint32_t direct_parents(ScalarType s) {
  using S = ScalarType;
  switch (s) {
    case S::bool_:
      return bit(S::int8) | bit(S::uint8);
    case S::int8:
      return bit(S::int16);
    case S::int16:
      return bit(S::int32);
    case S::int32:
      return bit(S::int64);
    case S::int64:
      return bit(S::float16) | bit(S::bfloat16);
    case S::uint8:
      return bit(S::int16) | bit(S::uint16);
    case S::uint16:
      return bit(S::int32) | bit(S::uint32);
    case S::uint32:
      return bit(S::int64) | bit(S::uint64);
    case S::uint64:
      return bit(S::float16) | bit(S::bfloat16);
    case S::float16:
      return bit(S::float32);
    case S::bfloat16:
      return bit(S::float32);
    case S::float32:
      return bit(S::float64);
    default:
      return 0;
  }
}

// The type and everything it promotes to, as a bit set; computed by walking up the lattice.
constexpr uint32_t ancestors(ScalarType s) {
  uint32_t set = bit(s), frontier = bit(s);
  while (frontier) {
    uint32_t next = 0;
    for (int i = 0; i < kNumScalarTypes; ++i)
      if (frontier & (1u << i)) next |= direct_parents(static_cast<ScalarType>(i));
    frontier = next & ~set;
    set |= next;
  }
  return set;
}

void check_promotable(DType d) {
  if (d.is_ptr() || d.count() != 1 || d.is_void())
    throw DTypeError(fmt::format("least_upper_dtype: cannot promote {}", d.name()));
}

}  // namespace

DType DType::vec(int n) const {
  if (ptr_ || count_ != 1 || n < 1 || n > 65535)
    throw DTypeError(fmt::format("DType::vec({}) of {}: need a scalar type and 1 <= n", n, name()));
  return DType(scalar_, n);
}

DType DType::ptr(int64_t size, AddrSpace addr) const {
  if (ptr_) throw DTypeError(fmt::format("DType::ptr of pointer type {}", name()));
  DType d = *this;
  d.ptr_ = true;
  d.addr_ = addr;
  d.size_ = size;
  return d;
}

int DType::itemsize() const { return ptr_ ? 8 : info(scalar_).itemsize * count_; }

int DType::priority() const { return info(scalar_).priority; }

std::string DType::name() const {
  std::string s = info(scalar_).name;
  if (count_ != 1) s = fmt::format("{}.vec({})", s, count_);
  if (!ptr_) return s;
  const char* space = addr_ == AddrSpace::local ? ".local" : addr_ == AddrSpace::reg ? ".reg" : "";
  return size_ >= 0 ? fmt::format("{}{}*[{}]", s, space, size_) : fmt::format("{}{}*", s, space);
}

size_t DType::hash() const {
  uint64_t h = static_cast<uint64_t>(scalar_) | (uint64_t{ptr_} << 8) |
               (static_cast<uint64_t>(addr_) << 9) | (uint64_t{count_} << 12);
  h ^= static_cast<uint64_t>(size_) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

namespace dtypes {

DType least_upper_dtype(DType a, DType b) {
  check_promotable(a);
  check_promotable(b);
  if (a == b) return a;
  // index behaves as an integer of unbounded width: it absorbs other integers and bool.
  if (a == index || b == index) {
    DType other = a == index ? b : a;
    return other.is_float() ? other : index;
  }
  uint32_t common = ancestors(a.scalar_type()) & ancestors(b.scalar_type());
  DType best;
  for (int i = 0; i < kNumScalarTypes; ++i) {
    if (!(common & (1u << i))) continue;
    DType d(static_cast<ScalarType>(i));
    if (best.is_void() || d.priority() < best.priority()) best = d;
  }
  return best;
}

DType least_upper_dtype(std::initializer_list<DType> ds) {
  if (ds.size() == 0) throw DTypeError("least_upper_dtype: no dtypes given");
  DType r = *ds.begin();
  check_promotable(r);
  for (DType d : ds) r = least_upper_dtype(r, d);
  return r;
}

int64_t min_int(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::bool_:
      return 0;
    case ScalarType::int8:
      return std::numeric_limits<int8_t>::min();
    case ScalarType::int16:
      return std::numeric_limits<int16_t>::min();
    case ScalarType::int32:
      return std::numeric_limits<int32_t>::min();
    case ScalarType::uint8:
    case ScalarType::uint16:
    case ScalarType::uint32:
    case ScalarType::uint64:
      return 0;
    default:
      return std::numeric_limits<int64_t>::min();
  }
}

int64_t max_int(DType d) {
  switch (d.scalar_type()) {
    case ScalarType::bool_:
      return 1;
    case ScalarType::int8:
      return std::numeric_limits<int8_t>::max();
    case ScalarType::int16:
      return std::numeric_limits<int16_t>::max();
    case ScalarType::int32:
      return std::numeric_limits<int32_t>::max();
    case ScalarType::uint8:
      return std::numeric_limits<uint8_t>::max();
    case ScalarType::uint16:
      return std::numeric_limits<uint16_t>::max();
    case ScalarType::uint32:
      return std::numeric_limits<uint32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

}  // namespace dtypes
}  // namespace vkgrad
