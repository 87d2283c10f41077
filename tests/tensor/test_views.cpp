// tests/tensor: movement ops (reshape permute expand pad shrink flip) as zero-copy views that
// compose with each other, with elementwise ops and with reductions, on every device. Every
// result is compared with a double-precision reference built by explicit index math (Ref below).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <source_location>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_values;
using testing::numel_of;
using testing::round_to;
using testing::unflatten_index;

const double kInf = std::numeric_limits<double>::infinity();
using Index = std::vector<int64_t>;

// A row-major array of doubles: the reference every view is checked against.
struct Ref {
  Shape shape;
  std::vector<double> v;

  double at(const Index& idx) const {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
    return v[flat];
  }
};

// out[idx] = f(idx) for every index of `shape`.
Ref generate(const Shape& shape, const std::function<double(const Index&)>& f) {
  Ref r{shape, std::vector<double>(numel_of(shape))};
  for (int64_t i = 0; i < numel_of(shape); ++i) r.v[i] = f(unflatten_index(i, shape));
  return r;
}

Ref r_reshape(const Ref& x, const Shape& s) {
  EXPECT_EQ(numel_of(s), numel_of(x.shape));
  return {s, x.v};
}
Ref r_permute(const Ref& x, const std::vector<int>& order) {
  Shape s;
  for (int o : order) s.push_back(x.shape[o]);
  return generate(s, [&](const Index& idx) {
    Index in(idx.size());
    for (size_t i = 0; i < order.size(); ++i) in[order[i]] = idx[i];
    return x.at(in);
  });
}
// Right-aligned: new leading dimensions and size-1 dimensions repeat.
Ref r_expand(const Ref& x, const Shape& s) {
  return generate(s, [&](const Index& idx) {
    Index in(x.shape.size());
    const size_t off = s.size() - x.shape.size();
    for (size_t d = 0; d < x.shape.size(); ++d) in[d] = x.shape[d] == 1 ? 0 : idx[off + d];
    return x.at(in);
  });
}
Ref r_pad(const Ref& x, const PadList& p, double value) {
  Shape s;
  for (size_t d = 0; d < x.shape.size(); ++d) s.push_back(p[d].first + x.shape[d] + p[d].second);
  return generate(s, [&](const Index& idx) {
    Index in(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) {
      in[d] = idx[d] - p[d].first;
      if (in[d] < 0 || in[d] >= x.shape[d]) return value;
    }
    return x.at(in);
  });
}
Ref r_shrink(const Ref& x, const PadList& b) {
  Shape s;
  for (const auto& [lo, hi] : b) s.push_back(hi - lo);
  return generate(s, [&](const Index& idx) {
    Index in(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) in[d] = idx[d] + b[d].first;
    return x.at(in);
  });
}
Ref r_flip(const Ref& x, const std::vector<int>& axes) {
  return generate(x.shape, [&](const Index& idx) {
    Index in = idx;
    for (int a : axes) in[a] = x.shape[a] - 1 - idx[a];
    return x.at(in);
  });
}
Ref r_map(const Ref& x, const std::function<double(double)>& f) {
  Ref r = x;
  for (double& e : r.v) e = f(e);
  return r;
}
// Binary op with NumPy broadcasting (shapes aligned at the right).
Ref r_zip(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  const size_t nd = std::max(a.shape.size(), b.shape.size());
  Shape s(nd);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t da = d + a.shape.size() >= nd ? a.shape[d + a.shape.size() - nd] : 1;
    const int64_t db = d + b.shape.size() >= nd ? b.shape[d + b.shape.size() - nd] : 1;
    s[d] = da == 1 ? db : da;
  }
  const Ref ea = r_expand(a, s), eb = r_expand(b, s);
  Ref r{s, std::vector<double>(ea.v.size())};
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = f(ea.v[i], eb.v[i]);
  return r;
}
// Reduce one axis (keepdim optional) with `op` starting from `init`.
Ref r_reduce(const Ref& x, int axis, bool keepdim, double init,
             const std::function<double(double, double)>& op) {
  Shape kept = x.shape;
  kept[axis] = 1;
  Ref r = generate(kept, [&](const Index& idx) {
    double acc = init;
    Index in = idx;
    for (int64_t k = 0; k < x.shape[axis]; ++k) {
      in[axis] = k;
      acc = op(acc, x.at(in));
    }
    return acc;
  });
  if (!keepdim) r.shape.erase(r.shape.begin() + axis);
  return r;
}
Ref r_sum(const Ref& x, int axis, bool keepdim = false) {
  return r_reduce(x, axis, keepdim, 0, std::plus<>());
}

double f32(double v) { return round_to(v, dtypes::float32); }

// testing::Batch, with results checked against a Ref (casting every tested view to float64 and
// concatenating also composes it with more views).
class Batch : public testing::Batch {
 public:
  using testing::Batch::add;
  void add(const Tensor& t, const Ref& r, DType dtype = dtypes::float32, double rtol = 0,
           double atol = 0, std::source_location loc = std::source_location::current()) {
    testing::Batch::add(t, r.shape, dtype, r.v, rtol, atol, loc);
  }
};

class ViewsTest : public testing::DeviceTest {
 protected:
  // Random float32 values in [lo, hi) as a reference and a tensor holding them.
  Ref random_ref(const Shape& s, uint64_t seed, double lo = -2, double hi = 2) const {
    Ref r{s, testing::random_values(numel_of(s), lo, hi, seed)};
    for (double& e : r.v) e = f32(e);
    return r;
  }
  Tensor tensor(const Ref& r, DType d = dtypes::float32) const {
    return testing::make_tensor(r.v, r.shape, d, dev());
  }
  // The same values as a lazy (unrealized) computation: -(-x).
  Tensor lazy(const Ref& r) const {
    return tensor(r_map(r, [](double e) { return -e; })).neg();
  }
  // One result stored by a kernel of its own.
  void expect_ref(const Tensor& t, const Ref& r, DType d = dtypes::float32, double rtol = 0,
                  double atol = 0) const {
    expect_values(t, r.shape, d, r.v, rtol, atol);
  }
};

// ---- single movement ops --------------------------------------------------------------------

TEST_P(ViewsTest, Reshape) {
  const Ref x = random_ref({2, 3, 4}, 1);
  Tensor t = tensor(x);
  for (const Shape& s : std::vector<Shape>{{4, 6}, {24}, {1, 2, 1, 12}, {3, 8}, {2, 3, 4}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    expect_ref(t.reshape(s), r_reshape(x, s));
  }
  EXPECT_EQ(t.reshape({-1, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(t.reshape({2, -1}).shape(), (Shape{2, 12}));
  EXPECT_EQ(t.reshape({-1}).shape(), (Shape{24}));
  EXPECT_EQ(t.reshape({3, -1, 2}).shape(), (Shape{3, 4, 2}));
  expect_ref(t.reshape({-1, 4}), r_reshape(x, {6, 4}));
  // 0-d and size 0.
  expect_values(tensor(Ref{{1, 1}, {2.5}}).reshape({}), {}, dtypes::float32, {2.5});
  expect_values(tensor(Ref{{}, {2.5}}).reshape({1, 1, 1}), {1, 1, 1}, dtypes::float32, {2.5});
  expect_values(tensor(Ref{{0, 3}, {}}).reshape({3, 0}), {3, 0}, dtypes::float32, {});
  expect_values(tensor(Ref{{0, 3}, {}}).reshape({0}), {0}, dtypes::float32, {});
}

TEST_P(ViewsTest, PermuteAndTranspose) {
  Batch batch;
  const Ref x = random_ref({2, 3, 5}, 2);
  Tensor t = tensor(x);
  for (const auto& o : std::vector<std::vector<int>>{{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}}) {
    SCOPED_TRACE(::testing::PrintToString(o));
    expect_ref(t.permute(o), r_permute(x, o));
  }
  batch.add(t.permute({-1, 0, 1}), r_permute(x, {2, 0, 1}));
  batch.add(t.transpose(), r_permute(x, {0, 2, 1}));
  batch.add(t.transpose(0, 2), r_permute(x, {2, 1, 0}));
  batch.add(t.transpose(-3, 1), r_permute(x, {1, 0, 2}));
  const Ref m = random_ref({3, 7}, 3);
  batch.add(tensor(m).T(), r_permute(m, {1, 0}));
  batch.add(tensor(m).T().T(), m);
  batch.check();
}

TEST_P(ViewsTest, Expand) {
  Batch batch;
  const Ref c = random_ref({3, 1}, 4);
  expect_ref(tensor(c).expand({3, 4}), r_expand(c, {3, 4}));
  batch.add(tensor(c).expand({-1, 5}), r_expand(c, {3, 5}));
  batch.add(tensor(c).expand({2, 3, 4}), r_expand(c, {2, 3, 4}));
  const Ref r = random_ref({1, 5}, 5);
  batch.add(tensor(r).expand({3, 5}), r_expand(r, {3, 5}));
  const Ref s = random_ref({}, 6);
  batch.add(tensor(s).expand({2, 3}), r_expand(s, {2, 3}));
  const Ref m = random_ref({2, 1, 3}, 7);
  batch.add(tensor(m).expand({4, 2, 5, 3}), r_expand(m, {4, 2, 5, 3}));
  batch.add(tensor(c).expand({3, 0}), r_expand(c, {3, 0}));
  batch.check();
}

TEST_P(ViewsTest, Pad) {
  Batch batch;
  const Ref x = random_ref({2, 3}, 8);
  Tensor t = tensor(x);
  expect_ref(t.pad({{1, 2}, {0, 3}}), r_pad(x, {{1, 2}, {0, 3}}, 0));
  batch.add(t.pad({{0, 0}, {2, 1}}, 2.5), r_pad(x, {{0, 0}, {2, 1}}, 2.5));
  batch.add(t.pad({{3, 0}, {0, 0}}, -kInf), r_pad(x, {{3, 0}, {0, 0}}, -kInf));
  batch.add(t.pad({{0, 0}, {0, 0}}), x);
  // Integer and bool tensors pad with the value in their own dtype.
  const Ref i{{2, 2}, {1, -2, 3, -4}};
  batch.add(tensor(i, dtypes::int32).pad({{1, 0}, {0, 1}}, 7), r_pad(i, {{1, 0}, {0, 1}}, 7),
            dtypes::int32);
  batch.add(tensor(i, dtypes::int8).pad({{0, 1}, {1, 0}}, -1), r_pad(i, {{0, 1}, {1, 0}}, -1),
            dtypes::int8);
  const Ref u{{3}, {1, 2, 3}};
  batch.add(tensor(u, dtypes::uint8).pad({{2, 2}}, 255), r_pad(u, {{2, 2}}, 255), dtypes::uint8);
  const Ref b{{2}, {1, 0}};
  batch.add(tensor(b, dtypes::bool_).pad({{1, 1}}, 1), r_pad(b, {{1, 1}}, 1), dtypes::bool_);
  const Ref h{{2}, {0.5, -1.5}};
  batch.add(tensor(h, dtypes::float16).pad({{1, 0}}, 3.0), r_pad(h, {{1, 0}}, 3), dtypes::float16);
  batch.check();
}

TEST_P(ViewsTest, Shrink) {
  Batch batch;
  const Ref x = random_ref({5, 7}, 9);
  Tensor t = tensor(x);
  expect_ref(t.shrink({{1, 4}, {2, 7}}), r_shrink(x, {{1, 4}, {2, 7}}));
  batch.add(t.shrink({{0, 5}, {0, 7}}), x);
  batch.add(t.shrink({{4, 5}, {3, 4}}), r_shrink(x, {{4, 5}, {3, 4}}));
  batch.add(t.shrink({{2, 2}, {0, 7}}), r_shrink(x, {{2, 2}, {0, 7}}));
  batch.check();
}

TEST_P(ViewsTest, Flip) {
  Batch batch;
  const Ref x = random_ref({3, 4}, 10);
  Tensor t = tensor(x);
  expect_ref(t.flip(0), r_flip(x, {0}));
  batch.add(t.flip(-1), r_flip(x, {1}));
  batch.add(t.flip({0, 1}), r_flip(x, {0, 1}));
  batch.add(t.flip({0, 1}).flip({1, 0}), x);
  const Ref v = random_ref({5}, 11);
  batch.add(tensor(v).flip(0), r_flip(v, {0}));
  const Ref one = random_ref({1, 3, 1}, 12);
  batch.add(tensor(one).flip({0, 2}), one);
  batch.check();
}

TEST_P(ViewsTest, SizeZeroViews) {
  Batch batch;
  const Ref e{{3, 0}, {}};
  Tensor t = tensor(e);
  expect_ref(t.permute({1, 0}), r_permute(e, {1, 0}));
  batch.add(t.flip(0), e);
  batch.add(t.expand({2, 3, 0}), r_expand(e, {2, 3, 0}));
  // Padding an empty tensor gives a tensor of only padding.
  batch.add(t.permute({1, 0}).pad({{1, 1}, {0, 0}}, 4.0),
            r_pad(r_permute(e, {1, 0}), {{1, 1}, {0, 0}}, 4));
  const Ref x = random_ref({4, 3}, 13);
  batch.add(tensor(x).shrink({{1, 1}, {0, 3}}).pad({{2, 0}, {0, 0}}, 1.0),
            r_pad(r_shrink(x, {{1, 1}, {0, 3}}), {{2, 0}, {0, 0}}, 1));
  batch.check();
}

// ---- unsafe pads: an op after pad sees the pad value, an op before it does not ---------------

TEST_P(ViewsTest, PadAndExp2CommuteOnlyAsTheyShould) {
  Batch batch;
  const Ref x = random_ref({3, 4}, 14);
  const PadList p = {{1, 1}, {2, 0}};
  Tensor t = tensor(x);
  auto exp2 = [](double v) { return f32(std::exp2(v)); };
  const double rtol = 1e-5;
  // exp2 then pad: the pad region is 0.
  expect_ref(t.exp2().pad(p), r_pad(r_map(x, exp2), p, 0), dtypes::float32, rtol);
  // pad then exp2: the pad region is exp2(0) = 1, and exp2(3) = 8 with value 3.
  batch.add(t.pad(p).exp2(), r_map(r_pad(x, p, 0), exp2), dtypes::float32, rtol);
  batch.add(t.pad(p, 3.0).exp2(), r_map(r_pad(x, p, 3), exp2), dtypes::float32, rtol);
  // log2, reciprocal and comparisons of a zero pad are not zero.
  const Ref pos = random_ref({3, 4}, 15, 0.5, 4);
  batch.add(tensor(pos).pad(p).log2(),
            r_map(r_pad(pos, p, 0), [](double v) { return f32(std::log2(v)); }), dtypes::float32,
            rtol);
  batch.add(tensor(pos).pad(p).reciprocal(),
            r_map(r_pad(pos, p, 0), [](double v) { return f32(1 / v); }), dtypes::float32, rtol);
  batch.add(tensor(x).pad(p) == 0.0,
            r_map(r_pad(x, p, 0), [](double v) { return v == 0 ? 1.0 : 0.0; }), dtypes::bool_);
  // Reductions over padded unsafe ops count the pad region: each row gains 2 ones.
  batch.add(t.pad({{0, 0}, {1, 1}}).exp2().sum(1),
            r_sum(r_map(r_pad(x, {{0, 0}, {1, 1}}, 0), exp2), 1), dtypes::float32, rtol);
  batch.add(t.exp2().pad({{0, 0}, {1, 1}}).sum(1), r_sum(r_map(x, exp2), 1), dtypes::float32, rtol);
  // max over a -inf pad ignores it; over a 0 pad it does not.
  const Ref neg = random_ref({2, 3}, 16, -5, -1);
  batch.add(tensor(neg).pad({{0, 0}, {1, 0}}, -kInf).max(1),
            r_reduce(neg, 1, false, -kInf, [](double a, double b) { return std::max(a, b); }));
  batch.add(tensor(neg).pad({{0, 0}, {1, 0}}).max(1), Ref{{2}, {0, 0}});
  batch.check();
}

// ---- chains ---------------------------------------------------------------------------------

// x.permute.pad.flip.reshape * y.expand, then sum over an axis.
struct Chain1 {
  static Tensor build(const Tensor& x, const Tensor& y) {
    return (x.permute({2, 0, 1}).pad({{1, 0}, {0, 1}, {2, 1}}).flip({0, 2}).reshape({15, 6}) *
            y.expand({15, 6}))
        .sum(0);
  }
  static Ref ref(const Ref& x, const Ref& y) {
    Ref a = r_reshape(r_flip(r_pad(r_permute(x, {2, 0, 1}), {{1, 0}, {0, 1}, {2, 1}}, 0), {0, 2}),
                      {15, 6});
    return r_sum(r_zip(a, r_expand(y, {15, 6}), [](double p, double q) { return f32(p * q); }), 0);
  }
};

TEST_P(ViewsTest, PermutePadFlipReshapeMulExpandSum) {
  Batch batch;
  const Ref x = random_ref({2, 3, 4}, 17), y = random_ref({1, 6}, 18);
  const Ref e = Chain1::ref(x, y);
  // Each output sums 15 products of magnitude < 4: any order is within 15 * 2^-24 * 60.
  const double atol = 15 * 6e-8 * 60;
  expect_ref(Chain1::build(tensor(x), tensor(y)), e, dtypes::float32, 0, atol);
  batch.add(Chain1::build(lazy(x), lazy(y)), e, dtypes::float32, 0, atol);
  batch.add(Chain1::build(lazy(x).contiguous(), tensor(y).contiguous()), e, dtypes::float32, 0,
            atol);
  // A materialized intermediate in the middle of the chain changes nothing.
  Tensor mid = tensor(x).permute({2, 0, 1}).pad({{1, 0}, {0, 1}, {2, 1}}).contiguous();
  batch.add((mid.flip({0, 2}).reshape({15, 6}) * tensor(y).expand({15, 6})).sum(0), e,
            dtypes::float32, 0, atol);
  batch.check();
}

TEST_P(ViewsTest, ShrinkReshapeTransposeAddMax) {
  Batch batch;
  const Ref x = random_ref({6, 10}, 19), z = random_ref({6, 1, 2}, 20);
  auto build = [](const Tensor& a, const Tensor& b) {
    return (a.shrink({{1, 5}, {2, 8}}).reshape({2, 2, 6}).transpose(0, 2) + b).max(1);
  };
  const Ref e =
      r_reduce(r_zip(r_permute(r_reshape(r_shrink(x, {{1, 5}, {2, 8}}), {2, 2, 6}), {2, 1, 0}), z,
                     [](double p, double q) { return f32(p + q); }),
               1, false, -kInf, [](double p, double q) { return std::max(p, q); });
  ASSERT_EQ(e.shape, (Shape{6, 2}));
  expect_ref(build(tensor(x), tensor(z)), e);
  batch.add(build(lazy(x), lazy(z)), e);
  batch.add(build(tensor(x).contiguous(), lazy(z).contiguous()), e);
  batch.check();
}

TEST_P(ViewsTest, ViewsOfComputedTensors) {
  Batch batch;
  // Movement ops applied to elementwise results, then more elementwise work and a reduction.
  const Ref a = random_ref({3, 5}, 21), b = random_ref({5}, 22);
  auto build = [](const Tensor& ta, const Tensor& tb) {
    Tensor prod = ta * tb;                                                  // (3, 5)
    Tensor v = prod.T().flip(1).pad({{0, 1}, {1, 0}}, 1.0);                 // (6, 4)
    return (v.shrink({{1, 6}, {0, 3}}) - tb.reshape({5, 1})).sum(1, true);  // (5, 1)
  };
  const Ref prod = r_zip(a, b, [](double p, double q) { return f32(p * q); });
  const Ref v = r_pad(r_flip(r_permute(prod, {1, 0}), {1}), {{0, 1}, {1, 0}}, 1);
  const Ref e = r_sum(r_zip(r_shrink(v, {{1, 6}, {0, 3}}), r_reshape(b, {5, 1}),
                            [](double p, double q) { return f32(p - q); }),
                      1, true);
  const double atol = 3 * 6e-8 * 20;
  expect_ref(build(tensor(a), tensor(b)), e, dtypes::float32, 0, atol);
  batch.add(build(lazy(a), lazy(b)), e, dtypes::float32, 0, atol);
  batch.check();
}

TEST_P(ViewsTest, ReduceThenView) {
  Batch batch;
  const Ref x = random_ref({4, 3}, 23);
  Tensor t = tensor(x);
  // Centering: x - mean over axis 1 (sum / 3) broadcast back with expand.
  const Ref s = r_sum(x, 1, true);
  const double atol = 3 * 6e-8 * 6;
  expect_ref(t.sum(1, true).expand({4, 3}), r_expand(s, {4, 3}), dtypes::float32, 0, atol);
  batch.add(t - t.sum(1, true).expand({4, 3}) / 3.0,
            r_zip(x, s, [](double p, double q) { return f32(p - f32(q / 3)); }), dtypes::float32, 0,
            2 * atol);
  // A reduced tensor permuted, flipped and padded.
  const Ref m = r_reduce(x, 0, false, -kInf, [](double p, double q) { return std::max(p, q); });
  batch.add(t.max(0).flip(0).reshape({3, 1}).pad({{1, 0}, {0, 2}}, -1.0),
            r_pad(r_reshape(r_flip(m, {0}), {3, 1}), {{1, 0}, {0, 2}}, -1));
  // Expand then reduce: every column repeats x.
  const Ref c = random_ref({3, 1}, 24);
  batch.add(tensor(c).expand({3, 5}).sum(1),
            r_map(r_reshape(c, {3}), [](double v) { return 5 * v; }), dtypes::float32, 3e-7);
  batch.check();
}

TEST_P(ViewsTest, RealizedAndLazyInputsGiveIdenticalViews) {
  // Pure movement chains are exact, so every variant must agree bit for bit.
  const Ref x = random_ref({3, 4, 5}, 25);
  auto build = [](const Tensor& t) {
    return t.flip(1)
        .permute({1, 2, 0})
        .shrink({{1, 4}, {0, 5}, {0, 2}})
        .pad({{0, 1}, {2, 0}, {1, 1}}, -3.0)
        .reshape({-1, 4});
  };
  const Ref e =
      r_reshape(r_pad(r_shrink(r_permute(r_flip(x, {1}), {1, 2, 0}), {{1, 4}, {0, 5}, {0, 2}}),
                      {{0, 1}, {2, 0}, {1, 1}}, -3),
                {28, 4});
  Tensor realized = tensor(x);
  realized.realize();
  for (const auto& [name, in] :
       std::vector<std::pair<std::string, Tensor>>{{"buffer", tensor(x)},
                                                   {"realized", realized},
                                                   {"lazy", lazy(x)},
                                                   {"lazy.contiguous()", lazy(x).contiguous()}}) {
    SCOPED_TRACE(name);
    expect_ref(build(in), e);
  }
}

TEST_P(ViewsTest, MovementChainOfRealizedInputsIsOneKernel) {
  // Views do not copy: a chain of movement ops feeding one elementwise op schedules as a single
  // kernel that reads the realized inputs in place.
  const Ref x = random_ref({2, 3, 4}, 26), y = random_ref({1, 6}, 27);
  Tensor tx = tensor(x), ty = tensor(y);
  tx.realize();
  ty.realize();
  Tensor out = tx.permute({2, 0, 1}).pad({{1, 0}, {0, 1}, {2, 1}}).flip({0, 2}).reshape({15, 6}) *
               ty.expand({15, 6});
  EXPECT_EQ(out.schedule().size(), 1u);
  Tensor red = out.sum(0);
  EXPECT_EQ(red.schedule().size(), 1u);
  expect_ref(
      out,
      r_zip(r_reshape(r_flip(r_pad(r_permute(x, {2, 0, 1}), {{1, 0}, {0, 1}, {2, 1}}, 0), {0, 2}),
                      {15, 6}),
            r_expand(y, {15, 6}), [](double p, double q) { return f32(p * q); }));
}

TEST_P(ViewsTest, InverseViewsRoundTrip) {
  Batch batch;
  const Ref x = random_ref({3, 5}, 28);
  Tensor t = tensor(x);
  expect_ref(t.pad({{2, 1}, {0, 3}}, 9.0).shrink({{2, 5}, {0, 5}}), x);
  batch.add(t.flip(0).flip(0), x);
  batch.add(t.permute({1, 0}).reshape({5, 3}).permute({1, 0}), x);
  batch.add(t.reshape({15}).reshape({5, 3}).reshape({3, 5}), x);
  batch.add(t.reshape({3, 1, 5}).expand({3, 4, 5}).shrink({{0, 3}, {2, 3}, {0, 5}}).reshape({3, 5}),
            x);
  batch.check();
}

TEST_P(ViewsTest, IntegerViewsAndReductions) {
  // The same kind of chain on int32, exact: x.flip.pad(-1) + y.expand, summed (widened int).
  const Ref x{{2, 3}, testing::random_ints(6, -100, 100, 29)};
  const Ref y{{3, 1}, testing::random_ints(3, -100, 100, 30)};
  Tensor tx = tensor(x, dtypes::int8), ty = tensor(y, dtypes::int8);
  Tensor out = (tx.flip(1).T().pad({{0, 0}, {1, 1}}, -1) + ty.expand({3, 4})).sum(0);
  const Ref e = r_sum(
      r_zip(r_pad(r_permute(r_flip(x, {1}), {1, 0}), {{0, 0}, {1, 1}}, -1), r_expand(y, {3, 4}),
            [](double p, double q) { return round_to(p + q, dtypes::int8); }),
      0);
  expect_ref(out, e, dtypes::int32);
}

TEST_P(ViewsTest, LongElementwiseChain) {
  // 200 ops alternating + c and * c on 1023 floats. Each float32 op rounds once (2^-24 relative
  // to the intermediate), so the error stays below 200 * 2^-24 * max|intermediate| (+ 1 ulp):
  // the tolerance is that bound, computed from the reference's own intermediates.
  const int64_t n = 1023;
  const Ref x = random_ref({n}, 31, -1, 1);
  Tensor t = tensor(x);
  t.realize();
  std::vector<double> ref = x.v;
  double max_abs = 0;
  for (int i = 0; i < 200; ++i) {
    const double c = i % 2 == 0 ? 0.01 * (i % 7 - 3) : 1 + 0.001 * (i % 5 - 2);
    t = i % 2 == 0 ? t + c : t * c;
    for (double& v : ref) {
      v = i % 2 == 0 ? v + f32(c) : v * f32(c);
      max_abs = std::max(max_abs, std::fabs(v));
    }
  }
  EXPECT_EQ(t.schedule().size(), 1u) << "200 elementwise ops should fuse into one kernel";
  expect_values(t, {n}, dtypes::float32, ref, 6e-8, 201 * 6e-8 * max_abs);
}

VKGRAD_ALL_DEVICES(ViewsTest);

}  // namespace
}  // namespace vkgrad
