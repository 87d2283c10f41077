// The spec: valid graphs pass; each rule has negative cases that break exactly one condition.
#include <gtest/gtest.h>

#include <string>
#include <vkgrad/error.hpp>

#include "ir/spec.hpp"

using namespace vkgrad;

namespace {

UOp mk(Ops op, DType dt, std::vector<UOp> src = {}, Arg arg = {}) {
  return UOp::make(op, dt, std::move(src), std::move(arg));
}
UOp i32(int64_t v) { return UOp::const_(dtypes::int32, v); }
UOp f32(double v) { return UOp::const_(dtypes::float32, v); }
UOp idx(int64_t v) { return UOp::const_(dtypes::index, v); }
// A valid float32 value (a DEFINE_VAR must be an integer).
UOp fval() { return UOp::variable("fi", 0, 10, dtypes::int32).cast(dtypes::float32); }

// verify(u) throws InternalError naming the pass and the op of the invalid node.
void expect_invalid(const UOp& u, const char* op) {
  try {
    verify(UOp::sink({u}), "test_pass");
    ADD_FAILURE() << "accepted invalid " << op;
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("test_pass"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("invalid ") + op), std::string::npos) << msg;
  }
}

TEST(Spec, ValidGraphsPass) {
  UOp i = UOp::variable("i", 0, 10, dtypes::int32);
  UOp f = fval();
  UOp b = i.lt(3);
  std::vector<UOp> ok = {
      i + 1,
      i * 2 - 3,
      i / 2,
      i % 3,
      i & 1,
      i | 1,
      i ^ 1,
      i << 1,
      i >> 1,
      i.maximum(5),
      b,
      i.ne(2),
      i.eq(2),
      b & i.gt(0),
      b.where(i, i32(0)),
      f + 1.0,
      f / 2.0,
      f.lt(1.0),
      f.alu(Ops::SQRT),
      f.alu(Ops::EXP2),
      i.alu(Ops::NEG),
      i.cast(dtypes::float32),
      f.cast(dtypes::int8),
      f.bitcast(dtypes::int32),
      i.bitcast(dtypes::uint32),
      mk(Ops::MULACC, dtypes::float32, {f, f, f}),
      mk(Ops::SUB, dtypes::int32, {i, i}),
      mk(Ops::POW, dtypes::float32, {f, f}),
      UOp::variable("n", 1, 8).bind(4),
      UOp::special("gidx0", idx(16)) + 1,
      UOp::const_(dtypes::bool_, false),
      UOp::const_(dtypes::uint64, -1),
  };
  for (const UOp& u : ok) EXPECT_NO_THROW(verify(u)) << op_name(u.op());
  EXPECT_NO_THROW(verify(UOp::sink(ok), "all"));

  // A small kernel: out[r] = in[r] * 2 over a range.
  UOp in = UOp::define_global(dtypes::float32.ptr(16), 0);
  UOp out = UOp::define_global(dtypes::float32.ptr(16), 1);
  UOp r = UOp::range(16, 0);
  UOp st = out.index(r).store(in.index(r, r.lt(8)).load() * 2.0);
  EXPECT_NO_THROW(verify(UOp::sink({st.end({r})}), "kernel"));
  // Structural and tensor-level ops are left to the passes that make them.
  EXPECT_NO_THROW(verify(mk(Ops::RESHAPE, dtypes::float32, {f}, IntTuple{1})));
  EXPECT_NO_THROW(verify(mk(Ops::VECTORIZE, dtypes::float32.vec(2), {f, f})));
}

TEST(Spec, Const) {
  expect_invalid(mk(Ops::CONST, dtypes::int32, {}, 1.5), "CONST");               // double for int
  expect_invalid(mk(Ops::CONST, dtypes::float32, {}, int64_t{1}), "CONST");      // int for float
  expect_invalid(mk(Ops::CONST, dtypes::bool_, {}, int64_t{1}), "CONST");        // int for bool
  expect_invalid(mk(Ops::CONST, dtypes::int32, {}, true), "CONST");              // bool for int
  expect_invalid(mk(Ops::CONST, dtypes::void_, {}, int64_t{0}), "CONST");        // void
  expect_invalid(mk(Ops::CONST, dtypes::int32, {}), "CONST");                    // no value
  expect_invalid(mk(Ops::CONST, dtypes::int32, {i32(1)}, int64_t{1}), "CONST");  // a source
}

TEST(Spec, DefineVarAndBind) {
  expect_invalid(mk(Ops::DEFINE_VAR, dtypes::index, {}, VarArg{"v", 5, 4}), "DEFINE_VAR");
  expect_invalid(mk(Ops::DEFINE_VAR, dtypes::float32, {}, VarArg{"v", 0, 4}), "DEFINE_VAR");
  expect_invalid(mk(Ops::DEFINE_VAR, dtypes::index, {}, int64_t{3}), "DEFINE_VAR");
  UOp v = UOp::variable("v", 0, 4);
  expect_invalid(mk(Ops::BIND, dtypes::int32, {v, idx(2)}), "BIND");       // dtype differs
  expect_invalid(mk(Ops::BIND, dtypes::index, {v, v}), "BIND");            // value not CONST
  expect_invalid(mk(Ops::BIND, dtypes::index, {idx(1), idx(2)}), "BIND");  // not a variable
}

TEST(Spec, RangeAndSpecial) {
  expect_invalid(mk(Ops::RANGE, dtypes::float32, {f32(4)}, AxisArg{0}), "RANGE");
  expect_invalid(mk(Ops::RANGE, dtypes::index, {idx(4)}, int64_t{0}), "RANGE");
  expect_invalid(mk(Ops::RANGE, dtypes::index, {i32(4)}, AxisArg{0}), "RANGE");  // end dtype
  expect_invalid(mk(Ops::RANGE, dtypes::index, {}, AxisArg{0}), "RANGE");        // no end
  expect_invalid(mk(Ops::SPECIAL, dtypes::index, {idx(4)}, int64_t{0}), "SPECIAL");
}

TEST(Spec, Unary) {
  UOp f = fval();
  UOp i = UOp::variable("i", 0, 1, dtypes::int32);
  expect_invalid(mk(Ops::SQRT, dtypes::float64, {f}), "SQRT");  // dtype differs
  expect_invalid(mk(Ops::NEG, dtypes::float32, {f, f}), "NEG");
  for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL})
    expect_invalid(mk(op, dtypes::int32, {i}), std::string(op_name(op)).c_str());  // floats only
  EXPECT_NO_THROW(verify(i.alu(Ops::NEG)));
  EXPECT_NO_THROW(verify(f.alu(Ops::RECIPROCAL)));
}

TEST(Spec, Binary) {
  UOp i = UOp::variable("i", 0, 1, dtypes::int32);
  UOp l = UOp::variable("l", 0, 1, dtypes::int64);
  expect_invalid(mk(Ops::ADD, dtypes::int32, {i, l}), "ADD");
  expect_invalid(mk(Ops::ADD, dtypes::int64, {i, i}), "ADD");
  expect_invalid(mk(Ops::ADD, dtypes::int32, {i, i, i}), "ADD");
  expect_invalid(mk(Ops::MAX, dtypes::int32, {i}), "MAX");
  expect_invalid(mk(Ops::SHL, dtypes::int32, {i, l}), "SHL");
}

TEST(Spec, IntegerAndFloatDivision) {
  UOp f = fval();
  UOp i = UOp::variable("i", 0, 1, dtypes::int32);
  expect_invalid(mk(Ops::IDIV, dtypes::float32, {f, f}), "IDIV");
  expect_invalid(mk(Ops::MOD, dtypes::float32, {f, f}), "MOD");
  expect_invalid(mk(Ops::FDIV, dtypes::int32, {i, i}), "FDIV");
  expect_invalid(mk(Ops::IDIV, dtypes::int32, {i, f}), "IDIV");
  expect_invalid(mk(Ops::SHL, dtypes::float32, {f, f}), "SHL");  // shifts are integer ops
  expect_invalid(mk(Ops::SHR, dtypes::float32, {f, f}), "SHR");
}

TEST(Spec, Bitwise) {
  UOp f = fval();
  UOp i = UOp::variable("i", 0, 1, dtypes::int32);
  expect_invalid(mk(Ops::AND, dtypes::float32, {f, f}), "AND");
  expect_invalid(mk(Ops::XOR, dtypes::int32, {i, mk(Ops::CAST, dtypes::int8, {i})}), "XOR");
}

TEST(Spec, Comparisons) {
  UOp i = UOp::variable("i", 0, 1, dtypes::int32);
  UOp l = UOp::variable("l", 0, 1, dtypes::int64);
  expect_invalid(mk(Ops::CMPLT, dtypes::int32, {i, i}), "CMPLT");  // not bool
  expect_invalid(mk(Ops::CMPNE, dtypes::bool_, {i, l}), "CMPNE");  // operands differ
  expect_invalid(mk(Ops::CMPEQ, dtypes::bool_, {i}), "CMPEQ");     // one operand
  UOp v = mk(Ops::VECTORIZE, dtypes::int32.vec(2), {i, i});
  expect_invalid(mk(Ops::CMPLT, dtypes::bool_, {v, v}), "CMPLT");  // width differs
  EXPECT_NO_THROW(verify(mk(Ops::CMPLT, dtypes::bool_.vec(2), {v, v})));
}

TEST(Spec, Where) {
  UOp i = UOp::variable("i", 0, 1, dtypes::int32);
  UOp b = i.lt(1);
  expect_invalid(mk(Ops::WHERE, dtypes::int32, {i, i, i}), "WHERE");  // int cond
  expect_invalid(mk(Ops::WHERE, dtypes::int32, {b, i, i.cast(dtypes::int64)}), "WHERE");
  expect_invalid(mk(Ops::WHERE, dtypes::int64, {b, i, i}), "WHERE");
  expect_invalid(mk(Ops::WHERE, dtypes::int32, {b, i}), "WHERE");
}

TEST(Spec, Mulacc) {
  UOp f = fval();
  expect_invalid(mk(Ops::MULACC, dtypes::float32, {f, f}), "MULACC");
  expect_invalid(mk(Ops::MULACC, dtypes::float32, {f, f, f.cast(dtypes::float64)}), "MULACC");
}

TEST(Spec, CastAndBitcast) {
  UOp f = fval();
  expect_invalid(mk(Ops::CAST, dtypes::float32.ptr(), {f}), "CAST");
  expect_invalid(mk(Ops::CAST, dtypes::void_, {f}), "CAST");
  expect_invalid(mk(Ops::BITCAST, dtypes::int64, {f}), "BITCAST");  // size change
  expect_invalid(mk(Ops::BITCAST, dtypes::int16, {f}), "BITCAST");
}

TEST(Spec, SinkAndDefineGlobal) {
  expect_invalid(mk(Ops::SINK, dtypes::int32, {i32(1)}), "SINK");
  expect_invalid(mk(Ops::DEFINE_GLOBAL, dtypes::float32, {}, int64_t{0}), "DEFINE_GLOBAL");
  expect_invalid(mk(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(), {}, std::string("a")),
                 "DEFINE_GLOBAL");
}

TEST(Spec, IndexLoadStoreEnd) {
  DType p = dtypes::float32.ptr(16);
  UOp g = UOp::define_global(p, 0);
  UOp r = UOp::range(16, 0);
  UOp f = fval();
  expect_invalid(mk(Ops::INDEX, p, {f, r}), "INDEX");                // not a pointer
  expect_invalid(mk(Ops::INDEX, p, {g, f}), "INDEX");                // float index
  expect_invalid(mk(Ops::INDEX, p, {g, r, r}), "INDEX");             // valid not bool
  expect_invalid(mk(Ops::INDEX, dtypes::float32, {g, r}), "INDEX");  // dtype not the ptr
  expect_invalid(mk(Ops::INDEX, p, {g}), "INDEX");                   // no index
  UOp ix = g.index(r);
  expect_invalid(mk(Ops::LOAD, dtypes::float32, {r}), "LOAD");           // not a pointer
  expect_invalid(mk(Ops::LOAD, dtypes::int32, {ix}), "LOAD");            // dtype differs
  expect_invalid(mk(Ops::STORE, dtypes::void_, {ix, i32(1)}), "STORE");  // value dtype
  expect_invalid(mk(Ops::STORE, dtypes::float32, {ix, f}), "STORE");     // not void
  expect_invalid(mk(Ops::STORE, dtypes::void_, {r, f}), "STORE");        // not a pointer
  expect_invalid(mk(Ops::STORE, dtypes::void_, {ix}), "STORE");          // no value
  UOp st = ix.store(f);
  expect_invalid(mk(Ops::END, dtypes::void_, {st, f}), "END");  // not a RANGE
  expect_invalid(mk(Ops::END, dtypes::void_, {st}), "END");     // no range
  expect_invalid(mk(Ops::END, dtypes::int32, {st, r}), "END");  // not void
  EXPECT_NO_THROW(verify(st.end({r})));
}

TEST(Spec, ErrorPrintsTheNode) {
  UOp bad = mk(Ops::CMPLT, dtypes::int32, {i32(1), i32(2)});
  try {
    verify(bad + 1, "printing");
    FAIL();
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("spec failed after printing: invalid CMPLT"), std::string::npos) << msg;
    EXPECT_NE(msg.find("UOp(Ops.CMPLT, dtypes.int32"), std::string::npos) << msg;
  }
}

}  // namespace
