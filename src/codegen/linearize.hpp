// codegen: the last pass, `linearize` — an optimized kernel AST becomes a flat list of
// statements with explicit loop structure — and `Printer`, the language-neutral half of printing
// that list (render_c.cpp and render_glsl.cpp give it the language: one rule per op).
// Depends on ir, and on decompose for the float max that MAX accumulators are combined with.
//
// Loop structure (a kernel never nests reductions: the scheduler realizes those):
//   [global ranges: loops; on a threads target the launch's SPECIALs, defined by the printer]
//     head:      values that depend on no upcast range and no reduction
//     per REDUCE: what it needs of earlier reductions' results outside its loops (a grouped
//                 reduction's shared-memory fold: stores, barriers, loads);
//                 acc[upcast dims][unroll dims] = identity;
//                 for reduce ranges { [preload: ldN[dims] = loads;]
//                                     for upcast/unroll ranges { body; acc = acc op value } }
//                 red[upcast dims] = fold of acc over the unroll dims
//     for upcast ranges { epilogue; store }   (a vector store: the lanes gathered, then stored)
// Each node is listed once per scope that needs it, in topological order, so the list is
// deterministic (no pointer-keyed map is ever iterated to build it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad {

std::string indent(int depth);

struct LinearizeOptions {
  // Each node goes to the outermost loop of its nest where its ranges exist (loop-invariant code
  // motion), instead of the innermost.
  bool hoist = false;
  // In a reduction's loop, each load that varies along upcast or unroll ranges is loaded once per
  // iteration into a register array (before the multiply-adds), and the unroll ranges share the
  // upcast accumulators (one per output): a matmul's B row is loaded once per k instead of once
  // per row of A's tile.
  bool preload = false;
  // GLSL whose subgroups' first `shuffle_lanes` lanes are active in every subgroup (0: off;
  // TuningProfile::share_uniform_loads): a preloaded array whose loads are the same in every lane
  // (they mention no lane index) is loaded one element per lane, element e by lane
  // e % shuffle_lanes, and handed round with subgroupShuffle (lavapipe serves each lane's load
  // of a shared address as a load of its own).
  int64_t shuffle_lanes = 0;
};

// The kernel as a flat list, in order:
//   RANGE r       opens a loop over r; the matching END(r) closes it (loops nest)
//   DEFINE_REG    declares a register array named by its argument ("acc0", "red0", "ld0"; "v"
//                 for a vector gathered for a store, which the printer names like a value):
//                 its element dtype is the pointer's base, one dimension per source range, of
//                 that range's size
//   STORE         to a buffer, shared memory, or a register element INDEX(reg, ranges...)
//   BARRIER       the workgroup's shared-memory stores made visible
//   anything else a value computed into a variable (the n-th one printed is "v<n>")
// Entries read values listed before them in an enclosing scope. Never listed, printed where
// used: constants, ranges, SPECIALs, variables, buffers, INDEX, GEP, a register element's LOAD,
// and the value a register STORE stores (an accumulator's step, its fold), printed in one piece.
std::vector<UOp> linearize(const UOp& ast, const LinearizeOptions& options);

// The list's structure (SPEC=1): loops close in order, every operand is in scope where it is
// read (a range while its loop is open). An InternalError naming the entry otherwise.
void verify_linear(const std::vector<UOp>& list);

// The statements computing `roots` (values, not inline nodes, REDUCEs or what is under them), in
// the order of `order` (a toposort containing them).
std::vector<UOp> values_of(const std::vector<UOp>& roots, const std::vector<UOp>& order);

// Printed names of the values computed so far.
using Names = std::unordered_map<const UOpNode*, std::string>;

class Printer {
 public:
  explicit Printer(const UOp& ast);
  virtual ~Printer() = default;
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;

 protected:
  // --- the language: one rule per op ---
  // The type values of `d` are computed in.
  virtual std::string type(DType d) const = 0;
  // The type a computed variable (or an accumulator) of `d` is declared with (a language may
  // add qualifiers).
  virtual std::string var_type(DType d) const { return type(d); }
  virtual std::string literal(const UOp& c) const = 0;
  // A constant stored into a register (an accumulator's identity).
  virtual std::string register_literal(const UOp& c) const { return literal(c); }
  // An ALU expression of result dtype `d` over operands `s` (of dtype `sd`); `u` is the node.
  virtual std::string alu(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                          const UOp& u) const = 0;
  virtual std::string cast(DType from, DType to, const std::string& x) const = 0;
  virtual std::string bitcast(DType from, DType to, const std::string& x) const = 0;
  // A LOAD from a buffer or shared memory.
  virtual std::string load(const UOp& ld, const Names& names) const = 0;
  // The statement of a STORE to a buffer or shared memory.
  virtual std::string store(const UOp& st, const Names& names, int depth) const = 0;
  // The statement making the workgroup's shared-memory stores visible to its later loads.
  virtual std::string barrier(int depth) const;
  // The line(s) opening a loop over range `r`, ending in "{\n".
  virtual std::string loop_open(const UOp& r, int depth) const = 0;

  // --- printing ---
  // Prints `list` (linearize's, or values_of's) at `depth`, naming its values in `names`.
  void print(const std::vector<UOp>& list, int depth, std::string& out, Names& names);
  static std::string name_of(const UOp& r);
  std::string operand(const UOp& u, const Names& names) const;
  // An expression printed in one piece: its nodes not in `names` are printed where used.
  std::string inline_expr(const UOp& e, const Names& names) const;
  // A range's trip count: its constant, or its symbolic end in one piece.
  std::string range_end(const UOp& r) const;
  // The expression computing `u` from its operands' names.
  std::string expr(const UOp& u, const Names& names) const;

  std::vector<UOp> vars_;  // kernel_vars: the language reads value i into var_names_[i]
  std::vector<std::string> var_names_;

 private:
  int next_var_ = 0;
};

}  // namespace vkgrad
