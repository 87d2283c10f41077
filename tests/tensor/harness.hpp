// tests/tensor: the device-parameterized harness. Every tensor test is a TEST_P over the devices
// that open here (vkgrad::devices(), or VKGRAD_TEST_DEVICES="CPU,VULKAN"), and compares results
// with values computed in double precision in the test itself.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>
#include <vkgrad/vkgrad.hpp>

namespace vkgrad::testing {

std::vector<std::string> test_devices();

// Base fixture: GetParam() is the device name. dev() for creation calls.
// Every test fails if the Vulkan validation layer (VKGRAD_VALIDATION=1) reported anything while
// it ran.
class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& dev() const { return GetParam(); }
  void SetUp() override { validation_before_ = runtime_stats().validation_messages; }
  void TearDown() override {
    EXPECT_EQ(runtime_stats().validation_messages, validation_before_)
        << "the Vulkan validation layer reported problems (printed above)";
  }

 private:
  int64_t validation_before_ = 0;
};

// Instantiate a DeviceTest-derived suite on every device.
#define VKGRAD_ALL_DEVICES(Suite)                                                                  \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(::vkgrad::testing::test_devices()), \
                           [](const ::testing::TestParamInfo<std::string>& i) {                    \
                             std::string s = i.param;                                              \
                             for (char& c : s)                                                     \
                               if (!isalnum(static_cast<unsigned char>(c))) c = '_';               \
                             return s;                                                             \
                           })

// Deterministic pseudo-random doubles in [lo, hi) (splitmix64), the same on every run.
std::vector<double> random_values(int64_t n, double lo, double hi, uint64_t seed);
// Deterministic pseudo-random integers in [lo, hi].
std::vector<double> random_ints(int64_t n, int64_t lo, int64_t hi, uint64_t seed);

// A tensor of `dtype` holding `values` (converted exactly as a C cast would; float16/bfloat16
// rounded to nearest even).
Tensor make_tensor(const std::vector<double>& values, const Shape& shape, DType dtype,
                   const std::string& device);
// float32 random_values in [-1, 1) of `shape` on `device`.
Tensor random_tensor(const Shape& shape, uint64_t seed, const std::string& device);
// The tensor's values (realized) converted to double on the host, whatever its dtype (the device
// only copies the tensor's own bytes).
std::vector<double> values_of(const Tensor& t);
// One element of `dtype` from its bits (the low itemsize bytes of `bits`), as a double.
double value_from_bits(uint64_t bits, DType dtype);
// The value a double takes when stored in `dtype` and read back (wrapping for ints, rounding
// for floats, != 0 for bool).
double round_to(double v, DType dtype);

// Expect the tensor's shape, dtype, and every value within atol + rtol*|expected| (NaN must
// match NaN, Inf must match Inf with its sign). Reports the first mismatches with indices.
void expect_values(const Tensor& t, const Shape& shape, DType dtype,
                   const std::vector<double>& expected, double rtol = 0.0, double atol = 0.0);
// Whether `got` passes for `expected`: within atol + rtol*|expected|; NaN matches NaN and Inf
// matches Inf of the same sign.
bool value_matches(double got, double expected, double rtol, double atol);
// value_matches over two vectors, reporting the first `max_reports` mismatches under `what`.
void expect_near(const std::vector<double>& got, const std::vector<double>& expected, double rtol,
                 double atol, const std::string& what, int max_reports = 8);
// Default tolerances per dtype for results of float math (exact for ints and bool).
double default_rtol(DType dtype);

// Expect f() to throw E whose message contains every needle (the op, shapes, dtypes it names).
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << n << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// Row-major strides and index helpers for writing reference loops.
std::vector<int64_t> strides_of(const Shape& s);
int64_t numel_of(const Shape& s);
// The multi-index of flat position `i` in `shape`.
std::vector<int64_t> unflatten_index(int64_t i, const Shape& shape);

// Many small checks, few kernels: add() checks shape and dtype at once (they are known without
// running anything) and keeps the tensor; check() flattens every kept tensor, concatenates those
// of one element size (pad + add of their bits as unsigned integers of that size; bools with or)
// and reads each concatenation back once, in its own dtype: one kernel per element size, no
// float64 on the device. The host converts each value to double, which holds every value of
// every dtype exactly except 64-bit integers beyond 2^53 (the reference rounds them the same
// way). Failures name the line of the add() call.
class Batch {
 public:
  // Added to the labels of the following add() calls (e.g. the dtype of a loop).
  std::string context;

  ~Batch();
  void add(const Tensor& t, const Shape& shape, DType dtype, std::vector<double> expected,
           double rtol = 0, double atol = 0,
           std::source_location loc = std::source_location::current());
  void check();

 private:
  struct Item {
    std::string label;
    Tensor bits;  // flattened; the bits as an unsigned integer of the element's size (or bool)
    DType dtype;  // the dtype the bits hold
    std::vector<double> expected;
    double rtol, atol;
  };
  std::vector<Item> items_;
};

// Same-shaped results stacked as rows of one tensor (pad + add; or for bool): one kernel.
Tensor rows(const std::vector<Tensor>& ts);

struct Row {
  std::string name;
  Tensor got;
  std::vector<double> expected;
  double rtol = 0, atol = 0;
};
// All rows share a shape and dtype; they are realized as one tensor (rows()) and each compared
// with its own tolerance.
void expect_rows(const std::vector<Row>& rs);

}  // namespace vkgrad::testing
