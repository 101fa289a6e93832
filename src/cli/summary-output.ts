import { parseDuration } from './keys-command.js';
import type { CliOutput } from './webhooks-command.js';

/** How a summary command prints: `table` (aligned for a terminal), `csv` or `json`. */
export type SummaryFormat = 'table' | 'csv' | 'json';

/**
 * The period and format every summary command takes (`--since 7d`, `--format table|csv|json`); undefined after
 * saying what was wrong (the command exits 2).
 */
export function summaryOptions(
  flags: Readonly<Record<string, string>>,
  io: CliOutput,
): { sinceMs: number; format: SummaryFormat } | undefined {
  const sinceMs = parseDuration(flags.since ?? '7d');
  if (sinceMs === undefined) {
    io.err('--since: a duration like 24h or 30d');
    return undefined;
  }
  const format = flags.format ?? 'table';
  if (format !== 'table' && format !== 'csv' && format !== 'json') {
    io.err('--format: table, csv or json');
    return undefined;
  }
  return { sinceMs, format };
}

/**
 * A table's lines: each column as wide as its widest cell, the first `textColumns` columns to the left (names), the
 * others to the right (numbers), two spaces between.
 */
export function alignedLines(table: ReadonlyArray<ReadonlyArray<string | number>>, textColumns: number): string[] {
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => String(row[i]).length))) ?? [];
  return table.map((row) =>
    row
      .map((cell, i) => (i < textColumns ? String(cell).padEnd(widths[i] ?? 0) : String(cell).padStart(widths[i] ?? 0)))
      .join('  '),
  );
}

/** A CSV field: quoted (with its quotes doubled) when it holds a quote, a comma or a line break. */
export function csvField(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/**
 * Text a caller or an upstream chose (model ids, callers, tool names) printed to a terminal: control characters
 * (escape sequences) become `?`.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}
