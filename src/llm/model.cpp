// llm: the Llama-family model (include/vkgrad/llm.hpp). load() reads the hyperparameters and
// the tokenizer from the GGUF metadata and keeps every weight as File::tensor gives it (quantized
// blocks stay blocks); forward() builds one lazy graph for the tokens — RMSNorm, attention with
// RoPE over the cache and grouped KV heads, a SwiGLU feed-forward — and realizes the logits and
// every layer's new cache in one schedule. Token embeddings are read one row per token from the
// mapped file. Depends on gguf, tensor and the public headers.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vkgrad/error.hpp>
#include <vkgrad/llm.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad::llm {

namespace {

constexpr int64_t kMaxContext = 4096;
constexpr const char* kEmbedding = "token_embd.weight";

struct Layer {
  Tensor attn_norm, q, k, v, o, ffn_norm, gate, up, down;
  std::optional<Tensor> q_bias, k_bias, v_bias, q_norm, k_norm;
};

int64_t meta_int(const gguf::File& f, const std::string& key, std::optional<int64_t> fallback) {
  if (const gguf::Value* v = f.find(key)) return v->as_int();
  if (fallback) return *fallback;
  throw Error(fmt::format("llm::load: {} has no {}", f.path(), key));
}
double meta_float(const gguf::File& f, const std::string& key, double fallback) {
  const gguf::Value* v = f.find(key);
  return v ? v->as_float() : fallback;
}

Hyperparameters read_hyperparameters(const gguf::File& f, const std::string& arch) {
  Hyperparameters h;
  const std::string a = arch + ".";
  h.layers = meta_int(f, a + "block_count", std::nullopt);
  h.embedding = meta_int(f, a + "embedding_length", std::nullopt);
  h.feed_forward = meta_int(f, a + "feed_forward_length", std::nullopt);
  h.heads = meta_int(f, a + "attention.head_count", std::nullopt);
  h.kv_heads = meta_int(f, a + "attention.head_count_kv", h.heads);
  if (h.heads <= 0 || h.kv_heads <= 0 || h.heads % h.kv_heads != 0 || h.embedding % h.heads != 0)
    throw Error(fmt::format("llm::load: {}: {} heads over {} KV heads and width {} do not divide",
                            f.path(), h.heads, h.kv_heads, h.embedding));
  h.head_dim = meta_int(f, a + "attention.key_length", h.embedding / h.heads);
  h.rope_dims = meta_int(f, a + "rope.dimension_count", h.head_dim);
  if (h.rope_dims % 2 != 0 || h.rope_dims > h.head_dim)
    throw Error(fmt::format("llm::load: {}: rope over {} of {} dimensions", f.path(), h.rope_dims,
                            h.head_dim));
  h.context = meta_int(f, a + "context_length", 2048);
  h.norm_eps = meta_float(f, a + "attention.layer_norm_rms_epsilon", 1e-5);
  h.rope_base = meta_float(f, a + "rope.freq_base", 10000.0);
  if (const gguf::Value* type = f.find(a + "rope.scaling.type")) {
    const std::string& t = type->as_string();
    if (t == "linear") {
      h.rope_scale = meta_float(f, a + "rope.scaling.factor", 1.0);
    } else if (t != "none") {
      throw Error(fmt::format("llm::load: {}: rope scaling {} is not supported (none, linear)",
                              f.path(), t));
    }
  }
  h.rope_halves = arch != "llama";
  h.qkv_bias = arch == "qwen2";
  h.qk_norm = arch == "qwen3";
  return h;
}

Vocabulary read_vocabulary(const gguf::File& f) {
  Vocabulary v;
  auto text = [&](const char* key) { return f.find(key) ? f.at(key).as_string() : std::string(); };
  auto id = [&](const char* key) {
    return f.find(key) ? static_cast<int32_t>(f.at(key).as_int()) : int32_t{-1};
  };
  auto flag = [&](const char* key) -> std::optional<bool> {
    if (!f.find(key)) return std::nullopt;
    return f.at(key).as_bool();
  };
  v.model = text("tokenizer.ggml.model");
  v.pre = text("tokenizer.ggml.pre");
  v.tokens = f.at("tokenizer.ggml.tokens").as_strings();
  if (f.find("tokenizer.ggml.scores")) v.scores = f.at("tokenizer.ggml.scores").as_floats();
  if (f.find("tokenizer.ggml.token_type"))
    for (int64_t t : f.at("tokenizer.ggml.token_type").as_ints())
      v.token_types.push_back(static_cast<int32_t>(t));
  if (f.find("tokenizer.ggml.merges")) v.merges = f.at("tokenizer.ggml.merges").as_strings();
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unknown = id("tokenizer.ggml.unknown_token_id");
  v.padding = id("tokenizer.ggml.padding_token_id");
  v.add_bos = flag("tokenizer.ggml.add_bos_token");
  v.add_eos = flag("tokenizer.ggml.add_eos_token");
  v.add_space_prefix = flag("tokenizer.ggml.add_space_prefix");
  return v;
}

}  // namespace

struct Model::Impl {
  gguf::File file;
  std::string device, arch;
  Options options;
  Hyperparameters h;
  Tokenizer tokenizer;
  Tensor output_norm, output;
  std::vector<Layer> layers;
  std::vector<double> rope_factors;      // rope_freqs.weight: each frequency divided by its factor
  std::vector<Tensor> k_cache, v_cache;  // per layer {cached, kv_heads, head_dim}
  int64_t cached = 0, context = 0;

  Tensor weight(const std::string& name, const Shape& shape) const {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) throw Error(fmt::format("llm::load: {} has no tensor {}", file.path(), name));
    if (t->shape != shape)
      throw Error(fmt::format("llm::load: {}: tensor {} has shape {}, expected {}", file.path(),
                              name, tensor::shape_str(t->shape), tensor::shape_str(shape)));
    return file.tensor(name, device);
  }
  std::optional<Tensor> optional_weight(const std::string& name, const Shape& shape) const {
    if (!file.find_tensor(name)) return std::nullopt;
    return weight(name, shape);
  }

  void load_layers();
  Tensor embed(const std::vector<int32_t>& tokens) const;
  Tensor rope(const Tensor& x, int64_t pos) const;
  Tensor attention(const Layer& l, const Tensor& h, int64_t pos, Tensor& k_cache,
                   Tensor& v_cache) const;
  Tensor rms_norm(const Tensor& x, const Tensor& w) const {
    return x * (x.square().mean(-1, true) + h.norm_eps).rsqrt() * w.cast(dtypes::float32);
  }
};

void Model::Impl::load_layers() {
  const int64_t d = h.embedding, q_width = h.heads * h.head_dim, kv_width = h.kv_heads * h.head_dim;
  for (int64_t i = 0; i < h.layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    Layer l{weight(p + "attn_norm.weight", {d}),
            weight(p + "attn_q.weight", {q_width, d}),
            weight(p + "attn_k.weight", {kv_width, d}),
            weight(p + "attn_v.weight", {kv_width, d}),
            weight(p + "attn_output.weight", {d, q_width}),
            weight(p + "ffn_norm.weight", {d}),
            weight(p + "ffn_gate.weight", {h.feed_forward, d}),
            weight(p + "ffn_up.weight", {h.feed_forward, d}),
            weight(p + "ffn_down.weight", {d, h.feed_forward}),
            {},
            {},
            {},
            {},
            {}};
    if (h.qkv_bias) {
      l.q_bias = weight(p + "attn_q.bias", {q_width});
      l.k_bias = weight(p + "attn_k.bias", {kv_width});
      l.v_bias = weight(p + "attn_v.bias", {kv_width});
    }
    if (h.qk_norm) {
      l.q_norm = weight(p + "attn_q_norm.weight", {h.head_dim});
      l.k_norm = weight(p + "attn_k_norm.weight", {h.head_dim});
    }
    layers.push_back(std::move(l));
  }
}

// One row per token: each token's row of blocks is cut from the mapped file, so a lookup reads
// tokens x row bytes and the kernel is the same for every set of T tokens.
Tensor Model::Impl::embed(const std::vector<int32_t>& tokens) const {
  const gguf::TensorInfo& t = *file.find_tensor(kEmbedding);
  const std::span<const uint8_t> all = file.data(kEmbedding);
  const size_t row = all.size() / static_cast<size_t>(h.vocab);
  std::vector<uint8_t> rows;
  rows.reserve(row * tokens.size());
  for (int32_t id : tokens)
    rows.insert(rows.end(), all.begin() + static_cast<std::ptrdiff_t>(row * id),
                all.begin() + static_cast<std::ptrdiff_t>(row * (id + 1)));
  const auto n = static_cast<int64_t>(tokens.size());
  const Tensor raw = Tensor::from_bytes(rows.data(), rows.size(),
                                        {static_cast<int64_t>(rows.size())}, dtypes::uint8, device);
  return gguf::dequantize(raw, t.type, {n, h.embedding});
}

// RoPE on x {T, heads, head_dim} at positions pos..pos+T-1: pair p of the first rope_dims
// dimensions turns by angle position * base^(-2p / rope_dims) (divided by the linear scale and
// the pair's rope factor). llama pairs dimensions (2p, 2p + 1); qwen pairs (p, p + rope_dims/2).
Tensor Model::Impl::rope(const Tensor& x, int64_t pos) const {
  const int64_t T = x.shape()[0], H = x.shape()[1], half = h.rope_dims / 2;
  std::vector<float> cos_v, sin_v;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t p = 0; p < half; ++p) {
      double freq =
          std::pow(h.rope_base, -2.0 * static_cast<double>(p) / static_cast<double>(h.rope_dims));
      if (!rope_factors.empty()) freq /= rope_factors[static_cast<size_t>(p)];
      const double angle = static_cast<double>(pos + t) / h.rope_scale * freq;
      cos_v.push_back(static_cast<float>(std::cos(angle)));
      sin_v.push_back(static_cast<float>(std::sin(angle)));
    }
  const Tensor c = Tensor::from_vector<float>(cos_v, {T, 1, half}, {}, device);
  const Tensor s = Tensor::from_vector<float>(sin_v, {T, 1, half}, {}, device);
  const Tensor rot = x.shrink({{0, T}, {0, H}, {0, h.rope_dims}});
  Tensor a, b;
  if (h.rope_halves) {
    a = rot.shrink({{0, T}, {0, H}, {0, half}});
    b = rot.shrink({{0, T}, {0, H}, {half, 2 * half}});
  } else {
    const Tensor pairs = rot.reshape({T, H, half, 2});
    a = pairs.shrink({{0, T}, {0, H}, {0, half}, {0, 1}}).reshape({T, H, half});
    b = pairs.shrink({{0, T}, {0, H}, {0, half}, {1, 2}}).reshape({T, H, half});
  }
  const Tensor ra = a * c - b * s, rb = a * s + b * c;
  const Tensor turned =
      h.rope_halves ? cat({ra, rb}, 2) : stack({ra, rb}, 3).reshape({T, H, h.rope_dims});
  if (h.rope_dims == h.head_dim) return turned;
  return cat({turned, x.shrink({{0, T}, {0, H}, {h.rope_dims, h.head_dim}})}, 2);
}

Tensor Model::Impl::attention(const Layer& l, const Tensor& x, int64_t pos, Tensor& k_cache,
                              Tensor& v_cache) const {
  const int64_t T = x.shape()[0], hd = h.head_dim, S = pos + T, group = h.heads / h.kv_heads;
  auto project = [&](const Tensor& w, const std::optional<Tensor>& bias, int64_t heads) {
    Tensor y = x.matmul(w.transpose());
    if (bias) y = y + bias->cast(dtypes::float32);
    return y.reshape({T, heads, hd});
  };
  Tensor q = project(l.q, l.q_bias, h.heads), k = project(l.k, l.k_bias, h.kv_heads);
  const Tensor v = project(l.v, l.v_bias, h.kv_heads);
  if (l.q_norm) q = rms_norm(q, *l.q_norm), k = rms_norm(k, *l.k_norm);
  q = rope(q, pos), k = rope(k, pos);
  const DType cd = options.cache_dtype;
  auto extend = [&](const Tensor& cache, const Tensor& fresh) {
    if (pos == 0) return fresh.cast(cd);
    return cat({cache.shrink({{0, pos}, {0, h.kv_heads}, {0, hd}}), fresh.cast(cd)}, 0);
  };
  k_cache = extend(k_cache, k), v_cache = extend(v_cache, v);
  // Grouped heads: query head j reads KV head j / group.
  auto heads = [&](const Tensor& c) {
    return c.cast(dtypes::float32)
        .reshape({S, h.kv_heads, 1, hd})
        .expand({S, h.kv_heads, group, hd})
        .reshape({S, h.heads, hd})
        .permute({1, 0, 2});
  };
  const Tensor keys = heads(k_cache), values = heads(v_cache);
  std::vector<float> mask(static_cast<size_t>(T * S));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < S; ++j)
      mask[static_cast<size_t>(t * S + j)] = j <= pos + t ? 0.0f : -INFINITY;
  const Tensor scores =
      q.permute({1, 0, 2}).matmul(keys.transpose()) * (1.0 / std::sqrt(static_cast<double>(hd))) +
      Tensor::from_vector<float>(mask, {1, T, S}, {}, device);
  const Tensor out =
      scores.softmax(-1).matmul(values).permute({1, 0, 2}).reshape({T, h.heads * hd});
  return out.matmul(l.o.transpose());
}

const std::string& Model::architecture() const { return impl_->arch; }
int64_t Model::context() const { return impl_->context; }
int64_t Model::vocab_size() const { return impl_->h.vocab; }
const Hyperparameters& Model::hyperparameters() const { return impl_->h; }
const Tokenizer& Model::tokenizer() const { return impl_->tokenizer; }
int64_t Model::cached() const { return impl_->cached; }

void Model::reset() {
  impl_->cached = 0;
  for (Tensor& t : impl_->k_cache) t = Tensor();
  for (Tensor& t : impl_->v_cache) t = Tensor();
}

Tensor Model::forward(const std::vector<int32_t>& tokens, int64_t pos) {
  Impl& m = *impl_;
  if (tokens.empty()) throw Error("llm::forward: no tokens");
  if (pos < 0 || pos > m.cached)
    throw Error(fmt::format("llm::forward: position {} is past the {} positions the cache holds",
                            pos, m.cached));
  const auto T = static_cast<int64_t>(tokens.size());
  if (pos + T > m.context)
    throw Error(fmt::format("llm::forward: positions {} .. {} run past the context of {}", pos,
                            pos + T - 1, m.context));
  for (int32_t id : tokens)
    if (id < 0 || id >= m.h.vocab)
      throw Error(
          fmt::format("llm::forward: token id {} is out of range (vocabulary {})", id, m.h.vocab));
  std::vector<Tensor> k_cache = m.k_cache, v_cache = m.v_cache;
  Tensor x = m.embed(tokens);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const Layer& l = m.layers[i];
    x = x + m.attention(l, m.rms_norm(x, l.attn_norm), pos, k_cache[i], v_cache[i]);
    const Tensor f = m.rms_norm(x, l.ffn_norm);
    x = x + (f.matmul(l.gate.transpose()).silu() * f.matmul(l.up.transpose()))
                .matmul(l.down.transpose());
  }
  std::vector<Tensor> out{m.rms_norm(x, m.output_norm).matmul(m.output.transpose())};
  out.insert(out.end(), k_cache.begin(), k_cache.end());
  out.insert(out.end(), v_cache.begin(), v_cache.end());
  Tensor::realize_all(out);
  const size_t L = m.layers.size();
  for (size_t i = 0; i < L; ++i) m.k_cache[i] = out[1 + i], m.v_cache[i] = out[1 + L + i];
  m.cached = pos + T;
  return out[0];
}

Model load(const std::string& gguf_path, const std::string& device, const Options& options) {
  auto m = std::make_shared<Model::Impl>();
  m->file = gguf::open(gguf_path);
  m->device = device;
  m->options = options;
  if (options.cache_dtype != dtypes::float16 && options.cache_dtype != dtypes::float32)
    throw DTypeError(fmt::format("llm::load: the KV cache is float16 or float32, not {}",
                                 options.cache_dtype.name()));
  m->arch = m->file.at("general.architecture").as_string();
  if (m->arch != "llama" && m->arch != "qwen2" && m->arch != "qwen3")
    throw Error(fmt::format("llm::load: {}: architecture {} is not supported (llama, qwen2, qwen3)",
                            gguf_path, m->arch));
  Hyperparameters& h = m->h;
  h = read_hyperparameters(m->file, m->arch);
  const gguf::TensorInfo* embd = m->file.find_tensor(kEmbedding);
  if (!embd || embd->shape.size() != 2 || embd->shape[1] != h.embedding)
    throw Error(
        fmt::format("llm::load: {}: no token_embd.weight of {} columns", gguf_path, h.embedding));
  h.vocab = embd->shape[0];
  m->tokenizer = Tokenizer(read_vocabulary(m->file));
  if (m->tokenizer.size() != h.vocab)
    throw Error(fmt::format("llm::load: {}: {} tokens for {} embedding rows", gguf_path,
                            m->tokenizer.size(), h.vocab));
  m->output_norm = m->weight("output_norm.weight", {h.embedding});
  h.tied_embeddings = !m->file.find_tensor("output.weight");
  m->output = h.tied_embeddings ? m->weight(kEmbedding, {h.vocab, h.embedding})
                                : m->weight("output.weight", {h.vocab, h.embedding});
  if (m->file.find_tensor("rope_freqs.weight"))
    for (float f : m->weight("rope_freqs.weight", {h.rope_dims / 2}).to_vector<float>())
      m->rope_factors.push_back(f);
  m->load_layers();
  m->context = options.context > 0 ? options.context : std::min(h.context, kMaxContext);
  m->k_cache.resize(m->layers.size());
  m->v_cache.resize(m->layers.size());
  Model model;
  model.impl_ = std::move(m);
  return model;
}

}  // namespace vkgrad::llm
