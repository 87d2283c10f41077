// bench: the LLM cases — llm_decode (tg: tokens generated one at a time, greedy) and llm_prefill
// (pp128: one prompt of 128 tokens) on a TinyLlama-1.1B-shaped Llama with random weights, in
// Q4_0 and Q8_0. The file is written once, by make-model's code, into
// $VKGRAD_CACHE_DIR/models. The reference is the weights' bytes read once by a C loop on as
// many threads as vkgrad uses: the rate decoding would reach if it only streamed the weights.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vkgrad/vkgrad.hpp>

#include "bench/harness.hpp"
#include "bench/reference.h"
#include "cli/make_model.hpp"
#include "cpu/compiler.hpp"

namespace vkgrad::bench {
namespace {

constexpr int64_t kPrompt = 16;       // the decode cases' prompt
constexpr int64_t kPrefill = 128;     // pp128
constexpr int64_t kDecodeCpu = 32;    // tg32
constexpr int64_t kDecodeVulkan = 8;  // tg8 on Vulkan (lavapipe runs at a few tokens a second)

// The model file of `type`, written on first use.
std::string model_file(const std::string& type) {
  const std::filesystem::path dir = std::filesystem::path(cpu::Compiler::cache_dir()) / "models";
  const std::filesystem::path path = dir / fmt::format("llama-tinyllama-{}.gguf", type);
  if (!std::filesystem::exists(path)) {
    std::filesystem::create_directories(dir);
    const std::filesystem::path partial = path.string() + ".partial";
    write_random_model(partial.string(), "llama", type, "tinyllama");
    std::filesystem::rename(partial, path);
  }
  return path.string();
}

// The bytes of the tensors the model keeps on the device: every weight but the token
// embeddings, which are read row by row from the mapped file.
std::vector<std::span<const uint8_t>> weights_on_device(const gguf::File& f) {
  std::vector<std::span<const uint8_t>> parts;
  for (const gguf::TensorInfo& t : f.tensors())
    if (t.name != "token_embd.weight") parts.push_back(f.data(t.name));
  return parts;
}

int64_t weight_bytes(const gguf::File& f) {
  int64_t n = 0;
  for (std::span<const uint8_t> p : weights_on_device(f)) n += static_cast<int64_t>(p.size());
  return n;
}

// Milliseconds to read the weights' bytes once: vkgrad_ref_sum over them on `threads` threads.
double stream_ms(const gguf::File& f, int threads) {
  const std::vector<std::span<const uint8_t>> parts = weights_on_device(f);
  auto once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<float> sums(static_cast<size_t>(threads));
    for (int k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        for (size_t i = static_cast<size_t>(k); i < parts.size(); i += static_cast<size_t>(threads))
          sums[static_cast<size_t>(k)] +=
              vkgrad_ref_sum(reinterpret_cast<const float*>(parts[i].data()),
                             static_cast<int64_t>(parts[i].size() / sizeof(float)));
      });
    for (std::thread& t : pool) t.join();
    return ms_since(t0);
  };
  once();  // pages in
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) ms.push_back(once());
  return median(ms);
}

std::vector<int32_t> prompt_tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(static_cast<int32_t>(259 + (i * 977) % (vocab - 259)));
  return out;
}

}  // namespace

Row llm_case(Suite& s, const std::string& type, bool prefill) {
  const std::string name = fmt::format("llm_{}_{}", prefill ? "prefill" : "decode", type);
  Row row = s.row(name, "tok/s");
  std::string type_name = type;
  std::transform(type_name.begin(), type_name.end(), type_name.begin(), ::toupper);
  const std::string path = model_file(type_name);
  const RuntimeStats before_load = runtime_stats();
  auto t0 = std::chrono::steady_clock::now();
  llm::Model model = llm::load(path, s.device);
  const double load_ms = ms_since(t0);
  const int64_t resident = runtime_stats().device_bytes - before_load.device_bytes;
  const gguf::File file = gguf::open(path);
  const int64_t weights = weight_bytes(file);
  const llm::Hyperparameters& h = model.hyperparameters();
  const int64_t cache_bytes = 2 * h.layers * model.context() * h.kv_heads * h.head_dim * 2;

  const int64_t steps = prefill ? kPrefill : (s.gpu ? kDecodeVulkan : kDecodeCpu);
  const std::vector<int32_t> prompt = prompt_tokens(prefill ? kPrefill : kPrompt, h.vocab);
  t0 = std::chrono::steady_clock::now();
  model.forward_last(prompt, 0);
  int32_t next = model.greedy_token();
  const double first_ms = ms_since(t0);
  reset_runtime_stats();
  std::vector<Sample> runs = measure([&] {
    return time_with_stats([&] {
      if (prefill) {
        model.forward_last(prompt, 0);
        next = model.greedy_token();
        return;
      }
      for (int64_t t = 0; t < steps; ++t) {
        model.forward_last({next}, kPrompt + t);
        next = model.greedy_token();
      }
    });
  });
  const RuntimeStats during = runtime_stats();
  set_ours(row, runs, static_cast<double>(steps));
  row.kernel_value.reset();
  const double read_ms = s.gpu ? 0 : stream_ms(file, s.threads);
  if (!prefill && read_ms > 0) {
    Sample read;
    read.ms = read_ms;
    set_reference(row, fmt::format("C read of the weights, {} threads", s.threads), {read}, 1.0);
  }
  row.details.push_back(
      fmt::format("{}: load {:.0f} ms; {} {:.0f} ms (compiles included where the cache was cold)",
                  std::filesystem::path(path).filename().string(), load_ms,
                  prefill ? "first prefill" : "prefill of 16 and the first token", first_ms));
  row.details.push_back(fmt::format(
      "resident tensor bytes after load {:.1f} MiB: the weights' {:.1f} MiB ({:.3f}x the file's, "
      "token embeddings read from the file) and the KV cache's {:.1f} MiB; peak while running "
      "{:.1f} MiB",
      resident / 1048576.0, (resident - cache_bytes) / 1048576.0,
      static_cast<double>(resident - cache_bytes) / static_cast<double>(weights),
      cache_bytes / 1048576.0, during.peak_device_bytes / 1048576.0));
  const double per_step = static_cast<double>(runs.size() + 1) * (prefill ? 1.0 : steps);
  row.details.push_back(
      fmt::format("per {}: {:.2f} schedules built, {:.2f} programs compiled, {:.2f} graph replays, "
                  "{:.2f} re-recorded, {:.1f} kernels",
                  prefill ? "prefill" : "token", during.schedules_built / per_step,
                  during.programs_compiled / per_step, during.graph_replays / per_step,
                  during.graph_rerecords / per_step, during.kernels_run / per_step));
  if (next < 0 || next >= h.vocab) row.fail("a sampled token is out of range");
  return row;
}

}  // namespace vkgrad::bench
