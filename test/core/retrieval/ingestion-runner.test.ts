/**
 * The ingestion runner (core/retrieval/ingestion-runner.ts) over a test double of the store's ingestion calls and a
 * CallAs that refuses with a long Retry-After: closing the runner stops a file waiting out that Retry-After (it
 * held a shutdown up to a minute), the file keeps its lease (another run starts it over) and nothing is written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { IngestionRunner } from '../../../src/core/retrieval/ingestion-runner.js';
import type { FileContentSource } from '../../../src/core/files/file-service.js';
import type { VectorFileRecord, VectorStoreRecord, VectorStoreStore } from '../../../src/store/vector-contract.js';
import { fixedEmbeddings } from '../../helpers/fixed-embeddings.js';
import { waitFor } from '../../helpers/wait.js';

const STORE = {
  id: 'vs_a',
  owner: 'key:alice',
  principal: '{}',
  embeddingModel: 'embedder',
  dimensions: null,
  dimensionsDeclared: false,
} as unknown as VectorStoreRecord;
const FILE = {
  storeId: 'vs_a',
  fileId: 'file-a',
  owner: 'key:alice',
  filename: 'a.txt',
  chunking: { maxTokens: 800, overlapTokens: 400 },
} as unknown as VectorFileRecord;

test('close stops a file waiting out a Retry-After: the shutdown does not wait for it, nothing is written', async () => {
  const embeddings = fixedEmbeddings({});
  embeddings.next({ status: 429, code: 'upstream_rate_limited', body: '{}', retryAfterMs: 60_000 });
  const ended: string[] = [];
  let claimed = false;
  const store = {
    claimFiles: async () => {
      if (claimed) return [];
      claimed = true;
      return [{ file: FILE, store: STORE }];
    },
    renewLease: async () => true,
    completeFile: async () => {
      ended.push('completed');
      return { kind: 'lost' };
    },
    endFile: async (_s: string, _f: string, _h: string, status: string) => {
      ended.push(status);
      return true;
    },
    getFile: async () => FILE,
  } as unknown as VectorStoreStore;
  const files: FileContentSource = {
    openContent: async () => ({ object: { bytes: 11 }, stream: Readable.from([Buffer.from('hello world')]) }) as never,
  };
  const runner = new IngestionRunner({
    store,
    files,
    callAs: embeddings.callAs,
    bounds: { maxFileBytes: 1_000_000, maxFileChars: 1_000_000, maxFileChunks: 100, embedBatchSize: 64 },
    concurrency: 1,
    leaseMs: 60_000,
    pollMs: 60_000,
    identity: 'test',
    log: { warn: () => undefined, error: () => undefined },
  });
  runner.start();
  await waitFor('the embedding call was refused', () => embeddings.calls.length === 1, 5_000);
  const started = performance.now();
  await runner.close();
  const ms = performance.now() - started;
  assert.ok(ms < 2_000, `close took ${Math.round(ms)} ms`);
  assert.equal(embeddings.calls.length, 1, 'not tried again while closing');
  assert.deepEqual(ended, [], 'the file is left to its lease: not failed, nothing stored');
});
