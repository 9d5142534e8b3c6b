#pragma once
// A thin RAII layer over the SQLite C API: a connection and prepared statements with typed binds.
// Errors throw StoreError carrying SQLite's message, which names tables and columns but never the
// bound values (keys, tokens and metadata stay out of logs).
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/store.hpp"

namespace cove::shim::sqlite {

class Connection {
 public:
  // Opens (creating if needed) `path`. The file is created with mode 0600 before SQLite sees it.
  explicit Connection(const std::string& path);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  void exec(const char* sql);                 // statements without parameters or results
  int64_t query_int(const char* sql);         // first column of the first row
  [[noreturn]] void fail(std::string_view what) const;  // throws StoreError with the last error
  int changes() const { return sqlite3_changes(db_); }

 private:
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(Connection& conn, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQL (?1, ?2…).
  void bind(int index, std::string_view text);
  void bind(int index, int64_t value);
  void bind_null(int index);
  // Steps once: true when a row is available, false when done. Throws on error.
  bool step();
  // Steps to completion (INSERT/UPDATE/DELETE).
  void run();
  // Clears bindings and rewinds; called before each use so a thrown step never leaks state.
  void reset();

  std::string text(int column) const;
  int64_t integer(int column) const;
  bool is_null(int column) const;

 private:
  Connection& conn_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE … COMMIT, rolled back if the scope is left by an exception.
class Transaction {
 public:
  explicit Transaction(Connection& conn);
  ~Transaction();
  void commit();

 private:
  Connection& conn_;
  bool done_ = false;
};

}  // namespace cove::shim::sqlite
