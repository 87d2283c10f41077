// llm: the Llama-family model (include/vkgrad/llm.hpp). load() reads the hyperparameters and
// the tokenizer from the GGUF metadata, keeps every weight as File::tensor gives it (quantized
// blocks stay blocks) and allocates each layer's K and V cache for the whole context. A step
// runs T tokens at positions [pos, pos + T): RMSNorm, attention with RoPE and grouped KV heads,
// a SwiGLU feed-forward. Each layer writes its new keys and values into its cache in place
// (assign_slice at the variable `pos`) and attends over the cache's first `len` = pos + T rows
// (slice with a variable end), so the kernels are the same at every position: a step is a Jit
// capture replayed for every token (decode, T = 1) or chunk (prefill: T tokens padded to a
// power of two C up to kChunk, one capture per C; the padding rows' keys and values land past
// the filled part of the cache, where the next steps overwrite them before anything reads
// them). Token embeddings are read one row per token from the mapped file and are the Jit's
// input. Depends on gguf, tensor and the public headers.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vkgrad/error.hpp>
#include <vkgrad/jit.hpp>
#include <vkgrad/llm.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad::llm {

namespace {

constexpr int64_t kMaxContext = 4096;
constexpr int64_t kChunk = 128;    // the most tokens one prefill step runs
constexpr int64_t kMinChunk = 16;  // the fewest rows a prefill step computes
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
  Tensor rope_freqs;                     // float32 {rope_dims / 2}: each pair's frequency
  std::vector<Tensor> k_cache, v_cache;  // per layer {context, kv_heads, head_dim}, in place
  int64_t cached = 0, context = 0, chunk = 0, row_bytes = 0;
  // The step's variables: its first position and the positions it attends over (pos + T).
  // Named by the context, so models of other contexts have their own.
  std::optional<Variable> pos_var, len_var;
  // What the step functions bind the variables to (their plain and capturing runs).
  int64_t step_pos = 0, step_tokens = 0;
  // Steps giving the last token's logits (decode, and prefill for generation) and every row's.
  // A Jit captures once per input shape, so each serves one token and every chunk size.
  std::unique_ptr<Jit> last_step, all_step;
  Tensor greedy;  // the last step's argmax, where it computed one (int32, 0-d)

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
  void make_steps();
  void check(const std::vector<int32_t>& tokens, int64_t pos) const;
  Tensor embed_rows(const std::vector<int32_t>& tokens, int64_t rows) const;
  std::vector<Tensor> step(const Tensor& rows, bool all_logits);
  Tensor run(const std::vector<int32_t>& tokens, int64_t pos, bool all_logits);
  Tensor positions(int64_t T) const;
  Tensor rope(const Tensor& x, const Tensor& at) const;
  Tensor attention(const Layer& l, const Tensor& h, const Tensor& at, Tensor& k_cache,
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

// One row per token: each token's row of blocks is copied from the mapped file, into `rows`
// rows (the rest zero), so a lookup reads tokens x row bytes and the step's input has one shape.
Tensor Model::Impl::embed_rows(const std::vector<int32_t>& tokens, int64_t rows) const {
  const std::span<const uint8_t> all = file.data(kEmbedding);
  const size_t row = all.size() / static_cast<size_t>(h.vocab);
  std::vector<uint8_t> bytes(row * static_cast<size_t>(rows), 0);
  for (size_t t = 0; t < tokens.size(); ++t)
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(row * tokens[t]), row,
                bytes.begin() + static_cast<std::ptrdiff_t>(row * t));
  return Tensor::from_bytes(bytes.data(), bytes.size(), {static_cast<int64_t>(bytes.size())},
                            dtypes::uint8, device);
}

// The step's positions pos .. pos + T - 1 as int32 {T, 1, 1}.
Tensor Model::Impl::positions(int64_t T) const {
  return (Tensor::arange(T, {}, device) + Tensor::variable(pos_var->bind(step_pos), {}, device))
      .unsqueeze(1)
      .unsqueeze(2);
}

// RoPE on x {T, heads, head_dim} at positions `at` {T, 1, 1}: pair p of the first rope_dims
// dimensions turns by angle position * base^(-2p / rope_dims) (divided by the linear scale and
// the pair's rope factor: rope_freqs). llama pairs dimensions (2p, 2p + 1); qwen pairs
// (p, p + rope_dims/2). The angles are computed on the device from the step's position.
Tensor Model::Impl::rope(const Tensor& x, const Tensor& at) const {
  const int64_t T = x.shape()[0], H = x.shape()[1], half = h.rope_dims / 2;
  const Tensor angle = at.cast(dtypes::float32) * rope_freqs.reshape({1, 1, half});
  const Tensor c = angle.cos(), s = angle.sin();
  auto part = [&](const Tensor& t, int axis, int64_t begin, int64_t end) {
    PadList b{{0, T}, {0, H}, {0, t.shape()[2]}};
    if (t.ndim() == 4) b.emplace_back(0, 2);
    b[static_cast<size_t>(axis)] = {begin, end};
    return t.shrink(b);
  };
  const Tensor rot = h.rope_dims == h.head_dim ? x : part(x, 2, 0, h.rope_dims);
  Tensor a, b;
  if (h.rope_halves) {
    a = part(rot, 2, 0, half);
    b = part(rot, 2, half, 2 * half);
  } else {
    const Tensor pairs = rot.reshape({T, H, half, 2});
    a = part(pairs, 3, 0, 1).reshape({T, H, half});
    b = part(pairs, 3, 1, 2).reshape({T, H, half});
  }
  const Tensor ra = a * c - b * s, rb = a * s + b * c;
  const Tensor turned =
      h.rope_halves ? cat({ra, rb}, 2) : stack({ra, rb}, 3).reshape({T, H, h.rope_dims});
  if (h.rope_dims == h.head_dim) return turned;
  return cat({turned, part(x, 2, h.rope_dims, h.head_dim)}, 2);
}

// Attention of the step's T queries over the cache's first len = pos + T positions, after the
// step's keys and values are written at [pos, pos + T). Query head j reads KV head j / group:
// the queries are {kv_heads, group, T, head_dim} against keys {kv_heads, 1, len, head_dim}.
Tensor Model::Impl::attention(const Layer& l, const Tensor& x, const Tensor& at, Tensor& k_cache,
                              Tensor& v_cache) const {
  const int64_t T = x.shape()[0], hd = h.head_dim, kv = h.kv_heads, group = h.heads / kv;
  auto project = [&](const Tensor& w, const std::optional<Tensor>& bias, int64_t heads) {
    Tensor y = x.matmul(w.transpose());
    if (bias) y = y + bias->cast(dtypes::float32);
    return y.reshape({T, heads, hd});
  };
  Tensor q = project(l.q, l.q_bias, h.heads), k = project(l.k, l.k_bias, kv);
  const Tensor v = project(l.v, l.v_bias, kv);
  if (l.q_norm) q = rms_norm(q, *l.q_norm), k = rms_norm(k, *l.k_norm);
  q = rope(q, at), k = rope(k, at);
  const Variable start = pos_var->bind(step_pos), len = len_var->bind(step_pos + step_tokens);
  k_cache.assign_slice(0, start, k.cast(options.cache_dtype));
  v_cache.assign_slice(0, start, v.cast(options.cache_dtype));
  auto heads = [&](const Tensor& c) {  // {len, kv, hd} -> {kv, 1, len, hd}
    return c.slice(0, len).cast(dtypes::float32).permute({1, 0, 2}).unsqueeze(1);
  };
  const Tensor keys = heads(k_cache), values = heads(v_cache);
  const Tensor queries = q.reshape({T, kv, group, hd}).permute({1, 2, 0, 3});
  Tensor scores =
      queries.matmul(keys.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  if (T != 1 || tensor::sym_shape(x)[0] < 0) {
    // Causal: the query at position p sees keys 0..p.
    const Tensor key_pos = Tensor::arange(context, {}, device).slice(0, len);
    const Tensor mask = key_pos.unsqueeze(0) <= at.squeeze(2);
    scores = where(mask, scores, -INFINITY);
  }
  const Tensor out =
      scores.softmax(-1).matmul(values).permute({2, 0, 1, 3}).reshape({T, h.heads * hd});
  return out.matmul(l.o.transpose());
}

// One step over `rows` (the Jit's input: the embedding rows' bytes): every row's logits, or the
// last token's with its greedy token. The caches are updated by assign_slice, which the Jit
// replays.
std::vector<Tensor> Model::Impl::step(const Tensor& rows, bool all_logits) {
  const gguf::TensorInfo& e = *file.find_tensor(kEmbedding);
  const int64_t T = rows.numel() / row_bytes;  // the step's rows, padding included
  Tensor x = gguf::dequantize(rows, e.type, {T, h.embedding});
  const Tensor at = positions(T);
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    x = x + attention(l, rms_norm(x, l.attn_norm), at, k_cache[i], v_cache[i]);
    const Tensor f = rms_norm(x, l.ffn_norm);
    x = x + (f.matmul(l.gate.transpose()).silu() * f.matmul(l.up.transpose()))
                .matmul(l.down.transpose());
  }
  if (T > 1 && !all_logits) {
    // The last token's row, at position len - 1, picked by a one-hot sum.
    const Tensor last =
        at.squeeze(2) == Tensor::variable(len_var->bind(step_pos + step_tokens), {}, device) - 1;
    x = (x * last.cast(dtypes::float32)).sum(0, true);
  }
  const Tensor logits = rms_norm(x, output_norm).matmul(output.transpose());
  if (all_logits) return {logits};
  // The greedy token too, in the same replay: generation downloads one id, not the logits.
  return {logits, logits.reshape({h.vocab}).argmax()};
}

void Model::Impl::make_steps() {
  chunk = std::min(kChunk, context);
  pos_var.emplace(fmt::format("llm_pos_{}", context), 0, context - 1);
  len_var.emplace(fmt::format("llm_len_{}", context), 1, context);
  last_step =
      std::make_unique<Jit>([this](const std::vector<Tensor>& in) { return step(in[0], false); });
  all_step =
      std::make_unique<Jit>([this](const std::vector<Tensor>& in) { return step(in[0], true); });
}

// The tokens at positions pos.. in steps: one decode replay for a single token, prefill replays
// of up to `chunk` tokens otherwise, padded to a power of two (at least kMinChunk). The result is
// the Jit's own buffer (overwritten by the next step), or the rows of every chunk joined.
Tensor Model::Impl::run(const std::vector<int32_t>& tokens, int64_t pos, bool all_logits) {
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<Tensor> parts;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t T = std::min(chunk, n - begin);
    const std::vector<int32_t> part(tokens.begin() + begin, tokens.begin() + begin + T);
    step_pos = pos + begin;
    step_tokens = T;
    const Tensor variables[] = {Tensor::variable(pos_var->bind(step_pos), {}, device),
                                Tensor::variable(len_var->bind(step_pos + T), {}, device)};
    int64_t rows = T == 1 ? 1 : std::min(kMinChunk, chunk);
    while (rows < T) rows = std::min(2 * rows, chunk);
    Jit& jit = all_logits && T > 1 ? *all_step : *last_step;
    const std::vector<Tensor> out = jit({embed_rows(part, rows), variables[0], variables[1]});
    Tensor logits = out[0];
    if (out.size() > 1) greedy = out[1];
    if (all_logits && rows > T) logits = logits.shrink({{0, T}, {0, h.vocab}});
    cached = step_pos + T;  // what came after pos belonged to another sequence
    if (all_logits && n > chunk)
      parts.push_back(logits.clone().realize());
    else if (begin + T >= n)
      parts.push_back(logits);
  }
  if (parts.size() == 1) return parts[0];
  Tensor joined = cat(parts, 0);
  return joined.realize();
}

const std::string& Model::architecture() const { return impl_->arch; }
int64_t Model::context() const { return impl_->context; }
int64_t Model::vocab_size() const { return impl_->h.vocab; }
const Hyperparameters& Model::hyperparameters() const { return impl_->h; }
const Tokenizer& Model::tokenizer() const { return impl_->tokenizer; }
int64_t Model::cached() const { return impl_->cached; }

void Model::reset() { impl_->cached = 0; }

// Error where a step of `tokens` at `pos` cannot run.
void Model::Impl::check(const std::vector<int32_t>& tokens, int64_t pos) const {
  if (tokens.empty()) throw Error("llm::forward: no tokens");
  if (pos < 0 || pos > cached)
    throw Error(fmt::format("llm::forward: position {} is past the {} positions the cache holds",
                            pos, cached));
  const auto T = static_cast<int64_t>(tokens.size());
  if (pos + T > context)
    throw Error(fmt::format("llm::forward: positions {} .. {} run past the context of {}", pos,
                            pos + T - 1, context));
  for (int32_t id : tokens)
    if (id < 0 || id >= h.vocab)
      throw Error(
          fmt::format("llm::forward: token id {} is out of range (vocabulary {})", id, h.vocab));
}

Tensor Model::forward(const std::vector<int32_t>& tokens, int64_t pos) {
  impl_->check(tokens, pos);
  // A copy where the result is the step's buffer, which the next step overwrites.
  Tensor out = impl_->run(tokens, pos, true);
  return static_cast<int64_t>(tokens.size()) > impl_->chunk ? out : out.clone().realize();
}

int32_t Model::greedy_token() const {
  if (!impl_->greedy.defined()) throw Error("llm::greedy_token: no forward_last has run");
  return impl_->greedy.item<int32_t>();
}

Tensor Model::forward_last(const std::vector<int32_t>& tokens, int64_t pos) {
  impl_->check(tokens, pos);
  return impl_->run(tokens, pos, false);
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
  std::vector<float> freqs;
  for (int64_t p = 0; p < h.rope_dims / 2; ++p)
    freqs.push_back(static_cast<float>(
        std::pow(h.rope_base, -2.0 * static_cast<double>(p) / static_cast<double>(h.rope_dims)) /
        h.rope_scale));
  if (m->file.find_tensor("rope_freqs.weight")) {
    const std::vector<float> factors =
        m->weight("rope_freqs.weight", {h.rope_dims / 2}).to_vector<float>();
    for (size_t p = 0; p < freqs.size(); ++p) freqs[p] /= factors[p];
  }
  m->rope_freqs = Tensor::from_vector<float>(freqs, {h.rope_dims / 2}, {}, device).realize();
  m->load_layers();
  m->context = options.context > 0 ? options.context : std::min(h.context, kMaxContext);
  // Each cache its own buffer (empty), zeroed in one realize.
  std::vector<Tensor> caches;
  const Shape cache_shape{m->context, h.kv_heads, h.head_dim};
  for (size_t i = 0; i < 2 * m->layers.size(); ++i) {
    Tensor c = Tensor::empty(cache_shape, options.cache_dtype, device);
    c.assign_slice(0, 0, Tensor::zeros(cache_shape, options.cache_dtype, device));
    caches.push_back(std::move(c));
  }
  Tensor::realize_all(caches);
  m->k_cache.assign(caches.begin(), caches.begin() + static_cast<std::ptrdiff_t>(m->layers.size()));
  m->v_cache.assign(caches.begin() + static_cast<std::ptrdiff_t>(m->layers.size()), caches.end());
  m->row_bytes = static_cast<int64_t>(m->file.data(kEmbedding).size()) / h.vocab;
  m->make_steps();
  Model model;
  model.impl_ = std::move(m);
  return model;
}

}  // namespace vkgrad::llm
