/** The `hnsw` stores' graphs (src/store/hnsw/hnsw-indexes.ts) against a source in memory: versions, memory bound. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HnswIndexes, type HnswSource, type SourceRows } from '../../../src/store/hnsw/hnsw-indexes.js';
import { HnswGraph } from '../../../src/store/hnsw/hnsw-graph.js';
import type { VectorStoreRecord } from '../../../src/store/vector-contract.js';

const DIM = 8;

/** Stores of files of chunks, in memory; every change moves the store's version on. */
class MemorySource implements HnswSource {
  readonly stores = new Map<
    string,
    { version: number; files: Map<string, { ids: number[]; vectors: Float32Array }> }
  >();
  private nextId = 1;
  reads = 0;

  addFile(storeId: string, fileId: string, vectors: Float32Array[]): void {
    let store = this.stores.get(storeId);
    if (!store) this.stores.set(storeId, (store = { version: 0, files: new Map() }));
    const flat = new Float32Array(vectors.length * DIM);
    vectors.forEach((v, i) => flat.set(v, i * DIM));
    store.files.set(fileId, { ids: vectors.map(() => this.nextId++), vectors: flat });
    store.version++;
  }

  removeFile(storeId: string, fileId: string): void {
    const store = this.stores.get(storeId)!;
    store.files.delete(fileId);
    store.version++;
  }

  async version(storeId: string) {
    const store = this.stores.get(storeId);
    return store ? String(store.version) : undefined;
  }

  async files(storeId: string) {
    return [...(this.stores.get(storeId)?.files ?? [])].map(([fileId, f]) => ({
      fileId,
      firstId: f.ids[0]!,
      count: f.ids.length,
    }));
  }

  async *vectors(storeId: string, fileIds: readonly string[]): AsyncIterable<SourceRows> {
    for (const fileId of fileIds) {
      const file = this.stores.get(storeId)?.files.get(fileId);
      if (!file) continue;
      this.reads++;
      yield { ids: file.ids, files: file.ids.map(() => fileId), vectors: file.vectors };
    }
  }
}

function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const next = random(7);
const vector = () => Float32Array.from({ length: DIM }, () => next() * 2 - 1);
const record = (id: string): VectorStoreRecord => ({
  id,
  owner: 'o',
  principal: '{}',
  name: id,
  metadata: null,
  createdMs: 0,
  lastActiveMs: 0,
  expiresAfterDays: null,
  expiredMs: null,
  embeddingModel: 'm',
  dimensions: DIM,
  dimensionsDeclared: true,
  metric: 'cosine',
  index: 'hnsw',
  usageBytes: 0,
  fileCounts: { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 },
});

test('a graph answers only at the version it was synced to (a store of more chunks than a graph search costs); a change is exact until synced again', async () => {
  const source = new MemorySource();
  const graphs = new HnswIndexes(source);
  const store = record('vs_a');
  source.addFile('vs_a', 'f1', Array.from({ length: 2500 }, vector));
  const query = { vector: vector(), k: 5 };
  assert.equal(graphs.search(store, '1', query), undefined, 'none yet: exact, and a sync starts');
  assert.equal(await graphs.ready(store), true);
  const hits = graphs.search(store, '1', query);
  assert.equal(hits?.length, 5);
  source.addFile('vs_a', 'f2', Array.from({ length: 2500 }, vector));
  assert.equal(graphs.search(store, '2', query), undefined, 'behind: exact');
  assert.equal(await graphs.ready(store), true);
  assert.equal(source.reads, 2, 'only the new file was read');
  source.removeFile('vs_a', 'f1');
  assert.equal(await graphs.ready(store), true);
  const after = graphs.search(store, '3', query)!;
  const f2 = new Set(source.stores.get('vs_a')!.files.get('f2')!.ids);
  assert.ok(
    after.every((hit) => f2.has(hit.id)),
    'the removed file is never returned',
  );
  assert.equal(graphs.search(store, '3', { ...query, fileIds: ['f1'] })?.length, 0, 'a removed file holds nothing');
});

test('memory bound: the least recently searched graph is dropped for a new one; one over the bound is never built', async () => {
  const source = new MemorySource();
  const per = new HnswGraph(DIM, 'cosine');
  for (let i = 0; i < 400; i++) per.add(i, 0, vector());
  // Room for about one store of 400 chunks.
  const graphs = new HnswIndexes(source, { maxBytes: Math.round(per.bytes * 1.5) });
  for (const id of ['vs_1', 'vs_2']) source.addFile(id, 'f', Array.from({ length: 400 }, vector));
  assert.equal(await graphs.ready(record('vs_1')), true);
  assert.equal(await graphs.ready(record('vs_2')), true);
  assert.equal(graphs.usage.graphs, 1, 'vs_1 was dropped for vs_2');
  assert.ok(graphs.usage.bytes <= graphs.maxBytes);
  assert.equal(graphs.search(record('vs_1'), '1', { vector: vector(), k: 3 }), undefined, 'evicted: exact');
  source.addFile('vs_big', 'f', Array.from({ length: 2_000 }, vector));
  assert.equal(await graphs.ready(record('vs_big')), false, 'over the bound alone: exact for good');
  assert.ok(graphs.usage.bytes <= graphs.maxBytes);
});
