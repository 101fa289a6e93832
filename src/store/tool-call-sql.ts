import type { StoredToolCall, ToolCallSummaryRow } from './tool-call-contract.js';

/** The columns of the tool-call table, in the order of `toolCallValues` (shared by the SQLite and PostgreSQL stores). */
export const TOOL_CALL_COLUMNS = [
  'time_ms',
  'call_id',
  'request_id',
  'caller',
  'environment',
  'server',
  'tool',
  'via',
  'outcome',
  'code',
  'duration_ms',
  'bytes_in',
  'bytes_out',
] as const;

export function toolCallValues(r: StoredToolCall): unknown[] {
  return [
    r.timeMs,
    r.callId,
    r.requestId,
    r.caller,
    r.environment,
    r.server,
    r.tool,
    r.via,
    r.outcome,
    r.code,
    r.durationMs,
    r.bytesIn,
    r.bytesOut,
  ];
}

export function toolCallFromRow(row: Record<string, unknown>): StoredToolCall {
  return {
    timeMs: Number(row.time_ms),
    callId: String(row.call_id),
    requestId: String(row.request_id),
    caller: String(row.caller),
    environment: String(row.environment),
    server: String(row.server),
    tool: String(row.tool),
    via: String(row.via) as StoredToolCall['via'],
    outcome: String(row.outcome) as StoredToolCall['outcome'],
    code: row.code === null || row.code === undefined ? null : String(row.code),
    durationMs: Number(row.duration_ms),
    bytesIn: Number(row.bytes_in),
    bytesOut: Number(row.bytes_out),
  };
}

/**
 * Calls per caller, server and tool in [$1, $2), the most called first, at most $3 rows, with nearest-rank p50 and
 * p99 durations over the calls the upstream saw (window functions: the same text runs on SQLite and PostgreSQL,
 * `?NNN` and `$NNN` both being numbered parameters). Percentiles need every duration of a group, so the query
 * reads the period's rows once through the time index; the dashboard asks for an hour, a day or a week.
 */
export function toolCallSummarySql(table: string, param: (n: number) => string): string {
  return `WITH period AS (
      SELECT caller, server, tool, outcome, duration_ms, bytes_in, bytes_out
        FROM ${table} WHERE time_ms >= ${param(1)} AND time_ms < ${param(2)}
    ), seen AS (
      SELECT caller, server, tool, duration_ms,
             ROW_NUMBER() OVER (PARTITION BY caller, server, tool ORDER BY duration_ms) AS n,
             COUNT(*) OVER (PARTITION BY caller, server, tool) AS c
        FROM period WHERE outcome <> 'refused'
    ), ranks AS (
      SELECT caller, server, tool,
             MIN(CASE WHEN n * 100 >= c * 50 THEN duration_ms END) AS p50_ms,
             MIN(CASE WHEN n * 100 >= c * 99 THEN duration_ms END) AS p99_ms
        FROM seen GROUP BY caller, server, tool
    ), totals AS (
      SELECT caller, server, tool, COUNT(*) AS calls,
             SUM(CASE WHEN outcome = 'ok' THEN 1 ELSE 0 END) AS ok,
             SUM(CASE WHEN outcome = 'refused' THEN 1 ELSE 0 END) AS refused,
             SUM(bytes_in) AS bytes_in, SUM(bytes_out) AS bytes_out
        FROM period GROUP BY caller, server, tool
    )
    SELECT t.caller, t.server, t.tool, t.calls, t.ok, t.refused, t.bytes_in, t.bytes_out, r.p50_ms, r.p99_ms
      FROM totals t LEFT JOIN ranks r ON r.caller = t.caller AND r.server = t.server AND r.tool = t.tool
     ORDER BY t.calls DESC, t.caller, t.server, t.tool
     LIMIT ${param(3)}`;
}

export function toolCallSummaryRow(row: Record<string, unknown>): ToolCallSummaryRow {
  const calls = Number(row.calls);
  const ok = Number(row.ok);
  const nullable = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return {
    caller: String(row.caller),
    server: String(row.server),
    tool: String(row.tool),
    calls,
    ok,
    errors: calls - ok,
    refused: Number(row.refused),
    p50Ms: nullable(row.p50_ms),
    p99Ms: nullable(row.p99_ms),
    bytesIn: Number(row.bytes_in ?? 0),
    bytesOut: Number(row.bytes_out ?? 0),
  };
}
