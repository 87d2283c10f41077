// tools/cli: `vkgrad make-model` (see make_model.hpp). The vocabulary is SentencePiece-shaped:
// <unk>, <s>, </s>, the 256 byte tokens, then "▁t<i>" pieces; weights are uniform with a
// 1/sqrt(width) scale, norms near 1, so the model's activations stay finite at any depth.
#include "cli/make_model.hpp"

#include <fmt/format.h>

#include <map>
#include <string>
#include <vkgrad/vkgrad.hpp>

#include "cli/options.hpp"

namespace vkgrad {
namespace {

struct Shape7 {
  int64_t layers, d, heads, kv_heads, ff, vocab;
};

Shape7 shape_named(std::string_view name) {
  if (name == "tiny") return {2, 256, 8, 4, 512, 512};
  if (name == "tinyllama") return {22, 2048, 32, 4, 5632, 32000};
  if (name == "7b") return {32, 4096, 32, 32, 11008, 32000};
  throw Error(fmt::format("make-model: unknown shape {} (tiny, tinyllama, 7b)", name));
}

std::map<std::string, gguf::Value> vocabulary(int64_t n) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256 && static_cast<int64_t>(tokens.size()) < n; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    scores.push_back(0);
    types.push_back(6);
  }
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < n; ++i) {
    tokens.push_back(fmt::format("\xE2\x96\x81t{}", i));
    scores.push_back(-static_cast<float>(i));
    types.push_back(1);
  }
  return {{"tokenizer.ggml.model", gguf::Value("llama")},
          {"tokenizer.ggml.tokens", gguf::Value::array(tokens)},
          {"tokenizer.ggml.scores", gguf::Value::array(std::span<const float>(scores))},
          {"tokenizer.ggml.token_type", gguf::Value::array(std::span<const int32_t>(types))},
          {"tokenizer.ggml.bos_token_id", gguf::Value(uint32_t{1})},
          {"tokenizer.ggml.eos_token_id", gguf::Value(uint32_t{2})},
          {"tokenizer.ggml.unknown_token_id", gguf::Value(uint32_t{0})}};
}

}  // namespace

int make_model_command(const std::vector<std::string_view>& args) {
  std::string path, arch = "llama", type = "Q4_0", shape_name = "tiny";
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(fmt::format("make-model: {} needs a value", args[i]));
      return std::string(args[++i]);
    };
    if (args[i] == "--arch")
      arch = value();
    else if (args[i] == "--type")
      type = value();
    else if (args[i] == "--shape")
      shape_name = value();
    else if (path.empty() && !args[i].starts_with("-"))
      path = std::string(args[i]);
    else
      return usage_error(fmt::format("make-model: unexpected argument '{}'", args[i]));
  }
  if (path.empty()) return usage_error("make-model: expected the file to write");
  const size_t tensors = write_random_model(path, arch, type, shape_name);
  fmt::print("wrote {}: {} {} {} ({} tensors)\n", path, arch, shape_name, type, tensors);
  return 0;
}

size_t write_random_model(const std::string& path, const std::string& arch, const std::string& type,
                          const std::string& shape_name) {
  gguf::format(type);
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3")
    throw Error(fmt::format("make-model: unknown architecture {} (llama, qwen2, qwen3)", arch));
  const Shape7 s = shape_named(shape_name);
  const int64_t hd = s.d / s.heads;
  std::map<std::string, gguf::Value> meta = vocabulary(s.vocab);
  const std::string a = arch + ".";
  meta["general.architecture"] = gguf::Value(arch);
  meta["general.name"] = gguf::Value(fmt::format("vkgrad random {} {}", shape_name, type));
  meta[a + "block_count"] = gguf::Value(static_cast<uint32_t>(s.layers));
  meta[a + "embedding_length"] = gguf::Value(static_cast<uint32_t>(s.d));
  meta[a + "feed_forward_length"] = gguf::Value(static_cast<uint32_t>(s.ff));
  meta[a + "attention.head_count"] = gguf::Value(static_cast<uint32_t>(s.heads));
  meta[a + "attention.head_count_kv"] = gguf::Value(static_cast<uint32_t>(s.kv_heads));
  meta[a + "attention.layer_norm_rms_epsilon"] = gguf::Value(1e-5f);
  meta[a + "rope.freq_base"] = gguf::Value(10000.0f);
  meta[a + "rope.dimension_count"] = gguf::Value(static_cast<uint32_t>(hd));
  meta[a + "context_length"] = gguf::Value(uint32_t{2048});
  meta[a + "vocab_size"] = gguf::Value(static_cast<uint32_t>(s.vocab));
  std::vector<gguf::SaveTensor> t;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(cols));
    t.push_back({name, Tensor::uniform({rows, cols}, -scale, scale, {}, "CPU"), type});
  };
  auto norm = [&](const std::string& name, int64_t n) {
    t.push_back({name, Tensor::uniform({n}, 0.9, 1.1, {}, "CPU"), "F32"});
  };
  Tensor::manual_seed(1);
  matrix("token_embd.weight", s.vocab, s.d);
  norm("output_norm.weight", s.d);
  matrix("output.weight", s.vocab, s.d);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    norm(p + "attn_norm.weight", s.d);
    matrix(p + "attn_q.weight", s.heads * hd, s.d);
    matrix(p + "attn_k.weight", s.kv_heads * hd, s.d);
    matrix(p + "attn_v.weight", s.kv_heads * hd, s.d);
    matrix(p + "attn_output.weight", s.d, s.heads * hd);
    if (arch == "qwen2")
      for (const char* b : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
        t.push_back({p + b,
                     Tensor::zeros({(std::string(b) == "attn_q.bias" ? s.heads : s.kv_heads) * hd}),
                     "F32"});
    if (arch == "qwen3") norm(p + "attn_q_norm.weight", hd), norm(p + "attn_k_norm.weight", hd);
    norm(p + "ffn_norm.weight", s.d);
    matrix(p + "ffn_gate.weight", s.ff, s.d);
    matrix(p + "ffn_up.weight", s.ff, s.d);
    matrix(p + "ffn_down.weight", s.d, s.ff);
  }
  gguf::save(path, meta, t);
  return t.size();
}

}  // namespace vkgrad
