-- The migration runner's own bookkeeping (gateway/store/migrate.py, docs/decisions/0034). Its
-- table is not part of schema.sql: it records which versions of that schema a database went
-- through, and how each got there.

-- name: create_records
-- Created under the advisory lock, before anything is read: idempotent.
CREATE TABLE IF NOT EXISTS paygate_schema_migrations (
    version     int         PRIMARY KEY,
    name        text        NOT NULL,
    checksum    text        NOT NULL,  -- SHA-256 of the migration file's text when it was recorded
    method      text        NOT NULL,  -- 'applied': run here; 'adopted': found already in place
    applied_at  timestamptz NOT NULL,  -- the runner's clock, passed in like every time
    CONSTRAINT ck_schema_migration_version CHECK (version > 0),
    CONSTRAINT ck_schema_migration_checksum CHECK (checksum ~ '^[0-9a-f]{64}$'),
    CONSTRAINT ck_schema_migration_method CHECK (method IN ('applied', 'adopted'))
)

-- name: records
SELECT version, name, checksum, method, applied_at
  FROM paygate_schema_migrations
 ORDER BY version

-- name: records_exist
-- A database never migrated has no such table: asked first, instead of failing on it.
SELECT to_regclass('paygate_schema_migrations') IS NOT NULL AS present

-- name: record
-- In the transaction that ran the migration: a migration is applied and recorded, or neither.
INSERT INTO paygate_schema_migrations (version, name, checksum, method, applied_at)
VALUES (%(version)s, %(name)s, %(checksum)s, %(method)s, %(now)s)

-- name: lock_timeout
-- For the migration's own transaction only (is_local): a later one, or the records, wait as usual.
SELECT set_config('lock_timeout', %(timeout)s, true)

-- name: lock
-- Session-level, so it spans one transaction per migration; released by unlock, or by the server
-- when this session ends (a killed migrator leaves no lock behind). The key is the one `db init`
-- of earlier releases took, so an old build's init waits for a migrator and the reverse.
SELECT pg_advisory_lock(%(key)s)

-- name: unlock
SELECT pg_advisory_unlock(%(key)s)
