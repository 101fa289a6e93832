/**
 * The entry point of the WAL checkpointing thread, which wal-checkpointer.ts starts once a store's WAL first grows
 * past its size bound. It has its own connection to the file and copies the WAL back into the database (and
 * fsyncs both) here, so no commit on the serving thread pays for a checkpoint (SQLite's automatic one, turned off,
 * ran inside the commit that crossed 1000 pages). It imports only Node's own modules (and a type): built it is
 * plain JavaScript, and its TypeScript source runs under Node's own type stripping, with no loader.
 */
import { statSync } from 'node:fs';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import type { CheckpointThreadData } from './wal-bounds.js';

/** One row of `PRAGMA wal_checkpoint(...)`: SQLITE_BUSY (1) or 0, the WAL's frames, the frames now in the database. */
type CheckpointRow = [busy: number, log: number, checkpointed: number];

/** After a checkpoint, the WAL is looked at again this soon (not `pollMs`): under heavy writes it keeps up. */
const BUSY_POLL_MS = 10;

function checkpointer(port: NonNullable<typeof parentPort>, data: CheckpointThreadData): void {
  const { path, walBytes, pollMs, idleMs } = data;
  const walPath = `${path}-wal`;
  // No busy wait: PASSIVE takes no lock a writer holds, and the idle TRUNCATE is simply tried again later.
  const db = new DatabaseSync(path, { timeout: 0 });
  db.exec('PRAGMA wal_autocheckpoint = 0');
  const arrays = (statement: StatementSync): StatementSync => {
    statement.setReturnArrays(true);
    return statement;
  };
  const dataVersion = arrays(db.prepare('PRAGMA data_version'));
  const passive = arrays(db.prepare('PRAGMA wal_checkpoint(PASSIVE)'));
  const truncate = arrays(db.prepare('PRAGMA wal_checkpoint(TRUNCATE)'));
  const run = (statement: StatementSync): CheckpointRow | undefined => {
    try {
      return statement.get() as unknown as CheckpointRow;
    } catch {
      return undefined; // busy (another process's checkpoint, a lock past the wait): the next poll tries again
    }
  };
  const walSize = (): number => statSync(walPath, { throwIfNoEntry: false })?.size ?? 0;

  let seenVersion: unknown;
  let checkpointedVersion: unknown;
  let lastCommitAt = Date.now();
  let idleDone = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const tick = (): void => {
    try {
      look();
    } catch {
      // A read refused while another connection starts the WAL over (SQLITE_BUSY with no wait): the thread must
      // not die of it (its loss puts the serving connection back on SQLite's checkpoint in the commit); look again.
    }
    if (!closed) timer = setTimeout(tick, next);
  };

  let next = pollMs;
  const look = (): void => {
    next = pollMs;
    const version = (dataVersion.get() as unknown as unknown[])[0];
    if (version !== seenVersion) {
      seenVersion = version;
      lastCommitAt = Date.now();
      idleDone = false;
    }
    const size = walSize();
    if (size > walBytes && version !== checkpointedVersion) {
      checkpointedVersion = version;
      // PASSIVE neither waits for nor blocks a writer. Once it has copied all (no commit came during the copy),
      // the next commit starts the WAL over; commits made during the copy are copied by the next round.
      run(passive);
      next = BUSY_POLL_MS; // writes are coming in: look again soon
    } else if (!idleDone && size > 0 && Date.now() - lastCommitAt >= idleMs) {
      // Quiet: copy what is left without a lock, then (all of it copied, so the write lock is held only to cut
      // the file: a writer arriving then waits that long) truncate the WAL to zero bytes.
      idleDone = true;
      const row = run(passive);
      if (row && row[0] === 0 && row[1] === row[2]) run(truncate);
    }
  };

  port.on('message', (message: unknown) => {
    if (message !== 'close') return;
    closed = true;
    clearTimeout(timer);
    db.close();
    port.close();
  });
  tick();
}

if (parentPort) checkpointer(parentPort, workerData as CheckpointThreadData);
