// codegen: the launch of a kernel on a threads target (see plan_launch in pipeline.hpp).
//
// Two shapes:
// - A grid (a kernel with LOCAL axes, constant sizes and no grouped reduction): each LOCAL range
//   is a dimension of the workgroup (SPECIAL "lidx0..2", the innermost axis's x) and the global
//   ranges are the workgroup's coordinates in the grid (SPECIAL "gidx0..2": the innermost global
//   axis is x, the next y, the rest share z as digits). A load whose index mentions no LOCAL
//   range then reads the same element in every invocation of a workgroup: a matmul's or a
//   conv's weights, uniform where the heuristics put the output channels on the grid, which a
//   GPU serves as one broadcast access. lavapipe 22 fetches such a texel once per lane; there
//   the lanes load one element each and share them by shuffles
//   (TuningProfile::share_uniform_loads).
// - Otherwise every range is a digit of one flat invocation index, so the workgroup is
//   one-dimensional: local_size = {X, 1, 1}, X = 64 (a multiple of every common subgroup size)
//   halved while half still covers the whole index space; a grouped reduction gives each
//   workgroup one output and X = GROUP's lanes. The grid is 2-D/3-D where one dimension would
//   exceed the device's maxComputeWorkGroupCount; invocations past the end return early. A
//   kernel with LOCAL axes whose grid exceeds the device's limits falls back to this shape.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/passes.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

// The grid shape of a kernel with LOCAL axes, or nothing where the flat shape applies.
struct Grid {
  std::array<std::vector<UOp>, 3> dims;  // global ranges per grid dimension, outermost first
  std::array<UOp, 3> locals;             // the LOCAL range of each workgroup dimension, or null
  std::array<uint32_t, 3> groups{1, 1, 1}, local_size{1, 1, 1};
};
std::optional<Grid> grid_of(const RangeInfo& r, const Target& target) {
  if (!target.grid || r.locals.empty() || r.group || r.locals.size() > 3) return std::nullopt;
  Grid g;
  int64_t invocations = 1;
  for (size_t i = 0; i < r.locals.size(); ++i) {
    const UOp& l = r.locals[r.locals.size() - 1 - i];  // the innermost is x
    const int64_t n = range_size(l);
    if (n < 1 || n > target.max_workgroup_size[i]) return std::nullopt;
    invocations *= n;
    g.locals[i] = l;
    g.local_size[i] = static_cast<uint32_t>(n);
  }
  if (invocations > target.max_workgroup_invocations) return std::nullopt;
  size_t dim = 0;
  for (size_t i = r.globals.size(); i-- > 0;) {
    const int64_t n = range_size(r.globals[i]);
    if (n < 1) return std::nullopt;
    if (n == 1) continue;
    g.dims[dim].insert(g.dims[dim].begin(), r.globals[i]);
    const int64_t count = int64_t{g.groups[dim]} * n;
    if (count > target.max_group_count[dim]) return std::nullopt;
    g.groups[dim] = static_cast<uint32_t>(count);
    dim = std::min<size_t>(dim + 1, 2);
  }
  return g;
}

// The flat shape's ranges: every global and LOCAL range, in id order.
std::vector<UOp> flat_ranges(const RangeInfo& r) {
  std::vector<UOp> all;
  std::merge(
      r.globals.begin(), r.globals.end(), r.locals.begin(), r.locals.end(), std::back_inserter(all),
      [](const UOp& a, const UOp& b) { return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id; });
  return all;
}

}  // namespace

bool launches_as_grid(const RangeInfo& ranges, const Target& target) {
  return grid_of(ranges, target).has_value();
}

void plan_launch(const UOp& kernel, const Target& target, Program& p) {
  const RangeInfo r = collect_ranges(kernel);
  if (const std::optional<Grid> g = grid_of(r, target)) {
    p.local_size = g->local_size;
    p.groups = g->groups;
    return;
  }
  UOp total = UOp::const_(dtypes::index, int64_t{1});
  for (const UOp& g : flat_ranges(r)) total = total * g.src(0);
  total = simplify(total);
  const int64_t max_total = total.vmax();
  if (max_total > INT32_MAX) throw DeviceError("VULKAN: a kernel's index space must fit in int32");
  for (const UOp& v : kernel_vars(kernel))
    if (v.arg_as<VarArg>().min < INT32_MIN || v.arg_as<VarArg>().max > INT32_MAX)
      throw DeviceError(fmt::format("VULKAN: variable '{}' exceeds the shaders' int32 index math",
                                    v.arg_as<VarArg>().name));
  int64_t local = std::min<int64_t>(64, target.max_workgroup_invocations);
  while (local > 1 && local / 2 >= max_total) local /= 2;
  if (r.group) local = range_size(r.group);
  p.local_size = {static_cast<uint32_t>(local), 1, 1};
  const int64_t groups = r.group ? max_total : (max_total + local - 1) / local;
  p.groups = group_grid(groups, target.max_group_count);
  if (!total.is_const()) p.launch_size = r.group ? total : simplify((total + (local - 1)) / local);
}

// The grid shape: LOCAL ranges become SPECIAL("lidx<d>"), global ranges SPECIAL("gidx<d>") or
// its digits. The flat shape: every range becomes its digit of the flat invocation index
// SPECIAL("gid") (outermost first: r_i = (gid / prod(sizes inside i)) % size_i, the outermost
// without the modulo); once the pipeline simplifies the index math, a store to r0 * n1 + r1 is a
// store to gid. A grouped reduction's ranges are digits of the workgroup's index SPECIAL("wgid")
// (group_reductions then makes its lanes SPECIAL("lidx0")).
UOp gpu_dims(const UOp& kernel, const Target& target) {
  if (!target.threads) return kernel;
  const RangeInfo r = collect_ranges(kernel);
  std::unordered_map<UOp, UOp, UOpHash> with;
  if (const std::optional<Grid> g = grid_of(r, target)) {
    for (int d = 0; d < 3; ++d) {
      if (g->locals[d])
        with.emplace(g->locals[d], UOp::special(fmt::format("lidx{}", d), g->locals[d].src(0)));
      if (!g->dims[d].empty())
        digits_of(UOp::special(fmt::format("gidx{}", d),
                               UOp::const_(dtypes::index, int64_t{g->groups[d]})),
                  g->dims[d], with);
    }
    for (const UOp& u : r.globals)
      if (range_size(u) == 1) with.emplace(u, UOp::const_(dtypes::index, int64_t{0}));
    return substitute(kernel, with);
  }
  const std::vector<UOp> all = flat_ranges(r);
  if (all.empty()) return kernel;
  UOp total = UOp::const_(dtypes::index, int64_t{1});
  for (const UOp& u : all) total = total * u.src(0);
  digits_of(UOp::special(r.group ? "wgid" : "gid", simplify(total)), all, with);
  return substitute(kernel, with);
}

void plan_texels(const UOp& kernel, const Target& target, Program& p) {
  if (!target.tuning.texel_loads) return;
  std::map<int64_t, ScalarType> slots;
  std::set<int64_t> scalars, vectors;  // the slots read as scalars, as vec4s
  for (const UOp& u : toposort(kernel))
    if (u.op() == Ops::DEFINE_GLOBAL) {
      const int64_t slot = u.arg_as<int64_t>();
      (u.dtype().base().count() > 1 ? vectors : scalars).insert(slot);
      slots.emplace(slot, u.dtype().base().scalar_type());
    }
  if (slots.empty()) return;
  const size_t n = static_cast<size_t>(slots.rbegin()->first) + 1;
  for (const auto& [slot, s] : slots) {
    // Read one way only: scalars through a view of 32-bit texels, vec4s of 128-bit ones.
    const bool scalar = scalars.count(slot) != 0, vecs = vectors.count(slot) != 0;
    using T = Program::Texel;
    const T t = s == ScalarType::float32  ? (vecs ? T::float32x4 : T::float32)
                : s == ScalarType::int32  ? (vecs ? T::int32x4 : T::int32)
                : s == ScalarType::uint32 ? (vecs ? T::uint32x4 : T::uint32)
                                          : T::none;
    if (slot == 0 || (scalar && vecs) || t == T::none ||
        (scalar && !target.tuning.texel_scalar_loads))
      continue;
    p.texel.resize(n, T::none);
    p.texel[static_cast<size_t>(slot)] = t;
  }
}

}  // namespace vkgrad
