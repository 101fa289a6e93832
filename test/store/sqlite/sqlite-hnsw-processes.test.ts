/**
 * The embedded store's hnsw graphs across two connections on one file (WORKERS > 1 share it): a store's version
 * is its row's `chunks_version`, so the graph one process built is seen to be stale once another process writes,
 * and its searches find the new chunks (exactly while it catches up, then by the graph again).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../../../src/store/sqlite/sqlite-vectors.js';
import type { NewChunk, VectorStoreRecord } from '../../../src/store/vector-contract.js';
import { waitForValue } from '../../helpers/wait.js';

const DIM = 16;
const unit = (i: number): Float32Array => {
  const v = Float32Array.from({ length: DIM }, (_, d) => Math.sin(i * 1.7 + d * 0.9));
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
};

test('a graph built by one process sees the chunks another process wrote after it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-hnsw-'));
  const [sqliteA, sqliteB] = [await openSqliteStore(dir), await openSqliteStore(dir)];
  const a = new SqliteVectors(sqliteA.db);
  const b = new SqliteVectors(sqliteB.db);
  try {
    const owner = 'key:one';
    const created = await a.createStore({
      id: 'vs_two_processes_000000000',
      owner,
      principal: '{}',
      name: 'hnsw',
      metadata: null,
      createdMs: Date.now(),
      lastActiveMs: Date.now(),
      expiresAfterDays: null,
      embeddingModel: 'embed',
      dimensions: DIM,
      metric: 'cosine',
      index: 'hnsw',
    });
    const write = async (vectors: VectorStoreRecord, fileId: string, chunks: NewChunk[]) => {
      await a.addFiles([
        {
          storeId: vectors.id,
          fileId,
          owner,
          batchId: null,
          filename: `${fileId}.txt`,
          createdMs: Date.now(),
          attributes: {},
          chunking: { maxTokens: 800, overlapTokens: 400 },
        },
      ]);
      const [claimed] = await a.claimFiles('writer', 60_000, 1, Date.now());
      assert.equal(claimed?.file.fileId, fileId);
      assert.equal((await a.completeFile(vectors.id, fileId, 'writer', chunks)).kind, 'completed');
    };
    await write(
      created,
      'file-first',
      Array.from({ length: 3_000 }, (_, seq) => ({ seq, text: `first ${seq}`, tokens: 2, vector: unit(seq) })),
    );
    const store = (await b.getStore(owner, created.id))!;
    await waitForValue(
      "process B's graph built",
      async () => {
        await b.nearest({ store, vector: unit(1), k: 3 });
        return b.indexReady(store);
      },
      (ready) => ready,
      30_000,
    );
    // Process A writes a file whose one chunk is the query itself.
    const query = unit(10_000);
    await write(created, 'file-later', [{ seq: 0, text: 'later', tokens: 1, vector: query }]);
    // B's graph was built before the write: it must not answer as if up to date (it would miss the new chunk).
    const hits = await b.nearest({ store, vector: query, k: 1 });
    assert.equal(hits[0]?.fileId, 'file-later', 'found at once');
    await waitForValue(
      "B's graph caught up",
      async () => {
        await b.nearest({ store, vector: query, k: 1 });
        return b.indexReady(store);
      },
      (ready) => ready,
      30_000,
    );
    assert.equal((await b.nearest({ store, vector: query, k: 1 }))[0]?.fileId, 'file-later', 'and by the graph');
  } finally {
    await a.close();
    await b.close();
    await sqliteA.close();
    await sqliteB.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
