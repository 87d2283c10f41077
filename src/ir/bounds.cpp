// vmin/vmax: a conservative inclusive range for integer and bool nodes, computed once per node
// and cached in it. Any result that could overflow the dtype widens to the dtype's full range.
// Values are int64 bit patterns: a uint64 at or above 2^63 reads as negative, so uint64's full
// range is all of int64, and ops that compare or divide unsigned values give up on a range that
// may hold such a value (lo < 0).
#include <algorithm>
#include <limits>
#include <vkgrad/error.hpp>

#include "ir/scalar.hpp"
#include "ir/uop.hpp"

namespace vkgrad {
namespace {

using i128 = __int128;
struct Range {
  int64_t lo, hi;
};

Range full(DType d) {
  if (d.is_float() || d.is_ptr() || d.is_void() || d.count() != 1 ||
      d.scalar_type() == ScalarType::uint64)
    return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  return {dtypes::min_int(d), dtypes::max_int(d)};
}

// An unsigned operand range that may hold a value >= 2^63 (a negative int64 pattern).
bool beyond_int64(DType operand, const std::vector<Range>& s) {
  if (!operand.is_unsigned()) return false;
  for (const Range& r : s)
    if (r.lo < 0) return true;
  return false;
}

// A range computed in 128 bits, kept only if it fits the dtype.
Range fit(DType d, i128 lo, i128 hi) {
  Range f = full(d);
  if (lo < f.lo || hi > f.hi) return f;
  return {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

int64_t trunc_div(int64_t a, int64_t b) { return a / b; }
i128 abs128(int64_t v) { return v < 0 ? -i128{v} : i128{v}; }

int bit_length(int64_t v) { return v <= 0 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(v)); }

Range compute(const UOp& u, const std::vector<Range>& s) {
  DType dt = u.dtype();
  Range f = full(dt);
  if (dt.is_float() || dt.is_ptr() || dt.count() != 1) return f;
  for (const Range& r : s)
    if (r.lo > r.hi) return f;
  if (dt.scalar_type() == ScalarType::uint64 && u.op() == Ops::CONST && as_int(u.const_value()) < 0)
    return f;
  const bool same_operands = s.size() == 2 && u.src(0) == u.src(1);
  if (!u.src().empty() && beyond_int64(u.src(0).dtype(), s)) {
    switch (u.op()) {  // these read the operands as unsigned numbers
      case Ops::CMPLT:
        return {0, 1};
      case Ops::IDIV:
      case Ops::MOD:
      case Ops::MAX:
      case Ops::SHR:
        return f;
      default:
        break;
    }
  }
  switch (u.op()) {
    case Ops::CONST: {
      ConstValue v = u.const_value();
      int64_t x = std::holds_alternative<bool>(v) ? std::get<bool>(v) : as_int(v);
      return {x, x};
    }
    case Ops::DEFINE_VAR: {
      const auto& a = u.arg_as<VarArg>();
      return {a.min, a.max};
    }
    case Ops::BIND:
      return s[0];
    case Ops::RANGE:
    case Ops::SPECIAL:
      return fit(dt, 0, std::max<i128>(0, i128{s[0].hi} - 1));
    case Ops::ADD:
      return fit(dt, i128{s[0].lo} + s[1].lo, i128{s[0].hi} + s[1].hi);
    case Ops::SUB:
      return fit(dt, i128{s[0].lo} - s[1].hi, i128{s[0].hi} - s[1].lo);
    case Ops::MUL: {
      if (same_operands) {  // x*x >= 0
        i128 a = i128{s[0].lo} * s[0].lo, b = i128{s[0].hi} * s[0].hi;
        i128 lo = s[0].lo <= 0 && s[0].hi >= 0 ? 0 : std::min(a, b);
        return fit(dt, lo, std::max(a, b));
      }
      i128 c[4] = {i128{s[0].lo} * s[1].lo, i128{s[0].lo} * s[1].hi, i128{s[0].hi} * s[1].lo,
                   i128{s[0].hi} * s[1].hi};
      return fit(dt, *std::min_element(c, c + 4), *std::max_element(c, c + 4));
    }
    case Ops::IDIV: {
      // Truncating division is monotonic in each argument within one sign of the divisor.
      if (s[1].lo <= 0 && s[1].hi >= 0) return f;
      if (s[0].lo == std::numeric_limits<int64_t>::min() && s[1].lo <= -1 && s[1].hi >= -1)
        return f;  // INT64_MIN / -1 overflows
      i128 c[4] = {trunc_div(s[0].lo, s[1].lo), trunc_div(s[0].lo, s[1].hi),
                   trunc_div(s[0].hi, s[1].lo), trunc_div(s[0].hi, s[1].hi)};
      return fit(dt, *std::min_element(c, c + 4), *std::max_element(c, c + 4));
    }
    case Ops::MOD: {
      if (s[1].lo <= 0 && s[1].hi >= 0) return f;
      // |x % y| < |y|, and the result takes the sign of x.
      i128 m = std::max(abs128(s[1].lo), abs128(s[1].hi)) - 1;
      // |x| below every |y|: x % y is x.
      i128 least = s[1].lo > 0 ? i128{s[1].lo} : -i128{s[1].hi};
      if (abs128(s[0].lo) < least && abs128(s[0].hi) < least) return s[0];
      i128 lo = s[0].lo >= 0 ? 0 : std::max<i128>(-m, s[0].lo);
      i128 hi = s[0].hi <= 0 ? 0 : std::min<i128>(m, s[0].hi);
      return fit(dt, lo, hi);
    }
    case Ops::MAX:
      return {std::max(s[0].lo, s[1].lo), std::max(s[0].hi, s[1].hi)};
    case Ops::NEG:
      return fit(dt, -i128{s[0].hi}, -i128{s[0].lo});
    case Ops::CMPLT:
      if (same_operands) return {0, 0};  // x < x is false, NaN included
      if (u.src(0).dtype().is_float()) return {0, 1};
      if (s[0].hi < s[1].lo) return {1, 1};
      if (s[0].lo >= s[1].hi) return {0, 0};
      return {0, 1};
    case Ops::CMPNE:
    case Ops::CMPEQ: {
      bool disjoint = s[0].hi < s[1].lo || s[0].lo > s[1].hi;
      bool same_point = s[0].lo == s[0].hi && s[1].lo == s[1].hi && s[0].lo == s[1].lo;
      if (u.src(0).dtype().is_float()) return {0, 1};
      if (same_operands) return u.op() == Ops::CMPNE ? Range{0, 0} : Range{1, 1};
      if (disjoint) return u.op() == Ops::CMPNE ? Range{1, 1} : Range{0, 0};
      if (same_point) return u.op() == Ops::CMPNE ? Range{0, 0} : Range{1, 1};
      return {0, 1};
    }
    case Ops::WHERE:
      if (s[0].lo == 1) return s[1];
      if (s[0].hi == 0) return s[2];
      return {std::min(s[1].lo, s[2].lo), std::max(s[1].hi, s[2].hi)};
    case Ops::AND:
      if (dt.is_bool()) return {s[0].lo & s[1].lo, s[0].hi & s[1].hi};
      if (s[0].lo >= 0 && s[1].lo >= 0) return {0, std::min(s[0].hi, s[1].hi)};
      if (s[0].lo >= 0) return {0, s[0].hi};
      if (s[1].lo >= 0) return {0, s[1].hi};
      break;
    case Ops::OR:
    case Ops::XOR:
      if (dt.is_bool()) {
        if (u.op() == Ops::OR) return {s[0].lo | s[1].lo, s[0].hi | s[1].hi};
        break;
      }
      if (s[0].lo >= 0 && s[1].lo >= 0) {
        int bits = std::max(bit_length(s[0].hi), bit_length(s[1].hi));
        i128 hi = (i128{1} << bits) - 1;
        i128 lo = u.op() == Ops::OR ? std::max(s[0].lo, s[1].lo) : 0;
        return fit(dt, lo, hi);
      }
      break;
    case Ops::SHL:
      if (s[1].lo == s[1].hi && s[1].lo >= 0 && s[1].lo < 63)
        return fit(dt, i128{s[0].lo} << s[1].lo, i128{s[0].hi} << s[1].lo);
      break;
    case Ops::SHR:
      if (s[1].lo >= 0 && s[1].hi < 64 && s[0].lo >= 0)
        return {s[0].lo >> s[1].hi, s[0].hi >> s[1].lo};
      break;
    case Ops::CAST: {
      DType from = u.src(0).dtype();
      if (from.is_float() || from.is_ptr()) break;
      if (dt.is_bool()) {
        if (s[0].lo > 0 || s[0].hi < 0) return {1, 1};
        if (s[0].lo == 0 && s[0].hi == 0) return {0, 0};
        return {0, 1};
      }
      if (s[0].lo >= f.lo && s[0].hi <= f.hi) return s[0];
      break;
    }
    default:
      break;
  }
  return f;
}

}  // namespace

struct BoundsCache {
  static void ensure(const UOp& root) {
    if (root.get()->bounds_ready_.load(std::memory_order_acquire)) return;
    // Visit only the nodes not yet cached, children first, without recursion.
    std::vector<std::pair<const UOp*, size_t>> stack{{&root, 0}};
    std::vector<Range> srcs;
    while (!stack.empty()) {
      auto& [u, i] = stack.back();
      const UOpNode* n = u->get();
      if (i < n->src.size()) {
        const UOp& s = n->src[i++];
        if (!s.get()->bounds_ready_.load(std::memory_order_acquire)) stack.emplace_back(&s, 0);
        continue;
      }
      srcs.clear();
      for (const UOp& s : n->src)
        srcs.push_back({s.get()->vmin_.load(std::memory_order_relaxed),
                        s.get()->vmax_.load(std::memory_order_relaxed)});
      Range r = compute(*u, srcs);
      n->vmin_.store(r.lo, std::memory_order_relaxed);
      n->vmax_.store(r.hi, std::memory_order_relaxed);
      n->bounds_ready_.store(true, std::memory_order_release);
      stack.pop_back();
    }
  }
};

int64_t UOp::vmin() const {
  BoundsCache::ensure(*this);
  return p_->vmin_.load(std::memory_order_relaxed);
}

int64_t UOp::vmax() const {
  BoundsCache::ensure(*this);
  return p_->vmax_.load(std::memory_order_relaxed);
}

}  // namespace vkgrad
