// tests/llm: tiny random models of each architecture, written with gguf::save, against a float64
// forward written here from the architectures' definitions (RMSNorm, RoPE as llama.cpp applies
// it per architecture, grouped-query causal attention, SwiGLU); decoding through the cache
// against one forward over the sequence; sampling; the load and forward errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <vkgrad/stats.hpp>

#include "../tensor/harness.hpp"

namespace vkgrad::testing {
namespace {

struct Spec {
  std::string arch = "llama";
  std::string type = "F32";  // the matrices' type; norms stay F32
  int64_t d = 64, heads = 4, kv_heads = 2, ff = 128, layers = 2, vocab = 96;
  bool tied = false;
};

std::string model_path(const Spec& s, const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("vkgrad_llm_{}_{}_{}_{}.gguf", ::getpid(), s.arch, s.type, tag))
      .string();
}

Tensor random_tensor(const Shape& shape, uint64_t seed, double scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v;
  for (double x : random_values(n, -scale, scale, seed)) v.push_back(static_cast<float>(x));
  return Tensor::from_vector<float>(v, shape, {}, "CPU");
}

// A SentencePiece vocabulary of `n` tokens: <unk>, <s>, </s>, then "▁a".. pieces.
std::map<std::string, gguf::Value> vocabulary(int64_t n) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int64_t i = 3; i < n; ++i) {
    tokens.push_back(fmt::format("\xE2\x96\x81t{}", i));
    scores.push_back(-static_cast<float>(i));
    types.push_back(1);
  }
  return {{"tokenizer.ggml.model", gguf::Value("llama")},
          {"tokenizer.ggml.tokens", gguf::Value::array(tokens)},
          {"tokenizer.ggml.scores", gguf::Value::array(std::span<const float>(scores))},
          {"tokenizer.ggml.token_type", gguf::Value::array(std::span<const int32_t>(types))},
          {"tokenizer.ggml.bos_token_id", gguf::Value(uint32_t{1})},
          {"tokenizer.ggml.eos_token_id", gguf::Value(uint32_t{2})}};
}

void write_model(const Spec& s, const std::string& path) {
  const int64_t hd = s.d / s.heads;
  std::map<std::string, gguf::Value> meta = vocabulary(s.vocab);
  const std::string a = s.arch + ".";
  meta["general.architecture"] = gguf::Value(s.arch);
  meta[a + "block_count"] = gguf::Value(static_cast<uint32_t>(s.layers));
  meta[a + "embedding_length"] = gguf::Value(static_cast<uint32_t>(s.d));
  meta[a + "feed_forward_length"] = gguf::Value(static_cast<uint32_t>(s.ff));
  meta[a + "attention.head_count"] = gguf::Value(static_cast<uint32_t>(s.heads));
  meta[a + "attention.head_count_kv"] = gguf::Value(static_cast<uint32_t>(s.kv_heads));
  meta[a + "attention.layer_norm_rms_epsilon"] = gguf::Value(1e-5f);
  meta[a + "rope.freq_base"] = gguf::Value(10000.0f);
  meta[a + "context_length"] = gguf::Value(uint32_t{64});
  std::vector<gguf::SaveTensor> t;
  uint64_t seed = 100;
  auto add = [&](const std::string& name, const Shape& shape, const std::string& type,
                 double scale) {
    t.push_back({name, random_tensor(shape, seed++, scale), type});
  };
  auto norm = [&](const std::string& name, int64_t n) {
    std::vector<float> v;
    for (double x : random_values(n, 0.8, 1.2, seed++)) v.push_back(static_cast<float>(x));
    t.push_back({name, Tensor::from_vector<float>(v, {n}, {}, "CPU"), "F32"});
  };
  add("token_embd.weight", {s.vocab, s.d}, s.type, 1.0);
  norm("output_norm.weight", s.d);
  if (!s.tied) add("output.weight", {s.vocab, s.d}, s.type, 0.2);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    norm(p + "attn_norm.weight", s.d);
    add(p + "attn_q.weight", {s.heads * hd, s.d}, s.type, 0.3);
    add(p + "attn_k.weight", {s.kv_heads * hd, s.d}, s.type, 0.3);
    add(p + "attn_v.weight", {s.kv_heads * hd, s.d}, s.type, 0.3);
    add(p + "attn_output.weight", {s.d, s.heads * hd}, s.type, 0.2);
    if (s.arch == "qwen2") {
      add(p + "attn_q.bias", {s.heads * hd}, "F32", 0.2);
      add(p + "attn_k.bias", {s.kv_heads * hd}, "F32", 0.2);
      add(p + "attn_v.bias", {s.kv_heads * hd}, "F32", 0.2);
    }
    if (s.arch == "qwen3") {
      norm(p + "attn_q_norm.weight", hd);
      norm(p + "attn_k_norm.weight", hd);
    }
    norm(p + "ffn_norm.weight", s.d);
    add(p + "ffn_gate.weight", {s.ff, s.d}, s.type, 0.2);
    add(p + "ffn_up.weight", {s.ff, s.d}, s.type, 0.2);
    add(p + "ffn_down.weight", {s.d, s.ff}, s.type, 0.2);
  }
  gguf::save(path, meta, t);
}

// ---- The float64 reference ------------------------------------------------------------------

using Vec = std::vector<double>;

struct Reference {
  Spec s;
  gguf::File f;
  int64_t hd;
  Vec w(const std::string& name) const {
    Vec out;
    for (float x : f.tensor(name, "CPU").cast(dtypes::float32).to_vector<float>()) out.push_back(x);
    return out;
  }
  // y[T, rows] = x[T, cols] W^T for W {rows, cols}.
  static Vec matmul_t(const Vec& x, const Vec& wt, int64_t T, int64_t rows, int64_t cols) {
    Vec y(static_cast<size_t>(T * rows), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (int64_t c = 0; c < cols; ++c) acc += x[t * cols + c] * wt[r * cols + c];
        y[t * rows + r] = acc;
      }
    return y;
  }
  // RMSNorm of each run of n values.
  static void rms(Vec& x, const Vec& g, int64_t n) {
    for (size_t at = 0; at < x.size(); at += static_cast<size_t>(n)) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += x[at + i] * x[at + i];
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
      for (int64_t i = 0; i < n; ++i) x[at + i] *= r * g[i];
    }
  }
  void rope(Vec& x, int64_t T, int64_t H) const {
    const bool halves = s.arch != "llama";
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        double* v = &x[(t * H + h) * hd];
        for (int64_t p = 0; p < hd / 2; ++p) {
          const double angle = static_cast<double>(t) * std::pow(10000.0, -2.0 * p / hd);
          const int64_t i = halves ? p : 2 * p, j = halves ? p + hd / 2 : 2 * p + 1;
          const double a = v[i], b = v[j];
          v[i] = a * std::cos(angle) - b * std::sin(angle);
          v[j] = a * std::sin(angle) + b * std::cos(angle);
        }
      }
  }
  Vec attention(const Vec& q, const Vec& k, const Vec& v, int64_t T) const {
    const int64_t group = s.heads / s.kv_heads;
    Vec out(static_cast<size_t>(T * s.heads * hd), 0.0);
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t kvh = h / group;
        Vec score(static_cast<size_t>(t + 1));
        double top = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < hd; ++e)
            dot += q[(t * s.heads + h) * hd + e] * k[(j * s.kv_heads + kvh) * hd + e];
          score[j] = dot / std::sqrt(static_cast<double>(hd));
          top = std::max(top, score[j]);
        }
        double total = 0;
        for (double& x : score) total += x = std::exp(x - top);
        for (int64_t j = 0; j <= t; ++j)
          for (int64_t e = 0; e < hd; ++e)
            out[(t * s.heads + h) * hd + e] +=
                score[j] / total * v[(j * s.kv_heads + kvh) * hd + e];
      }
    return out;
  }
  Vec forward(const std::vector<int32_t>& tokens) const {
    const auto T = static_cast<int64_t>(tokens.size());
    const Vec embd = w("token_embd.weight");
    Vec x;
    for (int32_t id : tokens)
      x.insert(x.end(), embd.begin() + id * s.d, embd.begin() + (id + 1) * s.d);
    for (int64_t l = 0; l < s.layers; ++l) {
      const std::string p = fmt::format("blk.{}.", l);
      Vec h = x;
      rms(h, w(p + "attn_norm.weight"), s.d);
      Vec q = matmul_t(h, w(p + "attn_q.weight"), T, s.heads * hd, s.d);
      Vec k = matmul_t(h, w(p + "attn_k.weight"), T, s.kv_heads * hd, s.d);
      Vec v = matmul_t(h, w(p + "attn_v.weight"), T, s.kv_heads * hd, s.d);
      if (s.arch == "qwen2") {
        const Vec bq = w(p + "attn_q.bias"), bk = w(p + "attn_k.bias"), bv = w(p + "attn_v.bias");
        for (size_t i = 0; i < q.size(); ++i) q[i] += bq[i % bq.size()];
        for (size_t i = 0; i < k.size(); ++i) k[i] += bk[i % bk.size()], v[i] += bv[i % bv.size()];
      }
      if (s.arch == "qwen3")
        rms(q, w(p + "attn_q_norm.weight"), hd), rms(k, w(p + "attn_k_norm.weight"), hd);
      rope(q, T, s.heads), rope(k, T, s.kv_heads);
      const Vec o =
          matmul_t(attention(q, k, v, T), w(p + "attn_output.weight"), T, s.d, s.heads * hd);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      h = x;
      rms(h, w(p + "ffn_norm.weight"), s.d);
      const Vec g = matmul_t(h, w(p + "ffn_gate.weight"), T, s.ff, s.d);
      Vec u = matmul_t(h, w(p + "ffn_up.weight"), T, s.ff, s.d);
      for (size_t i = 0; i < u.size(); ++i) u[i] *= g[i] / (1 + std::exp(-g[i]));
      const Vec dn = matmul_t(u, w(p + "ffn_down.weight"), T, s.d, s.ff);
      for (size_t i = 0; i < x.size(); ++i) x[i] += dn[i];
    }
    rms(x, w("output_norm.weight"), s.d);
    return matmul_t(x, w(s.tied ? "token_embd.weight" : "output.weight"), T, s.vocab, s.d);
  }
};

Vec as_doubles(const Tensor& t) {
  Vec out;
  for (float x : t.to_vector<float>()) out.push_back(x);
  return out;
}

const std::vector<int32_t> kPrompt = {1, 17, 42, 5, 88, 23, 9};

class LlmTest : public DeviceTest {};

void check_logits(const Spec& s, const std::string& device, DType cache, double tol) {
  const std::string path = model_path(s, device);
  write_model(s, path);
  llm::Model m = llm::load(path, device, {.context = 0, .cache_dtype = cache});
  EXPECT_EQ(m.architecture(), s.arch);
  EXPECT_EQ(m.vocab_size(), s.vocab);
  EXPECT_EQ(m.context(), 64);
  const Tensor logits = m.forward(kPrompt, 0);
  const Reference ref{s, gguf::open(path), s.d / s.heads};
  expect_values(logits, {static_cast<int64_t>(kPrompt.size()), s.vocab}, dtypes::float32,
                ref.forward(kPrompt), tol, tol);
  std::filesystem::remove(path);
}

TEST_P(LlmTest, LlamaLogitsMatchAFloat64Forward) {
  check_logits({.arch = "llama", .type = "F32"}, dev(), dtypes::float32, 2e-4);
  check_logits({.arch = "llama", .type = "Q8_0"}, dev(), dtypes::float32, 2e-4);
  check_logits({.arch = "llama", .type = "Q4_0"}, dev(), dtypes::float16, 5e-3);
}

TEST_P(LlmTest, Qwen2AndQwen3LogitsMatchAFloat64Forward) {
  check_logits({.arch = "qwen2", .type = "F16", .tied = true}, dev(), dtypes::float32, 2e-4);
  check_logits({.arch = "qwen3", .type = "Q8_0"}, dev(), dtypes::float32, 2e-4);
}

TEST_P(LlmTest, KQuantLogitsMatchAFloat64Forward) {
  check_logits({.arch = "llama", .type = "Q4_K", .d = 256, .ff = 256, .layers = 1}, dev(),
               dtypes::float32, 2e-4);
}

TEST_P(LlmTest, DecodingThroughTheCacheMatchesOneForward) {
  const Spec s{.arch = "qwen3", .type = "Q8_0"};
  const std::string path = model_path(s, "decode_" + dev());
  write_model(s, path);
  llm::Model m = llm::load(path, dev(), {.context = 0, .cache_dtype = dtypes::float32});
  const Vec whole = as_doubles(m.forward(kPrompt, 0));
  // Prefill three, then one token at a time; then rewind to position 2 and go on from there.
  Vec steps = as_doubles(m.forward({kPrompt.begin(), kPrompt.begin() + 3}, 0));
  for (size_t t = 3; t < kPrompt.size(); ++t) {
    const Vec row = as_doubles(m.forward({kPrompt[t]}, static_cast<int64_t>(t)));
    steps.insert(steps.end(), row.begin(), row.end());
  }
  EXPECT_EQ(m.cached(), static_cast<int64_t>(kPrompt.size()));
  expect_near(steps, whole, 1e-4, 1e-4, "token by token");
  const Vec again = as_doubles(m.forward({kPrompt[2], kPrompt[3]}, 2));
  expect_near(again, Vec(whole.begin() + 2 * s.vocab, whole.begin() + 4 * s.vocab), 1e-4, 1e-4,
              "after rewinding to position 2");
  std::filesystem::remove(path);
}

TEST_P(LlmTest, SteadyDecodeIsOneReplayPerToken) {
  const Spec s{.arch = "llama", .type = "Q4_0"};
  const std::string path = model_path(s, "replay_" + dev());
  write_model(s, path);
  llm::Model m = llm::load(path, dev());
  const Vec whole = as_doubles(m.forward(kPrompt, 0));
  m.forward_last({kPrompt.begin(), kPrompt.begin() + 2}, 0);
  for (size_t t = 2; t < kPrompt.size(); ++t) {
    SCOPED_TRACE(t);
    if (t >= 4) reset_runtime_stats();
    const Tensor logits = m.forward_last({kPrompt[t]}, static_cast<int64_t>(t));
    if (t >= 4) {  // the first two decode calls run plainly and capture
      const RuntimeStats st = runtime_stats();
      EXPECT_EQ(st.schedules_built, 0);
      EXPECT_EQ(st.programs_compiled, 0);
      EXPECT_EQ(st.graph_replays, 1);
      EXPECT_EQ(st.realizes, 0);
    }
    EXPECT_EQ(logits.shape(), (Shape{1, s.vocab}));
    expect_near(as_doubles(logits),
                Vec(whole.begin() + static_cast<std::ptrdiff_t>(t * s.vocab),
                    whole.begin() + static_cast<std::ptrdiff_t>((t + 1) * s.vocab)),
                2e-3, 2e-3, "the step's logits");
  }
  std::filesystem::remove(path);
}

VKGRAD_ALL_DEVICES(LlmTest);

TEST(LlmErrors, BadCallsAndFilesAreNamedErrors) {
  const Spec s;
  const std::string path = model_path(s, "errors");
  write_model(s, path);
  llm::Model m = llm::load(path, "CPU");
  expect_error<Error>([&] { m.forward({1, 2}, 1); }, {"position 1", "0 positions"});
  expect_error<Error>([&] { m.forward({1, 96}, 0); }, {"token id 96"});
  expect_error<Error>([&] { m.forward(std::vector<int32_t>(65, 3), 0); }, {"context of 64"});
  m.forward({1, 2}, 0);
  EXPECT_EQ(m.cached(), 2);
  m.reset();
  EXPECT_EQ(m.cached(), 0);
  // Another architecture, a missing tensor, a wrong shape.
  gguf::File f = gguf::open(path);
  std::map<std::string, gguf::Value> meta = f.metadata();
  std::vector<gguf::SaveTensor> tensors;
  for (const gguf::TensorInfo& t : f.tensors())
    tensors.push_back({t.name, f.tensor(t.name, "CPU"), t.type});
  const std::string bad = model_path(s, "bad");
  meta["general.architecture"] = gguf::Value("mamba");
  gguf::save(bad, meta, {});
  expect_error<Error>([&] { llm::load(bad, "CPU"); }, {"mamba", "not supported"});
  meta = f.metadata();
  std::vector<gguf::SaveTensor> missing;
  for (const auto& t : tensors)
    if (t.name != "blk.1.ffn_up.weight") missing.push_back(t);
  gguf::save(bad, meta, missing);
  expect_error<Error>([&] { llm::load(bad, "CPU"); }, {"blk.1.ffn_up.weight"});
  std::vector<gguf::SaveTensor> wrong = tensors;
  for (auto& t : wrong)
    if (t.name == "blk.0.attn_k.weight") t.value = random_tensor({64, 64}, 1, 0.1);
  gguf::save(bad, meta, wrong);
  expect_error<Error>([&] { llm::load(bad, "CPU"); },
                      {"blk.0.attn_k.weight", "(64, 64)", "(32, 64)"});
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

TEST(LlmSampling, GreedyTopKAndTopPStayInTheirSets) {
  std::vector<float> v = {0.1f, 2.0f, -1.0f, 1.5f, 0.3f, 1.9f};
  const Tensor logits = Tensor::from_vector<float>(v, {6}, {}, "CPU");
  uint64_t rng = 0;
  EXPECT_EQ(llm::sample(logits, {}, rng), 1);
  std::set<int32_t> seen;
  for (int i = 0; i < 200; ++i)
    seen.insert(llm::sample(logits, {.temperature = 1.0f, .top_k = 3}, rng));
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 5}));
  // top_p 0.5: 2.0 and 1.9 hold e^2 + e^1.9 of the total, more than half on their own.
  seen.clear();
  for (int i = 0; i < 200; ++i)
    seen.insert(llm::sample(logits, {.temperature = 1.0f, .top_p = 0.5f}, rng));
  EXPECT_EQ(seen, (std::set<int32_t>{1, 5}));
  // The same seed draws the same tokens.
  std::vector<int32_t> a, b;
  for (uint64_t r = 7, q = 7; a.size() < 20;) {
    a.push_back(llm::sample(logits, {.temperature = 2.0f, .seed = 7}, r));
    b.push_back(llm::sample(logits, {.temperature = 2.0f, .seed = 7}, q));
  }
  EXPECT_EQ(a, b);
  expect_error<Error>([&] { llm::sample(logits, {.temperature = -1.0f}, rng); }, {"temperature"});
}

TEST(LlmGenerate, GreedyGenerationRepeatsAndStopsWhenAsked) {
  const Spec s;
  const std::string path = model_path(s, "generate");
  write_model(s, path);
  llm::Model m = llm::load(path, "CPU");
  int calls = 0;
  const std::vector<int32_t> a = m.generate(kPrompt, {.max_tokens = 5}, [&](int32_t) {
    ++calls;
    return true;
  });
  EXPECT_LE(a.size(), 5u);
  EXPECT_EQ(calls, static_cast<int>(a.size()));
  EXPECT_EQ(m.generate(kPrompt, {.max_tokens = 5}), a);
  const std::vector<int32_t> one =
      m.generate(kPrompt, {.max_tokens = 5}, [](int32_t) { return false; });
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], a[0]);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace vkgrad::testing
