// graph_rewrite: an explicit-stack, memoized fixed-point rewriter.
//
// Each node goes through three stages on the stack:
//   0  (parents_first: rewrite the node itself to a fixed point) then visit its sources;
//   1  its sources are final: rebuild it from them; if that changed it, or a rule rewrites it,
//      the new node is processed in turn and the node waits in stage 2;
//   2  take the final form of what it became.
// A node met again while it is still waiting for its own result is a cycle: the rules that
// produced the nodes in between are named in the error. A rewrite that never meets an old node
// again (c -> c+1 -> ...) is stopped by counting: rewrites waiting on the result of another
// rewrite (`depth`), and rewrites at one node while parents_first finds its fixed point.
#include "ir/graph_rewrite.hpp"

#include <fmt/format.h>

#include <unordered_set>
#include <vkgrad/error.hpp>

#include "ir/node_index.hpp"
#include "ir/spec.hpp"

namespace vkgrad {
namespace {

struct Frame {
  UOp n;    // the node being rewritten (the memo key)
  UOp cur;  // what it currently is
  int stage;
  int rule;   // rule that produced `cur` from its predecessor, -1 if none
  int depth;  // rewrites (stage-2 frames) below this frame that wait for it
};

// One entry per node met: the node itself (so its address is never reused while it is a key)
// and its final form, which stays null while the node is being rewritten.
struct Memo {
  UOp node;
  UOp result;
};

class Rewriter {
 public:
  Rewriter(const PatternMatcher& pm, void* ctx, const RewriteOptions& o)
      : pm_(pm), ctx_(ctx), opt_(o) {}

  UOp run(const UOp& root) {
    stack_.push_back({root, root, 0, -1, 0});
    while (!stack_.empty()) {
      Frame f = std::move(stack_.back());
      stack_.pop_back();
      if (f.stage == 0) {
        bool fresh = false;
        uint32_t i = index_.insert(f.n.get(), &fresh);
        if (!fresh) {
          if (memo_[i].result) continue;  // already rewritten
          cycle(f.n);                     // still waiting for its own result
        }
        memo_.push_back({f.n, UOp()});
        if (opt_.parents_first) fixed_point(f);
        const UOp cur = f.cur;
        stack_.push_back({f.n, cur, 1, f.rule, f.depth});
        const auto& src = cur.src();
        for (size_t k = src.size(); k-- > 0;)
          if (!done(src[k])) stack_.push_back({src[k], src[k], 0, -1, f.depth});
      } else if (f.stage == 1) {
        const auto& src = f.cur.src();
        size_t first_changed = 0;
        while (first_changed < src.size() && result(src[first_changed]) == src[first_changed])
          ++first_changed;
        if (first_changed < src.size()) {  // rebuild from the final sources
          std::vector<UOp> new_src(src.begin(), src.begin() + first_changed);
          new_src.reserve(src.size());
          for (size_t k = first_changed; k < src.size(); ++k) new_src.push_back(result(src[k]));
          push_result(f, f.cur.replace(std::move(new_src)), -1);
          continue;
        }
        if (!opt_.parents_first) {
          int ri = -1;
          UOp r = pm_.rewrite(f.cur, ctx_, &ri);
          if (r) {
            push_result(f, r, ri);
            continue;
          }
        }
        finish(f.n, f.cur);
      } else {
        finish(f.n, result(f.cur));
      }
    }
    return result(root);
  }

 private:
  // The final form of `u`, null if it has none yet.
  const UOp& result(const UOp& u) const {
    static const UOp none;
    uint32_t i = index_.find(u.get());
    return i == NodeIndex::kNone ? none : memo_[i].result;
  }
  bool done(const UOp& u) const { return static_cast<bool>(result(u)); }

  // `f.n` becomes `r` (through rule `ri`); process `r`, then take its final form for `f.n`.
  void push_result(const Frame& f, const UOp& r, int ri) {
    const UOp n = f.n;
    if (r == n) {
      finish(n, r);
      return;
    }
    if (const UOp& final_form = result(r)) {
      finish(n, final_form);
      return;
    }
    stack_.push_back({n, r, 2, ri, f.depth});
    if (f.depth >= opt_.max_rewrites_per_node) not_terminating(n);
    stack_.push_back({r, r, 0, -1, f.depth + 1});
  }

  void finish(const UOp& n, const UOp& final_form) {
    memo_[index_.find(n.get())].result = final_form;
    if (final_form == n) return;
    // A final form is its own fixed point.
    bool fresh = false;
    uint32_t i = index_.insert(final_form.get(), &fresh);
    if (fresh)
      memo_.push_back({final_form, final_form});
    else if (!memo_[i].result)
      cycle(final_form);  // n became a node that is still waiting for its own result
  }

  void fixed_point(Frame& f) {
    int ri = -1;
    UOp r = pm_.rewrite(f.cur, ctx_, &ri);
    if (!r) return;  // the common case: nothing to remember
    std::unordered_set<const UOpNode*> seen{f.cur.get()};
    std::vector<UOp> chain{f.cur};  // keeps the nodes in `seen` alive, so no address is reused
    std::vector<int> rules;
    for (int count = 0; r; ++count) {
      rules.push_back(ri);
      if (!seen.insert(r.get()).second || count >= opt_.max_rewrites_per_node)
        throw InternalError(fmt::format("{}: rewrite does not terminate at {} (rules: {})",
                                        opt_.name, op_name(f.n.op()), rule_names(rules)));
      chain.push_back(r);
      f.cur = std::move(r);
      f.rule = ri;
      if (const UOp& final_form = result(f.cur)) {
        f.cur = final_form;
        return;
      }
      r = pm_.rewrite(f.cur, ctx_, &ri);
    }
  }

  // The rules of the rewrites waiting on the stack, from the top down to `n`'s own frame (or
  // to the bottom when `n` is null).
  std::vector<int> pending_rules(const UOpNode* n) const {
    std::vector<int> rules;
    for (size_t i = stack_.size(); i-- > 0;) {
      // Stage 1 holds the rule of a parents_first rewrite, stage 2 that of any other.
      if (stack_[i].stage != 0 && stack_[i].rule >= 0) rules.push_back(stack_[i].rule);
      if (stack_[i].n.get() == n && stack_[i].stage != 0) break;
    }
    return rules;
  }

  [[noreturn]] void cycle(const UOp& n) {
    throw InternalError(fmt::format("{}: rewrite cycle through {} (rules: {})", opt_.name,
                                    op_name(n.op()), rule_names(pending_rules(n.get()))));
  }

  [[noreturn]] void not_terminating(const UOp& n) {
    throw InternalError(fmt::format(
        "{}: rewrite does not terminate at {}: more than {} nested rewrites (rules: {})", opt_.name,
        op_name(n.op()), opt_.max_rewrites_per_node, rule_names(pending_rules(nullptr))));
  }

  // Each rule once, in order of first appearance.
  std::string rule_names(const std::vector<int>& rules) const {
    std::string s;
    std::unordered_set<int> named;
    for (int ri : rules) {
      if (ri < 0 || !named.insert(ri).second) continue;
      if (!s.empty()) s += ", ";
      s += pm_.rule_at(ri).name;
    }
    return s.empty() ? "rebuild" : s;
  }

  const PatternMatcher& pm_;
  void* ctx_;
  const RewriteOptions& opt_;
  std::vector<Frame> stack_;
  NodeIndex index_;         // node -> its number in memo_
  std::vector<Memo> memo_;  // by number
};

}  // namespace

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx,
                  const RewriteOptions& options) {
  return Rewriter(pm, ctx, options).run(root);
}

UOp run_pass(std::string_view name, const UOp& root, const PatternMatcher& pm, void* ctx,
             RewriteOptions options) {
  options.name = name;
  UOp out = graph_rewrite(root, pm, ctx, options);
  if (spec_enabled()) verify(out, name);
  return out;
}

}  // namespace vkgrad
