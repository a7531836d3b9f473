// What makes an SQLite file a tiletune database, and how its schema is created and upgraded.
#pragma once

#include <cstdint>

#include "sqlite.hpp"

namespace tiletune::schema {

// Store::schema_version repeats this for the public header; the client library cannot link the store.
inline constexpr int current_version = 4;
// PRAGMA application_id of every tiletune database: "TTdb".
inline constexpr std::int64_t application_id = 0x54546462;

// Checks the schema version and application id in the file's header before SQLite opens it, so that a file
// we refuse is not given -wal and -shm companions. Throws as check_known does; a missing file passes.
void check_file_header(const std::filesystem::path& path);

// Reads (never writes) the open database and returns its schema version: 0 for a new, empty database,
// otherwise 1..current_version. Throws StoreError (one line, without the path) when the file is another
// application's database, holds tables that are not tiletune's, or has a newer schema than this build knows.
int check_known(const sql::Db& db);
// Throws StoreError, one line with SQLite's first complaint, unless PRAGMA integrity_check says "ok": a
// writer adding to a damaged file (one cut short, say) would report success into a file that holds less than
// it says.
void check_integrity(const sql::Db& db);

// Creates or upgrades the schema to current_version in one BEGIN IMMEDIATE transaction.
// Implemented in schema.cpp (the store library); the read-only client never migrates.
void migrate(const sql::Db& db);

}  // namespace tiletune::schema
