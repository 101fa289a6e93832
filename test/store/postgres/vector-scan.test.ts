/** The PostgreSQL vector store's exact scan: its top k, its cache bound, and the event loop served while it runs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BLOCK_ROWS,
  TopK,
  VectorScanCache,
  VectorSetBuilder,
  scan,
  vectorBytes,
  type VectorSet,
} from '../../../src/store/postgres/vector-scan.js';

function setOf(version: string, bytes: number): VectorSet {
  return { version, dimension: 1, files: [], blocks: [], bytes };
}

test('TopK keeps the k best, ties by the lower id', () => {
  const top = new TopK(3);
  for (const [id, rank] of [
    [5, 0.1],
    [4, 0.9],
    [3, 0.5],
    [2, 0.5],
    [1, 0.05],
    [6, 0.7],
  ] as const)
    top.offer(id, rank, rank);
  assert.deepEqual(
    top.hits.map((hit) => hit.id),
    [4, 6, 2],
  );
});

test('the cache: a stale version is a miss, the least recently used set goes first, an oversized set is not kept', () => {
  const cache = new VectorScanCache(100);
  cache.put('a', setOf('1', 40));
  cache.put('b', setOf('1', 40));
  assert.ok(cache.get('a', '1'), 'a used: b is now the least recently used');
  cache.put('c', setOf('1', 40));
  assert.equal(cache.get('b', '1'), undefined, 'b evicted');
  assert.ok(cache.get('a', '1'));
  assert.ok(cache.get('c', '1'));
  assert.equal(cache.usedBytes, 80);
  assert.equal(cache.get('a', '2'), undefined, 'another version: stale');
  assert.equal(cache.get('a', '1'), undefined, 'and dropped');
  assert.equal(cache.usedBytes, 40);
  cache.put('huge', setOf('1', 101));
  assert.equal(cache.get('huge', '1'), undefined);
  assert.equal(cache.usedBytes, 40);
});

test('a scan of 100,000 rows serves the event loop between blocks and restricts to the files asked for', async () => {
  const dimension = 64;
  const builder = new VectorSetBuilder(dimension);
  const blocks = [];
  let id = 1;
  let seed = 7;
  const next = () => ((seed = (seed * 48271) % 2147483647) / 2147483647) * 2 - 1; // Park-Miller: same rows each run
  let query = new Float32Array(dimension);
  for (let b = 0; b < 100_000 / BLOCK_ROWS; b++) {
    const rows = Array.from({ length: BLOCK_ROWS }, () => {
      const vector = Float32Array.from({ length: dimension }, next);
      if (id === 500) query = vector;
      return { id: id, file_id: `file-${id++ % 7}`, embedding: vectorBytes(vector) };
    });
    blocks.push(builder.block(rows));
  }
  let ticks = 0;
  const timer = setInterval(() => ticks++, 0);
  const hits = await scan(blocks, { vector: query, metric: 'cosine', k: 5, files: builder.files });
  clearInterval(timer);
  assert.equal(hits[0]?.id, 500, 'the same vector first');
  assert.ok(Math.abs(hits[0]!.value - 1) < 1e-5);
  assert.ok(ticks > 3, `timers ran during the scan (${ticks})`);
  const only = await scan(blocks, {
    vector: query,
    metric: 'dot',
    k: 10,
    files: builder.files,
    wanted: new Set(['file-3']),
  });
  assert.equal(only.length, 10);
  for (const hit of only) assert.equal(hit.id % 7, 3);
});

test('rows whose bytes are not the dimension are skipped, not read as vectors', () => {
  const builder = new VectorSetBuilder(2);
  const block = builder.block([
    { id: 1, file_id: 'a', embedding: vectorBytes(new Float32Array([1, 2])) },
    { id: 2, file_id: 'a', embedding: Buffer.alloc(12) },
  ]);
  assert.equal(block.rows, 1);
  assert.deepEqual([...block.vectors.subarray(0, 2)], [1, 2]);
});
