import { open, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { UsageStore } from '../store/contract.js';
import { UsageRowsRefused, recordRows } from '../store/usage-sql.js';
import { writeAroundRefused } from './refused-records.js';
import { MAX_SPOOL_LINE_CHARS, isMarked, marksOf, parseSpoolLine, type SpooledRecord } from './spool-lines.js';
import { isOwnerAlive, parseOwner, type SpoolOwner } from './spool-owner.js';
import type { UsageLog } from './usage-log.js';
import { SEGMENT_NAME } from './usage-spool.js';

/** Records per write of a replay (the recorder's batch size). */
const REPLAY_BATCH = 500;
/** Bytes read from a segment at a time: a few hundred lines, parsed between two turns of the event loop. */
const READ_BYTES = 64 * 1024;

export interface ReplayOptions {
  /** DATA_DIR/usage-spool. */
  root: string;
  /** This process (its own live spool is never replayed). */
  self: SpoolOwner;
  store: UsageStore;
  log: UsageLog;
  signal: AbortSignal;
}

/**
 * Writes into the store the records of every spool whose process is gone (docs/usage.md, "Durability"): this
 * process's predecessor after a crash, a sibling worker that died. A spool folder is claimed by renaming it to
 * `<spool>@<claimer>` (a rename succeeds once: two processes starting together never replay one spool twice); a
 * claimer that dies in turn leaves it to the next. The records the store already has (their marks were written with
 * them) are skipped; the rest are written with their marks, so a replay cut off by another crash and run again writes
 * nothing twice. Then the folder and its marks are removed. A last line without its `\n` (a write the crash cut) and
 * a line that cannot be read are skipped and counted.
 */
export async function replayDeadSpools(options: ReplayOptions): Promise<void> {
  let names: string[];
  try {
    names = await readdir(options.root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const name of names) {
    if (options.signal.aborted) return;
    const claimed = await claim(options, name);
    if (claimed) await replayFolder(options, claimed.spool, join(options.root, claimed.name));
  }
}

/** The folder's new name and its spool when this process may replay it (its holder is dead, or is this process). */
async function claim(options: ReplayOptions, name: string): Promise<{ name: string; spool: string } | undefined> {
  const parts = name.split('@');
  const spool = parts[0] as string;
  const holder = parseOwner(parts[parts.length - 1] as string);
  // Not a spool folder, or this process's own live spool.
  if (parts.length > 2 || !parseOwner(spool) || !holder || name === options.self.token) return undefined;
  if (holder.token === options.self.token) return { name, spool }; // claimed earlier by this process, not finished
  if (isOwnerAlive(holder, options.self)) return undefined;
  const mine = `${spool}@${options.self.token}`;
  try {
    await rename(join(options.root, name), join(options.root, mine));
  } catch (error) {
    // Another process claimed it first.
    if (['ENOENT', 'ENOTEMPTY', 'EEXIST'].includes((error as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw error;
  }
  return { name: mine, spool };
}

async function replayFolder(options: ReplayOptions, spool: string, dir: string): Promise<void> {
  const { store, log, signal } = options;
  const marks = await store.spoolMarks(spool);
  const segments = (await readdir(dir)).filter((name) => SEGMENT_NAME.test(name)).sort();
  const counts = { written: 0, stored: 0, unreadable: 0, setAside: 0 };
  let batch: SpooledRecord[] = [];
  const write = async () => {
    if (batch.length === 0) return;
    const records = batch;
    batch = [];
    await writeSpooled(store, spool, records, (record, error) => {
      counts.setAside += 1;
      log.error(
        { err: error, usage_record: record.record, spool },
        'a usage record the usage store refused was set aside (dead-lettered): it is in this line, not in the store',
      );
    });
    counts.written += records.length;
  };
  for (const segment of segments) {
    for await (const line of completeLines(join(dir, segment), () => (counts.unreadable += 1))) {
      if (signal.aborted) return;
      const spooled = parseSpoolLine(line);
      if (!spooled) counts.unreadable += 1;
      else if (isMarked(marks, spooled.seq)) counts.stored += 1;
      else batch.push(spooled);
      if (batch.length >= REPLAY_BATCH) await write();
    }
  }
  await write();
  for (const segment of segments) await unlink(join(dir, segment));
  await rmdir(dir);
  await store.forgetSpool(spool);
  log.info(
    { spool, written: counts.written - counts.setAside, already_stored: counts.stored, unreadable: counts.unreadable },
    'usage records of a stopped process were written from its spool',
  );
}

/** Writes replayed records with their marks; a record the store refuses is set aside as the recorder does. */
async function writeSpooled(
  store: UsageStore,
  spool: string,
  records: SpooledRecord[],
  setAside: (record: SpooledRecord, error: UsageRowsRefused) => void,
): Promise<void> {
  const append = (part: readonly SpooledRecord[]) =>
    store.appendRows(
      [recordRows(part.map((r) => r.record))],
      marksOf(
        spool,
        part.map((r) => r.seq),
      ),
    );
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
