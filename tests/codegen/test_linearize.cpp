// tests/codegen: the linearize pass on scheduler-built kernels, no device — the flat list's loops
// (RANGE ... END, nested), accumulator and preload registers, the vector store's gather, where
// hoisting puts a value, and verify_linear naming what is out of scope.
#include <gtest/gtest.h>

#include <vkgrad/vkgrad.hpp>

#include "codegen/linearize.hpp"
#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "scheduled.hpp"
#include "test_glsl_tools.hpp"

namespace vkgrad {
namespace {

AxisType axis_type(const UOp& r) { return r.arg_as<AxisArg>().type; }

// Index of the first entry at or after `from` satisfying `f`, or -1.
template <class F>
int find(const std::vector<UOp>& list, F f, int from = 0) {
  for (int i = from; i < static_cast<int>(list.size()); ++i)
    if (f(list[static_cast<size_t>(i)])) return i;
  return -1;
}

bool is_reg(const UOp& u, const std::string& name) {
  return u.op() == Ops::DEFINE_REG && u.arg_as<std::string>() == name;
}

// out[n] = sum_k a[k] * b[n, k]: a's load depends on k alone, b's on k and n.
UOp rows_times_vector(const Target& t, std::vector<Opt> opts) {
  const Tensor a = input({64}), b = input({16, 64});
  return apply_opts(scheduled_kernel((b * a.reshape({1, 64})).sum(1)), opts, t);
}

TEST(Linearize, LoopsNestAndRegistersReplaceTheReduction) {
  const Target cpu;  // C: no hoisting, no preloading
  const UOp k = rows_times_vector(cpu, {{OptOp::UPCAST, 0, 4}, {OptOp::UNROLL, 0, 4}});
  const std::vector<UOp> list = linearize(k, {});
  EXPECT_NO_THROW(verify_linear(list));
  // Every END closes the innermost open RANGE; the global loop opens first and closes last.
  std::vector<UOp> open;
  for (const UOp& u : list) {
    if (u.op() == Ops::RANGE) open.push_back(u);
    if (u.op() == Ops::END) {
      ASSERT_FALSE(open.empty());
      EXPECT_EQ(u.src(0), open.back());
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty());
  ASSERT_EQ(list.front().op(), Ops::RANGE);
  EXPECT_EQ(axis_type(list.front()), AxisType::global);
  EXPECT_EQ(list.back().src(0), list.front());
  // The accumulators: one per output of the upcast and step of the unroll; the fold: one per
  // output, read by the store.
  const int acc = find(list, [](const UOp& u) { return is_reg(u, "acc0"); });
  const int red = find(list, [](const UOp& u) { return is_reg(u, "red0"); });
  ASSERT_GE(acc, 0);
  ASSERT_GT(red, acc);
  const UOp& acc0 = list[static_cast<size_t>(acc)];
  ASSERT_EQ(acc0.src().size(), 2u);
  EXPECT_EQ(axis_type(acc0.src(0)), AxisType::upcast);
  EXPECT_EQ(axis_type(acc0.src(1)), AxisType::unroll);
  EXPECT_EQ(acc0.dtype().size(), 16);
  EXPECT_EQ(list[static_cast<size_t>(red)].src().size(), 1u);
  // No REDUCE is left: the store reads red0 where the upcast loop is open.
  for (const UOp& u : list)
    for (const UOp& x : toposort(u)) EXPECT_NE(x.op(), Ops::REDUCE);
  const int store = find(list, [](const UOp& u) {
    return u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL;
  });
  ASSERT_GT(store, red);
  const UOp& value = list[static_cast<size_t>(store)].src(1);
  ASSERT_EQ(value.op(), Ops::LOAD);
  EXPECT_EQ(value.src(0).src(0), list[static_cast<size_t>(red)]);
  // The accumulator steps as acc = acc + product inside the reduce loop.
  const int reduce_loop = find(
      list, [](const UOp& u) { return u.op() == Ops::RANGE && axis_type(u) == AxisType::reduce; });
  const int step = find(
      list,
      [&](const UOp& u) {
        return u.op() == Ops::STORE && u.src(0).src(0) == acc0 && u.src(1).op() == Ops::ADD;
      },
      reduce_loop);
  EXPECT_GT(step, reduce_loop);
}

TEST(Linearize, HoistingListsAValueInTheOutermostLoopWhereItsRangesExist) {
  const Target cpu;
  const UOp k = rows_times_vector(cpu, {{OptOp::UPCAST, 0, 4}});
  // a[k]: the load whose index mentions no upcast range.
  auto a_load = [](const std::vector<UOp>& list) {
    return find(list, [](const UOp& u) {
      if (u.op() != Ops::LOAD || u.src(0).src(0).op() != Ops::DEFINE_GLOBAL) return false;
      for (const UOp& x : toposort(u))
        if (x.op() == Ops::RANGE && axis_type(x) == AxisType::upcast) return false;
      return true;
    });
  };
  auto upcast_loop_in_reduce = [](const std::vector<UOp>& list) {
    const int r = find(list, [](const UOp& u) {
      return u.op() == Ops::RANGE && axis_type(u) == AxisType::reduce;
    });
    return find(
        list, [](const UOp& u) { return u.op() == Ops::RANGE && axis_type(u) == AxisType::upcast; },
        r);
  };
  const std::vector<UOp> inner = linearize(k, {}), hoisted = linearize(k, {.hoist = true});
  EXPECT_NO_THROW(verify_linear(inner));
  EXPECT_NO_THROW(verify_linear(hoisted));
  EXPECT_GT(a_load(inner), upcast_loop_in_reduce(inner));      // once per output
  EXPECT_LT(a_load(hoisted), upcast_loop_in_reduce(hoisted));  // once per k
}

TEST(Linearize, PreloadingReadsEachLoadOncePerStepIntoARegisterArray) {
  const Target gpu = full_target();
  const UOp k = rows_times_vector(gpu, {{OptOp::UPCAST, 0, 4}});
  const std::vector<UOp> list = linearize(k, {.hoist = true, .preload = true});
  EXPECT_NO_THROW(verify_linear(list));
  // b[n, k] varies along the upcast range: loaded into ld0[4] once per k, then read from it.
  const int ld = find(list, [](const UOp& u) { return is_reg(u, "ld0"); });
  ASSERT_GE(ld, 0);
  const UOp& ld0 = list[static_cast<size_t>(ld)];
  ASSERT_EQ(ld0.src().size(), 1u);
  EXPECT_EQ(axis_type(ld0.src(0)), AxisType::upcast);
  const int fill = find(
      list, [&](const UOp& u) { return u.op() == Ops::STORE && u.src(0).src(0) == ld0; }, ld);
  ASSERT_GT(fill, ld);
  EXPECT_EQ(list[static_cast<size_t>(fill)].src(1).op(), Ops::LOAD);
  // The accumulators are one per output (the unroll walks inside the register nest).
  const int acc = find(list, [](const UOp& u) { return is_reg(u, "acc0"); });
  ASSERT_GE(acc, 0);
  EXPECT_EQ(list[static_cast<size_t>(acc)].src().size(), 1u);
}

TEST(Linearize, AVectorStoreGathersItsLanesIntoARegister) {
  const Target gpu = full_target();
  UOp k = scheduled_kernel(input({8, 64}) + input({8, 64}));
  const int last_axis = static_cast<int>(kernel_axes(k).globals.size()) - 1;
  k = fold_vectors(apply_opts(k, {{OptOp::UPCAST, last_axis, 4}}, gpu), gpu);
  ASSERT_EQ(k.src(0).src().size(), 3u);  // STORE(vec4 index, value, range)
  const std::vector<UOp> list = linearize(k, {.hoist = true, .preload = true});
  EXPECT_NO_THROW(verify_linear(list));
  const int reg = find(list, [](const UOp& u) { return is_reg(u, "v"); });
  ASSERT_GE(reg, 0);
  EXPECT_EQ(list[static_cast<size_t>(reg)].dtype().base().count(), 4);
  // Each lane stores its element inside the upcast loop; after it, the vector is stored whole.
  size_t at = list.size() - 1;
  while (at > 0 && list[at].op() == Ops::END) --at;
  const UOp& last = list[at];
  ASSERT_EQ(last.op(), Ops::STORE);
  EXPECT_EQ(last.src(0).src(0).op(), Ops::DEFINE_GLOBAL);
  EXPECT_EQ(last.src(1).src(0).src(0), list[static_cast<size_t>(reg)]);
  const int lane = find(list, [&](const UOp& u) {
    return u.op() == Ops::STORE && u.src(0).src(0) == list[static_cast<size_t>(reg)];
  });
  ASSERT_GT(lane, reg);
  EXPECT_EQ(list[static_cast<size_t>(lane) + 1].op(), Ops::END);
}

TEST(Linearize, VerifyNamesWhatIsReadOutOfScope) {
  const Target cpu;
  const UOp k = rows_times_vector(cpu, {{OptOp::UPCAST, 0, 4}});
  const std::vector<UOp> list = linearize(k, {});
  ASSERT_NO_THROW(verify_linear(list));
  auto fails_with = [](const std::vector<UOp>& l, const std::string& what) {
    try {
      verify_linear(l);
    } catch (const InternalError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("linearize"), std::string::npos) << m;
      EXPECT_NE(m.find(what), std::string::npos) << m;
      return;
    }
    ADD_FAILURE() << "verify_linear accepted a list whose " << what;
  };
  // A value removed: its readers read it before it is computed.
  std::vector<UOp> missing = list;
  missing.erase(missing.begin() + find(list, [](const UOp& u) { return u.op() == Ops::LOAD; }));
  fails_with(missing, "read before it is computed");
  // The reduce loop closed before its accumulator step: the step reads k outside its loop.
  std::vector<UOp> early = list;
  const int r = find(
      list, [](const UOp& u) { return u.op() == Ops::RANGE && axis_type(u) == AxisType::reduce; });
  const int end = find(list, [&](const UOp& u) {
    return u.op() == Ops::END && u.src(0) == list[static_cast<size_t>(r)];
  });
  std::rotate(early.begin() + r + 1, early.begin() + end, early.begin() + end + 1);
  fails_with(early, "outside its loop");
  // The last END dropped: a loop left open.
  std::vector<UOp> open(list.begin(), list.end() - 1);
  fails_with(open, "left open");
  // A register read before its declaration.
  std::vector<UOp> undeclared = list;
  undeclared.erase(undeclared.begin() + find(list, [](const UOp& u) { return is_reg(u, "acc0"); }));
  fails_with(undeclared, "declared");
}

}  // namespace
}  // namespace vkgrad
