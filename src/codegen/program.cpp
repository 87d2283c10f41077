// codegen: evaluating a symbolic kernel's launch from its variables' values (see program.hpp).
#include "codegen/program.hpp"

#include <fmt/format.h>

#include <vkgrad/error.hpp>

#include "ir/interp.hpp"

namespace vkgrad {

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
