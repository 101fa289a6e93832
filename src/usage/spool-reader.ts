import { open } from 'node:fs/promises';
import type { SpoolMark, UsageStore } from '../store/store-contract.js';
import { UsageRowsRefused, recordRows } from '../store/usage-sql.js';
import { writeAroundRefused } from './refused-records.js';
import { MAX_SPOOL_LINE_CHARS, isMarked, marksOf, parseSpoolLine, without, type SpooledRecord } from './spool-lines.js';
import type { UsageLog } from './usage-log.js';
import type { UsageSpool } from './usage-spool.js';

/** Records per write from a spool (the recorder's batch size). */
const WRITE_BATCH = 500;
/** Bytes read from a segment at a time: a few hundred lines, parsed between two turns of the event loop. */
const READ_BYTES = 64 * 1024;

export interface SegmentsWrite {
  store: UsageStore;
  /** The spool the segments are of (their records' marks carry it). */
  spool: string;
  log: Pick<UsageLog, 'error'>;
  /** Which records to write (the others are counted as `skipped`). */
  wanted: (seq: number) => boolean;
  /** After each write: the marks of what it stored (or set aside). */
  written?: (marks: readonly SpoolMark[]) => void;
  signal?: AbortSignal;
}

export interface SegmentsWritten {
  written: number;
  skipped: number;
  unreadable: number;
  setAside: number;
  /** Stopped by the signal before the end. */
  aborted: boolean;
}

/**
 * Writes the wanted records of spool segments into the store, in batches, each with its marks (so that what is
 * written is never written again from the spool). A record the store refuses is set aside, logged whole, as the
 * recorder does; any other failure of the store throws (what was written stays written, with its marks).
 */
export async function writeFromSegments(paths: readonly string[], options: SegmentsWrite): Promise<SegmentsWritten> {
  const { store, spool, log } = options;
  const counts: SegmentsWritten = { written: 0, skipped: 0, unreadable: 0, setAside: 0, aborted: false };
  let batch: SpooledRecord[] = [];
  const write = async () => {
    if (batch.length === 0) return;
    const records = batch;
    batch = [];
    const setAside = (record: SpooledRecord, error: UsageRowsRefused) => {
      counts.setAside += 1;
      options.written?.(marksOf(spool, [record.seq]));
      log.error(
        { err: error, usage_record: record.record, spool },
        'a usage record the usage store refused was set aside (dead-lettered): it is in this line, not in the store',
      );
    };
    await writeSpooled(store, spool, records, setAside, options.written);
    counts.written += records.length;
  };
  for (const path of paths) {
    for await (const line of completeLines(path, () => (counts.unreadable += 1))) {
      if (options.signal?.aborted) return { ...counts, aborted: true };
      const spooled = parseSpoolLine(line);
      if (!spooled) counts.unreadable += 1;
      else if (!options.wanted(spooled.seq)) counts.skipped += 1;
      else batch.push(spooled);
      if (batch.length >= WRITE_BATCH) await write();
    }
  }
  await write();
  counts.written -= counts.setAside;
  return counts;
}

/**
 * Writes the records a live spool holds that are nowhere else (stranded: dropped from the recorder's memory while the
 * store was down), segment by segment. A stranded record whose line is not in its segment (the disk refused that
 * write) is given up: counted as `lost` and never looked for again. Returns how many were written.
 */
export async function writeStranded(
  spool: UsageSpool,
  store: UsageStore,
  log: Pick<UsageLog, 'warn' | 'error'>,
): Promise<number> {
  let written = 0;
  let lost = 0;
  for (const { path, marks } of spool.strandedSegments()) {
    const found: number[] = [];
    const counts = await writeFromSegments([path], {
      store,
      spool: spool.id,
      log,
      wanted: (seq) => isMarked(marks, seq) && found.push(seq) > 0,
      written: (stored) => spool.confirm(stored),
    });
    written += counts.written;
    const missing = without(marks, marksOf(spool.id, found));
    if (missing.length > 0) {
      lost += missing.reduce((n, m) => n + m.last - m.first + 1, 0);
      spool.confirm(missing); // not in the file, so not to be found there: given up
    }
  }
  if (written > 0 || lost > 0)
    log[lost > 0 ? 'error' : 'warn'](
      { written, lost },
      'usage records dropped from memory while the usage store was down were written from the spool',
    );
  return written;
}

/** Writes spooled records with their marks; a record the store refuses is set aside as the recorder does. */
async function writeSpooled(
  store: UsageStore,
  spool: string,
  records: SpooledRecord[],
  setAside: (record: SpooledRecord, error: UsageRowsRefused) => void,
  written: ((marks: readonly SpoolMark[]) => void) | undefined,
): Promise<void> {
  const append = async (part: readonly SpooledRecord[]) => {
    const marks = marksOf(
      spool,
      part.map((r) => r.seq),
    );
    await store.appendRows([recordRows(part.map((r) => r.record))], marks);
    written?.(marks);
  };
  try {
    await append(records);
  } catch (error) {
    if (!(error instanceof UsageRowsRefused)) throw error;
    const around = await writeAroundRefused(append, records, error, setAside);
    if (around.unwritten.length > 0) throw around.error;
  }
}

/**
 * The lines of a segment that end in `\n`, read a bounded piece at a time. What follows the last `\n` (a write a
 * crash cut) is left out; a line longer than MAX_SPOOL_LINE_CHARS bytes is skipped whole (`skipped`). Lines are cut
 * at `\n` bytes before they are decoded, so a character split between two reads stays whole.
 */
async function* completeLines(path: string, skipped: () => void): AsyncGenerator<string> {
  const file = await open(path, 'r');
  try {
    let carry: Buffer[] = [];
    let carried = 0;
    let skipping = false;
    for (;;) {
      const buffer = Buffer.allocUnsafe(READ_BYTES);
      const { bytesRead } = await file.read(buffer, 0, READ_BYTES, null);
      if (bytesRead === 0) return;
      const chunk = buffer.subarray(0, bytesRead);
      let start = 0;
      for (let end = chunk.indexOf(10, start); end !== -1; end = chunk.indexOf(10, start)) {
        const piece =
          carried === 0 ? chunk.subarray(start, end) : Buffer.concat([...carry, chunk.subarray(start, end)]);
        carry = [];
        carried = 0;
        start = end + 1;
        if (skipping) skipping = false;
        else yield piece.toString('utf8');
      }
      if (skipping || start === bytesRead) continue;
      carry.push(chunk.subarray(start));
      carried += bytesRead - start;
      if (carried > MAX_SPOOL_LINE_CHARS) {
        carry = [];
        carried = 0;
        skipping = true;
        skipped();
      }
    }
  } finally {
    await file.close();
  }
}
