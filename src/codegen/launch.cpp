// codegen: the launch of a kernel on a threads target (see plan_launch in pipeline.hpp).
//
// Every global range is flattened into one invocation index, so the workgroup is one-dimensional:
// local_size = {X, 1, 1}, X from LOCAL, else 64 (a multiple of every common subgroup size) halved
// while half still covers the whole index space; a grouped reduction gives each workgroup one
// output and X = GROUP's lanes. The grid is 2-D/3-D where one dimension would exceed the device's
// maxComputeWorkGroupCount; invocations past the end return early.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/linearize.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {

void plan_launch(const UOp& kernel, const std::vector<Opt>& opts, const Target& target,
                 Program& p) {
  const std::vector<UOp> globals = collect_ranges(kernel).globals;
  bool grouped = false;
  for (const UOp& u : toposort(kernel))
    grouped =
        grouped || (u.op() == Ops::RANGE && u.arg_as<AxisArg>().type == AxisType::group_reduce);
  UOp total = UOp::const_(dtypes::index, int64_t{1});
  for (const UOp& g : globals) total = total * g.src(0);
  total = simplify(total);
  const int64_t max_total = total.vmax();
  if (max_total > INT32_MAX) throw DeviceError("VULKAN: a kernel's index space must fit in int32");
  for (const UOp& v : kernel_vars(kernel))
    if (v.arg_as<VarArg>().min < INT32_MIN || v.arg_as<VarArg>().max > INT32_MAX)
      throw DeviceError(fmt::format("VULKAN: variable '{}' exceeds the shaders' int32 index math",
                                    v.arg_as<VarArg>().name));
  int64_t local = std::min<int64_t>(64, target.max_workgroup_invocations);
  while (local > 1 && local / 2 >= max_total) local /= 2;
  for (const Opt& o : opts)
    if (o.op == OptOp::LOCAL || o.op == OptOp::GROUP) local = o.amount;
  if (grouped &&
      std::none_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::GROUP; }))
    throw InternalError("plan_launch: a grouped reduction without its GROUP opt");
  p.local_size = {static_cast<uint32_t>(local), 1, 1};
  const int64_t groups = grouped ? max_total : (max_total + local - 1) / local;
  p.groups = group_grid(groups, target.max_group_count);
  if (!total.is_const()) p.launch_size = grouped ? total : simplify((total + (local - 1)) / local);
}

// Every global range becomes its digit of the flat invocation index SPECIAL("gid") (outermost
// first: r_i = (gid / prod(sizes inside i)) % size_i, the outermost without the modulo); once the
// pipeline simplifies the index math, a store to r0 * n1 + r1 is a store to gid.
UOp gpu_dims(const UOp& kernel, const Target& target) {
  if (!target.threads) return kernel;
  const std::vector<UOp> globals = collect_ranges(kernel).globals;
  if (globals.empty()) return kernel;
  UOp total = UOp::const_(dtypes::index, int64_t{1});
  for (const UOp& g : globals) total = total * g.src(0);
  const UOp gid = UOp::special("gid", simplify(total));
  std::unordered_map<UOp, UOp, UOpHash> with;
  UOp inner = UOp::const_(dtypes::index, int64_t{1});
  for (size_t i = globals.size(); i-- > 0;) {
    UOp digit = inner.is_const(1) ? gid : gid / simplify(inner);
    if (i > 0) digit = digit % globals[i].src(0);
    with.emplace(globals[i], digit);
    inner = inner * globals[i].src(0);
  }
  return substitute(kernel, with);
}

}  // namespace vkgrad
