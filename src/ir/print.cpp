// Printers: tinygrad-style nested form and infix rendering of index expressions.
#include "ir/print.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "ir/node_index.hpp"

namespace vkgrad {
namespace {

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e16) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

std::string tuple(const std::vector<std::string>& items) {
  if (items.size() == 1) return fmt::format("({},)", items[0]);
  return fmt::format("({})", fmt::join(items, ", "));
}

}  // namespace

std::string dtype_repr(DType d) {
  std::string s = fmt::format("dtypes.{}", DType(d.scalar_type()).name());
  if (d.count() != 1) s += fmt::format(".vec({})", d.count());
  if (d.is_ptr()) {
    const char* space = d.addrspace() == AddrSpace::local ? ", local=True" : "";
    s +=
        d.size() >= 0 ? fmt::format(".ptr({}{})", d.size(), space) : fmt::format(".ptr({})", space);
  }
  return s;
}

std::string format_arg(const Arg& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, double>) {
          return format_double(v);
        } else if constexpr (std::is_same_v<T, Ops>) {
          return fmt::format("Ops.{}", op_name(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          return fmt::format("'{}'", v);
        } else if constexpr (std::is_same_v<T, IntTuple>) {
          std::vector<std::string> items;
          for (int64_t x : v) items.push_back(fmt::format("{}", x));
          return tuple(items);
        } else if constexpr (std::is_same_v<T, PairTuple>) {
          std::vector<std::string> items;
          for (auto [x, y] : v) items.push_back(fmt::format("({}, {})", x, y));
          return tuple(items);
        } else if constexpr (std::is_same_v<T, VarArg>) {
          return fmt::format("('{}', {}, {})", v.name, v.min, v.max);
        } else {
          return fmt::format("({}, AxisType.{})", v.id, axis_type_name(v.type));
        }
      },
      a);
}

// Indentation stops growing after 32 levels, so a deep chain prints in linear space.
constexpr char kSpaces[] = "                                                                ";
static_assert(sizeof(kSpaces) == 2 * 32 + 1);

std::string to_string(const UOp& root) {
  if (!root) return "UOp(null)";
  // Count parents inside this graph: nodes with several are named once and referenced after.
  NodeIndex index;
  std::vector<int> parents;  // by node number
  for (const UOp& u : toposort(root)) {
    index.insert(u.get());
    parents.push_back(0);
    for (const UOp& s : u.src()) ++parents[index.find(s.get())];
  }
  std::vector<int> names(parents.size(), -1);
  int next_name = 0;

  std::string out;
  struct Frame {
    const UOp* u;
    size_t next;
    int depth;
  };
  std::vector<Frame> stack{{&root, 0, 0}};
  auto indent = [](int depth) { return std::string_view(kSpaces, 2 * std::min(depth, 32)); };
  auto open = [&](const UOp& u, int depth) -> bool {  // returns true if children follow
    out += indent(depth);
    uint32_t i = index.find(u.get());
    // Plain appends, not fmt: this runs once per node of graphs a million nodes deep.
    if (names[i] >= 0) {
      out += 'x';
      out += std::to_string(names[i]);
      return false;
    }
    if (parents[i] > 1) {
      names[i] = next_name;
      out += 'x';
      out += std::to_string(next_name++);
      out += ":=";
    }
    out += "UOp(Ops.";
    out += op_name(u.op());
    out += ", ";
    out += dtype_repr(u.dtype());
    out += ", arg=";
    out += format_arg(u.arg());
    out += ", src=(";
    if (u.src().empty()) {
      out += "))";
      return false;
    }
    out += "\n";
    return true;
  };
  if (!open(root, 0)) return out;
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.u->src().size()) {
      const UOp& child = f.u->src(f.next++);
      int depth = f.depth + 1;
      if (open(child, depth)) {
        stack.push_back({&child, 0, depth});
        continue;
      }
      out += f.next < f.u->src().size() ? ",\n" : ",";
      continue;
    }
    out += "))";
    stack.pop_back();
    if (!stack.empty()) out += stack.back().next < stack.back().u->src().size() ? ",\n" : ",";
  }
  return out;
}

std::string render(const UOp& root) {
  NodeIndex index;
  std::vector<std::string> r;  // by node number
  for (const UOp& u : toposort(root)) {
    auto s = [&](size_t i) -> const std::string& { return r[index.find(u.src(i).get())]; };
    std::string text;
    switch (u.op()) {
      case Ops::CONST: {
        const Arg& a = u.arg();
        if (auto* b = std::get_if<bool>(&a))
          text = *b ? "True" : "False";
        else
          text = format_arg(a);
        break;
      }
      case Ops::DEFINE_VAR:
        text = u.arg_as<VarArg>().name;
        break;
      case Ops::RANGE:
        text = fmt::format("r{}", u.arg_as<AxisArg>().id);
        break;
      case Ops::SPECIAL:
        text = u.arg_as<std::string>();
        break;
      case Ops::BIND:
        text = s(0);
        break;
      case Ops::ADD:
        text = fmt::format("({}+{})", s(0), s(1));
        break;
      case Ops::SUB:
        text = fmt::format("({}-{})", s(0), s(1));
        break;
      case Ops::MUL:
        text = fmt::format("({}*{})", s(0), s(1));
        break;
      case Ops::IDIV:
        text = fmt::format("({}//{})", s(0), s(1));
        break;
      case Ops::FDIV:
        text = fmt::format("({}/{})", s(0), s(1));
        break;
      case Ops::MOD:
        text = fmt::format("({}%{})", s(0), s(1));
        break;
      case Ops::AND:
        text = fmt::format("({}&{})", s(0), s(1));
        break;
      case Ops::OR:
        text = fmt::format("({}|{})", s(0), s(1));
        break;
      case Ops::XOR:
        text = fmt::format("({}^{})", s(0), s(1));
        break;
      case Ops::SHL:
        text = fmt::format("({}<<{})", s(0), s(1));
        break;
      case Ops::SHR:
        text = fmt::format("({}>>{})", s(0), s(1));
        break;
      case Ops::CMPLT:
        text = fmt::format("({}<{})", s(0), s(1));
        break;
      case Ops::CMPNE:
        text = fmt::format("({}!={})", s(0), s(1));
        break;
      case Ops::CMPEQ:
        text = fmt::format("({}=={})", s(0), s(1));
        break;
      case Ops::MAX:
        text = fmt::format("max({}, {})", s(0), s(1));
        break;
      case Ops::NEG:
        text = fmt::format("(-{})", s(0));
        break;
      case Ops::WHERE:
        text = fmt::format("({}?{}:{})", s(0), s(1), s(2));
        break;
      case Ops::CAST:
        text = fmt::format("({})({})", u.dtype().name(), s(0));
        break;
      default: {
        std::vector<std::string> args;
        for (size_t i = 0; i < u.src().size(); ++i) args.push_back(s(i));
        text = fmt::format("{}({})", op_name(u.op()), fmt::join(args, ", "));
      }
    }
    index.insert(u.get());
    r.push_back(std::move(text));
  }
  return r.back();
}

}  // namespace vkgrad
