// sched: cuts a tensor-level graph (lazy.hpp) into kernels. Splits large reductions in two
// (split_reduce.hpp), decides which nodes become buffers (outputs, contiguous(), reductions that
// feed an expand or another reduction), lowers each kernel's movement ops into index expressions
// (padding as valid masks) and plans the memory of intermediate buffers. The result is
// device-independent; codegen renders each kernel. Depends on ir only.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/uop.hpp"
#include "sched/lazy.hpp"

namespace vkgrad {

// A tensor graph with its input buffers replaced by numbered placeholders: the same structure
// gives the same `key` node (interned), whatever the buffers — the schedule cache's key.
// Bound variables (BIND) become their DEFINE_VAR, so every value of a variable shares the key.
struct NormalizedGraph {
  UOp key;                  // SINK(roots with placeholders)
  std::vector<UOp> inputs;  // the real BUFFER nodes, in placeholder order
  lazy::VarValues vars;     // the values the graph bound its variables to
};
NormalizedGraph normalize_graph(std::span<const UOp> roots);
bool is_placeholder(const UOp& buffer);
int64_t placeholder_index(const UOp& buffer);

struct ScheduleBuffer {
  enum class Kind { input, output, intermediate };
  Kind kind;
  DType dtype;
  int64_t count = 0;  // elements; with symbolic dimensions, at the variables' maxima
  int index = 0;      // input: placeholder number; output: root number; intermediate: arena slot
};

// One kernel: a kernel-level AST and the schedule buffers its DEFINE_GLOBAL slots name.
//   SINK(STORE(INDEX(DEFINE_GLOBAL(ptr, 0), flat_index), value))
// `value` uses RANGE (AxisType::global for output axes, reduce for reduced ones), LOAD(INDEX(
// DEFINE_GLOBAL(ptr, slot), index[, valid])), REDUCE(value, ranges...) with arg ADD/MUL/MAX,
// CONST, ALU ops, CAST and BITCAST. Slot 0 is the output.
struct ScheduleKernel {
  UOp ast;
  std::vector<int> buffers;  // slot -> index into Schedule::buffers
  Shape global_shape;        // the output's shape (symbolic dimensions: lazy.hpp)
};

struct Schedule {
  std::vector<ScheduleBuffer> buffers;
  std::vector<ScheduleKernel> kernels;    // in execution order
  std::vector<int> outputs;               // per root: index into buffers (-1: the root is an input)
  std::vector<Shape> output_shapes;       // symbolic dimensions resolve with NormalizedGraph::vars
  std::vector<int64_t> arena_slot_bytes;  // memory plan: bytes of each reusable slot
};

// The most buffers one kernel binds, its output included (lavapipe allows 32 storage buffers
// per shader stage; most mobile GPUs at least 24): a kernel that would read more is cut.
inline constexpr size_t kMaxKernelBuffers = 24;

// Build the schedule of a normalized graph (its roots are key.src()).
Schedule build_schedule(const UOp& key);

}  // namespace vkgrad
