// Rules of the mul family (see symbolic.hpp).
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {

std::vector<Rule> rules_mul() { return {}; }

}  // namespace vkgrad
