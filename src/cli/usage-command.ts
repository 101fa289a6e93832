import { setTimeout as sleep } from 'node:timers/promises';
import type { UsageGrouping, UsageRecord, UsageStore, UsageSummaryRow } from '../store/contract.js';
import { parseDuration, parseFlags } from './keys-command.js';
import type { CliOutput } from './webhooks-command.js';

const GROUPINGS: readonly UsageGrouping[] = ['model', 'caller', 'day'];
const HEADER = ['requests', 'errors', 'prompt_tokens', 'completion_tokens', 'cost_usd', 'avg_latency_ms'];

/**
 * `gateway usage [--by model|caller|day] [--since 7d] [--format table|csv|json]`: totals per group over a period
 * ending now (callers are `admin`, `key:<id>`, `oauth:<sub>`, `basic:<user>`).
 */
export async function usageCommand(store: UsageStore, args: string[], io: CliOutput, nowMs = Date.now()): Promise<number> {
  const { flags } = parseFlags(args);
  const by = (flags.by ?? 'day') as UsageGrouping;
  if (!GROUPINGS.includes(by)) {
    io.err(`--by: one of ${GROUPINGS.join(', ')} (got "${flags.by}")`);
    return 2;
  }
  const since = parseDuration(flags.since ?? '7d');
  if (since === undefined) {
    io.err('--since: a duration like 24h or 30d');
    return 2;
  }
  const format = flags.format ?? 'table';
  if (!['table', 'csv', 'json'].includes(format)) {
    io.err('--format: table, csv or json');
    return 2;
  }
  const rows = await store.summarize(by, nowMs - since, nowMs + 1);
  const values = (r: UsageSummaryRow) => [r.requests, r.errors, r.promptTokens, r.completionTokens, r.costUsd, r.avgLatencyMs];
  if (format === 'json') {
    io.out(JSON.stringify(rows.map((r) => Object.fromEntries([['group', r.group], ...HEADER.map((h, i) => [h, values(r)[i]])]))));
  } else if (format === 'csv') {
    io.out([by, ...HEADER].join(','));
    for (const r of rows) io.out([csv(r.group), ...values(r)].join(','));
  } else {
    const table = [[by, ...HEADER], ...rows.map((r) => [r.group, ...values(r).map(String)])];
    const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => String(row[i]).length))) ?? [];
    for (const row of table) io.out(row.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i] ?? 0) : String(cell).padStart(widths[i] ?? 0))).join('  '));
    if (rows.length === 0) io.out('(no requests in this period)');
  }
  return 0;
}

function csv(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export interface TailOptions {
  /** Stops the tail (the entry point aborts it on SIGINT / SIGTERM). */
  signal: AbortSignal;
  nowMs?: number;
}

const TAIL_BATCH = 500;

/**
 * `gateway usage tail [--failures] [--interval 2] [--format table|json]`: live output — the last 10 records,
 * then every new one as the gateway writes it (polling the store), until interrupted. JSON is one object per line.
 */
export async function tailUsage(store: UsageStore, args: string[], io: CliOutput, options: TailOptions): Promise<number> {
  const { flags } = parseFlags(args);
  const interval = Number(flags.interval ?? '2');
  if (!Number.isFinite(interval) || interval < 0.05 || interval > 3600) {
    io.err('--interval: seconds between polls, from 0.05 to 3600');
    return 2;
  }
  const format = flags.format ?? 'table';
  if (format !== 'table' && format !== 'json') {
    io.err('--format: table or json');
    return 2;
  }
  const failuresOnly = flags.failures === 'true';
  const print = (r: UsageRecord) => {
    if (format === 'json') io.out(JSON.stringify({ time: new Date(r.timeMs).toISOString(), ...r, timeMs: undefined }));
    else io.out(tailLine(r));
  };
  if (format === 'table') io.out(TAIL_HEADER);
  let seen = new Set<string>();
  let lastMs = -1;
  const take = (records: UsageRecord[]) => {
    const fresh = records.filter((r) => r.timeMs > lastMs || (r.timeMs === lastMs && !seen.has(r.requestId))).reverse();
    for (const r of fresh) {
      if (r.timeMs > lastMs) {
        lastMs = r.timeMs;
        seen = new Set();
      }
      seen.add(r.requestId);
      print(r);
    }
  };
  take(await store.recent(10, failuresOnly));
  while (!options.signal.aborted) {
    await sleep(interval * 1000, undefined, { signal: options.signal }).catch(() => undefined);
    if (options.signal.aborted) break;
    take(await store.recent(TAIL_BATCH, failuresOnly));
  }
  return 0;
}

const TAIL_HEADER = ['time (UTC)'.padEnd(24), 'status', 'code'.padEnd(24), 'route '.padEnd(7), 'model'.padEnd(20), 'upstream'.padEnd(12), 'caller'.padEnd(16), 'latency_ms'.padStart(10), 'tokens'.padStart(7), 'request_id'].join(' ');

function tailLine(r: UsageRecord): string {
  const tokens = r.promptTokens === null ? '-' : String(r.promptTokens + (r.completionTokens ?? 0));
  return [
    new Date(r.timeMs).toISOString().padEnd(24),
    String(r.status).padEnd(6),
    (r.code ?? '-').padEnd(24),
    r.route.padEnd(7),
    (r.model ?? '-').slice(0, 20).padEnd(20),
    (r.upstream ?? '-').slice(0, 12).padEnd(12),
    r.caller.slice(0, 16).padEnd(16),
    r.latencyMs.toFixed(1).padStart(10),
    tokens.padStart(7),
    r.requestId,
  ].join(' ');
}
