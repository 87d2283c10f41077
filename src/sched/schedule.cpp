// sched: the schedule, as a table of contents — normalize (cache key), split large reductions
// (split_reduce.cpp), choose what becomes a buffer, lower each kernel (indexing.cpp), plan
// intermediate memory.
#include "sched/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>

#include "ir/node_index.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "sched/indexing.hpp"
#include "sched/split_reduce.hpp"

namespace vkgrad {

// ---- normalize: buffers become placeholders
// ------------------------------------------------------
bool is_placeholder(const UOp& b) { return b.op() == Ops::BUFFER && lazy::buffer_id(b) < 0; }
int64_t placeholder_index(const UOp& b) { return -lazy::buffer_id(b) - 1; }

NormalizedGraph normalize_graph(std::span<const UOp> roots) {
  NormalizedGraph out;
  const UOp sink = UOp::sink(std::vector<UOp>(roots.begin(), roots.end()));
  // One pass over the graph in order, sources first: a BUFFER becomes the next placeholder, a
  // BIND its variable, a GRAD_RULE its value, and every other node is rebuilt where a source
  // changed. This runs on every realize, so no maps keyed by UOp: the nodes are numbered and looked
  // up by number.
  const std::vector<UOp> topo = toposort(sink);
  NodeIndex number;
  for (const UOp& u : topo) number.insert(u.get());
  std::vector<UOp> now(topo.size());
  auto now_of = [&](const UOp& s) -> const UOp& { return now[number.find(s.get())]; };
  bool binds = false;
  for (size_t i = 0; i < topo.size(); ++i) {
    const UOp& u = topo[i];
    if (u.op() == Ops::BIND) {
      now[i] = u.src(0);
      binds = true;
    } else if (u.op() == Ops::GRAD_RULE) {  // autograd's alone: the value is its source
      now[i] = now_of(u.src(0));
    } else if (u.op() == Ops::BUFFER) {
      const int64_t k = static_cast<int64_t>(out.inputs.size());
      out.inputs.push_back(u);
      now[i] = UOp::make(Ops::BUFFER, u.dtype(),
                         {UOp::make(Ops::UNIQUE, dtypes::void_, {}, -(k + 1)), u.src(1)}, u.arg());
    } else {
      bool changed = false;
      for (const UOp& s : u.src()) changed = changed || now_of(s) != s;
      if (!changed) {
        now[i] = u;
        continue;
      }
      std::vector<UOp> src;
      src.reserve(u.src().size());
      for (const UOp& s : u.src()) src.push_back(now_of(s));
      now[i] = u.replace(std::move(src));
    }
  }
  if (binds) out.vars = lazy::bound_values(roots);
  out.key = now.back();
  return out;
}

// ---- which nodes become buffers
// ------------------------------------------------------------------
namespace {

// A node is realized (computed into its own buffer by its own kernel) when it is
//   - an output or a CONTIGUOUS;
//   - a reduction whose value is needed at more than one output position of its consumer's
//     kernel (behind an EXPAND, or read through two different views in that kernel: the sum of
//     shifted windows of a conv's output) or inside another reduction, or one that several
//     kernels read (a gradient feeding both of Adam's moments is computed once, not once per
//     moment);
//   - an elementwise computation that a reduction reads through a broadcast of 8 or more (a
//     matmul operand such as softmax's gradient or a masked delta), unless it is a single cheap
//     op: otherwise the reduction would recompute it for every broadcast copy;
//   - an elementwise computation with a transcendental, a division or a power that any kernel
//     reads through a broadcast of 8 or more (Adam's bias corrections 1 - beta^t, scalars
//     broadcast over every parameter);
//   - but never one that reads only narrow integers or nothing (worth_storing).
// A pad with a value counts as a view here, not as a computation (is_value_pad).
// Other elementwise work is recomputed where it is used, never stored, except a stored
// reduction's own elementwise epilogue, which store_epilogues moves into its kernel.
enum class Broadcast : uint8_t { none, plain, into_reduce };

// A pad with a value (Tensor::pad: WHERE(a padded mask of constants, the padded tensor, a
// constant)) is a view with a fill: it computes nothing worth storing, and what it pads is
// weighed at its own node. Stored, it would be a padded copy (a max-pool's -inf border around
// a conv's stored output: a kernel that only copies, with the conv's epilogue pulled into it).
bool is_value_pad(const UOp& u) {
  auto constant_view = [](UOp n) {
    while (is_movement(n.op())) n = n.src(0);
    return n.op() == Ops::CONST;
  };
  return u.op() == Ops::WHERE && u.src(0).op() == Ops::PAD && constant_view(u.src(0)) &&
         u.src(1).op() == Ops::PAD && constant_view(u.src(2));
}

// One walk over the computation at u, down to what its kernel reads (buffers, reductions, stored
// values). It is stored when it is costly to recompute: a transcendental, a division or a power,
// or two or more ops read into a reduction. It never is when it decodes packed data (every value
// it reads is an integer of at most 2 bytes: a quantized weight's blocks, their float16 scales)
// or is integer index arithmetic over no buffer (an arange's shifts): stored, it would be wider
// than what it reads, and a quantized weight would get a full-precision copy.
bool worth_storing(const UOp& u, Broadcast how,
                   const std::unordered_set<const UOpNode*>& realized) {
  auto computes = [](Ops op) { return is_alu(op) || op == Ops::CAST || op == Ops::BITCAST; };
  if (how == Broadcast::none || !computes(u.op()) || is_value_pad(u)) return false;
  int ops = 0;
  bool costly = false, reads = false, narrow_reads = true, float_math = false;
  std::vector<UOp> stack{u};
  std::unordered_set<const UOpNode*> seen;
  while (!stack.empty()) {
    const UOp n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    if (n.op() == Ops::BUFFER || n.op() == Ops::REDUCE_AXIS ||
        (n.get() != u.get() && realized.count(n.get()))) {
      reads = true;
      narrow_reads = narrow_reads && n.dtype().is_int() && n.dtype().itemsize() <= 2;
      continue;
    }
    float_math = float_math || n.dtype().is_float();
    if (computes(n.op()) && !is_value_pad(n)) {
      if (is_unary(n.op()) && n.op() != Ops::NEG) costly = true;  // transcendental or sqrt
      if (n.op() == Ops::FDIV || n.op() == Ops::POW) costly = true;
      if (++ops >= 2 && how == Broadcast::into_reduce) costly = true;
    }
    for (const UOp& s : n.src()) stack.push_back(s);
  }
  const bool decodes_narrow_data = narrow_reads && (reads || !float_math);
  return costly && !decodes_narrow_data;
}

std::unordered_set<const UOpNode*> choose_realized(const std::vector<UOp>& topo,
                                                   std::span<const UOp> roots,
                                                   lazy::ShapeMap& shapes) {
  std::unordered_set<const UOpNode*> realized;
  for (const UOp& r : roots) realized.insert(r.get());
  struct Flags {
    bool under = false;                   // below an EXPAND or REDUCE_AXIS in its kernel
    bool in_reduce = false;               // below a REDUCE_AXIS in its kernel
    Broadcast operand = Broadcast::none;  // reached through a broadcast of 8 or more
    const UOpNode* kernel = nullptr;      // the realized node whose kernel reads it
    bool shared = false;                  // read by more than one kernel
    bool viewed = false;                  // read through two different views in its kernel
    const UOpNode* parent = nullptr;      // the first node of its kernel that reads it
    bool parent_moves = false;            // whether that node is a movement op
  };
  std::unordered_map<const UOpNode*, Flags> flags;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp& u = *it;
    if (u.op() == Ops::SINK) continue;
    Flags f = flags[u.get()];
    if (u.op() == Ops::CONTIGUOUS || u.op() == Ops::ASSIGN ||
        (u.op() == Ops::REDUCE_AXIS && (f.under || f.shared || f.viewed)) ||
        worth_storing(u, f.operand, realized))
      realized.insert(u.get());
    if (realized.count(u.get())) f = Flags{.kernel = u.get()};  // its kernel starts here
    Flags down = f;
    down.under = f.under || u.op() == Ops::EXPAND || u.op() == Ops::REDUCE_AXIS;
    down.in_reduce = f.in_reduce || u.op() == Ops::REDUCE_AXIS;
    if (u.op() == Ops::EXPAND && lazy::prod_max(shapes(u)) >= 8 * lazy::prod_max(shapes(u.src(0))))
      down.operand = f.in_reduce ? Broadcast::into_reduce : Broadcast::plain;
    else if (!is_movement(u.op()) && !is_value_pad(u))
      down.operand = Broadcast::none;  // only the first computation below it is considered
    const bool moves = is_movement(u.op());
    for (const UOp& s : u.src()) {
      Flags& fs = flags[s.get()];
      // A second reader in the same kernel, through a view on either side, reads it at other
      // indices: a reduction below would be computed once per view.
      if (fs.parent && fs.parent != u.get() && fs.kernel == down.kernel &&
          (moves || fs.parent_moves))
        fs.viewed = true;
      if (!fs.parent || fs.kernel != down.kernel) {
        fs.parent = u.get();
        fs.parent_moves = moves;
      }
      fs.viewed = fs.viewed || down.viewed;
      fs.under = fs.under || down.under;
      fs.in_reduce = fs.in_reduce || down.in_reduce;
      fs.operand = std::max(fs.operand, down.operand);
      fs.shared = fs.shared || down.shared || (fs.kernel && fs.kernel != down.kernel);
      fs.kernel = down.kernel;
    }
  }
  return realized;
}

// A reduction that choose_realized stores because its value is read behind a broadcast, inside
// another reduction or by several kernels is stored with its elementwise epilogue instead: the
// run of elementwise ops and reshapes above it, each the only reader of the one below (linear's
// bias add under the attention's matmul, a mean's scale by 1 / n), up to the last elementwise op
// before a node read by another movement op, by more than one node, or already stored. Its kernel
// then computes them once per element; each reader would compute them once per use (a matmul's
// operands' ops in its inner loop, once for every output they reach, and one more buffer read).
void store_epilogues(const std::vector<UOp>& topo, std::span<const UOp> roots,
                     std::unordered_set<const UOpNode*>& realized) {
  struct Readers {
    int count = 0;
    UOp first;
  };
  std::unordered_map<const UOpNode*, Readers> readers;
  for (const UOp& u : topo) {
    const std::vector<UOp>& src = u.src();
    for (auto s = src.begin(); s != src.end(); ++s) {
      if (std::find(src.begin(), s, *s) != s) continue;  // a source read twice: one reader
      Readers& r = readers[s->get()];
      if (r.count++ == 0) r.first = u;
    }
  }
  std::unordered_set<const UOpNode*> outputs;
  for (const UOp& r : roots) outputs.insert(r.get());
  auto elementwise = [](const UOp& u) {
    return (is_alu(u.op()) || u.op() == Ops::CAST) && !is_value_pad(u);
  };
  for (const UOp& r : topo) {
    if (r.op() != Ops::REDUCE_AXIS || !realized.count(r.get()) || outputs.count(r.get())) continue;
    UOp top = r;
    for (UOp at = r;;) {
      const auto it = readers.find(at.get());
      if (it == readers.end() || it->second.count != 1) break;
      const UOp& p = it->second.first;
      if (realized.count(p.get()) || !(elementwise(p) || p.op() == Ops::RESHAPE)) break;
      at = p;
      if (elementwise(p)) top = p;
    }
    if (top == r) continue;
    realized.erase(r.get());
    realized.insert(top.get());
  }
}

// Keeps every reduction of a kernel on its fast path, after choose_realized has cut the graph:
//   - a reduction that its kernel reads through a PAD is stored unpadded, with its elementwise
//     epilogue: the value below the PAD's views is stored (a conv, BN and ReLU followed by a
//     max-pool's -inf padding would otherwise run masked over the padded shape);
//   - a kernel holds at most one reduction: of several side by side (a residual block's conv
//     and its downsample conv, added), the one with the most work stays fused with the epilogue
//     and the others are stored.
// Storing a node only cuts a kernel in two; a node stored here is checked as a kernel in turn.
bool has_reduction(const UOp& u, const std::unordered_set<const UOpNode*>& realized) {
  std::vector<UOp> stack{u};
  std::unordered_set<const UOpNode*> seen;
  while (!stack.empty()) {
    const UOp n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    if (n.get() != u.get() && (n.op() == Ops::BUFFER || realized.count(n.get()))) continue;
    if (n.op() == Ops::REDUCE_AXIS) return true;
    for (const UOp& s : n.src()) stack.push_back(s);
  }
  return false;
}

void one_reduction_per_kernel(const std::vector<UOp>& topo, lazy::ShapeMap& shapes,
                              std::unordered_set<const UOpNode*>& realized) {
  std::vector<UOp> roots;
  for (const UOp& u : topo)
    if (realized.count(u.get()) && u.op() != Ops::SINK) roots.push_back(u);
  while (!roots.empty()) {
    const UOp root = roots.back();
    roots.pop_back();
    std::vector<UOp> reduces;
    std::vector<UOp> stack{root};
    std::unordered_set<const UOpNode*> seen;
    bool cut = false;
    while (!stack.empty()) {
      const UOp u = stack.back();
      stack.pop_back();
      if (!seen.insert(u.get()).second) continue;
      if (u.get() != root.get()) {
        if (u.op() == Ops::BUFFER || realized.count(u.get())) continue;
        if (u.op() == Ops::REDUCE_AXIS) reduces.push_back(u);
        if (u.op() == Ops::PAD) {
          UOp base = u.src(0);
          while (is_movement(base.op())) base = base.src(0);
          if (base.op() != Ops::BUFFER && !realized.count(base.get()) &&
              has_reduction(base, realized)) {
            realized.insert(base.get());
            roots.push_back(base);
            cut = true;
            continue;
          }
        }
      }
      for (const UOp& s : u.src()) stack.push_back(s);
    }
    if (cut) {  // the kernel is smaller now: count its reductions again
      roots.push_back(root);
      continue;
    }
    if (root.op() == Ops::REDUCE_AXIS) reduces.push_back(root);
    std::erase_if(reduces, [&](const UOp& r) { return realized.count(r.get()) && r != root; });
    if (reduces.size() < 2) continue;
    auto work = [&](const UOp& r) { return lazy::prod_max(shapes(r.src(0))); };
    const auto keep =
        std::max_element(reduces.begin(), reduces.end(), [&](const UOp& a, const UOp& b) {
          if (a == root || b == root) return b == root;  // a reduction that is the root stays
          return work(a) < work(b);
        });
    for (auto it = reduces.begin(); it != reduces.end(); ++it)
      if (it != keep) realized.insert(it->get());
  }
}

// Keeps every kernel within kMaxKernelBuffers: a node whose kernel would read more inputs
// (a concatenation of many tensors, a sum of many) stores the operands that bring the most,
// each below its views, until it reads few enough.
void limit_kernel_buffers(const std::vector<UOp>& topo,
                          std::unordered_set<const UOpNode*>& realized) {
  constexpr size_t kMaxInputs = kMaxKernelBuffers - 1;  // slot 0 is the output
  using Inputs = std::vector<const UOpNode*>;           // sorted
  std::unordered_map<const UOpNode*, Inputs> inputs;
  auto read_as = [&](const UOp& s) -> Inputs {
    if (s.op() == Ops::BUFFER || realized.count(s.get())) return {s.get()};
    auto it = inputs.find(s.get());
    return it == inputs.end() ? Inputs{} : it->second;
  };
  auto gather = [&](const UOp& u) {
    Inputs all;
    for (const UOp& s : u.src()) {
      Inputs in = read_as(s), merged;
      std::set_union(all.begin(), all.end(), in.begin(), in.end(), std::back_inserter(merged));
      all = std::move(merged);
    }
    return all;
  };
  for (const UOp& u : topo) {
    if (u.op() == Ops::BUFFER || u.op() == Ops::SINK) continue;
    Inputs all = gather(u);
    while (all.size() > kMaxInputs) {
      // The operand bringing the most inputs, stored below its views.
      const UOp* widest = nullptr;
      for (const UOp& s : u.src())
        if (!realized.count(s.get()) && s.op() != Ops::BUFFER &&
            (!widest || read_as(s).size() > read_as(*widest).size()))
          widest = &s;
      if (!widest || read_as(*widest).size() < 2) break;  // storing it would not help
      UOp base = *widest;
      while (is_movement(base.op()) && base.src(0).op() != Ops::BUFFER &&
             !realized.count(base.src(0).get()))
        base = base.src(0);
      realized.insert(base.get());
      // The views above the stored base now read it alone.
      for (UOp v = *widest; v != base; v = v.src(0)) inputs[v.get()] = {base.get()};
      all = gather(u);
    }
    inputs[u.get()] = std::move(all);
  }
}

// The order the kernels of `order` (realized nodes in graph order, each lowered) run in: each
// after the kernels whose results it reads, and a write in place (ASSIGN) after every other
// kernel that reads the value it overwrites (its target's BUFFER, or the ASSIGN before it), so
// such a read sees the old value whichever order the graph listed them in. Otherwise graph order.
// A kernel that reads both the old value and, through another kernel, the new one cannot be
// ordered: Error.
std::vector<size_t> kernel_order(const std::vector<UOp>& order,
                                 const std::vector<LoweredKernel>& lowered) {
  std::unordered_map<const UOpNode*, size_t> index_of;
  for (size_t i = 0; i < order.size(); ++i) index_of.emplace(order[i].get(), i);
  std::vector<std::vector<size_t>> after(order.size());  // kernel -> kernels that wait for it
  std::vector<int> waits(order.size(), 0);
  auto edge = [&](size_t from, size_t to) {
    after[from].push_back(to);
    ++waits[to];
  };
  std::unordered_map<const UOpNode*, std::vector<size_t>> readers;  // input node -> kernels
  for (size_t i = 0; i < order.size(); ++i)
    for (const UOp& in : lowered[i].inputs) {
      readers[in.get()].push_back(i);
      if (auto it = index_of.find(in.get()); it != index_of.end()) edge(it->second, i);
    }
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i].op() != Ops::ASSIGN) continue;
    UOp before = order[i].src(0);
    while (before.op() == Ops::RESHAPE) before = before.src(0);
    if (auto it = index_of.find(before.get()); it != index_of.end()) edge(it->second, i);
    for (size_t k : readers[before.get()])
      if (k != i) edge(k, i);
  }
  std::vector<size_t> out;
  std::set<size_t> ready;
  for (size_t i = 0; i < order.size(); ++i)
    if (waits[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    out.push_back(i);
    for (size_t j : after[i])
      if (--waits[j] == 0) ready.insert(j);
  }
  if (out.size() != order.size())
    throw Error(
        "realize: one kernel reads both the old and the new value of a tensor written in place "
        "(assign_slice); realize what reads the old value first");
  return out;
}

}  // namespace

Schedule build_schedule(const UOp& key) {
  Schedule sched;
  // How reductions are cut into kernels is decided on the tensor graph, before anything else.
  const UOp graph = split_reduceop(key);
  const std::vector<UOp> topo = toposort(graph);
  const std::span<const UOp> roots(graph.src());
  lazy::ShapeMap shapes;
  auto realized = choose_realized(topo, roots, shapes);
  store_epilogues(topo, roots, realized);
  one_reduction_per_kernel(topo, shapes, realized);
  limit_kernel_buffers(topo, realized);

  // Buffers: placeholders (inputs), then one per realized node.
  std::unordered_map<const UOpNode*, int> buffer_of;
  for (const UOp& u : topo)
    if (u.op() == Ops::BUFFER) {
      buffer_of[u.get()] = static_cast<int>(sched.buffers.size());
      sched.buffers.push_back({ScheduleBuffer::Kind::input, u.dtype(), u.arg_as<int64_t>(),
                               static_cast<int>(placeholder_index(u))});
    }
  std::vector<UOp> order;  // realized nodes in execution order
  for (const UOp& u : topo)
    if (realized.count(u.get()) && u.op() != Ops::SINK) {
      order.push_back(u);
      if (u.op() == Ops::ASSIGN) {  // written in place: its value is its target's buffer
        buffer_of[u.get()] = buffer_of.at(lazy::assign_buffer(u).get());
        continue;
      }
      buffer_of[u.get()] = static_cast<int>(sched.buffers.size());
      sched.buffers.push_back(
          {ScheduleBuffer::Kind::intermediate, u.dtype(), lazy::prod_max(shapes(u)), 0});
    }
  for (size_t i = 0; i < roots.size(); ++i) {
    const int b = buffer_of.at(roots[i].get());
    ScheduleBuffer& sb = sched.buffers[b];
    if (sb.kind == ScheduleBuffer::Kind::intermediate) {
      sb.kind = ScheduleBuffer::Kind::output;
      sb.index = static_cast<int>(i);
    }
    sched.outputs.push_back(b);
    sched.output_shapes.push_back(shapes(roots[i]));
  }

  // Kernels, lowered one realized node at a time, in an order where every write in place comes
  // after the reads of the value it replaces (kernel_order).
  std::vector<LoweredKernel> lowered(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const UOp& r = order[i];
    if (lazy::prod_max(shapes(r.op() == Ops::ASSIGN ? r.src(1) : r)) == 0) continue;
    lowered[i] = lower_kernel(r, shapes, [&](const UOp& u) {
      return u != r && (u.op() == Ops::BUFFER || realized.count(u.get()));
    });
  }
  for (size_t i : kernel_order(order, lowered)) {
    const UOp& r = order[i];
    if (!lowered[i].ast) continue;  // nothing to compute: an empty result
    ScheduleKernel k;
    k.ast = std::move(lowered[i].ast);
    k.buffers.push_back(buffer_of.at(r.get()));
    for (const UOp& in : lowered[i].inputs) k.buffers.push_back(buffer_of.at(in.get()));
    k.global_shape = shapes(r.op() == Ops::ASSIGN ? r.src(1) : r);
    sched.kernels.push_back(std::move(k));
  }

  // Memory plan: intermediates share arena slots of equal size when their lifetimes
  // (first write .. last read, in kernel order) do not overlap.
  std::vector<int> first(sched.buffers.size(), -1), last(sched.buffers.size(), -1);
  for (int k = 0; k < static_cast<int>(sched.kernels.size()); ++k)
    for (int b : sched.kernels[k].buffers) {
      if (first[b] < 0) first[b] = k;
      last[b] = k;
    }
  std::vector<int> slot_free_after;  // per arena slot: the last kernel that uses it
  for (int b = 0; b < static_cast<int>(sched.buffers.size()); ++b) {
    ScheduleBuffer& sb = sched.buffers[b];
    if (sb.kind != ScheduleBuffer::Kind::intermediate) continue;
    const int64_t bytes = sb.count * sb.dtype.itemsize();
    int slot = -1;
    for (int s = 0; s < static_cast<int>(slot_free_after.size()); ++s)
      if (sched.arena_slot_bytes[s] == bytes && slot_free_after[s] < first[b]) {
        slot = s;
        break;
      }
    if (slot < 0) {
      slot = static_cast<int>(slot_free_after.size());
      slot_free_after.push_back(-1);
      sched.arena_slot_bytes.push_back(bytes);
    }
    slot_free_after[slot] = last[b];
    sb.index = slot;
  }
  return sched;
}

}  // namespace vkgrad
