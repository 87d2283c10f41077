// tests/codegen: the heuristics' Opt list for every kernel of the `vkgrad bench` cases, on each
// device family's target, against tests/codegen/golden/opts/<family>.txt. The kernels are the
// schedules of the cases' graphs at the bench's shapes (a model's parameters realized on the CPU,
// a training step's loss, updates and buffers in one schedule, as its first step builds them);
// nothing runs but the parameters' initialization. Regenerate with tools/regen_golden.sh (never
// edit the files by hand) and explain every changed line in the commit that changes it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <vkgrad/vkgrad.hpp>

#include "codegen/opt.hpp"
#include "codegen/pipeline.hpp"
#include "cpu/runtime.hpp"
#include "models/bert_encoder.hpp"
#include "models/mobilenet_v2.hpp"
#include "models/resnet.hpp"
#include "sched/schedule.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

// ---- the device families ----------------------------------------------------------------------

Target cpu_family(int vector_floats, int registers, int gemm_rows, int64_t winograd_min_tiles) {
  Target t = cpu::host_target();
  t.vector_floats = vector_floats;
  t.vector_registers = registers;
  t.gemm_rows = gemm_rows;
  t.winograd_min_tiles = winograd_min_tiles;
  return t;
}

// A Vulkan device's limits as the runtime copies them into the target.
Target vulkan_family(uint32_t subgroup, uint32_t shared_bytes) {
  Target t;
  t.language = Target::Language::glsl;
  t.threads = t.local_memory = t.grid = t.subgroup_arithmetic = true;
  t.vector_floats = 4;
  t.fused_multiply_add = true;
  t.subgroup_size = subgroup;
  t.max_workgroup_invocations = 1024;
  t.max_workgroup_size[0] = t.max_workgroup_size[1] = 1024;
  t.max_workgroup_size[2] = 64;
  t.max_group_count[0] = 65535;
  t.max_group_count[1] = t.max_group_count[2] = 65535;
  t.max_shared_bytes = shared_bytes;
  t.max_push_bytes = 256;
  return t;
}

// Mesa's lavapipe: a CPU-type device, 8-lane subgroups, 32 KiB of shared memory; inputs read
// through texel buffers; release 22 fetches scalar texels too and shares uniform loads by
// shuffles.
Target lavapipe(bool release22) {
  Target t = vulkan_family(8, 32768);
  t.max_workgroup_size[2] = 1024;
  t.max_push_bytes = 128;
  t.cpu_device = true;
  t.texel_loads = true;
  t.texel_scalar_loads = release22;
  t.shuffle_uniform_loads = release22;
  return t;
}

// An NVIDIA H200 as its driver reports it: 32-lane subgroups, 48 KiB of shared memory per
// workgroup, 132 multiprocessors; matmul tiles staged in shared memory.
Target h200() {
  Target t = vulkan_family(32, 49152);
  t.max_group_count[0] = 2147483647;
  t.shared_tiles = true;
  t.min_invocations = 65536;
  return t;
}

struct Family {
  const char* name;
  Target (*target)();
};
const Family kFamilies[] = {
    {"cpu_avx512", [] { return cpu_family(16, 32, 0, 256); }},
    {"cpu_zen4", [] { return cpu_family(16, 32, 8, 14 * 14); }},
    {"cpu_avx2", [] { return cpu_family(8, 16, 6, 7 * 7); }},
    {"cpu_sse", [] { return cpu_family(4, 16, 6, 7 * 7); }},
    {"cpu_neon", [] { return cpu_family(4, 32, 0, 256); }},
    {"vulkan_lavapipe22", [] { return lavapipe(true); }},
    {"vulkan_lavapipe25", [] { return lavapipe(false); }},
    {"vulkan_h200", h200},
};

// ---- the bench cases' graphs ------------------------------------------------------------------

Tensor input(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt, "CPU"); }

template <class M>
std::shared_ptr<M> on_cpu(M model) {
  auto m = std::make_shared<M>(std::move(model));
  m->to("CPU");
  return m;
}

// An optimizer whose updates the test builds without stepping.
template <class O>
struct Peek : O {
  using O::O;
  using O::updates;
};

// A training step's schedule roots: the loss, every new value, the buffers (Optimizer::step).
template <class O>
std::vector<Tensor> step_roots(const Tensor& loss, Peek<O>& opt) {
  opt.zero_grad();
  loss.backward();
  std::vector<Tensor> roots{loss};
  for (const auto& u : opt.updates()) roots.push_back(u.second);
  for (const Tensor& p : opt.params)
    if (!p.requires_grad()) roots.push_back(p);
  return roots;
}

std::vector<Tensor> mlp_step() {
  struct Mlp {
    nn::Linear l1{784, 512}, l2{512, 512}, l3{512, 10};
  };
  Tensor::manual_seed(3);
  static Mlp m;
  static const bool placed = [] {
    for (Tensor t : nn::state::get_parameters(m.l1, m.l2, m.l3)) t.realize();
    return true;
  }();
  (void)placed;
  Peek<nn::optim::Adam> opt(nn::state::get_parameters(m.l1, m.l2, m.l3), 1e-3);
  const Tensor x = input({256, 784}), y = input({256}, dtypes::int32);
  return step_roots(m.l3(m.l2(m.l1(x).relu()).relu()).cross_entropy(y), opt);
}

std::vector<Tensor> resnet18_step() {
  Tensor::manual_seed(13);
  static auto m = on_cpu(models::resnet18(100));
  Peek<nn::optim::SGD> opt(m->state(), 0.01, 0.9);
  const bool was = Tensor::training;
  Tensor::training = true;
  const Tensor x = input({16, 3, 64, 64}), y = input({16}, dtypes::int32);
  std::vector<Tensor> roots = step_roots(m->forward(x).cross_entropy(y), opt);
  Tensor::training = was;
  return roots;
}

// 200 elementwise ops over three (1024, 1024) inputs, every fourth one a clamp.
std::vector<Tensor> chain200() {
  const Tensor a = input({1024, 1024}), b = input({1024, 1024}), c = input({1024, 1024});
  Tensor x = a;
  for (int i = 0; i < 200; ++i) {
    if (i % 4 == 3)
      x = i % 8 == 3 ? x.minimum(2.0) : x.maximum(-2.0);
    else
      switch (i % 5) {
        case 0:
          x = x * 0.75;
          break;
        case 1:
          x = x + 0.25;
          break;
        case 2:
          x = x + a;
          break;
        case 3:
          x = x * b;
          break;
        default:
          x = x.maximum(c);
          break;
      }
  }
  return {x};
}

struct BenchCase {
  const char* name;
  std::function<std::vector<Tensor>()> roots;
};

std::vector<BenchCase> bench_cases() {
  auto matmul = [](int64_t m, int64_t k, int64_t n, bool a_t, bool b_t) {
    return [=] {
      const Tensor a = input(a_t ? Shape{k, m} : Shape{m, k});
      const Tensor b = input(b_t ? Shape{n, k} : Shape{k, n});
      return std::vector<Tensor>{(a_t ? a.T() : a).matmul(b_t ? b.T() : b)};
    };
  };
  auto model = [](auto make, Shape shape) {
    return [make, shape] {
      static auto m = make();
      return std::vector<Tensor>{m->forward(input(shape))};
    };
  };
  return {
      {"matmul_f32_512", matmul(512, 512, 512, false, false)},
      {"matmul_f32_1024", matmul(1024, 1024, 1024, false, false)},
      {"matmul_f32_2048", matmul(2048, 2048, 2048, false, false)},
      {"matmul_mlp_nt", matmul(256, 784, 512, false, true)},
      {"matmul_mlp_tn", matmul(512, 256, 784, true, false)},
      {"matmul_mlp_nn", matmul(256, 512, 784, false, false)},
      {"ew_axbpc_16M",
       [] { return std::vector<Tensor>{input({1 << 24}) * input({1 << 24}) + input({1 << 24})}; }},
      {"sum_16M", [] { return std::vector<Tensor>{input({1 << 24}).sum()}; }},
      {"softmax_4096",
       [] {
         return std::vector<Tensor>{input({4096, 4096}).softmax(-1)};
       }},
      {"conv2d_b32_c64_56_k3",
       [] {
         return std::vector<Tensor>{
             input({32, 64, 56, 56}).conv2d(input({64, 64, 3, 3}), std::nullopt, 1, 1)};
       }},
      {"chain200", chain200},
      {"dispatch", [] { return std::vector<Tensor>{input({256}) + 1.0}; }},
      {"cold_start",
       [] {
         const Tensor x = input({1 << 16});
         return std::vector<Tensor>{(x * 2.0 + 1.0).exp().sum()};
       }},
      {"mlp_step", mlp_step},
      {"resnet18", model(
                       [] {
                         Tensor::manual_seed(11);
                         return on_cpu(models::resnet18());
                       },
                       {1, 3, 224, 224})},
      {"resnet50", model(
                       [] {
                         Tensor::manual_seed(11);
                         return on_cpu(models::resnet50());
                       },
                       {1, 3, 224, 224})},
      {"mobilenetv2", model(
                          [] {
                            Tensor::manual_seed(11);
                            return on_cpu(models::MobileNetV2());
                          },
                          {1, 3, 224, 224})},
      {"bert_encoder", model(
                           [] {
                             Tensor::manual_seed(11);
                             return on_cpu(models::BertEncoder());
                           },
                           {1, 128, 256})},
      {"resnet18_train", resnet18_step},
  };
}

// Every kernel of every case, scheduled once for all families.
const std::vector<std::pair<std::string, std::vector<UOp>>>& case_kernels() {
  static const auto all = [] {
    std::vector<std::pair<std::string, std::vector<UOp>>> out;
    for (const BenchCase& c : bench_cases()) {
      std::vector<UOp> roots;
      for (const Tensor& t : c.roots()) roots.push_back(tensor::uop(t));
      const Schedule s = build_schedule(normalize_graph(roots).key);
      std::vector<UOp> asts;
      for (const ScheduleKernel& k : s.kernels) asts.push_back(k.ast);
      out.emplace_back(c.name, std::move(asts));
    }
    return out;
  }();
  return all;
}

std::string golden_path(const std::string& family) {
  return std::string(VKGRAD_SOURCE_DIR) + "/tests/codegen/golden/opts/" + family + ".txt";
}

class OptListGolden : public ::testing::TestWithParam<Family> {};

TEST_P(OptListGolden, EveryBenchKernel) {
  const Family& f = GetParam();
  const Target target = f.target();
  std::string got;
  for (const auto& [name, asts] : case_kernels()) {
    got += "# " + name + "\n";
    for (const UOp& ast : asts)
      got += kernel_name(ast) + " " + to_string(heuristic_opts(ast, target)) + "\n";
  }
  const std::string path = golden_path(f.name);
  if (std::getenv("VKGRAD_REGEN_GOLDEN")) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "regenerated " << path;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << "missing " << path << " (run tools/regen_golden.sh)";
  std::stringstream want;
  want << file.rdbuf();
  EXPECT_EQ(got, want.str()) << "the heuristics' Opt lists for " << f.name
                             << " changed; if intended, run tools/regen_golden.sh, review the "
                                "diff and measure every changed line";
}

[[maybe_unused]] void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }
INSTANTIATE_TEST_SUITE_P(Families, OptListGolden, ::testing::ValuesIn(kFamilies),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace vkgrad
