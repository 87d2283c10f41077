// tools/cli: the `vkgrad` command-line tool. `vkgrad demo` builds a few index expressions,
// simplifies them and prints them before and after (ir only); `vkgrad info` prints the devices,
// their capabilities and the host CPU; `vkgrad bench` runs the standard benchmark suite
// (bench/suite.hpp) and can write its results as JSON; `vkgrad run` runs an ONNX model (run.cpp).
// `vkgrad cold-start-child` is not in the usage: the bench's cold_start_ms case runs it as a child
// process.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <vkgrad/vkgrad.hpp>

#include "bench/harness.hpp"
#include "bench/suite.hpp"
#include "cli/generate.hpp"
#include "cli/make_model.hpp"
#include "cli/options.hpp"
#include "cli/run.hpp"
#include "cli/tune.hpp"
#include "engine/beam.hpp"
#include "ir/interp.hpp"
#include "ir/print.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/uop.hpp"

namespace vkgrad {
namespace {

// `words` joined with ", ", broken into lines of at most `width` characters that start with
// `indent`.
std::string wrapped(const std::vector<std::string>& words, const std::string& indent,
                    size_t width) {
  std::string out, line = indent;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i] + (i + 1 < words.size() ? "," : "");
    if (line.size() > indent.size() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = indent;
    }
    line += (line.size() > indent.size() ? " " : "") + word;
  }
  return out + line + "\n";
}

struct DemoCase {
  std::string title;
  UOp expr;
  UOp expected;  // the form it should simplify to
};

// The variables of an expression, for sampling it with the reference interpreter.
struct Leaf {
  UOp u;
  int64_t lo, hi;
};

std::vector<Leaf> leaves(const UOp& u) {
  std::vector<Leaf> out;
  for (const UOp& n : toposort(u)) {
    if (n.op() == Ops::DEFINE_VAR)
      out.push_back({n, n.arg_as<VarArg>().min, n.arg_as<VarArg>().max});
    else if (n.op() == Ops::RANGE)
      out.push_back({n, 0, n.src(0).vmax() - 1});
  }
  return out;
}

// Compares `a` and `b` at the corners of the variables' ranges and at pseudo-random points;
// returns the number of points checked, or -1 at the first point where they differ.
int check_same_values(const UOp& a, const UOp& b) {
  std::vector<Leaf> vars = leaves(a);
  uint64_t state = 0x243f6a8885a308d3ull;
  constexpr int kPoints = 200;
  for (int p = 0; p < kPoints; ++p) {
    InterpEnv env;
    for (size_t i = 0; i < vars.size(); ++i) {
      const Leaf& v = vars[i];
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t span = static_cast<uint64_t>(v.hi - v.lo) + 1;
      int64_t value = v.lo + static_cast<int64_t>((state >> 17) % span);
      if (p < 2) value = p == 0 ? v.lo : v.hi;  // both corners first
      if (v.u.op() == Ops::DEFINE_VAR)
        env.vars[v.u.arg_as<VarArg>().name] = value;
      else
        env.ranges[v.u.arg_as<AxisArg>().id] = value;
    }
    if (evaluate(a, env) != evaluate(b, env)) return -1;
  }
  return kPoints;
}

int demo() {
  UOp r0 = UOp::range(1024, 0), r1 = UOp::range(768, 1);
  UOp flat = r0 * 768 + r1;
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 100);

  std::vector<DemoCase> cases = {
      {"row of a flattened (1024, 768) view", flat / 768, r0},
      {"column of a flattened (1024, 768) view", flat % 768, r1},
      {"a sum of multiples of 2, divided by 2 (x, y >= 0)", (x * 4 + y * 2 + 6) / 2, x * 2 + y + 3},
      {"a where whose condition the bounds decide (x <= 100)", x.lt(200).where(x + 1, y), x + 1},
      {"a sum with like terms", x + y + x * 3 - y + 2, x * 4 + 2},
  };

  bool sound = true;
  UOp shown;
  for (const DemoCase& c : cases) {
    UOp s = simplify(c.expr);
    bool as_expected = s == c.expected || s == simplify(c.expected);
    int checked = check_same_values(c.expr, s);
    sound &= checked >= 0;
    fmt::print("{}\n", c.title);
    fmt::print("  before:     {}   ({} nodes)\n", render(c.expr), toposort(c.expr).size());
    fmt::print("  simplified: {}   ({} nodes)\n", render(s), toposort(s).size());
    if (!as_expected) fmt::print("  expected:   {}   (not reached yet)\n", render(c.expected));
    if (checked >= 0)
      fmt::print("  same value at {} sampled points\n\n", checked);
    else
      fmt::print("  WRONG: the simplified form gives a different value\n\n");
    if (c.expr.op() == Ops::IDIV) shown = s;
  }

  fmt::print("the simplified {} as a graph:\n{}\n", render(shown), to_string(shown));
  return sound ? 0 : 1;
}

// ---- info -------------------------------------------------------------------------------------

int info() {
  fmt::print("vkgrad {}\n\n", VKGRAD_VERSION);
  std::vector<std::string> devs = devices();
  fmt::print("devices (best first): {}\n",
             devs.empty() ? "none" : fmt::format("{}", fmt::join(devs, ", ")));
  fmt::print("default device: {}\n\n", default_device());
  std::string text = device_info();
  if (!text.empty() && text.back() != '\n') text += '\n';
  fmt::print("{}\n", text);

  bench::CpuInfo cpu = bench::read_cpu_info();
  fmt::print("host CPU (/proc/cpuinfo)\n");
  fmt::print("  model:   {}\n", cpu.model);
  fmt::print("  cores:   {} logical CPUs{}\n", cpu.logical,
             cpu.physical > 0 ? fmt::format(", {} physical cores", cpu.physical) : std::string());
  fmt::print("  AVX-512: {}{}\n", cpu.avx512 ? "yes" : "no",
             cpu.avx512_flags.empty() ? std::string()
                                      : fmt::format(" ({})", fmt::join(cpu.avx512_flags, " ")));
  fmt::print("  vkgrad CPU backend threads: {}\n", bench::cpu_backend_threads());
  return 0;
}

// ---- bench ------------------------------------------------------------------------------------

// The heuristics' and BEAM's runs of a case alternate, kBeamRounds of each, so that a machine's
// load drifting over minutes (a shared machine's same binary ran ResNet-50 in 138 to 237 ms
// within a quarter of an hour) weighs on both alike; the speed-up is the median of the rounds'
// ratios.
constexpr int kBeamRounds = 5;

struct BeamPair {
  std::string name, unit;
  std::vector<double> heuristic, tuned, ratio;
};

// The selected cases with the heuristics' kernels and with BEAM-tuned ones, alternately, then a
// table of their medians side by side. Returns the tuned runs' results (the last round's figures;
// ok where every run of the case was).
std::vector<bench::CaseResult> run_beam_pairs(const bench::Options& options, int width) {
  std::vector<std::string> names = options.only.empty() ? bench::case_names() : options.only;
  std::vector<bench::CaseResult> results;
  std::vector<BeamPair> pairs;
  bench::Options one = options;
  fmt::print(
      "each case {} times with the heuristics' kernels (the BEAM cache not read) and with "
      "BEAM={} (kernels in the BEAM cache are not searched again), alternately\n",
      kBeamRounds, width);
  for (const std::string& name : names) {
    one.only = {name};
    BeamPair pair;
    pair.name = name;
    std::optional<bench::CaseResult> last;
    for (int round = 0; round < kBeamRounds; ++round) {
      std::vector<bench::CaseResult> h, t;
      {
        Beam none({.width = 0, .use_cache = false});
        h = bench::run_suite(one);
        one.header = false;
      }
      {
        Beam beam({.width = width});
        t = bench::run_suite(one);
      }
      if (h.empty() || t.empty()) break;  // a case this device skips
      const bool ok = h[0].ok && t[0].ok && (!last || last->ok);
      last = t[0];
      last->ok = ok;  // every run of the case verified
      if (!h[0].value || !t[0].value) continue;
      // Higher is better for rates, lower for times.
      const bool time = h[0].unit == "ms" || h[0].unit == "us";
      pair.unit = h[0].unit;
      pair.heuristic.push_back(*h[0].value);
      pair.tuned.push_back(*t[0].value);
      pair.ratio.push_back(time ? *h[0].value / *t[0].value : *t[0].value / *h[0].value);
    }
    if (last) results.push_back(*last);
    if (!pair.ratio.empty()) pairs.push_back(std::move(pair));
  }
  fmt::print("\n{:<26} {:>16} {:>16} {:>9}  {}\n", "case", "heuristics",
             fmt::format("BEAM={}", width), "speed-up", "each round");
  for (const BeamPair& p : pairs) {
    std::string rounds;
    for (const double r : p.ratio) rounds += fmt::format(" {:.2f}x", r);
    fmt::print("{:<26} {:>9.3g} {:<6} {:>9.3g} {:<6} {:>8.2f}x {}\n", p.name,
               bench::median(p.heuristic), p.unit, bench::median(p.tuned), p.unit,
               bench::median(p.ratio), rounds);
  }
  return results;
}

int bench_command(const std::vector<std::string_view>& args) {
  CliOptions options;
  if (std::optional<int> status = parse_options("bench", args, options)) return *status;
  const std::string& json_path = options.json_path;
  // Open the JSON file first, so a bad path fails before minutes of benchmarking.
  std::ofstream json;
  if (!json_path.empty()) {
    json.open(json_path, std::ios::out | std::ios::trunc);
    if (!json) {
      fmt::print(stderr, "vkgrad bench: cannot write {}\n", json_path);
      return 1;
    }
  }
  std::vector<bench::CaseResult> results;
  if (options.beam > 0) {
    results = run_beam_pairs(options.bench, options.beam);
  } else {
    results = bench::run_suite(options.bench);
  }
  bool all_ok =
      std::all_of(results.begin(), results.end(), [](const bench::CaseResult& r) { return r.ok; });
  if (json.is_open()) {
    json << bench::results_json(results);
    json.close();
    if (!json) {
      fmt::print(stderr, "vkgrad bench: writing {} failed\n", json_path);
      return 1;
    }
    fmt::print("\nwrote {}\n", json_path);
  }
  if (!all_ok) fmt::print("\nvkgrad bench: some cases failed (FAIL or ERROR above)\n");
  return all_ok ? 0 : 1;
}

// `cold-start-child --device D`: run by the cold_start_ms case; main_start is when main() began.
int cold_start_child(const std::vector<std::string_view>& args,
                     std::chrono::steady_clock::time_point main_start) {
  if (args.size() != 2 || args[0] != "--device")
    return usage_error("cold-start-child: expected --device D");
  return bench::cold_start_child(upper(std::string(args[1])), main_start);
}

}  // namespace

void print_usage(std::FILE* to) {
  fmt::print(to,
             "usage: vkgrad <command> [options]\n"
             "\n"
             "commands:\n"
             "  demo    simplify a few index expressions and print them before and after\n"
             "  info    list the devices and their capabilities, and the host CPU\n"
             "  bench   run the standard benchmark suite and print a table\n"
             "  tune    run cases once with BEAM search on, filling the BEAM cache, and print\n"
             "          each searched kernel's default and tuned time\n"
             "  run     run an ONNX model: vkgrad run model.onnx [--device D]\n"
             "          [--input name=file.pb ...] [--runs N] (random inputs where none is\n"
             "          given, dynamic dimensions 1); prints its inputs and outputs, a summary\n"
             "          of each output, the first-call and median times, kernels per call\n"
             "  generate  run a GGUF language model: vkgrad generate model.gguf -p TEXT [-n N]\n"
             "          [--device D] [--temp T] [--top-k K] [--top-p P] [--seed S] [--ctx N];\n"
             "          streams the text, then the load time, time to first token and rates\n"
             "  make-model  write a Llama-family GGUF file of random weights: vkgrad make-model\n"
             "          F [--arch llama|qwen2|qwen3] [--type Q4_0|Q8_0|F16|...]\n"
             "          [--shape tiny|tinyllama|7b]\n"
             "\n"
             "bench and tune options:\n"
             "  --device D        run on device D (CPU, VULKAN, VULKAN:1, ...; default: the\n"
             "                    default device)\n"
             "  --json F          also write the results to F as JSON (bench)\n"
             "  --beam N          search kernels with a beam of N (tune: default 2; bench:\n"
             "                    the heuristics' and the tuned figures side by side, 5\n"
             "                    alternating runs of each case)\n"
             "  --seconds S       tune: search for at most S seconds of wall time (the search\n"
             "                    under way ends with its best list so far; kernels met later\n"
             "                    keep their cached lists or the heuristics')\n"
             "  --export F        tune: write the BEAM cache's lists (after tuning, where cases\n"
             "                    are named) to F, a tuning table in the cache's own format\n"
             "  --import F        tune: read a tuning table into the BEAM cache (before\n"
             "                    tuning, where cases are named)\n"
             "  --only A,B,...    run only these cases (comma-separated):\n"
             "{}"
             "\n"
             "  -h, --help  print this message\n",
             wrapped(bench::case_names(), "                      ", 80));
}

}  // namespace vkgrad

int main(int argc, char** argv) {
  // First thing: cold-start-child reports its time from here.
  const auto main_start = std::chrono::steady_clock::now();
  if (argc < 2) {
    vkgrad::print_usage(stdout);
    return 0;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    vkgrad::print_usage(stdout);
    return 0;
  }
  std::vector<std::string_view> args(argv + 2, argv + argc);
  try {
    if (cmd == "demo" || cmd == "info") {
      if (!args.empty())
        return vkgrad::usage_error(fmt::format("{}: unexpected argument '{}'", cmd, args[0]));
      return cmd == "demo" ? vkgrad::demo() : vkgrad::info();
    }
    if (cmd == "bench") return vkgrad::bench_command(args);
    if (cmd == "tune") return vkgrad::tune_command(args);
    if (cmd == "run") return vkgrad::run_command(args);
    if (cmd == "generate") return vkgrad::generate_command(args);
    if (cmd == "make-model") return vkgrad::make_model_command(args);
    if (cmd == "cold-start-child") return vkgrad::cold_start_child(args, main_start);
  } catch (const vkgrad::Error& e) {
    fmt::print(stderr, "vkgrad {}: {}\n", cmd, e.what());
    return 1;
  }
  fmt::print(stderr, "vkgrad: unknown command '{}'\n\n", cmd);
  vkgrad::print_usage(stderr);
  return 2;
}
