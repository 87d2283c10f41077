// engine: the BEAM cache in SQLite (see beam_cache.hpp).
#include "engine/beam_cache.hpp"

#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <vkgrad/error.hpp>

#include "runtime/disk_cache.hpp"

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

// Runs `sql` in order on the cache's connection with `file` attached as `ext` (?1 bound to this
// library version where a statement has it); returns the last statement's changes, or, for a
// SELECT, its first column. An error is thrown as `E`, naming the file.
template <class E>
int64_t with_attached(Connection& c, const std::string& file, const char* what,
                      std::initializer_list<const char*> sql) {
  {
    Statement attach(c.db, "ATTACH DATABASE ?1 AS ext");
    attach.text(1, file);
    if (attach.s == nullptr || sqlite3_step(attach.s) != SQLITE_DONE)
      throw E(std::string("BEAM tuning table ") + file + ": " + sqlite3_errmsg(c.db));
  }
  int64_t result = 0;
  std::string error;
  for (const char* q : sql) {
    Statement st(c.db, q);
    if (st.s != nullptr && sqlite3_bind_parameter_count(st.s) > 0) st.text(1, kVersion);
    const int rc = st.s != nullptr ? sqlite3_step(st.s) : sqlite3_errcode(c.db);
    if (rc == SQLITE_ROW) {
      result = sqlite3_column_int64(st.s, 0);
    } else if (rc == SQLITE_DONE) {
      result = sqlite3_changes(c.db);
    } else {
      error = sqlite3_errmsg(c.db);
      break;
    }
  }
  sqlite3_exec(c.db, "DETACH DATABASE ext", nullptr, nullptr, nullptr);
  if (!error.empty())
    throw E(std::string("BEAM tuning table ") + file + ": " + what + ": " + error);
  return result;
}

}  // namespace

size_t beam_cache_export(const std::string& file) {
  Connection& c = connection();
  std::lock_guard lock(c.mu);
  if (!c.ready(true))
    throw Error("BEAM tuning table " + file + ": the BEAM cache cannot be opened");
  std::error_code ec;
  fs::remove(file, ec);
  return static_cast<size_t>(with_attached<Error>(
      c, file, "writing it",
      {"CREATE TABLE ext.tuned (device TEXT NOT NULL, kernel TEXT NOT NULL, version TEXT NOT "
       "NULL, opts TEXT NOT NULL, seconds REAL, heuristic_seconds REAL, PRIMARY KEY (device, "
       "kernel))",
       "INSERT INTO ext.tuned SELECT * FROM main.tuned WHERE version = ?1"}));
}

BeamImport beam_cache_import(const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw FormatError("BEAM tuning table " + file + ": no such file");
  Connection& c = connection();
  std::lock_guard lock(c.mu);
  if (!c.ready(true))
    throw Error("BEAM tuning table " + file + ": the BEAM cache cannot be opened");
  BeamImport counts;
  counts.other_version = static_cast<size_t>(with_attached<FormatError>(
      c, file, "reading it", {"SELECT COUNT(*) FROM ext.tuned WHERE version != ?1"}));
  counts.imported = static_cast<size_t>(with_attached<FormatError>(
      c, file, "reading it",
      {"INSERT OR REPLACE INTO main.tuned SELECT device, kernel, version, opts, seconds, "
       "heuristic_seconds FROM ext.tuned WHERE version = ?1"}));
  return counts;
}

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
