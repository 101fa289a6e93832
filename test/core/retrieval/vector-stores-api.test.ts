/**
 * OpenAI's Vector Stores API on the gateway (issue 44, docs/retrieval.md), through the `openai` SDK with only its
 * base URL and key changed: stores created, files uploaded and ingested in the background (parsed, chunked,
 * embedded through the gateway's own embeddings pipeline by a real mock embedder on a socket), searched with
 * filters; another caller sees nothing; the gateway's own fields, bounds and refusals.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { scopedKey } from '../../helpers/scoped-key.js';
import { startWordEmbedder, type WordEmbedder } from '../../helpers/upstreams/word-embedder.js';
import { buildPdf } from '../../helpers/document-fixtures.js';

const DOCS = {
  'refunds.md': '# Refunds\n\nCustomers may ask for a refund within thirty days of purchase. Refunds go to the card.',
  'shipping.txt': 'Shipping takes five business days. Parcels are tracked from the warehouse to the door.',
  'latency.html':
    '<html><head><style>p{}</style><script>var refund = 1;</script></head><body><h1>Gateway latency</h1><p>The gateway adds under one millisecond of latency &amp; streams tokens.</p></body></html>',
};

describe('Vector Stores API through the openai SDK', () => {
  let embedder: WordEmbedder;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    embedder = await startWordEmbedder({ dimensions: 256, fixedModels: ['legacy-embedder'] });
    gw = await startGateway({
      env: {
        UPSTREAM_BASE_URL: embedder.baseUrl,
        UPSTREAM_API_KEY: 'sk-embedder-key-0123456789abcdef',
      },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await embedder.close();
  });

  test('create, upload and poll a batch (one PDF), search with a filter, read a file back', async () => {
    const store = await client.vectorStores.create({ name: 'handbook', metadata: { team: 'support' } });
    assert.match(store.id, /^vs_[A-Za-z0-9]{24}$/);
    assert.equal(store.object, 'vector_store');
    assert.equal(store.status, 'completed');
    assert.deepEqual(store.file_counts, { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 });
    const extra = store as unknown as Record<string, unknown>;
    assert.equal(extra.embedding_model, 'text-embedding-3-small');
    assert.equal(extra.metric, 'cosine');
    assert.equal(extra.index, 'flat');
    assert.equal(extra.dimensions, null, 'learnt from the first vectors');

    const files = [
      ...Object.entries(DOCS).map(([name, text]) => toFile(Buffer.from(text), name)),
      toFile(
        buildPdf([['Warranty covers the gateway appliance for two years.'], ['Page two: spare parts.']]),
        'warranty.pdf',
      ),
    ];
    const batch = await client.vectorStores.fileBatches.uploadAndPoll(store.id, { files: await Promise.all(files) });
    assert.equal(batch.object, 'vector_store.files_batch');
    assert.equal(batch.status, 'completed');
    assert.deepEqual(batch.file_counts, { in_progress: 0, completed: 4, failed: 0, cancelled: 0, total: 4 });

    const listed = await client.vectorStores.files.list(store.id);
    assert.equal(listed.data.length, 4);
    for (const file of listed.data) {
      assert.equal(file.status, 'completed', JSON.stringify(file.last_error));
      assert.equal(file.object, 'vector_store.file');
      assert.ok(file.usage_bytes > 0);
      assert.deepEqual(file.chunking_strategy, {
        type: 'static',
        static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 },
      });
    }
    const after = await client.vectorStores.retrieve(store.id);
    assert.equal((after as unknown as { dimensions: number }).dimensions, 256);
    assert.ok(after.usage_bytes > 0);

    // Every chunk was embedded as the admin through the gateway's embeddings route, with the store's model.
    assert.ok(embedder.requests.length >= 1);
    assert.ok(embedder.requests.every((r) => r.model === 'text-embedding-3-small'));

    const warranty = listed.data.find((f) => f.id !== undefined && f.attributes !== undefined)!;
    assert.ok(warranty);
    const pdf = (await client.files.list()).data.find((f) => f.filename === 'warranty.pdf')!;
    await client.vectorStores.files.update(pdf.id, {
      vector_store_id: store.id,
      attributes: { kind: 'legal', year: 2026 },
    });

    const found = await client.vectorStores.search(store.id, { query: 'warranty of the appliance' });
    assert.equal(found.data[0]?.file_id, pdf.id);
    assert.equal(found.data[0]?.filename, 'warranty.pdf');
    assert.deepEqual(found.data[0]?.attributes, { kind: 'legal', year: 2026 });
    assert.match(found.data[0]?.content[0]?.text ?? '', /two years/);
    assert.ok(found.data[0]!.score > 0 && found.data[0]!.score <= 1);
    const scores = found.data.map((r) => r.score);
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
      'best first',
    );

    const filtered = await client.vectorStores.search(store.id, {
      query: 'refund card purchase',
      filters: { type: 'eq', key: 'kind', value: 'legal' },
    });
    assert.deepEqual(
      filtered.data.map((r) => r.file_id),
      [pdf.id],
      'only files whose attributes match are searched',
    );

    const content = await client.vectorStores.files.content(pdf.id, { vector_store_id: store.id });
    const text = content.data.map((part) => part.text).join(' ');
    assert.match(text, /Warranty covers/);
    assert.match(text, /spare parts/);
    const html = listed.data.find((f) => f.id !== pdf.id && f.status === 'completed');
    assert.ok(html);
  });

  test('HTML is read as text: scripts and styles are not indexed', async () => {
    const store = await client.vectorStores.create({ name: 'html' });
    const file = await client.files.create({
      file: await toFile(Buffer.from(DOCS['latency.html']), 'latency.html'),
      purpose: 'assistants',
    });
    await client.vectorStores.files.createAndPoll(store.id, { file_id: file.id });
    const content = await client.vectorStores.files.content(file.id, { vector_store_id: store.id });
    const text = content.data.map((part) => part.text).join(' ');
    assert.match(text, /under one millisecond of latency & streams/);
    assert.doesNotMatch(text, /var refund|p\{\}/);
  });

  test("another caller's store is a 404, and its lists are empty", async () => {
    const store = await client.vectorStores.create({ name: 'private' });
    const other = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: await scopedKey(gw.store, ['vector_stores', 'files']),
      maxRetries: 0,
    });
    await assert.rejects(other.vectorStores.retrieve(store.id), (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.equal((error.error as { code: string }).code, 'vector_store_not_found');
      return true;
    });
    await assert.rejects(other.vectorStores.search(store.id, { query: 'anything' }), OpenAI.NotFoundError);
    const page = await other.vectorStores.list();
    assert.deepEqual(page.data, []);
    const chatOnly = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: await scopedKey(gw.store, ['chat']),
      maxRetries: 0,
    });
    await assert.rejects(chatOnly.vectorStores.list(), OpenAI.PermissionDeniedError);
  });

  test('the gateway fields: a metric or index the backend cannot build, and bounds, are 400s naming the field', async () => {
    const post = (body: unknown) =>
      fetch(`${gw.url}/v1/vector_stores`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    // hnsw is built on every backend (a graph in this process); the embedded store has no dot-product metric.
    const hnsw = await post({ name: 'x', index: 'hnsw' });
    assert.equal(hnsw.status, 200);
    assert.equal(((await hnsw.json()) as { index: string }).index, 'hnsw');
    const dot = await post({ name: 'x', metric: 'dot', index: 'hnsw' });
    assert.equal(dot.status, 400);
    const dotBody = (await dot.json()) as { code: string; details: Record<string, unknown> };
    assert.equal(dotBody.code, 'vector_index_unsupported');
    assert.equal(dotBody.details.metric, 'dot');
    assert.equal(dotBody.details.backend, 'sqlite');
    assert.deepEqual(dotBody.details.metrics, ['cosine', 'euclidean']);
    assert.deepEqual(dotBody.details.indexes, ['flat', 'hnsw']);

    const cases: [unknown, string][] = [
      [{ metric: 'manhattan' }, 'metric'],
      [{ dimensions: 0 }, 'dimensions'],
      [{ expires_after: { anchor: 'created_at', days: 1 } }, 'expires_after.anchor'],
      [{ expires_after: { anchor: 'last_active_at', days: 366 } }, 'expires_after.days'],
      [{ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
      [
        { chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 99, chunk_overlap_tokens: 0 } } },
        'chunking_strategy',
      ],
    ];
    for (const [body, field] of cases) {
      const response = await post(body);
      const answer = (await response.json()) as { code: string; details: { errors?: { field: string }[] } };
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(answer.code, 'validation_failed');
      assert.ok(answer.details.errors?.[0]?.field.startsWith(field), `${field}: ${JSON.stringify(answer.details)}`);
    }
  });

  test('a declared dimension is asked of the model; a learnt one never is', async () => {
    const declared = await client.vectorStores.create({
      name: 'dims',
      dimensions: 32,
    } as OpenAI.VectorStoreCreateParams);
    const file = await client.files.create({
      file: await toFile(Buffer.from('some words here'), 'a.txt'),
      purpose: 'assistants',
    });
    const before = embedder.requests.length;
    assert.equal(
      (await client.vectorStores.files.createAndPoll(declared.id, { file_id: file.id })).status,
      'completed',
    );
    assert.deepEqual(
      embedder.requests.slice(before).map((r) => r.dimensions),
      [32],
    );
    const found = await client.vectorStores.search(declared.id, { query: 'words' });
    assert.equal(found.data[0]?.file_id, file.id);
    assert.deepEqual(
      embedder.requests.slice(before + 1).map((r) => r.dimensions),
      [32],
      'the query asked alike',
    );

    const learnt = await client.vectorStores.create({ name: 'learnt' });
    const mark = embedder.requests.length;
    await client.vectorStores.files.createAndPoll(learnt.id, { file_id: file.id });
    await client.vectorStores.search(learnt.id, { query: 'words' });
    assert.deepEqual(
      embedder.requests.slice(mark).map((r) => r.dimensions),
      [undefined, undefined],
    );
  });

  test('a model that answers another dimension than the declared one: the file fails, nothing is stored', async () => {
    const store = await client.vectorStores.create({
      name: 'mismatch',
      dimensions: 32,
      embedding_model: 'legacy-embedder',
    } as OpenAI.VectorStoreCreateParams);
    const file = await client.files.create({
      file: await toFile(Buffer.from('some words here'), 'a.txt'),
      purpose: 'assistants',
    });
    const added = await client.vectorStores.files.createAndPoll(store.id, { file_id: file.id });
    assert.equal(added.status, 'failed');
    assert.equal(added.last_error?.code, 'invalid_file');
    assert.match(added.last_error?.message ?? '', /32/);
    assert.match(added.last_error?.message ?? '', /256/);
    const content = await client.vectorStores.files.content(file.id, { vector_store_id: store.id });
    assert.deepEqual(content.data, []);
    // Nothing of the store is searchable, so a search embeds nothing: an empty page (search-service.test.ts has
    // a query refused for its dimension).
    assert.deepEqual((await client.vectorStores.search(store.id, { query: 'words' })).data, []);
  });

  test('a spent budget stops ingestion: the file fails with a clear last_error, nothing of it is searchable', async () => {
    const created = await fetch(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'small-budget',
        models: ['*'],
        routes: ['vector_stores', 'files', 'embeddings'],
        budget: { tokens: 5, period_seconds: 86_400 },
      }),
    });
    assert.equal(created.status, 201);
    const { key } = (await created.json()) as { key: string };
    const owner = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const store = await owner.vectorStores.create({ name: 'budget' });
    const upload = async (name: string, text: string) =>
      owner.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'assistants' });
    // The first file's call is admitted while any budget is left, and spends it (a budget admits, then settles).
    const first = await upload('one.txt', 'alpha beta gamma delta epsilon zeta eta theta iota kappa');
    assert.equal((await owner.vectorStores.files.createAndPoll(store.id, { file_id: first.id })).status, 'completed');
    const second = await upload('two.txt', 'lambda mu nu xi omicron');
    const failed = await owner.vectorStores.files.createAndPoll(store.id, { file_id: second.id });
    assert.equal(failed.status, 'failed');
    assert.equal(failed.last_error?.code, 'server_error');
    assert.match(failed.last_error?.message ?? '', /refused: budget_exceeded/);
    const content = await owner.vectorStores.files.content(second.id, { vector_store_id: store.id });
    assert.deepEqual(content.data, [], 'none of its chunks was stored');
    // A search embeds its query as the caller too: refused the same way, with the budget's status.
    await assert.rejects(owner.vectorStores.search(store.id, { query: 'lambda omicron' }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.RateLimitError);
      assert.equal((error.error as { code: string }).code, 'budget_exceeded');
      return true;
    });
    const counts = (await owner.vectorStores.retrieve(store.id)).file_counts;
    assert.deepEqual(counts, { in_progress: 0, completed: 1, failed: 1, cancelled: 0, total: 2 });
  });

  test("deleting a file removes its chunks from search; deleting the store answers OpenAI's object", async () => {
    const store = await client.vectorStores.create({ name: 'delete' });
    const file = await client.files.create({
      file: await toFile(Buffer.from('zebra stripes pattern'), 'z.txt'),
      purpose: 'assistants',
    });
    await client.vectorStores.files.createAndPoll(store.id, { file_id: file.id });
    assert.equal((await client.vectorStores.search(store.id, { query: 'zebra' })).data.length, 1);
    const deleted = await client.vectorStores.files.delete(file.id, { vector_store_id: store.id });
    assert.deepEqual(deleted, { id: file.id, object: 'vector_store.file.deleted', deleted: true });
    assert.equal((await client.vectorStores.search(store.id, { query: 'zebra' })).data.length, 0);
    const gone = await client.vectorStores.delete(store.id);
    assert.deepEqual(gone, { id: store.id, object: 'vector_store.deleted', deleted: true });
    await assert.rejects(client.vectorStores.retrieve(store.id), OpenAI.NotFoundError);
  });
});

describe('a vector store holds at most vector_stores.max_files_per_store files', () => {
  let embedder: WordEmbedder;
  let gw: TestGateway;
  before(async () => {
    embedder = await startWordEmbedder({ dimensions: 16 });
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: embedder.baseUrl, UPSTREAM_API_KEY: 'sk-embedder-key-0123456789abcdef' },
      configFile: { name: 'cap.yaml', text: 'vector_stores:\n  max_files_per_store: 2\n' },
    });
  });
  after(async () => {
    await gw.close();
    await embedder.close();
  });

  test('a third file, one at a time or in a batch, is a 400 naming the bound; nothing of it is added', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const upload = async (name: string) =>
      (await client.files.create({ file: await toFile(Buffer.from(`text of ${name}`), name), purpose: 'assistants' }))
        .id;
    const [a, b, c] = [await upload('a.txt'), await upload('b.txt'), await upload('c.txt')];
    await assert.rejects(client.vectorStores.create({ file_ids: [a, b, c] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.equal(error.param, 'file_ids');
      return true;
    });
    const store = await client.vectorStores.create({ file_ids: [a, b] });
    const third = await fetch(`${gw.url}/v1/vector_stores/${store.id}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ file_id: c }),
    });
    assert.equal(third.status, 400);
    const body = (await third.json()) as { code: string; details: { errors: { field: string; problem: string }[] } };
    assert.equal(body.code, 'validation_failed');
    assert.equal(body.details.errors[0]?.field, 'file_id');
    assert.match(body.details.errors[0]?.problem ?? '', /holds 2 files and takes at most 2/);
    await assert.rejects(client.vectorStores.fileBatches.create(store.id, { file_ids: [c] }), OpenAI.BadRequestError);
    assert.equal((await client.vectorStores.retrieve(store.id)).file_counts.total, 2);
  });
});
