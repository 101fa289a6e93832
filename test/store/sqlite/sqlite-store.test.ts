import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';

test('the embedded store: WAL mode, migrations applied once, reopened without change', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-'));
  try {
    const first = await openSqliteStore(dir);
    assert.equal(first.db.pragma('journal_mode', { simple: true }), 'wal');
    const latest = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]?.version;
    assert.equal(first.schemaVersion, latest);
    await first.ping();
    await first.close();

    const second = await openSqliteStore(dir); // a restart on the same data directory
    const rows = second.db
      .prepare('SELECT version, name, applied_at FROM schema_migrations ORDER BY version')
      .all() as Array<{ version: number; applied_at: string }>;
    assert.deepEqual(
      rows.map((r) => r.version),
      SQLITE_MIGRATIONS.map((m) => m.version),
      'each migration recorded exactly once',
    );
    assert.match(rows[0]?.applied_at ?? '', /Z$/, 'ISO 8601 UTC');
    assert.ok(second.db.prepare("SELECT name FROM sqlite_master WHERE name = 'gateway_meta'").get());
    await second.close();
    await assert.rejects(second.ping(), 'a closed store fails its health check');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an in-memory store for tests', async () => {
  const store = await openSqliteStore(':memory:');
  assert.equal(store.kind, 'sqlite');
  await store.ping();
  await store.close();
});
