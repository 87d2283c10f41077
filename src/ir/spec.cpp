// The IR's structural rules: each rule returns a bool constant saying whether a node is valid.
#include "ir/spec.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <vkgrad/error.hpp>

#include "ir/print.hpp"

namespace vkgrad {
namespace {

UOp verdict(bool ok) { return UOp::const_(dtypes::bool_, ok); }

bool all_src_dtype(const UOp& u, DType d) {
  for (const UOp& s : u.src())
    if (!(s.dtype() == d)) return false;
  return true;
}

bool arg_fits_dtype(const UOp& u) {
  DType d = u.dtype().scalar();
  const Arg& a = u.arg();
  if (d.is_bool()) return std::holds_alternative<bool>(a);
  if (d.is_float()) return std::holds_alternative<double>(a);
  if (d.is_int()) return std::holds_alternative<int64_t>(a);
  return false;
}

const UPat x = UPat::any().named("x");

// Transcendental and reciprocal ops are defined on floats only (see interp).
const OpSet kFloatUnary = OpSet{Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL};
const OpSet kOtherUnary = OpSet{Ops::NEG, Ops::TRUNC};
const OpSet kBinaryNonCmp = OpSet{Ops::ADD, Ops::MUL, Ops::SUB, Ops::MAX, Ops::POW, Ops::THREEFRY};
const OpSet kIntOnly = OpSet{Ops::IDIV, Ops::MOD, Ops::SHL, Ops::SHR};
const OpSet kBitwise = OpSet{Ops::AND, Ops::OR, Ops::XOR};
const OpSet kCmp = OpSet::group(kComparison);

bool binary_same(const UOp& u) { return u.src().size() == 2 && all_src_dtype(u, u.dtype()); }

}  // namespace

const PatternMatcher pm_spec({
    rule(UPat::op(Ops::CONST, {}).named("x"),
         [](const Match& m) { return verdict(arg_fits_dtype(m[x])); }),
    rule(UPat::op(Ops::DEFINE_VAR, {}).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           auto* a = std::get_if<VarArg>(&u.arg());
           return verdict(a && a->min <= a->max && u.dtype().is_int());
         }),
    rule(UPat::op(Ops::BIND, {UPat::op(Ops::DEFINE_VAR), UPat::op(Ops::CONST)}).named("x"),
         [](const Match& m) { return verdict(all_src_dtype(m[x], m[x].dtype())); }),
    rule(UPat::ops(OpSet{Ops::RANGE, Ops::SPECIAL}, {UPat::any()}).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           bool arg_ok = u.op() == Ops::RANGE ? std::holds_alternative<AxisArg>(u.arg())
                                              : std::holds_alternative<std::string>(u.arg());
           return verdict(arg_ok && u.dtype().is_int() && all_src_dtype(u, u.dtype()));
         }),
    rule(UPat::ops(kFloatUnary, {UPat::any()}).named("x"),
         [](const Match& m) {
           return verdict(all_src_dtype(m[x], m[x].dtype()) && m[x].dtype().scalar().is_float());
         }),
    rule(UPat::ops(kOtherUnary, {UPat::any()}).named("x"),
         [](const Match& m) { return verdict(all_src_dtype(m[x], m[x].dtype())); }),
    rule(UPat::ops(kBinaryNonCmp).named("x"),
         [](const Match& m) { return verdict(binary_same(m[x])); }),
    rule(UPat::ops(kIntOnly).named("x"),
         [](const Match& m) {
           return verdict(binary_same(m[x]) && m[x].dtype().scalar().is_int());
         }),
    rule(UPat::op(Ops::FDIV).named("x"),
         [](const Match& m) {
           return verdict(binary_same(m[x]) && m[x].dtype().scalar().is_float());
         }),
    rule(UPat::ops(kBitwise).named("x"),
         [](const Match& m) {
           DType d = m[x].dtype().scalar();
           return verdict(binary_same(m[x]) && (d.is_int() || d.is_bool()));
         }),
    rule(UPat::ops(kCmp).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           return verdict(u.src().size() == 2 && u.dtype().scalar().is_bool() &&
                          u.src(0).dtype() == u.src(1).dtype() &&
                          u.dtype().count() == u.src(0).dtype().count());
         }),
    rule(UPat::op(Ops::WHERE).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           return verdict(u.src().size() == 3 && u.src(0).dtype().scalar().is_bool() &&
                          u.src(1).dtype() == u.dtype() && u.src(2).dtype() == u.dtype());
         }),
    rule(UPat::op(Ops::MULACC).named("x"),
         [](const Match& m) {
           return verdict(m[x].src().size() == 3 && all_src_dtype(m[x], m[x].dtype()));
         }),
    rule(UPat::op(Ops::CAST, {UPat::any()}).named("x"),
         [](const Match& m) { return verdict(!m[x].dtype().is_ptr() && !m[x].dtype().is_void()); }),
    rule(UPat::op(Ops::BITCAST, {UPat::any()}).named("x"),
         [](const Match& m) {
           return verdict(m[x].dtype().itemsize() == m[x].src(0).dtype().itemsize());
         }),
    rule(UPat::op(Ops::SINK).named("x"),
         [](const Match& m) { return verdict(m[x].dtype().is_void()); }),
    rule(UPat::op(Ops::DEFINE_GLOBAL, {}).named("x"),
         [](const Match& m) {
           return verdict(m[x].dtype().is_ptr() && std::holds_alternative<int64_t>(m[x].arg()));
         }),
    rule(UPat::op(Ops::INDEX).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           size_t n = u.src().size();
           return verdict((n == 2 || n == 3) && u.src(0).dtype().is_ptr() &&
                          u.src(1).dtype().is_int() && (n == 2 || u.src(2).dtype().is_bool()) &&
                          u.dtype() == u.src(0).dtype());
         }),
    rule(UPat::op(Ops::LOAD).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           return verdict(!u.src().empty() && u.src(0).dtype().is_ptr() &&
                          u.dtype() == u.src(0).dtype().base());
         }),
    rule(UPat::op(Ops::STORE).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           if (u.src().size() < 2 || !u.src(0).dtype().is_ptr() || !u.dtype().is_void())
             return verdict(false);
           const DType to = u.src(0).dtype().base(), value = u.src(1).dtype();
           // STORE(vector index, value, range): the values along the range, as one vector.
           if (u.src().size() == 3 && u.src(2).op() == Ops::RANGE && u.src(2).src(0).is_const())
             return verdict(to == value.vec(static_cast<int>(
                                      std::get<int64_t>(u.src(2).src(0).const_value()))));
           return verdict(value == to);
         }),
    rule(UPat::op(Ops::END).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           bool ok = u.src().size() >= 2 && u.dtype().is_void();
           for (size_t i = 1; ok && i < u.src().size(); ++i) ok = u.src(i).op() == Ops::RANGE;
           return verdict(ok);
         }),
    // Shared memory: a local pointer numbered by its argument; a barrier orders stores to it.
    rule(UPat::op(Ops::DEFINE_LOCAL, {}).named("x"),
         [](const Match& m) {
           const DType d = m[x].dtype();
           return verdict(d.is_ptr() && d.addrspace() == AddrSpace::local && d.size() > 0 &&
                          std::holds_alternative<int64_t>(m[x].arg()));
         }),
    rule(UPat::op(Ops::BARRIER).named("x"),
         [](const Match& m) {
           const UOp& u = m[x];
           bool ok = u.dtype().is_void() && !u.src().empty();
           for (const UOp& s : u.src()) ok = ok && s.op() == Ops::STORE;
           return verdict(ok);
         }),
    // Tensor-level and structural ops are checked by the passes that create them.
    rule(UPat::ops(OpSet{Ops::GROUP,
                         Ops::NOOP,
                         Ops::AFTER,
                         Ops::UNIQUE,
                         Ops::DEVICE,
                         Ops::KERNEL,
                         Ops::CUSTOM,
                         Ops::CUSTOMI,
                         Ops::BUFFER,
                         Ops::BUFFER_VIEW,
                         Ops::VCONST,
                         Ops::CONTIGUOUS,
                         Ops::CONTIGUOUS_BACKWARD,
                         Ops::DETACH,
                         Ops::GRAD_RULE,
                         Ops::COPY,
                         Ops::ASSIGN,
                         Ops::VIEW,
                         Ops::REDUCE_AXIS,
                         Ops::REDUCE,
                         Ops::DEFINE_REG,
                         Ops::IF,
                         Ops::ENDIF,
                         Ops::WMMA,
                         Ops::VECTORIZE,
                         Ops::GEP,
                         Ops::CAT,
                         Ops::PTRCAT,
                         Ops::UNROLL,
                         Ops::CONTRACT} |
                   OpSet::group(kMovement)),
         [](const Match&) { return verdict(true); }),
});

void verify(const UOp& root, std::string_view pass) {
  for (const UOp& u : toposort(root)) {
    UOp v = pm_spec.first_match(u);
    if (!v || !v.is_const() || !std::get<bool>(v.arg()))
      throw InternalError(
          fmt::format("spec failed after {}: invalid {}\n{}", pass, op_name(u.op()), to_string(u)));
  }
}

bool spec_enabled() {
  static const bool on = [] {
    const char* s = std::getenv("SPEC");
    return s && *s && std::string_view(s) != "0";
  }();
  return on;
}

}  // namespace vkgrad
