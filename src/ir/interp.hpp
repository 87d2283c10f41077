// ir: the reference interpreter for scalar and index UOps — the executable definition of their
// semantics (see uop.hpp), the constant folder's arithmetic, and the oracle for simplifier tests
// and the fuzzer. Depends on uop and scalar.
#pragma once

#include <map>
#include <span>
#include <string>

#include "ir/uop.hpp"

namespace vkgrad {

struct InterpEnv {
  std::map<std::string, int64_t> vars;  // DEFINE_VAR and SPECIAL values by name
  std::map<int64_t, int64_t> ranges;    // RANGE values by axis id
};

// One ALU/CAST step on constant operands, in `out` dtype (operands have the sources' dtypes).
// Throws Error on integer division or modulo by zero.
ConstValue exec_alu(Ops op, DType out, std::span<const ConstValue> operands,
                    std::span<const DType> operand_dtypes);
// Evaluate a scalar graph. Throws Error on an op it cannot evaluate or a missing variable.
ConstValue evaluate(const UOp& u, const InterpEnv& env = {});

}  // namespace vkgrad
