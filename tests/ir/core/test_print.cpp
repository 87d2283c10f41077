// Printers: to_string (tinygrad's nested form) and render (infix index expressions).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "ir/print.hpp"

using namespace vkgrad;

namespace {

UOp x() { return UOp::variable("x", 0, 10); }
UOp y() { return UOp::variable("y", 0, 20); }
UOp ic(int64_t v) { return UOp::const_(dtypes::index, v); }

TEST(ToString, Leaf) {
  EXPECT_EQ(to_string(x()), "UOp(Ops.DEFINE_VAR, dtypes.index, arg=('x', 0, 10), src=())");
  EXPECT_EQ(to_string(UOp::const_(dtypes::int32, -3)),
            "UOp(Ops.CONST, dtypes.int32, arg=-3, src=())");
  EXPECT_EQ(to_string(UOp()), "UOp(null)");
}

TEST(ToString, SmallTree) {
  EXPECT_EQ(to_string(x() + 1),
            "UOp(Ops.ADD, dtypes.index, arg=None, src=(\n"
            "  UOp(Ops.DEFINE_VAR, dtypes.index, arg=('x', 0, 10), src=()),\n"
            "  UOp(Ops.CONST, dtypes.index, arg=1, src=()),))");
}

TEST(ToString, SharedNodesNamedOnce) {
  UOp s = x() + 1;
  EXPECT_EQ(to_string(s * s),
            "UOp(Ops.MUL, dtypes.index, arg=None, src=(\n"
            "  x0:=UOp(Ops.ADD, dtypes.index, arg=None, src=(\n"
            "    UOp(Ops.DEFINE_VAR, dtypes.index, arg=('x', 0, 10), src=()),\n"
            "    UOp(Ops.CONST, dtypes.index, arg=1, src=()),)),\n"
            "  x0,))");
  // Two shared nodes, numbered in the order they are printed; a shared leaf too.
  UOp a = x() * 2, b = y() * 2;
  EXPECT_EQ(to_string(UOp::sink({a + b, b, a})),
            "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
            "  UOp(Ops.ADD, dtypes.index, arg=None, src=(\n"
            "    x0:=UOp(Ops.MUL, dtypes.index, arg=None, src=(\n"
            "      UOp(Ops.DEFINE_VAR, dtypes.index, arg=('x', 0, 10), src=()),\n"
            "      x1:=UOp(Ops.CONST, dtypes.index, arg=2, src=()),)),\n"
            "    x2:=UOp(Ops.MUL, dtypes.index, arg=None, src=(\n"
            "      UOp(Ops.DEFINE_VAR, dtypes.index, arg=('y', 0, 20), src=()),\n"
            "      x1,)),)),\n"
            "  x2,\n"
            "  x0,))");
}

TEST(ToString, ArgsAndDtypes) {
  auto line = [](const UOp& u) { return to_string(u); };
  EXPECT_EQ(line(UOp::const_(dtypes::float32, 1.5)),
            "UOp(Ops.CONST, dtypes.float32, arg=1.5, src=())");
  EXPECT_EQ(line(UOp::const_(dtypes::float32, 2.0)),
            "UOp(Ops.CONST, dtypes.float32, arg=2.0, src=())");
  EXPECT_EQ(line(UOp::const_(dtypes::float64, -0.0)),
            "UOp(Ops.CONST, dtypes.float64, arg=-0.0, src=())");
  EXPECT_EQ(line(UOp::const_(dtypes::float64, NAN)),
            "UOp(Ops.CONST, dtypes.float64, arg=nan, src=())");
  EXPECT_EQ(line(UOp::const_(dtypes::float64, -INFINITY)),
            "UOp(Ops.CONST, dtypes.float64, arg=-inf, src=())");
  EXPECT_EQ(line(UOp::const_(dtypes::bool_, true)),
            "UOp(Ops.CONST, dtypes.bool, arg=True, src=())");
  EXPECT_EQ(line(UOp::define_global(dtypes::float32.ptr(16), 0)),
            "UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), arg=0, src=())");
  EXPECT_EQ(line(UOp::make(Ops::DEFINE_LOCAL, dtypes::float32.ptr(64, AddrSpace::local), {},
                           std::string("temp0"))),
            "UOp(Ops.DEFINE_LOCAL, dtypes.float32.ptr(64, local=True), arg='temp0', src=())");
  EXPECT_EQ(line(UOp::make(Ops::VECTORIZE, dtypes::float32.vec(4), {})),
            "UOp(Ops.VECTORIZE, dtypes.float32.vec(4), arg=None, src=())");
  EXPECT_EQ(format_arg(IntTuple{2, 3}), "(2, 3)");
  EXPECT_EQ(format_arg(IntTuple{2}), "(2,)");
  EXPECT_EQ(format_arg(IntTuple{}), "()");
  EXPECT_EQ(format_arg(PairTuple{{0, 1}, {2, 3}}), "((0, 1), (2, 3))");
  EXPECT_EQ(format_arg(AxisArg{3, AxisType::reduce}), "(3, AxisType.reduce)");
  EXPECT_EQ(format_arg(Ops::ADD), "Ops.ADD");
  EXPECT_EQ(format_arg(std::monostate{}), "None");
  EXPECT_EQ(format_arg(false), "False");
  EXPECT_EQ(format_arg(0.25), "0.25");
  EXPECT_EQ(format_arg(1e20), "1e+20");
  EXPECT_EQ(dtype_repr(dtypes::float32.ptr()), "dtypes.float32.ptr()");
  EXPECT_EQ(dtype_repr(dtypes::int8.vec(2)), "dtypes.int8.vec(2)");
  EXPECT_EQ(line(UOp::range(8, 1)),
            "UOp(Ops.RANGE, dtypes.index, arg=(1, AxisType.loop), src=(\n"
            "  UOp(Ops.CONST, dtypes.index, arg=8, src=()),))");
}

TEST(ToString, DeterministicAcrossBuilds) {
  auto build = [] {
    UOp a = x() * 3 + y(), b = (y() + 1) * (x() + 1);
    return UOp::sink({a + b, b * a, a, b.lt(a * 2)});
  };
  std::string first = to_string(build());
  std::string second = to_string(build());
  EXPECT_EQ(first, second);
  {
    UOp other = UOp::sink({y() * 7, x() - y()});  // other nodes in between
    EXPECT_EQ(to_string(build()), first);
  }
  EXPECT_EQ(to_string(build()), first);
}

// 2^200 paths but 201 nodes: each shared node is printed once, so the text stays small.
TEST(ToString, DiamondGraphPrintsLinearly) {
  UOp u = x();
  for (int i = 0; i < 200; ++i) u = u + u;
  std::string s = to_string(u);
  EXPECT_LT(s.size(), 200u * 200u);
  EXPECT_NE(s.find("x199:=UOp(Ops.DEFINE_VAR"), std::string::npos);  // the deepest, named last
  const std::string tail = "    x1,)),\n  x0,))";
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
}

TEST(ToString, IndentationStopsGrowing) {
  UOp u = UOp::variable("f", 0, 1, dtypes::float32);
  for (int i = 0; i < 40; ++i) u = u.alu(Ops::NEG);
  std::string s = to_string(u);
  std::istringstream in(s);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    size_t spaces = line.find_first_not_of(' ');
    EXPECT_EQ(spaces, static_cast<size_t>(2 * std::min(n, 32))) << n;
    ++n;
  }
  EXPECT_EQ(n, 41);
  // The leaf, then each of the 40 levels closes: "))," and finally "))".
  std::string tail = "arg=('f', 0, 1), src=()),";
  for (int i = 0; i < 39; ++i) tail += ")),";
  tail += "))";
  ASSERT_GE(s.size(), tail.size());
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
}

TEST(Render, IndexExpressions) {
  EXPECT_EQ(render(x() + 1), "(x+1)");
  EXPECT_EQ(render((x() * 4 + y()) / 2), "(((x*4)+y)//2)");
  EXPECT_EQ(render(x() % 3), "(x%3)");
  EXPECT_EQ(render(x() - y()), "(x+(y*-1))");
  EXPECT_EQ(render(x().lt(5)), "(x<5)");
  EXPECT_EQ(render(x().ne(5)), "(x!=5)");
  EXPECT_EQ(render(x().eq(y())), "(x==y)");
  EXPECT_EQ(render(x().maximum(y())), "max(x, y)");
  EXPECT_EQ(render(x().lt(5).where(x(), ic(0))), "((x<5)?x:0)");
  EXPECT_EQ(render(UOp::range(16, 2) * 16 + UOp::range(16, 3)), "((r2*16)+r3)");
  EXPECT_EQ(render(UOp::special("gidx0", ic(8)) + 1), "(gidx0+1)");
  EXPECT_EQ(render(UOp::variable("n", 1, 9).bind(3) * 2), "(n*2)");
  EXPECT_EQ(render(x().cast(dtypes::int32)), "(int32)(x)");
  EXPECT_EQ(render(UOp::const_(dtypes::bool_, false)), "False");
  EXPECT_EQ(render(UOp::const_(dtypes::float32, 0.5)), "0.5");
  EXPECT_EQ(render((x() << 1) | ((y() >> 2) & (x() ^ y()))), "((x<<1)|((y>>2)&(x^y)))");
  EXPECT_EQ(render(x().cast(dtypes::float32).alu(Ops::SIN)), "SIN((float32)(x))");
  UOp s = x() + 1;
  EXPECT_EQ(render(s * s), "((x+1)*(x+1))");
}

}  // namespace
