// llm: sampling and generation. sample() applies temperature, top-k and top-p to one row of
// logits and draws with a splitmix64 generator the caller keeps; generate() prefills a prompt
// and decodes token by token through the model's cache. Depends on the public headers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vkgrad/error.hpp>
#include <vkgrad/llm.hpp>

namespace vkgrad::llm {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform double in [0, 1).
double uniform(uint64_t& state) { return static_cast<double>(splitmix64(state) >> 11) * 0x1p-53; }

}  // namespace

int32_t sample(const Tensor& logits, const Sampling& s, uint64_t& rng_state) {
  if (logits.ndim() != 1)
    throw ShapeError(
        fmt::format("llm::sample: logits of {} dimensions, expected 1", logits.ndim()));
  if (s.temperature < 0 || s.top_k < 0 || !(s.top_p > 0 && s.top_p <= 1))
    throw Error(
        fmt::format("llm::sample: temperature {} top_k {} top_p {}: need temperature "
                    ">= 0, top_k >= 0, 0 < top_p <= 1",
                    s.temperature, s.top_k, s.top_p));
  if (s.temperature == 0) return logits.argmax().item<int32_t>();
  const std::vector<float> v = logits.cast(dtypes::float32).to_vector<float>();
  std::vector<int32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t k =
      s.top_k > 0 ? std::min<size_t>(static_cast<size_t>(s.top_k), v.size()) : v.size();
  auto larger = [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    larger);
  order.resize(k);
  std::vector<double> p(k);
  const double top = v[order[0]];
  double total = 0;
  for (size_t i = 0; i < k; ++i)
    total += p[i] = std::exp((v[order[i]] - top) / static_cast<double>(s.temperature));
  size_t keep = k;
  if (s.top_p < 1) {
    double sum = 0;
    for (size_t i = 0; i < k; ++i)
      if ((sum += p[i] / total) >= s.top_p) {
        keep = i + 1;
        break;
      }
  }
  const double kept =
      std::accumulate(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  double r = uniform(rng_state) * kept;
  for (size_t i = 0; i < keep; ++i)
    if ((r -= p[i]) < 0) return order[i];
  return order[keep - 1];
}

std::vector<int32_t> Model::generate(const std::vector<int32_t>& prompt, const Sampling& s,
                                     const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) throw Error("llm::generate: an empty prompt");
  uint64_t rng = s.seed;
  std::vector<int32_t> out;
  Tensor logits = forward_last(prompt, 0);
  int64_t pos = static_cast<int64_t>(prompt.size());
  while (static_cast<int>(out.size()) < s.max_tokens) {
    const int32_t id =
        s.temperature == 0 ? greedy_token() : sample(logits.reshape({vocab_size()}), s, rng);
    out.push_back(id);
    if (on_token && !on_token(id)) break;
    if (tokenizer().is_end(id) || pos >= context()) break;
    logits = forward_last({id}, pos++);
  }
  return out;
}

}  // namespace vkgrad::llm
