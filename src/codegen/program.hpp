// codegen: what codegen hands a runtime — one kernel's rendered source and how to launch it.
// Depends on ir only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad {

struct Program {
  std::string name;           // tinygrad-style: E_ (elementwise) or r_ (reduce) + axis sizes
  std::string source;         // the whole translation unit
  int64_t parallel_size = 1;  // trip count of the outermost global loop (split across threads)
  int num_buffers = 0;
  std::vector<UOp> uops;  // the optimized kernel AST's nodes, children first (DEBUG=5)
};

struct CodegenOptions {
  bool optimize = true;  // false with NOOPT=1: no upcasts, no split accumulators
};

}  // namespace vkgrad
