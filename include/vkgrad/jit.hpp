// Public: Jit, which captures the kernels a function of tensors runs and replays them on later
// calls without scheduling, rendering or compiling (tinygrad's TinyJit). On Vulkan a replay
// resubmits one pre-recorded command buffer; on the CPU it calls the kernels' entry points.
// Depends on tensor.hpp only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>
#include <vkgrad/tensor.hpp>

namespace vkgrad {

// vkgrad::Jit step([&](const std::vector<Tensor>& in) -> std::vector<Tensor> { ... });
// std::vector<Tensor> out = step({x, y});   // outputs come back realized
//
// Calls are grouped by the inputs' shapes, dtypes and devices. For each group the first call
// runs the function plainly, the second runs it while recording every kernel it launches (a
// capture), and later calls replay the capture: the inputs are realized and their buffers take
// the captured inputs' place; nothing else of the function runs. Inputs of a new group capture
// again; earlier captures are kept.
//
// What a replay reproduces:
// - Kernels only. Host work in the function (reading values out, branching on them, creating
//   tensors from host data) happens during the capture and is frozen: a tensor uploaded or a
//   value read inside the function keeps its capture-time value.
// - Tensors the function reads that are neither inputs nor computed in the call (weights, a
//   learning rate) are read from the buffers they hold; when such a tensor is assigned later
//   (lr.assign(...) between calls, or another Jit's replay updating it), replays read its new
//   value.
// - Work on those tensors alone (a batch norm's scale from its weight and running variance, a
//   weight's re-layout) runs on the first replay and then only when one of them changed (was
//   assigned, or written by another Jit's replay): later replays reuse its results.
// - State: tensors the function updates with assign() (parameters and moments in an optimizer
//   step) are updated by every replay, each to its new value. Their old buffer and the buffer
//   the capture wrote alternate: a replay reads one and writes the other, so a lazy tensor built
//   from a state tensor before a replay and realized after it may see a later value;
//   realize (or clone) what must keep the old one. Rebinding a C++ variable inside the function
//   (x = x * 2) is not an update the Jit sees; use assign(). Assigning to an input is an Error.
// - Outputs: from the capture on, the outputs are the Jit's own buffers, overwritten by the
//   next call. Keep an output across calls with clone().realize(). An output that is an input
//   comes back as that input. An input that is one of the Jit's own buffers (an output fed
//   back) is copied first.
// - Symbolic sizes: an input axis made symbolic (x.symbolic(0, n), variable.hpp) groups calls by
//   the variable, not the size. One capture then serves every size in the variable's bounds:
//   its kernels read the sizes the inputs bind when they run, and its buffers are sized for the
//   variables' maxima. Outputs come back with the call's sizes. Other shapes are their own
//   captures. A 0-d input made by Tensor::variable(v.bind(n)) passes n on the same way: calls
//   with any value share a capture, and replays give the captured kernels that read v (a
//   position the function bound v to: assign_slice's start, slice's end) the call's value.
// A capture runs on one device (DeviceError otherwise). A Jit called while another Jit is
// capturing runs its function plainly, so the outer capture records its kernels. One Jit is not
// to be called from two threads at once.
class Jit {
 public:
  using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  explicit Jit(Function fn);
  ~Jit();
  Jit(Jit&&) noexcept;
  Jit& operator=(Jit&&) noexcept;

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  int64_t captures() const;  // calls that captured (one per group of input shapes/dtypes)
  int64_t replays() const;   // calls served by a replay

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vkgrad
