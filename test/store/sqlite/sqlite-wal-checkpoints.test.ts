// The SQLite WAL is checkpointed on a thread of its own (src/store/sqlite/wal-checkpointer.ts): SQLite's automatic
// checkpoint ran inside the commit that took the WAL past 1000 pages, on the serving thread (the retention sweep
// of 200k usage records saw steps of 82 and 138 ms). Whether a commit copied the WAL into the database is read
// from the main thread's own I/O count (/proc/self/task/<tid>/io, Linux): a checkpoint writes the ~4 MB it copies,
// so the count proves where the copy ran without depending on the timing of a loaded machine's disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { openSqliteStore, SQLITE_FILE, type SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { CHECKPOINT_BOUNDS } from '../../../src/store/sqlite/wal-bounds.js';
import { waitFor } from '../../helpers/wait.js';

const MAIN_THREAD_IO = `/proc/self/task/${process.pid}/io`;

/** Bytes the main thread has written through write(2) and its kin, whatever the file. */
function mainThreadWrites(): number {
  return Number(/^wchar: (\d+)$/m.exec(readFileSync(MAIN_THREAD_IO, 'utf8'))?.[1]);
}

const walSize = (dir: string) => statSync(join(dir, `${SQLITE_FILE}-wal`), { throwIfNoEntry: false })?.size ?? 0;

function blobs(store: SqliteStore): (bytes: Buffer) => void {
  store.db.exec('CREATE TABLE IF NOT EXISTS wal_test (id INTEGER PRIMARY KEY, v BLOB NOT NULL)');
  const insert = store.db.prepare<[Buffer]>('INSERT INTO wal_test (v) VALUES (?)');
  const trim = store.db.prepare('DELETE FROM wal_test WHERE id < (SELECT MAX(id) - 16 FROM wal_test)');
  return store.db.transaction((bytes: Buffer) => {
    insert.run(bytes);
    trim.run();
  });
}

test(
  'no commit copies the WAL into the database: 12 MB of commits (three of SQLite 1000-page checkpoints) each write only their own pages on the serving thread',
  { skip: !existsSync(MAIN_THREAD_IO) && 'no per-thread I/O accounting here (Linux /proc)' },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-wal-'));
    const store = await openSqliteStore(dir);
    try {
      const write = blobs(store);
      const bytes = Buffer.alloc(256 * 1024, 7);
      const written: number[] = [];
      const took: number[] = [];
      // 48 commits of 256 KB, a little apart as a server's are (the thread copies between them): 12 MB in all,
      // under the 16 MB past which a commit would checkpoint itself, and past SQLite's 1000 pages three times.
      for (let i = 0; i < 48; i++) {
        const before = mainThreadWrites();
        const started = performance.now();
        write(bytes);
        took.push(performance.now() - started);
        written.push(mainThreadWrites() - before);
        await sleep(15);
      }
      const sorted = [...written].sort((a, b) => a - b);
      const median = sorted[sorted.length >> 1] as number;
      const most = sorted[sorted.length - 1] as number;
      const slowest = Math.max(...took).toFixed(1);
      // A commit writes its ~70 pages (~280 KB); one that checkpoints writes the ~4 MB it copies as well.
      assert.ok(median > 256 * 1024, `a commit writes at least its blob (median ${median} bytes)`);
      assert.ok(
        most < 2 * median,
        `no commit writes more than its own pages: the most was ${most} bytes, the median ${median} (slowest commit ${slowest} ms)`,
      );
      assert.equal(store.checkpointer?.threadStarted, true, 'the WAL passed 4 MB: the checkpointing thread runs');
      // The thread copied all of it: quiet for `idleMs`, the WAL is truncated to zero bytes, off this thread.
      await waitFor(
        'the idle WAL truncated to zero bytes',
        () => walSize(dir) === 0,
        CHECKPOINT_BOUNDS.idleMs + 10_000,
      );
      write(bytes); // and it is written again from its start
      assert.ok(walSize(dir) > 0 && walSize(dir) < 1024 * 1024, `the WAL starts again: ${walSize(dir)} bytes`);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test('under writes that never pause, from two connections on one file (two workers), the WAL stays bounded', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-wal-'));
  const first = await openSqliteStore(dir);
  const second = await openSqliteStore(dir);
  try {
    const writes = [blobs(first), blobs(second)];
    const bytes = Buffer.alloc(64 * 1024, 9);
    let largest = 0;
    const threadRan = (): boolean =>
      first.checkpointer?.threadStarted === true || second.checkpointer?.threadStarted === true;
    // 48 MB, three times the bound, one commit per turn of the event loop: no pause for a copy to end in. On a
    // fast machine 48 MB can be written before a store's timer (every 100 ms) first looks: the writes go on until
    // a thread has started (a condition, not a count), at most 192 MB.
    for (let i = 0; i < 768 || (!threadRan() && i < 4 * 768); i++) {
      writes[i % 2]?.(bytes);
      largest = Math.max(largest, walSize(dir));
      await nextTurn();
    }
    // Past 16 MB a commit checkpoints what the threads have not copied (once a thread's copy under way has
    // ended), and the next starts the WAL over: 16 MB and what comes in during one copy (17 MB here when idle).
    const bound = 1.5 * CHECKPOINT_BOUNDS.maxWalBytes;
    assert.ok(largest <= bound, `the WAL reached ${largest} bytes, over ${bound}`);
    assert.ok(largest > CHECKPOINT_BOUNDS.walBytes, `the writes took the WAL past 4 MB (${largest} bytes)`);
    // A thread starts when its store's timer (every 100 ms) sees the WAL past 4 MB; the other store's thread may
    // have copied it back under before its own timer looked, so at least one, not necessarily both.
    assert.ok(threadRan(), 'a checkpoint thread ran');
    assert.equal(first.db.pragma('quick_check', { simple: true }), 'ok');
  } finally {
    await first.close();
    await second.close();
  }
  assert.equal(existsSync(join(dir, `${SQLITE_FILE}-wal`)), false, 'closed, the last connection removed the WAL');
  rmSync(dir, { recursive: true, force: true });
});

test('a store written little never starts the thread; one in memory has no checkpointer; close ends both', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-wal-'));
  const store = await openSqliteStore(dir);
  try {
    blobs(store)(Buffer.alloc(64 * 1024));
    assert.equal(
      store.db.pragma('wal_autocheckpoint', { simple: true }),
      Math.ceil(CHECKPOINT_BOUNDS.maxWalBytes / 4096),
      'the serving connection checkpoints only past the hard bound (SQLite: 1000 pages)',
    );
    await sleep(3 * CHECKPOINT_BOUNDS.pollMs); // the WAL looked at a few times: under 4 MB, no thread
    assert.equal(store.checkpointer?.threadStarted, false);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const memory = await openSqliteStore(':memory:');
  assert.equal(memory.checkpointer, undefined);
  await memory.close();
});
