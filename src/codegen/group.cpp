// codegen: a grouped reduction (Opt GROUP) as the lanes of a workgroup folding their partial
// results through shared memory, written out as UOps (DEFINE_LOCAL, STORE, BARRIER, LOAD) so that
// the printers only print them.
//
// apply_opts left REDUCE(op, body, j, g): lane g of L folds the steps j. Here g becomes the lane
// index SPECIAL("lidx0"), REDUCE(op, body, j) each lane's partial result p, and then:
// - a 32-bit sum on a target with subgroup arithmetic: each subgroup adds its lanes
//   (subgroupAdd), one lane of each stores the subgroup's sum in shared memory, and after one
//   barrier every lane adds the subgroups' sums in order;
// - otherwise a tree: every lane stores p, and for s = L/2, L/4, ..., 1, after a barrier the
//   lanes below s combine their slot with slot + s; slot 0 holds the result.
// Every lane then holds the kernel's output value; lane 0 stores it.
#include <fmt/format.h>

#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/passes.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

UOp custom(DType d, std::string text, std::vector<UOp> src = {}) {
  return UOp::make(Ops::CUSTOM, d, std::move(src), std::move(text));
}
UOp barrier(const UOp& store) { return UOp::make(Ops::BARRIER, dtypes::void_, {store}); }
// A load of shared memory that must follow `after` (a barrier).
UOp load_after(const UOp& index, const UOp& after) {
  return UOp::make(Ops::LOAD, index.dtype().base(), {index, after});
}

struct Folder {
  UOp lane;
  int64_t lanes;
  const Target& target;
  int64_t next_range, next_local = 0;

  UOp combine(Ops op, const UOp& a, const UOp& b) const {
    return op == Ops::MAX && a.dtype().is_float() ? float_max(a, b) : a.alu(op, b);
  }

  // The workgroup's fold of each lane's `partial`, in every lane.
  UOp fold(Ops op, const UOp& partial) {
    const DType d = partial.dtype();
    const UOp buf =
        UOp::make(Ops::DEFINE_LOCAL, d.ptr(lanes, AddrSpace::local), {}, int64_t{next_local++});
    const ScalarType s = d.scalar_type();
    if (target.subgroup_arithmetic && op == Ops::ADD && d.count() == 1 &&
        (s == ScalarType::float32 || s == ScalarType::int32 || s == ScalarType::uint32)) {
      const UOp sum = custom(d, "subgroupAdd({0})", {partial});
      const UOp id = custom(dtypes::index, "int(gl_SubgroupID)");
      const UOp first = custom(dtypes::bool_, "subgroupElect()");
      const UOp after = barrier(buf.index(id, first).store(sum));
      const UOp k =
          UOp::range(custom(dtypes::index, "int(gl_NumSubgroups)"), next_range++, AxisType::reduce);
      return UOp::make(Ops::REDUCE, d, {load_after(buf.index(k), after), k}, op);
    }
    UOp after = barrier(buf.index(lane).store(partial));
    for (int64_t step = lanes / 2; step >= 1; step /= 2) {
      const UOp low = lane.lt(step);
      const UOp a = load_after(buf.index(lane), after);
      const UOp b = load_after(buf.index(lane + step, low), after);
      after = barrier(buf.index(lane, low).store(combine(op, a, b)));
    }
    return load_after(buf.index(UOp::const_(dtypes::index, int64_t{0})), after);
  }
};

}  // namespace

UOp group_reductions(const UOp& kernel, const Target& target) {
  const RangeInfo info = collect_ranges(kernel);
  if (!info.group) return kernel;
  if (!target.local_memory)
    throw InternalError("group_reductions: a grouped reduction on a target without shared memory");
  const UOp& g = info.group;
  Folder f{UOp::special("lidx0", g.src(0)), range_size(g), target, info.next_id};
  std::unordered_map<UOp, UOp, UOpHash> with;
  for (const UOp& r : toposort(kernel)) {
    if (r.op() != Ops::REDUCE) continue;
    std::vector<UOp> src;
    for (const UOp& s : r.src())
      if (s != g) src.push_back(s);
    const UOp partial = src.size() == 1 ? src[0] : r.replace(std::move(src));
    with.emplace(r, f.fold(r.arg_as<Ops>(), partial));
  }
  UOp out = substitute(substitute(kernel, with), {{g, f.lane}});
  // Every lane holds the value; lane 0 stores it.
  const UOp& st = out.src(0);
  const UOp& idx = st.src(0);
  if (st.op() != Ops::STORE || idx.src().size() != 2)
    throw InternalError("group_reductions: the kernel's store is not a plain one");
  const UOp gated = idx.src(0).index(idx.src(1), f.lane.eq(int64_t{0}));
  std::vector<UOp> st_src(st.src().begin(), st.src().end());
  st_src[0] = gated;
  return out.replace({st.replace(std::move(st_src))});
}

}  // namespace vkgrad
