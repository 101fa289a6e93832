import { setTimeout as sleep } from 'node:timers/promises';
import type { UsageGrouping, UsageRecord, UsageStore, UsageSummaryRow } from '../store/store-contract.js';
import { parseFlags } from './keys-command.js';
import { alignedLines, csvField, printable, summaryOptions } from './summary-output.js';
import type { CliOutput } from './webhooks-command.js';

const GROUPINGS: readonly UsageGrouping[] = ['model', 'caller', 'route', 'day'];
/** The fields of a summary row as CSV and JSON name them (docs/usage.md, "Summaries"). */
const HEADER = [
  'requests',
  'errors',
  'prompt_tokens',
  'completion_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cache_read_share',
  'cost_usd',
  'cache_savings_usd',
  'avg_latency_ms',
];
/** The same columns in the table, named shortly: a row is about 105 characters and the group (it was 135 and the group). */
const TABLE_HEADER = [
  'requests',
  'errors',
  'prompt',
  'completion',
  'cache_read',
  'cache_write',
  'reasoning',
  'read_share',
  'cost_usd',
  'saved_usd',
  'avg_ms',
];
const SHARE = HEADER.indexOf('cache_read_share');
const DOLLARS = new Set([HEADER.indexOf('cost_usd'), HEADER.indexOf('cache_savings_usd')]);

/**
 * `gateway usage [--by model|caller|route|day] [--since 7d] [--format table|csv|json]`: totals per group over a period
 * ending now (callers are `admin`, `key:<id>`, `oauth:<sub>`, `basic:<user>`).
 */
export async function usageCommand(
  store: UsageStore,
  args: string[],
  io: CliOutput,
  nowMs = Date.now(),
): Promise<number> {
  const { flags } = parseFlags(args);
  const by = (flags.by ?? 'day') as UsageGrouping;
  if (!GROUPINGS.includes(by)) {
    io.err(`--by: one of ${GROUPINGS.join(', ')} (got "${flags.by}")`);
    return 2;
  }
  const options = summaryOptions(flags, io);
  if (!options) return 2;
  const { sinceMs, format } = options;
  const rows = await store.summarize(by, nowMs - sinceMs, nowMs + 1);
  const values = (r: UsageSummaryRow) => [
    r.requests,
    r.errors,
    r.promptTokens,
    r.completionTokens,
    r.cacheReadTokens,
    r.cacheWriteTokens,
    r.reasoningTokens,
    r.cacheReadShare,
    r.costUsd,
    r.cacheSavingsUsd,
    r.avgLatencyMs,
  ];
  if (format === 'json') {
    io.out(
      JSON.stringify(
        rows.map((r) => Object.fromEntries([['group', r.group], ...HEADER.map((h, i) => [h, values(r)[i]])])),
      ),
    );
  } else if (format === 'csv') {
    io.out([by, ...HEADER].join(','));
    for (const r of rows) io.out([csvField(printable(r.group)), ...values(r)].join(','));
  } else {
    const table = [[by, ...TABLE_HEADER], ...rows.map((r) => [printable(r.group), ...values(r).map(shown)])];
    for (const line of alignedLines(table, 1)) io.out(line);
    if (rows.length === 0) io.out('(no requests in this period)');
  }
  return 0;
}

/**
 * A summary's number in the table: the cache-read share as a percentage with one decimal ('-' without input tokens),
 * dollars to the millionth of a cent without an exponent (5e-8 is 0.00000005), the rest as they are.
 */
function shown(value: number | null, i: number): string {
  if (i === SHARE) return value === null ? '-' : `${(value * 100).toFixed(1)}%`;
  if (DOLLARS.has(i) && value !== null) return value.toFixed(8).replace(/\.?0+$/, '');
  return String(value);
}

export interface TailOptions {
  /** Stops the tail (the entry point aborts it on SIGINT / SIGTERM). */
  signal: AbortSignal;
  /** False when the configuration records no usage (the tail says so, and still shows what is stored). */
  usageEnabled?: boolean;
}

const TAIL_BATCH = 500;
const TAIL_LOOKBACK = 1000;

/**
 * `gateway usage tail [--failures] [--interval 2] [--format table|json]`: live output — the last 10 records,
 * then every new one as the gateway writes it (polling the store), until interrupted. JSON is one object per line.
 */
export async function tailUsage(
  store: UsageStore,
  args: string[],
  io: CliOutput,
  options: TailOptions,
): Promise<number> {
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
  if (options.usageEnabled === false)
    io.err('note: usage records are off in this configuration (usage.enabled: false): nothing new will be recorded');
  const wanted = (r: UsageRecord) => !failuresOnly || r.status >= 400 || r.code !== null;
  // Follows the table by storage position, not by request time: a long stream stored after shorter calls is
  // still printed. Each poll re-reads the last LOOKBACK positions too, because with PostgreSQL another instance's
  // rows can commit after later positions were read; `seen` keeps each record to one line. The first read takes
  // that whole window and marks all of it seen, though it prints only the last 10: the rest is history, not news.
  const seen = new Set<number>();
  const latest = await store.stored(undefined, TAIL_LOOKBACK);
  let cursor = latest.at(-1)?.seq ?? 0;
  for (const row of latest) seen.add(row.seq);
  for (const row of latest.filter((r) => wanted(r.record)).slice(-10)) print(row.record);
  while (!options.signal.aborted) {
    await sleep(interval * 1000, undefined, { signal: options.signal }).catch(() => undefined);
    if (options.signal.aborted) break;
    let from = Math.max(0, cursor - TAIL_LOOKBACK);
    for (;;) {
      const page = await store.stored(from, TAIL_BATCH);
      if (page.length > 0 && (page[0]?.seq ?? 0) <= from) {
        // The store restarted its positions (SQLite, after the retention emptied the table): start over.
        seen.clear();
        cursor = 0;
      }
      for (const row of page) {
        if (seen.has(row.seq)) continue;
        seen.add(row.seq);
        if (wanted(row.record)) print(row.record);
      }
      const end = page.at(-1)?.seq;
      if (end !== undefined) cursor = Math.max(cursor, end);
      if (page.length < TAIL_BATCH || end === undefined) break;
      from = end;
    }
    for (const seq of seen) if (seq < cursor - TAIL_LOOKBACK) seen.delete(seq);
  }
  return 0;
}

const TAIL_HEADER = [
  'time (UTC)'.padEnd(24),
  'status',
  'code'.padEnd(24),
  'route'.padEnd(10),
  'model'.padEnd(20),
  'upstream'.padEnd(12),
  'caller'.padEnd(16),
  'latency_ms'.padStart(10),
  'tokens'.padStart(7),
  'request_id',
].join(' ');

function tailLine(r: UsageRecord): string {
  const tokens = r.promptTokens === null ? '-' : String(r.promptTokens + (r.completionTokens ?? 0));
  return [
    new Date(r.timeMs).toISOString().padEnd(24),
    String(r.status).padEnd(6),
    (r.code ?? '-').padEnd(24),
    r.route.padEnd(10),
    printable(r.model ?? '-')
      .slice(0, 20)
      .padEnd(20),
    printable(r.upstream ?? '-')
      .slice(0, 12)
      .padEnd(12),
    printable(r.caller).slice(0, 16).padEnd(16),
    r.latencyMs.toFixed(1).padStart(10),
    tokens.padStart(7),
    r.requestId,
  ].join(' ');
}
