// engine: the BEAM cache in SQLite (see beam_cache.hpp).
#include "engine/beam_cache.hpp"

#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "codegen/disk_cache.hpp"

namespace vkgrad::engine {
namespace {

namespace fs = std::filesystem;

// Rows written by another library version are not read (their kernels may lower differently),
// nor those of an earlier search space: the suffix counts its changes (beam2: Winograd's
// GEMM(3, rows) joined the CPU's candidates; beam3: paths from the empty list are followed
// while each step pays, so winners lie beyond the neighbourhood of the heuristics' list; beam4:
// a GEMM's blocking, BLOCK, follows its variants; beam5: the plan's tile is four vectors wide
// where that pads no more columns, with the k block for it, so BLOCK(0, 2) is a choice too and
// the earlier winners were measured against other heuristics; beam6: A is read in place up to
// 8 strips of two vectors whatever the tile's width, so a list with GEMM(0, ·) may read A
// otherwise than when it was timed).
constexpr const char* kVersion = VKGRAD_VERSION "/beam6";

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS tuned ("
    " device TEXT NOT NULL, kernel TEXT NOT NULL, version TEXT NOT NULL, opts TEXT NOT NULL,"
    " seconds REAL, heuristic_seconds REAL, PRIMARY KEY (device, kernel))";

// One connection per process, reopened when the cache root changes.
struct Connection {
  std::mutex mu;
  fs::path path;
  sqlite3* db = nullptr;

  void close() {
    if (db != nullptr) sqlite3_close(db);
    db = nullptr;
    path.clear();
  }
  void warn(const fs::path& p, const char* what) const {
    std::fprintf(stderr, "vkgrad: warning: BEAM cache %s: %s\n", p.c_str(), what);
  }
  // Open the database under the cache root (creating it only when `create`); false when there
  // is none or it cannot be used. A corrupt file is removed and made again once.
  bool ready(bool create) {
    const fs::path p = cache_root() / "beam.db";
    std::error_code ec;
    // (a file removed under an open connection is not the cache any more)
    if (db != nullptr && path == p && fs::exists(p, ec)) return true;
    close();
    if (!create && !fs::exists(p, ec)) return false;
    for (int attempt = 0; attempt < 2; ++attempt) {
      fs::create_directories(p.parent_path(), ec);
      int rc = sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
      if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 20000);  // another process writing: wait for it
        rc = sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr);
      }
      if (rc == SQLITE_OK) {
        path = p;
        return true;
      }
      const std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      close();
      if (attempt > 0 || !(rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)) {
        warn(p, msg.c_str());
        return false;
      }
      warn(p, (msg + "; rebuilding it").c_str());
      for (const char* suffix : {"", "-journal", "-wal", "-shm"})
        fs::remove(fs::path(p.string() + suffix), ec);
    }
    return false;
  }
  // After a failed statement: a corrupt database is dropped, to be rebuilt by the next write.
  void failed(int rc) {
    const fs::path p = path;
    warn(p, sqlite3_errmsg(db));
    close();
    std::error_code ec;
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) fs::remove(p, ec);
  }
};

Connection& connection() {
  static Connection* c = new Connection();
  return *c;
}

struct Statement {
  sqlite3_stmt* s = nullptr;
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~Statement() { sqlite3_finalize(s); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void text(int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.c_str(), -1, SQLITE_TRANSIENT);
  }
};

}  // namespace

bool beam_cache_present() {
  std::error_code ec;
  return fs::exists(cache_root() / "beam.db", ec);
}

std::optional<std::vector<Opt>> beam_cache_get(const std::string& device,
                                               const std::string& kernel) {
  Connection& c = connection();
  std::lock_guard lock(c.mu);
  if (!c.ready(false)) return std::nullopt;
  Statement st(c.db, "SELECT opts FROM tuned WHERE device = ?1 AND kernel = ?2 AND version = ?3");
  if (st.s == nullptr) {
    c.failed(sqlite3_errcode(c.db));
    return std::nullopt;
  }
  st.text(1, device);
  st.text(2, kernel);
  st.text(3, kVersion);
  const int rc = sqlite3_step(st.s);
  if (rc == SQLITE_ROW) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 0));
    return t != nullptr ? parse_opts(t) : std::nullopt;
  }
  if (rc != SQLITE_DONE) c.failed(rc);
  return std::nullopt;
}

void beam_cache_put(const std::string& device, const std::string& kernel,
                    const std::vector<Opt>& opts, double seconds, double heuristic_seconds) {
  Connection& c = connection();
  std::lock_guard lock(c.mu);
  if (!c.ready(true)) return;
  Statement st(c.db, "INSERT OR REPLACE INTO tuned VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (st.s == nullptr) {
    c.failed(sqlite3_errcode(c.db));
    return;
  }
  st.text(1, device);
  st.text(2, kernel);
  st.text(3, kVersion);
  st.text(4, to_string(opts));
  sqlite3_bind_double(st.s, 5, seconds);
  sqlite3_bind_double(st.s, 6, heuristic_seconds);
  const int rc = sqlite3_step(st.s);
  if (rc != SQLITE_DONE) c.failed(rc);
}

}  // namespace vkgrad::engine
