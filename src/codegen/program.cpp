// codegen: evaluating a symbolic kernel's launch from its variables' values (see program.hpp).
#include "codegen/program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "ir/interp.hpp"
#include "ir/print.hpp"

namespace vkgrad {

Estimates estimate(const UOp& ast) {
  // The ranges each node runs under: its own and its operands', minus those a REDUCE closes.
  using Ranges = std::vector<UOp>;
  std::unordered_map<const UOpNode*, Ranges> under;
  auto add = [](Ranges& to, const Ranges& from) {
    for (const UOp& r : from)
      if (std::find(to.begin(), to.end(), r) == to.end()) to.push_back(r);
  };
  auto trips = [](const Ranges& rs) {
    double n = 1;
    for (const UOp& r : rs) n *= static_cast<double>(std::max<int64_t>(r.src(0).vmax(), 0));
    return n;
  };
  Estimates e;
  for (const UOp& u : toposort(ast)) {
    Ranges mine;
    if (u.op() == Ops::RANGE) mine.push_back(u);
    for (const UOp& s : u.src()) add(mine, under.at(s.get()));
    if ((is_alu(u.op()) && u.dtype() != dtypes::index) || u.op() == Ops::REDUCE)
      e.ops += trips(mine);  // a REDUCE: one op per element reduced
    if (u.op() == Ops::REDUCE)
      for (size_t i = 1; i < u.src().size(); ++i) std::erase(mine, u.src(i));
    if (u.op() == Ops::LOAD || u.op() == Ops::STORE) {
      const UOp& idx = u.src(0).src(1);
      const double span = static_cast<double>(idx.vmax() - idx.vmin() + 1);
      const DType d = u.op() == Ops::LOAD ? u.dtype() : u.src(1).dtype();
      e.bytes +=
          std::min(span, trips(under.at(idx.get()))) * static_cast<double>(d.scalar().itemsize());
    }
    under.emplace(u.get(), std::move(mine));
  }
  return e;
}

std::string uop_listing(const Program& p) {
  std::unordered_map<const UOpNode*, size_t> index;
  // A source: the number of its entry, or, printed where used, the node itself.
  auto ref = [&](auto& self, const UOp& u) -> std::string {
    if (auto it = index.find(u.get()); it != index.end()) return std::to_string(it->second);
    switch (u.op()) {
      case Ops::CONST:
        return format_arg(u.arg());
      case Ops::DEFINE_GLOBAL:
        return fmt::format("buf{}", u.arg_as<int64_t>());
      case Ops::DEFINE_LOCAL:
        return fmt::format("local{}", u.arg_as<int64_t>());
      case Ops::SPECIAL:
        return u.arg_as<std::string>();
      case Ops::DEFINE_VAR:
        return u.arg_as<VarArg>().name;
      default:
        break;
    }
    std::string s = fmt::format("{}(", op_name(u.op()));
    for (size_t i = 0; i < u.src().size(); ++i) s += (i ? ", " : "") + self(self, u.src(i));
    return s + ")";
  };
  std::string out = fmt::format("{}: {} uops\n", p.name, p.uops.size());
  for (size_t n = 0; n < p.uops.size(); ++n) {
    const UOp& u = p.uops[n];
    std::string src;
    for (const UOp& s : u.src()) src += fmt::format("{}{}", src.empty() ? "" : ", ", ref(ref, s));
    out += fmt::format("{:4} {:<14} {:<24} [{}] {}\n", n, op_name(u.op()), dtype_repr(u.dtype()),
                       src, format_arg(u.arg()));
    index[u.get()] = n;  // a node listed again (in a later scope) is read from there on
  }
  return out;
}

void check_var_values(std::string_view kernel, std::span<const VarArg> vars,
                      std::span<const int64_t> values) {
  if (values.size() != vars.size())
    throw Error(fmt::format("kernel '{}' takes {} variable values, the launch passes {}", kernel,
                            vars.size(), values.size()));
  for (size_t i = 0; i < vars.size(); ++i)
    if (values[i] < vars[i].min || values[i] > vars[i].max)
      throw Error(fmt::format("kernel '{}': variable '{}' = {} is outside [{}, {}]", kernel,
                              vars[i].name, values[i], vars[i].min, vars[i].max));
}

int64_t evaluate_size(const UOp& expr, std::span<const VarArg> vars,
                      std::span<const int64_t> values) {
  InterpEnv env;
  for (size_t i = 0; i < vars.size(); ++i) env.vars.emplace(vars[i].name, values[i]);
  return std::get<int64_t>(evaluate(expr, env));
}

std::array<uint32_t, 3> group_grid(int64_t groups, const uint32_t (&max_group_count)[3]) {
  std::array<uint32_t, 3> grid{1, 1, 1};
  int64_t g = groups;
  for (int dim = 0; dim < 3 && g > 1; ++dim) {
    const int64_t cap = max_group_count[dim];
    if (dim == 2 && g > cap)
      throw DeviceError(fmt::format("VULKAN: {} workgroups exceed the device's grid", groups));
    const int64_t rest = (g + cap - 1) / cap;
    grid[dim] = static_cast<uint32_t>((g + rest - 1) / rest);
    g = rest;
  }
  return grid;
}

}  // namespace vkgrad
