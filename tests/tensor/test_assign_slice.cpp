// tests/tensor: assign_slice, the write of a region in place (a KV cache's new rows), and slice
// with a Variable end, on every device. A write at a Variable position and a read over a
// Variable prefix serve every position from one Jit capture: no schedule, no compile per call.
#include <vkgrad/jit.hpp>
#include <vkgrad/stats.hpp>

#include "harness.hpp"

namespace vkgrad {
namespace {

using testing::expect_error;
using testing::expect_near;
using testing::values_of;

class AssignSliceTest : public testing::DeviceTest {
 protected:
  Tensor data(const Shape& shape, uint64_t seed) const {
    return testing::random_tensor(shape, seed, dev());
  }
};

// rows [at, at + value rows) of `base` {rows, cols} replaced by `value`, in double precision.
std::vector<double> written(std::vector<double> base, int64_t cols, int64_t at,
                            const std::vector<double>& value) {
  for (size_t i = 0; i < value.size(); ++i) base[static_cast<size_t>(at * cols) + i] = value[i];
  return base;
}

TEST_P(AssignSliceTest, WritesTheRegionInPlace) {
  Tensor cache = data({6, 3}, 1).realize();
  const std::vector<double> before = values_of(cache);
  const Tensor value = data({2, 3}, 2);
  const Tensor y = value * 2.0;
  cache.assign_slice(0, 3, y);
  // One kernel, covering the two rows only.
  const std::vector<KernelInfo> kernels = cache.schedule();
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].global_size, (Shape{2, 3}));
  cache.realize();
  std::vector<double> v2 = values_of(value);
  for (double& v : v2) v *= 2;
  expect_near(values_of(cache), written(before, 3, 3, v2), 1e-6, 0, "rows 3 and 4");
  // Along an inner dimension too.
  Tensor wide = data({2, 5}, 3).realize();
  const std::vector<double> w0 = values_of(wide);
  const Tensor col = data({2, 1}, 4);
  wide.assign_slice(1, 4, col).realize();
  std::vector<double> want = w0;
  const std::vector<double> c = values_of(col);
  want[4] = c[0], want[9] = c[1];
  expect_near(values_of(wide), want, 1e-6, 0, "column 4");
}

TEST_P(AssignSliceTest, ALazyTargetIsRealizedFirst) {
  Tensor cache = Tensor::zeros({4, 2}, {}, dev());
  cache.assign_slice(0, 1, Tensor::ones({1, 2}, {}, dev()));
  expect_near(values_of(cache), {0, 0, 1, 1, 0, 0, 0, 0}, 0, 0, "row 1");
  // Two writes before a realize apply in order.
  cache.assign_slice(0, 0, Tensor::full({2, 2}, 2.0, {}, dev()));
  cache.assign_slice(0, 1, Tensor::full({2, 2}, 3.0, {}, dev()));
  expect_near(values_of(cache), {2, 2, 3, 3, 3, 3, 0, 0}, 0, 0, "two writes");
}

TEST_P(AssignSliceTest, AReadOfTheOldValueInTheSameRealizeRunsFirst) {
  Tensor cache = data({4, 2}, 5).realize();
  const std::vector<double> old = values_of(cache);
  const Tensor doubled = cache * 2.0;  // reads the old value
  cache.assign_slice(0, 2, Tensor::zeros({2, 2}, {}, dev()));
  const Tensor after = cache + 1.0;  // reads the new one
  std::vector<Tensor> all{cache, after, doubled};
  Tensor::realize_all(all);
  std::vector<double> d = old, a = written(old, 2, 2, {0, 0, 0, 0});
  for (double& v : d) v *= 2;
  for (double& v : a) v += 1;
  expect_near(values_of(all[2]), d, 1e-6, 0, "the old value, doubled");
  expect_near(values_of(all[1]), a, 1e-6, 0, "the new value, plus one");
}

TEST_P(AssignSliceTest, OneCaptureServesEveryPosition) {
  // A toy cache: each call writes one row at `pos` and returns the sum of rows [0, pos + 1).
  constexpr int64_t kRows = 8;
  const Variable pos("as_pos", 0, kRows - 1), len("as_len", 1, kRows);
  Tensor cache = Tensor::zeros({kRows, 4}, {}, dev()).contiguous().realize();
  int64_t now = 0;
  Jit step([&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    cache.assign_slice(0, pos.bind(now), in[0] * 2.0);
    return {cache.slice(0, len.bind(now + 1)).sum(0)};
  });
  std::vector<double> ref(kRows * 4, 0.0);
  for (now = 0; now < kRows; ++now) {
    SCOPED_TRACE(now);
    const Tensor row = data({1, 4}, 100 + now);
    if (now >= 2) reset_runtime_stats();
    const std::vector<Tensor> got = step({row, Tensor::variable(pos.bind(now), {}, dev()),
                                          Tensor::variable(len.bind(now + 1), {}, dev())});
    if (now >= 2) {
      const RuntimeStats s = runtime_stats();
      EXPECT_EQ(s.schedules_built, 0);
      EXPECT_EQ(s.programs_compiled, 0);
      EXPECT_EQ(s.graph_replays, 1);
    }
    const std::vector<double> r = values_of(row);
    for (size_t i = 0; i < 4; ++i) ref[static_cast<size_t>(now) * 4 + i] = 2 * r[i];
    std::vector<double> sum(4, 0.0);
    for (int64_t j = 0; j <= now; ++j)
      for (size_t i = 0; i < 4; ++i) sum[i] += ref[static_cast<size_t>(j) * 4 + i];
    expect_near(values_of(got[0]), sum, 1e-5, 1e-6, "sum of the filled rows");
    expect_near(values_of(cache), ref, 1e-6, 0, "the cache");
  }
  EXPECT_EQ(step.captures(), 1);
  EXPECT_EQ(step.replays(), kRows - 2);
}

TEST_P(AssignSliceTest, AVariablePrefixOfSeveralRowsIsGated) {
  // A value of symbolic length written at a symbolic offset: the rows past the end are not
  // written (the bounds allow them, the bound values do not).
  const Variable at("as_at", 0, 5), rows("as_rows", 1, 4);
  Tensor cache = Tensor::zeros({6, 2}, {}, dev()).contiguous().realize();
  const Tensor value = data({3, 2}, 7);
  cache.assign_slice(0, at.bind(3), value.symbolic(0, rows)).realize();
  expect_near(values_of(cache), written(std::vector<double>(12, 0.0), 2, 3, values_of(value)), 1e-6,
              0, "rows 3..5");
}

TEST_P(AssignSliceTest, BadWritesAreErrors) {
  Tensor cache = Tensor::zeros({4, 3}, {}, dev()).contiguous().realize();
  expect_error<ShapeError>(
      [&] {
        cache.assign_slice(0, 3, Tensor::zeros({2, 3}, {}, dev()));
      },
      {"assign_slice", "(2, 3)", "(4, 3)"});
  expect_error<ShapeError>(
      [&] {
        cache.assign_slice(0, 0, Tensor::zeros({1, 2}, {}, dev()));
      },
      {"assign_slice", "(1, 2)"});
  expect_error<ShapeError>(
      [&] {
        cache.assign_slice(2, 0, Tensor::zeros({1, 3}, {}, dev()));
      },
      {"assign_slice"});
  expect_error<DTypeError>(
      [&] {
        cache.assign_slice(0, 0, Tensor::zeros({1, 3}, dtypes::int32, dev()));
      },
      {"assign_slice", "int32", "float32"});
  expect_error<Error>([&] { cache.assign_slice(0, Variable("as_unbound", 0, 3), cache); },
                      {"as_unbound", "bound"});
  expect_error<ShapeError>([&] { cache.slice(0, Variable("as_long", 1, 5).bind(2)); },
                           {"slice", "as_long", "5"});
  // The tensor is unchanged and still works.
  expect_near(values_of(cache), std::vector<double>(12, 0.0), 0, 0, "unchanged");
}

TEST_P(AssignSliceTest, AttentionOverTheWrittenPrefix) {
  // One decode step of grouped attention: the new key written at `pos`, the query against the
  // first pos + 1 keys, equal to the same product over a concatenation.
  const int64_t ctx = 8, kv = 2, group = 2, hd = 4, d = 6;
  const Variable len("as_attn_len", 1, ctx), pos("as_attn_pos", 0, ctx - 1);
  Tensor cache = data({ctx, kv, hd}, 3).realize();
  const Tensor wq = data({d, kv * group * hd}, 5), wk = data({d, kv * hd}, 6);
  for (int64_t n : {1, 2, 3}) {
    SCOPED_TRACE(n);
    const Tensor x = data({1, d}, 10 + n);
    const Tensor q = x.matmul(wq).reshape({1, kv, group, hd}).permute({1, 2, 0, 3});
    const Tensor k = x.matmul(wk).reshape({1, kv, hd});
    const Tensor joined =
        n == 1 ? k : cat({cache.shrink({{0, n - 1}, {0, kv}, {0, hd}}), k}, 0).realize();
    cache.assign_slice(0, pos.bind(n - 1), k);
    auto keys = [&](const Tensor& c) {
      return c.permute({1, 0, 2}).unsqueeze(1).transpose(-1, -2);
    };
    const Tensor want = q.matmul(keys(joined)).softmax(-1).reshape({kv, group, n});
    Tensor got = q.matmul(keys(cache.slice(0, len.bind(n)))).softmax(-1).reshape({kv, group, n});
    std::vector<Tensor> all{got, cache};
    Tensor::realize_all(all);
    expect_near(values_of(all[0]), values_of(want), 1e-5, 1e-6, "attention weights");
  }
}

VKGRAD_ALL_DEVICES(AssignSliceTest);

}  // namespace
}  // namespace vkgrad
