// codegen: stage_tiles — a reduction's shared operands staged in shared memory (Opt STAGE),
// written out as UOps (DEFINE_LOCAL, STOREs, a BARRIER, LOADs) so that the printers only print
// them.
//
// apply_opts left REDUCE(op, body, ..., stage, ...): the stage loop (a reduce axis's outer part)
// and inside it the staged steps (the axis's other splits). A load of the body is staged when
// the lanes of a workgroup share it: its index mentions some of the LOCAL ranges and ignores
// others (a matmul's A ignores the columns' lanes, B the rows'). Its tile is the values it takes
// over the ranges it mentions within one stage step — the staged steps, the unrolls, the upcasts
// and the LOCAL ranges — S values laid out in that order (the LOCAL ranges innermost: lanes
// next to each other read neighbouring slots, the others the same one). Each step of the stage
// loop, lane l of the workgroup's L copies slots l, l + L, ... of every tile (the load evaluated
// at each slot's digits, its gate included, in the order along which the load's index is
// contiguous, so the copy reads whole lines), one BARRIER follows, and the body reads the tiles
// instead of the buffers. The tiles are double-buffered by the stage step's parity: a lane
// copying step t + 1 writes the other half while slower lanes still read step t, and none can
// reach step t + 2 before every lane has passed step t + 1's barrier, so one barrier per step
// suffices.
//
// Staging needs the grid launch, whose workgroup is the LOCAL lanes; where the launch falls back
// to the flat shape, the stage loop stays a plain loop.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

// 32-bit scalars and their vec4s (fold_vectors' loads) live in shared memory as they are.
bool stageable(DType d) {
  const ScalarType s = d.scalar_type();
  return (d.count() == 1 || d.count() == 4) &&
         (s == ScalarType::float32 || s == ScalarType::int32 || s == ScalarType::uint32);
}

std::vector<UOp> ranges_in(const UOp& e) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(e))
    if (u.op() == Ops::RANGE) out.push_back(u);
  return out;
}

// Layout order: the staged steps, the unrolls, the upcasts, the LOCAL ranges; by id within each.
int layout_rank(const UOp& r) {
  switch (r.arg_as<AxisArg>().type) {
    case AxisType::reduce:
      return 0;
    case AxisType::unroll:
      return 1;
    case AxisType::upcast:
      return 2;
    default:
      return 3;
  }
}

// Σ values[i] * (product of the sizes after i): the slot of a tile's coordinates.
UOp slot_of(const std::vector<UOp>& coords, const std::vector<UOp>& values) {
  UOp at = UOp::const_(dtypes::index, int64_t{0});
  for (size_t i = 0; i < coords.size(); ++i) at = at * range_size(coords[i]) + values[i];
  return at;
}

struct Stager {
  const std::vector<UOp>& locals;
  UOp lane;           // the lane's index in the workgroup, from the LOCAL ranges
  int64_t lanes = 1;  // the workgroup's size
  int64_t next_local = 0, shared_bytes = 0;

  // The REDUCE with its shared loads staged, or null when it has none.
  UOp stage(const UOp& r, const UOp& step) {
    std::vector<UOp> inner;
    for (size_t i = 1; i < r.src().size(); ++i)
      if (r.src(i) != step) inner.push_back(r.src(i));
    auto is = [](const std::vector<UOp>& v, const UOp& x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    const UOp parity = step % int64_t{2};
    std::vector<UOp> stores;
    std::vector<std::pair<UOp, UOp>> staged;  // a load and its tile's INDEX
    for (const UOp& ld : toposort(r.src(0))) {
      if (ld.op() != Ops::LOAD || ld.src(0).src(0).op() != Ops::DEFINE_GLOBAL ||
          !stageable(ld.dtype()))
        continue;
      const std::vector<UOp> mentioned = ranges_in(ld.src(0));
      const size_t own = static_cast<size_t>(std::count_if(
          locals.begin(), locals.end(), [&](const UOp& l) { return is(mentioned, l); }));
      if (own == 0 || own == locals.size()) continue;  // private to a lane, or uniform
      std::vector<UOp> coords;
      bool ok = true, per_step = false;
      for (const UOp& x : mentioned) {
        const AxisType t = x.arg_as<AxisArg>().type;
        if (x == step || t == AxisType::global) {
          per_step = per_step || x == step;
          continue;
        }
        if (!is(inner, x) && t != AxisType::upcast && t != AxisType::local) ok = false;
        if (range_size(x) < 1) ok = false;
        coords.push_back(x);
        per_step = per_step || is(inner, x);
      }
      if (!ok || !per_step) continue;
      std::sort(coords.begin(), coords.end(), [](const UOp& a, const UOp& b) {
        const int ra = layout_rank(a), rb = layout_rank(b);
        return ra != rb ? ra < rb : a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
      });
      int64_t size = 1;
      for (const UOp& c : coords) size *= range_size(c);
      const UOp buf = UOp::make(Ops::DEFINE_LOCAL, ld.dtype().ptr(2 * size, AddrSpace::local), {},
                                int64_t{next_local++});
      shared_bytes += 2 * size * ld.dtype().itemsize();
      const UOp base = parity * size;
      // The copy walks the coordinate along which the index is contiguous innermost.
      std::vector<UOp> order = coords;
      const UOp& idx = ld.src(0).src(1);
      for (size_t i = 0; i < order.size(); ++i)
        if (steps_by_one(idx, order[i])) {
          std::rotate(order.begin() + static_cast<long>(i),
                      order.begin() + static_cast<long>(i) + 1, order.end());
          break;
        }
      for (int64_t m = 0; m * lanes < size; ++m) {
        const UOp c = lane + m * lanes;
        std::unordered_map<UOp, UOp, UOpHash> digit;
        int64_t below = 1;
        for (size_t i = order.size(); i-- > 0;) {
          const int64_t n = range_size(order[i]);
          digit.emplace(order[i], (below == 1 ? c : c / below) % n);
          below *= n;
        }
        std::vector<UOp> values;
        for (const UOp& x : coords) values.push_back(digit.at(x));
        const UOp at = base + slot_of(coords, values);
        const UOp dst = (m + 1) * lanes <= size ? buf.index(at) : buf.index(at, c.lt(size));
        stores.push_back(dst.store(substitute(ld, digit)));
      }
      staged.emplace_back(ld, buf.index(base + slot_of(coords, coords)));
    }
    if (staged.empty()) return {};
    const UOp barrier = UOp::make(Ops::BARRIER, dtypes::void_, std::move(stores));
    std::unordered_map<UOp, UOp, UOpHash> with;
    for (const auto& [ld, at] : staged)
      with.emplace(ld, UOp::make(Ops::LOAD, ld.dtype(), {at, barrier}));
    // The stage loop first: the copies and the barrier belong to its body.
    std::vector<UOp> src{substitute(r.src(0), with), step};
    src.insert(src.end(), inner.begin(), inner.end());
    return r.replace(std::move(src));
  }
};

}  // namespace

UOp stage_tiles(const UOp& kernel, const Target& target) {
  const RangeInfo info = collect_ranges(kernel);
  const UOp& step = info.stage;
  if (!step || !launches_as_grid(info, target)) return kernel;
  if (!target.local_memory)
    throw InternalError("stage_tiles: a staged reduction on a target without shared memory");
  Stager s{info.locals, UOp::const_(dtypes::index, int64_t{0})};
  for (const UOp& l : info.locals) {
    s.lane = s.lane * range_size(l) + l;
    s.lanes *= range_size(l);
  }
  std::unordered_map<UOp, UOp, UOpHash> with;
  for (const UOp& r : toposort(kernel))
    if (r.op() == Ops::REDUCE &&
        std::find(r.src().begin() + 1, r.src().end(), step) != r.src().end())
      if (UOp staged = s.stage(r, step)) with.emplace(r, std::move(staged));
  if (s.shared_bytes > target.max_shared_bytes)
    throw Error(fmt::format(
        "stage_tiles: kernel {}: the staged tiles need {} bytes of shared memory, over the "
        "target's {}",
        kernel_name(kernel), s.shared_bytes, target.max_shared_bytes));
  return with.empty() ? kernel : substitute(kernel, with);
}

}  // namespace vkgrad
