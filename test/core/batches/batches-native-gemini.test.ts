/**
 * A batch forwarded natively to Gemini's Batch API, end to end: the openai SDK uploads a JSONL of chat lines and
 * creates a batch whose model routes to a Gemini upstream (the mock speaking the Batch API on a real socket); the
 * upstream gets one batchGenerateContent (never a generateContent per line), with its own key and never the
 * caller's token; the batch completes with OpenAI's output lines; each line's usage record is at half the price.
 * Lines of two upstream models (one Gemini batch has one) are run by the gateway itself; a cancel cancels upstream.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { startGeminiUpstream, type GeminiUpstream } from '../../helpers/upstreams/gemini.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { makeKey, resultLines, untilEnded } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';
import { SqliteUsageStore } from '../../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../../src/store/store-contract.js';

const KEY = 'gemini-upstream-key-for-batches-42';

const chatLine = (customId: string, model: string, content: string) =>
  JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, max_tokens: 16, messages: [{ role: 'user', content }] },
  });

describe('batches forwarded natively to the Gemini Batch API', () => {
  let mock: GeminiUpstream;
  let gw: TestGateway;
  let callerKey: string;
  let client: OpenAI;
  before(async () => {
    mock = await startGeminiUpstream({ requiredKey: KEY });
    gw = await startGateway({
      env: { GEMINI_TEST_KEY: KEY },
      configFile: {
        name: 'gw.yaml',
        text: [
          'batches: { poll_ms: 20, concurrency: 8, native_poll_ms: 20 }',
          'upstreams:',
          `  - { name: google, kind: gemini, base_url: "${mock.baseUrl}", api_key_env: GEMINI_TEST_KEY }`,
          'models:',
          '  - { id: flash, upstream: google, upstream_model: gemini-2.0-flash, pricing: { input_per_million: 1, output_per_million: 10 } }',
          '  - { id: pro, upstream: google, upstream_model: gemini-2.5-pro, pricing: { input_per_million: 1, output_per_million: 10 } }',
        ].join('\n'),
      },
    });
    callerKey = await makeKey(gw.url, 'batcher');
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: callerKey });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  async function createBatch(lines: string[]) {
    const input = await client.files.create({
      file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'),
      purpose: 'batch',
    });
    return client.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
  }

  test('one batchGenerateContent with the upstream key; completed with OpenAI output lines; usage at half price', async () => {
    mock.batches.script = { runningPolls: 3 };
    const lines = Array.from({ length: 5 }, (_, i) => chatLine(`q-${i}`, 'flash', `question ${i}`));
    const created = await createBatch(lines);
    const ended = await untilEnded('the batch to complete', () => client.batches.retrieve(created.id));
    assert.equal(ended.status, 'completed', JSON.stringify(ended));
    assert.deepEqual(ended.request_counts, { total: 5, completed: 5, failed: 0 });

    const creates = mock.requests.filter((r) => r.url.endsWith(':batchGenerateContent'));
    assert.equal(creates.length, 1, 'one upstream batch');
    assert.equal(creates[0]?.url, '/v1beta/models/gemini-2.0-flash:batchGenerateContent');
    assert.equal(mock.generateRequests().length, 0, 'no line was sent as its own generateContent');
    const sent = creates[0]?.body as {
      batch: { displayName: string; inputConfig: { requests: { requests: Array<{ metadata: { key: string } }> } } };
    };
    assert.equal(sent.batch.displayName, `llmgw:${created.id}`);
    assert.deepEqual(
      sent.batch.inputConfig.requests.requests.map((r) => r.metadata.key),
      ['line-0', 'line-1', 'line-2', 'line-3', 'line-4'],
    );
    assert.ok(mock.requests.filter((r) => r.url.startsWith('/v1beta/batches/')).length >= 3, 'polled');
    for (const request of mock.requests) {
      assert.equal(request.headers['x-goog-api-key'], KEY, request.url);
      const headers = JSON.stringify(request.headers);
      assert.ok(!headers.includes(callerKey) && !headers.includes(ADMIN_TOKEN), 'no gateway token upstream');
      assert.ok(!request.text.includes(callerKey), 'no gateway token in a body');
    }

    const output = await resultLines(client, ended.output_file_id);
    assert.deepEqual(
      output.map((l) => l.custom_id),
      ['q-0', 'q-1', 'q-2', 'q-3', 'q-4'],
    );
    for (const [i, line] of output.entries()) {
      assert.equal(line.error, null);
      assert.equal(line.response?.status_code, 200);
      assert.equal(line.response?.request_id, `resp-question${i}`);
      const body = line.response?.body ?? {};
      assert.equal(body.object, 'chat.completion');
      assert.match(String(body.id), /^chatcmpl-/);
      assert.deepEqual((body.choices as Array<{ message: unknown }>)[0]?.message, {
        role: 'assistant',
        content: `batch answer to question ${i}`,
      });
      assert.deepEqual(body.usage, { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 });
    }

    // Each line's usage record: the caller's, the caller's model name, at half of 10 × $1 + 4 × $10 per million.
    const usage = new SqliteUsageStore(gw.store.db);
    const records = await waitForValue(
      'the five usage records',
      async () => (await usage.recent(1_000, false)).filter((r) => r.requestId.startsWith('resp-question')),
      (r: UsageRecord[]) => r.length === 5,
    );
    for (const record of records) {
      assert.equal(record.route, 'chat');
      assert.equal(record.model, 'flash');
      assert.equal(record.upstream, 'google');
      assert.equal(record.status, 200);
      assert.deepEqual([record.promptTokens, record.completionTokens], [10, 4]);
      assert.ok(Math.abs((record.costUsd ?? 0) - 0.000025) < 1e-12, String(record.costUsd));
    }
  });

  test('an upstream whose batch list is a 404 still takes the batch: the list is a probe, not a refusal', async () => {
    // A Gemini-compatible server (or a Gemini API version) without `GET batches`: before a create the gateway lists
    // the upstream's batches to find one a crash left created; a 404 there says nothing of batchGenerateContent.
    mock.batches.listStatus = 404;
    mock.batches.script = { runningPolls: 0 };
    const created = await createBatch([chatLine('l-0', 'flash', 'listless 0'), chatLine('l-1', 'flash', 'listless 1')]);
    const ended = await untilEnded('the batch to complete', () => client.batches.retrieve(created.id));
    assert.equal(ended.status, 'completed', JSON.stringify(ended));
    assert.deepEqual(ended.request_counts, { total: 2, completed: 2, failed: 0 });
    assert.ok(
      mock.requests.some((r) => r.method === 'GET' && r.url.startsWith('/v1beta/batches?')),
      'the list was tried',
    );
    assert.equal(mock.requests.filter((r) => r.url.endsWith(':batchGenerateContent')).length, 1, 'one upstream batch');
    assert.equal(mock.generateRequests().length, 0, 'no line was run by the gateway');
    const output = await resultLines(client, ended.output_file_id);
    assert.deepEqual(
      output.map((l) => [l.custom_id, l.response?.request_id]),
      [
        ['l-0', 'resp-listless0'],
        ['l-1', 'resp-listless1'],
      ],
    );
  });

  test("a line's upstream error goes to the error file; the others to the output", async () => {
    mock.batches.script = {
      runningPolls: 0,
      answer: (_request, position) =>
        position === 1 ? { error: { code: 3, message: 'Request contains an invalid argument.' } } : undefined,
    };
    const created = await createBatch([chatLine('a', 'flash', 'x'), chatLine('b', 'flash', 'y')]);
    const ended = await untilEnded('the batch to complete', () => client.batches.retrieve(created.id));
    assert.deepEqual(ended.request_counts, { total: 2, completed: 1, failed: 1 });
    const errors = await resultLines(client, ended.error_file_id);
    assert.equal(errors[0]?.custom_id, 'b');
    assert.equal(errors[0]?.response?.status_code, 400);
    assert.equal(errors[0]?.response?.body.code, 'upstream_rejected_request');
    assert.equal((await resultLines(client, ended.output_file_id))[0]?.custom_id, 'a');
  });

  test('lines of two upstream models: refused by the Gemini batch API, run by the gateway line by line', async () => {
    const created = await createBatch([chatLine('f', 'flash', 'one'), chatLine('p', 'pro', 'two')]);
    const ended = await untilEnded('the batch to complete', () => client.batches.retrieve(created.id));
    assert.deepEqual(ended.request_counts, { total: 2, completed: 2, failed: 0 });
    assert.equal(mock.requests.filter((r) => r.url.endsWith(':batchGenerateContent')).length, 0);
    assert.deepEqual(
      mock
        .generateRequests()
        .map((r) => r.url)
        .sort(),
      ['/v1beta/models/gemini-2.0-flash:generateContent', '/v1beta/models/gemini-2.5-pro:generateContent'],
    );
  });

  test('a cancel cancels the upstream batch; the answers it made are kept', async () => {
    mock.batches.script = { runningPolls: 1_000_000, answeredBeforeCancel: 1 };
    const created = await createBatch([chatLine('c0', 'flash', 'c0'), chatLine('c1', 'flash', 'c1')]);
    await waitFor('the upstream batch polled', () => mock.requests.some((r) => r.url.startsWith('/v1beta/batches/')));
    await client.batches.cancel(created.id);
    const ended = await untilEnded('the batch to be cancelled', () => client.batches.retrieve(created.id));
    assert.equal(ended.status, 'cancelled');
    assert.ok(mock.requests.some((r) => r.method === 'POST' && /^\/v1beta\/batches\/[\w-]+:cancel$/.test(r.url)));
    assert.equal(ended.request_counts?.completed, 1);
    assert.equal((await resultLines(client, ended.output_file_id))[0]?.custom_id, 'c0');
  });
});
