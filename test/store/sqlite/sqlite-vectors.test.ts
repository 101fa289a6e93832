/**
 * What the embedded vector store adds to the contract: sqlite-vec loaded when it opens, and only it; a store's
 * chunks dropped in slices; searches on a thread of their own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../../../src/store/sqlite/sqlite-vectors.js';
import { openVectorStore } from '../../../src/store/open-vector-store.js';
import { MAX_PENDING_SEARCHES, SearchQueueFull } from '../../../src/store/sqlite/vector-search-client.js';

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

test("a deleted store's chunks are dropped a slice at a time, and a drop cut off is finished by the sweep", async () => {
  const sqlite = await openSqliteStore(':memory:');
  try {
    const store = new SqliteVectors(sqlite.db);
    const chunking = { maxTokens: 800, overlapTokens: 400 };
    const fill = async (id: string) => {
      await store.createStore({
        id,
        owner: 'alice',
        principal: '{}',
        name: 'n',
        metadata: null,
        createdMs: 1,
        lastActiveMs: 1,
        expiresAfterDays: null,
        embeddingModel: 'm',
        dimensions: null,
        metric: 'cosine',
        index: 'flat',
      });
      await store.addFiles([
        {
          storeId: id,
          fileId: 'file-1',
          owner: 'alice',
          batchId: null,
          filename: 'f',
          createdMs: 1,
          attributes: {},
          chunking,
        },
      ]);
      await store.claimFiles(`h-${id}`, 1000, 10, 1);
      const chunks = Array.from({ length: 1200 }, (_, seq) => ({
        seq,
        text: `chunk ${seq}`,
        tokens: 2,
        vector: Float32Array.from([seq, 1, 2, 3]),
      }));
      assert.equal((await store.completeFile(id, 'file-1', `h-${id}`, chunks)).kind, 'completed');
    };
    const count = (id: string) => ({
      chunks: sqlite.db.prepare('SELECT count(*) FROM vector_chunks WHERE store_id = ?').pluck().get(id),
      vectors: sqlite.db.prepare('SELECT count(*) FROM vec_d4_cosine WHERE store_id = ?').pluck().get(id),
    });
    await fill('vs_a');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    assert.equal(await store.deleteStore('alice', 'vs_a'), true);
    clearInterval(timer);
    assert.ok(ticks >= 1, 'the event loop was served between slices');
    assert.deepEqual(count('vs_a'), { chunks: 0, vectors: 0 });

    // A restart cut the drop short: the store's rows are gone, its chunks and its drop row are not.
    await fill('vs_b');
    sqlite.db.exec(`INSERT INTO vector_store_drops (store_id, dimensions, metric) VALUES ('vs_b', 4, 'cosine');
                    DELETE FROM vector_stores WHERE id = 'vs_b'; DELETE FROM vector_store_files WHERE store_id = 'vs_b'`);
    assert.deepEqual(await store.matchText({ storeId: 'vs_b', text: 'chunk', k: 3 }), [], 'not searchable meanwhile');
    assert.equal(await store.sweepExpired(2, 10), 0);
    assert.deepEqual(count('vs_b'), { chunks: 0, vectors: 0 });
    assert.equal(sqlite.db.prepare('SELECT count(*) FROM vector_store_drops').pluck().get(), 0);
  } finally {
    await sqlite.close();
  }
});

test('on a database file, searches run on their own thread, at most 256 waiting', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-vsearch-'));
  const sqlite = await openSqliteStore(dir);
  const store = new SqliteVectors(sqlite.db);
  try {
    assert.equal(store.searchesOffThread, true);
    const record = await store.createStore({
      id: 'vs_t',
      owner: 'alice',
      principal: '{}',
      name: 'n',
      metadata: null,
      createdMs: 1,
      lastActiveMs: 1,
      expiresAfterDays: null,
      embeddingModel: 'm',
      dimensions: null,
      metric: 'cosine',
      index: 'flat',
    });
    const chunking = { maxTokens: 800, overlapTokens: 400 };
    await store.addFiles([
      {
        storeId: 'vs_t',
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
    const chunks = Array.from({ length: 2000 }, (_, seq) => ({
      seq,
      text: `chunk ${seq}`,
      tokens: 2,
      vector: Float32Array.from({ length: 64 }, (_, j) => Math.sin(seq * 0.37 + j * 1.3)),
    }));
    await store.completeFile('vs_t', 'file-1', 'h', chunks);
    const live = (await store.getStore('alice', record.id))!;
    const hits = await store.nearest({ store: live, vector: chunks[7]!.vector, k: 3 });
    assert.equal(hits[0]?.seq, 7);
    assert.equal((await store.matchText({ storeId: 'vs_t', text: 'chunk', k: 2 })).length, 2);

    const many = await Promise.allSettled(
      Array.from({ length: MAX_PENDING_SEARCHES + 20 }, () =>
        store.nearest({ store: live, vector: chunks[1]!.vector, k: 1 }),
      ),
    );
    const refused = many.filter((r) => r.status === 'rejected');
    assert.equal(refused.length, 20);
    for (const r of refused) assert.ok((r as PromiseRejectedResult).reason instanceof SearchQueueFull);
    assert.ok(many.slice(0, MAX_PENDING_SEARCHES).every((r) => r.status === 'fulfilled' && r.value[0]?.seq === 1));
  } finally {
    await store.close();
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
