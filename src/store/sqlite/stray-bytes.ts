import type { Dir } from 'node:fs';
import { lstat, opendir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { StraySweep } from '../file-contract.js';
import { PARTIAL_PREFIX } from './disk-content.js';

/**
 * Entries read per step: the folder is read this many names at a time (`opendir`'s buffer), and the event loop
 * gets a turn after each step, so a folder of 100,000 names never holds it for more than a step's record checks
 * (one indexed SQLite lookup each, a few microseconds) plus the `lstat` calls, which run off the loop.
 */
const STEP = 64;

/**
 * Removes the strays of one DiskContent folder (docs/files.md, "Storage"): `.partial-*` files (a write cut off by a
 * crash) and files `stray(name)` says no record names (a crash between the rename and the record's insert, or
 * between the record's delete and the unlink), but only those last written before `sweep.before`: another process
 * sharing DATA_DIR may be writing one right now, or about to insert its record. Other dot-files, folders and links
 * are never touched. Streams the folder (never the whole listing in memory); an entry that cannot be checked or
 * removed is reported to `sweep.onError` and skipped, and one gone meanwhile (another process removed it) is
 * skipped silently. Returns how many files this call removed.
 */
export async function removeStrays(dir: string, stray: (name: string) => boolean, sweep: StraySweep): Promise<number> {
  let folder: Dir;
  try {
    folder = await opendir(dir, { bufferSize: STEP });
  } catch (error) {
    if (!isGone(error)) sweep.onError?.(error, dir);
    return 0;
  }
  let removed = 0;
  let seen = 0;
  try {
    // Leaving the loop (the end, a break, a throw) closes the folder.
    for await (const entry of folder) {
      if (++seen % STEP === 0) await nextTurn();
      if (sweep.signal?.aborted) break;
      if (entry.isDirectory() || entry.isSymbolicLink()) continue;
      const partial = entry.name.startsWith(PARTIAL_PREFIX);
      if (!partial && (entry.name.startsWith('.') || !stray(entry.name))) continue;
      if (await removeIfOld(join(dir, entry.name), () => partial || stray(entry.name), sweep)) removed++;
    }
  } catch (error) {
    // The folder could not be read on (or the record check failed: the store closed under the sweep).
    sweep.onError?.(error, dir);
  }
  return removed;
}

/** Unlinks `path` when it is a plain file last written before `sweep.before` and `still()` holds right before. */
async function removeIfOld(path: string, still: () => boolean, sweep: StraySweep): Promise<boolean> {
  try {
    const stats = await lstat(path);
    if (!stats.isFile() || stats.mtimeMs >= sweep.before) return false;
    // Checked again after the (asynchronous) lstat: a record inserted meanwhile keeps its bytes.
    if (!still()) return false;
    await unlink(path);
    return true;
  } catch (error) {
    if (!isGone(error)) sweep.onError?.(error, path);
    return false;
  }
}

const isGone = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
