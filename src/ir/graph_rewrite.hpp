// ir: graph_rewrite, the one engine that applies a PatternMatcher to a whole graph, to a fixed
// point, memoized, with an explicit stack (graphs of any depth), and with cycle detection that
// names the rules involved. Also `run_pass`, which checks the result against the spec when
// SPEC=1. Depends on uop and upat.
#pragma once

#include <string_view>
#include <type_traits>

#include "ir/upat.hpp"

namespace vkgrad {

struct RewriteOptions {
  // Default (children first, "bottom-up"): a node's sources are rewritten before the node, and
  // the rewritten node is rewritten again until no rule applies. With parents_first
  // ("top-down", tinygrad's bottom_up=True), a node is rewritten to a fixed point before its
  // sources are visited, and again after its sources change.
  bool parents_first = false;
  // Rewrites allowed at one node, and rewrites waiting on the result of another rewrite, before
  // the rewrite is reported as non-terminating.
  int max_rewrites_per_node = 10000;
  std::string_view name = "graph_rewrite";  // for error messages
};

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr,
                  const RewriteOptions& options = {});
// The context by reference (a pointer goes to the overload above, not here as its address).
template <class Ctx>
requires(!std::is_pointer_v<Ctx>) UOp graph_rewrite(const UOp& root, const PatternMatcher& pm,
                                                    Ctx& ctx, const RewriteOptions& options = {}) {
  return graph_rewrite(root, pm, static_cast<void*>(&ctx), options);
}

// A named pass: graph_rewrite, then (when SPEC=1 in the environment) verify the result with
// the spec, naming the pass in any error.
UOp run_pass(std::string_view name, const UOp& root, const PatternMatcher& pm, void* ctx = nullptr,
             RewriteOptions options = {});

}  // namespace vkgrad
