/** The contract every response cache store passes (SQLite in memory, on a file, Redis). */
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ResponseCacheStore, StoredResponse } from '../../src/store/store-contract.js';

export interface ResponseCacheHarness {
  cache: ResponseCacheStore;
  close(): Promise<void>;
}

export function responseCacheContract(
  name: string,
  make: (maxBytes: number) => Promise<ResponseCacheHarness>,
  options: { skip?: string | undefined } = {},
): void {
  describe(`response cache contract: ${name}`, { skip: options.skip }, () => {
    const open: ResponseCacheHarness[] = [];
    /** A fresh, empty cache with this byte bound per test. */
    const fresh = async (maxBytes = 1_000_000) => {
      const harness = await make(maxBytes);
      open.push(harness);
      return harness.cache;
    };
    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.close();
    });
    after(async () => {
      for (const harness of open.splice(0)) await harness.close();
    });
    const answer = (body: string, kind: StoredResponse['kind'] = 'json'): StoredResponse => ({
      status: 200,
      headers: { 'content-type': kind === 'sse' ? 'text/event-stream' : 'application/json' },
      kind,
      body,
      storedAt: new Date(1_700_000_000_000).toISOString(),
    });
    const T = 1_700_000_000_000;

    test('what was put is read back exactly (JSON and event streams, Unicode included); an unknown key is a miss', async () => {
      const cache = await fresh();
      await cache.put('k-json', answer('{"text":"héllo ✓"}'), 60_000, T);
      await cache.put('k-sse', answer('data: {"x":1}\n\ndata: [DONE]\n\n', 'sse'), 60_000, T);
      assert.deepEqual(await cache.get('k-json', T + 1), answer('{"text":"héllo ✓"}'));
      assert.deepEqual(await cache.get('k-sse', T + 1), answer('data: {"x":1}\n\ndata: [DONE]\n\n', 'sse'));
      assert.equal(await cache.get('k-unknown', T + 1), undefined);
    });

    test('an entry expires after its TTL, on the caller’s clock', async () => {
      const cache = await fresh();
      await cache.put('k', answer('{}'), 1_000, T);
      assert.ok(await cache.get('k', T + 999));
      assert.equal(await cache.get('k', T + 1_000), undefined);
    });

    test('a put replaces the entry and its size is counted once; an entry over the bound is not kept', async () => {
      const cache = await fresh(1_000);
      await cache.put('k', answer('a'.repeat(100)), 60_000, T);
      await cache.put('k', answer('b'.repeat(200)), 60_000, T + 1);
      assert.equal((await cache.get('k', T + 2))?.body, 'b'.repeat(200));
      assert.deepEqual(await cache.size(), { entries: 1, bytes: 200 });
      assert.equal(await cache.put('huge', answer('x'.repeat(1_001)), 60_000, T + 3), 0);
      assert.equal(await cache.get('huge', T + 4), undefined);
      assert.deepEqual(await cache.size(), { entries: 1, bytes: 200 });
    });

    test('past the bound the least recently USED entry goes first (a read counts as a use), and only as many as needed', async () => {
      const cache = await fresh(1_000);
      await cache.put('a', answer('a'.repeat(300)), 600_000, T);
      await cache.put('b', answer('b'.repeat(300)), 600_000, T + 1_000);
      await cache.put('c', answer('c'.repeat(300)), 600_000, T + 2_000);
      assert.ok(await cache.get('a', T + 5_000), 'a is read: now the most recently used');
      const evicted = await cache.put('d', answer('d'.repeat(300)), 600_000, T + 6_000);
      assert.equal(evicted, 1, 'one entry made room');
      assert.equal(await cache.get('b', T + 7_000), undefined, 'b was the least recently used');
      for (const key of ['a', 'c', 'd']) assert.ok(await cache.get(key, T + 7_000), `${key} is kept`);
      const size = await cache.size();
      assert.deepEqual(size, { entries: 3, bytes: 900 });
    });
  });
}
