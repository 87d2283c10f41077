// codegen/gemm: the CPU GEMM, a lowering of its own beside the generic passes. plan.hpp/.cpp: the
// plan of a packed, blocked GEMM — how a float32 matmul-like kernel is blocked for a target's
// registers and caches (Opt GEMM and BLOCK); render.cpp prints a plan as C (part of render_c's
// CRenderer). The seam: the heuristics' gemm_or_winograd rule and apply_opts ask plan_gemm
// whether a kernel (and a GEMM list) plans; the pipeline plans the lowered kernel and hands the
// plan to render_c, which prints it instead of the linear list. Depends on ir and
// codegen/target.hpp.
//
//   out[batch, m, n] = epilogue(sum over k of a[batch, m, k] * b[batch, k, n])
// a ignores n, b ignores m; any index math, masks and elementwise ops inside a and b are evaluated
// once per element while packing (a stride-1 convolution's b once per input element: GemmWindow),
// so transposed and fused operands cost no more; m, n and k may each be several ranges flattened
// into one, as a convolution's channels and window. m may be empty (one row) where b is read
// through a window: a depthwise convolution, each channel a batch element whose taps are a
// one-row stencil over its plane's copy.
#pragma once

#include <optional>
#include <vector>

#include "codegen/target.hpp"
#include "ir/uop.hpp"

namespace vkgrad {

enum class GemmSplit { rows, columns, batch };  // what the threads split

// B read from a copy of its input instead of packed, for a convolution: b depends on the output
// rows y and columns x (the two n ranges) and on two k ranges ky and kx only through sy * y + ky
// and sx * x + kx (the strides), or y + dy * ky and x + dx * kx (the dilations, at stride 1).
// Each thread evaluates `value` (b at tap (py, px) < (sy, sx), y and x extended) once per
// element of a rows x cols plane for each phase (py, px) and each value of the other k ranges;
// tap ky = sy * qy + py then reads phase py's plane at row y + dy * qy. The
// columns run over y * cols + x with x in [0, cols): B[k][n] is copy[offset(k) + n], contiguous
// along n, so the micro kernel loads it where it lies. The copy holds each input element once
// where packing held it up to ky * kx times; cols - W of every row's columns are computed and
// dropped.
struct GemmWindow {
  UOp value;
  std::vector<UOp> rest;  // the other k ranges (a convolution's input channels)
  UOp ky, kx;
  int64_t sy = 1, sx = 1;  // strides
  int64_t dy = 1, dx = 1;  // dilations (where the stride is 1)
  UOp y, x;                // value's ranges over a plane's rows and columns
  UOp py, px;              // value's phase ranges (the constant 0 where the stride is 1)
  int64_t rows = 0, cols = 0;
  int64_t plane = 0;   // rest x sy x sx x rows x cols floats, then zeros for the last strip's reach
  int64_t floats = 0;  // the copy with its zeros, rounded to 16
  // The interior, where the copy is a plain read: for each phase px, the columns [lo, hi) where
  // every mask along the columns holds; in a row where `row_mask` (the masks that ignore x and
  // px) holds too, those columns copy `interior`, the value with all of its masks true, which the
  // C compiler vectorizes (masked reads it does not: it turns a pad's compares into a switch).
  // The columns outside it copy `value`. `lo` is empty where the masks along x mix in other
  // ranges or do not hold over one run of columns.
  std::vector<int64_t> lo, hi;
  UOp interior, row_mask;
};

// Winograd F(2 x 2, 3 x 3) (Opt GEMM(3, 0)) for a window of stride 1 and 3 x 3 taps over an even
// number of output rows and columns: each 2 x 2 output tile is 16 products of transformed
// operands instead of 36. Per thread: U = G g G^T of each (row, channel) of its rows, the 16
// elements of each in panels of mr rows ([16][panel][channel][mr]); per block of whole rows of
// tiles, V = B^T d B of each (channel, tile) from the window copy ([16][channel][nb]), 16 GEMMs
// U x V into the C tile ([16][row][nb]), and Y = A^T M A of each (row, tile), through the
// kernel's epilogue a row of outputs at a time.
struct GemmWinograd {
  int64_t channels = 0;              // the window's planes (the rest of k, flattened)
  int64_t tiles_y = 0, tiles_x = 0;  // 2 x 2 output tiles per image
  int64_t block_rows = 0, nb = 0;    // tile rows per block; the block's columns, padded to nr
  int64_t panels = 0;                // panels of mr rows that hold all of M
  int64_t v_offset = 0;              // V's offset in pack_b (after the window copy)
  int64_t y_offset = 0;              // two rows of outputs' offset in tile_c (after M's tiles)
};

struct GemmPlan {
  UOp reduce;              // REDUCE(ADD) over k of MUL(a, b)
  UOp a, b;                // the operands
  std::vector<UOp> m, n;   // output rows, output columns (the innermost output ranges)
  std::vector<UOp> k;      // the reduce ranges
  std::vector<UOp> batch;  // the other output ranges (each list outermost first; m, n and k are
                           // each flattened into one index)
  int64_t vector = 0;      // floats per vector of the micro kernel
  int64_t mr = 0, nr = 0;  // register tile: mr x nr accumulators
  int64_t mc = 0, kc = 0;  // A block packed at a time (mc x kc, L2), kc also B's micro panel
  int64_t nc = 0;          // B block packed at a time: all of k x nc columns
  // Rows: each thread packs all of B; columns: all of A; batch (the first batch range): neither.
  GemmSplit split = GemmSplit::rows;
  // The threads' work: `parallel` items of `step` rows, columns or batch elements out of `share`.
  int64_t step = 1, share = 1, parallel = 1;
  // A read where it lies instead of packed: when A is one float32 load contiguous along the
  // flattened k and few strips of columns would reuse a packed copy (a convolution's weights at
  // 14 x 14 outputs and below: packing them would be much of the work), its index at k = 0, a
  // function of the m and batch ranges; else null. k is then one block (kc = K).
  UOp a_rows;
  std::optional<GemmWindow> window;
  std::optional<GemmWinograd> winograd;
  // Each thread's scratch (floats, 64-byte aligned parts): packed A, packed B (or B's window
  // copy and then its int32 offset per k), the C tile.
  int64_t scratch_a = 0, scratch_b = 0, scratch_c = 0, scratch_floats = 0;
};

// The plan for a large float32 matmul-like kernel on a target with Target::gemm, or none.
// How Opt GEMM(a, rows) asks for A to be read (its axis): as the plan decides, packed, or where
// it lies (GemmPlan::a_rows).
// GemmA::winograd: the window's convolution as Winograd F(2 x 2, 3 x 3) (GemmWinograd).
enum class GemmA : int { planned = 0, packed = 1, in_place = 2, winograd = 3 };
// The size Opt BLOCK(b, n) sets: the register tile's columns in vectors, or the k block's steps.
enum class GemmBlock : int { tile_vectors = 0, k_block = 1 };
// What an Opt list chooses of a plan (GEMM(a, rows), BLOCK(0, vectors), BLOCK(1, kc)); 0: the
// plan's choice.
struct GemmChoice {
  GemmA a = GemmA::planned;  // A's reading (in place needs A contiguous along k)
  int64_t rows = 0;          // the register tile's rows, 1 to the target's most for its columns
  int64_t vectors = 0;       // the register tile's columns in vectors, 1 to kMaxTileVectors
                             // (the plan's: 2, or 4 where that pads no more columns)
  int64_t kc = 0;            // k in blocks of at most kc steps (A packed; less than all of k)
};
// The register tile's columns take at most this many vectors; a chosen k block at least this
// many steps.
constexpr int64_t kMaxTileVectors = 4, kMinKBlock = 16;
// The plan of a kernel, or nullopt where it is no GEMM or the choices cannot apply.
std::optional<GemmPlan> plan_gemm(const UOp& ast, const Target& target,
                                  const GemmChoice& choice = {});
// The 2 x 2 output tiles per image of a plan's convolution as Winograd F(2 x 2, 3 x 3), or 0
// where GEMM(3, rows) does not apply: no stride-1 3 x 3 window over even output sizes, or one row
// (a depthwise convolution's single channel per GEMM gives its 16 products nothing to share).
int64_t winograd_tiles(const GemmPlan& p);
// The most rows a register tile of the target takes: the target's rows for a tile two vectors
// wide, else (`vectors`) as many rows as keep the same number of accumulators.
int64_t gemm_max_rows(const Target& target, int64_t vectors = 2);

}  // namespace vkgrad
