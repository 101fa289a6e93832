/**
 * Anthropic's Message Batches create read as a stream (routes/batch-requests-body.ts): a batch past the gateway's
 * global body limit (server.body_limit_bytes, 1 MiB) created through `@anthropic-ai/sdk` and run to the end; bodies
 * that are not `{"requests": [...]}` refused with where; a request past batches.max_line_bytes and a body past
 * batches.max_create_bytes refused; and a create that fails part way leaves no line in the store.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { anthropicBatchRequest, untilEnded } from '../../helpers/batch-fixtures.js';
import { waitFor } from '../../helpers/wait.js';

const MAX_CREATE_BYTES = 3 * 1024 * 1024;
const CONFIG = [
  'batches:',
  '  poll_ms: 20',
  '  concurrency: 64',
  '  max_line_bytes: 2048',
  `  max_create_bytes: ${MAX_CREATE_BYTES}`,
].join('\n');

const PATH = '/v1/messages/batches';

describe('Anthropic batch create, streamed', () => {
  const fixture = useGateway({ configFile: { name: 'gw.yaml', text: CONFIG } });
  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    call(fixture.url(PATH), {
      method: 'POST',
      headers: authHeaders({ 'content-type': 'application/json', ...headers }),
      body,
    });
  const storedLines = () =>
    (fixture.gw.store.db.prepare('SELECT count(*) AS n FROM batch_lines').get() as { n: number }).n;
  const storedBatches = () =>
    (fixture.gw.store.db.prepare('SELECT count(*) AS n FROM batches').get() as { n: number }).n;

  test('the SDK creates a batch of 5,000 requests (2 MB, past the 1 MiB body limit); every line is answered', async () => {
    const client = new Anthropic({ baseURL: fixture.gw.url, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const requests = Array.from({ length: 5_000 }, (_, i) => anthropicBatchRequest(i));
    assert.ok(JSON.stringify({ requests }).length > 1_800_000); // 1.7 MiB: past the 1 MiB body limit
    const created = await client.messages.batches.create({ requests });
    assert.equal(created.processing_status, 'in_progress');
    assert.equal(created.request_counts.processing, 5_000);
    const ended = await untilEnded('5,000 lines to end', () => client.messages.batches.retrieve(created.id), 120_000);
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 5_000, errored: 0, canceled: 0, expired: 0 });
    const ids: string[] = [];
    for await (const line of await client.messages.batches.results(created.id)) {
      assert.equal(line.result.type, 'succeeded');
      ids.push(line.custom_id);
    }
    assert.deepEqual(
      ids,
      requests.map((r) => r.custom_id),
    );
    // Each request reached the upstream once, its text intact.
    const sent = fixture.mock
      .chatRequests()
      .map((r) => (r.json as { messages: Array<{ content: string }> }).messages.at(-1)?.content);
    assert.equal(sent.length, 5_000);
    assert.equal(new Set(sent).size, 5_000);
    assert.ok(sent.includes(requests[4_321]?.params.messages[0]?.content));
  });

  test('malformed bodies: 400 saying what and where, nothing stored', async () => {
    const lines = storedLines();
    const batches = storedBatches();
    const ok = JSON.stringify(anthropicBatchRequest(0));
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['', 'invalid_json', { reason: 'the body is empty', offset: 0 }],
      [`{"requests": [${ok}`, 'invalid_json', { offset: 14 + ok.length }],
      [`{"requests": [${ok}]} trailing`, 'invalid_json', { offset: 17 + ok.length }],
      [`{"requests": [${ok}, {"custom_id": "b", "params": {"model": tru}}]}`, 'invalid_json', { field: 'requests[1]' }],
      [`{"requests": [${ok}, ]}`, 'invalid_json', { field: 'requests[1]' }],
      ['[1, 2]', 'validation_failed', { offset: 0 }],
      ['{"requests": {"a": 1}}', 'validation_failed', { offset: 13 }],
      ['{"other": [1]}', 'validation_failed', {}],
      ['{"requests": []}', 'validation_failed', {}],
      [`{"requests": [${ok}], "requests": [${ok}]}`, 'invalid_json', {}],
      [`{"requests": [${ok}, {"custom_id": "bad id!", "params": {"model": "m"}}]}`, 'validation_failed', {}],
      [`{"requests": [${ok}, {"custom_id": "c", "params": {"model": 7}}]}`, 'validation_failed', {}],
      [
        `{"requests": [${ok}, {"custom_id": "c", "__proto__": {"x": 1}, "params": {"model": "m"}}]}`,
        'invalid_json',
        {},
      ],
      [`{"requests": [${ok}, {"custom_id": "c", "custom_id": "d", "params": {"model": "m"}}]}`, 'invalid_json', {}],
    ];
    for (const [body, code, details] of cases) {
      const answer = await post(body);
      assert.equal(answer.status, 400, `${body.slice(0, 80)}: ${answer.text}`);
      assert.equal(answer.json.code, code, body.slice(0, 80));
      for (const [key, value] of Object.entries(details))
        assert.deepEqual(answer.json.details?.[key], value, `${key} of ${body.slice(0, 80)}: ${answer.text}`);
    }
    // The fields are named as the whole-body schema named them.
    const badId = await post(`{"requests": [${ok}, {"custom_id": "bad id!", "params": {"model": "m"}}]}`);
    assert.equal((badId.json.details?.errors as Array<{ field: string }>)[0]?.field, 'requests[1].custom_id');
    const noParams = await post(`{"requests": [${ok}, {"custom_id": "c"}]}`);
    assert.equal((noParams.json.details?.errors as Array<{ field: string }>)[0]?.field, 'requests[1].params');
    const notObject = await post(`{"requests": [${ok}, 42]}`);
    assert.equal((notObject.json.details?.errors as Array<{ field: string }>)[0]?.field, 'requests[1]');
    const missing = await post('{"other": [1]}');
    assert.deepEqual(missing.json.details?.errors, [{ field: 'requests', problem: 'is required' }]);
    // Anthropic's own error shape, as every error of this path.
    assert.equal((missing.json as { type?: string }).type, 'error');
    // Not JSON at all: 415 as before.
    const text = await post(`{"requests": [${ok}]}`, { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    assert.equal(text.json.code, 'unsupported_media_type');
    const gzip = await post(`{"requests": [${ok}]}`, { 'content-encoding': 'gzip' });
    assert.equal(gzip.status, 415);
    assert.equal(storedLines(), lines);
    assert.equal(storedBatches(), batches);
  });

  test('a request past batches.max_line_bytes is a 400 naming it and the bound', async () => {
    const long = {
      ...anthropicBatchRequest(1),
      params: { ...anthropicBatchRequest(1).params, system: 'x'.repeat(3000) },
    };
    const answer = await post(JSON.stringify({ requests: [anthropicBatchRequest(0), long, anthropicBatchRequest(2)] }));
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.code, 'batch_input_invalid');
    assert.equal(answer.json.details?.field, 'requests[1]');
    assert.equal(answer.json.details?.max_bytes, 2048);
  });

  test('a body past batches.max_create_bytes is a 413, with Content-Length or sent in chunks', async () => {
    const count = Math.ceil(MAX_CREATE_BYTES / JSON.stringify(anthropicBatchRequest(0)).length) + 10;
    const body = JSON.stringify({ requests: Array.from({ length: count }, (_, i) => anthropicBatchRequest(i)) });
    assert.ok(body.length > MAX_CREATE_BYTES && count < 50_000);
    const answer = await post(body);
    assert.equal(answer.status, 413, answer.text);
    assert.equal(answer.json.code, 'payload_too_large');
    assert.equal(answer.json.details?.limit_bytes, MAX_CREATE_BYTES);
    const chunked = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(fixture.url(PATH), {
        method: 'POST',
        headers: authHeaders({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }),
        signal: AbortSignal.timeout(20_000),
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      for (let at = 0; at < body.length; at += 65_536) req.write(body.slice(at, at + 65_536));
      req.end();
    });
    assert.equal(chunked.status, 413, chunked.text);
    assert.equal((JSON.parse(chunked.text) as { code: string }).code, 'payload_too_large');
  });

  test('a create cut off part way: its lines were being stored, and none remains', async () => {
    const lines = storedLines();
    const batches = storedBatches();
    const req = httpRequest(fixture.url(PATH), {
      method: 'POST',
      headers: authHeaders({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }),
    });
    req.on('error', () => undefined);
    try {
      req.write('{"requests": [');
      for (let i = 0; i < 1_200; i++) req.write(`${i === 0 ? '' : ','}${JSON.stringify(anthropicBatchRequest(i))}`);
      // Stored in chunks as they come, before the body ends.
      await waitFor('the first lines stored', () => storedLines() >= lines + 500);
    } finally {
      req.destroy();
    }
    await waitFor("the uncreated batch's lines removed", () => storedLines() === lines);
    assert.equal(storedBatches(), batches);

    // A bad request after 1,200 good ones: the same.
    const good = Array.from({ length: 1_200 }, (_, i) => JSON.stringify(anthropicBatchRequest(i)));
    const answer = await post(`{"requests": [${good.join(',')}, {"custom_id": "req-3", "params": {"model": "m"}}]}`);
    assert.equal(answer.status, 400);
    assert.equal(answer.json.details?.field, 'requests[1200].custom_id');
    assert.equal(storedLines(), lines);
    assert.equal(storedBatches(), batches);
  });
});
