// tests/tensor: device names and selection, the machine without Vulkan, and every Vulkan device
// against the CPU backend on the same inputs (beyond each suite's double-precision references).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string_view>
#include <vkgrad/stats.hpp>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

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

// exp2, log2 and sin of every float dtype on a device, against the C library in long double:
// special values (+-0, +-inf, NaN), subnormals, every power of two, values spread over every
// exponent, and for sin arguments next to multiples of pi/2 and huge ones. Returns the worst
// error in ULP of the dtype per function; a special value that is not exact is reported as inf.
// `flushes`: the device may flush float32 subnormals to zero (lavapipe does), in the argument or
// the result.
struct Worst {
  double exp2 = 0, log2 = 0, sin = 0;
};
Worst transcendental_ulps(const std::string& dev, DType dt, bool flushes) {
  const bool f64 = dt == dtypes::float64;
  const int mantissa = f64 ? 52 : dt == dtypes::float16 ? 10 : dt == dtypes::bfloat16 ? 7 : 23;
  const int emin = f64 ? -1022 : dt == dtypes::float16 ? -14 : -126;
  const int emax = f64 ? 1023 : dt == dtypes::float16 ? 15 : 127;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {0.0, -0.0, inf, -inf, std::nan(""), 1, -1, 0.5, 3, -2.5, 100, -100};
  for (int e = emin - mantissa; e <= emax; ++e)
    x.insert(x.end(), {std::ldexp(1.0, e), -std::ldexp(1.0, e)});
  for (int i = 1; i <= 32; ++i) x.push_back(std::ldexp(1.0 + i / 33.0, emin - 1 - i % mantissa));
  // Values over every exponent: a random mantissa and exponent.
  const std::vector<double> m = random_values(3000, 1, 2, 41),
                            e = random_ints(3000, emin, emax, 42);
  for (size_t i = 0; i < m.size(); ++i) x.push_back((i % 2 ? -1 : 1) * std::ldexp(m[i], int(e[i])));
  for (double v : random_values(3000, -200, 200, 43)) x.push_back(v);
  for (double v : random_values(1000, -1, 1, 44)) x.push_back(v);
  // Next to multiples of pi/2, small and large.
  for (int k = 1; k < 600; ++k) x.push_back(k * 1.5707963267948966);
  for (double v : random_ints(600, 1, 1000000, 45)) x.push_back(v * 1.5707963267948966);
  for (double& v : x) v = round_to(v, dt);
  const int64_t n = static_cast<int64_t>(x.size());
  const Tensor t = make_tensor(x, {n}, dt, dev);
  const std::vector<double> got_e = values_of(t.exp2()), got_l = values_of(t.log2()),
                            got_s = values_of(t.sin());
  const double top = f64 ? 1.6e6 : inf;  // float64 sin is accurate below 1.6e6
  // The error in ULP of dt at the exact value; an exact result (an infinity, a zero, NaN) must be
  // exact, but a subnormal float32 may be flushed to zero.
  auto ulps = [&](double got, long double exact) {
    const double want = round_to(static_cast<double>(exact), dt);
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : inf;
    if (std::isinf(want)) return got == want ? 0.0 : inf;
    if (exact == 0) return got == 0 && std::signbit(got) == std::signbit(want) ? 0.0 : inf;
    if (flushes && !f64 && std::abs(want) < std::ldexp(1.0, -126) && got == 0) return 0.0;
    const double spacing =
        std::ldexp(1.0, std::max(std::ilogb(static_cast<double>(exact)), emin) - mantissa);
    return static_cast<double>(std::abs(static_cast<long double>(got) - exact)) / spacing;
  };
  Worst w;
  for (int64_t i = 0; i < n; ++i) {
    const long double v = x[size_t(i)];
    // A flushed subnormal argument computes the function of zero.
    const bool sub = flushes && !f64 && v != 0 && std::abs(double(v)) < std::ldexp(1.0, -126);
    auto worst = [&](double& into, double got, long double exact, long double at_zero) {
      double u = ulps(got, exact);
      if (sub) u = std::min(u, ulps(got, at_zero));
      into = std::max(into, u);
    };
    worst(w.exp2, got_e[size_t(i)], exp2l(v), 1.0L);
    worst(w.log2, got_l[size_t(i)], log2l(v), -std::numeric_limits<long double>::infinity());
    if (std::abs(x[size_t(i)]) < top)
      worst(w.sin, got_s[size_t(i)], sinl(v), std::signbit(x[size_t(i)]) ? -0.0L : 0.0L);
  }
  return w;
}

// The ULP bounds of exp2, log2 and sin on every device (transcendental.cpp measures them; the CPU
// runs libm's where cpu::host_target says it has them, which are within them too). The half
// types compute in float32 and round once: within 1 ULP of their own. float64 sin is held to its
// bound for |x| < 1.6e6.
void expect_transcendentals_within_bounds(const std::string& dev, bool f64, bool flushes) {
  for (DType dt : {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::bfloat16}) {
    if (dt == dtypes::float64 && !f64) continue;
    const bool half = dt == dtypes::float16 || dt == dtypes::bfloat16;
    const Worst w = transcendental_ulps(dev, dt, flushes);
    EXPECT_LE(w.exp2, half ? 1.0 : 1.5) << dev << " " << dt.name() << " exp2";
    EXPECT_LE(w.log2, 1.0) << dev << " " << dt.name() << " log2";
    EXPECT_LE(w.sin, half ? 1.0 : 1.5) << dev << " " << dt.name() << " sin";
    std::printf("%s %s: worst exp2 %.3f, log2 %.3f, sin %.3f ULP\n", dev.c_str(), dt.name().c_str(),
                w.exp2, w.log2, w.sin);
  }
}

// A float32 result below 2^-126 comes back as zero on the CPU (its kernels run with MXCSR's
// flush-to-zero bit: subnormal arithmetic takes microcode assists), a subnormal input is still
// read exactly, float64 keeps gradual underflow, and the calling thread's mode is as it was: its
// control bits (flush-to-zero, denormals-are-zero, rounding, the exception masks), not the sticky
// status flags below bit 6, which the test's own float64 arithmetic may raise on the host.
TEST(CpuMath, Float32SubnormalResultsFlushToZero) {
  if (const char* v = std::getenv("VKGRAD_CPU_SUBNORMALS"); v && std::string_view(v) == "1")
    GTEST_SKIP() << "VKGRAD_CPU_SUBNORMALS=1 keeps them";
#if defined(__x86_64__) || defined(__i386__)
  constexpr unsigned kControlBits = ~0x3fu;
  const unsigned mode = _mm_getcsr() & kControlBits;
#endif
  const float tiny = std::ldexp(1.0f, -140);  // a float32 subnormal
  const Tensor a = Tensor::from_vector(std::vector<float>{1e-20f, tiny, 1.0f}, {3}, {}, "CPU");
  const std::vector<float> small = (a * 1e-20f).to_vector<float>();
  EXPECT_EQ(small[0], 0.0f);  // 1e-40 would be subnormal
  EXPECT_FALSE(std::signbit(small[0]));
  EXPECT_EQ(small[1], 0.0f);
  EXPECT_EQ(small[2], 1e-20f);
  EXPECT_EQ((a * 1048576.0f).to_vector<float>()[1], std::ldexp(1.0f, -120));  // read exactly
  const Tensor d = Tensor::from_vector(std::vector<double>{1e-160}, {1}, {}, "CPU");
  EXPECT_EQ((d * 1e-160).to_vector<double>()[0], 1e-160 * 1e-160);  // 1e-320, subnormal, kept
  EXPECT_NE((d * 1e-160).to_vector<double>()[0], 0.0);
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(_mm_getcsr() & kControlBits, mode);
#endif
}

TEST(CpuMath, TranscendentalsWithinTheirUlpBounds) {
  expect_transcendentals_within_bounds("CPU", true, true);  // float32 subnormals flushed
}

// Without float64 (VKGRAD_VK_DISABLE=fp64 in the tensor_vulkan_no_fp64 test) the float32 ones are
// the same: their reduction needs no float64.
TEST(VulkanMath, TranscendentalsWithinTheirUlpBounds) {
  const std::vector<std::string> vks = vulkan_devices();
  if (vks.empty()) GTEST_SKIP() << "no Vulkan device here";
  const int64_t before = runtime_stats().validation_messages;
  for (const std::string& dev : vks) {
    bool f64 = true;
    try {
      (void)(make_tensor({1}, {1}, dtypes::float64, dev) + 1).realize();
    } catch (const DTypeError& e) {
      EXPECT_NE(std::string(e.what()).find("shaderFloat64"), std::string::npos) << e.what();
      f64 = false;
    }
    expect_transcendentals_within_bounds(dev, f64, true);
  }
  EXPECT_EQ(runtime_stats().validation_messages, before);
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
