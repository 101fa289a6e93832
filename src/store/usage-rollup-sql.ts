import type { UsageGrouping } from './store-contract.js';
import { LATENCY_BIN_SQL } from './usage-sql.js';

/**
 * The SQL of usage rollups (docs/usage.md, "Retention"), shared by the SQLite and PostgreSQL stores: raw records
 * that age out are folded into one row per hour × caller × environment × route × model × upstream (the "hours"
 * table: the sums every report reads: requests, errors, tokens and their parts, cost, savings, latency), and one
 * row per hour × latency bin (the "latency" table: the dashboard's percentiles). Reports read the raw records of a
 * range plus the rollups of it: a record is in exactly one of the two (it is rolled up and deleted in one
 * transaction), so nothing is counted twice or lost. An hour × caller × environment keeps at most 64 models by name
 * (`MAX_MODELS_PER_HOUR`): the others' records are rolled under `(other)`.
 */

export const HOUR_MS = 3_600_000;

/**
 * What one record is counted as against `usage.retention_max_bytes`: the UTF-8 bytes of its texts (the caller twice:
 * it is also in the caller index) plus this much for its numbers, the row and its index entries. Measured with
 * 100,000 typical records (80 bytes of text): 207 bytes each in SQLite (the table and both indexes, dbstat), 367
 * in PostgreSQL (pg_total_relation_size after VACUUM: the table, its TOAST and four indexes).
 */
export const RECORD_OVERHEAD_BYTES = { sqlite: 110, postgres: 270 } as const;
/**
 * The same for one rollup row of the hours table (its texts are in the table and its unique index, the caller also
 * in the caller index). Measured with 20,000 rows rolled in steps: 147 bytes each in SQLite, 792 in PostgreSQL
 * (upserts leave dead row versions and half-filled index pages that VACUUM makes reusable but does not give back).
 */
export const HOUR_OVERHEAD_BYTES = { sqlite: 40, postgres: 680 } as const;
/** What one row of the latency table (an hour, a bin, a count) is counted as, its key index included. */
export const LATENCY_ROW_BYTES = { sqlite: 40, postgres: 120 } as const;

export type Dialect = 'sqlite' | 'postgres';

const bytesOf = (column: string, dialect: Dialect) =>
  dialect === 'sqlite' ? `coalesce(length(CAST(${column} AS BLOB)), 0)` : `coalesce(octet_length(${column}), 0)`;

/** The bytes a raw record is counted as (a SQL expression over `usage_records`' columns). */
export function recordBytesSql(dialect: Dialect): string {
  const texts = ['request_id', 'caller', 'caller', 'environment', 'route', 'model', 'upstream', 'code'];
  return `(${RECORD_OVERHEAD_BYTES[dialect]} + ${texts.map((c) => bytesOf(c, dialect)).join(' + ')})`;
}

/** The texts of a record that a rollup row is keyed by (its hour aside), in column order. */
const ROLLED_KEY = ['caller', 'environment', 'route', 'model', 'upstream'] as const;
/** The figures of a record that a rollup row sums as they are (the same column in both tables). */
const SUMMED_AS_IS = [
  'prompt_tokens',
  'completion_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cost_usd',
  'cache_savings_usd',
] as const;

/**
 * The bytes a rollup row is counted as (a SQL expression over the hours table's columns): its texts are in the
 * table and in its unique index, the caller also in the caller index.
 */
export function hourBytesSql(dialect: Dialect): string {
  return `(${HOUR_OVERHEAD_BYTES[dialect]} + ${bytesOf('caller', dialect)} + ${ROLLED_KEY.map((c) => `2 * ${bytesOf(c, dialect)}`).join(' + ')})`;
}

/** The key of a rollup row, in column order; model and upstream hold '' for none (a key column cannot be NULL). */
export const HOUR_KEY = ['hour_ms', ...ROLLED_KEY] as const;
/** The sums a rollup row holds. */
export const HOUR_SUMS = ['requests', 'server_errors', 'client_errors', ...SUMMED_AS_IS, 'latency_ms_sum'] as const;

/**
 * The models one hour × caller × environment keeps in the rollups: past this many, records of other models are
 * rolled into the model `(other)` (their requests, tokens and cost counted there: the caller's totals stay exact).
 * Model names come from callers: without it, a caller sending a new name with each call made one rollup row per
 * call, each larger than the record it replaced, and the rollups' bound then deleted every caller's oldest hours.
 */
export const MAX_MODELS_PER_HOUR = 64;
/** Where the models past `MAX_MODELS_PER_HOUR` are rolled. */
export const OTHER_MODEL = '(other)';

/** The columns of a record a roll reads. */
const ROLLED_COLUMNS = ['time_ms', ...ROLLED_KEY, 'status', 'code', ...SUMMED_AS_IS, 'latency_ms'] as const;

/**
 * CTEs (the text after WITH, ending with `rolled_records`: the records `where` selects from `from`, with the model
 * each is rolled up under) that fold the models past `MAX_MODELS_PER_HOUR` of an hour × caller × environment into
 * `(other)`. A model keeps its name when the hours table already has it for that hour, caller and environment, or
 * when the models there plus the new ones before it (in name order) are fewer than the bound. Reads the hours as
 * they are before the roll, through the key's index (hour, caller, environment first): one count per group.
 */
export function foldedRecordsSql(hours: string, from: string, where: string): string {
  const group = (a: string, b: string) =>
    ['hour_ms', 'caller', 'environment'].map((c) => `${a}.${c} = ${b}.${c}`).join(' AND ');
  return `batch AS MATERIALIZED (SELECT ${ROLLED_COLUMNS.join(', ')}, (time_ms / ${HOUR_MS}) * ${HOUR_MS} AS hour_ms
      FROM ${from} WHERE ${where}),
    fresh AS MATERIALIZED (SELECT hour_ms, caller, environment, model,
        ROW_NUMBER() OVER (PARTITION BY hour_ms, caller, environment ORDER BY model) AS nth
      FROM (SELECT DISTINCT hour_ms, caller, environment, coalesce(model, '') AS model FROM batch) AS m
      WHERE m.model <> '${OTHER_MODEL}'
        AND NOT EXISTS (SELECT 1 FROM ${hours} AS h WHERE ${group('h', 'm')} AND h.model = m.model)),
    held AS MATERIALIZED (SELECT g.hour_ms, g.caller, g.environment, (SELECT count(DISTINCT h.model) FROM ${hours} AS h
        WHERE ${group('h', 'g')} AND h.model <> '${OTHER_MODEL}') AS n
      FROM (SELECT DISTINCT hour_ms, caller, environment FROM fresh) AS g),
    folded AS MATERIALIZED (SELECT f.hour_ms, f.caller, f.environment, f.model FROM fresh AS f JOIN held AS g
      ON ${group('f', 'g')} WHERE f.nth + g.n > ${MAX_MODELS_PER_HOUR}),
    rolled_records AS (SELECT ${ROLLED_COLUMNS.filter((c) => c !== 'model')
      .map((c) => `b.${c}`)
      .join(', ')}, CASE WHEN x.model IS NULL THEN b.model ELSE '${OTHER_MODEL}' END AS model
      FROM batch AS b LEFT JOIN folded AS x ON ${group('x', 'b')} AND x.model = coalesce(b.model, ''))`;
}

/** The rollup key and sums of raw records (the SELECT list of a roll, grouped by the first 6 columns). */
const ROLL_SELECT = `(time_ms / ${HOUR_MS}) * ${HOUR_MS}, caller, environment, route, coalesce(model, ''), coalesce(upstream, ''),
  COUNT(*), SUM(CASE WHEN status >= 500 OR (status < 400 AND code IS NOT NULL) THEN 1 ELSE 0 END),
  SUM(CASE WHEN status >= 400 AND status < 500 THEN 1 ELSE 0 END),
  COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cache_read_tokens), 0),
  COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(reasoning_tokens), 0), COALESCE(SUM(cost_usd), 0),
  COALESCE(SUM(cache_savings_usd), 0), COALESCE(SUM(latency_ms), 0)`;

/**
 * Adds the records `where` selects from `from` (the records table, or a CTE of the rows just deleted from it) to
 * their hours in `hours`: one row per key, summed into the row already there.
 */
export function rollUpSql(hours: string, from: string, where: string): string {
  const columns = [...HOUR_KEY, ...HOUR_SUMS].join(', ');
  const sums = HOUR_SUMS.map((c) => `${c} = ${hours}.${c} + excluded.${c}`).join(', ');
  // GROUP BY and ORDER BY the key: rows are upserted in key order, so two sweeps never lock rows in opposite orders.
  return `INSERT INTO ${hours} (${columns})
    SELECT ${ROLL_SELECT} FROM ${from} WHERE ${where} GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (${HOUR_KEY.join(', ')}) DO UPDATE SET ${sums}`;
}

/** Adds the same records to the latency table: a count per hour and latency bin. */
export function rollLatencySql(latency: string, from: string, where: string): string {
  return `INSERT INTO ${latency} (hour_ms, bin, requests)
    SELECT (time_ms / ${HOUR_MS}) * ${HOUR_MS}, ${LATENCY_BIN_SQL}, COUNT(*) FROM ${from} WHERE ${where}
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (hour_ms, bin) DO UPDATE SET requests = ${latency}.requests + excluded.requests`;
}

/** The start of the hour holding `ms`: a range's rollup part begins there (docs/usage.md: the hour counts whole). */
export function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** What a grouping groups by, in the raw table and in the hours table. */
function groupOf(grouping: UsageGrouping, dialect: Dialect, time: 'time_ms' | 'hour_ms', none: string): string {
  if (grouping === 'day') {
    return dialect === 'sqlite'
      ? `strftime('%Y-%m-%d', ${time} / 1000, 'unixepoch')`
      : `to_char(to_timestamp(${time} / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
  }
  if (grouping === 'caller') return 'caller';
  if (grouping === 'route') return 'route';
  return none;
}

/**
 * Placeholders of a summary: SQLite `?1`... (numbered, so each is bound once), PostgreSQL `$1`...: 1 from, 2 to, 3
 * the start of the hour holding `from`, 4 the callers (a JSON array in SQLite, a text[] in PostgreSQL).
 */
function placeholder(dialect: Dialect, n: number): string {
  return dialect === 'sqlite' ? `?${n}` : `$${n}`;
}

/**
 * A summary over the raw records of [from, to) and the rollup hours that start in [hour of from, to): one row per
 * group, the columns `summaryRow` reads. With `callers`, only those callers' rows (through the caller indexes).
 */
export function summarySql(
  grouping: UsageGrouping,
  dialect: Dialect,
  records: string,
  hours: string,
  callers = false,
): string {
  const p = (n: number) => placeholder(dialect, n);
  const only = !callers
    ? ''
    : dialect === 'sqlite'
      ? `caller IN (SELECT value FROM json_each(${p(4)})) AND `
      : `caller = ANY(${p(4)}::text[]) AND `;
  const raw = `SELECT ${groupOf(grouping, dialect, 'time_ms', "coalesce(model, '(none)')")} AS grp, COUNT(*) AS requests,
      SUM(CASE WHEN status >= 500 OR (status < 400 AND code IS NOT NULL) THEN 1 ELSE 0 END) AS server_errors,
      SUM(CASE WHEN status >= 400 AND status < 500 THEN 1 ELSE 0 END) AS client_errors,
      COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, COALESCE(SUM(completion_tokens), 0) AS completion_tokens,
      COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens,
      COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens, COALESCE(SUM(cost_usd), 0) AS cost_usd,
      COALESCE(SUM(cache_savings_usd), 0) AS cache_savings_usd, COALESCE(SUM(latency_ms), 0) AS latency_ms_sum
    FROM ${records} WHERE ${only}time_ms >= ${p(1)} AND time_ms < ${p(2)} GROUP BY 1`;
  const rolled = `SELECT ${groupOf(grouping, dialect, 'hour_ms', "CASE WHEN model = '' THEN '(none)' ELSE model END")} AS grp,
      ${HOUR_SUMS.map((c) => `SUM(${c}) AS ${c}`).join(', ')}
    FROM ${hours} WHERE ${only}hour_ms >= ${p(3)} AND hour_ms < ${p(2)} GROUP BY 1`;
  const float = dialect === 'sqlite' ? '1.0 * ' : '';
  const cast = dialect === 'sqlite' ? '' : '::double precision';
  return `SELECT grp, SUM(requests) AS requests, SUM(server_errors) + SUM(client_errors) AS errors,
      SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
      SUM(cache_read_tokens) AS cache_read_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
      SUM(reasoning_tokens) AS reasoning_tokens, SUM(cost_usd) AS cost_usd, SUM(cache_savings_usd) AS cache_savings_usd,
      ${float}SUM(latency_ms_sum)${cast} / SUM(requests) AS avg_latency_ms
    FROM (${raw} UNION ALL ${rolled}) AS both_parts GROUP BY grp ORDER BY grp`;
}

/**
 * Counts per (bucket, latency bin) of the raw records of [from, to) and the rollups of the hours that start in
 * [hour of from, to); an hour that starts before `from` goes into the first bucket. A rolled-up hour gives its
 * requests per bin from the latency table, and its errors, tokens and cost (which no bin holds) on a row of bin 0
 * with no requests of its own: the sums per bucket are exact, as the dashboard reads them. Placeholders: 1 the
 * bucket size, 2 from, 3 to, 4 the start of the hour holding `from`. The columns `timelineRow` reads.
 */
export function timelineSql(dialect: Dialect, records: string, hours: string, latency: string): string {
  const p = (n: number) => placeholder(dialect, n);
  const size = dialect === 'sqlite' ? `CAST(${p(1)} AS INTEGER)` : `${p(1)}::bigint`;
  const from = dialect === 'sqlite' ? `CAST(${p(2)} AS INTEGER)` : `${p(2)}::bigint`;
  const bucket = `(${dialect === 'sqlite' ? `max(hour_ms, ${from})` : `GREATEST(hour_ms, ${from})`} / ${size}) * ${size}`;
  const sums = ['server_errors', 'client_errors', 'prompt_tokens', 'completion_tokens', 'cache_read_tokens'].concat(
    'cost_usd',
    'cache_savings_usd',
  );
  const raw = `SELECT (time_ms / ${size}) * ${size} AS bucket, ${LATENCY_BIN_SQL} AS bin, COUNT(*) AS requests,
      SUM(CASE WHEN status >= 500 OR (status < 400 AND code IS NOT NULL) THEN 1 ELSE 0 END) AS server_errors,
      SUM(CASE WHEN status >= 400 AND status < 500 THEN 1 ELSE 0 END) AS client_errors,
      COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, COALESCE(SUM(completion_tokens), 0) AS completion_tokens,
      COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cost_usd), 0) AS cost_usd,
      COALESCE(SUM(cache_savings_usd), 0) AS cache_savings_usd
    FROM ${records} WHERE time_ms >= ${p(2)} AND time_ms < ${p(3)} GROUP BY 1, 2`;
  const bins = `SELECT ${bucket} AS bucket, bin, SUM(requests) AS requests, ${sums.map((c) => `0 AS ${c}`).join(', ')}
    FROM ${latency} WHERE hour_ms >= ${p(4)} AND hour_ms < ${p(3)} GROUP BY 1, 2`;
  const rolled = `SELECT ${bucket} AS bucket, 0 AS bin, 0 AS requests, ${sums.map((c) => `SUM(${c}) AS ${c}`).join(', ')}
    FROM ${hours} WHERE hour_ms >= ${p(4)} AND hour_ms < ${p(3)} GROUP BY 1`;
  return `SELECT bucket, bin, ${['requests', ...sums].map((c) => `SUM(${c}) AS ${c}`).join(', ')}
    FROM (${raw} UNION ALL ${bins} UNION ALL ${rolled}) AS all_parts GROUP BY bucket, bin ORDER BY bucket, bin`;
}
