// onnx: load() and Model::run(). Loading parses the file, checks every node against the operator
// table, and folds what depends only on constants (initializers, Constant nodes, the shapes of
// fixed-shape inputs) once, on the host where the values are small. run() interprets the
// remaining nodes over lazy Tensors inside a Jit, so repeated calls with the same input shapes
// replay one capture.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unordered_map>
#include <vkgrad/jit.hpp>

#include "engine/realize.hpp"
#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

// A dynamic dimension becomes a Variable bounded by this (VKGRAD_ONNX_MAX_DIM overrides it);
// larger sizes capture with concrete shapes.
int64_t dynamic_bound() {
  static const int64_t bound = [] {
    const char* env = std::getenv("VKGRAD_ONNX_MAX_DIM");
    const int64_t v = env ? std::atoll(env) : 0;
    return v > 0 ? v : int64_t{16};
  }();
  return bound;
}

std::string shape_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// What one interpretation of the graph read back from the device.
struct Trace {
  std::set<std::string> inputs_read;  // graph inputs whose values an op read on the host
  bool computed_read = false;         // a computed tensor was read (data-dependent shapes)
};

}  // namespace

struct Scope;

struct Model::Impl {
  Graph g;
  std::string device;
  std::vector<bool> folded;  // per node: every output is a constant
  std::set<std::string> host_inputs;
  bool plain_only = false;  // the graph reads computed values on the host: no Jit
  bool symbolic_ok = true;
  std::map<std::string, std::unique_ptr<Jit>> jits;
  std::map<std::string, int> calls_by_shape;  // calls per concrete input shapes (dynamic models)
  int64_t retired_replays = 0, retired_captures = 0;

  void check_nodes();
  void fold_constants();
  std::vector<Tensor> build(const std::vector<Tensor>& inputs, Trace& trace) const;
  void interpret(const Graph& graph, const std::vector<bool>* skip, Scope& scope,
                 Trace& trace) const;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool symbolic);
  void retire_jits();
};

namespace {

// Every node of `g` (and of its subgraphs, which also see the names defined around them) has an
// operator at the opset and reads only names defined before it.
void check_graph(const Graph& g, std::set<std::string> defined) {
  const OpRegistry& ops = registry();
  for (const auto& [name, v] : g.constants) defined.insert(name);
  for (const auto& in : g.inputs) defined.insert(in.name);
  for (const Node& n : g.nodes) {
    if (!n.domain.empty() && n.domain != "ai.onnx")
      throw Error(
          fmt::format("ONNX: {} (opset {}) is in domain '{}', which vkgrad does not "
                      "support",
                      n.label(), g.opset, n.domain));
    auto it = ops.find(n.op_type);
    if (it == ops.end())
      throw Error(fmt::format("ONNX: {} (opset {}) is not supported: vkgrad has no operator {}",
                              n.label(), g.opset, n.op_type));
    if (g.opset < it->second.min_opset)
      throw Error(fmt::format("ONNX: {} (opset {}) needs opset {} or later", n.label(), g.opset,
                              it->second.min_opset));
    for (const std::string& in : n.inputs)
      if (!in.empty() && !defined.count(in))
        throw FormatError(
            fmt::format("ONNX: {} reads '{}', which no earlier node, initializer or "
                        "graph input defines",
                        n.label(), in));
    for (const auto& [name, a] : n.attrs)
      if (a.graph) check_graph(*a.graph, defined);
    for (const std::string& out : n.outputs)
      if (!out.empty()) defined.insert(out);
  }
  for (const ValueInfo& out : g.outputs)
    if (!defined.count(out.name))
      throw FormatError(
          fmt::format("ONNX: graph output '{}' is not defined by any node", out.name));
}

}  // namespace

void Model::Impl::check_nodes() { check_graph(g, {}); }

void Model::Impl::fold_constants() {
  const OpRegistry& ops = registry();
  std::map<std::string, Value> placeholders;
  for (const ValueInfo& in : g.inputs) {
    const bool fixed =
        std::all_of(in.shape.begin(), in.shape.end(), [](int64_t d) { return d >= 0; });
    if (fixed && !g.unranked.count(in.name)) {
      Value v;
      v.placeholder = std::make_pair(in.shape, in.dtype);
      placeholders.emplace(in.name, std::move(v));
    }
  }
  folded.assign(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    const OpDef& def = ops.at(n.op_type);
    if (!def.pure) continue;
    std::vector<const Value*> ins;
    bool known = true;
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto c = g.constants.find(name);
      auto p = placeholders.find(name);
      if (c != g.constants.end())
        ins.push_back(&c->second);
      else if (p != placeholders.end())
        ins.push_back(&p->second);
      else
        known = false;
    }
    if (!known) continue;
    const bool all_host = std::all_of(ins.begin(), ins.end(),
                                      [](const Value* v) { return !v || v->host != nullptr; });
    OpContext ctx(n, std::move(ins), g.opset, device, true);
    OpOutputs outs;
    try {
      outs = def.host && all_host ? def.host(ctx) : def.run(ctx);
    } catch (const NotOnHost&) {
      continue;
    }
    for (size_t k = 0; k < outs.size() && k < n.outputs.size(); k++)
      if (!n.outputs[k].empty()) g.constants[n.outputs[k]] = std::move(outs[k]);
    folded[i] = true;
  }
  // Device constants computed by folding (a weight transposed) are realized now, once, not in
  // every forward, and stored as buffers, as initializers are: a constant left a broadcast would
  // give its convolution another kernel than a real weight gets.
  std::vector<Tensor> pending;
  std::vector<Value*> owners;
  for (auto& [name, v] : g.constants)
    if (v.tensor.defined()) {
      v.tensor = v.tensor.contiguous();
      pending.push_back(v.tensor);
      owners.push_back(&v);
    }
  if (!pending.empty()) Tensor::realize_all(pending);
  for (size_t i = 0; i < owners.size(); i++) owners[i]->tensor = pending[i];
}

// The values of one graph's run: its own, then its constants, then the enclosing scope's (a
// subgraph reads names of the graph around it).
struct Scope {
  std::unordered_map<std::string, Value> values;
  const Graph* graph = nullptr;
  const Scope* parent = nullptr;
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto e = s->values.find(name);
      if (e != s->values.end()) return &e->second;
      auto c = s->graph->constants.find(name);
      if (c != s->graph->constants.end()) return &c->second;
    }
    throw InternalError("onnx: value '" + name + "' undefined at run time");
  }
};

void Model::Impl::interpret(const Graph& graph, const std::vector<bool>* skip, Scope& scope,
                            Trace& trace) const {
  const OpRegistry& ops = registry();
  SubgraphRunner runner = [&](const Graph& sub, const std::vector<Value>& in) {
    Scope inner;
    inner.graph = &sub;
    inner.parent = &scope;
    if (in.size() > sub.inputs.size())
      throw Error(
          fmt::format("ONNX: a subgraph of {} inputs was given {}", sub.inputs.size(), in.size()));
    for (size_t i = 0; i < in.size(); i++) inner.values[sub.inputs[i].name] = in[i];
    interpret(sub, nullptr, inner, trace);
    std::vector<Value> out;
    for (const ValueInfo& o : sub.outputs) out.push_back(*inner.find(o.name));
    return out;
  };
  for (size_t i = 0; i < graph.nodes.size(); i++) {
    if (skip && (*skip)[i]) continue;
    const Node& n = graph.nodes[i];
    const OpDef& def = ops.at(n.op_type);
    std::vector<const Value*> ins;
    bool all_host = true;
    for (const std::string& name : n.inputs) {
      ins.push_back(name.empty() ? nullptr : scope.find(name));
      if (ins.back() && !ins.back()->host) all_host = false;
    }
    OpContext ctx(n, ins, graph.opset, device, false, runner);
    OpOutputs outs = def.host && all_host ? def.host(ctx) : def.run(ctx);
    if (ctx.read_computed()) trace.computed_read = true;
    for (size_t k : ctx.read_back()) {
      // A graph input of the model read on the host keys the Jit by its values; anything
      // else read back makes the model run without Jit.
      const bool model_input =
          scope.parent == nullptr &&
          std::any_of(g.inputs.begin(), g.inputs.end(),
                      [&](const ValueInfo& v) { return v.name == n.inputs[k]; });
      if (model_input)
        trace.inputs_read.insert(n.inputs[k]);
      else
        trace.computed_read = true;
    }
    // Outputs beyond those the node names are dropped; an optional output the operator does not
    // produce stays undefined.
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); k++)
      if (!n.outputs[k].empty()) scope.values[n.outputs[k]] = std::move(outs[k]);
  }
}

std::vector<Tensor> Model::Impl::build(const std::vector<Tensor>& inputs, Trace& trace) const {
  Scope scope;
  scope.graph = &g;
  for (size_t i = 0; i < g.inputs.size(); i++)
    scope.values[g.inputs[i].name] = tensor_value(inputs[i]);
  interpret(g, &folded, scope, trace);
  std::vector<Tensor> result;
  for (const ValueInfo& out : g.outputs) {
    const auto produced = scope.values.find(out.name);
    const Value* v = produced != scope.values.end() ? &produced->second : nullptr;
    if (!v) {
      auto c = g.constants.find(out.name);
      if (c == g.constants.end())
        throw Error(fmt::format("ONNX: graph output '{}' is an optional output no node produced",
                                out.name));
      v = &c->second;
    }
    result.push_back(v->tensor.defined() ? v->tensor : v->host->to_tensor(device));
  }
  return result;
}

void Model::Impl::retire_jits() {
  for (auto& [key, jit] : jits) {
    retired_replays += jit->replays();
    retired_captures += jit->captures();
  }
  jits.clear();
}

std::vector<Tensor> Model::Impl::call(const std::vector<Tensor>& inputs, bool symbolic) {
  if (plain_only) {
    Trace trace;
    std::vector<Tensor> out = build(inputs, trace);
    Tensor::realize_all(out);
    return out;
  }
  std::string key;
  for (size_t i = 0; i < inputs.size(); i++) {
    // A symbolic axis keys by its variable, so every size it takes shares one Jit.
    const auto sym = inputs[i].symbolic_shape();
    std::vector<std::string> dims;
    for (size_t d = 0; d < sym.size(); d++)
      dims.push_back(sym[d] ? sym[d]->name()
                            : std::to_string(inputs[i].shape(static_cast<int>(d))));
    key += fmt::format("{}:{}:[{}];", g.inputs[i].name, inputs[i].dtype().name(),
                       fmt::join(dims, ","));
    if (host_inputs.count(g.inputs[i].name)) {
      for (uint8_t b : inputs[i].to_bytes()) key += fmt::format("{:02x}", b);
      key += ";";
    }
  }
  if (symbolic) key = "sym:" + key;
  auto& jit = jits[key];
  if (!jit) {
    jit = std::make_unique<Jit>([this](const std::vector<Tensor>& in) {
      Trace trace;
      std::vector<Tensor> out = build(in, trace);
      if (trace.computed_read) plain_only = true;
      for (const std::string& name : trace.inputs_read) host_inputs.insert(name);
      return out;
    });
  }
  const size_t host_inputs_before = host_inputs.size();
  std::vector<Tensor> out = (*jit)(inputs);
  if (plain_only || host_inputs.size() != host_inputs_before) retire_jits();
  return out;
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const std::vector<ValueInfo>& Model::inputs() const { return impl_->g.inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->g.outputs; }
const std::string& Model::device() const { return impl_->device; }
int64_t Model::opset() const { return impl_->g.opset; }

int64_t Model::replays() const {
  int64_t n = impl_->retired_replays;
  for (const auto& [key, jit] : impl_->jits) n += jit->replays();
  return n;
}

int64_t Model::captures() const {
  int64_t n = impl_->retired_captures;
  for (const auto& [key, jit] : impl_->jits) n += jit->captures();
  return n;
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) {
  Impl& m = *impl_;
  for (const auto& [name, t] : inputs) {
    const bool known = std::any_of(m.g.inputs.begin(), m.g.inputs.end(),
                                   [&](const ValueInfo& v) { return v.name == name; });
    if (!known)
      throw ShapeError(fmt::format("ONNX: run: the model has no input '{}' (inputs: {})", name,
                                   fmt::join(
                                       [&] {
                                         std::vector<std::string> names;
                                         for (const ValueInfo& v : m.g.inputs)
                                           names.push_back(v.name);
                                         return names;
                                       }(),
                                       ", ")));
  }
  std::vector<Tensor> ins;
  bool dynamic = false;
  for (const ValueInfo& info : m.g.inputs) {
    auto it = inputs.find(info.name);
    if (it == inputs.end())
      throw ShapeError(fmt::format("ONNX: run: input '{}' ({} {}) is missing", info.name,
                                   info.dtype.name(), shape_text(info.shape)));
    Tensor t = it->second;
    if (!t.defined())
      throw Error(fmt::format("ONNX: run: input '{}' is an empty tensor", info.name));
    if (t.dtype() != info.dtype)
      throw DTypeError(fmt::format("ONNX: run: input '{}' must be {}, got {}", info.name,
                                   info.dtype.name(), t.dtype().name()));
    if (!m.g.unranked.count(info.name)) {
      bool ok = t.ndim() == static_cast<int>(info.shape.size());
      for (size_t d = 0; ok && d < info.shape.size(); d++)
        ok = info.shape[d] < 0 || info.shape[d] == t.shape(static_cast<int>(d));
      if (!ok)
        throw ShapeError(
            fmt::format("ONNX: run: input '{}' must have shape {} (-1: any size), "
                        "got {}",
                        info.name, shape_text(info.shape), shape_text(t.shape())));
    }
    if (t.device() != m.device) t = t.to(m.device);
    for (int64_t d : info.shape) dynamic = dynamic || d < 0;
    ins.push_back(std::move(t));
  }

  // A dynamic dimension of size <= the bound becomes a Variable: one capture serves them all.
  std::vector<Tensor> outs;
  // A size seen kHotCalls times gets a capture of its own with the sizes compiled in: symbolic
  // kernels serve every size at once but run slower (about 2x for MobileNetV2 at batch 1).
  constexpr int kHotCalls = 3;
  bool symbolic = dynamic && m.symbolic_ok && !m.plain_only;
  if (symbolic) {
    std::string sizes;
    for (const Tensor& t : ins) sizes += shape_text(t.shape()) + ";";
    if (++m.calls_by_shape[sizes] >= kHotCalls) symbolic = false;
  }
  if (symbolic) {
    std::vector<Tensor> sym = ins;
    for (size_t i = 0; i < sym.size() && symbolic; i++) {
      const ValueInfo& info = m.g.inputs[i];
      for (size_t d = 0; d < info.shape.size(); d++) {
        if (info.shape[d] >= 0) continue;
        const int64_t size = sym[i].shape(static_cast<int>(d));
        if (size < 1 || size > dynamic_bound()) {
          symbolic = false;
          break;
        }
        const std::string name =
            "onnx:" +
            (info.dim_names[d].empty() ? fmt::format("{}.{}", info.name, d) : info.dim_names[d]);
        sym[i] = sym[i].symbolic(static_cast<int>(d), Variable(name, 1, dynamic_bound()));
      }
    }
    if (symbolic) {
      try {
        outs = m.call(sym, true);
      } catch (const NeedsConcrete&) {
        symbolic = false;
      } catch (const Error&) {
        symbolic = false;  // the graph does something symbolic sizes cannot express
      }
      if (!symbolic) {
        m.symbolic_ok = false;
        m.retire_jits();
      }
    }
  }
  if (!symbolic) {
    try {
      outs = m.call(ins, false);
    } catch (const NeedsConcrete&) {
      throw InternalError("onnx: a concrete build asked for concrete sizes");
    }
  }

  std::map<std::string, Tensor> result;
  std::vector<Tensor> kept;
  for (size_t i = 0; i < outs.size(); i++) kept.push_back(outs[i].clone());
  Tensor::realize_all(kept);
  for (size_t i = 0; i < outs.size(); i++) result.emplace(m.g.outputs[i].name, kept[i]);
  return result;
}

Model load(const std::string& path, const std::string& device) {
  auto impl = std::make_unique<Model::Impl>();
  impl->device = engine::canonical_device(device);
  impl->g = parse_model(path, impl->device);
  impl->check_nodes();
  impl->fold_constants();
  return Model(std::move(impl));
}

Tensor load_tensor(const std::string& path, const std::string& device) {
  return parse_tensor_file(path, device).tensor;
}

bool available() { return true; }

}  // namespace vkgrad::onnx
