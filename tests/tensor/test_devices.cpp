// tests/tensor: device names and selection, the machine without Vulkan, and every Vulkan device
// against the CPU backend on the same inputs (beyond each suite's double-precision references).
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <vkgrad/stats.hpp>

#include "engine/realize.hpp"
#include "harness.hpp"
#include "runtime/registry.hpp"
#include "tensor/tensor_impl.hpp"

namespace vkgrad::testing {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

double kInf() { return std::numeric_limits<double>::infinity(); }

std::vector<std::string> vulkan_devices() {
  std::vector<std::string> out;
  for (const std::string& d : devices())
    if (d != "CPU") out.push_back(d);
  return out;
}

TEST(DeviceNames, CanonicalSpellings) {
  EXPECT_EQ(Tensor::zeros({2}, {}, "cpu").device(), "CPU");
  EXPECT_EQ(Tensor::zeros({2}, {}, "CPU:0").device(), "CPU");
  EXPECT_TRUE(has(devices(), "CPU"));
  try {
    (void)Tensor::zeros({2}, {}, "TPU");
    ADD_FAILURE() << "no DeviceError for TPU";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("TPU"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)Tensor::zeros({2}, {}, "VULKAN:x"), DeviceError);
  EXPECT_THROW((void)Tensor::zeros({2}, {}, "VULKAN:97"), DeviceError);
}

// devices() is best first: GPUs (discrete > integrated > virtual), then the CPU backend, then
// CPU implementations of a GPU API (lavapipe), which are slower than the CPU backend.
TEST(DeviceNames, BestFirst) {
  auto entry = [](DeviceKind kind, int rank) { return DeviceEntry{0, "", "", kind, rank}; };
  std::vector<DeviceEntry> made = {
      entry(DeviceKind::other, 0), entry(DeviceKind::cpu_implementation, 3),
      entry(DeviceKind::host, 0), entry(DeviceKind::gpu, 1), entry(DeviceKind::gpu, 0)};
  std::stable_sort(made.begin(), made.end(), better);
  std::vector<std::pair<DeviceKind, int>> order;
  for (const DeviceEntry& e : made) order.emplace_back(e.kind, e.rank);
  EXPECT_EQ(order, (std::vector<std::pair<DeviceKind, int>>{{DeviceKind::gpu, 0},
                                                            {DeviceKind::gpu, 1},
                                                            {DeviceKind::host, 0},
                                                            {DeviceKind::cpu_implementation, 3},
                                                            {DeviceKind::other, 0}}));

  // The devices here, as their backends list them ("VULKAN" is the picked "VULKAN:N").
  const std::vector<std::string> listed = devices();
  std::vector<DeviceEntry> here;
  for (const std::string& d : listed) {
    const std::string name = engine::runtime(d).name();
    bool found = false;
    for (const Backend& b : backends())
      for (const DeviceEntry& e : b.list(nullptr))
        if (device_name(b, e) == name) here.push_back(e), found = true;
    EXPECT_TRUE(found) << d << " (" << name << ") is listed by no backend";
  }
  for (size_t i = 1; i < here.size(); ++i)
    EXPECT_FALSE(better(here[i], here[i - 1])) << listed[i] << " is better than " << listed[i - 1];
}

TEST(DeviceNames, PickedVulkanDeviceHasOneName) {
  if (!has(devices(), "VULKAN")) GTEST_SKIP() << "no Vulkan device here";
  EXPECT_EQ(Tensor::zeros({2}, {}, "vulkan").device(), "VULKAN");
  // Some "VULKAN:N" is the picked device; it canonicalizes to "VULKAN" and shares its buffers.
  bool found = false;
  for (int n = 0; n < 8 && !found; ++n) {
    try {
      found = Tensor::zeros({2}, {}, "VULKAN:" + std::to_string(n)).device() == "VULKAN";
    } catch (const DeviceError&) {
    }
  }
  EXPECT_TRUE(found);
  const std::string info = device_info();
  EXPECT_NE(info.find("VULKAN"), std::string::npos) << info;
}

// Run by ctest with VK_ICD_FILENAMES/VK_DRIVER_FILES naming a file that does not exist and
// VKGRAD_EXPECT_NO_VULKAN=1: everything on the CPU still works; asking for Vulkan explains why
// it cannot.
TEST(DeviceNames, WithoutVulkanTheCpuStillWorks) {
  if (!std::getenv("VKGRAD_EXPECT_NO_VULKAN")) GTEST_SKIP() << "needs VKGRAD_EXPECT_NO_VULKAN=1";
  EXPECT_EQ(devices(), std::vector<std::string>{"CPU"});
  EXPECT_EQ(default_device(), "CPU");
  try {
    (void)Tensor::zeros({2}, {}, "VULKAN");
    ADD_FAILURE() << "no DeviceError without a Vulkan driver";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("VULKAN"), std::string::npos) << e.what();
  }
  EXPECT_NE(device_info().find("not available"), std::string::npos) << device_info();
  Tensor x = Tensor::arange(5) * 2;
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 4, 6, 8}));
}

// Mixed chains (elementwise, broadcasting, reductions, matmul, views) on every Vulkan device and
// on the CPU from the same inputs: float results agree within float32 rounding, integer results
// exactly; tensors move between devices with to().
TEST(CrossDevice, VulkanMatchesCpu) {
  const std::vector<std::string> vks = vulkan_devices();
  if (vks.empty()) GTEST_SKIP() << "no Vulkan device here";
  const int64_t before = runtime_stats().validation_messages;
  const auto av = random_values(37 * 19, -2, 2, 11), bv = random_values(19 * 23, -2, 2, 12);
  const auto iv = random_ints(37 * 19, -1000, 1000, 13);
  auto programs = [](const Tensor& a, const Tensor& b, const Tensor& i) {
    std::vector<Tensor> out;
    out.push_back(a.matmul(b).relu().sum(1));
    out.push_back((a.exp() * a.sin() + a.abs().sqrt()).max(0));
    out.push_back(a.softmax(1).transpose(0, 1).contiguous().flip(0).pad({{1, 2}, {0, 1}}));
    out.push_back((i * 7 - (i >> 2)).div(i.abs().mod(13) + 1, "floor").sum(0));
    out.push_back((a > 0).where(i.cast(dtypes::float32), a * 1000).cast(dtypes::int32));
    out.push_back(a.cast(dtypes::float16) * 3.0 + 1.0);
    return out;
  };
  const Tensor a = make_tensor(av, {37, 19}, dtypes::float32, "CPU");
  const Tensor b = make_tensor(bv, {19, 23}, dtypes::float32, "CPU");
  const Tensor i = make_tensor(iv, {37, 19}, dtypes::int32, "CPU");
  const std::vector<Tensor> want = programs(a, b, i);
  for (const std::string& dev : vks) {
    const std::vector<Tensor> got = programs(a.to(dev), b.to(dev), i.to(dev));
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(got[k].device(), dev);
      ASSERT_EQ(got[k].shape(), want[k].shape()) << dev << " program " << k;
      const double tol = want[k].dtype().is_float() ? default_rtol(want[k].dtype()) : 0.0;
      expect_near(values_of(got[k].to("CPU")), values_of(want[k]), tol, tol,
                  dev + " program " + std::to_string(k));
    }
  }
  EXPECT_EQ(runtime_stats().validation_messages, before);
}

// The ULP distance between a float result and the exact (double) value, in units of the float
// spacing at the exact value.
double ulps32(double got, double exact) {
  const double spacing =
      std::ldexp(1.0, std::max(std::ilogb(static_cast<float>(exact)), -126) - 23);
  return std::abs(got - exact) / spacing;
}
double ulps64(double got, double exact) {
  const double spacing = std::ldexp(1.0, std::max(std::ilogb(exact), -1022) - 52);
  return std::abs(got - exact) / spacing;
}

// The Vulkan renderer's own exp2/log2/sin (GLSL promises too little) keep the tolerances
// render_glsl.cpp documents (2 ULP; float32 log2 3 ULP; sin for |x| < 1e5 in float32 and 1e6 in
// float64), measured here against the C library in double.
TEST(VulkanMath, TranscendentalsWithinDocumentedUlps) {
  const std::vector<std::string> vks = vulkan_devices();
  if (vks.empty()) GTEST_SKIP() << "no Vulkan device here";
  std::vector<double> wide = random_values(4000, -100, 100, 21),
                      pos = random_values(4000, 0, 1, 22);
  for (double& p : pos) p = std::ldexp(p + 0.5, static_cast<int>(p * 200) - 100);  // 2^-100..2^100
  for (double v : {1.0, 1.0 + 0x1p-20, 1.0 - 0x1p-20, 0.5, 2.0, 3.0}) pos.push_back(v);
  for (const std::string& dev : vks) {
    // Without float64 (VKGRAD_VK_DISABLE=fp64 in the tensor_vulkan_no_fp64 test) float32 sin
    // reduces in float, accurate for |x| < 8192.
    bool f64 = true;
    try {
      (void)(make_tensor({1}, {1}, dtypes::float64, dev) + 1).realize();
    } catch (const DTypeError& e) {
      EXPECT_NE(std::string(e.what()).find("shaderFloat64"), std::string::npos) << e.what();
      f64 = false;
    }
    const double range = f64 ? 1e5 : 8192;
    std::vector<double> big = random_values(4000, -range, range, 23),
                        huge = random_values(4000, -1e6, 1e6, 24);
    big.insert(big.end(), {355.0, 8191.0, range - 0.5, 1e-3, -2.5, 0.0});
    for (DType dt : {dtypes::float32, dtypes::float64}) {
      if (dt == dtypes::float64 && !f64) continue;
      const bool f32 = dt == dtypes::float32;
      auto round = [&](std::vector<double> v) {
        for (double& x : v) x = round_to(x, dt);
        return v;
      };
      const std::vector<double> w = round(wide), p = round(pos), b = round(f32 ? big : huge);
      const std::vector<double> e = values_of(make_tensor(w, {int64_t(w.size())}, dt, dev).exp2());
      const std::vector<double> l = values_of(make_tensor(p, {int64_t(p.size())}, dt, dev).log2());
      const std::vector<double> s = values_of(make_tensor(b, {int64_t(b.size())}, dt, dev).sin());
      double worst_e = 0, worst_l = 0, worst_s = 0;
      for (size_t i = 0; i < w.size(); ++i)
        worst_e = std::max(worst_e, (f32 ? ulps32 : ulps64)(e[i], std::exp2(w[i])));
      for (size_t i = 0; i < p.size(); ++i)
        worst_l = std::max(worst_l, (f32 ? ulps32 : ulps64)(l[i], std::log2(p[i])));
      for (size_t i = 0; i < b.size(); ++i)
        worst_s = std::max(worst_s, (f32 ? ulps32 : ulps64)(s[i], std::sin(b[i])));
      EXPECT_LE(worst_e, 2.0) << dev << " " << dt.name() << " exp2";
      EXPECT_LE(worst_l, f32 ? 3.0 : 2.0) << dev << " " << dt.name() << " log2";
      EXPECT_LE(worst_s, 2.0) << dev << " " << dt.name() << " sin";
      std::printf("%s %s: worst exp2 %.2f, log2 %.2f, sin %.2f ULP\n", dev.c_str(),
                  dt.name().c_str(), worst_e, worst_l, worst_s);
    }
  }
}

// The C backend's float32 exp2 is a polynomial the loop vectorizer vectorizes: within 2 ULP of
// the exact value (1.15 measured), with libm's results at the edges.
TEST(CpuMath, Exp2IsWithinTwoUlpsAndExactAtTheEdges) {
  std::vector<double> x = random_values(4096, -160, 140, 31);
  const std::vector<double> near_zero = random_values(4096, -1, 1, 32);
  x.insert(x.end(), near_zero.begin(), near_zero.end());
  for (double& v : x) v = round_to(v, dtypes::float32);
  const std::vector<double> got =
      values_of(make_tensor(x, {int64_t(x.size())}, dtypes::float32, "CPU").exp2());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulps32(got[i], std::exp2(x[i])));
  EXPECT_LE(worst, 2.0);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> edges{inf, -inf, std::nan(""), 128, -126, -149, -149.5, -150, 0, -0.0};
  const std::vector<double> e =
      values_of(make_tensor(edges, {int64_t(edges.size())}, dtypes::float32, "CPU").exp2());
  for (size_t i = 0; i < edges.size(); ++i) {
    const float want = std::exp2(static_cast<float>(edges[i]));
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(e[i]));
    else
      EXPECT_EQ(e[i], want) << "exp2(" << edges[i] << ")";
  }
}

// Printing and the harness read each tensor in its own dtype and convert on the host, so a
// device without float64 prints and checks every other dtype. Run by ctest with
// VKGRAD_VK_DISABLE=fp64 (tensor_vulkan_no_fp64), where float64 itself is refused.
TEST(VulkanNoFloat64, PrintingAndTheHarnessNeedNoFloat64) {
  const std::vector<std::string> vks = vulkan_devices();
  if (vks.empty()) GTEST_SKIP() << "no Vulkan device here";
  const char* disabled = std::getenv("VKGRAD_VK_DISABLE");
  const bool masked = disabled && std::string(disabled).find("fp64") != std::string::npos;
  const int64_t before = runtime_stats().validation_messages;
  for (const std::string& dev : vks) {
    SCOPED_TRACE(dev);
    if (masked) {
      EXPECT_THROW((void)(make_tensor({1}, {1}, dtypes::float64, dev) + 1).realize(), DTypeError);
    }
    const Tensor f = make_tensor({1.5, -2, 0.25}, {3}, dtypes::float32, dev) * 2.0;
    const std::string s = f.to_string();
    EXPECT_NE(s.find("[3, -4, 0.5]"), std::string::npos) << s;
    EXPECT_NE((make_tensor({1.5}, {1}, dtypes::float16, dev) + 1.0).to_string().find("[2.5]"),
              std::string::npos);
    std::ostringstream os;
    os << Tensor::from_vector<int64_t>({(int64_t{1} << 53) + 1}, {1}, {}, dev) + 0;
    EXPECT_NE(os.str().find("[9007199254740993]"), std::string::npos) << os.str();

    // Every dtype but float64 through Batch (bits of each element size concatenated), rows and
    // values_of; the float32 edge values (a subnormal, inf, NaN) come back exactly.
    const double tiny = std::ldexp(1.0, -140);  // a float32 subnormal
    Batch b;
    b.add(make_tensor({-0.0, tiny, kInf(), std::nan("")}, {4}, dtypes::float32, dev), {4},
          dtypes::float32, {-0.0, tiny, kInf(), std::nan("")});
    b.add(f.reshape({3, 1}), {3, 1}, dtypes::float32, {3, -4, 0.5});
    b.add(make_tensor({1.5, -3}, {2}, dtypes::float16, dev) * 2.0, {2}, dtypes::float16, {3, -6});
    b.add(make_tensor({1.5, -3}, {2}, dtypes::bfloat16, dev) + 1.0, {2}, dtypes::bfloat16,
          {2.5, -2});
    b.add(make_tensor({-7, 100}, {2}, dtypes::int8, dev) * 2, {2}, dtypes::int8, {-14, -56});
    b.add(make_tensor({65535, 3}, {2}, dtypes::uint16, dev) + 1, {2}, dtypes::uint16, {0, 4});
    b.add(make_tensor({-5, 6}, {2}, dtypes::int32, dev).sum(), {}, dtypes::int32, {1});
    b.add(make_tensor({-5, 6}, {2}, dtypes::int64, dev) * 3, {2}, dtypes::int64, {-15, 18});
    b.add(make_tensor({0, 2}, {2}, dtypes::int32, dev) > 1, {2}, dtypes::bool_, {0, 1});
    b.check();
    expect_rows(
        {{"exp", make_tensor({0, 1}, {2}, dtypes::float32, dev).exp(), {1, std::exp(1.0)}, 2e-6},
         {"neg", -make_tensor({0, 1}, {2}, dtypes::float32, dev), {0, -1}}});
    expect_near(values_of(make_tensor({0.5, -1}, {2}, dtypes::float16, dev).exp()),
                {std::exp(0.5), std::exp(-1.0)}, 2e-3, 0, "float16 exp");
  }
  EXPECT_EQ(runtime_stats().validation_messages, before);
}

// Tensor::to carries gradients: a COPY back to the source's device in the backward pass, however
// the copied buffer is reached later (a temporary, a realized result), in both directions; the
// results match values computed in double precision.
TEST(CrossDevice, GradientsFlowThroughTo) {
  const std::vector<std::string> vks = vulkan_devices();
  if (vks.empty()) GTEST_SKIP() << "no Vulkan device here";
  const int64_t before = runtime_stats().validation_messages;
  const std::vector<double> xv = random_values(6, -1.5, 1.5, 41), wv = random_values(6, 0.5, 2, 42);
  for (const std::string& dev : vks) {
    SCOPED_TRACE(dev);
    auto grad_of = [](const Tensor& t) {
      EXPECT_TRUE(t.grad().has_value());
      return t.grad() ? values_of(*t.grad()) : std::vector<double>{};
    };
    std::vector<double> want(6);
    {  // CPU -> VULKAN, the loss on VULKAN
      Tensor x = make_tensor(xv, {2, 3}, dtypes::float32, "CPU").requires_grad_();
      const Tensor w = make_tensor(wv, {2, 3}, dtypes::float32, dev);
      const Tensor y = x.to(dev);
      Tensor loss = (y.exp() * w).sum();
      loss.backward();
      ASSERT_TRUE(x.grad());
      EXPECT_EQ(x.grad()->device(), "CPU");
      for (size_t i = 0; i < 6; ++i)
        want[i] = std::exp(round_to(xv[i], dtypes::float32)) * round_to(wv[i], dtypes::float32);
      expect_near(grad_of(x), want, 1e-5, 1e-6, "exp * w on " + dev);
    }
    {  // CPU -> VULKAN -> CPU through temporaries, the loss on the CPU
      Tensor x = make_tensor(xv, {2, 3}, dtypes::float32, "CPU").requires_grad_();
      Tensor z = (x.to(dev).sin() * 2.0).to("CPU");  // x.to(dev) is gone after this line
      Tensor loss = (z * z).sum();
      loss.backward();
      for (size_t i = 0; i < 6; ++i) {
        const double v = round_to(xv[i], dtypes::float32);
        want[i] = 8 * std::sin(v) * std::cos(v);
      }
      expect_near(grad_of(x), want, 1e-5, 1e-6, "(2 sin x)^2 through " + dev);
    }
    {  // a realized result on VULKAN, and x used on both devices
      Tensor x = make_tensor(xv, {2, 3}, dtypes::float32, "CPU").requires_grad_();
      Tensor h = (x.to(dev).reshape({3, 2}) * 3.0).realize();
      Tensor loss = (x * x).sum() + h.sum().to("CPU");
      loss.backward();
      for (size_t i = 0; i < 6; ++i) want[i] = 2 * round_to(xv[i], dtypes::float32) + 3;
      expect_near(grad_of(x), want, 1e-6, 1e-6, "x^2 + 3x on two devices");
    }
    {  // a parameter on VULKAN, the loss on the CPU: its gradient comes back to VULKAN
      Tensor p = make_tensor(xv, {6}, dtypes::float32, dev).requires_grad_();
      Tensor loss = (p.to("CPU").square() * make_tensor(wv, {6}, dtypes::float32, "CPU")).sum();
      loss.backward();
      ASSERT_TRUE(p.grad());
      EXPECT_EQ(p.grad()->device(), dev);
      for (size_t i = 0; i < 6; ++i)
        want[i] = 2 * round_to(xv[i], dtypes::float32) * round_to(wv[i], dtypes::float32);
      expect_near(grad_of(p), want, 1e-5, 1e-6, "p^2 * w from " + dev);
    }
    {  // a copy of a value that needs no gradient keeps nothing of its source graph
      const Tensor a = make_tensor(xv, {6}, dtypes::float32, "CPU") * 2.0;
      const Tensor b = a.to(dev);
      EXPECT_FALSE(engine::origin(engine::as_buffer(tensor::uop(b))));
      expect_near(values_of(b), values_of(a), 0, 0, "the copy's values");
    }
  }
  EXPECT_EQ(runtime_stats().validation_messages, before);
}

// An op that mixes devices is refused (at the op where it can tell, else at realize) instead of
// letting one device's kernel read another's memory.
TEST(CrossDevice, MixingDevicesIsADeviceError) {
  if (!has(devices(), "VULKAN")) GTEST_SKIP() << "no Vulkan device here";
  const Tensor cpu = Tensor::from_vector<float>({1, 2, 3}, {3}, {}, "CPU");
  const Tensor vk = Tensor::from_vector<float>({4, 5, 6}, {3}, {}, "VULKAN");
  EXPECT_THROW((void)(cpu + vk), DeviceError);
  EXPECT_THROW((void)where(cpu > 1, vk, vk), DeviceError);
  const Tensor idx = Tensor::from_vector<int32_t>({0, 2}, {2}, {}, "CPU");
  EXPECT_THROW((void)vk.gather(0, idx), DeviceError);
  // A literal condition goes where the values are.
  EXPECT_EQ(where(Tensor(true), vk, 0.0).to_vector<float>(), (std::vector<float>{4, 5, 6}));
}

}  // namespace
}  // namespace vkgrad::testing
