// tests/tensor: BEAM search on every device — the search on a small kernel finds a list whose
// output matches, a candidate with a wrong output is never chosen, BEAM=N in the environment
// (the BeamEnv suite, run by its own ctest with BEAM=2) searches each new kernel once, and the
// cache on disk serves later compiles and processes: two processes tuning at once leave one
// entry, a corrupt database is rebuilt, another device's or version's entries are ignored.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <vkgrad/vkgrad.hpp>

#include "codegen/pipeline.hpp"
#include "engine/beam.hpp"
#include "engine/beam_cache.hpp"
#include "engine/internal.hpp"
#include "harness.hpp"
#include "ir/print.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::testing {
namespace {

struct Kernel {
  UOp ast;
  std::vector<size_t> bytes;
};
// The only kernel of `t`'s schedule and its buffers' sizes.
Kernel kernel_of(const Tensor& t) {
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(t)});
  const Schedule s = build_schedule(g.key);
  EXPECT_EQ(s.kernels.size(), 1u);
  Kernel k{s.kernels.at(0).ast, {}};
  for (int b : s.kernels.at(0).buffers) {
    const ScheduleBuffer& sb = s.buffers.at(static_cast<size_t>(b));
    k.bytes.push_back(static_cast<size_t>(sb.count) * static_cast<size_t>(sb.dtype.itemsize()));
  }
  return k;
}

class BeamTest : public DeviceTest {};
VKGRAD_ALL_DEVICES(BeamTest);

TEST_P(BeamTest, FindsAListNoSlowerThanTheHeuristics) {
  const Tensor a = Tensor::empty({16, 24}, dtypes::float32, dev());
  const Tensor b = Tensor::empty({24, 16}, dtypes::float32, dev());
  const Kernel k = kernel_of(a.matmul(b));
  Runtime& rt = engine::runtime_of(dev());
  const auto start = std::chrono::steady_clock::now();
  const engine::BeamResult r = engine::beam_search(rt, k.ast, k.bytes, 2);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.searched);
  EXPECT_GT(r.tried, 10);
  EXPECT_LE(r.seconds, r.heuristic_seconds);
  // The search's time in its parts: each was spent, and together they fit in its wall time.
  EXPECT_GT(r.compile_seconds, 0);
  EXPECT_GT(r.check_seconds, 0);
  EXPECT_GT(r.timing_seconds, 0);
  EXPECT_LE(r.compile_seconds + r.check_seconds + r.timing_seconds, wall);
  // The winner renders and compiles (its output was compared with the heuristics' kernel).
  EXPECT_NO_THROW(rt.compile(codegen(k.ast, {.opts = r.opts}, rt.target())));
}

// A candidate's first run pays for its first use (lavapipe compiles the pipeline's code then; a
// CPU kernel's code and data are cold), far more than a small kernel takes: it checks the output
// and is not timed, so the time limit drops no candidate of a small kernel for it.
TEST_P(BeamTest, KeepsItsFastestListsAsVariants) {
  const Tensor a = Tensor::empty({16, 24}, dtypes::float32, dev());
  const Tensor b = Tensor::empty({24, 16}, dtypes::float32, dev());
  const Kernel k = kernel_of(a.matmul(b));
  const engine::BeamResult r = engine::beam_search(engine::runtime_of(dev()), k.ast, k.bytes, 2);
  ASSERT_GE(r.variants.size(), 2u);
  EXPECT_LE(r.variants.size(), 4u);
  EXPECT_EQ(r.variants[0].opts, r.heuristic);
  for (size_t i = 0; i < r.variants.size(); ++i) {
    EXPECT_TRUE(r.variants[i].kernel) << i;
    EXPECT_GT(r.variants[i].seconds, 0) << i;
    if (i > 0) {
      EXPECT_NE(r.variants[i].opts, r.heuristic) << i;
    }
    if (i > 1) {
      EXPECT_LE(r.variants[i - 1].seconds, r.variants[i].seconds) << i;
    }
  }
  // The winner is the heuristics' list or one of the variants.
  EXPECT_TRUE(std::any_of(r.variants.begin(), r.variants.end(),
                          [&](const engine::BeamVariant& v) { return v.opts == r.opts; }));
}

TEST_P(BeamTest, TheScheduleTimesEachVariantAmongItsKernels) {
  const Tensor a = make_tensor(random_values(16 * 24, -1, 1, 5), {16, 24}, dtypes::float32, dev());
  const Tensor b = make_tensor(random_values(24 * 16, -1, 1, 6), {24, 16}, dtypes::float32, dev());
  const NormalizedGraph g =
      normalize_graph(std::vector<UOp>{tensor::uop((a.matmul(b) + 1.0).exp().sum(1))});
  const Schedule s = build_schedule(g.key);
  ASSERT_GE(s.kernels.size(), 2u);
  Runtime& rt = engine::runtime_of(dev());
  std::vector<std::shared_ptr<CompiledKernel>> kernels;
  std::vector<std::vector<std::string>> vars(s.kernels.size());
  std::vector<engine::BeamResult> searches;
  for (const ScheduleKernel& k : s.kernels) {
    kernels.push_back(rt.compile(codegen(k.ast, {.optimize = true}, rt.target())));
    std::vector<size_t> bytes;
    for (int i : k.buffers) {
      const ScheduleBuffer& sb = s.buffers.at(static_cast<size_t>(i));
      bytes.push_back(static_cast<size_t>(sb.count) * sb.dtype.itemsize());
    }
    searches.push_back(engine::beam_search(rt, k.ast, bytes, 2));
  }
  std::vector<const std::vector<engine::BeamVariant>*> variants_of;
  for (const engine::BeamResult& r : searches) variants_of.push_back(&r.variants);
  std::vector<void*> inputs;
  for (const UOp& u : g.inputs) inputs.push_back(engine::storage_of(u).handle);
  const std::map<size_t, engine::ScheduleChoice> choices =
      engine::choose_in_schedule(rt, s, inputs, kernels, vars, variants_of);
  ASSERT_EQ(choices.size(), s.kernels.size());
  for (const auto& [k, c] : choices) {
    ASSERT_EQ(c.seconds.size(), searches.at(k).variants.size()) << k;
    for (double t : c.seconds) {
      EXPECT_GT(t, 0) << k;
      EXPECT_TRUE(std::isfinite(t)) << k;
    }
    ASSERT_LT(c.chosen, c.seconds.size());
    // Another list than the heuristics' only when it ran faster by the margins.
    if (c.chosen != 0) {
      EXPECT_LT(c.seconds[c.chosen], 0.98 * c.seconds[0] - 5e-6) << k;
    }
  }
}

TEST_P(BeamTest, ASmallKernelsCandidatesAreTimed) {
  const Kernel k = kernel_of(Tensor::empty({4096}, dtypes::float32, dev()) * 2.0);
  const engine::BeamResult r = engine::beam_search(engine::runtime_of(dev()), k.ast, k.bytes, 2);
  EXPECT_TRUE(r.searched);
  EXPECT_GT(r.timed, 0);
  EXPECT_LE(r.slow, r.timed) << r.tried << " tried, " << r.dropped << " dropped";
  EXPECT_EQ(r.timed + r.dropped, r.tried);
}

TEST_P(BeamTest, ACandidateWithAWrongOutputIsNeverChosen) {
  const Kernel k = kernel_of(Tensor::empty({8, 64}, dtypes::float32, dev()).sum(1));
  Runtime& rt = engine::runtime_of(dev());
  int corrupted = 0;
  engine::set_beam_output_hook([&](const std::vector<Opt>&, std::vector<uint8_t>& out) {
    out[3] ^= 0x40;  // every candidate's first value is wrong (its exponent)
    ++corrupted;
  });
  const engine::BeamResult r = engine::beam_search(rt, k.ast, k.bytes, 2);
  engine::set_beam_output_hook(nullptr);
  EXPECT_GT(corrupted, 0);
  EXPECT_EQ(r.opts, r.heuristic);  // only the heuristics' own kernel is left
  EXPECT_EQ(r.dropped, r.tried);
}

// The search's one-step extensions come from the target: what its registers, workgroups and
// shared memory allow on what a list leaves of each axis, and nothing apply_opts refuses.
std::vector<int64_t> amounts(const std::vector<Opt>& actions, OptOp op, int axis) {
  std::vector<int64_t> out;
  for (const Opt& a : actions)
    if (a.op == op && a.axis == axis) out.push_back(a.amount);
  return out;
}
bool has_op(const std::vector<Opt>& actions, OptOp op) {
  return std::any_of(actions.begin(), actions.end(), [&](const Opt& a) { return a.op == op; });
}
Target gpu_target(uint32_t subgroup, uint32_t invocations, uint32_t shared) {
  Target t;
  t.language = Target::Language::glsl;
  t.threads = t.local_memory = t.grid = true;
  t.subgroup_size = subgroup;
  t.max_workgroup_invocations = invocations;
  for (uint32_t& n : t.max_workgroup_size) n = invocations;
  t.max_workgroup_size[2] = 64;
  for (uint32_t& n : t.max_group_count) n = 65535;
  t.max_shared_bytes = shared;
  return t;
}

TEST(BeamActions, ComeFromTheTargetAndWhatTheListLeaves) {
  // A 3 x 3 convolution, 32 -> 64 channels over 56 x 56: globals (64, 56, 56), reduces
  // (32, 3, 3).
  const UOp conv = kernel_of(Tensor::empty({1, 32, 58, 58}, dtypes::float32, "CPU")
                                 .conv2d(Tensor::empty({64, 32, 3, 3}, dtypes::float32, "CPU")))
                       .ast;
  const Target nvidia = gpu_target(32, 1024, 49152);
  const std::vector<Opt> gpu = engine::beam_actions(conv, {}, nvidia);
  // Lanes along one axis: the divisors of 56 up to 16 (7 and 14 among them), powers of two and
  // multiples of the subgroup, up to four subgroups (64 channels; 56 is no multiple of 32).
  // Registers: divisors up to 8. No GEMM on a target that renders none.
  EXPECT_EQ(amounts(gpu, OptOp::LOCAL, 1), (std::vector<int64_t>{2, 4, 7, 8, 14}));
  EXPECT_EQ(amounts(gpu, OptOp::LOCAL, 0), (std::vector<int64_t>{2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(amounts(gpu, OptOp::UPCAST, 2), (std::vector<int64_t>{2, 4, 7, 8}));
  EXPECT_EQ(amounts(gpu, OptOp::UNROLL, 1), (std::vector<int64_t>{3}));
  EXPECT_EQ(amounts(gpu, OptOp::GROUP, 0), (std::vector<int64_t>{32, 64, 128, 256, 512, 1024}));
  EXPECT_FALSE(has_op(gpu, OptOp::GEMM));
  EXPECT_FALSE(has_op(gpu, OptOp::STAGE));  // staging needs a workgroup first
  // After 64 lanes over the channels: at most 16 more along another axis, STAGE beside them,
  // nothing on the channels' axis again, nothing that stands alone.
  const std::vector<Opt> lanes{{OptOp::LOCAL, 0, 64}};
  const std::vector<Opt> after = engine::beam_actions(conv, lanes, nvidia);
  EXPECT_EQ(amounts(after, OptOp::LOCAL, 1), (std::vector<int64_t>{2, 4, 7, 8, 14}));
  EXPECT_TRUE(amounts(after, OptOp::LOCAL, 0).empty());
  EXPECT_EQ(amounts(after, OptOp::STAGE, 0), (std::vector<int64_t>{2, 4, 8}));
  EXPECT_FALSE(has_op(after, OptOp::GROUP));
  // Subgroups of 8 and 256 invocations: at most 32 lanes along an axis, 256 grouped.
  const std::vector<Opt> small = engine::beam_actions(conv, {}, gpu_target(8, 256, 1024));
  EXPECT_EQ(amounts(small, OptOp::LOCAL, 1), (std::vector<int64_t>{2, 4, 7, 8, 14}));
  EXPECT_EQ(amounts(small, OptOp::LOCAL, 0), (std::vector<int64_t>{2, 4, 8, 16, 32}));
  EXPECT_EQ(amounts(small, OptOp::GROUP, 0), (std::vector<int64_t>{8, 16, 32, 64, 128, 256}));
  // 512 bytes of shared memory: a float32 sum's 128 lanes at most.
  EXPECT_EQ(amounts(engine::beam_actions(conv, {}, gpu_target(8, 256, 512)), OptOp::GROUP, 0),
            (std::vector<int64_t>{8, 16, 32, 64, 128}));
  const std::vector<Opt> tiny = engine::beam_actions(conv, {}, gpu_target(8, 16, 1024));
  EXPECT_EQ(amounts(tiny, OptOp::LOCAL, 0), (std::vector<int64_t>{2, 4, 8, 16}));
  // The third LOCAL axis, outermost, is the workgroup's z: at most 4 of them on this target.
  Target flat_z = gpu_target(8, 1024, 1024);
  flat_z.max_workgroup_size[2] = 4;
  const std::vector<Opt> two{{OptOp::LOCAL, 2, 2}, {OptOp::LOCAL, 1, 2}};
  EXPECT_EQ(amounts(engine::beam_actions(conv, two, flat_z), OptOp::LOCAL, 0),
            (std::vector<int64_t>{2, 4}));
  // What the list leaves: 28 columns after an upcast of 2.
  const std::vector<Opt> wide{{OptOp::UPCAST, 2, 2}, {OptOp::LOCAL, 0, 2}};
  EXPECT_EQ(amounts(engine::beam_actions(conv, wide, flat_z), OptOp::LOCAL, 2),
            (std::vector<int64_t>{2, 4, 7, 14}));
  // Values per invocation: after 64 of them, at most 4 more (not the 7 columns left).
  const std::vector<Opt> tile{{OptOp::UPCAST, 0, 8}, {OptOp::UPCAST, 2, 8}};
  const std::vector<Opt> full = engine::beam_actions(conv, tile, nvidia);
  EXPECT_EQ(amounts(full, OptOp::UPCAST, 0), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(amounts(full, OptOp::UNROLL, 0), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(amounts(full, OptOp::UPCAST, 2).empty());
  // The host's C: no workgroups; the GEMM's variants from the empty list only, and nothing after
  // one.
  const Target host = engine::runtime_of("CPU").target();
  const std::vector<Opt> cpu = engine::beam_actions(conv, {}, host);
  EXPECT_FALSE(has_op(cpu, OptOp::LOCAL) || has_op(cpu, OptOp::GROUP) || has_op(cpu, OptOp::STAGE));
  EXPECT_TRUE(has_op(cpu, OptOp::GEMM));
  EXPECT_TRUE(has_op(cpu, OptOp::UPCAST));
  // After a GEMM only its blocking: the tile's columns in vectors and k blocks below all of k
  // (32 x 3 x 3 = 288 steps), each once.
  const std::vector<Opt> after_gemm = engine::beam_actions(conv, {{OptOp::GEMM, 0, 0}}, host);
  EXPECT_EQ(amounts(after_gemm, OptOp::BLOCK, 0), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(amounts(after_gemm, OptOp::BLOCK, 1), (std::vector<int64_t>{64, 128, 256}));
  EXPECT_EQ(after_gemm.size(), 7u);
  const std::vector<Opt> blocked = engine::beam_actions(
      conv, {{OptOp::GEMM, 0, 0}, {OptOp::BLOCK, 0, 3}, {OptOp::BLOCK, 1, 64}}, host);
  EXPECT_TRUE(blocked.empty()) << to_string(blocked);
  // Winograd reads k in one block: its tile's columns only.
  const std::vector<Opt> after_winograd = engine::beam_actions(conv, {{OptOp::GEMM, 3, 0}}, host);
  EXPECT_EQ(amounts(after_winograd, OptOp::BLOCK, 0), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(after_winograd.size(), 4u);
  // Every action returned applies after its list.
  for (const auto& [target, list] : {std::pair{nvidia, std::vector<Opt>{}},
                                     {nvidia, lanes},
                                     {nvidia, tile},
                                     {host, std::vector<Opt>{}},
                                     {host, std::vector<Opt>{{OptOp::GEMM, 0, 0}}}})
    for (const Opt& a : engine::beam_actions(conv, list, target)) {
      std::vector<Opt> extended = list;
      extended.push_back(a);
      EXPECT_NO_THROW(apply_opts(conv, extended, target)) << to_string(extended);
    }
}

TEST(BeamNeighbours, HalveOrDoubleOneActionOrLeaveOneOut) {
  // The convolution above: globals (64, 56, 56), reduces (32, 3, 3).
  const UOp conv = kernel_of(Tensor::empty({1, 32, 58, 58}, dtypes::float32, "CPU")
                                 .conv2d(Tensor::empty({64, 32, 3, 3}, dtypes::float32, "CPU")))
                       .ast;
  const Target nvidia = gpu_target(32, 1024, 49152);
  const Opt up_x{OptOp::UPCAST, 2, 4}, up_c{OptOp::UPCAST, 0, 8}, unroll{OptOp::UNROLL, 2, 3},
      lanes{OptOp::LOCAL, 0, 8};
  const std::vector<Opt> list{up_x, up_c, unroll, lanes};
  const std::vector<std::vector<Opt>> near = engine::beam_neighbours(conv, list, nvidia);
  // Not there: UNROLL(2, 6) (the window's 3 columns), 16 channels a step (8 lanes then find
  // 4 channels left), 16 lanes (8 channels left), UNROLL(2, 1), and without the last action
  // (the prefix, a root of the search already).
  const std::vector<std::vector<Opt>> expected{{{OptOp::UPCAST, 2, 2}, up_c, unroll, lanes},
                                               {{OptOp::UPCAST, 2, 8}, up_c, unroll, lanes},
                                               {up_c, unroll, lanes},
                                               {up_x, {OptOp::UPCAST, 0, 4}, unroll, lanes},
                                               {up_x, unroll, lanes},
                                               {up_x, up_c, lanes},
                                               {up_x, up_c, unroll, {OptOp::LOCAL, 0, 4}}};
  EXPECT_EQ(near, expected);
  for (const std::vector<Opt>& l : near) EXPECT_NO_THROW(apply_opts(conv, l, nvidia));
  // A GEMM's list has its blocking's actions instead; the empty list has no neighbours.
  const Target host = engine::runtime_of("CPU").target();
  EXPECT_TRUE(engine::beam_neighbours(conv, {{OptOp::GEMM, 0, 0}}, host).empty());
  EXPECT_TRUE(engine::beam_neighbours(conv, {}, nvidia).empty());
}

TEST_P(BeamTest, KernelsWithVariablesKeepTheHeuristics) {
  const Tensor x = Tensor::zeros({5}, dtypes::float32, dev()).symbolic(0, Variable("bt_n", 1, 64));
  const Kernel k = kernel_of(x * 2.0);
  const engine::BeamResult r = engine::beam_search(engine::runtime_of(dev()), k.ast, k.bytes, 2);
  EXPECT_FALSE(r.searched);
}

namespace fs = std::filesystem;

// VKGRAD_CACHE_DIR pointed at a fresh folder for one test (cache_root() reads it every time).
class CacheDir {
 public:
  explicit CacheDir(const std::string& tag)
      : dir_(fs::temp_directory_path() / ("vkgrad-beam-" + tag + "-" + std::to_string(::getpid()) +
                                          "-" + std::to_string(next_++))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const char* old = std::getenv("VKGRAD_CACHE_DIR");
    if (old != nullptr) saved_ = old;
    ::setenv("VKGRAD_CACHE_DIR", dir_.c_str(), 1);
  }
  ~CacheDir() {
    if (saved_)
      ::setenv("VKGRAD_CACHE_DIR", saved_->c_str(), 1);
    else
      ::unsetenv("VKGRAD_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& path() const { return dir_; }

 private:
  static inline int next_ = 0;
  fs::path dir_;
  std::optional<std::string> saved_;
};

// A small matmul realized on `device`, checked against double precision.
void matmul_once(const std::string& device) {
  const std::vector<double> av = random_values(6 * 10, -1, 1, 3),
                            bv = random_values(10 * 5, -1, 1, 4);
  const std::vector<double> got =
      values_of(make_tensor(av, {6, 10}, dtypes::float32, device)
                    .matmul(make_tensor(bv, {10, 5}, dtypes::float32, device)));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 5; ++j) {
      double want = 0;
      for (int k = 0; k < 10; ++k) want += av[i * 10 + k] * bv[k * 5 + j];
      EXPECT_NEAR(got[static_cast<size_t>(i * 5 + j)], want, 1e-4);
    }
}

TEST_P(BeamTest, TheCacheServesLaterCompiles) {
  const CacheDir cache("serve");
  reset_runtime_stats();
  {
    const Beam beam({.width = 2});
    matmul_once(dev());
  }
  EXPECT_EQ(runtime_stats().beam_searches, 1);
  EXPECT_TRUE(fs::exists(cache.path() / "beam.db"));
  {
    const Beam beam({.width = 0});  // compiled again: the winner comes from the disk
    matmul_once(dev());
  }
  EXPECT_EQ(runtime_stats().beam_searches, 1);
  EXPECT_EQ(runtime_stats().beam_cache_hits, 1);
  {
    const Beam beam({.width = 0, .use_cache = false});
    matmul_once(dev());
  }
  EXPECT_EQ(runtime_stats().beam_cache_hits, 1);
  const std::vector<TunedKernel> tuned = tuned_kernels();
  ASSERT_FALSE(tuned.empty());
  EXPECT_EQ(tuned.back().name, "r_6_5_10");
}

TEST_P(BeamTest, ARealizeUnderBeamCachesItsSchedulesChoice) {
  const CacheDir cache("schedule");
  const std::vector<double> av = random_values(12 * 20, -1, 1, 9),
                            bv = random_values(20 * 9, -1, 1, 10);
  const size_t before = tuned_kernels().size();
  std::vector<double> got;
  {
    const Beam beam({.width = 2});
    got = values_of((make_tensor(av, {12, 20}, dtypes::float32, dev())
                         .matmul(make_tensor(bv, {20, 9}, dtypes::float32, dev())) *
                     2.0)
                        .sum(1));
  }
  for (int i = 0; i < 12; ++i) {
    double want = 0;
    for (int j = 0; j < 9; ++j)
      for (int k = 0; k < 20; ++k) want += 2 * av[i * 20 + k] * bv[k * 9 + j];
    EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-3);
  }
  const std::vector<TunedKernel> tuned = tuned_kernels();
  ASSERT_GT(tuned.size(), before);
  for (size_t i = before; i < tuned.size(); ++i) {
    const TunedKernel& t = tuned[i];
    EXPECT_GT(t.schedule_seconds, 0) << t.name;
    EXPECT_GT(t.schedule_heuristic_seconds, 0) << t.name;
    if (t.opts != t.heuristic_opts) {
      EXPECT_LT(t.schedule_seconds, 0.98 * t.schedule_heuristic_seconds - 5e-6) << t.name;
    }
  }
  // The cache holds the schedule's choice: the same realize again reads it, searching nothing.
  reset_runtime_stats();
  {
    const Beam beam({.width = 2});
    (void)values_of((make_tensor(av, {12, 20}, dtypes::float32, dev())
                         .matmul(make_tensor(bv, {20, 9}, dtypes::float32, dev())) *
                     2.0)
                        .sum(1));
  }
  EXPECT_EQ(runtime_stats().beam_searches, 0);
  EXPECT_EQ(runtime_stats().beam_cache_hits, static_cast<int64_t>(tuned.size() - before));
}

// Each search's winner is cached when its search ends, before the schedule's other kernels are
// searched: a tune cut short keeps what it finished. Seen from the last kernel's search.
TEST_P(BeamTest, EachSearchIsCachedWhenItEnds) {
  const CacheDir cache("each");
  const Tensor a = make_tensor(random_values(12 * 20, -1, 1, 11), {12, 20}, dtypes::float32, dev());
  const Tensor b = make_tensor(random_values(20 * 9, -1, 1, 12), {20, 9}, dtypes::float32, dev());
  const Tensor y = a.matmul(b).exp().sum(1);
  const NormalizedGraph g = normalize_graph(std::vector<UOp>{tensor::uop(y)});
  const Schedule s = build_schedule(g.key);
  ASSERT_GE(s.kernels.size(), 2u);
  auto out_bytes = [&](const ScheduleKernel& k) {
    const ScheduleBuffer& sb = s.buffers.at(static_cast<size_t>(k.buffers.at(0)));
    return static_cast<size_t>(sb.count) * static_cast<size_t>(sb.dtype.itemsize());
  };
  const size_t last_bytes = out_bytes(s.kernels.back());
  ASSERT_NE(out_bytes(s.kernels.front()), last_bytes);
  const std::string id = engine::runtime_of(dev()).identity(),
                    first = to_string(s.kernels.front().ast);
  int checked = 0;
  std::optional<std::vector<Opt>> cached;
  engine::set_beam_output_hook([&](const std::vector<Opt>&, std::vector<uint8_t>& out) {
    if (out.size() == last_bytes && checked++ == 0) cached = engine::beam_cache_get(id, first);
  });
  {
    const Beam beam({.width = 2});
    (void)values_of(y);
  }
  engine::set_beam_output_hook(nullptr);
  EXPECT_GT(checked, 0);
  EXPECT_TRUE(cached.has_value());
}

// BeamOptions::seconds: a search whose deadline has passed ends after its first candidates (the
// roots and the heuristics' neighbours, no round), and once a budget is spent the kernels met
// later keep the heuristics' lists, unsearched and uncached, and compute the same values.
TEST_P(BeamTest, ASpentBudgetEndsTheSearchAndLeavesLaterKernelsTheHeuristics) {
  const Tensor a = Tensor::empty({16, 24}, dtypes::float32, dev());
  const Tensor b = Tensor::empty({24, 16}, dtypes::float32, dev());
  const Kernel k = kernel_of(a.matmul(b));
  Runtime& rt = engine::runtime_of(dev());
  const engine::BeamResult cut =
      engine::beam_search(rt, k.ast, k.bytes, 2, {}, std::chrono::steady_clock::now());
  EXPECT_TRUE(cut.searched);
  // The roots (the empty list and the heuristics' prefixes) and the neighbours at most (none
  // where the heuristics' list is empty: an H200's for this matmul).
  EXPECT_LE(
      static_cast<size_t>(cut.tried),
      cut.heuristic.size() + engine::beam_neighbours(k.ast, cut.heuristic, rt.target()).size());
  EXPECT_NO_THROW(rt.compile(codegen(k.ast, {.opts = cut.opts}, rt.target())));

  const CacheDir cache("budget");
  const std::vector<double> av = random_values(12 * 20, -1, 1, 13),
                            bv = random_values(20 * 9, -1, 1, 14);
  reset_runtime_stats();
  std::vector<double> got;
  {
    const Beam beam({.width = 2, .seconds = 1e-6});
    EXPECT_FALSE(engine::beam_budget_spent());  // its clock starts with the first search
    got = values_of(make_tensor(av, {12, 20}, dtypes::float32, dev())
                        .matmul(make_tensor(bv, {20, 9}, dtypes::float32, dev()))
                        .exp()
                        .sum(1));
    EXPECT_TRUE(engine::beam_budget_spent());
  }
  EXPECT_FALSE(engine::beam_budget_spent());  // another Beam's options, another budget
  EXPECT_EQ(runtime_stats().beam_searches, 1);
  for (int i = 0; i < 12; ++i) {
    double want = 0;
    for (int j = 0; j < 9; ++j) {
      double dot = 0;
      for (int q = 0; q < 20; ++q) dot += av[i * 20 + q] * bv[q * 9 + j];
      want += std::exp(dot);
    }
    EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-4 * std::abs(want));
  }
}

TEST_P(BeamTest, ACorruptDatabaseIsRebuiltWithAWarning) {
  const CacheDir cache("corrupt");
  std::ofstream(cache.path() / "beam.db") << std::string(4096, 'x');
  reset_runtime_stats();
  ::testing::internal::CaptureStderr();
  {
    const Beam beam({.width = 2});
    matmul_once(dev());
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rebuilding it"), std::string::npos) << err;
  {
    const Beam beam({.width = 0});
    matmul_once(dev());
  }
  EXPECT_EQ(runtime_stats().beam_cache_hits, 1);
}

TEST_P(BeamTest, AnotherDevicesOrVersionsEntriesAreIgnored) {
  const CacheDir cache("ignored");
  const Kernel k = kernel_of(Tensor::empty({8, 64}, dtypes::float32, dev()).sum(1));
  const std::string id = engine::runtime_of(dev()).identity(), text = to_string(k.ast);
  engine::beam_cache_put("another device", text, {{OptOp::UNROLL, 0, 4}}, 1e-6, 2e-6);
  EXPECT_FALSE(engine::beam_cache_get(id, text));
  EXPECT_TRUE(engine::beam_cache_get("another device", text));
  engine::beam_cache_put(id, text, {{OptOp::UNROLL, 0, 4}}, 1e-6, 2e-6);
  EXPECT_EQ(engine::beam_cache_get(id, text), (std::vector<Opt>{{OptOp::UNROLL, 0, 4}}));
  // Written by another version of the library: not read.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((cache.path() / "beam.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "UPDATE tuned SET version = '0.0.0/beam0'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_FALSE(engine::beam_cache_get(id, text));
}

// A tuned kernel's list exported as a tuning table and imported into a fresh cache: a later
// compile there searches nothing and runs the same list; another version's rows are skipped; a
// file that is no tuning table is a FormatError naming it.
TEST_P(BeamTest, ATuningTableCarriesTheListsToAnotherCache) {
  const fs::path table = fs::temp_directory_path() /
                         ("vkgrad-table-" + std::to_string(::getpid()) + "-" + dev() + ".db");
  std::string list;
  {
    const CacheDir cache("export");
    {
      const Beam beam({.width = 2});
      matmul_once(dev());
    }
    list = tuned_kernels().back().opts;
    engine::beam_cache_put("a device of another version", "k", {}, 1, 1);
    EXPECT_EQ(engine::beam_cache_export(table.string()), 2u);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(table.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "UPDATE tuned SET version = '0.0.0/beam0' WHERE device = 'a device of "
                         "another version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const CacheDir fresh("import");
  const engine::BeamImport in = engine::beam_cache_import(table.string());
  EXPECT_EQ(in.imported, 1u);
  EXPECT_EQ(in.other_version, 1u);
  reset_runtime_stats();
  {
    const Beam beam({.width = 2});
    matmul_once(dev());
  }
  EXPECT_EQ(runtime_stats().beam_searches, 0);
  EXPECT_EQ(runtime_stats().beam_cache_hits, 1);
  const Kernel k = kernel_of(Tensor::empty({6, 10}, dtypes::float32, dev())
                                 .matmul(Tensor::empty({10, 5}, dtypes::float32, dev())));
  const auto cached =
      engine::beam_cache_get(engine::runtime_of(dev()).identity(), to_string(k.ast));
  ASSERT_TRUE(cached);
  EXPECT_EQ(to_string(*cached), list);
  fs::remove(table);
  std::ofstream(table) << "not a database";
  EXPECT_THROW(engine::beam_cache_import(table.string()), FormatError);
  EXPECT_THROW(engine::beam_cache_import((table.string() + ".missing")), FormatError);
  fs::remove(table);
}

// Run as a child process by TwoProcessesTuningAtOnce (does nothing unless VKGRAD_BEAM_CHILD is
// set): tunes the matmul on the device it names and prints its counts.
TEST(BeamEnvChild, TuneTheMatmul) {
  const char* device = std::getenv("VKGRAD_BEAM_CHILD");
  if (device == nullptr) GTEST_SKIP() << "run by TwoProcessesTuningAtOnce";
  const int width = std::atoi(std::getenv("VKGRAD_BEAM_CHILD_WIDTH"));
  {
    const Beam beam({.width = width});
    matmul_once(device);
  }
  std::printf("BEAM searches=%lld hits=%lld\n",
              static_cast<long long>(runtime_stats().beam_searches),
              static_cast<long long>(runtime_stats().beam_cache_hits));
}

struct ChildRun {
  FILE* pipe = nullptr;
  std::string output;
};
ChildRun start_child(const fs::path& cache, const std::string& device, int width) {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  // The parent's sharding (GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS) would leave the child no test.
  const std::string cmd =
      "env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE "
      "VKGRAD_BEAM_CHILD='" +
      device + "' VKGRAD_BEAM_CHILD_WIDTH=" + std::to_string(width) + " VKGRAD_CACHE_DIR='" +
      cache.string() + "' '" + exe + "' --gtest_filter=BeamEnvChild.* 2>&1";
  return {::popen(cmd.c_str(), "r"), ""};
}
std::pair<long long, long long> finish_child(ChildRun& c) {
  EXPECT_NE(c.pipe, nullptr);
  std::array<char, 4096> buf;
  while (c.pipe != nullptr && std::fgets(buf.data(), buf.size(), c.pipe) != nullptr)
    c.output += buf.data();
  EXPECT_EQ(c.pipe != nullptr ? ::pclose(c.pipe) : -1, 0) << c.output;
  std::smatch m;
  if (!std::regex_search(c.output, m, std::regex(R"(BEAM searches=(\d+) hits=(\d+))"))) {
    ADD_FAILURE() << "no counts in the child's output:\n" << c.output;
    return {-1, -1};
  }
  return {std::stoll(m[1]), std::stoll(m[2])};
}

TEST_P(BeamTest, TwoProcessesTuningAtOnceLeaveOneEntry) {
  const CacheDir cache("procs");
  ChildRun a = start_child(cache.path(), dev(), 2), b = start_child(cache.path(), dev(), 2);
  const auto ra = finish_child(a), rb = finish_child(b);
  EXPECT_EQ(ra.first + ra.second, 1);  // each found it in the cache or searched it
  EXPECT_EQ(rb.first + rb.second, 1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((cache.path() / "beam.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), min(opts) FROM tuned", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  EXPECT_TRUE(parse_opts(reinterpret_cast<const char*>(sqlite3_column_text(st, 1))));
  sqlite3_finalize(st);
  sqlite3_close(db);
  // A later process without BEAM reads the winner: no search.
  ChildRun c = start_child(cache.path(), dev(), 0);
  EXPECT_EQ(finish_child(c), (std::pair<long long, long long>{0, 1}));
}

// Run with BEAM=2 (ctest tensor_beam): every new kernel is searched once, and its result is right.
class BeamEnv : public DeviceTest {};
VKGRAD_ALL_DEVICES(BeamEnv);

TEST_P(BeamEnv, EachNewKernelIsSearchedOnce) {
  ASSERT_EQ(engine::beam_width(), 2) << "run with BEAM=2";
  const CacheDir cache("env");
  const std::vector<double> av = random_values(12 * 20, -1, 1, 7),
                            bv = random_values(20 * 9, -1, 1, 8);
  const Tensor a = make_tensor(av, {12, 20}, dtypes::float32, dev());
  const Tensor b = make_tensor(bv, {20, 9}, dtypes::float32, dev());
  reset_runtime_stats();
  const std::vector<double> got = values_of(a.matmul(b));
  EXPECT_GE(runtime_stats().beam_searches, 1);
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 9; ++j) {
      double want = 0;
      for (int k = 0; k < 20; ++k) want += av[i * 20 + k] * bv[k * 9 + j];
      EXPECT_NEAR(got[static_cast<size_t>(i * 9 + j)], want, 1e-4);
    }
  const int64_t searches = runtime_stats().beam_searches;
  (void)values_of(make_tensor(av, {12, 20}, dtypes::float32, dev()).matmul(b));
  EXPECT_EQ(runtime_stats().beam_searches, searches);  // the same kernel: compiled already
}

TEST_P(BeamEnv, OptionsAreTheInnermostOverridesOrTheEnvironments) {
  ASSERT_EQ(engine::beam_width(), 2) << "run with BEAM=2";
  const BeamOptions env = beam_options();
  EXPECT_EQ(env.width, 2);
  {
    const Beam heuristics({.width = 0, .use_cache = false});
    EXPECT_EQ(beam_options().width, 0);
    EXPECT_FALSE(beam_options().use_cache);
    {
      // No search, the rest as it was: the cache stays unread.
      BeamOptions o = beam_options();
      o.width = 0;
      const Beam quiet(o);
      EXPECT_FALSE(beam_options().use_cache);
    }
    EXPECT_FALSE(beam_options().use_cache);
  }
  EXPECT_EQ(beam_options().width, 2);
  EXPECT_EQ(beam_options().use_cache, env.use_cache);
}

}  // namespace
}  // namespace vkgrad::testing
