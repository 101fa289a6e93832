/** This process's retrieval tallies: searches counted once each by outcome, whatever the search threw. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import type { FileSearch, FileSearchRequest } from '../../../src/core/retrieval/file-search.js';
import { countedSearch, RetrievalStats } from '../../../src/core/retrieval/retrieval-stats.js';

const request = {
  as: { owner: 'admin', principal: '{}' },
  vectorStoreIds: ['vs_1'],
  queries: ['q'],
} as never as FileSearchRequest;

test('countedSearch: ok, our error code, server_error for anything else; the error passes through', async () => {
  const stats = new RetrievalStats();
  const outcomes: Array<() => Promise<never> | Promise<{ hits: []; queries: string[]; usage: [] }>> = [
    async () => ({ hits: [], queries: ['q'], usage: [] }),
    async () => {
      throw new GatewayError('vector_store_not_found', { id: 'vs_1' });
    },
    async () => {
      throw new GatewayError('vector_store_not_found', { id: 'vs_2' });
    },
    async () => {
      throw new TypeError('a bug');
    },
  ];
  for (const outcome of outcomes) {
    const search = countedSearch(outcome as unknown as FileSearch, stats);
    await search(request).catch((error: unknown) => assert.ok(error instanceof Error));
  }
  assert.deepEqual(Object.fromEntries(stats.searches), { ok: 1, vector_store_not_found: 2, server_error: 1 });
  stats.countFile('completed');
  stats.countChunks(7);
  assert.deepEqual(stats.files, { completed: 1, failed: 0, cancelled: 0, lost: 0 });
  assert.equal(stats.chunksEmbedded, 7);
});
