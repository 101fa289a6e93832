/**
 * SQLite migration 23 (docs/usage.md, "Retention"): hourly rollups of usage records and the rows and bytes the
 * usage tables hold. `usage_hours`: one row per hour × caller × environment × route × model × upstream ('' for no
 * model or upstream: a key column cannot be NULL), the sums reports read. `usage_hour_latency`: requests per hour
 * and latency bin (the dashboard's percentiles). `usage_size`: one row, kept by every insert, roll and delete in
 * its own transaction, read by the retention sweep for the size bound.
 * Its first figures count the records already there (the bytes expression of src/store/usage-rollup-sql.ts as
 * it was when this shipped: a migration is never edited).
 */
export const USAGE_HOURS_MIGRATION = `CREATE TABLE usage_hours (
    hour_ms INTEGER NOT NULL,
    caller TEXT NOT NULL,
    environment TEXT NOT NULL,
    route TEXT NOT NULL,
    model TEXT NOT NULL,
    upstream TEXT NOT NULL,
    requests INTEGER NOT NULL,
    server_errors INTEGER NOT NULL,
    client_errors INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    cache_savings_usd REAL NOT NULL,
    latency_ms_sum REAL NOT NULL,
    UNIQUE (hour_ms, caller, environment, route, model, upstream)
  ) STRICT;
  CREATE INDEX usage_hours_caller ON usage_hours (caller, hour_ms);
  CREATE TABLE usage_hour_latency (
    hour_ms INTEGER NOT NULL,
    bin INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    PRIMARY KEY (hour_ms, bin)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE usage_size (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    records INTEGER NOT NULL,
    record_bytes INTEGER NOT NULL,
    hours INTEGER NOT NULL,
    hour_bytes INTEGER NOT NULL
  ) STRICT;
  INSERT INTO usage_size (id, records, record_bytes, hours, hour_bytes)
    SELECT 1, count(*), coalesce(sum(110 + coalesce(length(CAST(request_id AS BLOB)), 0)
      + 2 * coalesce(length(CAST(caller AS BLOB)), 0) + coalesce(length(CAST(environment AS BLOB)), 0)
      + coalesce(length(CAST(route AS BLOB)), 0) + coalesce(length(CAST(model AS BLOB)), 0)
      + coalesce(length(CAST(upstream AS BLOB)), 0) + coalesce(length(CAST(code AS BLOB)), 0)), 0), 0, 0
    FROM usage_records;`;
