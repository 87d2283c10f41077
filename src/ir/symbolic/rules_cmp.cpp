// Rules of the cmp family (see symbolic.hpp).
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {

std::vector<Rule> rules_cmp() { return {}; }

}  // namespace vkgrad
