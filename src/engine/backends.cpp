// engine: the backends this build has, registered with the runtime registry on first use. The
// only file in the engine that names a backend. Registering here rather than from a static
// initializer in each backend matters: vkgrad is a static archive, and the linker drops an
// object file nothing references, together with any registration it would have run.
#include <mutex>

#include "cpu/runtime.hpp"
#include "engine/internal.hpp"
#include "runtime/registry.hpp"
#include "vk/vk.hpp"

namespace vkgrad::engine {

void register_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_backend(cpu::backend());  // first: device names in messages start with "CPU"
    register_backend(vk::backend());
  });
}

}  // namespace vkgrad::engine
