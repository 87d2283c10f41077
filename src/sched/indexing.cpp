// sched: lowering a kernel's tensor graph to index expressions (see indexing.hpp). One rule on
// the tensor-level INDEX(node, valid, idx...) pushes the indexing through each kind of node.
#include "sched/indexing.hpp"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>

#include "ir/graph_rewrite.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/upat.hpp"

namespace vkgrad {
namespace {

struct LowerCtx {
  lazy::ShapeMap* shapes;
  const std::function<bool(const UOp&)>* is_input;
  std::vector<UOp> inputs;
  std::unordered_map<const UOpNode*, int> slot_of;
  int64_t next_range = 0;
  UOp root;
};

const UOp kTrue = UOp::const_(dtypes::bool_, true);

UOp index_node(const UOp& node, const UOp& valid, std::vector<UOp> idx) {
  std::vector<UOp> src{node, valid};
  src.insert(src.end(), idx.begin(), idx.end());
  return UOp::make(Ops::INDEX, node.dtype(), std::move(src));
}

UOp idx_const(int64_t v) { return UOp::const_(dtypes::index, v); }

UOp and_(const UOp& a, const UOp& b) {
  if (a == kTrue) return b;
  if (b == kTrue) return a;
  return a & b;
}

// stride * d, folded while both are constants.
UOp times_dim(const UOp& stride, int64_t d) {
  if (stride.is_const() && !lazy::is_sym(d))
    return idx_const(std::get<int64_t>(stride.const_value()) * d);
  return stride * lazy::dim_uop(d);
}

// d + k, a constant unless d is symbolic.
UOp dim_plus(int64_t d, int64_t k) {
  return lazy::is_sym(d) ? lazy::dim_uop(d) + k : idx_const(d + k);
}

// Row-major flat index of idx in shape (symbolic dimensions: lazy.hpp).
UOp flatten(const std::vector<UOp>& idx, const Shape& shape) {
  UOp flat = idx_const(0);
  UOp stride = idx_const(1);
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] != 1) flat = flat + idx[i] * stride;
    stride = times_dim(stride, shape[i]);
  }
  return flat;
}

// The row-major index in `shape` of the flat index `flat` (dimensions of size 1 read 0). The
// outermost index needs no modulo: flat < numel (which also keeps a symbolic view of a buffer from
// wrapping at the size the buffer had when it was captured).
std::vector<UOp> unflatten(const UOp& flat, const Shape& shape) {
  std::vector<UOp> idx(shape.size());
  UOp stride = idx_const(1);
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    idx[i] = shape[i] == 1 ? idx_const(0)
             : i == 0      ? flat / stride
                           : (flat / stride) % lazy::dim_uop(shape[i]);
    stride = times_dim(stride, shape[i]);
  }
  return idx;
}

// A reshape without symbolic dimensions, group by group: the dimensions of size other than 1
// of `out` and `in` are cut into the shortest runs of equal element count, and each run maps on
// its own — one dimension to one of the same size is the same index, any other run is flattened
// and split within itself. Dimensions of size 1 of `in` read index 0. So a reshape that only
// adds or drops 1s, or splits one axis, keeps the other axes' indices as they are (flattening the
// whole shape would bury them in divisions the simplifier cannot always undo). A symbolic
// dimension is a run of its own. Empty when a symbolic dimension would be merged or split, or the
// shapes hold no element.
std::optional<std::vector<UOp>> reshape_by_groups(const std::vector<UOp>& idx, const Shape& out,
                                                  const Shape& in) {
  for (int64_t d : out)
    if (d == 0) return std::nullopt;
  for (int64_t d : in)
    if (d == 0) return std::nullopt;
  std::vector<UOp> nidx(in.size(), idx_const(0));
  size_t i = 0, o = 0;
  while (true) {
    while (i < in.size() && in[i] == 1) ++i;
    while (o < out.size() && out[o] == 1) ++o;
    if (i == in.size() || o == out.size()) break;
    // A symbolic dimension is a run of its own: the same variable on both sides keeps its index.
    if (lazy::is_sym(in[i]) || lazy::is_sym(out[o])) {
      if (in[i] != out[o]) return std::nullopt;
      nidx[i++] = idx[o++];
      continue;
    }
    // One run: [i, i_end) of in and [o, o_end) of out with equal products.
    size_t i_end = i + 1, o_end = o + 1;
    int64_t pin = in[i], pout = out[o];
    while (pin != pout) {
      if (pin < pout) {
        if (i_end == in.size() || lazy::is_sym(in[i_end])) return std::nullopt;
        pin *= in[i_end++];
      } else {
        if (o_end == out.size() || lazy::is_sym(out[o_end])) return std::nullopt;
        pout *= out[o_end++];
      }
    }
    if (i_end - i == 1 && o_end - o == 1) {
      nidx[i] = idx[o];
    } else {
      const auto o0 = static_cast<std::ptrdiff_t>(o), o1 = static_cast<std::ptrdiff_t>(o_end);
      const auto i0 = static_cast<std::ptrdiff_t>(i), i1 = static_cast<std::ptrdiff_t>(i_end);
      const std::vector<UOp> digits = unflatten(
          flatten({idx.begin() + o0, idx.begin() + o1}, {out.begin() + o0, out.begin() + o1}),
          {in.begin() + i0, in.begin() + i1});
      std::copy(digits.begin(), digits.end(), nidx.begin() + i0);
    }
    i = i_end;
    o = o_end;
  }
  return nidx;
}

UOp lower_index(const Match& m) {
  LowerCtx& ctx = m.ctx<LowerCtx>();
  const UOp& u = m.root();
  const UOp& n = u.src(0);
  if (n.op() == Ops::DEFINE_GLOBAL) return {};  // already kernel level
  const UOp& valid = u.src(1);
  std::vector<UOp> idx(u.src().begin() + 2, u.src().end());
  const Shape& out_shape = (*ctx.shapes)(n);

  if ((*ctx.is_input)(n)) {
    auto [it, fresh] = ctx.slot_of.emplace(n.get(), static_cast<int>(ctx.inputs.size()) + 1);
    if (fresh) ctx.inputs.push_back(n);
    // Sizeless: a kernel serves input buffers of every size its indices stay within (with
    // symbolic dimensions, buffers of every bound size share one kernel).
    const UOp g = UOp::define_global(n.dtype().ptr(), it->second);
    const UOp flat = flatten(idx, out_shape);
    return (valid == kTrue ? g.index(flat) : g.index(flat, valid)).load();
  }
  switch (n.op()) {
    case Ops::CONST:
    case Ops::DEFINE_VAR:  // a variable's value (Tensor::variable)
      return n;
    case Ops::IOTA:
      return idx[0].cast(n.dtype());
    case Ops::CONTIGUOUS:
    case Ops::DETACH:
      return index_node(n.src(0), valid, idx);
    case Ops::RESHAPE: {
      const Shape& in = (*ctx.shapes)(n.src(0));
      if (auto nidx = reshape_by_groups(idx, out_shape, in))
        return index_node(n.src(0), valid, std::move(*nidx));
      return index_node(n.src(0), valid, unflatten(flatten(idx, out_shape), in));
    }
    case Ops::PERMUTE: {
      const IntTuple& order = n.arg_as<IntTuple>();
      std::vector<UOp> nidx(idx.size());
      for (size_t i = 0; i < order.size(); ++i) nidx[order[i]] = idx[i];
      return index_node(n.src(0), valid, std::move(nidx));
    }
    case Ops::EXPAND: {
      const Shape& in = (*ctx.shapes)(n.src(0));
      for (size_t i = 0; i < in.size(); ++i)
        if (in[i] != out_shape[i]) idx[i] = idx_const(0);
      return index_node(n.src(0), valid, std::move(idx));
    }
    case Ops::SHRINK: {
      const PairTuple& b = n.arg_as<PairTuple>();
      for (size_t i = 0; i < idx.size(); ++i)
        if (b[i].first) idx[i] = idx[i] + b[i].first;
      return index_node(n.src(0), valid, std::move(idx));
    }
    case Ops::FLIP: {
      const IntTuple& f = n.arg_as<IntTuple>();
      for (size_t i = 0; i < idx.size(); ++i)
        if (f[i]) idx[i] = dim_plus(out_shape[i], -1) - idx[i];
      return index_node(n.src(0), valid, std::move(idx));
    }
    case Ops::PAD: {
      const PairTuple& p = n.arg_as<PairTuple>();
      const Shape& in = (*ctx.shapes)(n.src(0));
      UOp inside = kTrue;
      for (size_t i = 0; i < idx.size(); ++i) {
        if (p[i].first == 0 && p[i].second == 0) continue;
        if (p[i].first) inside = and_(inside, idx[i].ge(p[i].first));
        if (p[i].second) inside = and_(inside, idx[i].lt(dim_plus(in[i], p[i].first)));
        if (p[i].first) idx[i] = idx[i] - p[i].first;
      }
      const UOp inner = index_node(n.src(0), and_(valid, inside), std::move(idx));
      return inside.where(inner, UOp::const_(n.dtype(), int64_t{0}));
    }
    case Ops::REDUCE_AXIS: {
      const Shape& in = (*ctx.shapes)(n.src(0));
      for (int64_t a : lazy::reduce_axes(n))
        if (in[a] == 0) return reduce_identity(lazy::reduce_op(n), n.dtype());  // empty reduce
      std::vector<UOp> ranges;
      for (int64_t a : lazy::reduce_axes(n)) {
        if (in[a] == 1) {
          idx[a] = idx_const(0);
          continue;
        }
        idx[a] = UOp::range(lazy::dim_uop(in[a]), ctx.next_range++, AxisType::reduce);
        ranges.push_back(idx[a]);
      }
      const UOp body = index_node(n.src(0), valid, std::move(idx));
      if (ranges.empty()) return body;
      std::vector<UOp> src{body};
      src.insert(src.end(), ranges.begin(), ranges.end());
      return UOp::make(Ops::REDUCE, n.dtype(), std::move(src), lazy::reduce_op(n));
    }
    case Ops::BUFFER:
      throw InternalError("lower_kernel: a BUFFER that is not an input");
    default:
      break;
  }
  if (is_alu(n.op()) || n.op() == Ops::CAST || n.op() == Ops::BITCAST) {
    std::vector<UOp> src;
    for (const UOp& s : n.src()) src.push_back(index_node(s, valid, idx));
    return UOp::make(n.op(), n.dtype(), std::move(src), n.arg());
  }
  throw InternalError(fmt::format("lower_kernel: cannot lower {} in a kernel", op_name(n.op())));
}

const PatternMatcher pm_lower({rule(UPat::op(Ops::INDEX), lower_index)});

// For each dimension of a kernel's root, the sizes of its parts: the dimension itself, or, where
// the root's value is computed (through elementwise ops of its shape) from a reshape of a
// reduction's result that splits the dimension, the sizes it splits into. A grouped
// convolution's (groups, channels per group) read back as its output channels gets a range for
// each, so its group is a range of its own (a batch of the GEMM lowering) and not a division of
// the channel. One such reshape decides; any other reshape leaves the shape as it is.
std::vector<Shape> range_parts(const UOp& start, const Shape& shape, lazy::ShapeMap& shapes,
                               const std::function<bool(const UOp&)>& is_input) {
  std::vector<Shape> parts;
  for (int64_t d : shape) parts.push_back({d});
  for (int64_t d : shape)
    if (lazy::is_sym(d) || d == 0) return parts;
  std::vector<UOp> stack{start};
  std::unordered_set<const UOpNode*> seen;
  while (!stack.empty()) {
    const UOp n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second || is_input(n) || shapes(n) != shape) continue;
    if (n.op() == Ops::RESHAPE) {
      const UOp& src = n.src(0);
      if (src.op() != Ops::REDUCE_AXIS || is_input(src)) continue;
      Shape in;
      for (int64_t d : shapes(src))
        if (d != 1) in.push_back(d);
      for (int64_t d : in)
        if (lazy::is_sym(d)) return parts;
      // Each dimension of the root (other than 1) is a run of `in` with its product.
      std::vector<Shape> split = parts;
      size_t i = 0;
      bool any = false;
      for (size_t o = 0; o < shape.size(); ++o) {
        if (shape[o] == 1) continue;
        Shape run;
        int64_t p = 1;
        while (p < shape[o] && i < in.size()) {
          run.push_back(in[i]);
          p *= in[i++];
        }
        if (p != shape[o]) return parts;
        any = any || run.size() > 1;
        split[o] = run;
      }
      return any && i == in.size() ? split : parts;
    }
    if (is_alu(n.op()) || n.op() == Ops::CAST || n.op() == Ops::BITCAST ||
        n.op() == Ops::CONTIGUOUS)
      for (const UOp& s : n.src()) stack.push_back(s);
  }
  return parts;
}

}  // namespace

UOp reduce_identity(Ops op, DType d) {
  switch (op) {
    case Ops::ADD:
      return UOp::const_(d, int64_t{0});
    case Ops::MUL:
      return UOp::const_(d, int64_t{1});
    case Ops::MAX:  // the lowest value of the dtype
      if (d.is_float()) return UOp::const_(d, -std::numeric_limits<double>::infinity());
      if (d.is_bool()) return UOp::const_(d, false);
      return UOp::const_(d, dtypes::min_int(d));
    default:
      throw InternalError(fmt::format("no identity for a {} reduction", op_name(op)));
  }
}

LoweredKernel lower_kernel(const UOp& root, lazy::ShapeMap& shapes,
                           const std::function<bool(const UOp&)>& is_input) {
  LowerCtx ctx{&shapes, &is_input, {}, {}, 0, root};
  // The root itself is computed here, so index its definition, never a load of itself. An
  // ASSIGN's kernel covers its value, stored at the offsets into the target's buffer.
  const bool in_place = root.op() == Ops::ASSIGN;
  const UOp start = root.op() == Ops::CONTIGUOUS ? root.src(0) : in_place ? root.src(1) : root;
  const Shape shape = shapes(start);
  std::vector<UOp> idx(shape.size());
  int64_t axis = 0;
  const std::vector<Shape> parts = range_parts(start, shape, shapes, is_input);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) {
      idx[i] = idx_const(0);
      continue;
    }
    std::vector<UOp> digits;
    for (int64_t d : parts[i])
      digits.push_back(UOp::range(lazy::dim_uop(d), axis++, AxisType::global));
    idx[i] = digits.size() == 1 ? digits[0] : flatten(digits, parts[i]);
  }
  ctx.next_range = axis;
  const UOp value = graph_rewrite(index_node(start, kTrue, idx), pm_lower, ctx,
                                  {.parents_first = true, .name = "lower_kernel"});
  const Shape& out_shape = shapes(root);
  const UOp out = UOp::define_global(root.dtype().ptr(lazy::prod_max(out_shape)), 0);
  UOp target = out.index(flatten(idx, shape));
  if (in_place) {
    // Each index moves by its offset; where an offset or the value's size is a variable, the
    // store is gated to the target's extent (the simplifier drops a gate its bounds prove).
    const IntTuple& offsets = root.arg_as<IntTuple>();
    UOp inside = kTrue;
    for (size_t i = 0; i < idx.size(); ++i) {
      if (offsets[i] != 0) idx[i] = idx[i] + lazy::dim_uop(offsets[i]);
      if (lazy::is_sym(offsets[i]) || lazy::is_sym(shape[i]))
        inside = and_(inside, idx[i].lt(lazy::dim_uop(out_shape[i])));
    }
    const UOp at = flatten(idx, out_shape);
    target = inside == kTrue ? out.index(at) : out.index(at, inside);
  }
  UOp ast = UOp::sink({target.store(value)});
  ast = simplify(ast);
  return {std::move(ast), std::move(ctx.inputs)};
}

}  // namespace vkgrad
