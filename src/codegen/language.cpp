// codegen: the printers' shared tables and code (see language.hpp).
#include "codegen/language.hpp"

#include <cctype>
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

std::string c_identifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  if (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "v" : out;
}

}  // namespace vkgrad
