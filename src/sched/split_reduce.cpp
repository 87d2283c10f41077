// sched: splitting a large reduction in two (see split_reduce.hpp). The partial reduction needs
// no rule of its own to become a kernel: the scheduler stores a reduction read inside another
// reduction, so the split costs one kernel and a buffer of kSplitReduceRows elements.
#include "sched/split_reduce.hpp"

#include "ir/graph_rewrite.hpp"
#include "sched/lazy.hpp"

namespace vkgrad {
namespace {

// Every axis reduced, none symbolic, enough elements, and whole rows.
bool splits(const Match& m) {
  lazy::ShapeMap& shapes = m.ctx<lazy::ShapeMap>();
  const UOp& r = m.root();
  const Shape& in = shapes(r.src(0));
  if (lazy::reduce_axes(r).size() != in.size() || lazy::has_sym(in)) return false;
  const int64_t n = lazy::prod(in);
  return n >= kSplitReduceMin && n % kSplitReduceRows == 0;
}

// x viewed in `shape`, as Tensor::reshape builds it: a reshape of a reshape is one view of the
// source, and a view of the shape x already has is x.
UOp view_as(const UOp& x, const Shape& shape, lazy::ShapeMap& shapes) {
  if (shapes(x) == shape) return x;
  const UOp src = x.op() == Ops::RESHAPE && x.src().size() == 1 ? x.src(0) : x;
  return shapes(src) == shape ? src : lazy::reshape(src, shape);
}

// reduce(x, every axis) = reduce(reduce(x as (rows, n / rows), axis 1), axis 0), in the shape of
// the reduction (every axis 1).
UOp split(const Match& m) {
  lazy::ShapeMap& shapes = m.ctx<lazy::ShapeMap>();
  const UOp& r = m.root();
  const Ops op = lazy::reduce_op(r);
  const Shape out = shapes(r);
  const int64_t n = lazy::prod(shapes(r.src(0)));
  const UOp rows = view_as(r.src(0), {kSplitReduceRows, n / kSplitReduceRows}, shapes);
  const UOp whole = lazy::reduce(lazy::reduce(rows, op, {1}), op, {0});
  return view_as(whole, out, shapes);
}

}  // namespace

// Terminates: both reductions of a split have fewer than kSplitReduceMin elements or keep an
// axis, so neither splits again.
const PatternMatcher pm_split_reduceop({
    rule(UPat::op(Ops::REDUCE_AXIS), split, splits),
});

UOp split_reduceop(const UOp& sink) {
  lazy::ShapeMap shapes;
  return graph_rewrite(sink, pm_split_reduceop, shapes, {.name = "split_reduceop"});
}

}  // namespace vkgrad
