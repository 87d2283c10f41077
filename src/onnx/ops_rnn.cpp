// onnx: the recurrent operators RNN, GRU and LSTM, unrolled over the sequence as lazy Tensor
// steps (each a pair of matmuls and the gate arithmetic), in either direction or both, with
// sequence lengths, initial states, peepholes, clipping and the activation attributes.
#include <fmt/format.h>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

using Act = std::function<Tensor(const Tensor&)>;

struct Activations {
  std::vector<Act> fns;  // per direction: the op's default count of functions, in order
};

Act activation(const OpContext& c, const std::string& name, double alpha, double beta) {
  if (name == "Sigmoid") return [](const Tensor& x) { return x.sigmoid(); };
  if (name == "Tanh") return [](const Tensor& x) { return x.tanh(); };
  if (name == "Relu") return [](const Tensor& x) { return x.relu(); };
  if (name == "Softsign") return [](const Tensor& x) { return x / (x.abs() + 1.0); };
  if (name == "Softplus") return [](const Tensor& x) { return x.softplus(); };
  if (name == "Affine") return [=](const Tensor& x) { return x * alpha + beta; };
  if (name == "LeakyRelu") return [=](const Tensor& x) { return (x < 0).where(x * alpha, x); };
  if (name == "ThresholdedRelu") return [=](const Tensor& x) { return (x > alpha).where(x, 0.0); };
  if (name == "ScaledTanh") return [=](const Tensor& x) { return (x * beta).tanh() * alpha; };
  if (name == "HardSigmoid")
    return [=](const Tensor& x) { return (x * alpha + beta).clip(0.0, 1.0); };
  if (name == "Elu")
    return [=](const Tensor& x) { return (x < 0).where((x.exp() - 1.0) * alpha, x); };
  c.fail("activation '" + name + "' is not supported");
}

// The activations of each direction: the attribute's names (with their alpha/beta in order),
// or the op's defaults.
std::vector<std::vector<Act>> activations(const OpContext& c, int dirs,
                                          const std::vector<std::string>& defaults) {
  std::vector<std::string> names;
  if (const Attribute* a = c.attr("activations")) names = a->strings;
  if (names.empty())
    for (int d = 0; d < dirs; d++) names.insert(names.end(), defaults.begin(), defaults.end());
  const std::vector<double> alphas = c.attr_floats("activation_alpha");
  const std::vector<double> betas = c.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<std::vector<Act>> out(static_cast<size_t>(dirs));
  const size_t per = defaults.size();
  if (names.size() != per * static_cast<size_t>(dirs))
    c.fail(fmt::format("{} activations for {} direction(s) of {} each", names.size(), dirs, per));
  for (size_t i = 0; i < names.size(); i++) {
    const std::string& n = names[i];
    const bool takes_alpha = n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" ||
                             n == "ScaledTanh" || n == "HardSigmoid" || n == "Elu";
    const bool takes_beta = n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
    double alpha = n == "LeakyRelu" ? 0.01 : n == "HardSigmoid" ? 0.2 : 1.0;
    double beta = n == "HardSigmoid" ? 0.5 : 0.0;
    if (takes_alpha && ai < alphas.size()) alpha = alphas[ai++];
    if (takes_beta && bi < betas.size()) beta = betas[bi++];
    out[i / per].push_back(activation(c, n, alpha, beta));
  }
  return out;
}

enum class Kind { Rnn, Gru, Lstm };

OpOutputs recurrent(OpContext& c, Kind kind) {
  const int gates = kind == Kind::Rnn ? 1 : kind == Kind::Gru ? 3 : 4;
  Tensor x = c.in(0);
  const bool batch_first = c.attr_i("layout", 0) != 0;
  if (batch_first) x = x.transpose(0, 1);  // [seq, batch, input]
  const Tensor w = c.in(1), r = c.in(2);
  const std::string direction = c.attr_s("direction", "forward");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail("direction '" + direction + "' is not forward, reverse or bidirectional");
  const int64_t seq = x.shape(0), batch = x.shape(1);
  const int64_t hidden = c.attr_i("hidden_size", r.shape(-1));
  const DType dt = x.dtype();
  const double clip = c.attr_f("clip", 0.0);
  const bool has_clip = c.has_attr("clip");
  const auto acts =
      activations(c, dirs,
                  kind == Kind::Rnn   ? std::vector<std::string>{"Tanh"}
                  : kind == Kind::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                      : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"});
  const bool linear_before_reset = c.attr_i("linear_before_reset", 0) != 0;
  if (kind == Kind::Lstm && c.attr_i("input_forget", 0) != 0)
    c.fail("input_forget = 1 is not supported");

  std::optional<Tensor> lens;
  if (c.has(4)) lens = c.in(4).cast(dtypes::int64).reshape({batch, 1});
  auto clipped = [&](const Tensor& t) { return has_clip ? t.clip(-clip, clip) : t; };

  std::vector<Tensor> ys(static_cast<size_t>(dirs)), hs(static_cast<size_t>(dirs)),
      cs(static_cast<size_t>(dirs));
  for (int d = 0; d < dirs; d++) {
    const bool reverse = direction == "reverse" || d == 1;
    const Tensor wd = w.select(0, d), rd = r.select(0, d);  // [G*H, I], [G*H, H]
    Tensor wb = Tensor::zeros({gates * hidden}, dt, x.device());
    Tensor rb = wb;
    if (c.has(3)) {
      const Tensor b = c.in(3).select(0, d);
      wb = b.slice(0, 0, gates * hidden);
      rb = b.slice(0, gates * hidden, 2 * gates * hidden);
    }
    Tensor h = c.has(5) ? c.in(5).select(0, d) : Tensor::zeros({batch, hidden}, dt, x.device());
    Tensor cell = kind == Kind::Lstm && c.has(6) ? c.in(6).select(0, d)
                                                 : Tensor::zeros({batch, hidden}, dt, x.device());
    std::optional<Tensor> peep;
    if (kind == Kind::Lstm && c.has(7)) peep = c.in(7).select(0, d);  // [3H]: i, o, f
    // The input projections of every step at once: [seq, batch, G*H].
    const Tensor xw = x.matmul(wd.transpose(0, 1)) + wb;
    auto gate = [&](const Tensor& t, int g) { return t.slice(-1, g * hidden, (g + 1) * hidden); };
    std::vector<Tensor> steps(static_cast<size_t>(seq));
    const auto& f = acts[static_cast<size_t>(d)];
    for (int64_t k = 0; k < seq; k++) {
      const int64_t t = reverse ? seq - 1 - k : k;
      const Tensor xt = xw.select(0, t);
      Tensor h_new, c_new;
      if (kind == Kind::Rnn) {
        h_new = f[0](clipped(xt + h.matmul(rd.transpose(0, 1)) + rb));
      } else if (kind == Kind::Gru) {
        const Tensor hr = h.matmul(rd.transpose(0, 1));  // [batch, 3H] without the h gate's reset
        const Tensor z = f[0](clipped(gate(xt, 0) + gate(hr, 0) + gate(rb, 0)));
        const Tensor rr = f[0](clipped(gate(xt, 1) + gate(hr, 1) + gate(rb, 1)));
        const Tensor rh = rd.slice(0, 2 * hidden, 3 * hidden);  // [H, H]
        const Tensor hh =
            linear_before_reset
                ? f[1](clipped(gate(xt, 2) + rr * (gate(hr, 2) + gate(rb, 2))))
                : f[1](clipped(gate(xt, 2) + (rr * h).matmul(rh.transpose(0, 1)) + gate(rb, 2)));
        h_new = (1.0 - z) * hh + z * h;
      } else {
        const Tensor hr = h.matmul(rd.transpose(0, 1)) + rb;
        Tensor gi = gate(xt, 0) + gate(hr, 0), go = gate(xt, 1) + gate(hr, 1);
        Tensor gf = gate(xt, 2) + gate(hr, 2);
        const Tensor gc = gate(xt, 3) + gate(hr, 3);
        if (peep) {
          gi = gi + gate(*peep, 0) * cell;
          gf = gf + gate(*peep, 2) * cell;
        }
        const Tensor i = f[0](clipped(gi)), fg = f[0](clipped(gf)), cc = f[1](clipped(gc));
        c_new = fg * cell + i * cc;
        if (peep) go = go + gate(*peep, 1) * c_new;
        const Tensor o = f[0](clipped(go));
        h_new = o * f[2](c_new);
      }
      h_new = h_new.cast(dt);
      if (lens) {  // steps past a sequence's length keep the state and output zeros
        const Tensor valid = *lens > t;
        steps[static_cast<size_t>(t)] =
            valid.where(h_new, Tensor::zeros({}, dt, x.device())).cast(dt);
        h = valid.where(h_new, h).cast(dt);
        if (kind == Kind::Lstm) cell = valid.where(c_new.cast(dt), cell).cast(dt);
      } else {
        steps[static_cast<size_t>(t)] = h_new;
        h = h_new;
        if (kind == Kind::Lstm) cell = c_new.cast(dt);
      }
      // Realize the state every few steps, so long sequences do not build one deep graph.
      if (k % 8 == 7) {
        std::vector<Tensor> state{h, cell};
        Tensor::realize_all(state);
        h = state[0];
        cell = state[1];
      }
    }
    ys[static_cast<size_t>(d)] = stack(steps, 0);  // [seq, batch, H]
    hs[static_cast<size_t>(d)] = h;
    cs[static_cast<size_t>(d)] = cell;
  }
  Tensor y = stack(ys, 1);  // [seq, dirs, batch, H]
  if (batch_first) y = y.permute({2, 0, 1, 3});
  Tensor yh = stack(hs, 0), yc = stack(cs, 0);  // [dirs, batch, H]
  if (batch_first) {
    yh = yh.transpose(0, 1);
    yc = yc.transpose(0, 1);
  }
  OpOutputs out{tensor_value(y), tensor_value(yh)};
  if (kind == Kind::Lstm) out.push_back(tensor_value(yc));
  return out;
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  r["RNN"].run = [](OpContext& c) { return recurrent(c, Kind::Rnn); };
  r["GRU"].run = [](OpContext& c) { return recurrent(c, Kind::Gru); };
  r["LSTM"].run = [](OpContext& c) { return recurrent(c, Kind::Lstm); };
}

}  // namespace vkgrad::onnx
