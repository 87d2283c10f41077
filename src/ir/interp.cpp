// Reference semantics: integers wrap per dtype and divide truncating toward zero (C); floats are
// IEEE in their dtype's precision.
#include "ir/interp.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <vkgrad/error.hpp>

#include "ir/node_index.hpp"
#include "ir/scalar.hpp"

namespace vkgrad {
namespace {

int bits_of(DType d) { return d.scalar().is_int() ? d.scalar().itemsize() * 8 : 64; }

ConstValue int_alu(Ops op, DType dt, int64_t a, int64_t b, int64_t c) {
  const bool uns = dt.is_unsigned();
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const int bits = bits_of(dt);
  auto wrap = [&](uint64_t v) { return ConstValue{wrap_int(dt, static_cast<int64_t>(v))}; };
  switch (op) {
    case Ops::ADD:
      return wrap(ua + ub);
    case Ops::SUB:
      return wrap(ua - ub);
    case Ops::MUL:
      return wrap(ua * ub);
    case Ops::NEG:
      return wrap(0 - ua);
    case Ops::MULACC:
      return wrap(ua * ub + static_cast<uint64_t>(c));
    case Ops::IDIV:
    case Ops::MOD: {
      if (b == 0)
        throw Error(fmt::format("{}: integer division by zero ({})", op_name(op), dt.name()));
      if (uns) return wrap(op == Ops::IDIV ? ua / ub : ua % ub);
      if (a == std::numeric_limits<int64_t>::min() && b == -1)
        return wrap(op == Ops::IDIV ? ua : 0);  // wraps
      return wrap(static_cast<uint64_t>(op == Ops::IDIV ? a / b : a % b));
    }
    case Ops::MAX:
      if (uns) return wrap(std::max(ua, ub));
      return wrap(static_cast<uint64_t>(std::max(a, b)));
    case Ops::AND:
      return wrap(ua & ub);
    case Ops::OR:
      return wrap(ua | ub);
    case Ops::XOR:
      return wrap(ua ^ ub);
    // Shifts by the type's width or more give 0 (and -1 for negative signed right shifts).
    case Ops::SHL:
      return wrap(ub >= static_cast<uint64_t>(bits) ? 0 : ua << ub);
    case Ops::SHR:
      if (uns) {
        uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
        return wrap(ub >= static_cast<uint64_t>(bits) ? 0 : (ua & mask) >> ub);
      }
      return wrap(
          static_cast<uint64_t>(ub >= static_cast<uint64_t>(bits) ? (a < 0 ? -1 : 0) : a >> ub));
    case Ops::CMPLT:
      return uns ? ua < ub : a < b;
    case Ops::CMPNE:
      return a != b;
    case Ops::CMPEQ:
      return a == b;
    default:
      break;
  }
  throw Error(fmt::format("interpreter: {} is not defined on {}", op_name(op), dt.name()));
}

ConstValue float_alu(Ops op, DType dt, double a, double b, double c) {
  auto r = [&](double v) { return ConstValue{round_float(dt, v)}; };
  switch (op) {
    case Ops::ADD:
      return r(a + b);
    case Ops::SUB:
      return r(a - b);
    case Ops::MUL:
      return r(a * b);
    case Ops::FDIV:
      return r(a / b);
    case Ops::NEG:
      return r(-a);
    case Ops::MULACC:
      return r(a * b + c);
    case Ops::MAX:
      return r(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
    case Ops::POW:
      return r(std::pow(a, b));
    case Ops::EXP2:
      return r(std::exp2(a));
    case Ops::LOG2:
      return r(std::log2(a));
    case Ops::SIN:
      return r(std::sin(a));
    case Ops::SQRT:
      return r(std::sqrt(a));
    case Ops::RECIPROCAL:
      return r(1.0 / a);
    case Ops::TRUNC:
      return r(std::trunc(a));
    case Ops::CMPLT:
      return a < b;
    case Ops::CMPNE:
      return a != b;
    case Ops::CMPEQ:
      return a == b;
    default:
      break;
  }
  throw Error(fmt::format("interpreter: {} is not defined on {}", op_name(op), dt.name()));
}

ConstValue bitcast(ConstValue v, DType from, DType to) {
  uint64_t bits = 0;
  switch (from.scalar_type()) {
    case ScalarType::float32:
      bits = std::bit_cast<uint32_t>(static_cast<float>(as_double(v)));
      break;
    case ScalarType::float64:
      bits = std::bit_cast<uint64_t>(as_double(v));
      break;
    case ScalarType::float16:
      bits = float_to_half_bits(static_cast<float>(as_double(v)));
      break;
    case ScalarType::bfloat16:
      bits = float_to_bf16_bits(static_cast<float>(as_double(v)));
      break;
    default:
      bits = static_cast<uint64_t>(as_int(v));
  }
  if (from.itemsize() < 8) bits &= (1ull << (8 * from.itemsize())) - 1;
  switch (to.scalar_type()) {
    case ScalarType::float32:
      return double{std::bit_cast<float>(static_cast<uint32_t>(bits))};
    case ScalarType::float64:
      return std::bit_cast<double>(bits);
    case ScalarType::float16:
      return double{half_bits_to_float(static_cast<uint16_t>(bits))};
    case ScalarType::bfloat16:
      return double{bf16_bits_to_float(static_cast<uint16_t>(bits))};
    case ScalarType::bool_:
      return bits != 0;
    default:
      return wrap_int(to, static_cast<int64_t>(bits));
  }
}

}  // namespace

ConstValue exec_alu(Ops op, DType out, std::span<const ConstValue> v, std::span<const DType> dts) {
  if (op == Ops::CAST)
    return dts.empty() ? convert_value(v[0], out) : cast_value(v[0], dts[0], out);
  if (op == Ops::BITCAST) {
    if (dts[0].itemsize() != out.itemsize())
      throw Error(fmt::format("BITCAST {} to {}: sizes differ", dts[0].name(), out.name()));
    return bitcast(v[0], dts[0], out);
  }
  if (op == Ops::WHERE) return as_bool(v[0]) ? v[1] : v[2];
  DType operand = dts.empty() ? out : dts[0];
  auto arg = [&](size_t i) { return i < v.size() ? v[i] : ConstValue{int64_t{0}}; };
  if (operand.scalar().is_bool()) {
    bool a = as_bool(arg(0)), b = as_bool(arg(1));
    switch (op) {
      case Ops::AND:
      case Ops::MUL:  // 1*1 is the only true product
        return a && b;
      case Ops::OR:
      case Ops::ADD:  // a sum is nonzero when either is: bool keeps only that
        return a || b;
      case Ops::XOR:
      case Ops::CMPNE:
        return a != b;
      case Ops::CMPEQ:
        return a == b;
      case Ops::CMPLT:
        return !a && b;
      case Ops::MAX:
        return a || b;
      default:
        break;
    }
    throw Error(fmt::format("interpreter: {} is not defined on bool", op_name(op)));
  }
  if (operand.scalar().is_float())
    return float_alu(op, operand.scalar(), as_double(arg(0)), as_double(arg(1)), as_double(arg(2)));
  return int_alu(op, operand.scalar(), as_int(arg(0)), as_int(arg(1)), as_int(arg(2)));
}

ConstValue evaluate(const UOp& root, const InterpEnv& env) {
  std::vector<ConstValue> ops;
  std::vector<DType> dts;
  const std::vector<UOp> order = toposort(root);
  // A BIND gives its variable a value wherever it appears (a value in `env` still wins).
  std::map<std::string, int64_t> bound;
  for (const UOp& u : order)
    if (u.op() == Ops::BIND && u.src(0).op() == Ops::DEFINE_VAR && u.src(1).is_const())
      bound.emplace(u.src(0).arg_as<VarArg>().name, as_int(u.src(1).const_value()));
  NodeIndex index;  // a node's number is its place in `order`, where its value goes in `val`
  std::vector<ConstValue> val;
  val.reserve(order.size());
  auto value_of = [&](const UOp& s) -> const ConstValue& { return val[index.find(s.get())]; };
  for (const UOp& u : order) {
    ConstValue r;
    switch (u.op()) {
      case Ops::CONST:
        r = u.const_value();
        break;
      case Ops::DEFINE_VAR:
      case Ops::SPECIAL: {
        const std::string& name =
            u.op() == Ops::DEFINE_VAR ? u.arg_as<VarArg>().name : u.arg_as<std::string>();
        auto it = env.vars.find(name);
        if (it == env.vars.end() && (it = bound.find(name)) == bound.end())
          throw Error(fmt::format("evaluate: no value for variable '{}'", name));
        r = wrap_int(u.dtype(), it->second);
        break;
      }
      case Ops::RANGE: {
        auto it = env.ranges.find(u.arg_as<AxisArg>().id);
        if (it == env.ranges.end())
          throw Error(fmt::format("evaluate: no value for range {}", u.arg_as<AxisArg>().id));
        r = it->second;
        break;
      }
      case Ops::BIND:
        r = value_of(u.src(1));
        break;
      default: {
        if (!is_alu(u.op()) && u.op() != Ops::CAST && u.op() != Ops::BITCAST)
          throw Error(fmt::format("evaluate: cannot evaluate {}", op_name(u.op())));
        ops.clear();
        dts.clear();
        for (const UOp& s : u.src()) {
          ops.push_back(value_of(s));
          dts.push_back(s.dtype());
        }
        // A WHERE evaluates both sides (they have no side effects) and picks one.
        r = exec_alu(u.op(), u.dtype(), ops, dts);
      }
    }
    index.insert(u.get());
    val.push_back(r);
  }
  return val.back();
}

}  // namespace vkgrad
