// tensor: vkgrad::Jit (see jit.hpp), its Tensor half — calls grouped by input signature, inputs
// prepared as buffers, the state a call carries learned from assign's log, and outputs and
// updated tensors pointed at the right buffers after a replay. engine/jit.hpp records and
// replays the kernels themselves.
#include "engine/jit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/jit.hpp>

#include "engine/realize.hpp"
#include "tensor/assign.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

// Calls whose inputs agree in shape, dtype and device share a capture. A symbolic axis counts
// as its variable, whatever its size.
std::string signature(const std::vector<Tensor>& inputs) {
  std::string key;
  for (const Tensor& t : inputs) {
    std::vector<std::string> dims;
    for (int64_t d : tensor::sym_shape(t))
      dims.push_back(lazy::is_sym(d) ? lazy::sym_var(d).name : std::to_string(d));
    key += fmt::format("{}({})@{};", t.dtype().name(), fmt::join(dims, ","), t.device());
  }
  return key;
}

// The BUFFER under a plain view of one (BUFFER or RESHAPE(BUFFER)), else a null UOp.
UOp buffer_of(const Tensor& t) { return engine::as_buffer(tensor::uop(t)); }
void* handle_of(const Tensor& t) {
  const UOp b = buffer_of(t);
  return b ? engine::buffer_handle(b) : nullptr;
}

// A buffer a capture reads that is neither an input nor written by the capture (a weight, a
// learning rate). When the tensor holding it is assigned later, replays read its new value, as
// they would if assign wrote in place (as tinygrad's does).
struct External {
  UOp buffer;
  std::mutex mu;
  std::weak_ptr<Tensor::Impl> impl;  // the tensor last assigned away from `buffer`
};

// Every External of every live capture, by buffer, for notify_jits.
struct Watched {
  std::mutex mu;
  std::unordered_map<const UOpNode*, std::vector<std::weak_ptr<External>>> by_buffer;
  std::atomic<bool> any{false};  // assign's fast path before the first capture

  static Watched& get() {
    static Watched* w = new Watched();  // assigns may run during static destruction
    return *w;
  }
  void add(const std::vector<std::shared_ptr<External>>& externals) {
    std::lock_guard lock(mu);
    // Entries of captures since destroyed go first (their nodes' addresses may be reused).
    std::erase_if(by_buffer, [](const auto& entry) {
      return std::all_of(entry.second.begin(), entry.second.end(),
                         [](const std::weak_ptr<External>& e) { return e.expired(); });
    });
    for (const std::shared_ptr<External>& e : externals) by_buffer[e->buffer.get()].push_back(e);
    any = true;
  }
};

// Logs this thread's assigns while alive. A log it replaces (an enclosing Jit's plain call)
// still hears of them afterwards.
class AssignLog {
 public:
  AssignLog() : previous_(tensor::set_assign_log(&records_)) {}
  ~AssignLog() {
    tensor::set_assign_log(previous_);
    if (previous_) previous_->insert(previous_->end(), records_.begin(), records_.end());
  }
  AssignLog(const AssignLog&) = delete;
  AssignLog& operator=(const AssignLog&) = delete;

  // The updated tensors still alive, each once (in order of first update), with the node it
  // held before its first update.
  std::vector<std::pair<std::shared_ptr<Tensor::Impl>, UOp>> updated() const {
    std::vector<std::pair<std::shared_ptr<Tensor::Impl>, UOp>> out;
    for (const tensor::AssignRecord& r : records_) {
      std::shared_ptr<Tensor::Impl> impl = r.impl.lock();
      if (!impl) continue;
      const bool seen =
          std::any_of(out.begin(), out.end(), [&](const auto& u) { return u.first == impl; });
      if (!seen) out.emplace_back(std::move(impl), r.before);
    }
    return out;
  }

 private:
  std::vector<tensor::AssignRecord> records_;
  std::vector<tensor::AssignRecord>* previous_;
};

// The function run as usual; its outputs and every tensor it assigned realized together.
std::vector<Tensor> run_plain(const Jit::Function& fn, const std::vector<Tensor>& inputs,
                              AssignLog& log) {
  std::vector<Tensor> out = fn(inputs);
  std::vector<Tensor> all = out;
  for (auto& [impl, before] : log.updated()) all.emplace_back(impl);
  Tensor::realize_all(all);
  return out;
}

// What a capture keeps to replay a call.
struct Capture {
  std::unique_ptr<engine::CapturedGraph> graph;
  std::vector<void*> inputs;        // the captured inputs' handles, replaced on every replay
  std::unordered_set<void*> owned;  // buffers replays write: an input must not alias them
  // A tensor the call updates from a buffer that existed before it (a parameter): replays read
  // its current buffer and write the other of {a, b}, so the two alternate.
  struct Carried {
    std::weak_ptr<Tensor::Impl> impl;
    UOp a, b;     // its buffer before the capture, and the one the capture wrote
    UOp current;  // the one the last call wrote (used once the tensor is gone)
  };
  std::vector<Carried> carried;
  // Other tensors the call assigned (locals returned, tensors created in the call).
  struct Updated {
    std::weak_ptr<Tensor::Impl> impl;
    UOp after;
  };
  std::vector<Updated> updated;
  struct Output {
    UOp buffer;
    Shape shape;  // with its symbolic axes (sched/lazy.hpp), sized by each call's values
    lazy::VarValues captured;  // their values at the capture (for variables no input binds)
    DType dtype;
    std::string device;
  };
  std::vector<Output> outputs;
  std::vector<std::shared_ptr<External>> externals;
  // The buffers of externals assigned since the capture that the last replay read: held until
  // the next, so that a handle seen again is the same buffer (the graph compares handles to
  // know whether its prelude's reads changed).
  std::vector<UOp> held;
};

// A 0-d value of variables only (Tensor::variable): no buffer, nothing to realize; a call
// passes on the values it binds.
bool variable_value(const Tensor& t) {
  if (t.ndim() != 0) return false;
  bool binds = false;
  for (const UOp& u : toposort(tensor::uop(t))) {
    if (u.op() == Ops::BUFFER) return false;
    binds = binds || u.op() == Ops::BIND;
  }
  return binds;
}

// The inputs as realized contiguous buffers, none aliasing another captured input (at the
// capture) or a buffer the replay writes (on replays): those are copied. Variable values stay
// as they are (their handle is null).
std::vector<Tensor> prepare_inputs(const std::vector<Tensor>& inputs, const Capture* capture) {
  std::vector<Tensor> out;
  std::unordered_set<void*> seen;
  for (const Tensor& t : inputs) {
    if (variable_value(t)) {
      out.push_back(t);
      continue;
    }
    Tensor r = buffer_of(t) ? t : t.contiguous();
    r.realize();
    void* h = handle_of(r);
    const bool alias = capture ? capture->owned.count(h) != 0 : !seen.insert(h).second;
    if (alias) {
      r = t.clone();
      r.realize();
      seen.insert(handle_of(r));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::unique_ptr<Capture> capture(const Jit::Function& fn, const std::vector<Tensor>& inputs,
                                 std::vector<Tensor>& out) {
  const std::vector<Tensor> in = prepare_inputs(inputs, nullptr);
  auto c = std::make_unique<Capture>();
  for (const Tensor& t : in) c->inputs.push_back(handle_of(t));
  std::vector<std::pair<std::shared_ptr<Tensor::Impl>, UOp>> updated;
  std::vector<engine::RecordedRun> runs;
  {
    engine::Recording recording;
    AssignLog log;
    out = run_plain(fn, in, log);
    updated = log.updated();
    runs = recording.take();
  }
  for (const engine::RecordedRun& r : runs)
    for (const UOp& b : r.outputs) c->owned.insert(engine::buffer_handle(b));

  for (auto& [impl, before] : updated) {
    const Tensor t(impl);
    const UOp b = buffer_of(t);
    const UOp a = engine::as_buffer(before);
    const bool carried = a && a != b && c->owned.count(engine::buffer_handle(b)) != 0 &&
                         c->owned.count(engine::buffer_handle(a)) == 0;
    if (!carried) {
      c->updated.push_back({impl, b});
      continue;
    }
    const auto input = std::find(c->inputs.begin(), c->inputs.end(), engine::buffer_handle(a));
    if (input != c->inputs.end())
      throw Error(fmt::format(
          "Jit: the function assigns to its input {}; a jitted function may update tensors it "
          "reads from outside (parameters), not its inputs",
          input - c->inputs.begin()));
    c->owned.insert(engine::buffer_handle(a));
    c->carried.push_back({impl, a, b, b});
  }
  std::unordered_set<void*> varying(c->inputs.begin(), c->inputs.end());
  varying.insert(c->owned.begin(), c->owned.end());
  c->graph = std::make_unique<engine::CapturedGraph>(std::move(runs), varying);
  for (const Tensor& o : out) {
    const Shape& sym = tensor::sym_shape(o);
    c->outputs.push_back(
        {buffer_of(o), sym, lazy::values_at(sym, o.shape()), o.dtype(), o.device()});
  }
  std::unordered_set<void*> external;
  for (const engine::RecordedRun& r : c->graph->runs())
    for (const UOp& b : r.inputs) {
      void* h = engine::buffer_handle(b);
      const bool input = std::find(c->inputs.begin(), c->inputs.end(), h) != c->inputs.end();
      if (!input && !c->owned.count(h) && external.insert(h).second) {
        c->externals.push_back(std::make_shared<External>());
        c->externals.back()->buffer = b;
      }
    }
  Watched::get().add(c->externals);
  return c;
}

// A replay's update of a tensor: like assign, other Jits reading the tensor hear of it.
void move_to(const std::shared_ptr<Tensor::Impl>& impl, const UOp& buffer) {
  const UOp before = impl->uop;
  impl->uop = engine::view_of(buffer, impl->shape);
  tensor::notify_jits(impl, before);
}

std::vector<Tensor> replay(Capture& c, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> in = prepare_inputs(inputs, &c);
  std::unordered_map<void*, void*> substitute;
  std::unordered_map<void*, size_t> input_of;  // captured input handle -> input index
  for (size_t i = 0; i < in.size(); ++i) {
    if (!c.inputs[i]) continue;  // a variable value
    void* h = handle_of(in[i]);
    if (h != c.inputs[i]) substitute[c.inputs[i]] = h;
    input_of[c.inputs[i]] = i;
  }
  std::vector<UOp> written(c.carried.size());
  for (size_t k = 0; k < c.carried.size(); ++k) {
    Capture::Carried& s = c.carried[k];
    UOp read = s.current;
    if (std::shared_ptr<Tensor::Impl> impl = s.impl.lock()) {
      // Whatever it holds now: usually the buffer the last call wrote, but the caller may have
      // assigned it in between.
      Tensor t(impl);
      t.realize();
      read = buffer_of(t);
    }
    written[k] = read == s.b ? s.a : s.b;
    if (read != s.a) substitute[engine::buffer_handle(s.a)] = engine::buffer_handle(read);
    if (written[k] != s.b)
      substitute[engine::buffer_handle(s.b)] = engine::buffer_handle(written[k]);
  }
  std::vector<Tensor> moved;  // externals assigned since the capture, held through the replay
  for (const std::shared_ptr<External>& e : c.externals) {
    std::shared_ptr<Tensor::Impl> impl;
    {
      std::lock_guard lock(e->mu);
      impl = e->impl.lock();
    }
    if (!impl) continue;
    Tensor t(impl);
    t.realize();
    if (buffer_of(t) == e->buffer) continue;
    substitute[engine::buffer_handle(e->buffer)] = handle_of(t);
    moved.push_back(std::move(t));
  }

  // The variables the inputs bind: their symbolic axes, and 0-d inputs made by
  // Tensor::variable.
  std::vector<UOp> input_nodes;
  for (const Tensor& t : in) input_nodes.push_back(tensor::uop(t));
  const lazy::VarValues vars = lazy::bound_values(input_nodes);
  c.graph->replay(substitute, vars);
  c.held.clear();
  for (const Tensor& t : moved) c.held.push_back(buffer_of(t));

  for (size_t k = 0; k < c.carried.size(); ++k) {
    Capture::Carried& s = c.carried[k];
    s.current = written[k];
    if (std::shared_ptr<Tensor::Impl> impl = s.impl.lock()) move_to(impl, s.current);
  }
  // A captured buffer's node in this call: the input or carried buffer now in its place.
  auto resolve = [&](const UOp& buffer) -> UOp {
    void* h = engine::buffer_handle(buffer);
    if (auto it = input_of.find(h); it != input_of.end()) return buffer_of(in[it->second]);
    for (const Capture::Carried& s : c.carried)
      if (buffer == s.a || buffer == s.b) return s.current;
    return buffer;
  };
  for (const Capture::Updated& u : c.updated)
    if (std::shared_ptr<Tensor::Impl> impl = u.impl.lock()) move_to(impl, resolve(u.after));
  std::vector<Tensor> out;
  for (const Capture::Output& o : c.outputs) {
    if (auto it = input_of.find(engine::buffer_handle(o.buffer)); it != input_of.end()) {
      out.push_back(in[it->second]);
      continue;
    }
    if (!lazy::has_sym(o.shape)) {
      out.push_back(
          tensor::make(engine::view_of(resolve(o.buffer), o.shape), o.shape, o.dtype, o.device));
      continue;
    }
    lazy::VarValues values = vars;
    values.insert(o.captured.begin(), o.captured.end());  // keeps the inputs' values
    out.push_back(
        tensor::with_sym(tensor::make(lazy::reshape_bound(resolve(o.buffer), o.shape, values),
                                      lazy::concrete(o.shape, values), o.dtype, o.device),
                         o.shape));
  }
  return out;
}

struct Group {
  int64_t calls = 0;
  std::unique_ptr<Capture> capture;
};

}  // namespace

void tensor::notify_jits(const std::shared_ptr<Tensor::Impl>& impl, const UOp& before) {
  Watched& w = Watched::get();
  if (!w.any) return;
  const UOp buffer = engine::as_buffer(before);
  if (!buffer) return;
  std::lock_guard lock(w.mu);
  auto it = w.by_buffer.find(buffer.get());
  if (it == w.by_buffer.end()) return;
  for (const std::weak_ptr<External>& weak : it->second)
    if (std::shared_ptr<External> e = weak.lock()) {
      std::lock_guard l(e->mu);
      e->impl = impl;
    }
}

struct Jit::State {
  Function fn;
  std::map<std::string, Group> groups;  // by signature()
  int64_t captures = 0, replays = 0;
};

Jit::Jit(Function fn) : state_(std::make_unique<State>()) { state_->fn = std::move(fn); }
Jit::~Jit() = default;
Jit::Jit(Jit&&) noexcept = default;
Jit& Jit::operator=(Jit&&) noexcept = default;

int64_t Jit::captures() const { return state_->captures; }
int64_t Jit::replays() const { return state_->replays; }

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& inputs) {
  State& s = *state_;
  if (engine::run_recorder()) {
    // Inside another Jit's capture: run plainly so that capture records these kernels.
    AssignLog log;
    return run_plain(s.fn, inputs, log);
  }
  Group& g = s.groups[signature(inputs)];
  std::vector<Tensor> out;
  if (g.capture) {
    out = replay(*g.capture, inputs);
    ++s.replays;
  } else if (g.calls == 0) {
    // A first call may create state lazily (optimizer moments, ...); the capture waits for the
    // second, when that state exists as buffers.
    AssignLog log;
    out = run_plain(s.fn, inputs, log);
  } else {
    g.capture = capture(s.fn, inputs, out);
    ++s.captures;
  }
  ++g.calls;
  return out;
}

}  // namespace vkgrad
