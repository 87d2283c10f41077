// codegen: fold_vectors — neighbouring loads and stores become vector accesses (see
// pipeline.hpp). On a target with 4-wide vectors (GLSL's vec4), where a size-4 upcast or unroll
// range u walks 4 aligned neighbours of a 32-bit buffer (index base + u, base a multiple of 4):
//   LOAD(INDEX(buf, base + u))  ->  GEP(LOAD(INDEX(buf4, base / 4)) : vec4, u)
// the vector load no longer depends on u, so it is computed once outside u's loop, and each lane
// reads its element (a matmul's A along k under UNROLL); and when the store's innermost upcast
// range is such a range,
//   STORE(INDEX(buf, base + u), v)  ->  STORE(INDEX(buf4, base / 4), v, u)
// stores the 4 values v takes along u as one vector. buf4 is buf's slot seen as vec4 elements (a
// DEFINE_GLOBAL of the vector type). A load whose valid mask depends on u stays
// scalar (its lanes would need different masks). Grouped reductions are left as they are.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "codegen/passes.hpp"
#include "codegen/ranges.hpp"
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {
namespace {

bool vectorizable(DType d) {
  return d.count() == 1 && (d.scalar() == dtypes::float32 || d.scalar() == dtypes::int32 ||
                            d.scalar() == dtypes::uint32);
}

struct VecAccess {
  UOp range;  // the upcast range of 4 the access spans
  UOp index;  // the vector's index: (element index at range = 0) / 4
};

// `idx` reads base + u for u in [0, 4) of a size-4 upcast range not in `mask`'s ranges, base a
// multiple of 4.
std::optional<VecAccess> vec_access(const UOp& idx, const std::vector<UOp>& upcasts,
                                    const UOp& mask) {
  for (const UOp& u : upcasts) {
    if (range_size(u) != 4 || !mentions(idx, u) || (mask && mentions(mask, u))) continue;
    auto at = [&](int64_t k) { return simplify(substitute(idx, {{u, u.const_like(k)}})); };
    const UOp base = at(0);
    bool ok = simplify(base % base.const_like(4)).is_const(0);
    for (int64_t k = 1; ok && k < 4; ++k) ok = simplify(at(k) - base).is_const(k);
    if (ok) return VecAccess{u, simplify(base / base.const_like(4))};
  }
  return std::nullopt;
}

// INDEX(buf, at[, valid]) through buf's vector alias: the same slot seen as vec4 elements.
UOp vector_index(const UOp& index, const UOp& at) {
  const UOp& buf = index.src(0);
  const UOp vbuf = UOp::define_global(buf.dtype().base().vec(4).ptr(), buf.arg_as<int64_t>());
  std::vector<UOp> src = index.src();
  src[0] = vbuf;
  src[1] = at;
  return UOp::make(Ops::INDEX, vbuf.dtype(), std::move(src));
}

}  // namespace

UOp fold_vectors(const UOp& kernel, const Target& target) {
  if (!target.threads || target.vector_floats != 4) return kernel;
  std::vector<UOp> upcasts, unrolled;  // unrolled: upcast and unroll ranges (loads only)
  for (const UOp& u : toposort(kernel)) {
    if (u.op() != Ops::RANGE) continue;
    if (u.arg_as<AxisArg>().type == AxisType::group_reduce) return kernel;
    if (u.arg_as<AxisArg>().type == AxisType::upcast) upcasts.push_back(u);
    if (u.arg_as<AxisArg>().type == AxisType::upcast ||
        u.arg_as<AxisArg>().type == AxisType::unroll)
      unrolled.push_back(u);
  }
  if (unrolled.empty()) return kernel;
  auto by_id = [](const UOp& a, const UOp& b) {
    return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
  };
  std::sort(upcasts.begin(), upcasts.end(), by_id);
  std::sort(unrolled.begin(), unrolled.end(), by_id);
  std::unordered_map<UOp, UOp, UOpHash> loads;
  for (const UOp& u : toposort(kernel)) {
    if (u.op() != Ops::LOAD || !vectorizable(u.dtype())) continue;
    const UOp& idx = u.src(0);
    const UOp mask = idx.src().size() > 2 ? idx.src(2) : UOp{};
    if (auto v = vec_access(idx.src(1), unrolled, mask)) {
      const UOp vload = UOp::make(Ops::LOAD, u.dtype().vec(4), {vector_index(idx, v->index)});
      loads.emplace(u, UOp::make(Ops::GEP, u.dtype(), {vload, v->range}));
    }
  }
  UOp out = loads.empty() ? kernel : substitute(kernel, loads);
  const UOp& st = out.src(0);
  if (!upcasts.empty() && vectorizable(st.src(1).dtype()))
    if (auto v = vec_access(st.src(0).src(1), upcasts,
                            st.src(0).src().size() > 2 ? st.src(0).src(2) : UOp{});
        v && v->range == upcasts.back())
      out = UOp::sink({UOp::make(Ops::STORE, st.dtype(),
                                 {vector_index(st.src(0), v->index), st.src(1), v->range})});
  return out;
}

// A row of gated loads (a pad's, a window's) unrolled is a branch per load; left to the C
// compiler's loop vectorizer, it is one masked vector load (a depthwise 3x3 conv at 112 x 112:
// 1.07 -> 0.4 ms). Only where every gated load that moves along the loop reads consecutive
// elements: at stride 2 a vector of them is a gather, slower than the unrolled branches.
UOp vector_loop(const UOp& kernel) {
  UOp last;
  std::vector<UOp> gated;
  for (const UOp& u : toposort(kernel)) {
    if (u.op() == Ops::RANGE && u.arg_as<AxisArg>().type == AxisType::upcast &&
        (!last || u.arg_as<AxisArg>().id > last.arg_as<AxisArg>().id))
      last = u;
    if (u.op() == Ops::LOAD && u.src(0).src().size() > 2) gated.push_back(u.src(0).src(1));
  }
  if (!last || gated.empty()) return UOp{};
  for (const UOp& idx : gated) {
    const UOp step = simplify(substitute(idx, {{last, last + last.const_like(1)}}) - idx);
    if (!step.is_const(0) && !step.is_const(1)) return UOp{};
  }
  return last;
}

}  // namespace vkgrad
