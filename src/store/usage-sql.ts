import type { UsageRecord, UsageRows, UsageSummaryRow, UsageTimelineRow } from './store-contract.js';

/** The columns of `usage_records`, in the order of `UsageRows.writeValues` (shared by the SQLite and PostgreSQL stores). */
export const USAGE_COLUMNS = [
  'time_ms',
  'request_id',
  'caller',
  'environment',
  'route',
  'model',
  'upstream',
  'status',
  'code',
  'latency_ms',
  'ttfb_ms',
  'stream',
  'prompt_tokens',
  'completion_tokens',
  'cost_usd',
  'attempts',
  'replay',
  'cache_hit',
  'usage_anomaly',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cache_savings_usd',
] as const;

/**
 * The database refused a value of the rows it was given (a type or a constraint it enforces: SQLite's `cannot store
 * REAL value in INTEGER column`, PostgreSQL's `value out of range for type integer`), as opposed to being down or
 * busy: the same rows would be refused again, however often they were retried. `UsageStore.appendRows` rejects
 * with it, having stored none of the rows; the usage recorder then finds the refused record and sets it aside.
 */
export class UsageRowsRefused extends Error {
  constructor(cause: unknown) {
    super(`the database refused a usage record: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'UsageRowsRefused';
  }
}

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
  target[offset + 17] = r.cacheHit ? 1 : 0;
  target[offset + 18] = r.usageAnomaly ? 1 : 0;
  target[offset + 19] = r.cacheReadTokens;
  target[offset + 20] = r.cacheWriteTokens;
  target[offset + 21] = r.reasoningTokens;
  target[offset + 22] = r.cacheSavingsUsd;
}

/** Records as `UsageRows`. */
export function recordRows(records: readonly UsageRecord[]): UsageRows {
  return {
    length: records.length,
    writeValues: (row, target, offset) => writeRecordValues(records[row] as UsageRecord, target, offset),
    toRecords: () => records.slice(),
  };
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
    cacheHit: Number(row.cache_hit) === 1,
    usageAnomaly: Number(row.usage_anomaly) === 1,
    cacheReadTokens: num(row.cache_read_tokens),
    cacheWriteTokens: num(row.cache_write_tokens),
    reasoningTokens: num(row.reasoning_tokens),
    cacheSavingsUsd: num(row.cache_savings_usd),
  };
}

/**
 * Upper bounds (ms) of the latency bins the dashboard's percentiles come from: 1 ms to 10 min, each 25 % above
 * the last (so a percentile read from the bins is within about 12 % once interpolated), plus one open bin above.
 */
export const LATENCY_BIN_EDGES_MS: readonly number[] = (() => {
  const edges: number[] = [];
  for (let edge = 1; edge < 600_000; edge *= 1.25) edges.push(Math.round(edge * 100) / 100);
  edges.push(600_000);
  return edges;
})();

/** The bin of `latency_ms`, in SQL both dialects run (a CASE: SQLite has no log() in every build). */
export const LATENCY_BIN_SQL = `CASE ${LATENCY_BIN_EDGES_MS.map((edge, i) => `WHEN latency_ms < ${edge} THEN ${i}`).join(' ')} ELSE ${LATENCY_BIN_EDGES_MS.length} END`;

export function timelineRow(row: Record<string, unknown>): UsageTimelineRow {
  return {
    bucketMs: Number(row.bucket),
    bin: Number(row.bin),
    requests: Number(row.requests),
    serverErrors: Number(row.server_errors),
    clientErrors: Number(row.client_errors),
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    cacheReadTokens: Number(row.cache_read_tokens),
    costUsd: Number(row.cost_usd),
    cacheSavingsUsd: Number(row.cache_savings_usd),
  };
}

/**
 * The share of input tokens read from the provider's prompt cache: cache reads / all prompt tokens (cache reads
 * and writes are parts of the prompt, docs/usage.md), rounded to 4 decimals; null when there was no input.
 */
export function cacheReadShare(cacheReadTokens: number, promptTokens: number): number | null {
  return promptTokens > 0 ? Math.round((cacheReadTokens / promptTokens) * 10_000) / 10_000 : null;
}

/** USD rounded to a millionth of a cent: how every cost is stored and shown. */
export function roundUsd(value: number): number {
  return Math.round(value * 1e8) / 1e8;
}

/** A summary row of either store (SQLite or PostgreSQL column values) in the contract's shape. */
export function summaryRow(row: Record<string, unknown>): UsageSummaryRow {
  const promptTokens = Number(row.prompt_tokens);
  const cacheReadTokens = Number(row.cache_read_tokens);
  return {
    group: String(row.grp),
    requests: Number(row.requests),
    errors: Number(row.errors),
    promptTokens,
    completionTokens: Number(row.completion_tokens),
    cacheReadTokens,
    cacheWriteTokens: Number(row.cache_write_tokens),
    reasoningTokens: Number(row.reasoning_tokens),
    cacheReadShare: cacheReadShare(cacheReadTokens, promptTokens),
    costUsd: roundUsd(Number(row.cost_usd)),
    cacheSavingsUsd: roundUsd(Number(row.cache_savings_usd)) + 0,
    avgLatencyMs: Math.round(Number(row.avg_latency_ms) * 100) / 100,
  };
}
