// tensor: autograd, as tinygrad's gradient.py. backward() walks the loss's tensor-level graph
// from the loss toward the tensors that require grad, and applies one rule per node kind
// (gradient() below) to turn the gradient of a node into gradients of its sources. Every rule
// builds lazy tensors from the same primitives as the forward ops, so backward runs nothing and
// the gradient graphs fuse and schedule like any other.
//
// Tensors that require grad are found by their node: a process-wide registry holds them (weakly)
// and backward reads the node each one currently stands for. realize() cuts a graph at a buffer;
// keep_for_autograd keeps the cut-off node (Impl::grad_graph) when gradients may need it, and
// the walk steps from such a buffer to that node. Tensor::to copies through the host into a new
// buffer; keep_copy_for_autograd gives that buffer COPY(source node, DEVICE) as its origin (kept
// by the engine as long as the buffer lives), and the walk steps from the buffer to the COPY,
// whose rule sends the gradient back to the source's device.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <mutex>
#include <numbers>
#include <unordered_map>
#include <unordered_set>

#include "engine/realize.hpp"
#include "ir/node_index.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

using ImplPtr = std::shared_ptr<Tensor::Impl>;
using NodeSet = std::unordered_set<const UOpNode*>;

// ---- registry: tensors that require grad or hold a kept graph -----------------------------------
class Registry {
 public:
  void add(const ImplPtr& impl) {
    std::lock_guard lock(mu_);
    // A key is reused only after its Impl died, so an entry found alive is this one.
    impls_[impl.get()] = impl;
    if (impls_.size() >= prune_at_) {
      std::erase_if(impls_, [](const auto& e) { return e.second.expired(); });
      prune_at_ = std::max<size_t>(64, 2 * impls_.size());
    }
  }
  // The live entries, dropping the dead.
  std::vector<ImplPtr> live() {
    std::lock_guard lock(mu_);
    std::vector<ImplPtr> out;
    for (auto it = impls_.begin(); it != impls_.end();) {
      if (ImplPtr p = it->second.lock()) {
        out.push_back(std::move(p));
        ++it;
      } else {
        it = impls_.erase(it);
      }
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const Tensor::Impl*, std::weak_ptr<Tensor::Impl>> impls_;
  size_t prune_at_ = 64;
};

Registry& registry() {
  static Registry r;
  return r;
}

// The graph a realized tensor stands for, while its node is still the view realize() gave it.
const UOp* kept_graph(const Tensor::Impl& im) {
  return im.grad_graph && im.uop == im.grad_view ? &im.grad_graph : nullptr;
}

// The node a tensor's value is computed at: its kept graph, else its node.
const UOp& value_node(const Tensor::Impl& im) {
  const UOp* g = kept_graph(im);
  return g ? *g : im.uop;
}

// Where a tensor that requires grad collects its gradient. Tensor::reshape folds a reshape of a
// reshape into one RESHAPE of the source, so a path may reach a RESHAPE's source without passing
// through the tensor's own node: the gradient is read at the source and reshaped.
UOp anchor(const UOp& u) { return u.op() == Ops::RESHAPE ? u.src(0) : u; }

// What backward needs from the registry: the anchors of the tensors that require grad, and the
// steps from a realized buffer to the graph it was computed from.
struct Targets {
  std::vector<ImplPtr> leaves;
  NodeSet anchors;
  std::unordered_map<const UOpNode*, UOp> through;  // BUFFER -> kept graph
};

Targets collect_targets() {
  Targets t;
  for (ImplPtr& im : registry().live()) {
    if (im->grad_graph && im->uop != im->grad_view) im->grad_graph = im->grad_view = UOp();
    if (const UOp* g = kept_graph(*im)) {
      const UOp buf = im->uop.op() == Ops::RESHAPE ? im->uop.src(0) : im->uop;
      t.through.emplace(buf.get(), *g);
    }
    if (im->requires_grad) {
      t.anchors.insert(anchor(value_node(*im)).get());
      t.leaves.push_back(std::move(im));
    }
  }
  return t;
}

// The graph a realized buffer's value was computed from, if gradients may flow through it: its
// kept graph (keep_for_autograd) or the COPY it was copied by (keep_copy_for_autograd).
UOp step_through(const UOp& u, const Targets& t) {
  if (u.op() != Ops::BUFFER) return {};
  if (auto it = t.through.find(u.get()); it != t.through.end()) return it->second;
  return engine::origin(u);
}

// The sources of u a gradient can flow to: none out of leaves, DETACH and integer or bool nodes
// (gradients live on float values); a realized buffer's only "source" is the graph it was
// computed from (step_through), which `held` keeps alive. Appended to `out` as pointers to the
// nodes' own source handles (no reference counting on the way).
void grad_sources(const UOp& u, const Targets& t, std::vector<const UOp*>& out,
                  std::deque<UOp>& held) {
  if (UOp step = step_through(u, t)) {
    held.push_back(std::move(step));
    out.push_back(&held.back());
    return;
  }
  if (u.op() == Ops::GRAD_RULE) {  // its rule's inputs, not its value's graph
    for (size_t i = 1; i < u.src().size(); ++i)
      if (u.src(i).dtype().is_float()) out.push_back(&u.src(i));
    return;
  }
  switch (u.op()) {
    case Ops::BUFFER:
    case Ops::CONST:
    case Ops::IOTA:
    case Ops::DETACH:
    case Ops::DEFINE_VAR:
    case Ops::BIND:
      return;
    default:
      break;
  }
  if (!u.dtype().is_float()) return;
  for (const UOp& s : u.src())
    if (s.dtype().is_float()) out.push_back(&s);
}

// Walks along gradient edges. walk(root) marks the nodes reachable from root that reach an
// anchor and lists in `order`, when given, those that no earlier walk of this object met, sources
// before users (post-order): one pass, each node's sources found once (a plain forward's realize
// walks its whole graph, so this runs per forward). An earlier walk's nodes keep their marks, so
// the shared subgraphs of a batch of roots are walked once.
class GradWalk {
 public:
  explicit GradWalk(const Targets& t) : t_(t) {}

  void walk(const UOp& root, std::vector<UOp>* order = nullptr) {
    if (index_.find(root.get()) != NodeIndex::kNone) return;
    struct Frame {
      const UOp* u;
      uint32_t id;              // its number in index_
      size_t begin, next, end;  // its sources: pool[begin, end), the next one to enter
    };
    std::vector<Frame> stack;
    std::vector<const UOp*> pool;
    auto enter = [&](const UOp* u) {
      const uint32_t id = index_.insert(u->get());
      marks_.push_back(0);
      const size_t begin = pool.size();
      grad_sources(*u, t_, pool, held_);
      stack.push_back({u, id, begin, begin, pool.size()});
    };
    enter(&root);
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.end) {
        const UOp* s = pool[f.next++];
        if (index_.find(s->get()) == NodeIndex::kNone) enter(s);  // (f is not used after a push)
        continue;
      }
      // Done: every source's mark is final. Its sources are the pool's tail.
      const UOp* u = f.u;
      const size_t begin = f.begin;
      bool reaches = t_.anchors.count(u->get()) > 0;
      for (size_t i = begin; i < f.end && !reaches; ++i) reaches = on_path(*pool[i]);
      if (reaches) marks_[f.id] = 1;
      if (order) order->push_back(*u);
      pool.resize(begin);
      stack.pop_back();
    }
  }
  bool on_path(const UOp& u) const {
    const uint32_t i = index_.find(u.get());
    return i != NodeIndex::kNone && marks_[i];
  }

 private:
  const Targets& t_;
  NodeIndex index_;             // the nodes walked so far, numbered
  std::vector<uint8_t> marks_;  // by number: reaches an anchor
  std::deque<UOp> held_;        // the kept graphs and origins the walk stepped to
};

// ---- the rules ----------------------------------------------------------------------------------
constexpr double kLn2 = std::numbers::ln2;
constexpr double kPi = std::numbers::pi;

using Grads = std::vector<std::optional<Tensor>>;  // one per source; nullopt: none flows there

struct Context {
  lazy::ShapeMap shapes;
  std::string device;
  Tensor node(const UOp& u) { return tensor::make(u, shapes(u), u.dtype(), device); }
};

std::vector<int> as_ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// d(prod x)/dx_i = the product of the others, without dividing by a zero x_i: with no zero in
// the group it is prod/x_i; with one zero, the product of the non-zeros at the zero and 0
// elsewhere; with more, 0 everywhere.
Tensor prod_gradient(const Tensor& x, const Tensor& g, const std::vector<int64_t>& axes) {
  const std::vector<int> ax = as_ints(axes);
  const Tensor zero = x == 0.0;
  const Tensor nonzero_prod =
      tensor::reduce(where(zero, 1.0, x), Ops::MUL, ax, "prod").expand(x.shape());
  const Tensor zeros = zero.cast(x.dtype()).sum(ax, true).expand(x.shape());
  const Tensor others = where(zeros == 0.0, nonzero_prod / x,
                              where((zeros == 1.0).logical_and(zero), nonzero_prod, 0.0));
  return others * g.expand(x.shape());
}

// `u` is a chain of movement ops over a value with fewer elements than it has: it reads some
// of them more than once (windows that overlap, a broadcast).
bool views_repeatedly(const UOp& u, Context& c) {
  UOp base = u;
  while (is_movement(base.op())) base = base.src(0);
  return base != u && lazy::prod_max(c.shapes(base)) < lazy::prod_max(c.shapes(u));
}

// A GRAD_RULE's gradients, to the sources `wanted` says (one flag per source).
Grads rule_gradient(const UOp& u, const Tensor& g, Context& c, const std::vector<bool>& wanted) {
  const IntTuple& arg = u.arg_as<IntTuple>();
  switch (static_cast<tensor::GradRule>(arg.at(0))) {
    case tensor::GradRule::conv2d: {
      std::vector<std::optional<Tensor>> xw =
          tensor::conv_gradient(c.node(u.src(1)), c.node(u.src(2)), g, arg, wanted[1], wanted[2]);
      return {std::nullopt, std::move(xw[0]), std::move(xw[1])};
    }
  }
  throw InternalError(fmt::format("backward: no gradient rule numbered {}", arg.at(0)));
}

Grads gradient(const UOp& u, const Tensor& g, Context& c) {
  auto src = [&](size_t i) { return c.node(u.src(i)); };
  auto out = [&] { return c.node(u); };
  switch (u.op()) {
    // Elementwise.
    case Ops::ADD:
      return {g, g};
    case Ops::SUB:
      return {g, -g};
    case Ops::MUL:
      return {g * src(1), g * src(0)};
    case Ops::MULACC:
      return {g * src(1), g * src(0), g};
    case Ops::FDIV:
      return {g / src(1), -g * src(0) / (src(1) * src(1))};
    case Ops::NEG:
      return {-g};
    case Ops::RECIPROCAL:
      return {-g * out() * out()};
    case Ops::EXP2:
      return {g * out() * kLn2};
    case Ops::LOG2:
      return {g / (src(0) * kLn2)};
    case Ops::SIN:
      return {g * (kPi / 2 - src(0)).sin()};
    case Ops::SQRT:
      return {g / (out() * 2.0)};
    case Ops::POW:  // x**y = exp2(y log2 x)
      return {g * src(1) * src(0).pow(src(1) - 1.0), g * out() * src(0).log2() * kLn2};
    case Ops::MAX: {  // to the larger side; a tie splits it in halves (tinygrad)
      const Tensor a = src(0), b = src(1);
      const Tensor half = where(a != b, 0.0, g * 0.5);
      return {where(a > b, g, half), where(a < b, g, half)};
    }
    case Ops::WHERE:
      return {std::nullopt, where(src(0), g, 0.0), where(src(0), 0.0, g)};
    case Ops::CAST:  // float to float only (grad_sources drops integer sources)
      return {g.cast(u.src(0).dtype())};
    case Ops::CONTIGUOUS:
    case Ops::CONTIGUOUS_BACKWARD:
      return {g};
    // Tensor::to: the gradient goes back to the device the value came from (the arg), as a
    // value: it is copied now, so the backward graph on each side stays on one device.
    case Ops::COPY:
      return {g.detach().to(u.arg_as<std::string>()), std::nullopt};
    // Piecewise constant, comparisons, bits: no gradient.
    case Ops::TRUNC:
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::CMPEQ:
    case Ops::BITCAST:
    case Ops::IDIV:
    case Ops::MOD:
    case Ops::SHL:
    case Ops::SHR:
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
    case Ops::THREEFRY:
      return Grads(u.src().size());

    // Reductions: the gradient spreads back over the reduced axes.
    case Ops::REDUCE_AXIS: {
      const Tensor x = src(0);
      const std::vector<int64_t> axes = lazy::reduce_axes(u);
      switch (lazy::reduce_op(u)) {
        case Ops::ADD:
          return {g.expand(x.shape())};
        case Ops::MAX: {  // to the positions of the maximum, shared among ties (tinygrad)
          const Tensor is_max = (x == out().expand(x.shape())).cast(x.dtype());
          const Tensor ties = is_max.sum(as_ints(axes), true).expand(x.shape());
          const Tensor grad = is_max / ties * g.expand(x.shape());
          // A source that views its elements several times over (a max pool's overlapping
          // windows) gets this gradient folded back by the views' gradients: a sum over every
          // window an element lies in, each term of which would compute the comparison, the ties
          // and g again from four loads. Realized once per window element, each term of the fold
          // is one load (ResNet-18's pool backward, 16 x 64 x 32 x 32: 17 -> 6 ms).
          return {views_repeatedly(u.src(0), c) ? grad.contiguous() : grad};
        }
        case Ops::MUL:
          return {prod_gradient(x, g, axes)};
        default:
          break;
      }
      break;
    }

    // Movement: the inverse movement.
    case Ops::RESHAPE:
      return {g.reshape(c.shapes(u.src(0)))};
    case Ops::EXPAND: {
      const Shape& in = c.shapes(u.src(0));
      std::vector<int> axes;
      for (size_t i = 0; i < in.size(); ++i)
        if (in[i] != g.shape()[i]) axes.push_back(static_cast<int>(i));
      return {axes.empty() ? g : g.sum(axes, true)};
    }
    case Ops::PERMUTE: {
      const IntTuple& order = u.arg_as<IntTuple>();
      std::vector<int> inverse(order.size());
      for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int>(i);
      return {g.permute(inverse)};
    }
    case Ops::PAD: {
      const Shape& in = c.shapes(u.src(0));
      PadList keep;
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t before = u.arg_as<PairTuple>()[i].first;
        keep.emplace_back(before, before + in[i]);
      }
      return {g.shrink(keep)};
    }
    case Ops::SHRINK: {
      const Shape& in = c.shapes(u.src(0));
      PadList pads;
      for (size_t i = 0; i < in.size(); ++i) {
        const auto [start, end] = u.arg_as<PairTuple>()[i];
        pads.emplace_back(start, in[i] - end);
      }
      return {g.pad(pads)};
    }
    case Ops::FLIP: {
      const IntTuple& flags = u.arg_as<IntTuple>();
      std::vector<int> axes;
      for (size_t i = 0; i < flags.size(); ++i)
        if (flags[i]) axes.push_back(static_cast<int>(i));
      return {g.flip(axes)};
    }
    default:
      break;
  }
  throw Error(fmt::format("backward: no gradient rule for {}", op_name(u.op())));
}

// A gradient is a value, not a function of the parameters: the DETACH keeps realize() from
// keeping its graph and any later backward from differentiating through it.
Tensor detached(const Tensor& t) {
  return tensor::make(UOp::make(Ops::DETACH, t.dtype(), {tensor::uop(t)}), t.shape(), t.dtype(),
                      t.device());
}

// Parameters still lazy: each is realized by the first realize whose graph reads it.
class PendingParameters {
 public:
  void add(const ImplPtr& impl) {
    std::lock_guard lock(mu_);
    impls_.push_back(impl);
    any_ = true;
  }
  // Removes and returns the live ones still lazy and still requiring grad (the others are
  // dropped); the caller adds back those it leaves lazy.
  std::vector<ImplPtr> take() {
    std::lock_guard lock(mu_);
    std::vector<ImplPtr> out;
    for (const std::weak_ptr<Tensor::Impl>& w : impls_)
      if (ImplPtr p = w.lock(); p && p->requires_grad && !engine::as_buffer(p->uop))
        out.push_back(std::move(p));
    impls_.clear();
    any_ = false;
    return out;
  }
  bool any() const { return any_; }

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<Tensor::Impl>> impls_;
  std::atomic<bool> any_{false};
};

PendingParameters& pending_parameters() {
  static PendingParameters* p = new PendingParameters();  // used during static destruction
  return *p;
}

}  // namespace

// ---- realize's hook -----------------------------------------------------------------------------
namespace tensor {

void materialize_parameters(std::vector<UOp>& roots) {
  if (!pending_parameters().any()) return;
  const std::vector<ImplPtr> pending = pending_parameters().take();
  if (pending.empty()) return;
  std::unordered_set<const UOpNode*> in_graph;
  for (const UOp& u : toposort(UOp::sink(roots))) in_graph.insert(u.get());
  std::vector<Tensor> used;
  std::vector<UOp> before;
  for (const ImplPtr& im : pending) {
    if (in_graph.count(im->uop.get())) {
      before.push_back(im->uop);
      used.push_back(Tensor(im));
    } else {
      pending_parameters().add(im);
    }
  }
  if (used.empty()) return;
  Tensor::realize_all(used);  // a parameter initialized from another materializes that first
  std::unordered_map<UOp, UOp, UOpHash> with;
  for (size_t i = 0; i < used.size(); ++i) with.emplace(before[i], uop(used[i]));
  for (UOp& r : roots) r = substitute(r, with);
}

void keep_for_autograd(std::span<const std::shared_ptr<Tensor::Impl>> impls,
                       std::span<const UOp> before) {
  Targets t = collect_targets();
  if (t.leaves.empty()) return;
  // A tensor that requires grad and was just realized is found at the node it had before, in
  // graphs built before the realize.
  for (size_t i = 0; i < impls.size(); ++i)
    if (impls[i]->requires_grad) t.anchors.insert(anchor(before[i]).get());
  // Which nodes reach an anchor, memoized across the batch (shared subgraphs are walked once).
  GradWalk w(t);
  for (size_t i = 0; i < impls.size(); ++i) {
    Tensor::Impl& im = *impls[i];
    w.walk(before[i]);
    if (!w.on_path(before[i])) continue;
    im.grad_graph = before[i];
    im.grad_view = im.uop;
    registry().add(impls[i]);
  }
}

void keep_copy_for_autograd(const UOp& buffer, const Tensor& src, const std::string& device) {
  const Targets t = collect_targets();
  if (t.leaves.empty() || !src.dtype().is_float()) return;
  const UOp copy =
      UOp::make(Ops::COPY, src.dtype(),
                {uop(src), UOp::make(Ops::DEVICE, dtypes::void_, {}, device)}, src.device());
  GradWalk w(t);
  w.walk(copy);
  if (w.on_path(copy)) engine::set_origin(buffer, copy);
}

}  // namespace tensor

// ---- the API ------------------------------------------------------------------------------------
Tensor& Tensor::requires_grad_(bool on) {
  const ImplPtr& im = impl();
  if (on && !dtype().is_float())
    throw DTypeError(fmt::format("requires_grad_: only float tensors have gradients, got {} {}",
                                 tensor::shape_str(shape()), dtype().name()));
  if (on && !im->requires_grad) {
    // Tensors are found by their node, and nodes are interned: a graph of constants alone
    // (zeros, ones, arange) is the same node as any equal constant elsewhere. Its own buffer
    // makes it distinct. Any other lazy parameter (a random init) is materialized by the first
    // realize that reads it (materialize_parameters), so no computation recomputes it.
    bool has_buffer = false;
    for (const UOp& u : toposort(im->uop)) has_buffer = has_buffer || u.op() == Ops::BUFFER;
    if (!has_buffer) {
      im->weak = false;
      realize();
    } else if (!engine::as_buffer(im->uop)) {
      pending_parameters().add(im);
    }
  }
  im->requires_grad = on;
  if (on) registry().add(im);
  return *this;
}

bool Tensor::requires_grad() const { return impl()->requires_grad; }

std::optional<Tensor> Tensor::grad() const { return impl()->grad; }

Tensor& Tensor::set_grad(std::optional<Tensor> grad) {
  if (grad && grad->shape() != shape())
    throw ShapeError(fmt::format("set_grad: a gradient of shape {} for a tensor of shape {}",
                                 tensor::shape_str(grad->shape()), tensor::shape_str(shape())));
  if (grad && grad->dtype() != dtype())
    throw DTypeError(fmt::format("set_grad: a gradient of {} for a tensor of {}",
                                 grad->dtype().name(), dtype().name()));
  impl()->grad = std::move(grad);
  return *this;
}

void Tensor::backward() const {
  if (numel() != 1)
    throw ShapeError(fmt::format("backward: needs a loss with one element, got shape {}",
                                 tensor::shape_str(shape())));
  if (!dtype().is_float()) throw DTypeError("backward: needs a float loss, got " + dtype().name());
  const Targets t = collect_targets();
  if (t.leaves.empty()) return;
  const UOp root = value_node(*impl());
  // Prune: only nodes on a path to an anchor get a gradient.
  GradWalk w(t);
  std::vector<UOp> order;
  w.walk(root, &order);
  if (!w.on_path(root)) return;
  for (const UOp& u : order) {
    if ((u.op() != Ops::RESHAPE && u.op() != Ops::EXPAND) || !w.on_path(u)) continue;
    for (int64_t d : u.arg_as<IntTuple>())
      if (lazy::is_sym(d))
        throw Error(fmt::format(
            "backward: the loss is computed through the symbolic size {}; gradients through "
            "symbolic sizes are not supported",
            lazy::sym_var(d).name));
  }

  Context c{{}, device()};
  std::unordered_map<const UOpNode*, Tensor> grads;
  auto add = [&](const UOp& to, Tensor g) {
    if (!w.on_path(to)) return;
    if (g.dtype() != to.dtype()) g = g.cast(to.dtype());
    if (g.shape() != c.shapes(to))
      throw InternalError(fmt::format("backward: a gradient of shape {} for a {} of shape {}",
                                      tensor::shape_str(g.shape()), op_name(to.op()),
                                      tensor::shape_str(c.shapes(to))));
    auto [it, fresh] = grads.try_emplace(to.get(), g);
    if (!fresh) it->second = it->second + g;
  };
  add(root, Tensor::ones(c.shapes(root), root.dtype(), device()));
  // Users before sources: each node's gradient is complete when its rule runs.
  std::vector<const UOp*> srcs;
  std::deque<UOp> held;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    auto g = grads.find(u.get());
    if (g == grads.end()) continue;
    if (const UOp step = step_through(u, t)) {
      add(step, g->second.reshape(c.shapes(step)));
      continue;
    }
    srcs.clear();
    grad_sources(u, t, srcs, held);
    if (srcs.empty()) continue;     // a leaf of the walk
    c.device = g->second.device();  // a node's gradient is on the node's device
    Grads gs;
    if (u.op() == Ops::GRAD_RULE) {
      std::vector<bool> wanted(u.src().size());
      for (size_t i = 1; i < wanted.size(); ++i) wanted[i] = w.on_path(u.src(i));
      gs = rule_gradient(u, g->second, c, wanted);
    } else {
      gs = gradient(u, g->second, c);
    }
    for (size_t i = 0; i < u.src().size(); ++i)
      if (gs[i] && u.src(i).dtype().is_float()) add(u.src(i), *gs[i]);
  }

  for (const ImplPtr& leaf : t.leaves) {
    auto g = grads.find(anchor(value_node(*leaf)).get());
    if (g == grads.end()) continue;
    const Tensor d = detached(g->second.reshape(leaf->shape));
    leaf->grad = leaf->grad ? detached(*leaf->grad + d) : d;
  }
}

}  // namespace vkgrad
