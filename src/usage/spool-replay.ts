import { readdir, rename, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { UsageStore } from '../store/store-contract.js';
import { isMarked } from './spool-lines.js';
import { isOwnerAlive, parseOwner, type SpoolOwner } from './spool-owner.js';
import { writeFromSegments } from './spool-reader.js';
import type { UsageLog } from './usage-log.js';
import { SEGMENT_NAME } from './usage-spool.js';

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
  const touched = holder.namespace === options.self.namespace ? undefined : await touchedAt(options.root, holder.token);
  if (isOwnerAlive(holder, options.self, touched)) return undefined;
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
  const paths = segments.map((name) => join(dir, name));
  const counts = await writeFromSegments(paths, {
    store,
    spool,
    log,
    signal,
    wanted: (seq) => !isMarked(marks, seq),
  });
  if (counts.aborted) return;
  for (const path of paths) await unlink(path);
  await rmdir(dir);
  await store.forgetSpool(spool);
  log.info(
    { spool, written: counts.written, already_stored: counts.skipped, unreadable: counts.unreadable },
    'usage records of a stopped process were written from its spool',
  );
}

/** When the folder of a live spool `token` was last touched (its heartbeat), or undefined when there is none. */
async function touchedAt(root: string, token: string): Promise<number | undefined> {
  try {
    return (await stat(join(root, token))).mtimeMs;
  } catch {
    return undefined;
  }
}
