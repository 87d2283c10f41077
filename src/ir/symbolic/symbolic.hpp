// ir/symbolic: integer index math simplification with vmin/vmax bounds — constant folding,
// identities, canonical operand order, like terms, comparisons against bounds, where folding,
// div/mod folding. Each rule family lives in its own rules_<family>.cpp and is exposed as a
// function returning its rules (so composition does not depend on static initialization order).
// Depends on uop, upat, graph_rewrite.
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/graph_rewrite.hpp"
#include "ir/upat.hpp"

namespace vkgrad {

// Rule families, one file each.
std::vector<Rule> rules_const();   // constant folding and identities (x+0, x*1, x*0, ...)
std::vector<Rule> rules_add();     // canonical order of sums, like terms, constants last
std::vector<Rule> rules_mul();     // products: constants last, distribution of constants
std::vector<Rule> rules_divmod();  // div/mod folding, including nested div/mod of sums
std::vector<Rule> rules_cmp();     // comparisons against bounds and moved constants
std::vector<Rule> rules_where();   // where folding, boolean logic

// All of the above, in the order they are tried.
const PatternMatcher& pm_symbolic();

// Rewrite to the simplest equivalent form (graph_rewrite with pm_symbolic()).
UOp simplify(const UOp& u);
// Replace nodes by other nodes everywhere in the graph, in one pass, parents first: a node in the
// map is replaced whole and its replacement is not visited again ({x: x*2} doubles x once).
UOp substitute(const UOp& u, const std::unordered_map<UOp, UOp, UOpHash>& with);
// The truth of a bool expression when its bounds decide it, else `default_value`.
bool resolve(const UOp& cond, bool default_value = true);

}  // namespace vkgrad
