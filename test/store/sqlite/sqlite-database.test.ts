// The node:sqlite adapter (src/store/sqlite/database.ts): what the store relied on in better-sqlite3, kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isBusyError, openDatabase, type Database } from '../../../src/store/sqlite/database.js';

async function memory(): Promise<Database> {
  const db = await openDatabase(':memory:', 0);
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL) STRICT');
  return db;
}

test('prepare: positional and @named parameters (keys naming no parameter ignored), rows, pluck', async () => {
  const db = await memory();
  const insert = db.prepare<[{ k: string; v: number; unused: string }]>('INSERT INTO t (k, v) VALUES (@k, @v)');
  assert.equal(insert.run({ k: 'a', v: 1, unused: 'ignored as better-sqlite3 did' }).changes, 1);
  db.prepare<[string, number]>('INSERT INTO t (k, v) VALUES (?, ?)').run('b', 2);
  assert.deepEqual(
    { ...db.prepare<[string], { k: string; v: number }>('SELECT k, v FROM t WHERE k = ?').get('a') },
    { k: 'a', v: 1 },
  );
  assert.equal(db.prepare('SELECT v FROM t WHERE k = ?').get('zzz'), undefined);
  const values = db.prepare<[], number>('SELECT v FROM t ORDER BY k').pluck();
  assert.deepEqual(values.all(), [1, 2]);
  assert.equal(values.get(), 1);
  assert.equal(db.prepare<[string], number>('SELECT v FROM t WHERE k = ?').pluck().get('zzz'), undefined);
  assert.equal(db.pragma('user_version', { simple: true }), 0);
  db.close();
  assert.equal(db.open, false);
});

test('transaction: BEGIN ... COMMIT, a SAVEPOINT when nested; a throw undoes only its own level', async () => {
  const db = await memory();
  const insert = db.prepare<[string, number]>('INSERT INTO t (k, v) VALUES (?, ?)');
  const keys = () => db.prepare<[], string>('SELECT k FROM t ORDER BY k').pluck().all();
  const inner = db.transaction((k: string) => {
    insert.run(k, 1);
    if (k.startsWith('bad')) throw new Error(`refused ${k}`);
    return db.inTransaction;
  });
  const outer = db.transaction(() => {
    assert.equal(inner('x'), true);
    assert.throws(() => inner('bad-y'), /refused bad-y/);
    return inner('z');
  });
  assert.equal(outer.immediate(), true);
  assert.equal(db.inTransaction, false);
  assert.deepEqual(keys(), ['x', 'z'], 'the failed savepoint alone was rolled back');
  assert.throws(() => db.transaction(() => insert.run('w', 1) && assert.fail('then a throw'))(), /then a throw/);
  assert.deepEqual(keys(), ['x', 'z'], 'a top-level throw rolls the whole transaction back');
  assert.equal(db.inTransaction, false);
  assert.throws(() => db.transaction(async () => undefined)(), /cannot return a promise/);
  assert.equal(db.inTransaction, false);
  db.close();
});

test('isBusyError: another connection holding the write lock past the busy timeout', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-sqlite-db-'));
  try {
    const path = join(dir, 'db.sqlite');
    const holder = await openDatabase(path, 0);
    holder.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT) STRICT');
    const other = await openDatabase(path, 0);
    holder.exec('BEGIN IMMEDIATE');
    let caught: unknown;
    try {
      other.transaction(() => other.prepare("INSERT INTO t VALUES ('x')").run()).immediate();
    } catch (error) {
      caught = error;
    }
    assert.equal(isBusyError(caught), true, String(caught));
    assert.equal(isBusyError(new Error('database is locked')), false, 'only SQLite errors, by their code');
    assert.equal(other.inTransaction, false);
    holder.exec('ROLLBACK');
    holder.close();
    other.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
