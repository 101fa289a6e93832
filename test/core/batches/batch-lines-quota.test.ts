/**
 * A batch's lines count against the storage quotas (issue 41: "files, uploads in progress, batch lines and
 * results"; docs/files.md "Storage quotas"). Each line's request is a copy in the database that outlives the input
 * file (a caller may delete it once the batch is validated) and, for Anthropic's batches, the only copy: without
 * counting them a caller fills the disk with batches (OpenAI: upload, create, delete the input, again; Anthropic:
 * one 256 MB create after another). Over HTTP through the SDKs, against a real gateway and a mock upstream.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { makeKey, untilEnded } from '../../helpers/batch-fixtures.js';

const KB = 1000;
const PATH = '/v1/messages/batches';

/** `count` Anthropic requests of about `bytes` each. */
const anthropicRequests = (count: number, bytes: number, tag: string) =>
  Array.from({ length: count }, (_, i) => ({
    custom_id: `${tag}-${i}`,
    params: { model: 'gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(bytes) }] },
  }));

/** An OpenAI input file of `count` chat lines of about `bytes` each. */
const inputLines = (count: number, bytes: number) =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      custom_id: `l-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: 'y'.repeat(bytes) }] },
    }),
  ).join('\n');

describe('batch lines count against the storage quotas', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: {
        name: 'gw.yaml',
        text: ['files:', '  quota_bytes_per_caller: 1048576', 'batches:', '  poll_ms: 20'].join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });
  const linesOf = (batchId: string) =>
    Number(
      (gw.store.db.prepare('SELECT count(*) AS n FROM batch_lines WHERE batch_id = ?').get(batchId) as { n: number }).n,
    );
  const allLines = () =>
    Number((gw.store.db.prepare('SELECT count(*) AS n FROM batch_lines').get() as { n: number }).n);

  test("Anthropic: creates past the caller's quota are 429 storage_quota_exceeded and keep nothing; a delete makes room", async () => {
    const key = await makeKey(gw.url, 'anthropic-quota');
    const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
    const create = (tag: string) =>
      call(`${gw.url}${PATH}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ requests: anthropicRequests(40, 15 * KB, tag) }),
      });
    const first = await create('a');
    assert.equal(first.status, 200, first.text);
    const firstId = first.json.id as string;
    assert.equal(linesOf(firstId), 40);

    const before = allLines();
    const second = await create('b');
    assert.equal(second.status, 429, second.text);
    assert.equal(second.json.code, 'storage_quota_exceeded');
    assert.equal(second.headers['x-should-retry'], 'false');
    assert.equal(second.json.details!.quota, 'files.quota_bytes_per_caller');
    assert.equal(allLines(), before, 'nothing of the refused create is kept');

    await untilEnded('the first batch to end', async () => {
      const got = await call(`${gw.url}${PATH}/${firstId}`, { headers });
      return got.json as { processing_status?: string };
    });
    const deleted = await call(`${gw.url}${PATH}/${firstId}`, { method: 'DELETE', headers });
    assert.equal(deleted.status, 200, deleted.text);
    const third = await create('c');
    assert.equal(third.status, 200, `the deleted batch's lines no longer count: ${third.text}`);
  });

  test('OpenAI: a batch whose lines do not fit fails storage_quota_exceeded with no line stored; an input file deleted after validation still leaves its lines counted', async () => {
    const openai = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: await makeKey(gw.url, 'openai-quota'),
      maxRetries: 0,
    });
    // 600 KB of input, and 600 KB more for its lines: past the 1 MiB quota.
    const big = await openai.files.create({
      file: await toFile(Buffer.from(inputLines(40, 15 * KB)), 'big.jsonl'),
      purpose: 'batch',
    });
    const refused = await openai.batches.create({
      input_file_id: big.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const failed = await untilEnded('the batch to fail', () => openai.batches.retrieve(refused.id));
    assert.equal(failed.status, 'failed');
    assert.equal(failed.errors?.data?.[0]?.code, 'storage_quota_exceeded', JSON.stringify(failed.errors));
    assert.equal(linesOf(refused.id), 0);
    await openai.files.delete(big.id);

    // 400 KB of input: its lines fit (800 KB in all). Once validated the input file may go; its lines stay counted.
    const input = await openai.files.create({
      file: await toFile(Buffer.from(inputLines(40, 10 * KB)), 'in.jsonl'),
      purpose: 'batch',
    });
    const batch = await openai.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const ended = await untilEnded('the batch to complete', () => openai.batches.retrieve(batch.id));
    assert.equal(ended.status, 'completed');
    assert.equal(linesOf(batch.id), 40);
    await openai.files.delete(input.id);
    if (ended.output_file_id) await openai.files.delete(ended.output_file_id);
    const more = await call(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${openai.apiKey}`, 'content-type': 'multipart/form-data; boundary=b' },
      body: Buffer.concat([
        Buffer.from('--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'),
        Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="f.jsonl"\r\n\r\n'),
        Buffer.alloc(700 * KB, 'z'),
        Buffer.from('\r\n--b--\r\n'),
      ]),
    });
    assert.equal(more.status, 429, `the batch's 400 KB of lines still count: ${more.text}`);
    assert.equal(more.json.code, 'storage_quota_exceeded');
  });
});
