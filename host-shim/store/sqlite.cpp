#include "store/sqlite.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cove::shim::sqlite {

Connection::Connection(const std::string& path) {
  // SQLite would create the file with the umask's mode; it holds key hashes and sandbox
  // environment variables, so it is created private first. The -wal and -shm files that SQLite
  // creates later copy the database file's permissions.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw StoreError(std::string("cannot create the state database: ") + std::strerror(errno));
  ::close(fd);
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open the state database: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(std::string_view what) const {
  throw StoreError(std::string(what) + ": " + sqlite3_errmsg(db_));
}

void Connection::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw StoreError("state database: " + msg);
  }
}

int64_t Connection::query_int(const char* sql) {
  Statement st(*this, sql);
  if (!st.step()) throw StoreError("state database: query returned no row");
  return st.integer(0);
}

Statement::Statement(Connection& conn, const char* sql) : conn_(conn) {
  if (sqlite3_prepare_v3(conn.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
    conn.fail("state database: cannot prepare a statement");
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::bind(int index, std::string_view text) {
  if (sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT) != SQLITE_OK) {
    conn_.fail("state database: bind failed");
  }
}

void Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) conn_.fail("state database: bind failed");
}

void Statement::bind_null(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) conn_.fail("state database: bind failed");
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  conn_.fail("state database");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::text(int column) const {
  auto* p = sqlite3_column_text(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Transaction::Transaction(Connection& conn) : conn_(conn) { conn_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(conn_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  conn_.exec("COMMIT");
  done_ = true;
}

}  // namespace cove::shim::sqlite
