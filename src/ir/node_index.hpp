// ir (internal): NodeIndex numbers the nodes a graph walk meets, 0, 1, 2, ... in the order they
// are added, so per-node data can live in plain vectors. It is the memo of toposort,
// graph_rewrite, evaluate and print: open addressing over node addresses, with no allocation
// per entry and no removal. It holds no reference: the walker keeps its nodes alive.
// Depends on uop.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/uop.hpp"

namespace vkgrad {

class NodeIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The number of `n`, or kNone when it was never added.
  uint32_t find(const UOpNode* n) const {
    if (size_ == 0) return kNone;
    for (size_t i = home(n);; i = (i + 1) & mask_) {
      if (slots_[i].node == n) return slots_[i].index;
      if (!slots_[i].node) return kNone;
    }
  }
  // The number of `n`, giving it the next number when it is new (then `*added` is true).
  uint32_t insert(const UOpNode* n, bool* added = nullptr) {
    if ((size_ + 1) * 8 > slots_.size() * 5) grow();  // load factor at most 5/8
    for (size_t i = home(n);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.node == n) {
        if (added) *added = false;
        return s.index;
      }
      if (!s.node) {
        s = {n, size_};
        if (added) *added = true;
        return size_++;
      }
    }
  }
  uint32_t size() const { return size_; }

 private:
  struct Slot {
    const UOpNode* node = nullptr;
    uint32_t index = 0;
  };
  size_t home(const UOpNode* n) const {  // Fibonacci hashing of the address
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(n) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    size_t cap = old.empty() ? 64 : old.size() * 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    shift_ = 64 - __builtin_ctzll(cap);
    for (const Slot& s : old) {
      if (!s.node) continue;
      size_t i = home(s.node);
      while (slots_[i].node) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  uint32_t size_ = 0;
};

}  // namespace vkgrad
