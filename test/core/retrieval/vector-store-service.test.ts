/**
 * VectorStoreService on the real gateway: a store's `embedding_model` cannot change while files are being embedded
 * (the run embeds with the model it read when it claimed the file, and the backend refuses a change only once
 * vectors are stored: the store would hold the old model's vectors and be searched with the new model's); a store
 * deleted while files are added to it is the caller's 404, not a 500.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { VectorStoreService } from '../../../src/core/retrieval/vector-store-service.js';
import type { FileService } from '../../../src/core/files/file-service.js';
import type { FileSearch } from '../../../src/core/retrieval/file-search.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import type { VectorStoreRecord, VectorStoreStore } from '../../../src/store/vector-contract.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { startWordEmbedder, type WordEmbedder } from '../../helpers/upstreams/word-embedder.js';
import { call } from '../../helpers/http.js';
import { waitForValue } from '../../helpers/wait.js';

type Json = Record<string, unknown>;

describe('changing the embedding model of a store', () => {
  let embedder: WordEmbedder;
  let gw: TestGateway;
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
  const send = (method: string, path: string, body?: unknown) =>
    call(`${gw.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

  before(async () => {
    // Slow embedding calls: the file stays in progress while the change is asked for.
    embedder = await startWordEmbedder({ dimensions: 16, delayMs: 1_500 });
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: embedder.baseUrl, UPSTREAM_API_KEY: 'sk-embedder-key-0123456789abcdef' },
    });
  });
  after(async () => {
    await gw.close();
    await embedder.close();
  });

  test('is refused while a file is in progress, and once the store holds vectors', async () => {
    const store = (await send('POST', '/v1/vector_stores', { name: 'model change' })).json;
    const form = new FormData();
    form.append('purpose', 'assistants');
    form.append('file', new Blob(['refunds within thirty days']), 'refunds.txt');
    const uploaded = await fetch(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: headers.authorization },
      body: form,
    });
    const file = (await uploaded.json()) as Json;
    const added = await send('POST', `/v1/vector_stores/${String(store.id)}/files`, { file_id: file.id });
    assert.equal(added.status, 200, added.text);

    const during = await send('POST', `/v1/vector_stores/${String(store.id)}`, {
      embedding_model: 'text-embedding-3-large',
    });
    assert.equal(during.status, 400, during.text);
    assert.equal(during.json.code, 'vector_store_holds_vectors');
    assert.deepEqual(
      { ...(during.json.details as Json), reason: undefined },
      {
        embedding_model: 'text-embedding-3-small',
        requested: 'text-embedding-3-large',
        in_progress: 1,
        reason: undefined,
      },
    );

    await waitForValue(
      'the file completed',
      async () => (await send('GET', `/v1/vector_stores/${String(store.id)}/files/${String(file.id)}`)).json,
      (f) => f.status === 'completed',
      20_000,
    );
    const ran = embedder.requests.map((r) => r.model);
    assert.ok(ran.length > 0 && ran.every((m) => m === 'text-embedding-3-small'));
    const later = await send('POST', `/v1/vector_stores/${String(store.id)}`, {
      embedding_model: 'text-embedding-3-large',
    });
    assert.equal(later.status, 400, later.text);
    assert.equal(later.json.code, 'vector_store_holds_vectors');
    const kept = await send('GET', `/v1/vector_stores/${String(store.id)}`);
    assert.equal(kept.json.embedding_model, 'text-embedding-3-small');
  });
});

describe('a store deleted while files are added to it', () => {
  const LIVE = {
    id: 'vs_a',
    owner: 'key:alice',
    expiredMs: null,
    fileCounts: { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 },
  } as unknown as VectorStoreRecord;

  /** A service over a backend whose store is deleted by the time `addFiles` runs (`during`) or right after it. */
  function serviceDeleting(when: 'during' | 'after'): VectorStoreService {
    let deleted = false;
    const store = {
      getStore: async () => (deleted ? undefined : LIVE),
      addFiles: async () => {
        deleted = true;
        // What SQLite's backend throws for a store that is gone (sqlite-vectors.ts addFiles).
        if (when === 'during') throw new RangeError('no vector store vs_a');
      },
      touchStore: async () => undefined,
      getFile: async () => undefined,
      getBatch: async () => undefined,
    } as unknown as VectorStoreStore;
    const files = { get: async () => ({ id: 'file-a', filename: 'a.txt' }) } as unknown as FileService;
    return new VectorStoreService({
      store,
      files,
      search: (() => Promise.reject(new Error('no search'))) as FileSearch,
      defaults: {
        embeddingModel: 'text-embedding-3-small',
        dimensions: undefined,
        metric: 'cosine',
        index: 'flat',
        maxBatchFiles: 10,
        maxFilesPerStore: 10,
      },
      checkModel: () => undefined,
      wake: () => undefined,
    });
  }

  async function codeOf(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
    } catch (error) {
      assert.ok(error instanceof GatewayError, String(error));
      return error.code;
    }
    assert.fail('expected a refusal');
  }

  for (const when of ['during', 'after'] as const) {
    test(`${when} the add: a file added is 404 vector_store_not_found`, async () => {
      const service = serviceDeleting(when);
      assert.equal(await codeOf(service.addFile('key:alice', 'vs_a', { file_id: 'file-a' })), 'vector_store_not_found');
    });

    test(`${when} the add: a batch created is 404 vector_store_not_found`, async () => {
      const service = serviceDeleting(when);
      const batch = service.createBatch('key:alice', 'vs_a', { file_ids: ['file-a'] });
      assert.equal(await codeOf(batch), 'vector_store_not_found');
    });
  }
});
