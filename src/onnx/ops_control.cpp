// onnx: control flow: If, Loop and Scan run their subgraphs through the interpreter (the
// enclosing graph's values stay visible inside). The branch taken, a Loop's trip count and
// condition are read on the host: a model whose condition is computed runs without Jit replay.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

const Graph& body_of(const OpContext& c, const char* name) {
  const Attribute* a = c.attr(name);
  if (!a || !a->graph) c.fail(std::string("needs the graph attribute '") + name + "'");
  return *a->graph;
}

Tensor as_tensor(const Value& v, const std::string& device) {
  return v.tensor.defined() ? v.tensor : v.host->to_tensor(device);
}

// The step loop both Scan forms share: `steps` calls of `body`, each on the state and slice t
// (counted from the end where `reverse` says) of each scan input along its axis. Returns the
// final state and each scan output's slices in step order.
struct ScanRun {
  std::vector<Value> state;
  std::vector<std::vector<Tensor>> outs;
};

ScanRun scan_steps(const OpContext& c, const Graph& body, std::vector<Value> state,
                   const std::vector<Tensor>& xs, const std::vector<int>& axes,
                   const std::vector<int64_t>& reverse, int64_t steps) {
  const size_t n_state = state.size();
  if (body.outputs.size() < n_state) c.fail("the body has fewer outputs than state values");
  ScanRun run{std::move(state), std::vector<std::vector<Tensor>>(body.outputs.size() - n_state)};
  for (int64_t t = 0; t < steps; t++) {
    std::vector<Value> in = run.state;
    for (size_t k = 0; k < xs.size(); k++)
      in.push_back(tensor_value(xs[k].select(axes[k], reverse[k] ? steps - 1 - t : t)));
    std::vector<Value> out = c.run_subgraph(body, in);
    for (size_t i = 0; i < n_state; i++) run.state[i] = out[i];
    for (size_t k = 0; k < run.outs.size(); k++)
      run.outs[k].push_back(as_tensor(out[n_state + k], c.device()));
  }
  return run;
}

// Scan-8: (sequence_lens, state..., scan inputs...), each with a leading batch axis; the body
// runs per batch element over its sequence length, and steps past it are zeros.
OpOutputs scan8(OpContext& c) {
  const Graph& body = body_of(c, "body");
  const int64_t n_scan = c.attr_i("num_scan_inputs", 0);
  const int64_t n_state = static_cast<int64_t>(c.num_inputs()) - 1 - n_scan;
  if (n_scan < 1 || n_state < 0) c.fail("num_scan_inputs does not fit the inputs");
  const auto dirs = c.attr_ints("directions", std::vector<int64_t>(static_cast<size_t>(n_scan), 0));
  const int64_t n_out = static_cast<int64_t>(body.outputs.size()) - n_state;
  const Tensor first = c.in(static_cast<size_t>(1 + n_state));
  const int64_t batch = first.shape(0), seq = first.shape(1);
  std::vector<std::vector<Tensor>> states(static_cast<size_t>(n_state)),
      outs(static_cast<size_t>(n_out));
  for (int64_t b = 0; b < batch; b++) {
    const int64_t len = c.has(0) ? c.host(0).int_at(b) : seq;
    std::vector<Value> state;
    for (int64_t i = 0; i < n_state; i++)
      state.push_back(tensor_value(c.in(static_cast<size_t>(1 + i)).select(0, b)));
    std::vector<Tensor> xs;
    for (int64_t k = 0; k < n_scan; k++)
      xs.push_back(c.in(static_cast<size_t>(1 + n_state + k)).select(0, b));
    ScanRun run = scan_steps(c, body, std::move(state), xs,
                             std::vector<int>(static_cast<size_t>(n_scan), 0), dirs, len);
    for (int64_t i = 0; i < n_state; i++)
      states[static_cast<size_t>(i)].push_back(
          as_tensor(run.state[static_cast<size_t>(i)], c.device()));
    for (int64_t k = 0; k < n_out; k++) {
      if (run.outs[static_cast<size_t>(k)].empty()) c.fail("a sequence of length 0");
      Tensor y = stack(run.outs[static_cast<size_t>(k)], 0);
      if (len < seq) {
        PadList p(static_cast<size_t>(y.ndim()), {0, 0});
        p[0] = {0, seq - len};
        y = y.pad(p);
      }
      outs[static_cast<size_t>(k)].push_back(y);
    }
  }
  OpOutputs result;
  for (auto& v : states) result.push_back(tensor_value(stack(v, 0)));
  for (auto& v : outs) result.push_back(tensor_value(stack(v, 0)));
  return result;
}

}  // namespace

void register_control_ops(OpRegistry& r) {
  r["If"].run = [](OpContext& c) {
    const bool cond = c.host(0).at(0) != 0;
    return c.run_subgraph(body_of(c, cond ? "then_branch" : "else_branch"), {});
  };
  r["If"].pure = false;

  // Loop(M, cond, v...): body(iteration, cond, v...) -> (cond, v..., scan outputs...).
  r["Loop"].run = [](OpContext& c) {
    const Graph& body = body_of(c, "body");
    const int64_t trips = c.has(0) ? c.host(0).int_at(0) : std::numeric_limits<int64_t>::max();
    bool cond = c.has(1) ? c.host(1).at(0) != 0 : true;
    std::vector<Value> state;
    for (size_t i = 2; i < c.num_inputs(); i++) state.push_back(c.value(i));
    const size_t n_state = state.size();
    if (body.outputs.size() < 1 + n_state)
      c.fail("the body has fewer outputs than loop-carried values");
    const size_t n_scan = body.outputs.size() - 1 - n_state;
    std::vector<std::vector<Tensor>> scans(n_scan);
    if (!c.has(0) && !c.has(1))
      c.fail("a Loop with neither a trip count nor a condition never ends");
    for (int64_t i = 0; i < trips && cond; i++) {
      std::vector<Value> in{host_value(HostArray::of_ints({i}, {}, dtypes::int64)),
                            host_value(HostArray::of_ints({cond ? 1 : 0}, {}, dtypes::bool_))};
      in.insert(in.end(), state.begin(), state.end());
      std::vector<Value> out = c.run_subgraph(body, in);
      cond = c.host_of(out[0]).at(0) != 0;
      for (size_t k = 0; k < n_state; k++) state[k] = out[1 + k];
      for (size_t k = 0; k < n_scan; k++)
        scans[k].push_back(as_tensor(out[1 + n_state + k], c.device()));
    }
    OpOutputs result = state;
    for (size_t k = 0; k < n_scan; k++) {
      if (scans[k].empty()) {
        result.push_back(
            tensor_value(Tensor::zeros({0}, body.outputs[1 + n_state + k].dtype, c.device())));
        continue;
      }
      result.push_back(tensor_value(stack(scans[k], 0)));
    }
    return result;
  };
  r["Loop"].pure = false;

  // Scan (opset 9+): body(state..., scan slices...) -> (state..., scan output slices...);
  // before opset 9 the batched form, scan8.
  r["Scan"].run = [](OpContext& c) {
    if (c.opset() < 9) return scan8(c);
    const Graph& body = body_of(c, "body");
    const int64_t n_scan_in = c.attr_i("num_scan_inputs", 0);
    const int64_t n_in = static_cast<int64_t>(c.num_inputs());
    const int64_t n_state = n_in - n_scan_in;
    if (n_scan_in < 1 || n_state < 0) c.fail("num_scan_inputs does not fit the inputs");
    const auto in_axes =
        c.attr_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
    const auto in_dirs = c.attr_ints("scan_input_directions",
                                     std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
    const int64_t n_scan_out = static_cast<int64_t>(body.outputs.size()) - n_state;
    const auto out_axes =
        c.attr_ints("scan_output_axes", std::vector<int64_t>(static_cast<size_t>(n_scan_out), 0));
    const auto out_dirs = c.attr_ints("scan_output_directions",
                                      std::vector<int64_t>(static_cast<size_t>(n_scan_out), 0));
    std::vector<Value> state;
    for (int64_t i = 0; i < n_state; i++) state.push_back(c.value(static_cast<size_t>(i)));
    std::vector<Tensor> xs;
    std::vector<int> axes;
    for (int64_t k = 0; k < n_scan_in; k++) {
      xs.push_back(c.in(static_cast<size_t>(n_state + k)));
      axes.push_back(
          norm_axis(in_axes[static_cast<size_t>(k)], xs.back().ndim(), c.node().label()));
    }
    ScanRun run = scan_steps(c, body, std::move(state), xs, axes, in_dirs, xs[0].shape(axes[0]));
    OpOutputs result = run.state;
    for (int64_t k = 0; k < n_scan_out; k++) {
      std::vector<Tensor>& v = run.outs[static_cast<size_t>(k)];
      if (out_dirs[static_cast<size_t>(k)]) std::reverse(v.begin(), v.end());
      const int rank = v.empty() ? 1 : v[0].ndim() + 1;
      result.push_back(tensor_value(
          stack(v, norm_axis(out_axes[static_cast<size_t>(k)], rank, c.node().label()))));
    }
    return result;
  };
  r["Scan"].pure = false;
}

}  // namespace vkgrad::onnx
