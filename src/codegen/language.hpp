// codegen: what the C and GLSL printers share — their type names as tables (one row per scalar
// type) and the operators both write alike. Depends on ir.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "ir/uop.hpp"

namespace vkgrad {

struct TypeNames {
  const char* compute = nullptr;    // the type values are computed in
  const char* storage = nullptr;    // the type values are stored in (buffers)
  const char* unsigned_ = nullptr;  // its unsigned twin, for wrapping arithmetic
};
using TypeTable = std::array<TypeNames, kNumScalarTypes>;

// The row of `d`'s scalar type; InternalError naming the language for a type it has no row for.
const TypeNames& type_names(const TypeTable& table, DType d, const char* language);

// The operator C and GLSL both write between two operands for `op` ("+", "<", "<<", ...), or
// nullptr for an op that is not written that way.
const char* infix(Ops op);
// The logical operator GLSL writes for `op` on two bools (ADD is "||", MUL "&&", SUB and XOR
// "^^", AND "&&", OR "||"), or nullptr.
const char* bool_infix(Ops op);

// `name` as letters and digits joined by single '_' (every other run of characters), never
// empty: safe inside a C or GLSL identifier, and free of GLSL's reserved "__".
std::string c_identifier(std::string_view name);

}  // namespace vkgrad
