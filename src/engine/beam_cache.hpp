// engine: the BEAM cache — each searched kernel's winning Opt list on disk, so that a tuned model
// stays fast in every later process (BEAM=0 included).
//
// SQLite, in <cache root>/beam.db (runtime/disk_cache.hpp: VKGRAD_CACHE_DIR, ...): one row per
// (device identity, kernel), the kernel as its AST's deterministic text (buffer identity is not
// in a kernel AST: slots are numbered), the device as Runtime::identity() (device, driver or
// compiler, Target), and the library version in a column that must match. SQLite's own locking
// (with a busy timeout) makes processes that tune at once safe, and its journal makes a write
// that a killed process left half done invisible. A file that is not a database, or a corrupt
// one, is removed and rebuilt, with a warning.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/opt.hpp"

namespace vkgrad::engine {

// Whether a cache file exists under the cache root (one stat): without one, compiles that do
// not search need not build a kernel's key.
bool beam_cache_present();

// The cached list for this kernel on this device, or nothing (absent, unreadable, another
// library version).
std::optional<std::vector<Opt>> beam_cache_get(const std::string& device,
                                               const std::string& kernel);

// Records a search's winner (replacing an earlier one). Failures are warnings, never errors.
void beam_cache_put(const std::string& device, const std::string& kernel,
                    const std::vector<Opt>& opts, double seconds, double heuristic_seconds);

// A tuning table: the cache's rows of this library version, written to `file` as a database of
// the cache's own schema (replacing what it held), for another machine's or process's cache.
// Returns the rows written; throws Error naming the file where it cannot be written.
size_t beam_cache_export(const std::string& file);
// Reads a tuning table into the cache, its rows replacing the cache's for the same device and
// kernel; rows of another library version are skipped. Throws FormatError naming the file where
// it is no such table (missing, not a database, or without the cache's table).
struct BeamImport {
  size_t imported = 0, other_version = 0;
};
BeamImport beam_cache_import(const std::string& file);

}  // namespace vkgrad::engine
