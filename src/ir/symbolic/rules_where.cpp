// Rules of the where family (see symbolic.hpp).
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {

std::vector<Rule> rules_where() { return {}; }

}  // namespace vkgrad
