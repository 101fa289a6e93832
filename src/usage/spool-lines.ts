import type { SpoolMark, UsageRecord, UsageRows } from '../store/store-contract.js';
import { USAGE_COLUMNS, recordFromRow } from '../store/usage-sql.js';

/**
 * One line of a usage spool: `[seq, ...the record's values in USAGE_COLUMNS order]` as JSON, then `\n`. The same
 * values the stores bind (src/store/usage-sql.ts), so a replayed record is the record the recorder would have
 * written.
 */
const WIDTH = USAGE_COLUMNS.length + 1;

/** What each value of a line must be: `n` a number, `s` a string, `?` either of them or null. */
const KINDS: readonly string[] = USAGE_COLUMNS.map((column) =>
  ['request_id', 'caller', 'environment', 'route'].includes(column)
    ? 's'
    : ['model', 'upstream', 'code'].includes(column)
      ? 's?'
      : [
            'ttfb_ms',
            'prompt_tokens',
            'completion_tokens',
            'cost_usd',
            'cache_read_tokens',
            'cache_write_tokens',
            'reasoning_tokens',
            'cache_savings_usd',
          ].includes(column)
        ? 'n?'
        : 'n',
);

/** A line longer than this was not written by a spool (a record's strings are bounded well below it). */
export const MAX_SPOOL_LINE_CHARS = 64 * 1024;

/** Encodes row `row` of `rows` as one spool line; `scratch` is an array the caller reuses (no array per record). */
export function spoolLine(seq: number, rows: UsageRows, row: number, scratch: unknown[]): string {
  scratch[0] = seq;
  rows.writeValues(row, scratch, 1);
  return `${JSON.stringify(scratch)}\n`;
}

/** A scratch array for `spoolLine`. */
export function spoolScratch(): unknown[] {
  return new Array<unknown>(WIDTH).fill(null);
}

export interface SpooledRecord {
  seq: number;
  record: UsageRecord;
}

/** The record of one line (without its `\n`), or undefined when the line is not one a spool wrote whole. */
export function parseSpoolLine(line: string): SpooledRecord | undefined {
  if (line.length > MAX_SPOOL_LINE_CHARS) return undefined;
  let values: unknown;
  try {
    values = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!Array.isArray(values) || values.length !== WIDTH) return undefined;
  const seq = values[0] as unknown;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return undefined;
  const row: Record<string, unknown> = {};
  for (let c = 0; c < USAGE_COLUMNS.length; c++) {
    const value = values[c + 1] as unknown;
    const kind = KINDS[c] as string;
    const ok =
      (value === null && kind.endsWith('?')) ||
      (typeof value === 'string' && kind.startsWith('s')) ||
      (typeof value === 'number' && Number.isFinite(value) && kind.startsWith('n'));
    if (!ok) return undefined;
    row[USAGE_COLUMNS[c] as string] = value;
  }
  return { seq, record: recordFromRow(row) };
}

/**
 * The runs of consecutive numbers in `seqs` (any order; 0, a record that was not spooled, left out), as the marks
 * of spool `spool`: `[3, 4, 5, 9]` → 3..5 and 9..9.
 */
export function marksOf(spool: string, seqs: readonly number[]): SpoolMark[] {
  const sorted = seqs.filter((seq) => seq > 0).sort((a, b) => a - b);
  const marks: SpoolMark[] = [];
  let first = sorted[0];
  let last = first;
  for (let i = 1; i <= sorted.length; i++) {
    const seq = sorted[i];
    if (first === undefined || last === undefined) break;
    if (seq !== undefined && seq <= last + 1) {
      last = Math.max(last, seq);
      continue;
    }
    marks.push({ spool, first, last });
    first = seq;
    last = seq;
  }
  return marks;
}

/** Whether `seq` is inside one of `marks` (sorted by `first`, not overlapping): a binary search. */
export function isMarked(marks: readonly SpoolMark[], seq: number): boolean {
  let low = 0;
  let high = marks.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const mark = marks[mid] as SpoolMark;
    if (seq < mark.first) high = mid - 1;
    else if (seq > mark.last) low = mid + 1;
    else return true;
  }
  return false;
}

/** The runs of `runs` without the numbers in `marks`. */
export function without(runs: readonly SpoolMark[], marks: readonly SpoolMark[]): SpoolMark[] {
  let left = [...runs];
  for (const mark of marks) {
    left = left.flatMap((run) => {
      if (mark.last < run.first || mark.first > run.last) return [run];
      const parts: SpoolMark[] = [];
      if (run.first < mark.first) parts.push({ ...run, last: mark.first - 1 });
      if (run.last > mark.last) parts.push({ ...run, first: mark.last + 1 });
      return parts;
    });
  }
  return left;
}
