// tests: hand-built kernel ASTs with symbolic sizes — DEFINE_VAR in global and reduce range ends,
// in index expressions and as a value — with their results computed in double, and a runner
// that renders, compiles and launches them on any Runtime. Shared by the codegen, CPU and
// Vulkan suites.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/pipeline.hpp"
#include "ir/uop.hpp"
#include "runtime/device.hpp"

namespace vkgrad::symbolic_kernels {

constexpr int64_t kMin = 1, kMax = 1000;
constexpr int64_t kInner = 16;  // the constant axis of the 2-D kernels

inline UOp var_n(int64_t min = kMin) { return UOp::variable("n", min, kMax); }
inline UOp buffer(int64_t slot, int64_t count) {
  return UOp::define_global(dtypes::float32.ptr(count), slot);
}
inline UOp idx(int64_t v) { return UOp::const_(dtypes::index, v); }

// The inputs every case reads: input slot s holds value(s, i) at element i.
inline float value(int64_t slot, int64_t i) {
  return static_cast<float>((i * 7 + slot * 3) % 23) * 0.25f - 2.5f;
}

struct Case {
  std::string name;
  UOp ast;
  std::vector<int64_t> counts;  // elements per buffer slot (slot 0 the output), at n's maximum
  // The first outputs for n, in double.
  std::function<std::vector<double>(int64_t n)> expected;
};

// out[i] = a[i] * 2 + 1 for i < n.
inline Case elementwise(int64_t min = kMin) {
  const UOp i = UOp::range(var_n(min), 0, AxisType::global);
  const UOp v = buffer(1, kMax).index(i).load() * 2.0 + 1.0;
  return {
      "elementwise", UOp::sink({buffer(0, kMax).index(i).store(v)}), {kMax, kMax}, [](int64_t n) {
        std::vector<double> out;
        for (int64_t i = 0; i < n; ++i) out.push_back(double{value(1, i)} * 2 + 1);
        return out;
      }};
}

// out[0] = sum of a[j] for j < n.
inline Case sum(int64_t min = kMin) {
  const UOp j = UOp::range(var_n(min), 0, AxisType::reduce);
  const UOp r =
      UOp::make(Ops::REDUCE, dtypes::float32, {buffer(1, kMax).index(j).load(), j}, Ops::ADD);
  return {"sum", UOp::sink({buffer(0, 1).index(idx(0)).store(r)}), {1, kMax}, [](int64_t n) {
            double s = 0;
            for (int64_t j = 0; j < n; ++j) s += value(1, j);
            return std::vector<double>{s};
          }};
}

// out[0] = (sum of a[j] for j < n) / n: the variable as a value.
inline Case mean() {
  const UOp n = var_n();
  const UOp j = UOp::range(n, 0, AxisType::reduce);
  const UOp r =
      UOp::make(Ops::REDUCE, dtypes::float32, {buffer(1, kMax).index(j).load(), j}, Ops::ADD);
  return {"mean",
          UOp::sink({buffer(0, 1).index(idx(0)).store(r / n.cast(dtypes::float32))}),
          {1, kMax},
          [](int64_t n) {
            double s = 0;
            for (int64_t j = 0; j < n; ++j) s += value(1, j);
            return std::vector<double>{s / static_cast<double>(n)};
          }};
}

// out[i, j] = a[i, j] + b[j] for i < n (symbolic outer axis), j < 16.
inline Case rows_plus_bias() {
  const UOp i = UOp::range(var_n(), 0, AxisType::global);
  const UOp j = UOp::range(kInner, 1, AxisType::global);
  const UOp flat = i * kInner + j;
  const UOp v = buffer(1, kMax * kInner).index(flat).load() + buffer(2, kInner).index(j).load();
  return {"rows_plus_bias",
          UOp::sink({buffer(0, kMax * kInner).index(flat).store(v)}),
          {kMax * kInner, kMax * kInner, kInner},
          [](int64_t n) {
            std::vector<double> out;
            for (int64_t k = 0; k < n * kInner; ++k)
              out.push_back(double{value(1, k)} + double{value(2, k % kInner)});
            return out;
          }};
}

// out[i] = sum of a[i, j] for j < 16, i < n: a symbolic outer axis over a constant reduction.
inline Case row_sums() {
  const UOp i = UOp::range(var_n(), 0, AxisType::global);
  const UOp j = UOp::range(kInner, 1, AxisType::reduce);
  const UOp r = UOp::make(Ops::REDUCE, dtypes::float32,
                          {buffer(1, kMax * kInner).index(i * kInner + j).load(), j}, Ops::ADD);
  return {"row_sums",
          UOp::sink({buffer(0, kMax).index(i).store(r)}),
          {kMax, kMax * kInner},
          [](int64_t n) {
            std::vector<double> out;
            for (int64_t i = 0; i < n; ++i) {
              double s = 0;
              for (int64_t j = 0; j < kInner; ++j) s += value(1, i * kInner + j);
              out.push_back(s);
            }
            return out;
          }};
}

// out[i, j] = a[i, j] * (i + 1) for i < 4, j < n: a symbolic inner axis (strides over n).
inline Case scaled_columns() {
  const UOp n = var_n();
  const UOp i = UOp::range(4, 0, AxisType::global);
  const UOp j = UOp::range(n, 1, AxisType::global);
  const UOp flat = i * n + j;
  const UOp v = buffer(1, 4 * kMax).index(flat).load() * (i + 1).cast(dtypes::float32);
  return {"scaled_columns",
          UOp::sink({buffer(0, 4 * kMax).index(flat).store(v)}),
          {4 * kMax, 4 * kMax},
          [](int64_t n) {
            std::vector<double> out;
            for (int64_t k = 0; k < 4 * n; ++k)
              out.push_back(double{value(1, k)} * static_cast<double>(k / n + 1));
            return out;
          }};
}

inline std::vector<Case> all_cases() {
  return {elementwise(), sum(), mean(), rows_plus_bias(), row_sums(), scaled_columns()};
}

// Values of n each case runs with: the bounds and a few between.
inline const std::vector<int64_t> kValues = {kMin, 3, 64, 333, 999, kMax};

// One case's buffers and compiled kernel on a runtime.
class Launcher {
 public:
  Launcher(Runtime& rt, const Case& c) : rt_(rt), case_(c) {
    program = codegen(c.ast, {}, rt.target());
    kernel = rt.compile(program);
    for (size_t s = 0; s < c.counts.size(); ++s) {
      void* h = rt.alloc(static_cast<size_t>(c.counts[s]) * sizeof(float));
      std::vector<float> data(static_cast<size_t>(c.counts[s]));
      for (size_t i = 0; i < data.size(); ++i)
        data[i] = s == 0 ? NAN : value(static_cast<int64_t>(s), static_cast<int64_t>(i));
      rt.copy_in(h, data.data(), data.size() * sizeof(float));
      buffers.push_back(h);
    }
  }
  ~Launcher() {
    for (void* h : buffers) rt_.free(h);
  }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  KernelLaunch launch(std::vector<int64_t> vars) const {
    return {kernel.get(), buffers, std::move(vars)};
  }
  // The output for n compared with the case's values in double. Inputs are multiples of 1/4,
  // so every sum is exact in float32 and only the mean's division rounds.
  void expect_output(int64_t n) const {
    const std::vector<double> want = case_.expected(n);
    std::vector<float> got(want.size());
    rt_.copy_out(got.data(), buffers[0], got.size() * sizeof(float));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::abs(want[i])))
          << case_.name << " n=" << n << " element " << i;
  }

  Program program;
  std::shared_ptr<CompiledKernel> kernel;
  std::vector<void*> buffers;

 private:
  Runtime& rt_;
  const Case& case_;
};

// Every case launched once per value of kValues, each result checked.
inline void expect_every_case_for_every_value(Runtime& rt) {
  for (const Case& c : all_cases()) {
    Launcher l(rt, c);
    for (int64_t n : kValues) {
      const KernelLaunch launch = l.launch({n});
      rt.run({&launch, 1}, nullptr);
      l.expect_output(n);
    }
  }
}

// n = 0 is a value like any other: an elementwise kernel writes nothing (its output keeps the
// NaNs it was filled with), a sum gives 0.
inline void expect_zero_sized_launches(Runtime& rt) {
  const Case e = elementwise(0), s = sum(0);
  Launcher le(rt, e), ls(rt, s);
  const std::vector<KernelLaunch> launches{le.launch({0}), ls.launch({0})};
  rt.run(launches, nullptr);
  float first = 0;
  rt.copy_out(&first, le.buffers[0], sizeof first);
  EXPECT_TRUE(std::isnan(first));
  ls.expect_output(0);
}

}  // namespace vkgrad::symbolic_kernels
