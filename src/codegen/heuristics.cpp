// codegen: the default Opt list of a kernel (what NOOPT=1 leaves out; a search starts here): a
// table of contents of rules, one per kernel class, tried in order. The first rule that gives a
// list chooses it (DEBUG>=3 names the rule). Each rule reads the kernel's ranges, the target's
// facts and its tuning profile (target.hpp, tuning.hpp); its comment gives the mechanism, and
// bench/RECORDS.md the measurements behind it. A device's own finds for one kernel belong in the
// BEAM cache, not here. A symbolic axis is never split: no factor divides an unknown size.
//
// C targets (heuristics_c.cpp; the C compiler's loop vectorizer takes an elementwise kernel's
// innermost loop):
//   gemm_or_winograd        a large float32 matmul-like kernel as a packed GEMM; a stride-1
//                           3 x 3 convolution with enough 2 x 2 output tiles as Winograd
//   short_elementwise_axes  an elementwise kernel's innermost axes too short to vectorize,
//                           upcast whole
//   register_tile           matmul-like: the innermost output axis and another reused one
//   shared_index_math       a short reduction whose index math divides: the axes it ignores
//                           share one evaluation of it
//   matvec                  a matrix-vector product: rows at a time, split accumulators
//   split_accumulators      any other reduction: several accumulators
// Threads targets (heuristics_gpu.cpp; one invocation per output, or per tile):
//   elementwise_vectors     vec4 accesses along the innermost axis
//   grouped_reduction       few outputs and long reductions: a workgroup of lanes per output
//   plain_reduction         a reduction that reuses no operand across outputs: vec4 loads
//   matmul_tile             matmul-like: a register tile, then the workgroup's lanes
#include "codegen/heuristics.hpp"

#include <span>

#include "codegen/ranges.hpp"

namespace vkgrad {
namespace heuristics {

Kernel::Kernel(const UOp& ast_, const Target& target_)
    : ast(ast_),
      target(target_),
      tuning(target_.tuning),
      info(collect_ranges(ast_)),
      G(static_cast<int>(info.globals.size())),
      R(static_cast<int>(info.reduces.size())) {}

bool Kernel::reuses_columns() const {
  if (!reuses_columns_) reuses_columns_ = G > 0 && reuses_product(ast, last());
  return *reuses_columns_;
}

int64_t Kernel::size(int g) const { return range_size(info.globals[static_cast<size_t>(g)]); }
int64_t Kernel::reduce_size(int r) const {
  return range_size(info.reduces[static_cast<size_t>(r)]);
}

int64_t pick_factor(int64_t size, std::initializer_list<int64_t> options) {
  for (int64_t f : options)
    if (size > f && size % f == 0) return f;
  return 1;
}

int64_t values_of(const std::vector<Opt>& opts) {
  int64_t values = 1;
  for (const Opt& o : opts) values *= o.amount;
  return values;
}

namespace {

constexpr Rule kCRules[] = {
    {"gemm_or_winograd", gemm_or_winograd},
    {"short_elementwise_axes", short_elementwise_axes},
    {"register_tile", register_tile},
    {"shared_index_math", shared_index_math},
    {"matvec", matvec},
    {"split_accumulators", split_accumulators},
};

constexpr Rule kThreadsRules[] = {
    {"elementwise_vectors", elementwise_vectors},
    {"grouped_reduction", grouped_reduction},
    {"plain_reduction", plain_reduction},
    {"matmul_tile", matmul_tile},
};

}  // namespace
}  // namespace heuristics

HeuristicChoice choose_heuristic(const UOp& ast, const Target& target) {
  const heuristics::Kernel k(ast, target);
  for (const heuristics::Rule& rule :
       target.threads ? std::span<const heuristics::Rule>(heuristics::kThreadsRules)
                      : std::span<const heuristics::Rule>(heuristics::kCRules))
    if (heuristics::Answer opts = rule.apply(k)) return {std::move(*opts), rule.name};
  return {{}, "none"};
}

std::vector<std::string> heuristic_rules(bool threads) {
  std::vector<std::string> names;
  for (const heuristics::Rule& rule :
       threads ? std::span<const heuristics::Rule>(heuristics::kThreadsRules)
               : std::span<const heuristics::Rule>(heuristics::kCRules))
    names.emplace_back(rule.name);
  return names;
}

std::vector<Opt> heuristic_opts(const UOp& ast, const Target& target) {
  return choose_heuristic(ast, target).opts;
}

}  // namespace vkgrad
