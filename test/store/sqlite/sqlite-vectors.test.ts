/** What the embedded vector store adds to the contract: sqlite-vec loaded when it opens, and only it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../../../src/store/sqlite/sqlite-vectors.js';
import { openVectorStore } from '../../../src/store/open-vector-store.js';

test('migration 27 creates the vector tables and their full-text index', async () => {
  assert.equal(SQLITE_MIGRATIONS.find((m) => m.version === 27)?.name, 'vector_stores');
  const sqlite = await openSqliteStore(':memory:');
  try {
    for (const table of [
      'vector_stores',
      'vector_store_files',
      'vector_file_batches',
      'vector_chunks',
      'vector_chunks_fts',
    ])
      assert.ok(sqlite.db.prepare('SELECT 1 FROM sqlite_master WHERE name = ?').get(table), table);
  } finally {
    await sqlite.close();
  }
});

test('sqlite-vec is loaded when the vector store opens, not before; loading is locked again after', async () => {
  const sqlite = await openSqliteStore(':memory:');
  try {
    assert.throws(() => sqlite.db.prepare('SELECT vec_version()').get(), /no such function/);
    const opened = await openVectorStore('embedded', { sqlite });
    assert.ok(opened.store instanceof SqliteVectors);
    assert.equal(opened.store.capabilities.backend, 'sqlite');
    assert.match(String((sqlite.db.prepare('SELECT vec_version() AS v').get() as { v: string }).v), /^v0\.1\./);
    new SqliteVectors(sqlite.db); // a second store on the connection: the extension is not loaded twice
    assert.throws(() => sqlite.db.prepare("SELECT load_extension('/nonexistent')").get(), /not authorized/);
    await opened.close();
  } finally {
    await sqlite.close();
  }
});

test('a vec0 table per dimension and metric, partitioned by store, created with the first vector', async () => {
  const sqlite = await openSqliteStore(':memory:');
  try {
    const store = new SqliteVectors(sqlite.db);
    const record = await store.createStore({
      id: 'vs_1',
      owner: 'alice',
      principal: '{}',
      name: 'n',
      metadata: null,
      createdMs: 1,
      lastActiveMs: 1,
      expiresAfterDays: null,
      embeddingModel: 'm',
      dimensions: null,
      metric: 'euclidean',
      index: 'flat',
    });
    const chunking = { maxTokens: 800, overlapTokens: 400 };
    await store.addFiles([
      {
        storeId: record.id,
        fileId: 'file-1',
        owner: 'alice',
        batchId: null,
        filename: 'f',
        createdMs: 1,
        attributes: {},
        chunking,
      },
    ]);
    await store.claimFiles('h', 1000, 10, 1);
    const vector = new Float32Array([1, 2, 3]);
    assert.equal(
      (await store.completeFile(record.id, 'file-1', 'h', [{ seq: 0, text: 'x', tokens: 1, vector }])).kind,
      'completed',
    );
    const sql = sqlite.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'vec_d3_l2'").pluck().get() as string;
    assert.match(sql, /store_id TEXT PARTITION KEY/);
    assert.match(sql, /distance_metric=l2/);
  } finally {
    await sqlite.close();
  }
});
