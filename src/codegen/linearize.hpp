// codegen: the language-neutral half of rendering — turns an optimized kernel AST into scoped
// loops (head, one block per reduction, the upcast epilogue) and asks a language subclass for
// every type, literal, expression and loop header. render_c.cpp and render_glsl.cpp build on it.
// Depends on ir, and on decompose for the float max it combines MAX accumulators with.
//
// Loop structure (a kernel never nests reductions: the scheduler realizes those):
//   [global ranges: loops (C) or the invocation index (GLSL), opened by the language]
//     head:      values that depend on no upcast range and no reduction
//     per REDUCE: what it needs of earlier reductions' results outside its loops (a grouped
//                 reduction's shared-memory fold: stores, barriers, loads);
//                 acc[upcast dims][unroll dims] = identity;
//                 for reduce ranges { [preload: ldN[dims] = loads;]
//                                     for upcast/unroll ranges { body; acc = acc op value } }
//                 red[upcast dims] = fold of acc over the unroll dims
//     for upcast ranges { epilogue; store }
// Each node is emitted once per scope that needs it, in topological order, so the output is
// deterministic (no pointer-keyed map is ever iterated to emit code).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/uop.hpp"
#include "sched/indexing.hpp"  // reduce_identity

namespace vkgrad {

// The constant trip count of a RANGE, or -1 when it is symbolic.
int64_t range_size(const UOp& r);

// The kernel's DEFINE_VARs sorted by name (Program::vars' order); two of one name that differ
// are an InternalError.
std::vector<UOp> kernel_vars(const UOp& ast);
// `name` as letters and digits joined by single '_' (every other run of characters), never
// empty: safe inside a C or GLSL identifier, and free of GLSL's reserved "__".
std::string c_identifier(std::string_view name);

// Rendered names of the nodes computed so far in one scope.
using Names = std::unordered_map<const UOpNode*, std::string>;

std::string indent(int depth);

class Linearizer {
 public:
  explicit Linearizer(const UOp& ast);
  virtual ~Linearizer() = default;
  Linearizer(const Linearizer&) = delete;
  Linearizer& operator=(const Linearizer&) = delete;

 protected:
  // --- the language ---
  // The type values of `d` are computed in.
  virtual std::string type(DType d) const = 0;
  // The type a computed variable of `d` is declared with (a language may add qualifiers).
  virtual std::string var_type(DType d) const { return type(d); }
  virtual std::string literal(const UOp& c) const = 0;
  virtual std::string identity(Ops op, DType d) const { return literal(reduce_identity(op, d)); }
  // An ALU expression of result dtype `d` over operands `s` (of dtype `sd`); `u` is the node, or
  // null when the renderer combines accumulators.
  virtual std::string alu(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                          const UOp* u) const = 0;
  virtual std::string cast(DType from, DType to, const std::string& x) const = 0;
  virtual std::string bitcast(DType from, DType to, const std::string& x) const = 0;
  virtual std::string load(const UOp& ld, const Names& names) const = 0;
  // The statement storing the kernel's result (the index and value are already computed).
  virtual std::string store(const UOp& st, const Names& names, int depth) const = 0;
  // The statement making the workgroup's shared-memory stores visible to its later loads
  // (BARRIER; targets with local memory).
  virtual std::string barrier(int depth) const;
  // The line(s) opening a loop over range `r`, ending in "{\n".
  virtual std::string loop_open(const UOp& r, int depth) const = 0;
  // Emit each node in a loop nest at the outermost level where its ranges exist (loop-invariant
  // code motion), instead of in the innermost loop.
  virtual bool hoist() const { return false; }
  // In a reduction's loop, load each value that varies along upcast or unroll ranges once per
  // iteration into a register array (before the multiply-adds), instead of where the nest's
  // order puts it: a matmul's B row would otherwise be loaded again for every row of A's tile.
  virtual bool preload() const { return false; }
  // One REDUCE's block (accumulators, loops, fold); the default is the per-thread loop.
  virtual void emit_reduce(const UOp& r, int depth, std::string& out);
  // The upcast loops, the epilogue and the store.
  virtual void emit_epilogue(int depth, std::string& out);

  // --- the shared structure ---
  // Head, reductions and epilogue at `depth` (inside the global scope).
  void emit_body(int depth, std::string& out);
  std::vector<UOp> ranges_of(AxisType t) const;
  static std::string name_of(const UOp& r);
  std::string operand(const UOp& u, const Names& names) const;
  // An index expression that need not exist in the kernel (a vec4 index, a product of sizes),
  // rendered in one piece from `names`, constants, ranges and the kernel's variables.
  std::string inline_expr(const UOp& e, const Names& names) const;
  // A reduction's accumulator `a` combined with `b` by `op` (a float MAX as decompose writes it).
  std::string combine(Ops op, DType d, const std::string& a, const std::string& b) const;
  // A range's trip count: its constant, or its symbolic end in one piece.
  std::string range_end(const UOp& r) const;
  // The expression computing `u` from its operands' names.
  std::string expr(const UOp& u, const Names& names) const;
  void emit_nodes(const std::vector<UOp>& nodes, int depth, std::string& out, Names& names);
  // Open `loops` at `depth`, emitting `nodes` in them (hoisted or innermost); returns the depth
  // inside the innermost loop. The caller closes the loops.
  int emit_nest(const std::vector<UOp>& loops, const std::vector<UOp>& nodes, int depth,
                std::string& out, Names& names);
  static void close(int from, int to, std::string& out);
  bool in_head(const UOp& u) const;
  // Nodes reachable from roots that satisfy `keep`, in topological order; with `into_reduces`,
  // also through the bodies of REDUCEs.
  template <class Keep>
  std::vector<UOp> needed(const std::vector<UOp>& roots, Keep keep, bool into_reduces) const;
  // Nodes printed where they are used, never computed into a variable. The kernel's own store is
  // the epilogue's; a store to shared memory is a statement among the nodes.
  static bool is_inline(const UOp& u) {
    return u.op() == Ops::CONST || u.op() == Ops::RANGE || u.op() == Ops::SPECIAL ||
           u.op() == Ops::DEFINE_VAR || u.op() == Ops::DEFINE_GLOBAL ||
           u.op() == Ops::DEFINE_LOCAL || u.op() == Ops::INDEX || u.op() == Ops::SINK ||
           (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL);
  }
  uint64_t deps(const UOp& u) const { return deps_.at(u.get()); }
  // Accumulator dims: the upcast ranges the result depends on, then the reduce's unroll ranges.
  std::vector<UOp> acc_dims(const UOp& r, bool with_unroll) const;
  std::string reduce_ref(const UOp& r) const;
  std::string new_var() { return "v" + std::to_string(next_var_++); }

  UOp ast_;
  std::vector<UOp> topo_;
  std::vector<UOp> all_ranges_;  // sorted by axis id
  std::vector<UOp> vars_;        // kernel_vars: the language reads value i into var_names_[i]
  std::vector<std::string> var_names_;
  uint64_t upcast_mask_ = 0;
  std::unordered_map<const UOpNode*, uint64_t> deps_;         // range ids a node depends on
  std::unordered_map<const UOpNode*, bool> reduce_value_;     // depends on a REDUCE's result
  std::unordered_map<const UOpNode*, uint64_t> reduce_mask_;  // a REDUCE's own ranges
  std::unordered_map<const UOpNode*, int> reduce_id_;
  Names head_names_;

 private:
  int next_var_ = 0;
  int next_load_ = 0;
};

template <class Keep>
std::vector<UOp> Linearizer::needed(const std::vector<UOp>& roots, Keep keep,
                                    bool into_reduces) const {
  std::unordered_map<const UOpNode*, bool> seen;
  std::vector<UOp> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (!seen.emplace(u.get(), true).second) continue;
    if (u.op() == Ops::REDUCE && !into_reduces) continue;
    if (u.op() == Ops::SPECIAL) continue;  // its size is the launch's, not the kernel's to compute
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  std::vector<UOp> out;
  for (const UOp& u : topo_)
    if (seen.count(u.get()) && !is_inline(u) && keep(u)) out.push_back(u);
  return out;
}

}  // namespace vkgrad
