/**
 * File search (core/retrieval/search-service.ts) over an in-memory test double of the vector store contract
 * (exact cosine on small fixed vectors) with a CallAs that answers fixed embeddings: owner isolation, expiry, the
 * dimension check, filters, threshold, hybrid fusion, dedupe across queries and stores, stable ties, the embedding
 * usage, and a refused embedding call surfacing as its own error.
 */
import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createFileSearch } from '../../../src/core/retrieval/search-service.js';
import { fuseRanks, RRF_K } from '../../../src/core/retrieval/rank-fusion.js';
import type { FileSearch, FileSearchRequest } from '../../../src/core/retrieval/file-search.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { VectorSearchBusy } from '../../../src/store/vector-contract.js';
import { memoryVectorStore, type MemoryFile, type MemoryVectorStore } from '../../helpers/memory-vector-store.js';
import { fixedEmbeddings, type FixedEmbeddings } from '../../helpers/fixed-embeddings.js';

const ALICE = { owner: 'key:alice', principal: '{"key":"alice"}' };
const BOB = { owner: 'key:bob', principal: '{"key":"bob"}' };
const NOW = 1_800_000_000_000;

const VECTORS: Record<string, number[]> = {
  'refund policy': [1, 0, 0],
  'money back': [0.9, 0.1, 0],
  shipping: [0, 1, 0],
  warranty: [1, 0, 0],
};

const REFUNDS: MemoryFile = {
  fileId: 'file-a',
  filename: 'refunds.md',
  attributes: { region: 'eu', year: 2024 },
  chunks: [
    { seq: 0, text: 'Refunds within 30 days.', vector: [1, 0, 0] },
    { seq: 1, text: 'Shipping takes a week.', vector: [0, 1, 0] },
  ],
};
const PRICING: MemoryFile = {
  fileId: 'file-b',
  filename: 'pricing.md',
  attributes: { region: 'us', year: 2023 },
  chunks: [{ seq: 0, text: 'Prices are in dollars.', vector: [0.8, 0.2, 0] }],
};

let store: MemoryVectorStore;
let embeddings: FixedEmbeddings;
let search: FileSearch;

beforeEach(() => {
  store = memoryVectorStore();
  embeddings = fixedEmbeddings(VECTORS);
  search = createFileSearch({ store, callAs: embeddings.callAs, now: () => NOW });
  store.seed({ id: 'vs_a', owner: ALICE.owner, lastActiveMs: NOW - 1000 }, [REFUNDS, PRICING]);
});

const request = (extra: Partial<FileSearchRequest> = {}): FileSearchRequest => ({
  as: ALICE,
  vectorStoreIds: ['vs_a'],
  queries: ['refund policy'],
  maxNumResults: 10,
  ...extra,
});

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  }
  assert.fail('expected a GatewayError');
}

test('best first with filename, attributes and text; the queries, the usage and last_active_at', async () => {
  const result = await search(request({ maxNumResults: 2 }));
  assert.deepEqual(
    result.hits.map((h) => [h.fileId, h.filename, h.text, h.attributes]),
    [
      ['file-a', 'refunds.md', 'Refunds within 30 days.', { region: 'eu', year: 2024 }],
      ['file-b', 'pricing.md', 'Prices are in dollars.', { region: 'us', year: 2023 }],
    ],
  );
  assert.equal(result.hits[0]?.score, 1);
  const cos = 0.8 / Math.sqrt(0.68);
  assert.ok(Math.abs((result.hits[1]?.score ?? 0) - (1 + cos) / 2) < 1e-6);
  assert.deepEqual(result.queries, ['refund policy']);
  assert.deepEqual(result.usage, [embeddings.usageOf(1)]);
  assert.equal(embeddings.calls.length, 1);
  assert.equal(embeddings.calls[0]?.url, '/v1/embeddings');
  assert.deepEqual(embeddings.calls[0]?.as, ALICE);
  assert.deepEqual(embeddings.calls[0]?.body, {
    model: 'emb-small',
    input: ['refund policy'],
    encoding_format: 'float',
    dimensions: 3,
  });
  assert.deepEqual(store.calls.nearest, [{ storeId: 'vs_a', k: 2, fileIds: undefined }]);
  assert.deepEqual(store.calls.touched, [{ id: 'vs_a', nowMs: NOW }]);
});

test("another owner's store is the same 404 as an unknown one, with details.id; nothing is embedded", async () => {
  const foreign = await refusal(search(request({ as: BOB })));
  assert.equal(foreign.code, 'vector_store_not_found');
  assert.equal(foreign.status, 404);
  assert.deepEqual(foreign.details, { id: 'vs_a' });
  const unknown = await refusal(search(request({ vectorStoreIds: ['vs_a', 'vs_nope'] })));
  assert.deepEqual([unknown.code, unknown.details], ['vector_store_not_found', { id: 'vs_nope' }]);
  assert.equal(embeddings.calls.length, 0);
  assert.deepEqual(store.calls.touched, []);
});

test('an expired store, marked or past its expires_after, is vector_store_expired', async () => {
  store.seed({ id: 'vs_old', owner: ALICE.owner, expiredMs: NOW - 5 }, [REFUNDS]);
  store.seed({ id: 'vs_idle', owner: ALICE.owner, expiresAfterDays: 1, lastActiveMs: NOW - 86_400_000 }, [REFUNDS]);
  for (const id of ['vs_old', 'vs_idle']) {
    const error = await refusal(search(request({ vectorStoreIds: [id] })));
    assert.deepEqual([error.code, error.status, error.details], ['vector_store_expired', 400, { id }]);
  }
});

test('a query vector of another length than the store is vector_dimension_mismatch naming both', async () => {
  store.seed({ id: 'vs_4', owner: ALICE.owner, dimensions: 4, embeddingModel: 'emb-4' }, [REFUNDS]);
  const error = await refusal(search(request({ vectorStoreIds: ['vs_4'] })));
  assert.equal(error.code, 'vector_dimension_mismatch');
  assert.equal(error.status, 400);
  assert.deepEqual(error.details, { id: 'vs_4', expected: 4, got: 3, embedding_model: 'emb-4' });
  assert.equal(embeddings.calls[0]?.body.dimensions, 4, 'the store dimension was asked for');
});

test('filters restrict the files searched; a filter that allows none makes no call at all', async () => {
  const result = await search(request({ filters: { type: 'eq', key: 'region', value: 'us' } }));
  assert.deepEqual(
    result.hits.map((h) => h.fileId),
    ['file-b'],
  );
  assert.deepEqual(store.calls.nearest[0]?.fileIds, ['file-b']);

  const none = await search(request({ filters: { type: 'gt', key: 'year', value: 2030 } }));
  assert.deepEqual(none.hits, []);
  assert.deepEqual(none.usage, []);
  assert.equal(embeddings.calls.length, 1, 'no second embedding call');
  assert.equal(store.calls.nearest.length, 1, 'no second vector search');
  assert.equal(store.calls.touched.length, 2, 'the store was still searched (touched)');
});

test('score_threshold drops what scores below it', async () => {
  const result = await search(request({ rankingOptions: { score_threshold: 0.999 } }));
  assert.deepEqual(
    result.hits.map((h) => [h.fileId, h.score]),
    [['file-a', 1]],
  );
});

test('hybrid search fuses the text ranking: a passage with the query word rises over a closer vector', async () => {
  store.seed({ id: 'vs_h', owner: ALICE.owner }, [
    { fileId: 'file-x', filename: 'x.md', chunks: [{ seq: 0, text: 'Coverage terms.', vector: [1, 0, 0] }] },
    {
      fileId: 'file-y',
      filename: 'y.md',
      chunks: [{ seq: 0, text: 'Warranty lasts two years.', vector: [0.8, 0.6, 0] }],
    },
  ]);
  const base = request({ vectorStoreIds: ['vs_h'], queries: ['warranty'] });
  const plain = await search(base);
  assert.deepEqual(
    plain.hits.map((h) => h.fileId),
    ['file-x', 'file-y'],
  );
  const hybrid = { hybrid_search: { embedding_weight: 1, text_weight: 1 } };
  const fused = await search({ ...base, rankingOptions: hybrid });
  assert.deepEqual(
    fused.hits.map((h) => h.fileId),
    ['file-y', 'file-x'],
  );
  // y: 2nd by vector and 1st by text; x: 1st by vector only. Normalized so first in both scores 1.
  const top = 2 / (RRF_K + 1);
  assert.ok(Math.abs((fused.hits[0]?.score ?? 0) - (1 / (RRF_K + 2) + 1 / (RRF_K + 1)) / top) < 1e-9);
  assert.ok(Math.abs((fused.hits[1]?.score ?? 0) - 1 / (RRF_K + 1) / top) < 1e-9);
  assert.deepEqual(store.calls.matchText.at(-1), { storeId: 'vs_h', text: 'warranty', k: 30, fileIds: undefined });
  const none = await search({ ...base, rankingOptions: { ...hybrid, ranker: 'none' } });
  assert.deepEqual(
    none.hits.map((h) => h.fileId),
    ['file-x', 'file-y'],
    'ranker none: the raw vector order',
  );
});

test('fuseRanks: the first of both lists scores 1, weights shift the order', () => {
  const hit = (fileId: string) => ({ storeId: 's', fileId, seq: 0, text: fileId, score: 0.5 });
  const both = fuseRanks([hit('a'), hit('b')], [hit('a')], { embedding: 1, text: 1 });
  assert.equal(both.find((c) => c.hit.fileId === 'a')?.score, 1);
  const textHeavy = fuseRanks([hit('a'), hit('b')], [hit('b')], { embedding: 0.1, text: 0.9 });
  const order = textHeavy.sort((x, y) => y.score - x.score).map((c) => c.hit.fileId);
  assert.deepEqual(order, ['b', 'a']);
});

test('several queries: embedded in one call, each passage once with its best score', async () => {
  const result = await search(request({ queries: ['money back', 'refund policy', 'money back', 'shipping'] }));
  assert.deepEqual(embeddings.calls.length, 1);
  assert.deepEqual(embeddings.calls[0]?.body.input, ['money back', 'refund policy', 'shipping']);
  assert.deepEqual(result.usage, [embeddings.usageOf(3)]);
  assert.deepEqual(result.queries, ['money back', 'refund policy', 'money back', 'shipping'], 'as searched');
  const keys = result.hits.map((h) => `${h.fileId}#${h.text}`);
  assert.equal(new Set(keys).size, keys.length, 'each passage once');
  assert.equal(keys.length, 3);
  assert.deepEqual(
    result.hits.slice(0, 2).map((h) => [h.fileId, h.text, h.score]),
    [
      ['file-a', 'Refunds within 30 days.', 1],
      ['file-a', 'Shipping takes a week.', 1],
    ],
    'best scores kept (refund policy and shipping match exactly); ties by chunk order',
  );
});

test('several stores: one call per model, one file in two stores cited once, ties by file id', async () => {
  store.seed({ id: 'vs_b', owner: ALICE.owner }, [
    REFUNDS,
    { fileId: 'file-0', filename: 'zero.md', chunks: [{ seq: 4, text: 'Refund rules.', vector: [2, 0, 0] }] },
  ]);
  store.seed({ id: 'vs_c', owner: ALICE.owner, embeddingModel: 'emb-other' }, [PRICING]);
  const result = await search(request({ vectorStoreIds: ['vs_a', 'vs_b', 'vs_c', 'vs_a'] }));
  assert.deepEqual(
    embeddings.calls.map((c) => c.body.model),
    ['emb-small', 'emb-other'],
  );
  assert.deepEqual(result.usage, [embeddings.usageOf(1), embeddings.usageOf(1)]);
  assert.deepEqual(
    result.hits.map((h) => [h.fileId, h.text, h.score]),
    [
      ['file-0', 'Refund rules.', 1],
      ['file-a', 'Refunds within 30 days.', 1],
      ['file-b', 'Prices are in dollars.', result.hits[2]?.score],
      ['file-a', 'Shipping takes a week.', 0.5],
    ],
  );
  assert.deepEqual(
    store.calls.touched.map((t) => t.id),
    ['vs_a', 'vs_b', 'vs_c'],
  );
});

test('at most maxNumResults', async () => {
  const result = await search(request({ maxNumResults: 1 }));
  assert.equal(result.hits.length, 1);
});

test('a store with no completed file or no vector yet is not embedded for', async () => {
  store.seed({ id: 'vs_empty', owner: ALICE.owner, dimensions: null }, []);
  store.seed({ id: 'vs_busy', owner: ALICE.owner }, [{ ...REFUNDS, status: 'in_progress' }]);
  const result = await search(request({ vectorStoreIds: ['vs_empty', 'vs_busy'] }));
  assert.deepEqual(result.hits, []);
  assert.equal(embeddings.calls.length, 0);
});

test('a refused embedding call surfaces as its own GatewayError: a spent budget stays 429 budget_exceeded', async () => {
  const details = { budget_usd: 1, period: 'month' };
  embeddings.next({
    status: 429,
    code: 'budget_exceeded',
    retryAfterMs: 3_600_000,
    usage: undefined,
    body: JSON.stringify({
      code: 'budget_exceeded',
      message: "This API key's token budget for the period is spent.",
      details,
      error: { message: 'x', type: 'rate_limit_error', code: 'budget_exceeded', param: null },
    }),
  });
  const error = await refusal(search(request()));
  assert.equal(error.code, 'budget_exceeded');
  assert.equal(error.status, 429);
  assert.deepEqual(error.details, details);
  assert.equal(error.message, "This API key's token budget for the period is spent.");
  assert.equal(error.retryAfterMs, 3_600_000);
  assert.deepEqual(store.calls.nearest, []);
});

test('a backend with as many searches waiting as it takes: 503 search_busy with Retry-After, not a 500', async () => {
  const busy = createFileSearch({
    store: { ...store, nearest: () => Promise.reject(new VectorSearchBusy(256)) },
    callAs: embeddings.callAs,
    now: () => NOW,
  });
  const error = await refusal(busy(request()));
  assert.equal(error.code, 'search_busy');
  assert.equal(error.status, 503);
  assert.deepEqual(error.details, { waiting: 256 });
  assert.equal(error.headers?.['retry-after'], '1');
});

test("a search of no query checks the stores and reads none of their files (the file_search tool's check)", async () => {
  let read = 0;
  const searchable = store.searchableFiles.bind(store);
  store.searchableFiles = async (id: string) => {
    read++;
    return searchable(id);
  };
  const result = await search(request({ queries: [] }));
  assert.deepEqual(result.hits, []);
  assert.equal(read, 0);
  assert.equal(embeddings.calls.length, 0);
  assert.equal(
    (await refusal(search(request({ queries: [], vectorStoreIds: ['vs_none'] })))).code,
    'vector_store_not_found',
  );
});
