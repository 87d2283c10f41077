// engine: the backends this build has, registered with the runtime registry on first use. The
// only file in the engine that names a backend. Registering here rather than from a static
// initializer in each backend matters: vkgrad is a static archive, and the linker drops an
// object file nothing references, together with any registration it would have run.
#include <cstdlib>
#include <mutex>

#include "cpu/runtime.hpp"
#include "engine/beam.hpp"
#include "engine/internal.hpp"
#include "runtime/registry.hpp"
#include "vk/vk.hpp"

namespace vkgrad::engine {

void register_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A process that searches does not write Mesa's shader disk cache (unless told otherwise):
    // its writer thread compresses each new candidate's code in the background, beside the
    // kernels being timed, and on lavapipe made every time of a search 10-50% long and the
    // ranking of its lists a different one (read once, when a Mesa driver opens).
    if (beam_width() > 0) ::setenv("MESA_SHADER_CACHE_DISABLE", "true", /*overwrite=*/0);
    register_backend(cpu::backend());  // first: device names in messages start with "CPU"
    register_backend(vk::backend());
  });
}

}  // namespace vkgrad::engine
