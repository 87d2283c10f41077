// The symbolic fuzzer: random bounded integer expressions (index and int32) over four variables
// whose ranges include negative, nonnegative and strictly positive ones. For each expression the
// simplified form must evaluate (reference interpreter) to the original's value on random
// assignments; the original's value must lie within the bounds of both forms; and simplify must
// be idempotent. Deterministic: a fixed seed, each expression drawn from its own seeded stream so
// a failure reproduces alone (VKGRAD_FUZZ_SEED, VKGRAD_FUZZ_FIRST, VKGRAD_FUZZ_N; VKGRAD_FUZZ_DEPTH
// draws deeper expressions, VKGRAD_FUZZ_VERBOSE=1 prints each one).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/print.hpp"
#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"

using namespace vkgrad;

namespace {

#ifdef VKGRAD_FUZZ_LONG
constexpr int64_t kDefaultCount = 3'000'000;
constexpr int kDefaultDepth = 7;
#else
constexpr int64_t kDefaultCount = 100'000;
constexpr int kDefaultDepth = 5;
#endif
constexpr int kAssignments = 3;
// Every node of a generated expression must stay within +-kLimit (by its bounds), far from the
// dtype's edge: the simplifier assumes index math does not overflow, and its rewrites may scale
// intermediate values by small constants.
constexpr int64_t kLimitInt32 = int64_t{1} << 22;
constexpr int64_t kLimitIndex = int64_t{1} << 40;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 0) : fallback;
}

struct Var {
  UOp node;
  std::string name;
  int64_t lo, hi;
};

// splitmix64: a tiny, well-mixed generator that is cheap to seed per expression.
class SplitMix {
 public:
  using result_type = uint64_t;
  explicit SplitMix(uint64_t seed) : s_(seed) {}
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }
  uint64_t operator()() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t s_;
};

class Generator {
 public:
  Generator(uint64_t seed, DType dt) : rng_(seed), dt_(dt) {
    static const char* names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; ++i) {
      int64_t lo = 0, hi = 0, width = pick({0, 1, 2, 3, 5, 8, 12, 20, 30});
      switch (i == 3 ? 3 : uniform(0, 3)) {
        case 0:  // both signs
          lo = -uniform(1, 20);
          hi = lo + std::max<int64_t>(width, -lo + 1);
          break;
        case 1:  // nonnegative
          lo = uniform(0, 3) == 0 ? 0 : uniform(0, 10);
          hi = lo + width;
          break;
        case 2:  // nonpositive
          hi = -uniform(0, 10);
          lo = hi - width;
          break;
        default:  // strictly positive (usable as a divisor)
          lo = uniform(1, 4);
          hi = lo + std::min<int64_t>(width, 12);
      }
      vars_.push_back({UOp::variable(names[i], lo, hi, dt_), names[i], lo, hi});
    }
  }

  UOp expr(int depth) {
    if (depth == 0 || uniform(0, 9) < 2) return leaf();
    switch (uniform(0, 19)) {
      case 16:
      case 17:
        return linear(depth - 1) / divisor_const();
      case 18:
        return linear(depth - 1) % divisor_const();
      case 19:
        return linear(depth - 1);
      case 0:
      case 1:
        return expr(depth - 1) + expr(depth - 1);
      case 2:
        return expr(depth - 1) - expr(depth - 1);
      case 3:
      case 4:
        return expr(depth - 1) * small_const(-5, 6);
      case 5:
        return expr(depth - 1) * expr(depth - 2 < 0 ? 0 : depth - 2);
      case 6:
      case 7:
        return expr(depth - 1) / divisor_const();
      case 8:
      case 9:
        return expr(depth - 1) % divisor_const();
      case 10:
        return expr(depth - 1) / positive(depth - 1);
      case 11:
        return expr(depth - 1) % positive(depth - 1);
      case 12:
        return expr(depth - 1).maximum(expr(depth - 1));
      case 13:
        return -expr(depth - 1);
      default:
        return condition(depth - 1).where(expr(depth - 1), expr(depth - 1));
    }
  }

  // An index-like sum: terms scaled by constants that share factors with the divisors.
  UOp linear(int depth) {
    UOp acc = term(depth);
    for (int64_t n = uniform(0, 2); n > 0; --n) acc = acc + term(depth);
    if (uniform(0, 1)) acc = acc + small_const(-12, 12);
    return acc;
  }
  UOp term(int depth) {
    UOp base = uniform(0, 2) ? vars_[uniform(0, 3)].node : expr(depth > 2 ? 2 : depth);
    int64_t k = pick({1, 1, 2, 3, 4, 4, 6, 8, 12, 16, -1, -2, -4});
    return k == 1 ? base : base * UOp::const_(dt_, k);
  }

  UOp condition(int depth) {
    UOp a = expr(depth), b = uniform(0, 2) == 0 ? small_const(-10, 10) : expr(depth);
    switch (uniform(0, 5)) {
      case 0:
        return a.lt(b);
      case 1:
        return a.ne(b);
      case 2:
        return a.ge(b);  // !(a < b)
      case 3:
        return a.le(b);  // !(b < a)
      case 4:
        return a.eq(b);
      default:
        return a.lt(b) & condition(depth > 0 ? depth - 1 : 0);
    }
  }

  const std::vector<Var>& vars() const { return vars_; }
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  int64_t pick(std::initializer_list<int64_t> xs) {
    return xs.begin()[uniform(0, static_cast<int64_t>(xs.size()) - 1)];
  }
  UOp small_const(int64_t lo, int64_t hi) { return UOp::const_(dt_, uniform(lo, hi)); }
  UOp leaf() {
    if (uniform(0, 9) < 7) return vars_[uniform(0, 3)].node;
    return small_const(-9, 9);
  }
  UOp divisor_const() {
    int64_t c = pick({1, 2, 2, 3, 4, 4, 5, 6, 8, 8, 9, 12, 16});
    return UOp::const_(dt_, uniform(0, 9) == 0 ? -c : c);
  }
  // A strictly positive divisor: the positive variable, or an expression whose bounds say so.
  UOp positive(int depth) {
    if (uniform(0, 2) == 0) {
      UOp e = expr(depth > 2 ? 2 : depth);
      if (e.vmin() > 0) return e;
    }
    return uniform(0, 1) ? vars_[3].node : vars_[3].node + UOp::const_(dt_, uniform(0, 3));
  }

  SplitMix rng_;
  DType dt_;
  std::vector<Var> vars_;
};

// The number of nodes of `e`, or 0 when some node's bounds leave +-limit.
size_t size_within_limits(const UOp& e, int64_t limit) {
  std::vector<UOp> nodes = toposort(e);
  for (const UOp& u : nodes)
    if (u.vmin() < -limit || u.vmax() > limit) return 0;
  return nodes.size();
}

int64_t value(const UOp& u, const InterpEnv& env) { return as_int(evaluate(u, env)); }

std::string describe(const InterpEnv& env) {
  std::string s;
  for (const auto& [k, v] : env.vars) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, v);
  return s;
}

std::string describe_vars(const std::vector<Var>& vars) {
  std::string s;
  for (const Var& v : vars)
    s += fmt::format("{}{}:[{}, {}]", s.empty() ? "" : " ", v.name, v.lo, v.hi);
  return s;
}

struct Stats {
  int64_t checked = 0, rejected = 0, nodes_before = 0, nodes_after = 0, unchanged = 0;
  std::vector<std::string> failures;
};

// Draws expression `i` of the run from its own stream and checks it; failures go to `st`.
void check_one(uint64_t seed, int64_t i, int max_depth, bool verbose, Stats& st) {
  SplitMix stream(seed * 0x100000001B3ull ^ static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
  const DType dt = stream() % 4 == 0 ? dtypes::int32 : dtypes::index;
  Generator gen(stream(), dt);
  const int64_t limit = dt == dtypes::int32 ? kLimitInt32 : kLimitIndex;
  UOp e;
  size_t size = 0;
  for (int attempt = 0; attempt < 20 && !e; ++attempt) {
    int depth = static_cast<int>(gen.uniform(1, max_depth));
    UOp cand = gen.uniform(0, 9) == 0 ? gen.condition(depth - 1) : gen.expr(depth);
    if ((size = size_within_limits(cand, limit)) != 0)
      e = cand;
    else
      ++st.rejected;
  }
  if (!e) return;
  ++st.checked;

  UOp s;
  auto fail = [&](const std::string& what, const InterpEnv* env) {
    st.failures.push_back(fmt::format(
        "{}\n  seed={:#x} index={} dtype={} (rerun: VKGRAD_FUZZ_SEED={:#x} VKGRAD_FUZZ_FIRST={} "
        "VKGRAD_FUZZ_N=1 VKGRAD_FUZZ_DEPTH={})\n  vars: {}\n  original:   {}\n  simplified: {}{}",
        what, seed, i, dt.name(), seed, i, max_depth, describe_vars(gen.vars()), render(e),
        s ? render(s) : std::string("<none>"),
        env ? "\n  assignment: " + describe(*env) : std::string()));
  };
  try {
    s = simplify(e);
  } catch (const std::exception& ex) {
    fail(fmt::format("simplify threw: {}", ex.what()), nullptr);
    return;
  }
  if (verbose) fmt::print("{}: {}\n    -> {}\n", i, render(e), render(s));
  st.nodes_before += static_cast<int64_t>(size);
  st.nodes_after += static_cast<int64_t>(s == e ? size : toposort(s).size());
  st.unchanged += s == e;

  for (int k = 0; k < kAssignments; ++k) {
    InterpEnv env;
    for (const Var& v : gen.vars()) {
      int64_t r = gen.uniform(0, 9);
      env.vars[v.name] = r == 0 ? v.lo : r == 1 ? v.hi : gen.uniform(v.lo, v.hi);
    }
    int64_t want = 0, got = 0;
    try {
      want = value(e, env);
    } catch (const std::exception& ex) {
      fail(fmt::format("the original does not evaluate: {}", ex.what()), &env);
      return;
    }
    try {
      got = s == e ? want : s.is_const() ? as_int(s.const_value()) : value(s, env);
    } catch (const std::exception& ex) {
      fail(fmt::format("the simplified form does not evaluate: {}", ex.what()), &env);
      return;
    }
    if (want != got)
      return fail(fmt::format("value changed: original {} simplified {}", want, got), &env);
    if (want < e.vmin() || want > e.vmax())
      return fail(
          fmt::format("value {} outside the original's bounds [{}, {}]", want, e.vmin(), e.vmax()),
          &env);
    if (want < s.vmin() || want > s.vmax())
      return fail(fmt::format("value {} outside the simplified form's bounds [{}, {}]", want,
                              s.vmin(), s.vmax()),
                  &env);
  }
  UOp again = simplify(s);
  if (again != s) fail("not idempotent: simplify again gives " + render(again), nullptr);
}

TEST(FuzzSymbolic, SimplifyKeepsValuesBoundsAndIsIdempotent) {
  const uint64_t seed = static_cast<uint64_t>(env_int("VKGRAD_FUZZ_SEED", 0x5EED));
  const int64_t first = env_int("VKGRAD_FUZZ_FIRST", 0);
  const int64_t count = env_int("VKGRAD_FUZZ_N", kDefaultCount);
  const bool verbose = env_int("VKGRAD_FUZZ_VERBOSE", 0) != 0;
  const int depth = static_cast<int>(env_int("VKGRAD_FUZZ_DEPTH", kDefaultDepth));
  const auto start = std::chrono::steady_clock::now();

  // Expressions are independent and each has its own stream, so the run is the same whatever
  // the number of threads; threads take interleaved indices.
  const int threads =
      verbose ? 1
              : static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8));
  std::vector<Stats> stats(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = first + t; i < first + count && stats[t].failures.size() < 10; i += threads)
        check_one(seed, i, depth, verbose, stats[t]);
    });
  for (std::thread& th : pool) th.join();

  Stats all;
  for (const Stats& st : stats) {
    all.checked += st.checked;
    all.rejected += st.rejected;
    all.nodes_before += st.nodes_before;
    all.nodes_after += st.nodes_after;
    all.unchanged += st.unchanged;
    all.failures.insert(all.failures.end(), st.failures.begin(), st.failures.end());
  }
  for (size_t k = 0; k < all.failures.size() && k < 10; ++k) ADD_FAILURE() << all.failures[k];

  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double n = static_cast<double>(std::max<int64_t>(all.checked, 1));
  fmt::print(
      "fuzz_symbolic: {} expressions (seed {:#x}, first {}) in {:.2f} s on {} threads; {} draws "
      "rejected as too large\n  nodes: {:.2f} before, {:.2f} after on average ({:.1f}% "
      "smaller); {:.1f}% unchanged\n",
      all.checked, seed, first, secs, threads, all.rejected, double(all.nodes_before) / n,
      double(all.nodes_after) / n,
      100.0 * (1.0 - double(all.nodes_after) / double(std::max<int64_t>(all.nodes_before, 1))),
      100.0 * double(all.unchanged) / n);
  EXPECT_EQ(all.failures.size(), 0u);
}

}  // namespace
