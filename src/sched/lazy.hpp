// sched: the tensor-level graph — how Tensor operations are spelled as UOps before scheduling,
// and shape inference over them. The frontend builds these nodes; the scheduler reads them.
// Depends on ir only.
//
// Node forms (shapes are inferred, never stored in the graph):
//   BUFFER    dtype=element, src=(UNIQUE(arg=id), DEVICE(arg=name)), arg=int64 element count;
//             shape (count,). Storage lives exactly as long as the BUFFER node (engine hook).
//   CONST     a scalar, shape ().
//   IOTA      dtype=int32 or int64, arg=int64 n: the values 0..n-1, shape (n,).
//   ALU ops, CAST, BITCAST: elementwise over sources of one shape.
//   REDUCE_AXIS src=(x), arg=IntTuple{int(op), axis...} with op ADD, MUL or MAX; reduced axes
//             keep size 1.
//   RESHAPE/EXPAND arg=IntTuple new shape; PERMUTE arg=IntTuple order; PAD arg=PairTuple
//             (before, after); SHRINK arg=PairTuple (start, end); FLIP arg=IntTuple of 0/1 flags.
//   CONTIGUOUS src=(x): materialize x. DETACH src=(x): x (autograd only).
//   ASSIGN    src=(target, value, BIND...), arg=IntTuple offsets: the target (a BUFFER, a plain
//             view of one, or an earlier ASSIGN to it) with `value` written at `offsets` (one per
//             dimension; a symbolic dimension for a variable's value, bound by the BINDs). Its
//             kernel writes the target's buffer in place: it covers value's shape only, and
//             what reads the ASSIGN reads that buffer after the write. Shape: the target's.
//   GRAD_RULE src=(value, input...), arg=IntTuple{int(rule), parameter...}: value, whose gradient
//             a rule of autograd's sends to the inputs directly instead of through value's graph
//             (a convolution's input gradient as a transposed convolution); normalize_graph
//             drops it, so the scheduler sees value.
//
// Symbolic dimensions (vkgrad::Variable): a negative dimension d in a shape stands for the
// variable numbered -1 - d in a process-wide table of (name, min, max). RESHAPE and EXPAND
// shapes may hold them; a RESHAPE that brings a variable's value into the graph lists
// BIND(DEFINE_VAR, CONST value) nodes after its source. Scheduling replaces each BIND by its
// DEFINE_VAR (the schedule is the same for every value) and hands the values to the launches.
#pragma once

#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad {

using Shape = std::vector<int64_t>;

namespace lazy {

using VarValues = std::map<std::string, int64_t>;  // variable name -> bound value

UOp buffer(DType dtype, int64_t count, const std::string& device);
int64_t buffer_id(const UOp& buffer);  // the UNIQUE id of a BUFFER node
const std::string& buffer_device(const UOp& buffer);

UOp iota(int64_t n, DType dtype);
UOp reshape(const UOp& x, const Shape& shape);
UOp permute(const UOp& x, const std::vector<int64_t>& order);
UOp expand(const UOp& x, const Shape& shape);
UOp pad(const UOp& x, const PairTuple& padding);
UOp shrink(const UOp& x, const PairTuple& bounds);
UOp flip(const UOp& x, const std::vector<int64_t>& flags);
UOp reduce(const UOp& x, Ops op, const std::vector<int64_t>& axes);
UOp contiguous(const UOp& x);
UOp assign(const UOp& target, const UOp& value, const Shape& offsets, const VarValues& values);
// The BUFFER an ASSIGN writes (under its chain of targets and their views).
UOp assign_buffer(const UOp& assign);

// REDUCE_AXIS's op and axes.
Ops reduce_op(const UOp& r);
std::vector<int64_t> reduce_axes(const UOp& r);

// Shapes of every node of a tensor-level graph, computed once (iteratively) per graph.
class ShapeMap {
 public:
  const Shape& operator()(const UOp& u);

 private:
  std::unordered_map<const UOpNode*, Shape> shapes_;
};
Shape shape_of(const UOp& u);  // one-off: walks one path to the nearest known shape

int64_t prod(const Shape& s);  // of a shape without symbolic dimensions

// ---- symbolic dimensions (VarValues is declared above)
// The dimension standing for `v` (registering it); Error when a variable of that name was
// registered with other bounds.
int64_t sym_dim(const VarArg& v);
inline bool is_sym(int64_t d) { return d < 0; }
const VarArg& sym_var(int64_t d);
bool has_sym(const Shape& s);
UOp dim_uop(int64_t d);            // CONST or DEFINE_VAR, of dtype index
int64_t dim_max(int64_t d);        // the dimension at its variable's maximum
int64_t prod_max(const Shape& s);  // the element count at the variables' maxima
int64_t dim_value(int64_t d, const VarValues& values);    // InternalError when unbound
Shape concrete(const Shape& s, const VarValues& values);  // every dimension's dim_value
// The values a symbolic shape's variables take when its dimensions have `sizes`.
VarValues values_at(const Shape& s, const Shape& sizes);
// RESHAPE of x to `shape`, binding the variables it names to `values`.
UOp reshape_bound(const UOp& x, const Shape& shape, const VarValues& values);
// The variables bound anywhere in a graph (InternalError on two values for one variable).
VarValues bound_values(std::span<const UOp> roots);

}  // namespace lazy
}  // namespace vkgrad
