// codegen: the C printer. render_c.cpp holds C's rules (one per op) and prints a kernel's linear
// list; gemm/render.cpp prints a planned GEMM (packed, or Winograd) from its plan.
#pragma once

#include <string>
#include <vector>

#include "codegen/gemm/plan.hpp"
#include "codegen/linearize.hpp"
#include "codegen/program.hpp"

namespace vkgrad {

// Upcast and unroll loops have small constant trip counts: unrolled completely, their
// accumulators become registers and the C compiler's SLP vectorizer packs them into vectors.
inline constexpr const char* kUnroll = "#pragma GCC unroll 64\n";
inline constexpr const char* kVectorize =
    "#pragma clang loop vectorize(enable) interleave(disable) unroll(disable)\n";
// A loop whose iterations touch disjoint elements, which clang cannot prove (it honours restrict
// on parameters only, and the scratch's parts are one buffer).
inline constexpr const char* kVectorizeDisjoint =
    "#pragma clang loop vectorize(assume_safety) interleave(disable) unroll(disable)\n";

class CRenderer : public Printer {
 public:
  CRenderer(const UOp& ast, const std::string& name, const UOp& vector_loop);
  // p.source: the list's loops, or with a plan the GEMM it plans.
  void render(Program& p, const std::vector<UOp>& list, const GemmPlan* gemm);

 private:
  std::string type(DType d) const override;
  std::string literal(const UOp& c) const override;
  // Integer identities print bare (0, 1); the lowest values need their type.
  std::string register_literal(const UOp& c) const override;
  std::string alu(Ops op, DType d, DType sd, const std::vector<std::string>& s,
                  const UOp&) const override;
  std::string cast(DType from, DType to, const std::string& x) const override;
  std::string bitcast(DType from, DType to, const std::string& x) const override;
  std::string load(const UOp& ld, const Names& names) const override;
  std::string store(const UOp& st, const Names& names, int depth) const override;
  // Upcast and unroll loops are unrolled (their accumulators become registers), except the one
  // the pipeline leaves to the C compiler's loop vectorizer (vector_loop): clang would still
  // unroll a short one (8 iterations) before its vectorizer sees it, so the loop says so (GCC
  // ignores the pragma).
  std::string loop_open(const UOp& r, int depth) const override;

  // --- gemm/render.cpp ---
  // A packed, blocked GEMM (the plan's comment in pipeline.hpp; BLIS's loop structure):
  //   for batch, for column blocks jc (nc):  pack B[all k, jc block] into strips of nr columns
  //     for row blocks ic (mc) of this thread's rows, for k blocks pc (kc):
  //       pack A[ic block, pc block] into panels of mr rows
  //       for each nr strip, for each mr panel: mr x nr accumulators over kc, kept in tile_c
  //     epilogue and store of the ic x jc block from tile_c.
  // The parallel axis is the panels of mr rows, the strips of nr columns or the first batch range
  // (GemmPlan::split).
  // The operands, the epilogue and the store are the kernel's own nodes, emitted where their ranges
  // are bound. Accumulation is a fused multiply-add (one rounding per step).
  void render_gemm(const GemmPlan& p, std::string& out, int buffers);
  // A packed GEMM being printed: the plan, its sizes, the output and the loops open in it.
  struct GemmPrint;
  // One operand being packed into panels: gemm_pack's arguments and what they imply.
  struct GemmPack;
  // The scratch's parts and this thread's share of the rows and columns.
  static void gemm_share(GemmPrint& g, int buffers);
  // B's window: each k's offset into the copy.
  static void gemm_window_offsets(GemmPrint& g);
  // The window copy of this batch element, a row at a time (window_row), each element stored by
  // window_store after its graph (window_graph); window_phase: a column bound per phase.
  void gemm_window_copy(GemmPrint& g);
  void window_row(GemmPrint& g, const std::string& plane);
  void window_store(GemmPrint& g, const std::string& plane, const UOp& value, Names names);
  void window_graph(GemmPrint& g, const UOp& value, Names& names);
  static std::string window_phase(const GemmWindow& win, const std::vector<int64_t>& at);
  // The loops over column, row and k blocks, the packs, the micro kernel and the epilogue.
  void gemm_blocks(GemmPrint& g);
  // Packs operand `x` into panels of `width` (the comment in render_gemm.cpp); its parts: the
  // segments' table, the loops over w, an element, the zero columns and the k-major order.
  void gemm_pack(GemmPrint& g, const UOp& x, const std::string& panel, int64_t width,
                 const std::string& ws, const std::string& ks, const std::vector<UOp>& w_ranges,
                 const std::string& w_flat, const std::string& k_off);
  static void pack_segments(GemmPrint& g, const GemmPack& pk);
  static void pack_open_w(GemmPrint& g, const GemmPack& pk);
  void pack_body(GemmPrint& g, const GemmPack& pk, const std::string& dest);
  static void pack_zero_fill(GemmPrint& g, const GemmPack& pk);
  void pack_k_major(GemmPrint& g, const GemmPack& pk, const UOp& k_in);
  // The micro kernel over a strip and a panel; gemm_a_rows: A's rows where they lie.
  void gemm_micro_kernel(GemmPrint& g);
  void gemm_a_rows(GemmPrint& g);
  // The epilogue and store of an ic x jc block from tile_c.
  void gemm_epilogue(GemmPrint& g);
  // Declares `ranges` from their flattened index `flat` (the innermost varies fastest).
  static std::string bind(const std::vector<UOp>& ranges, const std::string& flat);
  // The epilogue's store `st` with the column ranges as digits of SPECIAL "col", the flat
  // column, and its loads' and store's indices simplified (affine in it where the layout allows).
  static UOp flat_columns(const UOp& st, const GemmPlan& p);
  // Winograd F(2 x 2, 3 x 3) (GemmWinograd): U = G g G^T of each of this thread's rows and each
  // channel, g the kernel's A at the nine taps, in panels of mr rows; rows past m_hi are zeros.
  void winograd_weights(const GemmPlan& p, int depth, std::string& out);
  // Per block of tile rows: V = B^T d B of each channel and tile from the window copy
  // ([16][channel][nb]), the 16 GEMMs U x V into tile_c ([16][row][nb]), then Y = A^T M A of
  // each row and tile into two rows of outputs and the kernel's epilogue along them.
  void winograd_tiles(const GemmPlan& p, int depth, std::string& out);

  UOp ast_;
  std::vector<UOp> topo_;
  std::string name_;
  UOp vector_loop_;
  UOp first_global_;
};

}  // namespace vkgrad
