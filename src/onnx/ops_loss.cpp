// onnx: the loss operators (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), composed from
// a one-hot of the targets over the class axis.
#include <fmt/format.h>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

// input [N, C, d...] (log-probabilities), target [N, d...]. Returns the reduced loss.
Tensor nll(const OpContext& c, const Tensor& input, const Tensor& target0,
           const std::optional<Tensor>& weight) {
  if (input.ndim() < 2) c.fail("input must be (N, C, ...)");
  if (target0.ndim() != input.ndim() - 1)
    throw ShapeError(fmt::format("ONNX: {}: target rank {} does not fit input rank {}",
                                 c.node().label(), target0.ndim(), input.ndim()));
  const int64_t classes = input.shape(1);
  const Tensor target = target0.cast(dtypes::int64);
  Shape cs(static_cast<size_t>(input.ndim()), 1);
  cs[1] = classes;
  const Tensor cls = Tensor::arange(classes, dtypes::int64, input.device()).reshape(cs);
  const Tensor hot = target.unsqueeze(1) == cls;  // [N, C, d...]
  const Tensor zero = Tensor::zeros({}, input.dtype(), input.device());
  const Tensor picked = hot.where(input, zero).sum(1).cast(input.dtype());
  Tensor w =
      weight ? hot.where(weight->cast(input.dtype()).reshape(cs), zero).sum(1).cast(input.dtype())
             : Tensor::ones(target.shape(), input.dtype(), input.device());
  if (c.has_attr("ignore_index")) {
    const int64_t ignore = c.attr_i("ignore_index", 0);
    w = (target != ignore).where(w, zero).cast(input.dtype());
  }
  const Tensor loss = (-picked * w).cast(input.dtype());
  const std::string reduction = c.attr_s("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum().cast(input.dtype());
  if (reduction == "mean") return (loss.sum() / w.sum()).cast(input.dtype());
  c.fail("reduction '" + reduction + "' is not none, sum or mean");
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  r["NegativeLogLikelihoodLoss"].run = [](OpContext& c) {
    std::optional<Tensor> w;
    if (c.has(2)) w = c.in(2);
    return OpOutputs{tensor_value(nll(c, c.in(0), c.in(1), w))};
  };
  r["SoftmaxCrossEntropyLoss"].run = [](OpContext& c) {
    const Tensor scores = c.in(0);
    const Tensor logp = scores.log_softmax(1).cast(scores.dtype());
    std::optional<Tensor> w;
    if (c.has(2)) w = c.in(2);
    OpOutputs out{tensor_value(nll(c, logp, c.in(1), w))};
    if (c.node().outputs.size() > 1) out.push_back(tensor_value(logp));
    return out;
  };
}

}  // namespace vkgrad::onnx
