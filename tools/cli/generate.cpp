// tools/cli: `vkgrad generate` (see generate.hpp).
#include "cli/generate.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vkgrad/vkgrad.hpp>

#include "cli/options.hpp"

namespace vkgrad {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct GenerateOptions {
  std::string path, prompt, device;
  llm::Sampling sampling;
  int64_t context = 0;
};

// Parses the arguments; returns an exit status where they are wrong.
std::optional<int> parse(const std::vector<std::string_view>& args, GenerateOptions& o) {
  o.sampling.max_tokens = 128;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(fmt::format("generate: {} needs a value", a));
      return std::string(args[++i]);
    };
    if (a == "-p" || a == "--prompt") {
      o.prompt = value();
    } else if (a == "-n") {
      o.sampling.max_tokens = std::stoi(value());
    } else if (a == "--device") {
      o.device = value();
    } else if (a == "--temp") {
      o.sampling.temperature = std::stof(value());
    } else if (a == "--top-k") {
      o.sampling.top_k = std::stoi(value());
    } else if (a == "--top-p") {
      o.sampling.top_p = std::stof(value());
    } else if (a == "--seed") {
      o.sampling.seed = std::stoull(value());
    } else if (a == "--ctx") {
      o.context = std::stoll(value());
    } else if (!a.empty() && a[0] != '-' && o.path.empty()) {
      o.path = std::string(a);
    } else {
      return usage_error(fmt::format("generate: unexpected argument '{}'", a));
    }
  }
  if (o.path.empty())
    return usage_error("generate: expected a model file (vkgrad generate model.gguf -p TEXT)");
  return std::nullopt;
}

}  // namespace

int generate_command(const std::vector<std::string_view>& args) {
  GenerateOptions o;
  try {
    if (std::optional<int> status = parse(args, o)) return *status;
  } catch (const std::logic_error&) {  // std::stoi and friends on a value that is no number
    return usage_error("generate: a numeric option has a value that is no number");
  }
  const Clock::time_point start = Clock::now();
  llm::Model model = llm::load(o.path, o.device, {.context = o.context});
  const double load_s = seconds_since(start);
  const llm::Tokenizer& tok = model.tokenizer();
  const std::vector<int32_t> prompt = tok.encode(o.prompt, true);
  if (prompt.empty()) throw Error("generate: the prompt encodes to no tokens");
  fmt::print("{}", o.prompt);
  std::fflush(stdout);
  const Clock::time_point run = Clock::now();
  Clock::time_point first{};
  int64_t produced = 0;
  model.generate(prompt, o.sampling, [&](int32_t id) {
    if (produced++ == 0) first = Clock::now();
    if (!tok.is_end(id)) fmt::print("{}", tok.token_text(id));
    std::fflush(stdout);
    return true;
  });
  const double total_s = seconds_since(run);
  const double first_s = produced > 0 ? std::chrono::duration<double>(first - run).count() : 0;
  fmt::print("\n\n{}: {} ({} layers, width {}, vocabulary {}, context {})\n", o.path,
             model.architecture(), model.hyperparameters().layers,
             model.hyperparameters().embedding, model.vocab_size(), model.context());
  fmt::print("load {:.3f} s, time to first token {:.3f} s\n", load_s, first_s);
  fmt::print("prefill {} tokens: {:.1f} tok/s\n", prompt.size(),
             first_s > 0 ? static_cast<double>(prompt.size()) / first_s : 0.0);
  if (produced > 1)
    fmt::print("decode {} tokens: {:.2f} tok/s\n", produced - 1,
               static_cast<double>(produced - 1) / (total_s - first_s));
  return 0;
}

}  // namespace vkgrad
