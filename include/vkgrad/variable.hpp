// Public: Variable, a symbolic size (tinygrad's Variable). A tensor axis made symbolic with
// Tensor::symbolic(axis, v) has the size v is bound to; the kernels computed from it read that
// size when they run instead of having it compiled in, so a Jit capture (and every kernel in
// it) serves every size between v's bounds. Depends on error.hpp only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vkgrad {

class Variable {
 public:
  // An integer named `name` from `min` to `max` inclusive (0 <= min <= max); Error otherwise.
  // One name names one variable: a second Variable of that name must have the same bounds.
  Variable(std::string name, int64_t min, int64_t max);

  // This variable bound to `value` (ShapeError outside [min, max]).
  Variable bind(int64_t value) const;

  const std::string& name() const { return name_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  std::optional<int64_t> value() const { return value_; }

 private:
  std::string name_;
  int64_t min_ = 0, max_ = 0;
  std::optional<int64_t> value_;
};

}  // namespace vkgrad
