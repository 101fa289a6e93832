import { recordBytesSql } from '../usage-rollup-sql.js';

/**
 * The PostgreSQL side of usage rollups (docs/usage.md, "Retention"), applied once by `migrateUnderLock` after the
 * records table: `<table>_hours` (one row per hour × caller × environment × route × model × upstream, the sums
 * reports read; '' for no model or upstream), `<table>_latency` (requests per hour and latency bin) and
 * `<table>_size` (the rows and bytes the tables hold, kept by every insert, roll and delete in its own statement; 16 slots, so that instances writing at once
 * do not queue on one row: the sweep reads their sum). The first slot starts with the records already there.
 */
export function usageRollupSchema(table: string): string {
  return `
CREATE TABLE IF NOT EXISTS ${table}_hours (
  hour_ms BIGINT NOT NULL,
  caller TEXT NOT NULL,
  environment TEXT NOT NULL,
  route TEXT NOT NULL,
  model TEXT NOT NULL,
  upstream TEXT NOT NULL,
  requests BIGINT NOT NULL,
  server_errors BIGINT NOT NULL,
  client_errors BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cache_read_tokens BIGINT NOT NULL,
  cache_write_tokens BIGINT NOT NULL,
  reasoning_tokens BIGINT NOT NULL,
  cost_usd DOUBLE PRECISION NOT NULL,
  cache_savings_usd DOUBLE PRECISION NOT NULL,
  latency_ms_sum DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (hour_ms, caller, environment, route, model, upstream)
);
CREATE INDEX IF NOT EXISTS ${table}_hours_caller ON ${table}_hours (caller, hour_ms);
CREATE TABLE IF NOT EXISTS ${table}_latency (
  hour_ms BIGINT NOT NULL,
  bin INTEGER NOT NULL,
  requests BIGINT NOT NULL,
  PRIMARY KEY (hour_ms, bin)
);
CREATE TABLE IF NOT EXISTS ${table}_size (
  slot INTEGER PRIMARY KEY,
  records BIGINT NOT NULL,
  record_bytes BIGINT NOT NULL,
  hours BIGINT NOT NULL,
  hour_bytes BIGINT NOT NULL
);
INSERT INTO ${table}_size (slot, records, record_bytes, hours, hour_bytes)
  SELECT 0, count(*), coalesce(sum(${recordBytesSql('postgres')}), 0), 0, 0 FROM ${table}
  ON CONFLICT DO NOTHING;
INSERT INTO ${table}_size (slot, records, record_bytes, hours, hour_bytes)
  SELECT s, 0, 0, 0, 0 FROM generate_series(1, ${SIZE_SLOTS - 1}) AS s ON CONFLICT DO NOTHING;`;
}

/** Rows of `<table>_size`: slot 0 for the sweeps, the others shared out among inserts. */
export const SIZE_SLOTS = 16;
