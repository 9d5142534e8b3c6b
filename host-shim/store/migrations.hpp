#pragma once
// The schema, as an ordered list of migrations. PRAGMA user_version records how many have been
// applied; opening a database applies the rest in one transaction. A migration, once released,
// is never edited: changes are new entries at the end.
#include "store/sqlite.hpp"

namespace cove::shim {

int latest_schema_version();
// Brings the database up to latest_schema_version(). Idempotent. A database written by a newer
// Cove (user_version beyond ours) is refused rather than misread.
void migrate(sqlite::Connection& conn);

}  // namespace cove::shim
