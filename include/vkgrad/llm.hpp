// Public: large language models from GGUF files. load() reads a Llama-family model (llama,
// qwen2, qwen3) with its hyperparameters and tokenizer from the file's metadata; the weights
// stay in their stored formats on the device and are dequantized inside the kernels that read
// them. forward() runs tokens through the model and its KV cache; generate() prefills a prompt
// and samples. Depends on tensor.hpp, gguf.hpp and tokenizer.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <vkgrad/gguf.hpp>
#include <vkgrad/tensor.hpp>
#include <vkgrad/tokenizer.hpp>

namespace vkgrad::llm {

struct Options {
  int64_t context = 0;                  // 0: the model's context length, capped at 4096
  DType cache_dtype = dtypes::float16;  // the KV cache's dtype (float16 or float32)
};

// temperature 0 is greedy (the first largest logit); otherwise the logits are divided by the
// temperature, cut to the top_k largest (0: all) and to the smallest set whose probabilities
// reach top_p, and one is drawn from what is left with a generator seeded by `seed`.
struct Sampling {
  int max_tokens = 128;
  float temperature = 0;
  int top_k = 0;
  float top_p = 1;
  uint64_t seed = 0;
};

// The hyperparameters, as the file's metadata gives them.
struct Hyperparameters {
  int64_t layers = 0, embedding = 0, feed_forward = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t vocab = 0, context = 0, rope_dims = 0;
  double norm_eps = 1e-5, rope_base = 10000, rope_scale = 1;
  bool rope_halves = false;  // rotate (i, i + dims/2) pairs (qwen2, qwen3) instead of (2i, 2i+1)
  bool qkv_bias = false, qk_norm = false, tied_embeddings = false;
};

class Model {
 public:
  const std::string& architecture() const;
  int64_t context() const;
  int64_t vocab_size() const;
  const Hyperparameters& hyperparameters() const;
  const Tokenizer& tokenizer() const;

  // The logits, float32 {tokens.size(), vocab_size()}, realized, of tokens at positions
  // pos .. pos + tokens.size() - 1; the cache keeps what it held before pos and takes their keys
  // and values. Error where pos is past what the cache holds, the tokens run past the context,
  // or a token id is out of range.
  Tensor forward(const std::vector<int32_t>& tokens, int64_t pos);
  // forward() computing the last token's logits only, float32 {1, vocab_size()} (what
  // generation needs), in a buffer the next forward_last or forward overwrites.
  Tensor forward_last(const std::vector<int32_t>& tokens, int64_t pos);
  // The first largest of the last forward_last's logits, computed on the device by the same
  // replay (greedy sampling reads one id). Error before any forward_last.
  int32_t greedy_token() const;
  void reset();            // empties the cache
  int64_t cached() const;  // positions the cache holds

  // Prefills `prompt` from position 0 and samples up to sampling.max_tokens tokens, calling
  // on_token with each (false stops); stops after an end-of-generation token. Returns the
  // sampled tokens.
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, const Sampling& sampling,
                                const std::function<bool(int32_t)>& on_token = {});

 private:
  friend Model load(const std::string&, const std::string&, const Options&);
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Error naming the architecture where it is none of llama, qwen2, qwen3, and naming the tensor
// where one is missing or of the wrong shape.
Model load(const std::string& gguf_path, const std::string& device = "",
           const Options& options = {});

// One token drawn from float32 logits {vocab} as `sampling` says, with `rng_state` advanced.
int32_t sample(const Tensor& logits, const Sampling& sampling, uint64_t& rng_state);

}  // namespace vkgrad::llm
