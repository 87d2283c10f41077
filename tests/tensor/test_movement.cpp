// tests/tensor: the composed movement ops (ops_movement.cpp) — transpose, flatten, squeeze, slice,
// select, repeat, split, chunk, gather, one_hot, cat, stack — against index arithmetic done on
// the host, on every device, including non-contiguous inputs, odd and size-0 shapes, and every
// error the ops raise.
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad::testing {
namespace {

using Index = std::vector<int64_t>;

class MovementTest : public DeviceTest {};

// The values of `shape` given by f(multi-index).
std::vector<double> build(const Shape& shape, const std::function<double(const Index&)>& f) {
  std::vector<double> out(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = f(unflatten_index(static_cast<int64_t>(i), shape));
  return out;
}

// Element `idx` of row-major `v` of `shape`.
double at(const std::vector<double>& v, const Shape& shape, const Index& idx) {
  const std::vector<int64_t> st = strides_of(shape);
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
  return v[static_cast<size_t>(off)];
}

// Float32-exact random values (what a float32 tensor holds), for the references.
std::vector<double> rand32(int64_t n, double lo, double hi, uint64_t seed) {
  std::vector<double> v = random_values(n, lo, hi, seed);
  for (double& x : v) x = round_to(x, dtypes::float32);
  return v;
}

std::vector<double> iota_values(int64_t n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i);
  return v;
}

// Runs f, expects exception E whose message contains every needle.
// After an error the library keeps working: a small fresh computation gives the right value.
void expect_still_works(const std::string& dev) {
  Tensor t = make_tensor({1, 2, 3}, {3}, dtypes::float32, dev);
  expect_values(t.flip(0) * 2.0, {3}, dtypes::float32, {6, 4, 2});
}

TEST_P(MovementTest, TransposeAndT) {
  const Shape s{2, 3, 5};
  const std::vector<double> v = rand32(30, -4, 4, 1);
  Tensor x = make_tensor(v, s, dtypes::float32, dev());
  expect_values(x.transpose(0, 2), {5, 3, 2}, dtypes::float32,
                build({5, 3, 2}, [&](const Index& i) {
                  return at(v, s, {i[2], i[1], i[0]});
                }));
  // Default (-2, -1), of a permuted (non-contiguous) input.
  Tensor p = x.permute({1, 0, 2});  // (3, 2, 5)
  expect_values(p.transpose(), {3, 5, 2}, dtypes::float32, build({3, 5, 2}, [&](const Index& i) {
                  return at(v, s, {i[2], i[0], i[1]});
                }));
  Tensor m = make_tensor(iota_values(15), {3, 5}, dtypes::int32, dev());
  expect_values(m.T(), {5, 3}, dtypes::int32,
                build({5, 3}, [](const Index& i) { return static_cast<double>(i[1] * 5 + i[0]); }));
  EXPECT_EQ(x.transpose(1, 1).shape(), s);
  EXPECT_EQ(x.transpose(-1, 0).shape(), (Shape{5, 3, 2}));
}

TEST_P(MovementTest, FlipOneAxis) {
  Tensor x = make_tensor(iota_values(12), {3, 4}, dtypes::float32, dev());
  expect_values(x.flip(1), {3, 4}, dtypes::float32, build({3, 4}, [](const Index& i) {
                  return static_cast<double>(i[0] * 4 + 3 - i[1]);
                }));
  expect_values(x.flip(-2), {3, 4}, dtypes::float32, build({3, 4}, [](const Index& i) {
                  return static_cast<double>((2 - i[0]) * 4 + i[1]);
                }));
}

TEST_P(MovementTest, FlattenUnflattenShapes) {
  Tensor x = Tensor::zeros({2, 3, 4, 5}, {}, dev());
  EXPECT_EQ(x.flatten().shape(), (Shape{120}));
  EXPECT_EQ(x.flatten(1).shape(), (Shape{2, 60}));
  EXPECT_EQ(x.flatten(1, 2).shape(), (Shape{2, 12, 5}));
  EXPECT_EQ(x.flatten(-2, -1).shape(), (Shape{2, 3, 20}));
  EXPECT_EQ(x.flatten(2, 2).shape(), x.shape());
  EXPECT_EQ(Tensor::scalar(1.0, {}, dev()).flatten().shape(), (Shape{1}));
  EXPECT_EQ(Tensor::zeros({0, 3}, {}, dev()).flatten().shape(), (Shape{0}));
  EXPECT_EQ(x.unflatten(1, {3, 1}).shape(), (Shape{2, 3, 1, 4, 5}));
  EXPECT_EQ(x.unflatten(-1, {-1, 5}).shape(), (Shape{2, 3, 4, 1, 5}));
  EXPECT_EQ(x.flatten(1, 2).unflatten(1, {3, -1}).shape(), x.shape());
}

TEST_P(MovementTest, FlattenOfPermutedValues) {
  const std::vector<double> v = iota_values(24);
  Tensor x = make_tensor(v, {2, 3, 4}, dtypes::int32, dev()).permute({2, 0, 1});  // (4, 2, 3)
  expect_values(x.flatten(1), {4, 6}, dtypes::int32, build({4, 6}, [&](const Index& i) {
                  return at(v, {2, 3, 4}, {i[1] / 3, i[1] % 3, i[0]});
                }));
}

TEST_P(MovementTest, SqueezeUnsqueeze) {
  Tensor x = Tensor::zeros({1, 3, 1, 2}, {}, dev());
  EXPECT_EQ(x.squeeze().shape(), (Shape{3, 2}));
  EXPECT_EQ(x.squeeze(0).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(x.squeeze(-2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(x.squeeze(1).shape(), x.shape());  // not size 1: a no-op (PyTorch)
  Tensor s = Tensor::scalar(2.0, {}, dev());
  EXPECT_EQ(s.squeeze().shape(), Shape{});
  EXPECT_EQ(s.squeeze(0).shape(), Shape{});
  EXPECT_EQ(s.unsqueeze(0).shape(), (Shape{1}));
  EXPECT_EQ(s.unsqueeze(-1).shape(), (Shape{1}));
  Tensor y = Tensor::zeros({3, 2}, {}, dev());
  EXPECT_EQ(y.unsqueeze(0).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(y.unsqueeze(2).shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(y.unsqueeze(-1).shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(y.unsqueeze(-3).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(y.unsqueeze(1).shape(), (Shape{3, 1, 2}));
  Tensor v = make_tensor({1, 2, 3}, {3, 1}, dtypes::float32, dev());
  expect_values(v.squeeze(1).unsqueeze(0), {1, 3}, dtypes::float32, {1, 2, 3});
}

// Python's slicing rules, for the reference.
std::vector<int64_t> python_range(int64_t n, int64_t start, int64_t end, int64_t step) {
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  std::vector<int64_t> out;
  for (int64_t i = clamp(start); i < clamp(end); i += step) out.push_back(i);
  return out;
}

TEST_P(MovementTest, Slice1d) {
  const int64_t n = 17;
  const std::vector<double> v = rand32(n, -10, 10, 2);
  Tensor x = make_tensor(v, {n}, dtypes::float32, dev());
  struct Case {
    int64_t start, end, step;
  };
  const Case cases[] = {{2, 15, 3}, {-5, LLONG_MAX, 2}, {-100, 3, 1},
                        {10, 2, 1}, {0, 17, 20},        {3, 17, 4},
                        {0, 17, 1}, {16, 100, 2},       {LLONG_MIN, -1, 5}};
  for (const Case& c : cases) {
    SCOPED_TRACE("slice(" + std::to_string(c.start) + ", " + std::to_string(c.end) + ", " +
                 std::to_string(c.step) + ")");
    std::vector<double> want;
    for (int64_t i : python_range(n, c.start, c.end, c.step))
      want.push_back(v[static_cast<size_t>(i)]);
    expect_values(x.slice(0, c.start, c.end, c.step), {static_cast<int64_t>(want.size())},
                  dtypes::float32, want);
  }
}

TEST_P(MovementTest, SliceNonContiguous2d) {
  const Shape s{5, 7};
  const std::vector<double> v = iota_values(35);
  Tensor x = make_tensor(v, s, dtypes::int32, dev()).T();  // (7, 5)
  const std::vector<int64_t> rows = python_range(7, 1, 7, 2), cols = python_range(5, -4, 5, 3);
  Tensor got = x.slice(0, 1, 7, 2).slice(-1, -4, 5, 3);
  expect_values(
      got, {3, 2}, dtypes::int32, build({3, 2}, [&](const Index& i) {
        return at(v, s, {cols[static_cast<size_t>(i[1])], rows[static_cast<size_t>(i[0])]});
      }));
  // Flipped then strided.
  Tensor f = make_tensor(iota_values(9), {9}, dtypes::float32, dev()).flip(0).slice(0, 0, 9, 4);
  expect_values(f, {3}, dtypes::float32, {8, 4, 0});
}

TEST_P(MovementTest, Select) {
  const Shape s{3, 4, 5};
  const std::vector<double> v = rand32(60, 0, 1, 3);
  Tensor x = make_tensor(v, s, dtypes::float32, dev());
  expect_values(x.select(1, -1), {3, 5}, dtypes::float32, build({3, 5}, [&](const Index& i) {
                  return at(v, s, {i[0], 3, i[1]});
                }));
  expect_values(x.select(0, 2).select(0, 1), {5}, dtypes::float32, build({5}, [&](const Index& i) {
                  return at(v, s, {2, 1, i[0]});
                }));
}

TEST_P(MovementTest, Repeat) {
  const std::vector<double> v = iota_values(6);
  Tensor x = make_tensor(v, {2, 3}, dtypes::int32, dev());
  expect_values(x.repeat({2, 1, 3}), {2, 2, 9}, dtypes::int32,
                build({2, 2, 9}, [&](const Index& i) {
                  return at(v, {2, 3}, {i[1], i[2] % 3});
                }));
  expect_values(x.repeat({1, 1}), {2, 3}, dtypes::int32, v);
  EXPECT_EQ(x.repeat({0, 2}).shape(), (Shape{0, 6}));
  // A repeated non-contiguous (flipped) view.
  expect_values(x.flip(1).repeat({2, 1}), {4, 3}, dtypes::int32, build({4, 3}, [&](const Index& i) {
                  return at(v, {2, 3}, {i[0] % 2, 2 - i[1]});
                }));
}

TEST_P(MovementTest, SplitAndChunk) {
  Tensor x = make_tensor(iota_values(17), {17}, dtypes::float32, dev());
  auto sizes = [](const std::vector<Tensor>& parts) {
    std::vector<int64_t> s;
    for (const Tensor& p : parts) s.push_back(p.shape(0));
    return s;
  };
  EXPECT_EQ(sizes(x.split(5)), (std::vector<int64_t>{5, 5, 5, 2}));
  EXPECT_EQ(sizes(x.split(17)), (std::vector<int64_t>{17}));
  EXPECT_EQ(sizes(x.split(100)), (std::vector<int64_t>{17}));
  EXPECT_EQ(sizes(x.chunk(4)), (std::vector<int64_t>{5, 5, 5, 2}));
  EXPECT_EQ(sizes(x.chunk(1)), (std::vector<int64_t>{17}));
  EXPECT_EQ(sizes(x.chunk(17)).size(), 17u);
  EXPECT_EQ(sizes(x.slice(0, 0, 6).chunk(4)),
            (std::vector<int64_t>{2, 2, 2}));  // PyTorch: 3 pieces
  Tensor empty = Tensor::zeros({0, 2}, {}, dev());
  EXPECT_EQ(sizes(empty.split(3)), (std::vector<int64_t>{0}));
  EXPECT_EQ(sizes(empty.chunk(3)), (std::vector<int64_t>{0, 0, 0}));
  std::vector<Tensor> parts = x.split(5);
  expect_values(parts[3], {2}, dtypes::float32, {15, 16});
  const std::vector<double> v = iota_values(12);
  std::vector<Tensor> cols = make_tensor(v, {3, 4}, dtypes::int32, dev()).chunk(2, -1);
  ASSERT_EQ(cols.size(), 2u);
  expect_values(cols[1], {3, 2}, dtypes::int32, {2, 3, 6, 7, 10, 11});
}

TEST_P(MovementTest, Gather) {
  const Shape s{3, 5};
  const std::vector<double> v = rand32(15, -5, 5, 4);
  Tensor x = make_tensor(v, s, dtypes::float32, dev());
  // dim 1, index (3, 4) int32 (index smaller than input in dim 0 is allowed too).
  const std::vector<double> idx = random_ints(12, 0, 4, 5);
  Tensor i1 = make_tensor(idx, {3, 4}, dtypes::int32, dev());
  expect_values(
      x.gather(1, i1), {3, 4}, dtypes::float32, build({3, 4}, [&](const Index& i) {
        return at(v, s, {i[0], static_cast<int64_t>(idx[static_cast<size_t>(i[0] * 4 + i[1])])});
      }));
  // dim 0 with int64 indices of shape (2, 3), a negative dim, and an out-of-range index (gives 0).
  const std::vector<double> idx0{2, 0, 1, 1, 7, 0};
  Tensor i0 = make_tensor(idx0, {2, 3}, dtypes::int64, dev());
  expect_values(x.gather(-2, i0), {2, 3}, dtypes::float32, build({2, 3}, [&](const Index& i) {
                  const double r = idx0[static_cast<size_t>(i[0] * 3 + i[1])];
                  return r >= 3 ? 0.0 : at(v, s, {static_cast<int64_t>(r), i[1]});
                }));
  // Integer data, a transposed input, uint8 indices.
  const std::vector<double> iv = iota_values(15, 100);
  Tensor xi = make_tensor(iv, {5, 3}, dtypes::int32, dev()).T();  // (3, 5): xi[r][c] = 100 + 3c + r
  Tensor iu = make_tensor({4, 0, 2, 1, 3, 3}, {3, 2}, dtypes::uint8, dev());
  expect_values(xi.gather(1, iu), {3, 2}, dtypes::int32, {112, 100, 107, 104, 111, 111});
}

TEST_P(MovementTest, OneHot) {
  Tensor t = make_tensor({0, 2, 4, 1, 5, -1}, {2, 3}, dtypes::int32, dev());
  expect_values(t.one_hot(5), {2, 3, 5}, dtypes::int32, build({2, 3, 5}, [](const Index& i) {
                  const double vals[] = {0, 2, 4, 1, 5, -1};
                  return vals[i[0] * 3 + i[1]] == static_cast<double>(i[2]) ? 1.0 : 0.0;
                }));
  Tensor small = make_tensor({3, 0}, {2}, dtypes::int8, dev());
  expect_values(small.one_hot(4), {2, 4}, dtypes::int32, {0, 0, 0, 1, 1, 0, 0, 0});
  EXPECT_EQ(small.one_hot(0).shape(), (Shape{2, 0}));
}

TEST_P(MovementTest, CatPromotesAndPads) {
  const std::vector<double> a = iota_values(6), b = rand32(4, -1, 1, 6), c = iota_values(2, 50);
  Tensor ta = make_tensor(a, {2, 3}, dtypes::int32, dev());
  Tensor tb = make_tensor(b, {2, 2}, dtypes::float32, dev());
  Tensor tc = make_tensor(c, {2, 1}, dtypes::int32, dev());
  expect_values(cat({ta, tb, tc}, 1), {2, 6}, dtypes::float32, build({2, 6}, [&](const Index& i) {
                  if (i[1] < 3) return at(a, {2, 3}, {i[0], i[1]});
                  if (i[1] < 5) return at(b, {2, 2}, {i[0], i[1] - 3});
                  return at(c, {2, 1}, {i[0], 0});
                }));
  // dim 0, a flipped (non-contiguous) operand and a size-0 one.
  Tensor empty = Tensor::zeros({0, 3}, dtypes::int32, dev());
  expect_values(cat({ta, empty, ta.flip(0)}, -2), {4, 3}, dtypes::int32,
                {0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2});
  // bool stays bool.
  Tensor p = make_tensor({1, 0}, {2}, dtypes::bool_, dev()),
         q = make_tensor({0, 1, 1}, {3}, dtypes::bool_, dev());
  expect_values(cat({p, q}), {5}, dtypes::bool_, {1, 0, 0, 1, 1});
}

TEST_P(MovementTest, Stack) {
  Tensor a = make_tensor({1, 2, 3}, {3}, dtypes::float32, dev());
  Tensor b = make_tensor({4, 5, 6}, {3}, dtypes::float32, dev());
  expect_values(stack({a, b}), {2, 3}, dtypes::float32, {1, 2, 3, 4, 5, 6});
  expect_values(stack({a, b}, -1), {3, 2}, dtypes::float32, {1, 4, 2, 5, 3, 6});
  EXPECT_EQ(stack({a}, 1).shape(), (Shape{3, 1}));
  Tensor s = Tensor::scalar(7.0, {}, dev());
  expect_values(stack({s, s}), {2}, dtypes::float32, {7, 7});
}

TEST_P(MovementTest, Errors) {
  Tensor x = Tensor::zeros({2, 3, 4}, {}, dev());
  Tensor s = Tensor::scalar(1.0, {}, dev());
  expect_error<ShapeError>([&] { x.T(); }, {"T", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.transpose(0, 3); }, {"transpose", "3"});
  expect_error<ShapeError>([&] { x.flatten(2, 1); }, {"flatten", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.unflatten(1, {2, 2}); }, {"unflatten", "(2, 3, 4)", "(2, 2)"});
  expect_error<ShapeError>([&] { x.unflatten(1, {-1, 2}); }, {"unflatten", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.squeeze(3); }, {"squeeze", "3"});
  expect_error<ShapeError>([&] { x.unsqueeze(4); }, {"unsqueeze", "(2, 3, 4)", "[-4, 3]"});
  expect_error<ShapeError>([&] { x.unsqueeze(-5); }, {"unsqueeze", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.slice(1, 0, 3, 0); }, {"slice", "step", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.slice(1, 3, 0, -1); }, {"slice", "step", "-1"});
  expect_error<ShapeError>([&] { x.slice(5, 0, 1); }, {"slice", "5"});
  expect_error<ShapeError>([&] { s.slice(0, 0, 1); }, {"slice", "0-d"});
  expect_error<ShapeError>([&] { x.select(1, 3); }, {"select", "3", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.select(2, -5); }, {"select", "-5", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.repeat({2, 2}); }, {"repeat", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.repeat({1, -1, 1}); }, {"repeat", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.split(0, 1); }, {"split", "0", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { x.chunk(0); }, {"chunk", "0", "(2, 3, 4)"});
  Tensor fidx = Tensor::zeros({2, 3, 4}, dtypes::float32, dev());
  Tensor bidx = Tensor::zeros({2, 3, 4}, dtypes::bool_, dev());
  Tensor iidx = Tensor::zeros({2, 3}, dtypes::int32, dev());
  expect_error<DTypeError>([&] { x.gather(1, fidx); }, {"gather", "float32", "(2, 3, 4)"});
  expect_error<DTypeError>([&] { x.gather(1, bidx); }, {"gather", "bool"});
  expect_error<ShapeError>([&] { x.gather(1, iidx); }, {"gather", "(2, 3)", "(2, 3, 4)"});
  expect_error<ShapeError>(
      [&] {
        x.gather(0, Tensor::zeros({2, 5, 4}, dtypes::int32, dev()));
      },
      {"gather", "(2, 5, 4)", "(2, 3, 4)"});
  expect_error<ShapeError>(
      [&] {
        x.gather(3, Tensor::zeros({2, 3, 4}, dtypes::int32, dev()));
      },
      {"gather", "3"});
  expect_error<DTypeError>([&] { x.one_hot(3); }, {"one_hot", "float32", "(2, 3, 4)"});
  expect_error<DTypeError>([&] { bidx.one_hot(3); }, {"one_hot", "bool"});
  expect_error<ShapeError>([&] { iidx.one_hot(-1); }, {"one_hot", "-1", "(2, 3)"});
  Tensor y = Tensor::zeros({2, 5, 4}, {}, dev());
  expect_error<ShapeError>([&] { cat({x, y}, 0); }, {"cat", "(2, 3, 4)", "(2, 5, 4)"});
  expect_error<ShapeError>(
      [&] {
        cat({x, Tensor::zeros({2, 3}, {}, dev())}, 0);
      },
      {"cat", "(2, 3, 4)", "(2, 3)"});
  expect_error<ShapeError>([&] { cat({x, x}, 3); }, {"cat", "3"});
  expect_error<ShapeError>([&] { cat({s, s}); }, {"cat", "0-d"});
  expect_error<ShapeError>([&] { cat({}); }, {"cat"});
  expect_error<ShapeError>([&] { stack({x, y}); }, {"stack", "(2, 3, 4)", "(2, 5, 4)"});
  expect_error<ShapeError>([&] { stack({x, x}, 4); }, {"stack", "4", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { stack({}); }, {"stack"});
  expect_still_works(dev());
  EXPECT_EQ(cat({x, y}, 1).shape(), (Shape{2, 8, 4}));
}

VKGRAD_ALL_DEVICES(MovementTest);

}  // namespace
}  // namespace vkgrad::testing
