// Rules of the divmod family (see symbolic.hpp).
#include "ir/symbolic/symbolic.hpp"

namespace vkgrad {

std::vector<Rule> rules_divmod() { return {}; }

}  // namespace vkgrad
