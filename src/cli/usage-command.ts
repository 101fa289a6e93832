import type { UsageGrouping, UsageStore, UsageSummaryRow } from '../store/contract.js';
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
