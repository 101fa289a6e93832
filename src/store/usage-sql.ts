import type { UsageGrouping, UsageRecord } from './contract.js';

/** The columns of `usage_records`, in the order of `recordValues` (shared by the SQLite and PostgreSQL stores). */
export const USAGE_COLUMNS = [
  'time_ms', 'request_id', 'caller', 'environment', 'route', 'model', 'upstream', 'status', 'code', 'latency_ms',
  'ttfb_ms', 'stream', 'prompt_tokens', 'completion_tokens', 'cost_usd', 'attempts', 'replay',
] as const;

/** Writes a record's values into `target` from `offset` (batch inserts fill one array, no array per record). */
export function writeRecordValues(r: UsageRecord, target: unknown[], offset: number): void {
  target[offset] = r.timeMs;
  target[offset + 1] = r.requestId;
  target[offset + 2] = r.caller;
  target[offset + 3] = r.environment;
  target[offset + 4] = r.route;
  target[offset + 5] = r.model;
  target[offset + 6] = r.upstream;
  target[offset + 7] = r.status;
  target[offset + 8] = r.code;
  target[offset + 9] = r.latencyMs;
  target[offset + 10] = r.ttfbMs;
  target[offset + 11] = r.stream ? 1 : 0;
  target[offset + 12] = r.promptTokens;
  target[offset + 13] = r.completionTokens;
  target[offset + 14] = r.costUsd;
  target[offset + 15] = r.attempts;
  target[offset + 16] = r.replay ? 1 : 0;
}

export function recordValues(r: UsageRecord): Array<string | number | null> {
  const values: Array<string | number | null> = new Array<string | number | null>(USAGE_COLUMNS.length);
  writeRecordValues(r, values, 0);
  return values;
}

export function recordFromRow(row: Record<string, unknown>): UsageRecord {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    timeMs: Number(row.time_ms),
    requestId: String(row.request_id),
    caller: String(row.caller),
    environment: String(row.environment),
    route: String(row.route),
    model: (row.model as string | null) ?? null,
    upstream: (row.upstream as string | null) ?? null,
    status: Number(row.status),
    code: (row.code as string | null) ?? null,
    latencyMs: Number(row.latency_ms),
    ttfbMs: num(row.ttfb_ms),
    stream: Number(row.stream) === 1,
    promptTokens: num(row.prompt_tokens),
    completionTokens: num(row.completion_tokens),
    costUsd: num(row.cost_usd),
    attempts: Number(row.attempts),
    replay: Number(row.replay) === 1,
  };
}

/** The SQL expression a grouping groups by; the UTC day is computed from `time_ms` in each dialect. */
export function groupExpression(grouping: UsageGrouping, dialect: 'sqlite' | 'postgres'): string {
  if (grouping === 'day') {
    return dialect === 'sqlite' ? "strftime('%Y-%m-%d', time_ms / 1000, 'unixepoch')" : "to_char(to_timestamp(time_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')";
  }
  if (grouping === 'caller') return 'caller';
  return "coalesce(model, '(none)')";
}
