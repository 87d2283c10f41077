// UOp: interning (structure -> one node), argument identity, lifetime, builders and toposort.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vkgrad/error.hpp>

#include "ir/uop.hpp"

using namespace vkgrad;

namespace {

UOp var(const char* name, DType dt = dtypes::int32) { return UOp::variable(name, 0, 100, dt); }
UOp c32(int64_t v) { return UOp::const_(dtypes::int32, v); }

// ------------------------------------------------------------------ interning

TEST(Intern, SameStructureSamePointer) {
  UOp x = var("x"), y = var("y");
  UOp a = (x + 1) * y;
  UOp b = (x + 1) * y;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a.src(0).get(), b.src(0).get());
  EXPECT_EQ(UOp::make(Ops::ADD, dtypes::int32, {x, c32(1)}).get(), a.src(0).get());
  EXPECT_EQ(a.key(), b.key());
}

TEST(Intern, DifferentFieldsDifferentNodes) {
  UOp x = var("x"), y = var("y");
  EXPECT_NE(x + y, y + x);                           // source order is structure
  EXPECT_NE(x + y, x * y);                           // op
  EXPECT_NE(c32(1), UOp::const_(dtypes::int64, 1));  // dtype
  EXPECT_NE(c32(1), c32(2));                         // arg
  EXPECT_NE(var("x"), UOp::variable("x", 0, 101, dtypes::int32));
  EXPECT_NE(var("x"), var("x", dtypes::index));
  // Arg alternatives that print alike stay apart: int 1, double 1.0, bool true.
  UOp i = UOp::make(Ops::CONST, dtypes::index, {}, int64_t{1});
  UOp d = UOp::make(Ops::CONST, dtypes::index, {}, 1.0);
  UOp t = UOp::make(Ops::CONST, dtypes::index, {}, true);
  EXPECT_NE(i, d);
  EXPECT_NE(i, t);
  EXPECT_NE(d, t);
  // No source vs. one source; the same source twice.
  EXPECT_NE(UOp::make(Ops::SINK, dtypes::void_, {}), UOp::sink({x}));
  EXPECT_NE(UOp::sink({x}), UOp::sink({x, x}));
  EXPECT_EQ(UOp::sink({x, x}), UOp::sink({x, x}));
  // Tuple and structured args.
  EXPECT_EQ(UOp::make(Ops::RESHAPE, dtypes::float32, {}, IntTuple{2, 3}),
            UOp::make(Ops::RESHAPE, dtypes::float32, {}, IntTuple{2, 3}));
  EXPECT_NE(UOp::make(Ops::RESHAPE, dtypes::float32, {}, IntTuple{2, 3}),
            UOp::make(Ops::RESHAPE, dtypes::float32, {}, IntTuple{3, 2}));
  EXPECT_NE(UOp::make(Ops::PAD, dtypes::float32, {}, PairTuple{{0, 1}}),
            UOp::make(Ops::PAD, dtypes::float32, {}, PairTuple{{1, 0}}));
  EXPECT_NE(UOp::range(10, 0), UOp::range(10, 1));
  EXPECT_NE(UOp::range(10, 0), UOp::range(10, 0, AxisType::reduce));
  EXPECT_EQ(UOp::range(10, 0), UOp::range(10, 0));
  EXPECT_NE(UOp::make(Ops::CUSTOM, dtypes::void_, {}, std::string("a")),
            UOp::make(Ops::CUSTOM, dtypes::void_, {}, std::string("b")));
  EXPECT_NE(UOp::make(Ops::NOOP, dtypes::void_, {}, Ops::ADD),
            UOp::make(Ops::NOOP, dtypes::void_, {}, Ops::MUL));
  EXPECT_NE(dtypes::float32.ptr(4), dtypes::float32.ptr(8));
  EXPECT_NE(UOp::define_global(dtypes::float32.ptr(4), 0),
            UOp::define_global(dtypes::float32.ptr(8), 0));
}

TEST(Intern, FloatArgsByBitPattern) {
  auto cf = [](double v) { return UOp::make(Ops::CONST, dtypes::float64, {}, v); };
  EXPECT_NE(cf(0.0), cf(-0.0));
  EXPECT_EQ(cf(-0.0), cf(-0.0));
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(cf(nan), cf(nan));  // NaN interns with NaN of the same bits
  double other_nan = std::bit_cast<double>(std::bit_cast<uint64_t>(nan) | 1);
  ASSERT_TRUE(std::isnan(other_nan));
  EXPECT_NE(cf(nan), cf(other_nan));
  EXPECT_EQ(cf(other_nan), cf(other_nan));
  EXPECT_NE(cf(nan), cf(-nan));
  // The same through const_, which rounds to the dtype first.
  EXPECT_NE(UOp::const_(dtypes::float32, 0.0), UOp::const_(dtypes::float32, -0.0));
  EXPECT_EQ(UOp::const_(dtypes::float32, nan), UOp::const_(dtypes::float32, nan));
  EXPECT_TRUE(arg_equal(Arg{nan}, Arg{nan}));
  EXPECT_FALSE(arg_equal(Arg{0.0}, Arg{-0.0}));
  EXPECT_EQ(arg_hash(Arg{nan}), arg_hash(Arg{nan}));
  EXPECT_NE(arg_hash(Arg{0.0}), arg_hash(Arg{-0.0}));
}

TEST(Intern, KeyIsStructuralNotAddress) {
  uint64_t k1, k2;
  size_t base = UOp::live_count();
  {
    UOp g = (var("kx") + 7) * var("ky");
    k1 = g.key();
  }
  EXPECT_EQ(UOp::live_count(), base);
  {
    UOp filler = var("filler");  // perturb the allocator
    UOp g = (var("kx") + 7) * var("ky");
    k2 = g.key();
  }
  EXPECT_EQ(k1, k2);
  EXPECT_NE((var("kx") + 7).key(), (var("kx") + 8).key());
  EXPECT_EQ(arg_hash(Arg{std::string("abc")}), arg_hash(Arg{std::string("abc")}));
  EXPECT_NE(arg_hash(Arg{int64_t{1}}), arg_hash(Arg{true}));
}

TEST(Intern, NullSourceThrows) {
  EXPECT_THROW(UOp::make(Ops::SINK, dtypes::void_, {UOp()}), InternalError);
}

// ------------------------------------------------------------------ lifetime

TEST(Lifetime, HandlesCountReferences) {
  size_t base = UOp::live_count();
  {
    UOp x = var("lt_x");
    EXPECT_EQ(UOp::live_count(), base + 1);
    UOp y = x + 1;  // ADD and CONST 1
    EXPECT_EQ(UOp::live_count(), base + 3);
    UOp copy = y;
    UOp moved = std::move(copy);
    EXPECT_FALSE(copy);
    EXPECT_EQ(moved, y);
    moved = moved;  // self-assignment keeps the node
    EXPECT_EQ(moved, y);
    x = UOp();  // the ADD still holds the variable
    EXPECT_EQ(UOp::live_count(), base + 3);
    EXPECT_EQ(y.src(0).arg_as<VarArg>().name, "lt_x");
  }
  EXPECT_EQ(UOp::live_count(), base);
}

TEST(Lifetime, InternTableHoldsNoReference) {
  size_t base = UOp::live_count();
  const UOpNode* first;
  {
    UOp a = var("lt_dropped") * 3;
    first = a.get();
    EXPECT_EQ(UOp::live_count(), base + 3);
  }
  EXPECT_EQ(UOp::live_count(), base);
  UOp again = var("lt_dropped") * 3;  // built afresh, equal in structure
  EXPECT_EQ(again.op(), Ops::MUL);
  EXPECT_EQ(again.src(1).const_value(), ConstValue{int64_t{3}});
  (void)first;
}

TEST(Lifetime, WideGraphDropsToBaseline) {
  size_t base = UOp::live_count();
  {
    std::vector<UOp> leaves;
    for (int i = 0; i < 1000; ++i) leaves.push_back(c32(i) * var("w"));
    UOp s = UOp::sink(leaves);
    leaves.clear();
    EXPECT_EQ(UOp::live_count(), base + 1000 /*consts*/ + 1 /*var*/ + 1000 /*mul*/ + 1);
  }
  EXPECT_EQ(UOp::live_count(), base);
}

// ------------------------------------------------------------------ builders

TEST(Builders, SubIsAddOfTimesMinusOne) {
  UOp a = var("a"), b = var("b");
  UOp d = a - b;
  EXPECT_EQ(d, a + b * c32(-1));
  EXPECT_EQ(d.op(), Ops::ADD);
  EXPECT_EQ(-a, a * c32(-1));
  EXPECT_EQ(a - 3, a + c32(3) * c32(-1));
  EXPECT_EQ(3 - a, c32(3) + a * c32(-1));
  EXPECT_EQ(a + 3, a + c32(3));
  EXPECT_EQ(3 + a, c32(3) + a);  // the scalar stays on its side
  UOp f = var("f", dtypes::float32);
  EXPECT_EQ(-f, f * UOp::const_(dtypes::float32, -1.0));
  UOp t = UOp::variable("t", 0, 1, dtypes::bool_);
  EXPECT_EQ(-t, t.ne(UOp::const_(dtypes::bool_, true)));  // negating a bool is logical not
}

TEST(Builders, DivisionPicksIdivOrFdiv) {
  UOp i = var("i"), f = var("f", dtypes::float32);
  EXPECT_EQ((i / 2).op(), Ops::IDIV);
  EXPECT_EQ((i / 2).dtype(), dtypes::int32);
  EXPECT_EQ((var("u", dtypes::uint8) / 2).op(), Ops::IDIV);
  EXPECT_EQ((var("ix", dtypes::index) / 2).op(), Ops::IDIV);
  EXPECT_EQ((f / 2).op(), Ops::FDIV);
  EXPECT_EQ((f / 2.0).src(1).const_value(), ConstValue{2.0});
  EXPECT_EQ((f / 2).src(1).const_value(), ConstValue{2.0});  // int scalar converted to float
  EXPECT_EQ((i % 3).op(), Ops::MOD);
  UOp t = UOp::variable("t", 0, 1, dtypes::bool_);
  EXPECT_THROW(t / t, DTypeError);
}

TEST(Builders, OtherBinaryOps) {
  UOp a = var("a"), b = var("b");
  EXPECT_EQ((a & b).op(), Ops::AND);
  EXPECT_EQ((a | b).op(), Ops::OR);
  EXPECT_EQ((a ^ b).op(), Ops::XOR);
  EXPECT_EQ((a << 2).op(), Ops::SHL);
  EXPECT_EQ((a >> 2).op(), Ops::SHR);
  EXPECT_EQ((a * 2).op(), Ops::MUL);
  EXPECT_EQ(a.maximum(b).op(), Ops::MAX);
  EXPECT_EQ(a.maximum(5), a.maximum(c32(5)));
  // min(a, b): -max(-a, -b) for index and floats, ~max(~a, ~b) for fixed-width integers
  UOp ia = var("ia", dtypes::index), ib = var("ib", dtypes::index);
  EXPECT_EQ(ia.minimum(ib), -((-ia).maximum(-ib)));
  UOp fa = var("fa", dtypes::float32), fb = var("fb", dtypes::float32);
  EXPECT_EQ(fa.minimum(fb), -((-fa).maximum(-fb)));
  EXPECT_EQ(a.minimum(b), (a ^ -1).maximum(b ^ -1) ^ -1);
  UOp t = UOp::variable("t", 0, 1, dtypes::bool_), s = UOp::variable("s", 0, 1, dtypes::bool_);
  EXPECT_EQ(t.minimum(s), t & s);
  EXPECT_EQ(a.alu(Ops::NEG).op(), Ops::NEG);
  EXPECT_EQ(a.alu(Ops::NEG).dtype(), dtypes::int32);
}

TEST(Builders, ComparisonsProduceBool) {
  UOp a = var("a"), b = var("b");
  for (UOp c : {a.lt(b), a.le(b), a.gt(b), a.ge(b), a.eq(b), a.ne(b), a.lt(3), a.ne(0)})
    EXPECT_EQ(c.dtype(), dtypes::bool_);
  EXPECT_EQ(a.lt(b).op(), Ops::CMPLT);
  EXPECT_EQ(a.gt(b), b.lt(a));
  EXPECT_EQ(a.ge(b), a.lt(b).logical_not());
  EXPECT_EQ(a.le(b), b.lt(a).logical_not());
  EXPECT_EQ(a.eq(b).op(), Ops::CMPEQ);
  EXPECT_EQ(a.ne(b).op(), Ops::CMPNE);
  EXPECT_EQ(a.lt(b).logical_not(), a.lt(b).ne(UOp::const_(dtypes::bool_, true)));
  UOp v = UOp::make(Ops::VECTORIZE, dtypes::float32.vec(4), {});
  EXPECT_EQ(v.lt(v).dtype(), dtypes::bool_.vec(4));
}

TEST(Builders, DtypeMismatchNamesBothDtypes) {
  UOp a = var("a"), f = var("f", dtypes::float32);
  try {
    a + f;
    FAIL() << "no throw";
  } catch (const DTypeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ADD"), std::string::npos) << msg;
  }
  EXPECT_THROW(a.lt(f), DTypeError);
  EXPECT_THROW(a.alu(Ops::MUL, var("l", dtypes::int64)), DTypeError);
  UOp cond = a.lt(3);
  EXPECT_THROW(a.where(a, a), DTypeError);     // condition must be bool
  EXPECT_THROW(cond.where(a, f), DTypeError);  // branches must agree
  EXPECT_EQ(cond.where(a, c32(0)).dtype(), dtypes::int32);
  EXPECT_EQ(cond.where(a, c32(0)).op(), Ops::WHERE);
}

TEST(Builders, ConstConvertsValue) {
  UOp c = UOp::const_(dtypes::int8, int64_t{300});
  EXPECT_EQ(std::get<int64_t>(c.const_value()), 44);
  EXPECT_EQ(c, UOp::const_(dtypes::int8, int64_t{44}));  // equal constants intern to one node
  UOp f = UOp::const_(dtypes::float32, 0.1);
  EXPECT_EQ(std::get<double>(f.const_value()), static_cast<double>(0.1f));
  EXPECT_NE(std::get<double>(f.const_value()), 0.1);
  EXPECT_EQ(UOp::const_(dtypes::float32, 0.1), UOp::const_(dtypes::float32, double{0.1f}));
  EXPECT_EQ(std::get<double>(UOp::const_(dtypes::float32, int64_t{3}).const_value()), 3.0);
  EXPECT_EQ(std::get<bool>(UOp::const_(dtypes::bool_, int64_t{7}).const_value()), true);
  EXPECT_EQ(std::get<int64_t>(UOp::const_(dtypes::uint8, int64_t{-1}).const_value()), 255);
  EXPECT_EQ(std::get<int64_t>(UOp::const_(dtypes::int32, 2.9).const_value()), 2);
  EXPECT_EQ(std::get<double>(UOp::const_(dtypes::float16, 0.1).const_value()),
            static_cast<double>(static_cast<_Float16>(0.1)));
  EXPECT_EQ(c32(5).const_like(int64_t{6}), c32(6));
  EXPECT_TRUE(c32(5).is_const());
  EXPECT_TRUE(c32(5).is_const(5));
  EXPECT_FALSE(c32(5).is_const(6));
  EXPECT_TRUE(UOp::const_(dtypes::float32, 2.0).is_const(2));
  EXPECT_TRUE(UOp::const_(dtypes::int8, int64_t{44}).is_const(300));  // compared in int8
  EXPECT_FALSE(var("x").is_const());
  EXPECT_FALSE(var("x").is_const(0));
  EXPECT_FALSE(UOp().is_const());
  EXPECT_THROW(var("x").const_value(), InternalError);
}

TEST(Builders, OtherNodes) {
  UOp x = UOp::variable("x", 2, 9);
  EXPECT_EQ(x.op(), Ops::DEFINE_VAR);
  EXPECT_EQ(x.dtype(), dtypes::index);
  EXPECT_EQ(x.arg_as<VarArg>(), (VarArg{"x", 2, 9}));
  EXPECT_THROW(UOp::variable("bad", 5, 4), ShapeError);
  UOp b = x.bind(3);
  EXPECT_EQ(b.op(), Ops::BIND);
  EXPECT_EQ(b.src(1), UOp::const_(dtypes::index, 3));

  UOp r = UOp::range(16, 2, AxisType::reduce);
  EXPECT_EQ(r.op(), Ops::RANGE);
  EXPECT_EQ(r.dtype(), dtypes::index);
  EXPECT_EQ(r.src(0), UOp::const_(dtypes::index, 16));
  EXPECT_EQ(r.arg_as<AxisArg>(), (AxisArg{2, AxisType::reduce}));
  EXPECT_EQ(axis_type_name(AxisType::group_reduce), "group_reduce");
  EXPECT_EQ(UOp::special("gidx0", UOp::const_(dtypes::index, 4)).arg_as<std::string>(), "gidx0");

  DType p = dtypes::float32.ptr(16);
  UOp g = UOp::define_global(p, 0);
  EXPECT_THROW(UOp::define_global(dtypes::float32, 0), DTypeError);
  UOp idx = g.index(r);
  EXPECT_EQ(idx.dtype(), p);
  EXPECT_EQ(g.index(r, r.lt(8)).src().size(), 3u);
  UOp ld = idx.load();
  EXPECT_EQ(ld.dtype(), dtypes::float32);
  UOp st = idx.store(ld);
  EXPECT_EQ(st.dtype(), dtypes::void_);
  UOp e = st.end({r});
  EXPECT_EQ(e.op(), Ops::END);
  EXPECT_EQ(e.src().size(), 2u);
  EXPECT_EQ(UOp::sink({e}).dtype(), dtypes::void_);
  EXPECT_EQ(ld.cast(dtypes::int32).op(), Ops::CAST);
  EXPECT_EQ(ld.cast(dtypes::int32).dtype(), dtypes::int32);
  EXPECT_EQ(ld.bitcast(dtypes::uint32).op(), Ops::BITCAST);

  UOp a = var("a");
  UOp sum = a + 1;
  EXPECT_EQ(sum.replace({a, c32(2)}), a + 2);
  EXPECT_EQ(sum.replace(Ops::MUL, dtypes::int32, {a, c32(2)}, {}), a * 2);
}

// ------------------------------------------------------------------ toposort

TEST(Toposort, ChildrenFirstEachOnceDeterministic) {
  UOp x = var("x"), y = var("y");
  UOp s = x + y;
  UOp root = s * s + x;
  std::vector<UOp> order = toposort(root);
  // Depth first, sources left to right, each node once.
  std::vector<UOp> want = {x, y, s, s * s, root};
  ASSERT_EQ(order.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(order[i], want[i]) << i;
  EXPECT_EQ(toposort(root), order);  // the same twice

  // Several roots: shared nodes once, in first-seen order.
  std::vector<UOp> roots = {y + 1, x + y, y + 1};
  std::vector<UOp> many = toposort(std::span<const UOp>(roots));
  std::vector<UOp> want2 = {y, c32(1), y + 1, x, x + y};
  ASSERT_EQ(many.size(), want2.size());
  for (size_t i = 0; i < want2.size(); ++i) EXPECT_EQ(many[i], want2[i]) << i;
  EXPECT_TRUE(toposort(UOp()).empty());
}

}  // namespace
