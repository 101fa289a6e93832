/**
 * What the PostgreSQL vector store adds to the contract: pgvector detected (absent on this machine), the exact
 * scan's cache and each instance's hnsw graph kept right across instances by the store's version, and a store
 * larger than the cache scanned as it is read.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PgvectorIndex } from '../../../src/store/postgres/pgvector-index.js';
import { PostgresVectors } from '../../../src/store/postgres/postgres-vectors.js';
import type { NewVectorStore, VectorStoreStore } from '../../../src/store/vector-contract.js';
import { DATABASE_URL, postgresSkipReason } from '../../helpers/services.js';
import { scratchPostgresSchema } from '../../helpers/scratch-postgres-schema.js';

const skip = await postgresSkipReason();
const T0 = 1_700_000_000_000;

function newStore(): NewVectorStore {
  return {
    id: `vs_${randomUUID()}`,
    owner: 'alice',
    principal: '{}',
    name: 'docs',
    metadata: null,
    createdMs: T0,
    lastActiveMs: T0,
    expiresAfterDays: null,
    embeddingModel: 'embed',
    dimensions: null,
    metric: 'cosine',
    index: 'flat',
  };
}

/** Adds one file with one chunk per vector and completes it through `store`. */
async function addFile(store: VectorStoreStore, storeId: string, vectors: number[][]): Promise<string> {
  const fileId = `file-${randomUUID()}`;
  const chunking = { maxTokens: 800, overlapTokens: 400 };
  await store.addFiles([
    { storeId, fileId, owner: 'alice', batchId: null, filename: 'f', createdMs: T0, attributes: {}, chunking },
  ]);
  const holder = `h-${fileId}`;
  const claimed = await store.claimFiles(holder, 60_000, 1000, T0);
  assert.ok(claimed.some((c) => c.file.fileId === fileId));
  const chunks = vectors.map((v, seq) => ({ seq, text: `t${seq}`, tokens: 1, vector: Float32Array.from(v) }));
  assert.equal((await store.completeFile(storeId, fileId, holder, chunks)).kind, 'completed');
  return fileId;
}

describe('PostgreSQL vector store', { skip }, () => {
  let schema: Awaited<ReturnType<typeof scratchPostgresSchema>>;
  let a: PostgresVectors;
  let b: PostgresVectors;
  before(async () => {
    schema = await scratchPostgresSchema();
    a = await PostgresVectors.open(schema.url);
    b = await PostgresVectors.open(schema.url, { cacheBytes: 1024 });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await schema?.drop();
  });

  test('pgvector is looked for in pg_available_extensions; flat and hnsw either way (without it, a graph here)', async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      const available = await PgvectorIndex.available(client);
      const { rows } = await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
      assert.equal(available, rows.length > 0);
      assert.equal(available, rows.length > 0);
      assert.deepEqual([...a.capabilities.indexes], ['flat', 'hnsw']);
    } finally {
      await client.end();
    }
  });

  test("one instance's cached vectors follow another's writes (the store's version)", async () => {
    const store = await a.createStore(newStore());
    await addFile(a, store.id, [
      [1, 0, 0],
      [0, 1, 0],
    ]);
    const record = (await a.getStore('alice', store.id))!;
    const first = await a.nearest({ store: record, vector: Float32Array.from([0, 0, 1]), k: 1 });
    assert.equal(first[0]?.text, 't0');
    assert.ok(a.scanCache.usedBytes > 0, 'kept in memory');

    const added = await addFile(b, store.id, [[0, 0.1, 1]]);
    const second = await a.nearest({ store: record, vector: Float32Array.from([0, 0, 1]), k: 1 });
    assert.equal(second[0]?.fileId, added, 'the chunk written by the other instance is found');

    assert.equal(await b.deleteFile('alice', store.id, added), true);
    const third = await a.nearest({ store: record, vector: Float32Array.from([0, 0, 1]), k: 3 });
    assert.equal(third.length, 2);
    assert.ok(!third.some((hit) => hit.fileId === added), 'nor the deleted one');
  });

  test("each instance's hnsw graph follows the others' writes by the store's version (exact until synced)", async () => {
    const store = await a.createStore({ ...newStore(), index: 'hnsw' });
    const circle = (n: number, z: number) =>
      Array.from({ length: n }, (_, i) => [Math.cos(i / 7), Math.sin(i / 7), z + i / 1000]);
    const kept = await addFile(a, store.id, circle(2500, 0));
    const record = (await a.getStore('alice', store.id))!;
    assert.equal(await a.indexReady(record), true);
    assert.equal(await b.indexReady(record), true);
    const query = Float32Array.from([0, 0, 1]);
    const before = b.hnsw.usage.graphSearches;
    assert.equal((await b.nearest({ store: record, vector: query, k: 5 })).length, 5);
    assert.equal(b.hnsw.usage.graphSearches, before + 1, 'by the graph');

    // Written by a: b's graph is behind (its version moved on), so b searches exactly and finds the new chunk.
    const added = await addFile(a, store.id, [[0, 0, 1]]);
    const behind = await b.nearest({ store: record, vector: query, k: 1 });
    assert.equal(behind[0]?.fileId, added);
    assert.equal(behind[0]?.score, 1);
    assert.equal(b.hnsw.usage.graphSearches, before + 1, 'exact while behind');
    assert.equal(await b.indexReady(record), true);
    assert.equal((await b.nearest({ store: record, vector: query, k: 1 }))[0]?.fileId, added, 'then by the graph');
    assert.equal(b.hnsw.usage.graphSearches, before + 2);

    // Deleted by a: never returned by b, before or after b's graph catches up.
    assert.equal(await a.deleteFile('alice', store.id, added), true);
    for (const phase of ['behind', 'synced']) {
      if (phase === 'synced') assert.equal(await b.indexReady(record), true);
      const hits = await b.nearest({ store: record, vector: query, k: 5 });
      assert.equal(hits.length, 5);
      assert.ok(
        hits.every((hit) => hit.fileId === kept),
        phase,
      );
    }
  });

  test('a store larger than the cache is scanned as it is read, with the same answer, and not kept', async () => {
    const store = await b.createStore({ ...newStore(), metric: 'euclidean' });
    const vectors = Array.from({ length: 300 }, (_, i) => [Math.cos(i / 10), Math.sin(i / 10), i / 300]);
    const fileId = await addFile(b, store.id, vectors);
    const record = (await b.getStore('alice', store.id))!;
    const query = Float32Array.from(vectors[42]!);
    const streamed = await b.nearest({ store: record, vector: query, k: 5, fileIds: [fileId] });
    const cached = await a.nearest({ store: record, vector: query, k: 5, fileIds: [fileId] });
    assert.equal(streamed[0]?.seq, 42);
    assert.equal(streamed[0]?.score, 1);
    assert.deepEqual(streamed, cached);
    assert.equal(b.scanCache.usedBytes, 0);
  });

  test('two instances claiming at once take different files (SKIP LOCKED)', async () => {
    const store = await a.createStore(newStore());
    const chunking = { maxTokens: 800, overlapTokens: 400 };
    const files = Array.from({ length: 30 }, (_, i) => ({
      storeId: store.id,
      fileId: `file-${randomUUID()}`,
      owner: 'alice',
      batchId: null,
      filename: 'f',
      createdMs: T0 + i,
      attributes: {},
      chunking,
    }));
    await a.addFiles(files);
    const now = T0 + 1e9; // past every lease earlier tests left
    const [fromA, fromB] = await Promise.all([
      a.claimFiles('a', 60_000, 1000, now),
      b.claimFiles('b', 60_000, 1000, now),
    ]);
    const mine = (claims: typeof fromA) => claims.filter((c) => c.file.storeId === store.id).map((c) => c.file.fileId);
    const taken = [...mine(fromA), ...mine(fromB)];
    assert.equal(new Set(taken).size, taken.length, 'no file claimed twice');
    assert.equal(taken.length, files.length);
  });
});
