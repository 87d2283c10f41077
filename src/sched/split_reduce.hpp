// sched: the split of a large reduction in two kernels (tinygrad's split_reduceop), a rewrite of
// the tensor-level graph (lazy.hpp) that the scheduler runs before it chooses what becomes a
// buffer. Exports the rule's matcher and the pass. Depends on ir only.
#pragma once

#include <cstdint>

#include "ir/upat.hpp"

namespace vkgrad {

// A reduction of at least kSplitReduceMin elements per output, a multiple of kSplitReduceRows,
// into fewer than kSplitReduceRows outputs has too few output elements to spread over threads:
// it becomes kSplitReduceRows partial results per output, over rows of its input, then their
// reduction. It applies when the reduced axes are the trailing ones (every axis, or the last of
// a few rows), so the rows are a plain reshape, and when no axis is symbolic.
inline constexpr int64_t kSplitReduceRows = 256;
inline constexpr int64_t kSplitReduceMin = int64_t{1} << 16;

// Rules on REDUCE_AXIS; the context is a lazy::ShapeMap of the graph being rewritten.
extern const PatternMatcher pm_split_reduceop;

// The tensor graph under `sink` with every such reduction split.
UOp split_reduceop(const UOp& sink);

}  // namespace vkgrad
