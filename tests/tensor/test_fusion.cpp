// placeholder until the suite lands
#include "harness.hpp"
