import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Database } from '../../../src/store/sqlite/database.js';
import { SqliteWriteBatcher, writeBatcherFor } from '../../../src/store/sqlite/write-batcher.js';

function openDb(path = ':memory:'): Database {
  const db = new Database(new DatabaseSync(path));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL) STRICT');
  return db;
}

test('writes of one event-loop turn commit in one transaction, in order, each seeing the earlier ones', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-batcher-'));
  try {
    const path = join(dir, 'db.sqlite');
    const db = openDb(path);
    const reader = new Database(new DatabaseSync(path, { readOnly: true }));
    const batcher = new SqliteWriteBatcher(db);
    const insert = db.prepare<[string, number]>('INSERT INTO t (k, v) VALUES (?, ?)');
    const read = db.prepare<[string], { v: number }>('SELECT v FROM t WHERE k = ?');
    const visibleToOthers = reader.prepare<[], number>('SELECT COUNT(*) FROM t').pluck();
    const results = await Promise.all([
      batcher.run(() => insert.run('a', 1).changes),
      batcher.run(() => read.get('a')?.v), // sees the write queued before it
      batcher.run(() => {
        insert.run('b', 2);
        // Still one open transaction: another connection sees none of the batch yet.
        return { inTransaction: db.inTransaction, visible: visibleToOthers.get() };
      }),
    ]);
    assert.deepEqual(results, [1, 1, { inTransaction: true, visible: 0 }]);
    assert.equal(db.inTransaction, false, 'committed before the promises resolved');
    assert.equal(visibleToOthers.get(), 2);
    reader.close();
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a work that throws is rolled back alone and rejects only its own promise', async () => {
  const db = openDb();
  const batcher = new SqliteWriteBatcher(db);
  const insert = db.prepare<[string, number]>('INSERT INTO t (k, v) VALUES (?, ?)');
  const outcomes = await Promise.allSettled([
    batcher.run(() => insert.run('x', 1)),
    batcher.run(() => {
      insert.run('y', 2); // written, then undone with its savepoint
      insert.run('x', 3); // primary-key conflict
    }),
    batcher.run(() => insert.run('z', 4)),
  ]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  const failure = outcomes[1];
  assert.ok(failure?.status === 'rejected' && /UNIQUE constraint failed/.test(String(failure.reason)));
  assert.deepEqual(
    db.prepare('SELECT k FROM t ORDER BY k').pluck().all(),
    ['x', 'z'],
    "y was rolled back with the failed work's savepoint",
  );
  db.close();
});

test('when the transaction cannot begin (database closed), every write of the batch rejects', async () => {
  const db = openDb();
  const batcher = new SqliteWriteBatcher(db);
  const insert = db.prepare<[string, number]>('INSERT INTO t (k, v) VALUES (?, ?)');
  const pending = [batcher.run(() => insert.run('a', 1)), batcher.run(() => insert.run('b', 2))];
  db.close();
  for (const p of pending) await assert.rejects(p, /not open/);
});

test('one batcher per database, shared by every store on it', () => {
  const db = openDb();
  assert.equal(writeBatcherFor(db), writeBatcherFor(db));
  assert.notEqual(writeBatcherFor(db), writeBatcherFor(openDb()));
  db.close();
});
