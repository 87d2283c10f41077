// tools/cli: the `vkgrad` command-line tool. `vkgrad demo` builds a few index expressions,
// simplifies them and prints them before and after. Uses ir only (for now).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/print.hpp"
#include "ir/symbolic/symbolic.hpp"
#include "ir/uop.hpp"

namespace vkgrad {
namespace {

void print_usage(std::FILE* to) {
  fmt::print(to,
             "usage: vkgrad <command>\n"
             "\n"
             "commands:\n"
             "  demo    simplify a few index expressions and print them before and after\n"
             "\n"
             "options:\n"
             "  -h, --help  print this message\n");
}

struct DemoCase {
  std::string title;
  UOp expr;
  UOp expected;  // the form it should simplify to
};

// The variables of an expression, for sampling it with the reference interpreter.
struct Leaf {
  UOp u;
  int64_t lo, hi;
};

std::vector<Leaf> leaves(const UOp& u) {
  std::vector<Leaf> out;
  for (const UOp& n : toposort(u)) {
    if (n.op() == Ops::DEFINE_VAR)
      out.push_back({n, n.arg_as<VarArg>().min, n.arg_as<VarArg>().max});
    else if (n.op() == Ops::RANGE)
      out.push_back({n, 0, n.src(0).vmax() - 1});
  }
  return out;
}

// Compares `a` and `b` at the corners of the variables' ranges and at pseudo-random points;
// returns the number of points checked, or -1 at the first point where they differ.
int check_same_values(const UOp& a, const UOp& b) {
  std::vector<Leaf> vars = leaves(a);
  uint64_t state = 0x243f6a8885a308d3ull;
  constexpr int kPoints = 200;
  for (int p = 0; p < kPoints; ++p) {
    InterpEnv env;
    for (size_t i = 0; i < vars.size(); ++i) {
      const Leaf& v = vars[i];
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t span = static_cast<uint64_t>(v.hi - v.lo) + 1;
      int64_t value = v.lo + static_cast<int64_t>((state >> 17) % span);
      if (p < 2) value = p == 0 ? v.lo : v.hi;  // both corners first
      if (v.u.op() == Ops::DEFINE_VAR)
        env.vars[v.u.arg_as<VarArg>().name] = value;
      else
        env.ranges[v.u.arg_as<AxisArg>().id] = value;
    }
    if (evaluate(a, env) != evaluate(b, env)) return -1;
  }
  return kPoints;
}

int demo() {
  UOp r0 = UOp::range(1024, 0), r1 = UOp::range(768, 1);
  UOp flat = r0 * 768 + r1;
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 100);

  std::vector<DemoCase> cases = {
      {"row of a flattened (1024, 768) view", flat / 768, r0},
      {"column of a flattened (1024, 768) view", flat % 768, r1},
      {"a sum of multiples of 2, divided by 2 (x, y >= 0)", (x * 4 + y * 2 + 6) / 2, x * 2 + y + 3},
      {"a where whose condition the bounds decide (x <= 100)", x.lt(200).where(x + 1, y), x + 1},
      {"a sum with like terms", x + y + x * 3 - y + 2, x * 4 + 2},
  };

  bool sound = true;
  UOp shown;
  for (const DemoCase& c : cases) {
    UOp s = simplify(c.expr);
    bool as_expected = s == c.expected || s == simplify(c.expected);
    int checked = check_same_values(c.expr, s);
    sound &= checked >= 0;
    fmt::print("{}\n", c.title);
    fmt::print("  before:     {}   ({} nodes)\n", render(c.expr), toposort(c.expr).size());
    fmt::print("  simplified: {}   ({} nodes)\n", render(s), toposort(s).size());
    if (!as_expected) fmt::print("  expected:   {}   (not reached yet)\n", render(c.expected));
    if (checked >= 0)
      fmt::print("  same value at {} sampled points\n\n", checked);
    else
      fmt::print("  WRONG: the simplified form gives a different value\n\n");
    if (c.expr.op() == Ops::IDIV) shown = s;
  }

  fmt::print("the simplified {} as a graph:\n{}\n", render(shown), to_string(shown));
  return sound ? 0 : 1;
}

}  // namespace
}  // namespace vkgrad

int main(int argc, char** argv) {
  if (argc < 2) {
    vkgrad::print_usage(stdout);
    return 0;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    vkgrad::print_usage(stdout);
    return 0;
  }
  try {
    if (cmd == "demo") return vkgrad::demo();
  } catch (const vkgrad::Error& e) {
    fmt::print(stderr, "vkgrad {}: {}\n", cmd, e.what());
    return 1;
  }
  fmt::print(stderr, "vkgrad: unknown command '{}'\n\n", cmd);
  vkgrad::print_usage(stderr);
  return 2;
}
