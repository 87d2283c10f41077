// codegen: the printers' shared tables and code (see language.hpp).
#include "codegen/language.hpp"

#include <vkgrad/error.hpp>

namespace vkgrad {

const TypeNames& type_names(const TypeTable& table, DType d, const char* language) {
  const TypeNames& row = table[static_cast<size_t>(d.scalar_type())];
  if (row.compute == nullptr)
    throw InternalError(std::string(language) + ": no type for " + d.name());
  return row;
}

const char* infix(Ops op) {
  switch (op) {
    case Ops::ADD:
      return "+";
    case Ops::SUB:
      return "-";
    case Ops::MUL:
      return "*";
    case Ops::FDIV:
    case Ops::IDIV:
      return "/";
    case Ops::MOD:
      return "%";
    case Ops::CMPLT:
      return "<";
    case Ops::CMPNE:
      return "!=";
    case Ops::CMPEQ:
      return "==";
    case Ops::AND:
      return "&";
    case Ops::OR:
      return "|";
    case Ops::XOR:
      return "^";
    case Ops::SHL:
      return "<<";
    case Ops::SHR:
      return ">>";
    default:
      return nullptr;
  }
}

const char* bool_infix(Ops op) {
  switch (op) {
    case Ops::ADD:
    case Ops::OR:
      return "||";
    case Ops::MUL:
    case Ops::AND:
      return "&&";
    case Ops::SUB:
    case Ops::XOR:
      return "^^";
    default:
      return nullptr;
  }
}

const char* const kHalfConversions = R"(VKG_FN float vkg_h2f(VKG_U32 h) {
  VKG_U32 s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0u) {
    if (m == 0u) u = s;
    else { e = 113u; while ((m & 0x400u) == 0u) { m <<= 1; e--; } u = s | (e << 23) | ((m & 0x3ffu) << 13); }
  } else if (e == 31u) u = s | 0x7f800000u | (m << 13);
  else u = s | ((e + 112u) << 23) | (m << 13);
  return vkg_u2f(u);
}
VKG_FN VKG_U32 vkg_f2h(float f) {
  VKG_U32 u = vkg_f2u(f);
  VKG_U32 s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return s | 0x7e00u;
  if (a >= 0x477ff000u) return s | 0x7c00u;
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return s;
    VKG_U32 e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;
    VKG_U32 r = m >> sh, rem = m & ((1u << sh) - 1u), hf = 1u << (sh - 1u);
    if (rem > hf || (rem == hf && (r & 1u) != 0u)) r++;
    return s | r;
  }
  VKG_U32 r = a - 0x38000000u, h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
  return s | h;
}
VKG_FN float vkg_bf2f(VKG_U32 h) { return vkg_u2f(h << 16); }
VKG_FN VKG_U32 vkg_f2bf(float f) {
  VKG_U32 u = vkg_f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
)";

}  // namespace vkgrad
