import {
  HOUR_KEY,
  HOUR_MS,
  LATENCY_ROW_BYTES,
  foldedRecordsSql,
  hourBytesSql,
  recordBytesSql,
  rollLatencySql,
  rollUpSql,
} from '../usage-rollup-sql.js';

/**
 * The statements that age usage records out of PostgreSQL (docs/usage.md, "Retention"). Each is ONE statement
 * (data-modifying CTEs): the rows it deletes, the hours it adds them to and the counts of `<table>_size` change
 * together or not at all, whatever happens to the connection or the process. Parameters are given per statement.
 */
export function retentionSql(table: string) {
  const hours = `${table}_hours`;
  const latency = `${table}_latency`;
  const bin = LATENCY_ROW_BYTES.postgres;
  const size = `${table}_size`;
  const recordBytes = recordBytesSql('postgres');
  const hourBytes = hourBytesSql('postgres');
  const key = HOUR_KEY.join(', ');
  return {
    /**
     * $1 the rows: the oldest records, locked (`SKIP LOCKED`: instances sweeping at once take different rows),
     * deleted, added to their hours, counted; answers `n`, how many.
     */
    roll: `WITH chosen AS (SELECT seq FROM ${table} ORDER BY time_ms LIMIT $1 FOR UPDATE SKIP LOCKED),
      gone AS (DELETE FROM ${table} WHERE seq IN (SELECT seq FROM chosen) RETURNING *),
      ${foldedRecordsSql(hours, 'gone', 'true')},
      rolled AS (${rollUpSql(hours, 'rolled_records', 'true')} RETURNING (xmax = 0) AS added, ${hourBytes} AS b),
      binned AS (${rollLatencySql(latency, 'gone', 'true')} RETURNING (xmax = 0) AS added),
      counted AS (UPDATE ${size} SET records = records - (SELECT count(*) FROM gone),
        record_bytes = record_bytes - (SELECT coalesce(sum(${recordBytes}), 0) FROM gone),
        hours = hours + (SELECT count(*) FROM rolled WHERE added) + (SELECT count(*) FROM binned WHERE added),
        hour_bytes = hour_bytes + (SELECT coalesce(sum(b), 0) FROM rolled WHERE added)
          + ${bin} * (SELECT count(*) FROM binned WHERE added) WHERE slot = 0)
      SELECT count(*)::int AS n FROM gone`,
    /** $1 before (ms), $2 at most this many (NULL: all): the oldest records before it deleted; `n`. */
    purge: `WITH gone AS (DELETE FROM ${table} WHERE seq IN
        (SELECT seq FROM ${table} WHERE time_ms < $1 ORDER BY time_ms LIMIT $2) RETURNING ${recordBytes} AS b),
      counted AS (UPDATE ${size} SET records = records - (SELECT count(*) FROM gone),
        record_bytes = record_bytes - (SELECT coalesce(sum(b), 0) FROM gone) WHERE slot = 0)
      SELECT count(*)::int AS n FROM gone`,
    /** $1 before (ms), $2 at most this many of each table (NULL: all): the oldest hours that ended by then; `n`. */
    purgeHours: `WITH gone AS (DELETE FROM ${hours} WHERE (${key}) IN
        (SELECT ${key} FROM ${hours} WHERE hour_ms <= $1::bigint - ${HOUR_MS} ORDER BY hour_ms LIMIT $2)
        RETURNING ${hourBytes} AS b),
      bins AS (DELETE FROM ${latency} WHERE (hour_ms, bin) IN
        (SELECT hour_ms, bin FROM ${latency} WHERE hour_ms <= $1::bigint - ${HOUR_MS} ORDER BY hour_ms LIMIT $2)
        RETURNING 1),
      counted AS (UPDATE ${size} SET hours = hours - (SELECT count(*) FROM gone) - (SELECT count(*) FROM bins),
        hour_bytes = hour_bytes - (SELECT coalesce(sum(b), 0) FROM gone) - ${bin} * (SELECT count(*) FROM bins)
        WHERE slot = 0)
      SELECT ((SELECT count(*) FROM gone) + (SELECT count(*) FROM bins))::int AS n`,
    footprint: `SELECT coalesce(sum(records), 0) AS records, coalesce(sum(record_bytes), 0) AS record_bytes,
      coalesce(sum(hours), 0) AS hours, coalesce(sum(hour_bytes), 0) AS hour_bytes FROM ${size}`,
    /** Wraps a records INSERT (… RETURNING nothing yet) so that its rows are counted in slot `$<slot>`. */
    counted: (insert: string, slot: number) => `WITH added AS (${insert} RETURNING ${recordBytes} AS b)
      UPDATE ${size} SET records = records + (SELECT count(*) FROM added),
        record_bytes = record_bytes + (SELECT coalesce(sum(b), 0) FROM added) WHERE slot = $${slot}`,
  };
}
