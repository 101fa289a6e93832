/** The contract every vector store backend passes (embedded: SQLite + sqlite-vec; PostgreSQL: bytea + exact scan). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loopHold } from '../helpers/loop-hold.js';
import {
  MAX_USAGE_OWNERS,
  similarityScore,
  type ChunkHit,
  type NewChunk,
  type NewVectorFile,
  type NewVectorStore,
  type VectorMetric,
  type VectorStoreStore,
} from '../../src/store/vector-contract.js';

export interface VectorStoreHarness {
  store: VectorStoreStore;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const DAY_MS = 86_400_000;
const LEASE_MS = 60_000;
const id = (prefix: string) => `${prefix}${randomUUID().replaceAll('-', '').slice(0, 24)}`;

function newStore(owner: string, extra: Partial<NewVectorStore> = {}): NewVectorStore {
  return {
    id: id('vs_'),
    owner,
    principal: JSON.stringify({ owner }),
    name: 'docs',
    metadata: null,
    createdMs: T0,
    lastActiveMs: T0,
    expiresAfterDays: null,
    embeddingModel: 'embed-small',
    dimensions: null,
    metric: 'cosine',
    index: 'flat',
    ...extra,
  };
}

function newFile(storeId: string, owner: string, extra: Partial<NewVectorFile> = {}): NewVectorFile {
  return {
    storeId,
    fileId: id('file-'),
    owner,
    batchId: null,
    filename: 'notes.txt',
    createdMs: T0,
    attributes: { lang: 'en' },
    chunking: { maxTokens: 800, overlapTokens: 400 },
    ...extra,
  };
}

/** A seeded generator (mulberry32): the same vectors on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function vectorOf(next: () => number, dimension: number): Float32Array {
  return Float32Array.from({ length: dimension }, () => next() * 2 - 1);
}

function chunksOf(texts: string[], vectors: Float32Array[]): NewChunk[] {
  return texts.map((text, seq) => ({ seq, text, tokens: text.split(' ').length, vector: vectors[seq]! }));
}

/** The similarity a metric implies, in float64, and the value `similarityScore` takes for it. */
function compare(metric: VectorMetric, a: Float32Array, b: Float32Array): { rank: number; value: number } {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  let squares = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
    squares += (a[i]! - b[i]!) ** 2;
  }
  if (metric === 'cosine') return { rank: dot / Math.sqrt(aa * bb), value: dot / Math.sqrt(aa * bb) };
  if (metric === 'dot') return { rank: dot, value: dot };
  return { rank: -Math.sqrt(squares), value: Math.sqrt(squares) };
}

export function vectorStoreContract(
  name: string,
  make: () => Promise<VectorStoreHarness>,
  options: { skip?: string | undefined } = {},
): void {
  describe(`vector store contract: ${name}`, { skip: options.skip }, () => {
    let h: VectorStoreHarness;
    let s: VectorStoreStore;
    before(async () => {
      h = await make();
      s = h.store;
    });
    after(async () => {
      await h?.close();
    });

    /** Takes every file other tests left in progress for a far future, so a test's claims see only its own. */
    const drain = async (nowMs: number) => {
      await s.claimFiles('drain', 1e12, 100_000, nowMs);
    };

    /** Adds `fileId`'s chunks as an ingestion would: claim it (with whatever else is free), complete it. */
    async function ingest(storeId: string, fileId: string, chunks: NewChunk[], nowMs = T0) {
      const claimed = await s.claimFiles('ingest', LEASE_MS, 100_000, nowMs);
      const held =
        claimed.some((c) => c.file.storeId === storeId && c.file.fileId === fileId) ||
        (await s.renewLease(storeId, fileId, 'ingest', LEASE_MS, nowMs)); // claimed with an earlier file
      assert.ok(held, 'the file was claimed');
      return s.completeFile(storeId, fileId, 'ingest', chunks);
    }

    test('capabilities: flat on every backend, and a metric or index it cannot build is refused', async () => {
      assert.ok(s.capabilities.indexes.includes('flat'));
      assert.ok(s.capabilities.metrics.includes('cosine') && s.capabilities.metrics.includes('euclidean'));
      if (s.capabilities.backend === 'sqlite') {
        assert.deepEqual([...s.capabilities.metrics], ['cosine', 'euclidean'], 'vec0 has no dot product');
      }
      assert.deepEqual([...s.capabilities.indexes], ['flat', 'hnsw'], 'hnsw: a graph in this process (or pgvector)');
      for (const metric of ['cosine', 'dot', 'euclidean'] as const) {
        if (!s.capabilities.metrics.includes(metric))
          await assert.rejects(s.createStore(newStore('alice', { metric })), RangeError);
      }
      if (!s.capabilities.indexes.includes('hnsw'))
        await assert.rejects(s.createStore(newStore('alice', { index: 'hnsw' })), RangeError);
    });

    test("stores: create, get, list with cursors both ways, update, delete; another owner's do not exist", async () => {
      const owner = id('owner-');
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await s.createStore(newStore(owner, { createdMs: T0 + i, name: `s${i}` })));
      const other = await s.createStore(newStore(id('other-')));
      const ids = made.map((m) => m.id);
      const first = made[0]!;
      assert.equal(first.usageBytes, 0);
      assert.deepEqual(first.fileCounts, { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 });
      assert.deepEqual(await s.getStore(owner, first.id), first);
      assert.equal(await s.getStore(owner, other.id), undefined);
      assert.equal(await s.getStore(other.owner, first.id), undefined);

      const page = async (q: { order: 'asc' | 'desc'; after?: string; before?: string }) => {
        const got = await s.listStores(owner, { limit: 2, ...q });
        return { ids: got.data.map((d) => d.id), hasMore: got.hasMore };
      };
      assert.deepEqual(await page({ order: 'asc' }), { ids: ids.slice(0, 2), hasMore: true });
      assert.deepEqual(await page({ order: 'asc', after: ids[1] }), { ids: ids.slice(2, 4), hasMore: true });
      assert.deepEqual(await page({ order: 'asc', after: ids[3] }), { ids: [ids[4]], hasMore: false });
      assert.deepEqual(await page({ order: 'desc' }), { ids: [ids[4], ids[3]], hasMore: true });
      assert.deepEqual(await page({ order: 'desc', after: ids[3] }), { ids: [ids[2], ids[1]], hasMore: true });
      assert.deepEqual(await page({ order: 'asc', before: ids[4] }), { ids: ids.slice(2, 4), hasMore: true });
      assert.deepEqual(await page({ order: 'asc', before: ids[2] }), { ids: ids.slice(0, 2), hasMore: false });
      assert.deepEqual(await page({ order: 'desc', before: ids[0] }), { ids: [ids[2], ids[1]], hasMore: true });
      assert.deepEqual(await page({ order: 'asc', after: ids[0], before: ids[3] }), {
        ids: ids.slice(1, 3),
        hasMore: false,
      });
      assert.deepEqual(
        (await s.listStores(other.owner, { limit: 10, order: 'asc' })).data.map((d) => d.id),
        [other.id],
      );

      const updated = await s.updateStore(owner, first.id, {
        name: 'renamed',
        metadata: { team: 'a' },
        expiresAfterDays: 7,
        embeddingModel: 'embed-large',
      });
      assert.ok(updated && updated !== 'holds_vectors');
      assert.equal(updated.name, 'renamed');
      assert.deepEqual(updated.metadata, { team: 'a' });
      assert.equal(updated.expiresAfterDays, 7);
      assert.equal(updated.embeddingModel, 'embed-large', 'no vectors yet: the model may change');
      const cleared = await s.updateStore(owner, first.id, { metadata: null, expiresAfterDays: null });
      assert.ok(cleared && cleared !== 'holds_vectors');
      assert.equal(cleared.metadata, null);
      assert.equal(cleared.expiresAfterDays, null);
      assert.equal(cleared.name, 'renamed', 'absent fields stay');
      assert.equal(await s.updateStore(other.owner, first.id, { name: 'x' }), undefined);

      assert.equal(await s.deleteStore(other.owner, first.id), false);
      assert.equal(await s.deleteStore(owner, first.id), true);
      assert.equal(await s.getStore(owner, first.id), undefined);
      assert.equal(await s.deleteStore(owner, first.id), false);
    });

    test('files: added in progress, listed by status and batch, attributes updated, owner-scoped', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner));
      const batchId = id('vsfb_');
      const files = [0, 1, 2].map((i) => newFile(store.id, owner, { createdMs: T0 + i, batchId }));
      const single = newFile(store.id, owner, { createdMs: T0 + 3 });
      await s.addFiles(files, { id: batchId, storeId: store.id, owner, createdMs: T0 });
      await s.addFiles([single]);
      const got = await s.getFile(owner, store.id, files[0]!.fileId);
      assert.deepEqual(got, { ...files[0], status: 'in_progress', lastError: null, usageBytes: 0, chunkCount: 0 });
      assert.equal(await s.getFile(id('other-'), store.id, files[0]!.fileId), undefined);
      assert.equal((await s.getStore(owner, store.id))?.fileCounts.in_progress, 4);

      const list = await s.listFiles(owner, store.id, { limit: 10, order: 'desc' });
      assert.deepEqual(
        list.data.map((f) => f.fileId),
        [single, files[2]!, files[1]!, files[0]!].map((f) => f.fileId),
      );
      const inBatch = await s.listFiles(owner, store.id, { limit: 2, order: 'asc', batchId });
      assert.deepEqual(
        inBatch.data.map((f) => f.fileId),
        files.slice(0, 2).map((f) => f.fileId),
      );
      assert.equal(inBatch.hasMore, true);
      const next = await s.listFiles(owner, store.id, { limit: 2, order: 'asc', batchId, after: files[1]!.fileId });
      assert.deepEqual(
        next.data.map((f) => f.fileId),
        [files[2]!.fileId],
      );
      assert.equal(
        (await s.listFiles(owner, store.id, { limit: 10, order: 'asc', status: 'completed' })).data.length,
        0,
      );
      assert.equal((await s.listFiles(id('other-'), store.id, { limit: 10, order: 'asc' })).data.length, 0);

      const changed = await s.updateAttributes(owner, store.id, single.fileId, { n: 3, ok: true, tag: 'x' });
      assert.deepEqual(changed?.attributes, { n: 3, ok: true, tag: 'x' });
      assert.equal(await s.updateAttributes(id('other-'), store.id, single.fileId, {}), undefined);

      const batch = await s.getBatch(owner, store.id, batchId);
      assert.equal(batch?.fileCounts.in_progress, 3);
      assert.equal(batch?.fileCounts.total, 3);
      assert.equal(batch?.cancelledMs, null);
      assert.equal(await s.getBatch(id('other-'), store.id, batchId), undefined);
    });

    test('claims: a lease each, renewed by its holder only, taken over once it ran out', async () => {
      const now = T0 + 10 * DAY_MS;
      await drain(now);
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner));
      const files = [0, 1, 2].map((i) => newFile(store.id, owner, { createdMs: T0 + i }));
      await s.addFiles(files);
      const first = await s.claimFiles('h1', LEASE_MS, 2, now);
      assert.equal(first.length, 2);
      assert.equal(first[0]?.store.id, store.id);
      assert.equal(first[0]?.store.embeddingModel, 'embed-small');
      assert.equal(first[0]?.store.principal, store.principal);
      const second = await s.claimFiles('h2', LEASE_MS, 10, now);
      assert.equal(second.length, 1);
      assert.deepEqual(
        [...first, ...second].map((c) => c.file.fileId).sort(),
        files.map((f) => f.fileId).sort(),
        'each file claimed once',
      );
      assert.equal((await s.claimFiles('h3', LEASE_MS, 10, now + 1)).length, 0, 'all leased');
      const held = first[0]!.file;
      assert.equal(await s.renewLease(store.id, held.fileId, 'h1', LEASE_MS, now + 30_000), true);
      assert.equal(await s.renewLease(store.id, held.fileId, 'h2', LEASE_MS, now + 30_000), false);
      // h1's first lease ran out at now + 60 s, the renewed one at now + 90 s: h2's lease (until now + 60 s) too.
      const early = await s.claimFiles('h3', LEASE_MS, 10, now + 60_000);
      assert.deepEqual(early.map((c) => c.file.fileId).sort(), [first[1]!.file.fileId, second[0]!.file.fileId].sort());
      const takeover = await s.claimFiles('h3', LEASE_MS, 10, now + 90_000);
      assert.deepEqual(
        takeover.map((c) => c.file.fileId),
        [held.fileId],
      );
      assert.equal(await s.renewLease(store.id, held.fileId, 'h1', LEASE_MS, now + 90_001), false);
      const vector = new Float32Array([1, 0, 0]);
      assert.deepEqual(await s.completeFile(store.id, held.fileId, 'h1', chunksOf(['a'], [vector])), { kind: 'lost' });
      const done = await s.completeFile(store.id, held.fileId, 'h3', chunksOf(['a'], [vector]));
      assert.equal(done.kind, 'completed');
      assert.equal(await s.endFile(store.id, first[1]!.file.fileId, 'h1', 'failed', null), false);
      const error = { code: 'unsupported_file' as const, message: 'not a document' };
      assert.equal(await s.endFile(store.id, first[1]!.file.fileId, 'h3', 'failed', error), true);
      const failed = await s.getFile(owner, store.id, first[1]!.file.fileId);
      assert.equal(failed?.status, 'failed');
      assert.deepEqual(failed?.lastError, error);
      assert.deepEqual((await s.getStore(owner, store.id))?.fileCounts, {
        in_progress: 1,
        completed: 1,
        failed: 1,
        cancelled: 0,
        total: 3,
      });
    });

    test('completeFile: chunks and status in one step, the dimension set, counted bytes, never twice', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner));
      const file = newFile(store.id, owner);
      await s.addFiles([file]);
      const next = random(1);
      const vectors = [0, 1, 2].map(() => vectorOf(next, 8));
      const chunks = chunksOf(['alpha beta', 'gamma', 'délta'], vectors);
      // Given out of order: fileChunks reads them by seq.
      const done = await ingest(store.id, file.fileId, [chunks[2]!, chunks[0]!, chunks[1]!]);
      assert.equal(done.kind, 'completed');
      const bytes = 'alpha beta'.length + 'gamma'.length + Buffer.byteLength('délta') + 3 * 8 * 4;
      if (done.kind === 'completed') {
        assert.equal(done.file.status, 'completed');
        assert.equal(done.file.chunkCount, 3);
        assert.equal(done.file.usageBytes, bytes);
      }
      const after1 = await s.getStore(owner, store.id);
      assert.equal(after1?.dimensions, 8);
      assert.equal(after1?.usageBytes, bytes);
      assert.deepEqual(await s.fileChunks(owner, store.id, file.fileId), ['alpha beta', 'gamma', 'délta']);
      assert.equal(await s.fileChunks(id('other-'), store.id, file.fileId), undefined);
      assert.deepEqual(await s.searchableFiles(store.id), [
        { fileId: file.fileId, filename: file.filename, attributes: file.attributes },
      ]);
      assert.equal(await s.updateStore(owner, store.id, { embeddingModel: 'other' }), 'holds_vectors');
      assert.equal(
        (await s.completeFile(store.id, file.fileId, 'ingest', chunks)).kind,
        'lost',
        'a completed file is not written again',
      );

      // Added again: it starts over, its chunks dropped; completed again, it holds the new chunks only.
      await s.addFiles([{ ...file, createdMs: T0 + 1 }]);
      const restarted = await s.getFile(owner, store.id, file.fileId);
      assert.equal(restarted?.status, 'in_progress');
      assert.equal(restarted?.chunkCount, 0);
      assert.deepEqual(await s.fileChunks(owner, store.id, file.fileId), []);
      assert.deepEqual(await s.nearest({ store: after1!, vector: vectors[0]!, k: 5 }), []);
      assert.equal((await ingest(store.id, file.fileId, chunks.slice(0, 2))).kind, 'completed');
      assert.deepEqual(await s.fileChunks(owner, store.id, file.fileId), ['alpha beta', 'gamma']);
      const hits = await s.nearest({ store: after1!, vector: vectors[0]!, k: 10 });
      assert.deepEqual(
        hits.map((hit) => hit.seq),
        [0, 1],
      );
      assert.equal(hits.length, 2, 'each chunk once');
      assert.ok(Math.abs(hits[0]!.score - 1) < 1e-5, 'the same vector scores 1');
    });

    test('completeFile: a vector of another dimension writes nothing and fails the file naming both', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner, { dimensions: 4 }));
      const file = newFile(store.id, owner);
      await s.addFiles([file]);
      const outcome = await ingest(
        store.id,
        file.fileId,
        chunksOf(['x', 'y'], [new Float32Array(5), new Float32Array(5)]),
      );
      assert.deepEqual(outcome, { kind: 'dimension_mismatch', expected: 4, got: 5 });
      const failed = await s.getFile(owner, store.id, file.fileId);
      assert.equal(failed?.status, 'failed');
      assert.equal(failed?.lastError?.code, 'invalid_file');
      assert.match(failed?.lastError?.message ?? '', /\b5\b.*\b4\b|\b4\b.*\b5\b/);
      assert.equal(failed?.chunkCount, 0);
      assert.deepEqual(await s.fileChunks(owner, store.id, file.fileId), []);
      const record = await s.getStore(owner, store.id);
      assert.equal(record?.dimensions, 4);
      assert.equal(record?.usageBytes, 0);
      assert.deepEqual(await s.matchText({ storeId: store.id, text: 'x y', k: 5 }), []);
    });

    test('completeFile is lost when the file was cancelled or removed meanwhile', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner));
      const batchId = id('vsfb_');
      const files = [0, 1, 2].map(() => newFile(store.id, owner, { batchId }));
      await s.addFiles(files, { id: batchId, storeId: store.id, owner, createdMs: T0 });
      const claimed = await s.claimFiles('worker', LEASE_MS, 100_000, T0 + 20 * DAY_MS);
      for (const file of files) assert.ok(claimed.some((c) => c.file.fileId === file.fileId));
      const chunks = chunksOf(['text'], [new Float32Array([0, 1])]);
      assert.equal((await s.completeFile(store.id, files[0]!.fileId, 'worker', chunks)).kind, 'completed');

      const cancelled = await s.cancelBatch(owner, store.id, batchId, T0 + 5);
      assert.equal(cancelled?.cancelledMs, T0 + 5);
      assert.deepEqual(cancelled?.fileCounts, { in_progress: 0, completed: 1, failed: 0, cancelled: 2, total: 3 });
      assert.equal(await s.cancelBatch(id('other-'), store.id, batchId, T0 + 6), undefined);
      assert.deepEqual(await s.completeFile(store.id, files[1]!.fileId, 'worker', chunks), { kind: 'lost' });
      assert.equal(await s.renewLease(store.id, files[1]!.fileId, 'worker', LEASE_MS, T0), false);
      assert.deepEqual(await s.fileChunks(owner, store.id, files[1]!.fileId), []);

      await s.addFiles([newFile(store.id, owner, { fileId: files[1]!.fileId })]);
      await s.claimFiles('worker', LEASE_MS, 100_000, T0 + 30 * DAY_MS);
      assert.equal(await s.deleteFile(id('other-'), store.id, files[1]!.fileId), false);
      assert.equal(await s.deleteFile(owner, store.id, files[1]!.fileId), true);
      assert.deepEqual(await s.completeFile(store.id, files[1]!.fileId, 'worker', chunks), { kind: 'lost' });
      assert.equal(await s.getFile(owner, store.id, files[1]!.fileId), undefined);
      assert.equal((await s.getStore(owner, store.id))?.fileCounts.total, 2);

      // A deleted file's chunks are gone from search and from the store's bytes.
      const record = (await s.getStore(owner, store.id))!;
      assert.equal((await s.nearest({ store: record, vector: new Float32Array([0, 1]), k: 5 })).length, 1);
      assert.equal(await s.deleteFile(owner, store.id, files[0]!.fileId), true);
      assert.deepEqual(await s.nearest({ store: record, vector: new Float32Array([0, 1]), k: 5 }), []);
      assert.deepEqual(await s.matchText({ storeId: store.id, text: 'text', k: 5 }), []);
      assert.equal((await s.getStore(owner, store.id))?.usageBytes, 0);
    });

    for (const metric of ['cosine', 'dot', 'euclidean'] as const) {
      test(`nearest (${metric}): the same top k as a brute force, also among some files only; or refused`, async () => {
        if (!s.capabilities.metrics.includes(metric)) {
          // A metric the backend does not say it builds is refused at creation, never stored and searched wrongly.
          await assert.rejects(s.createStore(newStore(id('owner-'), { metric })), RangeError);
          return;
        }
        const owner = id('owner-');
        const store = await s.createStore(newStore(owner, { metric }));
        const next = random(42);
        const dimension = 24;
        const files = [0, 1, 2].map(() => newFile(store.id, owner));
        await s.addFiles(files);
        const all: { fileId: string; seq: number; vector: Float32Array }[] = [];
        for (const file of files) {
          const vectors = Array.from({ length: 150 }, () => vectorOf(next, dimension));
          const texts = vectors.map((_, i) => `chunk ${i}`);
          assert.equal((await ingest(store.id, file.fileId, chunksOf(texts, vectors))).kind, 'completed');
          vectors.forEach((vector, seq) => all.push({ fileId: file.fileId, seq, vector }));
        }
        // Another store's vectors, closer than any, are never returned.
        const otherStore = await s.createStore(newStore(owner, { metric }));
        const otherFile = newFile(otherStore.id, owner);
        await s.addFiles([otherFile]);
        const record = (await s.getStore(owner, store.id))!;
        for (let q = 0; q < 5; q++) {
          const query = vectorOf(next, dimension);
          if (q === 0) await ingest(otherStore.id, otherFile.fileId, chunksOf(['twin'], [Float32Array.from(query)]));
          for (const fileIds of [undefined, [files[1]!.fileId, files[2]!.fileId]]) {
            const expected = all
              .filter((c) => fileIds === undefined || fileIds.includes(c.fileId))
              .map((c) => ({ ...c, ...compare(metric, query, c.vector) }))
              .sort((a, b) => b.rank - a.rank)
              .slice(0, 10);
            const hits: ChunkHit[] = await s.nearest({ store: record, vector: query, k: 10, fileIds });
            assert.deepEqual(
              hits.map((hit) => `${hit.fileId}:${hit.seq}`),
              expected.map((e) => `${e.fileId}:${e.seq}`),
            );
            hits.forEach((hit, i) => {
              assert.equal(hit.storeId, store.id);
              assert.equal(hit.text, `chunk ${hit.seq}`);
              const want = similarityScore(metric, expected[i]!.value);
              assert.ok(Math.abs(hit.score - want) < 1e-4, `score ${hit.score} vs ${want}`);
            });
          }
        }
        assert.deepEqual(await s.nearest({ store: record, vector: vectorOf(next, dimension), k: 5, fileIds: [] }), []);
      });
    }

    for (const metric of ['cosine', 'euclidean'] as const) {
      test(`hnsw (${metric}): recall@10 against brute force >= 0.95 on 5,000 vectors, exact scores, fileIds, deletes, later writes, the loop free while it builds`, async () => {
        const owner = id('owner-');
        const dimension = 24;
        const next = random(metric === 'cosine' ? 44 : 45);
        const store = await s.createStore(newStore(owner, { metric, index: 'hnsw' }));
        const files = Array.from({ length: 10 }, () => newFile(store.id, owner));
        await s.addFiles(files);
        type Chunk = { fileId: string; seq: number; vector: Float32Array };
        let all: Chunk[] = [];
        for (const file of files) {
          const vectors = Array.from({ length: 500 }, () => vectorOf(next, dimension));
          const texts = vectors.map((_, seq) => `chunk ${seq}`);
          assert.equal((await ingest(store.id, file.fileId, chunksOf(texts, vectors))).kind, 'completed');
          all.push(...vectors.map((vector, seq) => ({ fileId: file.fileId, seq, vector })));
        }
        const record = (await s.getStore(owner, store.id))!;
        const queries = Array.from({ length: 40 }, () => vectorOf(next, dimension));
        const exact = (query: Float32Array, fileIds?: readonly string[]) =>
          all
            .filter((c) => fileIds === undefined || fileIds.includes(c.fileId))
            .map((c) => ({ key: `${c.fileId}:${c.seq}`, ...compare(metric, query, c.vector) }))
            .sort((a, b) => b.rank - a.rank)
            .slice(0, 10);
        /** Recall@10 over the queries; every hit of the allowed files, scored as flat scores it. */
        const recall = async (fileIds?: readonly string[]) => {
          let found = 0;
          for (const query of queries) {
            const want = exact(query, fileIds);
            const hits = await s.nearest({ store: record, vector: query, k: 10, fileIds });
            assert.equal(hits.length, 10);
            const byKey = new Map(all.map((c) => [`${c.fileId}:${c.seq}`, c]));
            for (const hit of hits) {
              const chunk = byKey.get(`${hit.fileId}:${hit.seq}`);
              assert.ok(chunk, 'a live chunk');
              assert.ok(fileIds === undefined || fileIds.includes(hit.fileId), 'of the files asked for');
              assert.equal(hit.text, `chunk ${hit.seq}`);
              const score = similarityScore(metric, compare(metric, query, chunk.vector).value);
              assert.ok(Math.abs(hit.score - score) < 1e-6, `score ${hit.score} vs ${score}`);
            }
            const keys = new Set(hits.map((hit) => `${hit.fileId}:${hit.seq}`));
            found += want.filter((w) => keys.has(w.key)).length;
          }
          return found / (queries.length * 10);
        };

        // Before its graph is built a search is exact.
        assert.equal(await recall(), 1);
        const { result: ready, cpuMs, wallMs } = await loopHold(() => s.indexReady!(record));
        assert.equal(ready, true);
        assert.ok(cpuMs < 40, `the loop was held ${cpuMs.toFixed(1)} ms of CPU (${wallMs.toFixed(1)} ms wall)`);
        const graphs = (s as { hnsw?: { usage: { graphSearches: number; bytes: number } } }).hnsw;
        const searchedBefore = graphs?.usage.graphSearches ?? 0;
        const full = await recall();
        assert.ok(full >= 0.95, `recall@10 ${full}`);
        if (graphs) assert.equal(graphs.usage.graphSearches - searchedBefore, queries.length, 'answered by the graph');
        if (graphs) assert.ok(graphs.usage.bytes > 5000 * dimension * 4);

        // fileIds: most of the files through the graph (filtered), one file exactly.
        const most = files.slice(0, 8).map((f) => f.fileId);
        const before = graphs?.usage.graphSearches ?? 0;
        const mostRecall = await recall(most);
        assert.ok(mostRecall >= 0.95, `recall@10 within 8 of the 10 files ${mostRecall}`);
        if (graphs) assert.equal(graphs.usage.graphSearches - before, queries.length, 'filtered by the graph');
        assert.equal(await recall([files[9]!.fileId, 'file-none']), 1);

        // Deletes (30% of the graph: rebuilt): the chunks are gone at once, and from the graph once synced.
        for (const file of files.slice(0, 3)) assert.equal(await s.deleteFile(owner, store.id, file.fileId), true);
        const gone = new Set(files.slice(0, 3).map((f) => f.fileId));
        all = all.filter((c) => !gone.has(c.fileId));
        assert.equal(await recall(), 1, 'exact until the graph has caught up');
        assert.equal(await s.indexReady!(record), true);
        const afterDeletes = await recall();
        assert.ok(afterDeletes >= 0.95, `recall@10 after deletes ${afterDeletes}`);

        // A file written after the graph was built: found at once (exact), then by the graph.
        const late = newFile(store.id, owner);
        await s.addFiles([late]);
        const twins = queries.slice(0, 3).map((q) => Float32Array.from(q));
        await ingest(store.id, late.fileId, chunksOf(['chunk 0', 'chunk 1', 'chunk 2'], twins));
        all.push(...twins.map((vector, seq) => ({ fileId: late.fileId, seq, vector })));
        for (const phase of ['exact', 'graph'] as const) {
          if (phase === 'graph') assert.equal(await s.indexReady!(record), true);
          for (let i = 0; i < 3; i++) {
            const [first] = await s.nearest({ store: record, vector: queries[i]!, k: 10 });
            assert.equal(`${first?.fileId}:${first?.seq}`, `${late.fileId}:${i}`, phase);
          }
          const lateRecall = await recall();
          assert.ok(lateRecall >= 0.95, `recall@10 with the late file (${phase}) ${lateRecall}`);
        }
        // A flat store is never approximate.
        const flat = await s.createStore(newStore(owner, { metric }));
        assert.equal(await s.indexReady!(flat), false);
        assert.equal(await s.deleteStore(owner, store.id), true);
        assert.deepEqual(await s.nearest({ store: record, vector: queries[0]!, k: 3 }), []);
      });
    }

    test('matchText: the chunk with the words, scored in (0, 1], within the store and the files given', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner));
      const [a, b] = [newFile(store.id, owner), newFile(store.id, owner)];
      await s.addFiles([a!, b!]);
      const v = () => new Float32Array([1, 0]);
      await ingest(
        store.id,
        a!.fileId,
        chunksOf(
          ['Refunds are possible within 30 days of purchase.', 'Shipping takes a week.', 'Our office is in Lyon.'],
          [v(), v(), v()],
        ),
      );
      await ingest(store.id, b!.fileId, chunksOf(['The gateway latency budget is small.'], [v()]));
      const other = await s.createStore(newStore(owner));
      const otherFile = newFile(other.id, owner);
      await s.addFiles([otherFile]);
      await ingest(other.id, otherFile.fileId, chunksOf(['refund refund refund'], [v()]));

      const hits = await s.matchText({ storeId: store.id, text: 'what is the REFUND policy? (days)', k: 5 });
      assert.equal(hits[0]?.fileId, a!.fileId);
      assert.equal(hits[0]?.seq, 0);
      assert.equal(hits.length, 1, 'only the chunk with one of the words');
      assert.ok(hits[0]!.score > 0 && hits[0]!.score <= 1);
      const latency = await s.matchText({ storeId: store.id, text: 'latency OR "gateway" NOT -x*', k: 5 });
      assert.deepEqual(
        latency.map((hit) => hit.fileId),
        [b!.fileId],
        'query syntax is read as words',
      );
      assert.deepEqual(await s.matchText({ storeId: store.id, text: 'refund', k: 5, fileIds: [b!.fileId] }), []);
      assert.deepEqual(await s.matchText({ storeId: store.id, text: '?!', k: 5 }), []);
    });

    test('sweepExpired: a store past last activity plus its days is expired and its chunks dropped', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner, { expiresAfterDays: 2, createdMs: T0, lastActiveMs: T0 }));
      const file = newFile(store.id, owner);
      await s.addFiles([file]);
      await ingest(store.id, file.fileId, chunksOf(['kept until expiry'], [new Float32Array([1, 1])]));
      await s.touchStore(store.id, T0 + DAY_MS);
      await s.touchStore(store.id, T0); // never backwards
      await s.sweepExpired(T0 + 2 * DAY_MS, 100);
      assert.equal((await s.getStore(owner, store.id))?.expiredMs, null, 'touched: not yet');
      assert.ok((await s.sweepExpired(T0 + 3 * DAY_MS, 100)) >= 1);
      const expired = (await s.getStore(owner, store.id))!;
      assert.equal(expired.expiredMs, T0 + 3 * DAY_MS);
      assert.equal(expired.usageBytes, 0);
      assert.deepEqual(await s.fileChunks(owner, store.id, file.fileId), []);
      assert.deepEqual(await s.nearest({ store: expired, vector: new Float32Array([1, 1]), k: 3 }), []);
      assert.deepEqual(await s.matchText({ storeId: store.id, text: 'expiry', k: 3 }), []);
      assert.equal(await s.sweepExpired(T0 + 4 * DAY_MS, 100), 0, 'once');
    });

    test("usage: every owner's stores, files by status and bytes together, the owners with the most bytes first", async () => {
      await drain(T0);
      const before = await s.usage(MAX_USAGE_OWNERS);
      const heavy = id('owner-');
      const light = id('owner-');
      const first = await s.createStore(newStore(heavy));
      await s.createStore(newStore(heavy));
      await s.createStore(newStore(light));
      const stored = newFile(first.id, heavy);
      const waiting = newFile(first.id, heavy);
      await s.addFiles([stored]);
      await ingest(first.id, stored.fileId, chunksOf(['operators'], [new Float32Array([1, 0, 0, 0])]));
      await s.addFiles([waiting]);
      const bytes = 'operators'.length + 4 * 4;

      const after1 = await s.usage(MAX_USAGE_OWNERS);
      assert.equal(after1.total.stores, before.total.stores + 3);
      assert.equal(after1.total.usageBytes, before.total.usageBytes + bytes);
      assert.equal(after1.total.fileCounts.completed, before.total.fileCounts.completed + 1);
      assert.equal(after1.total.fileCounts.in_progress, before.total.fileCounts.in_progress + 1);
      assert.equal(after1.total.fileCounts.total, before.total.fileCounts.total + 2);
      assert.deepEqual(
        after1.owners.find((o) => o.owner === heavy),
        {
          owner: heavy,
          stores: 2,
          usageBytes: bytes,
          fileCounts: { in_progress: 1, completed: 1, failed: 0, cancelled: 0, total: 2 },
        },
      );
      assert.deepEqual(after1.owners.find((o) => o.owner === light)?.fileCounts.total, 0);
      if (after1.owners.length < MAX_USAGE_OWNERS) {
        // Every owner listed: the total is theirs added up, status by status.
        const sum = (pick: (o: (typeof after1.owners)[number]) => number) =>
          after1.owners.reduce((n, o) => n + pick(o), 0);
        assert.equal(
          after1.total.stores,
          sum((o) => o.stores),
        );
        assert.equal(
          after1.total.usageBytes,
          sum((o) => o.usageBytes),
        );
        for (const status of ['in_progress', 'completed', 'failed', 'cancelled', 'total'] as const)
          assert.equal(
            after1.total.fileCounts[status],
            sum((o) => o.fileCounts[status]),
            status,
          );
      }
      const order = after1.owners.map((o) => o.usageBytes);
      assert.deepEqual(
        order,
        [...order].sort((a, b) => b - a),
        'the most bytes first',
      );
      const indexOf = (owner: string) => after1.owners.findIndex((o) => o.owner === owner);
      if (indexOf(light) >= 0) assert.ok(indexOf(heavy) < indexOf(light));

      const top = await s.usage(1);
      assert.equal(top.owners.length, 1, 'at most limit owners');
      assert.ok(top.owners[0]!.usageBytes >= bytes);
      assert.deepEqual(top.total, after1.total, 'the total is of every owner whatever the limit');
      assert.ok((await s.usage(10_000)).owners.length <= MAX_USAGE_OWNERS);

      await s.deleteStore(heavy, first.id);
      const after2 = await s.usage(MAX_USAGE_OWNERS);
      assert.equal(after2.total.usageBytes, before.total.usageBytes);
      assert.equal(after2.owners.find((o) => o.owner === heavy)?.stores, 1);
    });

    test('deleteStore removes its files, batches and chunks', async () => {
      const owner = id('owner-');
      const store = await s.createStore(newStore(owner, { metric: 'euclidean' }));
      const batchId = id('vsfb_');
      const file = newFile(store.id, owner, { batchId });
      await s.addFiles([file], { id: batchId, storeId: store.id, owner, createdMs: T0 });
      await ingest(store.id, file.fileId, chunksOf(['to be removed'], [new Float32Array([3, 4])]));
      const record = (await s.getStore(owner, store.id))!;
      assert.equal((await s.nearest({ store: record, vector: new Float32Array([3, 4]), k: 3 }))[0]?.score, 1);
      assert.equal(await s.deleteStore(owner, store.id), true);
      assert.deepEqual(await s.nearest({ store: record, vector: new Float32Array([3, 4]), k: 3 }), []);
      assert.deepEqual(await s.matchText({ storeId: store.id, text: 'removed', k: 3 }), []);
      assert.equal(await s.getFile(owner, store.id, file.fileId), undefined);
      assert.equal(await s.getBatch(owner, store.id, batchId), undefined);
      assert.deepEqual(await s.searchableFiles(store.id), []);
    });
  });
}
