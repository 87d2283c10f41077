// Downstream consumer of an installed vkgrad: public headers and vkgrad::vkgrad only.
#include <cstdio>
#include <string>
#include <vkgrad/vkgrad.hpp>

int main() {
  namespace dt = vkgrad::dtypes;
  int failures = 0;

  const auto promoted = dt::least_upper_dtype(dt::int8, dt::uint8);
  if (!(promoted == dt::int16)) {
    std::printf("least_upper_dtype(int8, uint8) is %s, expected int16\n",
                std::string(promoted.name()).c_str());
    ++failures;
  }

  const std::string name(dt::float32.name());
  if (name != "float32") {
    std::printf("float32.name() is \"%s\", expected \"float32\"\n", name.c_str());
    ++failures;
  }

  const long long itemsize = static_cast<long long>(dt::float16.itemsize());
  if (itemsize != 2) {
    std::printf("float16.itemsize() is %lld, expected 2\n", itemsize);
    ++failures;
  }

  if (failures == 0) std::printf("vkgrad consumer: ok\n");
  return failures == 0 ? 0 : 1;
}
