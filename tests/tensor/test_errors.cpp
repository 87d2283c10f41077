// tests/tensor: user mistakes throw the right vkgrad::Error subclass, eagerly (when the op is
// called, not at realize), with a message naming the operation and the offending shapes, dtypes
// or values; and the library keeps working afterwards (each check runs a correct op next).
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_values;

// Runs `f`, expects an exception of type E (or a subclass), and checks that its message contains
// every string of `all` and at least one of each group in `any`.
template <class E>
void expect_error(const std::string& what, const std::function<void()>& f,
                  const std::vector<std::string>& all,
                  const std::vector<std::vector<std::string>>& any = {}) {
  SCOPED_TRACE(what);
  try {
    f();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& s : all)
      EXPECT_NE(msg.find(s), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << s << "\"";
    for (const auto& group : any) {
      bool found = false;
      for (const std::string& s : group) found = found || msg.find(s) != std::string::npos;
      EXPECT_TRUE(found) << "message \"" << msg << "\" names none of "
                         << ::testing::PrintToString(group);
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type; message: " << e.what();
    return;
  }
  ADD_FAILURE() << "no exception";
}

class ErrorsTest : public testing::DeviceTest {
 protected:
  Tensor f32(const Shape& s) const {
    std::vector<double> v(testing::numel_of(s));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
    return testing::make_tensor(v, s, dtypes::float32, dev());
  }
  Tensor i32(const Shape& s) const {
    std::vector<double> v(testing::numel_of(s), 3);
    return testing::make_tensor(v, s, dtypes::int32, dev());
  }
  // A correct computation after an error: the library still works.
  void still_works() const {
    SCOPED_TRACE("a correct op after the error");
    Tensor a = testing::make_tensor({1, 2, 3}, {3}, dtypes::float32, dev());
    expect_values((a + 1.0).sum(), {}, dtypes::float32, {9});
  }
};

TEST_P(ErrorsTest, MismatchedBroadcastIsShapeError) {
  Tensor a = f32({2, 3}), b = f32({4, 5});
  expect_error<ShapeError>("add", [&] { (void)(a + b); }, {"(2, 3)", "(4, 5)"}, {{"add", "+"}});
  still_works();
  expect_error<ShapeError>("mul",
                           [&] {
                             (void)a.mul(f32({3, 2}));
                           },
                           {"(2, 3)", "(3, 2)"}, {{"mul", "*"}});
  still_works();
  expect_error<ShapeError>("maximum",
                           [&] {
                             (void)a.maximum(f32({2, 2}));
                           },
                           {"(2, 3)", "(2, 2)"}, {{"maximum"}});
  expect_error<ShapeError>("lt", [&] { (void)(a < f32({3, 3})); }, {"(2, 3)", "(3, 3)"});
  expect_error<ShapeError>("where",
                           [&] {
                             (void)where(f32({2, 3}) > 0.0, a, f32({4, 3}));
                           },
                           {"(2, 3)", "(4, 3)"}, {{"where"}});
  still_works();
  // The operands are unharmed.
  expect_values(a + f32({1, 3}), {2, 3}, dtypes::float32, {0, 2, 4, 3, 5, 7});
}

TEST_P(ErrorsTest, InvalidAxisIsShapeError) {
  Tensor a = f32({2, 3});
  expect_error<ShapeError>("sum(2)", [&] { (void)a.sum(2); }, {"(2, 3)"}, {{"sum"}, {"2"}});
  expect_error<ShapeError>("sum(-3)", [&] { (void)a.sum(-3); }, {"(2, 3)", "-3"}, {{"sum"}});
  expect_error<ShapeError>("sum({0, 5})",
                           [&] {
                             (void)a.sum(std::vector<int>{0, 5});
                           },
                           {"(2, 3)", "5"}, {{"sum"}});
  expect_error<ShapeError>("max(7, true)", [&] { (void)a.max(7, true); }, {"(2, 3)", "7"},
                           {{"max"}});
  expect_error<ShapeError>("prod(-4)", [&] { (void)a.prod(-4); }, {"(2, 3)"}, {{"prod"}});
  still_works();
  expect_error<ShapeError>("permute out of range",
                           [&] {
                             (void)a.permute({0, 2});
                           },
                           {"(2, 3)"}, {{"permute"}});
  expect_error<ShapeError>("permute repeat",
                           [&] {
                             (void)a.permute({0, 0});
                           },
                           {"(2, 3)"}, {{"permute"}});
  expect_error<ShapeError>("permute missing axis", [&] { (void)a.permute({1}); }, {"(2, 3)"},
                           {{"permute"}});
  expect_error<ShapeError>("permute too many",
                           [&] {
                             (void)a.permute({1, 0, 2});
                           },
                           {"(2, 3)"}, {{"permute"}});
  expect_error<ShapeError>("transpose", [&] { (void)a.transpose(0, 5); }, {"(2, 3)", "5"},
                           {{"transpose", "permute"}});
  expect_error<ShapeError>("flip", [&] { (void)a.flip(2); }, {"(2, 3)"}, {{"flip"}});
  expect_error<ShapeError>("T of 3-D", [&] { (void)f32({2, 3, 4}).T(); }, {"(2, 3, 4)"});
  still_works();
  expect_values(a.permute({1, 0}).sum(-1), {3}, dtypes::float32, {3, 5, 7});
}

TEST_P(ErrorsTest, BadReshapeIsShapeError) {
  Tensor a = f32({2, 3});
  expect_error<ShapeError>("element count",
                           [&] {
                             (void)a.reshape({4, 2});
                           },
                           {"(2, 3)", "(4, 2)"}, {{"reshape"}});
  expect_error<ShapeError>("two -1",
                           [&] {
                             (void)a.reshape({-1, -1});
                           },
                           {"(2, 3)"}, {{"reshape"}, {"-1"}});
  expect_error<ShapeError>("-1 not dividing",
                           [&] {
                             (void)a.reshape({-1, 4});
                           },
                           {"(2, 3)"}, {{"reshape"}});
  expect_error<ShapeError>("negative size",
                           [&] {
                             (void)a.reshape({-2, -3});
                           },
                           {"(2, 3)"}, {{"reshape"}});
  still_works();
  expect_values(a.reshape({3, -1}), {3, 2}, dtypes::float32, {0, 1, 2, 3, 4, 5});
}

TEST_P(ErrorsTest, BadPadShrinkExpandIsShapeError) {
  Tensor a = f32({2, 3});
  expect_error<ShapeError>("pad wrong length",
                           [&] {
                             (void)a.pad({{1, 1}});
                           },
                           {"(2, 3)"}, {{"pad"}});
  expect_error<ShapeError>("pad too long",
                           [&] {
                             (void)a.pad({{1, 1}, {0, 0}, {0, 0}});
                           },
                           {"(2, 3)"}, {{"pad"}});
  expect_error<ShapeError>("shrink end past size",
                           [&] {
                             (void)a.shrink({{0, 3}, {0, 3}});
                           },
                           {"(2, 3)"}, {{"shrink"}});
  expect_error<ShapeError>("shrink start after end",
                           [&] {
                             (void)a.shrink({{1, 0}, {0, 3}});
                           },
                           {"(2, 3)"}, {{"shrink"}});
  expect_error<ShapeError>("shrink negative start",
                           [&] {
                             (void)a.shrink({{-1, 2}, {0, 3}});
                           },
                           {"(2, 3)"}, {{"shrink"}});
  expect_error<ShapeError>("shrink wrong length",
                           [&] {
                             (void)a.shrink({{0, 1}});
                           },
                           {"(2, 3)"}, {{"shrink"}});
  still_works();
  expect_error<ShapeError>("expand a non-1 dim",
                           [&] {
                             (void)a.expand({4, 3});
                           },
                           {"(2, 3)", "(4, 3)"}, {{"expand"}});
  expect_error<ShapeError>("expand to fewer dims", [&] { (void)a.expand({3}); }, {"(2, 3)"},
                           {{"expand"}});
  expect_error<ShapeError>("negative shape",
                           [&] {
                             (void)Tensor::zeros({-1, 2}, {}, dev());
                           },
                           {"-1"});
  still_works();
  expect_values(a.pad({{1, 0}, {0, 0}}).shrink({{0, 2}, {1, 2}}), {2, 1}, dtypes::float32, {0, 1});
}

// A shape whose element count (or size in bytes) does not fit in int64 is refused by the op that
// would create it, naming the op and the shape; nothing is allocated. With a zero dimension the
// other dimensions' product must still fit.
TEST_P(ErrorsTest, ShapesWhoseElementCountOverflowsAreShapeError) {
  constexpr int64_t big = int64_t{1} << 32;
  const std::string d = dev();
  expect_error<ShapeError>("empty",
                           [&] {
                             (void)Tensor::empty({big, big, 4}, {}, d);
                           },
                           {"empty", "(4294967296, 4294967296, 4)", "int64"});
  expect_error<ShapeError>("zeros",
                           [&] {
                             (void)Tensor::zeros({big, big}, {}, d);
                           },
                           {"zeros", "(4294967296, 4294967296)"});
  expect_error<ShapeError>("ones with a zero dimension",
                           [&] {
                             (void)Tensor::ones({0, big, big}, {}, d);
                           },
                           {"ones", "(0, 4294967296, 4294967296)"});
  expect_error<ShapeError>("full", [&] { (void)Tensor::full({big, big}, 7, {}, d); }, {"full"});
  // 2^62 float32 elements fit, their bytes do not.
  expect_error<ShapeError>("zeros bytes",
                           [&] {
                             (void)Tensor::zeros({big, big / 4}, {}, d);
                           },
                           {"zeros", "(4294967296, 1073741824)", "float32", "bytes"});
  expect_error<ShapeError>("rand",
                           [&] {
                             (void)Tensor::rand({big, big}, {}, d);
                           },
                           {"rand", "(4294967296, 4294967296)"});
  expect_error<ShapeError>("randint",
                           [&] {
                             (void)Tensor::randint({big, big}, 0, 5, {}, d);
                           },
                           {"randint", "(4294967296, 4294967296)"});
  expect_error<ShapeError>(
      "from_vector",
      [&] {
        (void)Tensor::from_vector<float>(std::vector<float>{1.0f}, {big, big, 4}, {}, d);
      },
      {"from_vector", "(4294967296, 4294967296, 4)"});
  expect_error<ShapeError>("arange count",
                           [&] {
                             (void)Tensor::arange(std::numeric_limits<int64_t>::min(),
                                                  std::numeric_limits<int64_t>::max(), int64_t{1},
                                                  dtypes::int64, d);
                           },
                           {"arange"});
  expect_error<ShapeError>(
      "arange bytes",
      [&] { (void)Tensor::arange(int64_t{0}, int64_t{1} << 62, int64_t{1}, dtypes::int64, d); },
      {"arange", "int64", "bytes"});
  expect_error<ShapeError>(
      "linspace", [&] { (void)Tensor::linspace(0, 1, int64_t{1} << 62, {}, d); }, {"linspace"});
  expect_error<ShapeError>("eye", [&] { (void)Tensor::eye(big, {}, d); },
                           {"eye", "(4294967296, 4294967296)"});
  still_works();

  // Ops that grow a shape. The inputs are lazy constants: nothing is allocated.
  const Tensor col = Tensor::zeros({big, 1}, {}, d);
  const Tensor bytes = Tensor::zeros({big, big / 8}, dtypes::uint8, d);  // 2^61 elements fit
  expect_error<ShapeError>("reshape",
                           [&] {
                             (void)f32({2, 3}).reshape({-1, big, big});
                           },
                           {"reshape", "(-1, 4294967296, 4294967296)", "(2, 3)"});
  expect_error<ShapeError>("reshape with a zero",
                           [&] {
                             (void)Tensor::zeros({0}, {}, d).reshape({0, big, big});
                           },
                           {"reshape", "(0, 4294967296, 4294967296)"});
  expect_error<ShapeError>("expand",
                           [&] {
                             (void)col.expand({big, big, 4});
                           },
                           {"expand", "(4294967296, 4294967296, 4)"});
  expect_error<ShapeError>("pad",
                           [&] {
                             (void)bytes.pad({{0, 3 * big}, {0, 0}});
                           },
                           {"pad", "(17179869184, 536870912)"});
  expect_error<ShapeError>("pad past int64",
                           [&] {
                             (void)f32({2}).pad({{std::numeric_limits<int64_t>::max(), 1}});
                           },
                           {"pad", "(2,)"});
  expect_error<ShapeError>("repeat",
                           [&] {
                             (void)col.repeat({1, big});
                           },
                           {"repeat", "(4294967296, 1)", "(1, 4294967296)"});
  expect_error<ShapeError>("cat",
                           [&] {
                             (void)cat({bytes, bytes, bytes, bytes}, 0);
                           },
                           {"cat", "(17179869184, 536870912)"});
  expect_error<ShapeError>("stack",
                           [&] {
                             (void)stack({bytes, bytes, bytes, bytes}, 0);
                           },
                           {"stack", "(4, 4294967296, 536870912)"});
  expect_error<ShapeError>("add",
                           [&] {
                             (void)(col + Tensor::zeros({1, big}, {}, d));
                           },
                           {"(4294967296, 4294967296)"}, {{"add"}});
  expect_error<ShapeError>("where",
                           [&] { (void)where(col > 0.0, col, Tensor::zeros({big}, {}, d)); },
                           {"where", "(4294967296, 4294967296)"});
  expect_error<ShapeError>("matmul",
                           [&] {
                             (void)col.matmul(Tensor::zeros({1, big}, {}, d));
                           },
                           {"matmul"});
  expect_error<ShapeError>("one_hot",
                           [&] {
                             (void)Tensor::zeros({big, big / 4}, dtypes::int8, d).one_hot(8);
                           },
                           {"one_hot", "(4294967296, 1073741824, 8)"});
  expect_error<ShapeError>("cast", [&] { (void)bytes.cast(dtypes::float64); },
                           {"cast", "(4294967296, 536870912)", "float64", "bytes"});
  still_works();
  // Large shapes that fit are fine (and stay lazy).
  EXPECT_EQ(bytes.numel(), int64_t{1} << 61);
  EXPECT_EQ(col.expand({big, 4}).numel(), big * 4);
  EXPECT_EQ(Tensor::zeros({0, big}, {}, d).numel(), 0);
}

TEST_P(ErrorsTest, MatmulInnerDimensionMismatchIsShapeError) {
  Tensor a = f32({2, 3}), b = f32({4, 5});
  expect_error<ShapeError>("matmul", [&] { (void)a.matmul(b); }, {"(2, 3)", "(4, 5)"},
                           {{"matmul", "dot"}});
  expect_error<ShapeError>("free matmul", [&] { (void)matmul(a, f32({2, 3})); }, {"(2, 3)"});
  still_works();
}

TEST_P(ErrorsTest, BitwiseOnFloatsIsDTypeError) {
  Tensor a = f32({2, 3}), b = f32({2, 3});
  expect_error<DTypeError>("&", [&] { (void)(a & b); }, {"float32"}, {{"bitwise_and", "&"}});
  expect_error<DTypeError>("|", [&] { (void)(a | b); }, {"float32"}, {{"bitwise_or", "|"}});
  expect_error<DTypeError>("^", [&] { (void)(a ^ b); }, {"float32"}, {{"bitwise_xor", "^"}});
  expect_error<DTypeError>("~", [&] { (void)(~a); }, {"float32"}, {{"bitwise_not", "~"}});
  expect_error<DTypeError>(
      "float16 &", [&] { (void)(a.cast(dtypes::float16) & a.cast(dtypes::float16)); }, {"float16"});
  // A float and an int promote to float: still not bitwise.
  expect_error<DTypeError>("int & float", [&] { (void)(i32({2, 3}) & a); }, {"float32"});
  still_works();
  expect_error<DTypeError>("<< of float", [&] { (void)(a << 1); }, {"float32"}, {{"lshift", "<<"}});
  expect_error<DTypeError>(">> of float", [&] { (void)(a >> 1); }, {"float32"}, {{"rshift", ">>"}});
  expect_error<DTypeError>("float64 >>", [&] { (void)a.cast(dtypes::float64).rshift(2); },
                           {"float64"});
  still_works();
  expect_values(i32({2}) & 1, {2}, dtypes::int32, {1, 1});
}

TEST_P(ErrorsTest, HostTypeMismatchIsDTypeError) {
  Tensor i = i32({2, 2});
  expect_error<DTypeError>("to_vector<float> of int32", [&] { (void)i.to_vector<float>(); },
                           {"int32"}, {{"to_vector"}, {"float32", "float"}});
  expect_error<DTypeError>("to_vector<int64_t> of int32", [&] { (void)i.to_vector<int64_t>(); },
                           {"int32"}, {{"to_vector"}});
  expect_error<DTypeError>("to_vector<uint16_t> of float32",
                           [&] { (void)f32({2}).to_vector<uint16_t>(); }, {"float32"},
                           {{"to_vector"}});
  expect_error<DTypeError>("to_vector<bool> of int32", [&] { (void)i.to_vector<bool>(); },
                           {"int32"});
  expect_error<DTypeError>("item<int> of float32", [&] { (void)f32({1}).item<int32_t>(); },
                           {"float32"}, {{"item"}});
  expect_error<DTypeError>("item<double> of float32", [&] { (void)f32({}).item<double>(); },
                           {"float32"}, {{"item"}});
  still_works();
  expect_error<DTypeError>(
      "from_vector<float> as int32",
      [&] {
        (void)Tensor::from_vector<float>(std::vector<float>{1, 2}, {2}, dtypes::int32, dev());
      },
      {"int32"}, {{"from_vector"}});
  expect_error<DTypeError>(
      "from_vector<int16_t> as float16",
      [&] {
        (void)Tensor::from_vector<int16_t>(std::vector<int16_t>{1, 2}, {2}, dtypes::float16, dev());
      },
      {"float16"});
  expect_error<DTypeError>("from_vector<uint16_t> as float32",
                           [&] {
                             (void)Tensor::from_vector<uint16_t>(std::vector<uint16_t>{1, 2}, {2},
                                                                 dtypes::float32, dev());
                           },
                           {"float32"});
  still_works();
  // The matching host types work.
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{3, 3, 3, 3}));
  EXPECT_EQ(
      Tensor::from_vector<uint16_t>(std::vector<uint16_t>{0x3c00}, {1}, dtypes::bfloat16, dev())
          .to_vector<uint16_t>(),
      std::vector<uint16_t>{0x3c00});
}

TEST_P(ErrorsTest, FromVectorSizeMismatchIsShapeError) {
  expect_error<ShapeError>(
      "5 values for (2, 3)",
      [&] {
        (void)Tensor::from_vector<float>(std::vector<float>{1, 2, 3, 4, 5}, {2, 3}, {}, dev());
      },
      {"(2, 3)", "5"}, {{"from_vector"}});
  expect_error<ShapeError>(
      "7 values for (2, 3)",
      [&] {
        (void)Tensor::from_vector<int32_t>(std::vector<int32_t>(7, 1), {2, 3}, {}, dev());
      },
      {"(2, 3)", "7"});
  expect_error<ShapeError>(
      "bools",
      [&] {
        (void)Tensor::from_vector<bool>(std::vector<bool>{true}, {2, 2}, {}, dev());
      },
      {"(2, 2)"});
  still_works();
}

TEST_P(ErrorsTest, UnknownDeviceIsDeviceError) {
  expect_error<DeviceError>("zeros on NOPE", [] { (void)Tensor::zeros({2}, {}, "NOPE"); },
                            {"NOPE"});
  expect_error<DeviceError>(
      "from_vector on NOPE",
      [] { (void)Tensor::from_vector<float>(std::vector<float>{1}, {1}, {}, "NOPE"); }, {"NOPE"});
  expect_error<DeviceError>("full on NOPE", [] { (void)Tensor::full({2}, 1.0, {}, "NOPE"); },
                            {"NOPE"});
  expect_error<DeviceError>("to(NOPE)", [&] { (void)f32({2}).to("NOPE"); }, {"NOPE"});
  still_works();
}

TEST_P(ErrorsTest, ItemOfManyElementsIsShapeError) {
  expect_error<ShapeError>("item of 3", [&] { (void)f32({3}).item<float>(); }, {"3"}, {{"item"}});
  expect_error<ShapeError>("item of 0", [&] { (void)f32({0}).item<float>(); }, {"0"}, {{"item"}});
  still_works();
  EXPECT_EQ(f32({1, 1}).item<float>(), 0.0f);
}

TEST_P(ErrorsTest, DefaultConstructedTensorIsError) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  expect_error<Error>("shape", [&] { (void)t.shape(); }, {});
  expect_error<Error>("dtype", [&] { (void)t.dtype(); }, {});
  expect_error<Error>("numel", [&] { (void)t.numel(); }, {});
  expect_error<Error>("+", [&] { (void)(t + 1); }, {});
  expect_error<Error>("+ (right)", [&] { (void)(f32({2}) + t); }, {});
  expect_error<Error>("sum", [&] { (void)t.sum(); }, {});
  expect_error<Error>("reshape", [&] { (void)t.reshape({1}); }, {});
  expect_error<Error>("realize", [&] { (void)t.realize(); }, {});
  expect_error<Error>("to_vector", [&] { (void)t.to_vector<float>(); }, {});
  expect_error<Error>("to_string", [&] { (void)t.to_string(); }, {});
  expect_error<Error>("where", [&] { (void)where(t, f32({2}), f32({2})); }, {});
  still_works();
  // Assignment makes it usable.
  t = f32({2}) * 2.0;
  EXPECT_TRUE(t.defined());
  expect_values(t, {2}, dtypes::float32, {0, 2});
}

TEST_P(ErrorsTest, UnknownRoundingModeIsError) {
  expect_error<Error>("div ceil", [&] { (void)i32({2}).div(i32({2}), "ceil"); }, {"ceil"});
  still_works();
}

TEST_P(ErrorsTest, ErrorsAreThrownWhenTheOpIsBuiltNotAtRealize) {
  // Building the bad op throws; nothing was left half-scheduled for the next realize.
  Tensor a = f32({2, 3}) * 2.0;
  EXPECT_THROW((void)(a + f32({3, 2})), ShapeError);
  EXPECT_THROW((void)a.reshape({7}), ShapeError);
  EXPECT_THROW((void)(a.cast(dtypes::float16) ^ a.cast(dtypes::float16)), DTypeError);
  expect_values(a, {2, 3}, dtypes::float32, {0, 2, 4, 6, 8, 10});
  still_works();
}

VKGRAD_ALL_DEVICES(ErrorsTest);

}  // namespace
}  // namespace vkgrad
