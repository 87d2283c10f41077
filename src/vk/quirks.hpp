// vk: driver bugs the code generator works around. Each is found by a probe — a tiny shader run
// on the device once per physical device and process, when the first runtime on it opens — or
// forced on or off with VKGRAD_VK_QUIRKS. Depends on execute.hpp (the probe runs on the device's
// queue and memory) and compile.hpp; the probes' compiles and pipelines are not counted.
#pragma once

#include <string>

#include "vk/execute.hpp"

namespace vkgrad::vk {

struct Quirks {
  // The driver's optimizer folds double(float(x)) inside one shader back to x, `precise` or
  // not (lavapipe in Mesa 25.0): float64 -> float32 casts are rendered so that the rounding
  // cannot be folded away (codegen Target::opaque_narrowing).
  bool narrowing_cast = false;
  // The driver's optimizer gets an ordered compare of a widened 32-bit integer with a 64-bit
  // constant wrong (int64_t(i) < 1l is always false in lavapipe of Mesa 22.3): 32 -> 64-bit
  // integer casts are rendered so that the widening cannot be folded into the compare
  // (codegen Target::opaque_widening).
  bool widening_compare = false;
  // The driver's float32 division is not correctly rounded (Vulkan allows 2.5 ULP; NVIDIA's
  // -100 / 7 is an ULP off): decompose refines each quotient (codegen Target::exact_division).
  bool inexact_division = false;
  std::string found;  // how each was decided, for describe(): "narrowing_cast (probe: ...)"
};

// Parses VKGRAD_VK_QUIRKS (comma list: `name` forces a quirk on, `-name` off; the rest are
// probed) and probes the others on `ex`'s device. Throws DeviceError naming the known quirks
// on an unknown name.
Quirks find_quirks(Executor& ex);

}  // namespace vkgrad::vk
