// codegen: range analysis for the optimization passes (see ranges.hpp).
#include "codegen/ranges.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vkgrad/error.hpp>

#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {

int64_t range_size(const UOp& r) {
  return r.src(0).is_const() ? std::get<int64_t>(r.src(0).const_value()) : -1;
}

std::vector<UOp> kernel_vars(const UOp& ast) {
  std::vector<UOp> vars;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::DEFINE_VAR) vars.push_back(u);
  std::sort(vars.begin(), vars.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<VarArg>().name < b.arg_as<VarArg>().name;
  });
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  for (size_t i = 1; i < vars.size(); ++i) {
    const VarArg &a = vars[i - 1].arg_as<VarArg>(), &b = vars[i].arg_as<VarArg>();
    if (a.name == b.name)
      throw InternalError(fmt::format(
          "codegen: variable '{}' defined twice, as [{}, {}] {} and [{}, {}] {}", a.name, a.min,
          a.max, vars[i - 1].dtype().name(), b.min, b.max, vars[i].dtype().name()));
  }
  return vars;
}

RangeInfo collect_ranges(const UOp& ast) {
  RangeInfo info;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::RANGE) {
      const auto& a = u.arg_as<AxisArg>();
      info.next_id = std::max(info.next_id, a.id + 1);
      if (a.type == AxisType::global) info.globals.push_back(u);
      if (a.type == AxisType::reduce) info.reduces.push_back(u);
      if (a.type == AxisType::local) info.locals.push_back(u);
      if (a.type == AxisType::group_reduce) info.group = u;
      if (a.type == AxisType::stage) info.stage = u;
    }
    if (u.op() == Ops::LOAD) info.load_indices.push_back(u.src(0).src(1));
  }
  auto by_id = [](const UOp& a, const UOp& b) {
    return a.arg_as<AxisArg>().id < b.arg_as<AxisArg>().id;
  };
  std::sort(info.globals.begin(), info.globals.end(), by_id);
  std::sort(info.reduces.begin(), info.reduces.end(), by_id);
  std::sort(info.locals.begin(), info.locals.end(), by_id);
  return info;
}

bool mentions(const UOp& expr, const UOp& range) {
  for (const UOp& u : toposort(expr))
    if (u == range) return true;
  return false;
}

bool costly_index_math(const UOp& ast, const RangeInfo& info, std::vector<UOp>* shared) {
  auto on_ranges = [](const UOp& u) {
    return std::any_of(u.src().begin(), u.src().end(),
                       [](const UOp& s) { return s.op() != Ops::CONST; });
  };
  bool divides = false;
  std::vector<UOp> index_math;  // divisions, remainders and comparisons of index values
  for (const UOp& u : toposort(ast)) {
    const bool div = (u.op() == Ops::IDIV || u.op() == Ops::MOD) && u.dtype() == dtypes::index;
    if ((div || (is_comparison(u.op()) && u.src(0).dtype() == dtypes::index)) && on_ranges(u)) {
      index_math.push_back(u);
      divides = divides || div;
    }
  }
  if (shared) {
    shared->clear();
    for (const UOp& g : info.globals)
      if (std::none_of(index_math.begin(), index_math.end(),
                       [&](const UOp& c) { return mentions(c, g); }))
        shared->push_back(g);
  }
  return divides;
}

bool has_reuse(const RangeInfo& info, const UOp& g) {
  return std::any_of(info.load_indices.begin(), info.load_indices.end(),
                     [&](const UOp& idx) { return !mentions(idx, g); });
}

bool reuses_product(const UOp& ast, const UOp& g) {
  auto loads_without_g = [&](const UOp& f) {
    bool load = false;
    for (const UOp& u : toposort(f)) {
      if (u == g) return false;
      load |= u.op() == Ops::LOAD;
    }
    return load;
  };
  for (const UOp& r : toposort(ast)) {
    if (r.op() != Ops::REDUCE) continue;
    for (const UOp& u : toposort(r.src(0)))
      if (u.op() == Ops::MUL && ((loads_without_g(u.src(0)) && mentions(u.src(1), g)) ||
                                 (loads_without_g(u.src(1)) && mentions(u.src(0), g))))
        return true;
  }
  return false;
}

bool reuses_across(const RangeInfo& info, const UOp& a, const UOp& b) {
  return std::any_of(info.load_indices.begin(), info.load_indices.end(),
                     [&](const UOp& idx) { return mentions(idx, a) && !mentions(idx, b); });
}

std::optional<int64_t> stride_along(const UOp& idx, const UOp& r) {
  const UOp d = simplify(substitute(idx, {{r, r + 1}}) - idx);
  if (!d.is_const()) return std::nullopt;
  return d.arg_as<int64_t>();
}

bool steps_by_one(const UOp& idx, const UOp& r) { return stride_along(idx, r) == 1; }

bool contiguous_along(const RangeInfo& info, const UOp& r) {
  return std::any_of(info.load_indices.begin(), info.load_indices.end(),
                     [&](const UOp& idx) { return mentions(idx, r) && steps_by_one(idx, r); });
}

bool summed_contiguous_along(const RangeInfo& info, const UOp& r) {
  return std::any_of(info.load_indices.begin(), info.load_indices.end(), [&](const UOp& idx) {
    return mentions(idx, r) && steps_by_one(idx, r) &&
           std::any_of(info.reduces.begin(), info.reduces.end(),
                       [&](const UOp& k) { return mentions(idx, k); });
  });
}

void digits_of(const UOp& index, const std::vector<UOp>& ranges,
               std::unordered_map<UOp, UOp, UOpHash>& with) {
  UOp inner = UOp::const_(dtypes::index, int64_t{1});
  for (size_t i = ranges.size(); i-- > 0;) {
    UOp digit = inner.is_const(1) ? index : index / simplify(inner);
    if (i > 0) digit = digit % ranges[i].src(0);
    with.emplace(ranges[i], digit);
    inner = inner * ranges[i].src(0);
  }
}

int64_t prod_sizes(const std::vector<UOp>& ranges) {
  constexpr int64_t cap = int64_t{1} << 62;
  int64_t n = 1;
  for (const UOp& r : ranges) {
    const int64_t s = r.src(0).vmax();
    n = s > 0 && n > cap / s ? cap : n * s;
  }
  return n;
}

}  // namespace vkgrad
