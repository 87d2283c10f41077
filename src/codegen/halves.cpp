// codegen: float16 and bfloat16 written out as float32 arithmetic and bit code (see lower_halves
// in pipeline.hpp). Every value of a half type becomes a float32 that holds a value of that type:
//   a buffer of halves:     its DEFINE_GLOBAL points to uint16; a load widens the bits and
//                           decodes them, a store encodes its value into them;
//   shared memory:          holds the float32 values as they are;
//   an ALU result:          computed in float32, then rounded to the type (encode, decode);
//   a cast to a half type:  to float32 first (a double rounds twice, as C's (float) cast does),
//                           then rounded; a cast from one: from the float32;
//   a bitcast:              through the encoded bits (the low 16 of a uint32);
//   a reduction:            accumulates in float32, unrounded until it is stored.
// Encoding rounds to nearest even, keeps the sign of zeros and NaN, saturates to infinity and
// writes float16's subnormals; decoding is exact (a float16 subnormal m * 2^-24 as float(m) times
// 2^-24). The C and GLSL printers then never see a half type.
#include <fmt/format.h>

#include <cmath>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/passes.hpp"

namespace vkgrad {
namespace {

bool is_half(DType d) { return d.scalar() == dtypes::float16 || d.scalar() == dtypes::bfloat16; }

UOp u32(uint32_t v) { return UOp::const_(dtypes::uint32, int64_t{v}); }

// float16's bits (low 16 of a uint32) -> its value as float32.
UOp decode_f16(const UOp& h) {
  const UOp sign = (h & u32(0x8000u)) << u32(16);
  const UOp e = (h >> u32(10)) & u32(0x1fu);
  const UOp m = h & u32(0x3ffu);
  const UOp normal = sign | ((e + u32(112)) << u32(23)) | (m << u32(13));
  const UOp special = sign | u32(0x7f800000u) | (m << u32(13));
  const UOp tiny = (m.cast(dtypes::float32) * UOp::const_(dtypes::float32, std::ldexp(1.0, -24)))
                       .bitcast(dtypes::uint32) |
                   sign;
  return e.eq(u32(0)).where(tiny, e.eq(u32(31)).where(special, normal)).bitcast(dtypes::float32);
}

// float32 -> float16's bits (low 16 of a uint32), rounding to nearest even.
UOp encode_f16(const UOp& f) {
  const UOp u = f.bitcast(dtypes::uint32);
  const UOp sign = (u >> u32(16)) & u32(0x8000u);
  const UOp a = u & u32(0x7fffffffu);
  // Below float16's normals (a < 2^-14): the mantissa with its hidden bit, shifted by 14 to 24
  // (the amount clamped where another branch is taken), rounded on the bits shifted out.
  const UOp sub_range = a.lt(u32(0x38800000u)) & a.ge(u32(0x33000000u));
  const UOp shift = sub_range.where(u32(126) - (a >> u32(23)), u32(24));
  const UOp mant = (a & u32(0x7fffffu)) | u32(0x800000u);
  const UOp r = mant >> shift;
  const UOp rem = mant & ((u32(1) << shift) - u32(1));
  const UOp half_ulp = u32(1) << (shift - u32(1));
  const UOp up = half_ulp.lt(rem) | (rem.eq(half_ulp) & (r & u32(1)).ne(u32(0)));
  const UOp subnormal = sign | (r + up.cast(dtypes::uint32));
  // Normals: rebias the exponent, round the 13 bits dropped.
  const UOp n = a - u32(0x38000000u);
  const UOp h = n >> u32(13);
  const UOp nrem = n & u32(0x1fffu);
  const UOp nup = u32(0x1000u).lt(nrem) | (nrem.eq(u32(0x1000u)) & (h & u32(1)).ne(u32(0)));
  const UOp normal = sign | (h + nup.cast(dtypes::uint32));
  const UOp finite = a.lt(u32(0x38800000u)).where(subnormal, normal);
  const UOp small = a.lt(u32(0x33000000u)).where(sign, finite);
  const UOp big = a.ge(u32(0x477ff000u)).where(sign | u32(0x7c00u), small);
  return a.gt(u32(0x7f800000u)).where(sign | u32(0x7e00u), big);
}

UOp decode_bf16(const UOp& h) { return (h << u32(16)).bitcast(dtypes::float32); }

// float32 -> bfloat16's bits, rounding to nearest even; a NaN stays a (quiet) NaN.
UOp encode_bf16(const UOp& f) {
  const UOp u = f.bitcast(dtypes::uint32);
  const UOp nan = u32(0x7f800000u).lt(u & u32(0x7fffffffu));
  const UOp rounded = (u + u32(0x7fffu) + ((u >> u32(16)) & u32(1))) >> u32(16);
  return nan.where((u >> u32(16)) | u32(0x40u), rounded);
}

UOp encode(DType half, const UOp& f) {
  return half.scalar() == dtypes::float16 ? encode_f16(f) : encode_bf16(f);
}
UOp decode(DType half, const UOp& bits) {
  return half.scalar() == dtypes::float16 ? decode_f16(bits) : decode_bf16(bits);
}
UOp round_to(DType half, const UOp& f) { return decode(half, encode(half, f)); }

UOp to_f32(const UOp& x) { return x.dtype() == dtypes::float32 ? x : x.cast(dtypes::float32); }

// `u` with its sources already lowered (`src`).
UOp lower(const UOp& u, std::vector<UOp> src) {
  const DType d = u.dtype();
  switch (u.op()) {
    case Ops::DEFINE_GLOBAL:
      if (!is_half(d.base())) break;
      return UOp::define_global(dtypes::uint16.ptr(d.size()), u.arg_as<int64_t>());
    case Ops::DEFINE_LOCAL:
      if (!is_half(d.base())) break;
      return u.replace(Ops::DEFINE_LOCAL, dtypes::float32.ptr(d.size(), d.addrspace()), {},
                       u.arg());
    case Ops::INDEX: {
      const DType ptr = src[0].dtype();
      return u.replace(Ops::INDEX, ptr, std::move(src), u.arg());
    }
    case Ops::LOAD: {
      if (!is_half(d)) break;
      const DType buf = src[0].src(0).dtype();
      if (buf.base() == dtypes::float32) return u.replace(Ops::LOAD, dtypes::float32, src, u.arg());
      const UOp bits = u.replace(Ops::LOAD, dtypes::uint16, src, u.arg());
      return decode(d, bits.cast(dtypes::uint32));
    }
    case Ops::STORE: {
      const DType vd = u.src(1).dtype();
      if (!is_half(vd) || src[0].src(0).dtype().base() == dtypes::float32) break;
      src[1] = encode(vd, src[1]).cast(dtypes::uint16);
      break;
    }
    case Ops::CONST:
      if (!is_half(d)) break;
      return UOp::const_(dtypes::float32, u.const_value());
    case Ops::CAST: {
      const DType from = u.src(0).dtype();
      if (is_half(d)) return round_to(d, to_f32(src[0]));
      if (!is_half(from)) break;
      return d == dtypes::float32 ? src[0] : src[0].cast(d);
    }
    case Ops::BITCAST: {
      const DType from = u.src(0).dtype();
      if (!is_half(d) && !is_half(from)) break;
      const UOp bits =
          is_half(from) ? encode(from, src[0]) : src[0].cast(dtypes::uint32) & u32(0xffffu);
      return is_half(d) ? decode(d, bits) : bits.cast(d);
    }
    case Ops::REDUCE:
      if (!is_half(d)) break;
      return u.replace(Ops::REDUCE, dtypes::float32, std::move(src), u.arg());
    default:
      if (!is_half(d)) break;
      if (!is_alu(u.op()) || d.count() != 1)
        throw InternalError(
            fmt::format("lower_halves: no float32 form for {} of {}", op_name(u.op()), d.name()));
      return round_to(d, u.replace(u.op(), dtypes::float32, std::move(src), u.arg()));
  }
  return u.replace(std::move(src));
}

}  // namespace

UOp lower_halves(const UOp& kernel) {
  const std::vector<UOp> topo = toposort(kernel);
  bool any = false;
  for (const UOp& u : topo) any = any || is_half(u.dtype().base());
  if (!any) return kernel;
  std::unordered_map<const UOpNode*, UOp> done;
  for (const UOp& u : topo) {
    std::vector<UOp> src;
    src.reserve(u.src().size());
    for (const UOp& s : u.src()) src.push_back(done.at(s.get()));
    done.emplace(u.get(), lower(u, std::move(src)));
  }
  return done.at(kernel.get());
}

}  // namespace vkgrad
