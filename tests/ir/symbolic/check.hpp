// Helpers for the rule tests: `check(before, after)` asserts that simplify(before) is exactly the
// node `after` (pointer equality) and that both evaluate equal; `stays(e)` asserts that nothing
// rewrites e; `avoids(e, wrong)` asserts that e does not simplify to `wrong` but still to an
// equivalent expression. Equivalence is checked with the reference interpreter on every
// assignment of the variables when there are few, else on a fixed sample.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <string>
#include <vector>
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/print.hpp"
#include "ir/scalar.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad::test {

inline UOp var(const std::string& name, int64_t lo, int64_t hi, DType dt = dtypes::index) {
  return UOp::variable(name, lo, hi, dt);
}
inline UOp idx(int64_t v) { return UOp::const_(dtypes::index, v); }
inline UOp i32(int64_t v) { return UOp::const_(dtypes::int32, v); }
inline UOp f32(double v) { return UOp::const_(dtypes::float32, v); }
inline UOp boolean(bool v) { return UOp::const_(dtypes::bool_, v); }

// The DEFINE_VARs of some graphs, by name.
inline std::map<std::string, VarArg> variables_of(std::initializer_list<UOp> roots) {
  std::map<std::string, VarArg> vars;
  for (const UOp& r : roots)
    for (const UOp& u : toposort(r))
      if (u.op() == Ops::DEFINE_VAR) vars[u.arg_as<VarArg>().name] = u.arg_as<VarArg>();
  return vars;
}

// Every assignment when there are at most `limit`, else a deterministic sample that includes
// every corner of the box.
inline std::vector<InterpEnv> assignments(const std::map<std::string, VarArg>& vars,
                                          size_t limit = 20000) {
  std::vector<InterpEnv> out{InterpEnv{}};
  double total = 1;
  for (const auto& [name, v] : vars) total *= double(v.max - v.min + 1);
  if (total <= double(limit)) {
    for (const auto& [name, v] : vars) {
      std::vector<InterpEnv> next;
      for (const InterpEnv& env : out)
        for (int64_t x = v.min; x <= v.max; ++x) {
          InterpEnv e = env;
          e.vars[name] = x;
          next.push_back(std::move(e));
        }
      out = std::move(next);
    }
    return out;
  }
  out.clear();
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (size_t k = 0; k < limit; ++k) {
    InterpEnv env;
    size_t bit = 0;
    for (const auto& [name, v] : vars) {
      uint64_t span = static_cast<uint64_t>(v.max - v.min) + 1;
      int64_t x = k < (size_t{1} << vars.size()) ? ((k >> bit) & 1 ? v.max : v.min)
                                                 : v.min + static_cast<int64_t>(next() % span);
      env.vars[name] = x;
      ++bit;
    }
    out.push_back(std::move(env));
  }
  return out;
}

// Values compare exactly: integers by value, floats by bit pattern (NaN by NaN-ness).
inline bool same_value(const ConstValue& a, const ConstValue& b) {
  if (std::holds_alternative<double>(a) || std::holds_alternative<double>(b)) {
    double x = as_double(a), y = as_double(b);
    if (x != x || y != y) return x != x && y != y;
    return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
  }
  return as_int(a) == as_int(b);
}

inline std::string show(const InterpEnv& env) {
  std::string s;
  for (const auto& [k, v] : env.vars) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, v);
  return s;
}

// a and b agree everywhere (division by zero in both counts as agreement).
inline ::testing::AssertionResult equivalent(const UOp& a, const UOp& b) {
  for (const InterpEnv& env : assignments(variables_of({a, b}))) {
    ConstValue va, vb;
    bool ea = false, eb = false;
    try {
      va = evaluate(a, env);
    } catch (const Error&) {
      ea = true;
    }
    try {
      vb = evaluate(b, env);
    } catch (const Error&) {
      eb = true;
    }
    if (ea != eb || (!ea && !same_value(va, vb)))
      return ::testing::AssertionFailure()
             << render(a) << " and " << render(b) << " differ at " << show(env) << ": "
             << (ea ? std::string("error") : fmt::format("{}", as_double(va))) << " vs "
             << (eb ? std::string("error") : fmt::format("{}", as_double(vb)));
  }
  return ::testing::AssertionSuccess();
}

// simplify(before) is exactly `after`, and both agree with `before` everywhere.
inline ::testing::AssertionResult check(const UOp& before, const UOp& after) {
  UOp got = simplify(before);
  if (got != after)
    return ::testing::AssertionFailure()
           << render(before) << " simplified to " << render(got) << ", expected " << render(after);
  return equivalent(before, got);
}

// No rule rewrites `e`.
inline ::testing::AssertionResult stays(const UOp& e) {
  UOp got = simplify(e);
  if (got != e)
    return ::testing::AssertionFailure()
           << render(e) << " should stay as it is, but simplified to " << render(got);
  return ::testing::AssertionSuccess();
}

// `e` does not simplify to `wrong`, and what it simplifies to agrees with it everywhere.
inline ::testing::AssertionResult avoids(const UOp& e, const UOp& wrong) {
  UOp got = simplify(e);
  if (got == wrong)
    return ::testing::AssertionFailure() << render(e) << " must not simplify to " << render(wrong);
  return equivalent(e, got);
}

}  // namespace vkgrad::test
