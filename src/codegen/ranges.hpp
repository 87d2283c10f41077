// codegen: what the optimization passes ask of a kernel's ranges — which ranges it has, what its
// loads read along them, their sizes. Shared by opt.cpp, heuristics.cpp and gemm.cpp. Depends on
// ir.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad {

struct RangeInfo {
  std::vector<UOp> globals, reduces;  // by id
  std::vector<UOp> locals;            // LOCAL's workgroup ranges, by id
  UOp group;                          // GROUP's lanes (a group_reduce range), or null
  UOp stage;                          // STAGE's stage loop (a stage range), or null
  std::vector<UOp> load_indices;      // index expressions of every LOAD
  int64_t next_id = 0;                // above every range id of the kernel
};
RangeInfo collect_ranges(const UOp& ast);

bool mentions(const UOp& expr, const UOp& range);
// The kernel's index math divides (a window fold's `(y + 34 r) % 35 < 32`): some IDIV or MOD
// mentions a range. `shared`, when given, is set to the global ranges that no division,
// remainder or comparison of index values mentions (they only offset the indices: a fold's
// batch and channels), outermost first.
bool costly_index_math(const UOp& ast, const RangeInfo& info, std::vector<UOp>* shared = nullptr);
// Some load reads the same element for every value of `g`: upcasting g reuses it.
bool has_reuse(const RangeInfo& info, const UOp& g);
// A product summed by a reduction has a loaded factor that ignores `g` and another that mentions
// it (a matmul's A across its columns, a convolution's weights across its pixels): the kernel is
// matmul-like along g. An addend that ignores g (a bias added before a row's sum) is not.
bool reuses_product(const UOp& ast, const UOp& g);
// Some load that mentions `a` ignores `b`: upcasting both reuses loads along either.
bool reuses_across(const RangeInfo& info, const UOp& a, const UOp& b);
// How much the index expression grows as `r` steps by one, where that is a constant.
std::optional<int64_t> stride_along(const UOp& idx, const UOp& r);
// The index expression grows by exactly 1 as `r` steps by one.
bool steps_by_one(const UOp& idx, const UOp& r);
// Some load reads consecutive elements as `r` steps by one (steps_by_one of its index).
bool contiguous_along(const RangeInfo& info, const UOp& r);
// Some load inside the reduction (its index mentions a reduce axis) reads consecutive elements
// as `r` steps by one; a value read once per output (a residual added after the sum) does not
// count.
bool summed_contiguous_along(const RangeInfo& info, const UOp& r);
// `ranges` as digits of `index` (row-major, outermost first, the outermost without the modulo),
// added to `with` for substitute: a flat invocation index's ranges, a register array's element.
void digits_of(const UOp& index, const std::vector<UOp>& ranges,
               std::unordered_map<UOp, UOp, UOpHash>& with);
// The constant trip count of a RANGE, or -1 when it is symbolic.
int64_t range_size(const UOp& r);
// The kernel's DEFINE_VARs sorted by name (Program::vars' order); two of one name that differ
// are an InternalError.
std::vector<UOp> kernel_vars(const UOp& ast);

// The product of the ranges' sizes, symbolic ones at their maximum, saturating at 2^62 (it is
// only compared with thresholds).
int64_t prod_sizes(const std::vector<UOp>& ranges);

}  // namespace vkgrad
