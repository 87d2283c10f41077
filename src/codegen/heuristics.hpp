// codegen: the heuristics' rules (heuristics.cpp lists them in order; heuristics_c.cpp and
// heuristics_gpu.cpp hold them). A rule reads the kernel's ranges, the target's facts and its
// tuning profile, and either gives the kernel's Opt list or passes it to the next rule. Internal
// to codegen: the engine and the tests see heuristic_opts and heuristic_rule (opt.hpp).
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "codegen/opt.hpp"
#include "codegen/ranges.hpp"
#include "codegen/target.hpp"

namespace vkgrad::heuristics {

// A kernel as the rules see it.
struct Kernel {
  Kernel(const UOp& ast, const Target& target);

  const UOp& ast;
  const Target& target;
  const TuningProfile& tuning;
  RangeInfo info;
  int G = 0, R = 0;                  // output and reduce axes
  int64_t size(int g) const;         // the output axis' size (range_size)
  int64_t reduce_size(int r) const;  // the reduce axis' size
  const UOp& last() const { return info.globals.back(); }
  // A loaded factor of a summed product ignores the innermost output axis (reuses_product): the
  // kernel is matmul-like along its columns. False without output axes; computed once, for the
  // rules that ask.
  bool reuses_columns() const;

 private:
  mutable std::optional<bool> reuses_columns_;
};

// A rule's answer: the Opt list, or nothing where the rule passes the kernel on.
using Answer = std::optional<std::vector<Opt>>;
struct Rule {
  const char* name;
  Answer (*apply)(const Kernel&);
};

// The largest of `options` that divides `size` and is less than it, else 1.
int64_t pick_factor(int64_t size, std::initializer_list<int64_t> options);
// The values an invocation computes under `opts`: the product of their amounts.
int64_t values_of(const std::vector<Opt>& opts);

// heuristics_c.cpp: the C targets' rules, in order.
Answer gemm_or_winograd(const Kernel& k);
Answer short_elementwise_axes(const Kernel& k);
Answer register_tile(const Kernel& k);
Answer shared_index_math(const Kernel& k);
Answer matvec(const Kernel& k);
Answer split_accumulators(const Kernel& k);

// heuristics_gpu.cpp: the threads targets' rules, in order.
Answer elementwise_vectors(const Kernel& k);
Answer grouped_reduction(const Kernel& k);
Answer plain_reduction(const Kernel& k);
Answer matmul_tile(const Kernel& k);

}  // namespace vkgrad::heuristics
