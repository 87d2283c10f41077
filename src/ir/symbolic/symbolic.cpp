// Composition of the rule families and the entry points simplify / substitute / resolve.
#include "ir/symbolic/symbolic.hpp"

#include <fmt/format.h>

#include <vkgrad/error.hpp>

namespace vkgrad {

const PatternMatcher& pm_symbolic() {
  static const PatternMatcher pm = [] {
    std::vector<Rule> all;
    for (auto family : {rules_const, rules_add, rules_mul, rules_divmod, rules_cmp, rules_where}) {
      std::vector<Rule> rs = family();
      all.insert(all.end(), std::make_move_iterator(rs.begin()), std::make_move_iterator(rs.end()));
    }
    return PatternMatcher(std::move(all));
  }();
  return pm;
}

UOp simplify(const UOp& u) {
  return graph_rewrite(u, pm_symbolic(), nullptr, RewriteOptions{.name = "simplify"});
}

namespace {
using SubstMap = std::unordered_map<UOp, UOp, UOpHash>;
const UPat any_node = UPat::any().named("x");
const PatternMatcher pm_substitute({
    rule(any_node,
         [](const Match& m) {
           const SubstMap& with = m.ctx<const SubstMap>();
           auto it = with.find(m[any_node]);
           return it == with.end() ? UOp() : it->second;
         }),
});
}  // namespace

UOp substitute(const UOp& u, const SubstMap& with) {
  if (with.empty()) return u;
  return graph_rewrite(u, pm_substitute, const_cast<SubstMap*>(&with),
                       RewriteOptions{.parents_first = true, .name = "substitute"});
}

bool resolve(const UOp& cond, bool default_value) {
  if (!cond.dtype().is_bool())
    throw DTypeError(fmt::format("resolve: need a bool expression, got {}", cond.dtype().name()));
  UOp s = simplify(cond);
  if (s.vmin() == s.vmax()) return s.vmin() != 0;
  return default_value;
}

}  // namespace vkgrad
