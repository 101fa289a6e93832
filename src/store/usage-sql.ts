import type { UsageGrouping, UsageRecord } from './contract.js';

/** The columns of `usage_records`, in the order of `recordValues` (shared by the SQLite and PostgreSQL stores). */
export const USAGE_COLUMNS = [
  'time_ms', 'request_id', 'caller', 'environment', 'route', 'model', 'upstream', 'status', 'code', 'latency_ms',
  'ttfb_ms', 'stream', 'prompt_tokens', 'completion_tokens', 'cost_usd', 'attempts', 'replay',
] as const;

export function recordValues(r: UsageRecord): Array<string | number | null> {
  return [r.timeMs, r.requestId, r.caller, r.environment, r.route, r.model, r.upstream, r.status, r.code, r.latencyMs, r.ttfbMs, r.stream ? 1 : 0, r.promptTokens, r.completionTokens, r.costUsd, r.attempts, r.replay ? 1 : 0];
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
