/**
 * A vector store file's chunk bytes in the stored bytes ledger (the storage quotas, docs/retrieval.md "Operators"):
 * moved by the database's triggers when a file completes and when its store is deleted, the completion ending the
 * ingestion's reservation in its own statement (counted once, not twice); and in PostgreSQL counted when the
 * ledger's text is applied after the vector stores already hold chunks.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../../src/store/sqlite/sqlite-vectors.js';
import { SqliteStorageUseStore } from '../../src/store/sqlite/sqlite-storage-use.js';
import type { StorageUseStore } from '../../src/store/storage-use.js';
import { vectorReservationId, type VectorStoreStore } from '../../src/store/vector-contract.js';
import { postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresSchema } from '../helpers/scratch-postgres-schema.js';

const T0 = 1_700_000_000_000;
const id = (prefix: string) => `${prefix}${randomUUID().replaceAll('-', '').slice(0, 24)}`;
/** 'ledger' (6 bytes) and a 4-float vector (16 bytes). */
const CHUNK_BYTES = 6 + 16;

/** A store of `owner` with one completed file of one chunk; the ingestion reserved its bytes first when `reserve`. */
async function storedFile(vectors: VectorStoreStore, owner: string, reserve?: StorageUseStore) {
  const store = await vectors.createStore({
    id: id('vs_'),
    owner,
    principal: '{}',
    name: 'ledger',
    metadata: null,
    createdMs: T0,
    lastActiveMs: T0,
    expiresAfterDays: null,
    embeddingModel: 'embed-small',
    dimensions: null,
    metric: 'cosine',
    index: 'flat',
  });
  const fileId = id('file-');
  await vectors.addFiles([
    {
      storeId: store.id,
      fileId,
      owner,
      batchId: null,
      filename: 'ledger.txt',
      createdMs: T0,
      attributes: {},
      chunking: { maxTokens: 800, overlapTokens: 400 },
    },
  ]);
  await vectors.claimFiles('ingest', 60_000, 1_000, T0);
  if (reserve) await reserve.reserve(vectorReservationId(store.id, fileId), owner, CHUNK_BYTES, T0 + 3_600_000);
  const chunk = { seq: 0, text: 'ledger', tokens: 1, vector: new Float32Array([1, 0, 0, 0]) };
  const done = await vectors.completeFile(store.id, fileId, 'ingest', [chunk]);
  assert.equal(done.kind, 'completed');
  return store;
}

describe('vector store bytes in the ledger: embedded', () => {
  test('a completion counts once (its reservation ended); a deleted store frees them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-vs-ledger-'));
    const sqlite = await openSqliteStore(dir);
    try {
      const vectors = new SqliteVectors(sqlite.db);
      const ledger = new SqliteStorageUseStore(sqlite.db);
      const store = await storedFile(vectors, 'key:a', ledger);
      assert.deepEqual(await ledger.use('key:a'), { owner: CHUNK_BYTES, total: CHUNK_BYTES });
      await vectors.deleteStore('key:a', store.id);
      assert.deepEqual(await ledger.use('key:a'), { owner: 0, total: 0 });
      await vectors.close();
    } finally {
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const skip = await postgresSkipReason();

describe('vector store bytes in the ledger: PostgreSQL', { skip }, () => {
  test('files first: a completion counts once (its reservation ended); a deleted store frees them', async () => {
    const schema = await scratchPostgresSchema();
    const { PostgresFileStores } = await import('../../src/store/postgres/postgres-files.js');
    const { PostgresVectors } = await import('../../src/store/postgres/postgres-vectors.js');
    const files = await PostgresFileStores.open(schema.url);
    const vectors = await PostgresVectors.open(schema.url);
    try {
      const store = await storedFile(vectors, 'key:a', files.storage);
      assert.deepEqual(await files.storage.use('key:a'), { owner: CHUNK_BYTES, total: CHUNK_BYTES });
      await vectors.deleteStore('key:a', store.id);
      assert.deepEqual(await files.storage.use('key:a'), { owner: 0, total: 0 });
    } finally {
      await vectors.close();
      await files.close();
      await schema.drop();
    }
  });

  test('vector stores first: the ledger applied later counts the chunks already stored, then follows them', async () => {
    const schema = await scratchPostgresSchema();
    const { PostgresFileStores } = await import('../../src/store/postgres/postgres-files.js');
    const { PostgresVectors } = await import('../../src/store/postgres/postgres-vectors.js');
    const vectors = await PostgresVectors.open(schema.url);
    let files: Awaited<ReturnType<typeof PostgresFileStores.open>> | undefined;
    try {
      const first = await storedFile(vectors, 'key:b');
      files = await PostgresFileStores.open(schema.url);
      assert.deepEqual(await files.storage.use('key:b'), { owner: CHUNK_BYTES, total: CHUNK_BYTES });
      await storedFile(vectors, 'key:b', files.storage);
      assert.deepEqual(await files.storage.use('key:b'), { owner: 2 * CHUNK_BYTES, total: 2 * CHUNK_BYTES });
      await vectors.deleteStore('key:b', first.id);
      assert.deepEqual(await files.storage.use('key:b'), { owner: CHUNK_BYTES, total: CHUNK_BYTES });
    } finally {
      await vectors.close();
      await files?.close();
      await schema.drop();
    }
  });
});
