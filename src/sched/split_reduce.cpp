// sched: splitting a large reduction in two (see split_reduce.hpp). The partial reduction needs
// no rule of its own to become a kernel: the scheduler stores a reduction read inside another
// reduction, so the split costs one kernel and a buffer of kSplitReduceRows elements per output.
#include "sched/split_reduce.hpp"

#include <algorithm>
#include <optional>

#include "ir/graph_rewrite.hpp"
#include "sched/lazy.hpp"

namespace vkgrad {
namespace {

// The number of leading axes a reduction keeps, when it reduces every axis after them.
std::optional<size_t> kept_axes(const UOp& r, size_t ndim) {
  std::vector<int64_t> axes = lazy::reduce_axes(r);
  if (axes.size() > ndim) return std::nullopt;
  std::sort(axes.begin(), axes.end());
  const size_t kept = ndim - axes.size();
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != static_cast<int64_t>(kept + i)) return std::nullopt;
  return kept;
}

// Trailing axes reduced, none symbolic, enough elements per output, whole rows, few outputs.
bool splits(const Match& m) {
  lazy::ShapeMap& shapes = m.ctx<lazy::ShapeMap>();
  const UOp& r = m.root();
  const Shape& in = shapes(r.src(0));
  const std::optional<size_t> kept = kept_axes(r, in.size());
  if (!kept || lazy::has_sym(in)) return false;
  const int64_t outputs = lazy::prod(Shape(in.begin(), in.begin() + *kept));
  const int64_t n = lazy::prod(Shape(in.begin() + *kept, in.end()));
  return n >= kSplitReduceMin && n % kSplitReduceRows == 0 && outputs < kSplitReduceRows;
}

// x viewed in `shape`, as Tensor::reshape builds it: a reshape of a reshape is one view of the
// source, and a view of the shape x already has is x.
UOp view_as(const UOp& x, const Shape& shape, lazy::ShapeMap& shapes) {
  if (shapes(x) == shape) return x;
  const UOp src = x.op() == Ops::RESHAPE && x.src().size() == 1 ? x.src(0) : x;
  return shapes(src) == shape ? src : lazy::reshape(src, shape);
}

// reduce(x, axes k..) = reduce(reduce(x as (x's axes ..k, rows, n / rows), axis k + 1), axis k),
// in the shape of the reduction. With every axis reduced (k = 0): (rows, n / rows).
UOp split(const Match& m) {
  lazy::ShapeMap& shapes = m.ctx<lazy::ShapeMap>();
  const UOp& r = m.root();
  const Ops op = lazy::reduce_op(r);
  const Shape in = shapes(r.src(0)), out = shapes(r);
  const size_t k = *kept_axes(r, in.size());
  const int64_t n = lazy::prod(Shape(in.begin() + k, in.end()));
  Shape rows(in.begin(), in.begin() + k);
  rows.push_back(kSplitReduceRows);
  rows.push_back(n / kSplitReduceRows);
  const int64_t axis = static_cast<int64_t>(k);
  const UOp partial = lazy::reduce(view_as(r.src(0), rows, shapes), op, {axis + 1});
  return view_as(lazy::reduce(partial, op, {axis}), out, shapes);
}

}  // namespace

// Terminates: the partial reduction has at least kSplitReduceRows outputs, and the reduction of
// the rows kSplitReduceRows elements per output, so neither splits again.
const PatternMatcher pm_split_reduceop({
    rule(UPat::op(Ops::REDUCE_AXIS), split, splits),
});

UOp split_reduceop(const UOp& sink) {
  lazy::ShapeMap shapes;
  return graph_rewrite(sink, pm_split_reduceop, shapes, {.name = "split_reduceop"});
}

}  // namespace vkgrad
