import type { ToolCallStore, ToolCallSummaryRow } from '../store/tool-call-contract.js';
import { parseFlags } from './keys-command.js';
import { alignedLines, csvField, printable, summaryOptions } from './summary-output.js';
import type { CliOutput } from './webhooks-command.js';

/** The fields of a row as CSV and JSON name them (docs/mcp.md, "Records"). */
const HEADER = ['calls', 'errors', 'refused', 'p50_ms', 'p99_ms', 'bytes_in', 'bytes_out'] as const;
const GROUP = ['caller', 'server', 'tool'] as const;
/** Rows read at most (the most called first). */
const MAX_ROWS = 1_000;

/**
 * `gateway usage tools [--since 7d] [--format table|csv|json]`: MCP tool calls per caller, server and tool over a
 * period ending now, the most called first: calls, errors (every outcome but `ok`, refused ones included), refused,
 * p50 and p99 duration (of the calls the upstream saw), bytes in and out.
 */
export async function toolCallsCommand(
  store: ToolCallStore,
  args: string[],
  io: CliOutput,
  nowMs = Date.now(),
): Promise<number> {
  const options = summaryOptions(parseFlags(args).flags, io);
  if (!options) return 2;
  const { sinceMs, format } = options;
  const rows = await store.summarizeToolCalls(nowMs - sinceMs, nowMs + 1, MAX_ROWS);
  const values = (r: ToolCallSummaryRow) => [r.calls, r.errors, r.refused, r.p50Ms, r.p99Ms, r.bytesIn, r.bytesOut];
  if (format === 'json') {
    io.out(
      JSON.stringify(
        rows.map((r) => ({
          caller: r.caller,
          server: r.server,
          tool: r.tool,
          ...Object.fromEntries(HEADER.map((h, i) => [h, values(r)[i]])),
        })),
      ),
    );
    return 0;
  }
  if (format === 'csv') {
    io.out([...GROUP, ...HEADER].join(','));
    for (const r of rows)
      io.out([csvField(r.caller), csvField(r.server), csvField(r.tool), ...values(r).map(blank)].join(','));
    return 0;
  }
  const table = [
    [...GROUP, ...HEADER],
    ...rows.map((r) => [printable(r.caller), printable(r.server), printable(r.tool), ...values(r).map(dash)]),
  ];
  for (const line of alignedLines(table, GROUP.length)) io.out(line);
  if (rows.length === 0) io.out('(no tool calls in this period)');
  return 0;
}

const dash = (value: number | null): string => (value === null ? '-' : String(value));
const blank = (value: number | null): string => (value === null ? '' : String(value));
