// ir: DEBUG (see debug.hpp).
#include "ir/debug.hpp"

#include <cstdlib>

namespace vkgrad {

int debug_level() {
  static const int level = [] {
    const char* v = std::getenv("DEBUG");
    return v != nullptr && *v != '\0' ? std::atoi(v) : 0;
  }();
  return level;
}

}  // namespace vkgrad
