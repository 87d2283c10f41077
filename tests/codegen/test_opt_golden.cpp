// tests/codegen: the heuristics' Opt list for every kernel of the `vkgrad bench` cases, on each
// device family's target, against tests/codegen/golden/opts/<family>.txt. The kernels are the
// schedules of the cases' graphs at the bench's shapes (a model's parameters realized on the CPU,
// a training step's loss, updates and buffers in one schedule, as its first step builds them);
// nothing runs but the parameters' initialization. Regenerate with tools/regen_golden.sh (never
// edit the files by hand) and explain every changed line in the commit that changes it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
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
#include "vk/device.hpp"

namespace vkgrad {
namespace {

// ---- the device families ----------------------------------------------------------------------

// A CPU's target as the CPU backend makes it, its profile from the CPU tuning table.
Target cpu_family(Target::Isa isa, int amd_family) { return cpu::target_for(isa, amd_family); }

// A Vulkan device as its driver describes it, its target and profile as the Vulkan backend makes
// them (vk::target_of, with no switch turned off).
struct VulkanDevice {
  VkPhysicalDeviceType type;
  uint32_t vendor;
  VkDriverId driver;
  const char* driver_info;
  uint32_t subgroup;
  uint32_t shared_bytes, push_bytes;
  uint32_t size_z, groups_x;
};

Target vulkan_family(const VulkanDevice& d) {
  vk::Caps c;
  c.props.deviceType = d.type;
  c.props.vendorID = d.vendor;
  c.p12.driverID = d.driver;
  std::snprintf(c.p12.driverInfo, sizeof c.p12.driverInfo, "%s", d.driver_info);
  c.p11.subgroupSize = c.min_subgroup = c.max_subgroup = d.subgroup;
  c.p11.subgroupSupportedStages = VK_SHADER_STAGE_COMPUTE_BIT;
  c.p11.subgroupSupportedOperations = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                      VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                      VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  c.has_full_subgroups = true;
  c.features.shaderInt64 = c.features.shaderFloat64 = VK_TRUE;
  c.f11.storageBuffer16BitAccess = c.f12.storageBuffer8BitAccess = VK_TRUE;
  c.p12.shaderSignedZeroInfNanPreserveFloat32 = VK_TRUE;
  VkPhysicalDeviceLimits& l = c.props.limits;
  l.maxComputeWorkGroupInvocations = 1024;
  l.maxComputeWorkGroupSize[0] = l.maxComputeWorkGroupSize[1] = 1024;
  l.maxComputeWorkGroupSize[2] = d.size_z;
  l.maxComputeWorkGroupCount[0] = d.groups_x;
  l.maxComputeWorkGroupCount[1] = l.maxComputeWorkGroupCount[2] = 65535;
  l.maxComputeSharedMemorySize = d.shared_bytes;
  l.maxPushConstantsSize = d.push_bytes;
  return vk::target_of(c, vk::Switches{});
}

// Mesa's lavapipe (a CPU-type device: 8-lane subgroups, 32 KiB of shared memory) of two
// releases, and an NVIDIA H200 as its driver reports it (32-lane subgroups, 48 KiB of shared
// memory per workgroup).
constexpr VulkanDevice kLavapipe22{VK_PHYSICAL_DEVICE_TYPE_CPU,
                                   0x10005,
                                   VK_DRIVER_ID_MESA_LLVMPIPE,
                                   "Mesa 22.3.6 (LLVM 15.0.6)",
                                   8,
                                   32768,
                                   128,
                                   1024,
                                   65535};
constexpr VulkanDevice kLavapipe25{VK_PHYSICAL_DEVICE_TYPE_CPU,
                                   0x10005,
                                   VK_DRIVER_ID_MESA_LLVMPIPE,
                                   "Mesa 25.0.7 (LLVM 19.1.7)",
                                   8,
                                   32768,
                                   128,
                                   1024,
                                   65535};
constexpr VulkanDevice kH200{VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
                             0x10DE,
                             VK_DRIVER_ID_NVIDIA_PROPRIETARY,
                             "580.159.04",
                             32,
                             49152,
                             256,
                             64,
                             2147483647};

using Isa = Target::Isa;
struct Family {
  const char* name;
  Target (*target)();
};
const Family kFamilies[] = {
    {"cpu_avx512", [] { return cpu_family(Isa::avx512, 0x1a); }},
    {"cpu_zen4", [] { return cpu_family(Isa::avx512, 0x19); }},
    {"cpu_avx2", [] { return cpu_family(Isa::avx, 0x17); }},
    {"cpu_sse", [] { return cpu_family(Isa::sse, 0); }},
    {"cpu_neon", [] { return cpu_family(Isa::neon, 0); }},
    {"vulkan_lavapipe22", [] { return vulkan_family(kLavapipe22); }},
    {"vulkan_lavapipe25", [] { return vulkan_family(kLavapipe25); }},
    {"vulkan_h200", [] { return vulkan_family(kH200); }},
};

// Each family's profile, as `vkgrad info` names it.
TEST(OptListGolden, FamiliesGetTheirTables) {
  const std::pair<const char*, const char*> kProfiles[] = {
      {"cpu_avx512", "cpu-avx512"},
      {"cpu_zen4", "cpu-avx512-zen4"},
      {"cpu_avx2", "cpu-avx2"},
      {"cpu_sse", "cpu-sse"},
      {"cpu_neon", "cpu-neon"},
      {"vulkan_lavapipe22", "vulkan-lavapipe22"},
      {"vulkan_lavapipe25", "vulkan-lavapipe"},
      {"vulkan_h200", "vulkan-gpu"},
  };
  for (size_t i = 0; i < std::size(kFamilies); ++i) {
    EXPECT_STREQ(kFamilies[i].name, kProfiles[i].first);
    EXPECT_EQ(kFamilies[i].target().tuning.name, kProfiles[i].second) << kFamilies[i].name;
  }
}

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
  Mlp m;
  for (Tensor t : nn::state::get_parameters(m.l1, m.l2, m.l3)) t.realize();
  Peek<nn::optim::Adam> opt(nn::state::get_parameters(m.l1, m.l2, m.l3), 1e-3);
  const Tensor x = input({256, 784}), y = input({256}, dtypes::int32);
  return step_roots(m.l3(m.l2(m.l1(x).relu()).relu()).cross_entropy(y), opt);
}

std::vector<Tensor> resnet18_step() {
  Tensor::manual_seed(13);
  const auto m = on_cpu(models::resnet18(100));
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
      const auto m = make();
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

// Every kernel of every case (its graph's inputs numbered placeholders: no buffer of the models
// outlives the scheduling), scheduled once for all families and dropped after the last.
using CaseKernels = std::vector<std::pair<std::string, std::vector<UOp>>>;
CaseKernels schedule_cases() {
  CaseKernels out;
  for (const BenchCase& c : bench_cases()) {
    std::vector<UOp> roots;
    for (const Tensor& t : c.roots()) roots.push_back(tensor::uop(t));
    const Schedule s = build_schedule(normalize_graph(roots).key);
    std::vector<UOp> asts;
    for (const ScheduleKernel& k : s.kernels) asts.push_back(k.ast);
    out.emplace_back(c.name, std::move(asts));
  }
  return out;
}

std::string golden_path(const std::string& family) {
  return std::string(VKGRAD_SOURCE_DIR) + "/tests/codegen/golden/opts/" + family + ".txt";
}

class OptListGolden : public ::testing::TestWithParam<Family> {
 protected:
  static void SetUpTestSuite() { kernels_ = std::make_unique<CaseKernels>(schedule_cases()); }
  static void TearDownTestSuite() { kernels_.reset(); }
  static const CaseKernels& case_kernels() { return *kernels_; }

 private:
  static inline std::unique_ptr<CaseKernels> kernels_;
};

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
