// graph_rewrite: an explicit-stack, memoized fixed-point rewriter.
//
// Each node goes through three stages on the stack:
//   0  (parents_first: rewrite the node itself to a fixed point) then visit its sources;
//   1  its sources are final: rebuild it from them; if that changed it, or a rule rewrites it,
//      the new node is processed in turn and the node waits in stage 2;
//   2  take the final form of what it became.
// A node met again while it is still waiting for its own result is a cycle: the rules that
// produced the nodes in between are named in the error.
#include "ir/graph_rewrite.hpp"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>

#include "ir/spec.hpp"

namespace vkgrad {
namespace {

struct Frame {
  UOp n;    // the node being rewritten (the memo key)
  UOp cur;  // what it currently is
  int stage;
  int rule;  // rule that produced `cur` from its predecessor, -1 if none
};

class Rewriter {
 public:
  Rewriter(const PatternMatcher& pm, void* ctx, const RewriteOptions& o)
      : pm_(pm), ctx_(ctx), opt_(o) {}

  UOp run(const UOp& root) {
    stack_.push_back({root, root, 0, -1});
    while (!stack_.empty()) {
      Frame f = std::move(stack_.back());
      stack_.pop_back();
      const UOpNode* key = f.n.get();
      if (f.stage == 0) {
        if (done_.count(key)) continue;
        if (!active_.insert(key).second) cycle(f.n);
        if (opt_.parents_first) fixed_point(f);
        const UOp cur = f.cur;
        stack_.push_back({f.n, cur, 1, f.rule});
        const auto& src = cur.src();
        for (size_t i = src.size(); i-- > 0;)
          if (!done_.count(src[i].get())) stack_.push_back({src[i], src[i], 0, -1});
      } else if (f.stage == 1) {
        std::vector<UOp> new_src;
        bool changed = false;
        new_src.reserve(f.cur.src().size());
        for (const UOp& s : f.cur.src()) {
          const UOp& r = done_.at(s.get());
          changed |= r != s;
          new_src.push_back(r);
        }
        if (changed) {
          UOp rebuilt = f.cur.replace(std::move(new_src));
          push_result(f.n, rebuilt, -1);
          continue;
        }
        if (!opt_.parents_first) {
          int ri = -1;
          UOp r = pm_.rewrite(f.cur, ctx_, &ri);
          if (r) {
            push_result(f.n, r, ri);
            continue;
          }
        }
        finish(f.n, f.cur);
      } else {
        finish(f.n, done_.at(f.cur.get()));
      }
    }
    return done_.at(root.get());
  }

 private:
  // `n` becomes `r` (through rule `ri`); process `r` and then take its final form for `n`.
  void push_result(const UOp& n, const UOp& r, int ri) {
    if (r == n) {
      finish(n, r);
      return;
    }
    if (auto it = done_.find(r.get()); it != done_.end()) {
      finish(n, it->second);
      return;
    }
    stack_.push_back({n, r, 2, ri});
    stack_.push_back({r, r, 0, -1});
  }

  void finish(const UOp& n, const UOp& final_form) {
    active_.erase(n.get());
    done_.emplace(n.get(), final_form);
    keep_.push_back(n);  // memo keys must outlive the map
    if (final_form != n && !done_.count(final_form.get())) {
      // A final form is its own fixed point.
      done_.emplace(final_form.get(), final_form);
      keep_.push_back(final_form);
    }
  }

  void fixed_point(Frame& f) {
    std::unordered_set<const UOpNode*> seen{f.cur.get()};
    std::vector<int> rules;
    for (int count = 0;; ++count) {
      int ri = -1;
      UOp r = pm_.rewrite(f.cur, ctx_, &ri);
      if (!r) return;
      rules.push_back(ri);
      if (!seen.insert(r.get()).second || count >= opt_.max_rewrites_per_node)
        throw InternalError(fmt::format("{}: rewrite does not terminate at {} (rules: {})",
                                        opt_.name, op_name(f.n.op()), rule_names(rules)));
      f.cur = std::move(r);
      f.rule = ri;
      if (auto it = done_.find(f.cur.get()); it != done_.end()) {
        f.cur = it->second;
        return;
      }
    }
  }

  [[noreturn]] void cycle(const UOp& n) {
    std::vector<int> rules;
    for (size_t i = stack_.size(); i-- > 0;) {
      if (stack_[i].stage == 2 && stack_[i].rule >= 0) rules.push_back(stack_[i].rule);
      if (stack_[i].n == n && stack_[i].stage != 0) break;
    }
    throw InternalError(fmt::format("{}: rewrite cycle through {} (rules: {})", opt_.name,
                                    op_name(n.op()), rule_names(rules)));
  }

  std::string rule_names(const std::vector<int>& rules) const {
    std::string s;
    for (int ri : rules) {
      if (ri < 0) continue;
      if (!s.empty()) s += ", ";
      s += pm_.rule_at(ri).name;
    }
    return s.empty() ? "rebuild" : s;
  }

  const PatternMatcher& pm_;
  void* ctx_;
  const RewriteOptions& opt_;
  std::vector<Frame> stack_;
  std::unordered_map<const UOpNode*, UOp> done_;
  std::unordered_set<const UOpNode*> active_;
  std::vector<UOp> keep_;
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
