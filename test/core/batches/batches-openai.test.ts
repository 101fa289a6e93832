/**
 * OpenAI's Batch API through the `openai` SDK: files.create (a JSONL of purpose `batch`) -> batches.create -> poll
 * to completed -> files.content(output_file_id) with every line answered, the failed ones in the error file; a
 * file of bad lines fails the batch with its errors; another caller can neither read, list nor cancel any of it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { authHeaders, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { MOCK_CONTENT } from '../../helpers/upstreams/openai.js';
import { QUICK_BATCHES, makeKey, resultLines, untilEnded } from '../../helpers/batch-fixtures.js';

const chatLine = (customId: string, content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra },
  });

describe('OpenAI Batch API through the openai SDK', () => {
  const fixture = useGateway({ configFile: { name: 'gw.yaml', text: QUICK_BATCHES } });
  const client = async (name: string) =>
    new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: await makeKey(fixture.gw.url, name) });

  test('upload, create, poll to completed, download: every line answered, errors in the error file', async () => {
    const alice = await client('alice');
    const bob = await client('bob');
    const lines = [
      ...Array.from({ length: 20 }, (_, i) => chatLine(`ok-${i}`, `question ${i}`)),
      // temperature must be a number: the gateway's chat route refuses it, as it would alice's own call.
      chatLine('bad-0', 'x', { temperature: 'hot' }),
    ];
    const input = await alice.files.create({
      file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'),
      purpose: 'batch',
    });
    const created = await alice.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { job: 'nightly' },
    });
    assert.match(created.id, /^batch_[0-9a-f]{32}$/);
    assert.equal(created.object, 'batch');
    assert.equal(created.status, 'validating');
    assert.deepEqual(created.metadata, { job: 'nightly' });
    assert.equal(created.expires_at, (created.created_at ?? 0) + 86_400);

    const done = await untilEnded('the batch to complete', () => alice.batches.retrieve(created.id));
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 21, completed: 20, failed: 1 });
    for (const stamp of ['in_progress_at', 'finalizing_at', 'completed_at'] as const)
      assert.ok(typeof done[stamp] === 'number', stamp);
    assert.ok(done.output_file_id && done.error_file_id);

    const output = await resultLines(alice, done.output_file_id);
    assert.deepEqual(
      output.map((l) => l.custom_id),
      Array.from({ length: 20 }, (_, i) => `ok-${i}`),
    );
    for (const line of output) {
      assert.equal(line.error, null);
      assert.equal(line.response?.status_code, 200);
      assert.ok(line.response?.request_id);
      const answer = line.response?.body as { object: string; choices: Array<{ message: { content: string } }> };
      assert.equal(answer.object, 'chat.completion');
      assert.equal(answer.choices[0]?.message.content, MOCK_CONTENT);
    }
    const errors = await resultLines(alice, done.error_file_id);
    assert.deepEqual(
      errors.map((l) => [l.custom_id, l.response?.status_code]),
      [['bad-0', 400]],
    );
    assert.equal((errors[0]?.response?.body as { code?: string }).code, 'validation_failed');
    // Every good line reached the upstream exactly once.
    const asked = fixture.mock
      .chatRequests()
      .map((r) => (r.json as { messages: Array<{ content: string }> }).messages[0]?.content);
    assert.deepEqual([...asked].sort(), Array.from({ length: 20 }, (_, i) => `question ${i}`).sort());
    const output2 = await alice.files.retrieve(done.output_file_id);
    assert.equal(output2.purpose, 'batch_output');

    // Bob sees nothing of it: not the batch, not its files, not in his list; he cannot cancel it.
    await assert.rejects(bob.batches.retrieve(created.id), OpenAI.NotFoundError);
    await assert.rejects(bob.batches.cancel(created.id), OpenAI.NotFoundError);
    await assert.rejects(bob.files.content(done.output_file_id), OpenAI.NotFoundError);
    assert.deepEqual((await bob.batches.list()).data, []);
    const listed = await alice.batches.list({ limit: 10 });
    assert.deepEqual(
      listed.data.map((b) => b.id),
      [created.id],
    );
  });

  test('a file of bad lines fails the batch with its errors (line numbers, codes)', async () => {
    const alice = await client('alice-2');
    const text = [
      chatLine('a', 'fine'),
      'not json',
      JSON.stringify({ custom_id: 'c', method: 'POST', url: '/v1/embeddings', body: {} }),
      chatLine('a', 'again'),
    ].join('\n');
    const input = await alice.files.create({ file: await toFile(Buffer.from(text), 'bad.jsonl'), purpose: 'batch' });
    const created = await alice.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const failed = await untilEnded('the batch to fail', () => alice.batches.retrieve(created.id));
    assert.equal(failed.status, 'failed');
    assert.deepEqual(
      failed.errors?.data?.map((e) => [e.line, e.code]),
      [
        [2, 'invalid_json_line'],
        [3, 'mismatched_endpoint'],
        [4, 'duplicate_custom_id'],
      ],
    );
    assert.equal(fixture.mock.chatRequests().length, 0);
  });

  test("create refuses an unknown file, another caller's file, a file of another purpose, a wrong endpoint", async () => {
    const alice = await client('alice-3');
    const bob = await client('bob-3');
    const mine = await alice.files.create({
      file: await toFile(Buffer.from(chatLine('x', 'y')), 'in.jsonl'),
      purpose: 'batch',
    });
    const create = (c: OpenAI, fileId: string, endpoint = '/v1/chat/completions') =>
      c.batches.create({
        input_file_id: fileId,
        endpoint: endpoint as '/v1/chat/completions',
        completion_window: '24h',
      });
    const refused = (e: unknown) =>
      e instanceof OpenAI.BadRequestError && e.status === 400 && e.code === 'batch_input_invalid';
    await assert.rejects(create(bob, mine.id), refused);
    await assert.rejects(create(alice, 'file-nope'), refused);
    await assert.rejects(create(alice, mine.id, '/v1/images/generations'), refused);
    const other = await alice.files.create({
      file: await toFile(Buffer.from('{}'), 'x.jsonl'),
      purpose: 'fine-tune',
    });
    await assert.rejects(create(alice, other.id), refused);
    // What and where: the field named in details (our error body beside OpenAI's).
    const raw = await call(`${fixture.gw.url}/v1/batches`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ input_file_id: mine.id, endpoint: '/v1/chat/completions', completion_window: '1h' }),
    });
    assert.equal(raw.status, 400);
    assert.deepEqual(raw.json.details, { field: 'completion_window', problem: 'must be "24h"' });
  });

  test("output_expires_after sets the result files' age; usage is the succeeded lines' sum; model when all name one", async () => {
    const alice = await client('alice-4');
    const reported = [
      { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, cached: 64, reasoning: 10 },
      { prompt_tokens: 7, completion_tokens: 900, total_tokens: 907, cached: 0, reasoning: 512 },
      { prompt_tokens: 55, completion_tokens: 1, total_tokens: 56, cached: 32, reasoning: 0 },
    ];
    // Each answer the mock gives reports its own usage, cache reads and reasoning included.
    fixture.mock.enqueue(
      ...reported.map((u, i) => ({
        kind: 'json' as const,
        body: {
          id: `chatcmpl-${i}`,
          object: 'chat.completion',
          created: 1_700_000_000,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: `answer ${i}` }, finish_reason: 'stop' }],
          usage: {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
            prompt_tokens_details: { cached_tokens: u.cached },
            completion_tokens_details: { reasoning_tokens: u.reasoning },
          },
        },
      })),
    );
    const lines = [
      ...reported.map((_, i) => chatLine(`ok-${i}`, `question ${i}`)),
      chatLine('bad-0', 'x', { temperature: 'hot' }),
    ];
    const input = await alice.files.create({
      file: await toFile(Buffer.from(lines.join('\n')), 'input.jsonl'),
      purpose: 'batch',
    });
    const created = await alice.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      output_expires_after: { anchor: 'created_at', seconds: 7200 },
    });
    const done = await untilEnded('the batch to complete', () => alice.batches.retrieve(created.id));
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 4, completed: 3, failed: 1 });
    assert.ok(done.output_file_id && done.error_file_id);
    for (const id of [done.output_file_id, done.error_file_id]) {
      const file = await alice.files.retrieve(id);
      assert.equal(file.expires_at, file.created_at + 7200, `${file.filename} expires 2 hours after it was written`);
    }
    assert.equal(done.model, 'gpt-4o-mini');
    const sum = (pick: (u: (typeof reported)[number]) => number) => reported.map(pick).reduce((a, b) => a + b, 0);
    assert.deepEqual(done.usage, {
      input_tokens: sum((u) => u.prompt_tokens),
      input_tokens_details: { cached_tokens: sum((u) => u.cached) },
      output_tokens: sum((u) => u.completion_tokens),
      output_tokens_details: { reasoning_tokens: sum((u) => u.reasoning) },
      total_tokens: sum((u) => u.total_tokens),
    });
    // The list shows the same object.
    const [listed] = (await alice.batches.list({ limit: 1 })).data;
    assert.deepEqual(listed?.usage, done.usage);

    // An ended batch cannot be cancelled: 409, as OpenAI answers, and the batch is unchanged.
    const refused = await alice.batches.cancel(created.id).then(
      () => assert.fail('cancelled an ended batch'),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof OpenAI.ConflictError, String(refused));
    assert.equal(refused.code, 'batch_not_cancellable');
    const raw = await call(`${fixture.gw.url}/v1/batches/${created.id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.apiKey}` },
    });
    assert.equal(raw.status, 409);
    assert.deepEqual(raw.json.details, { batch_id: created.id, status: 'completed' });
    // Not retried by the SDK: the answer cannot change (one cancel request, not three).
    assert.equal(raw.headers['x-should-retry'], 'false');
    assert.equal((await alice.batches.retrieve(created.id)).status, 'completed');
  });

  test('lines naming several models: no model; without output_expires_after the files keep the default age', async () => {
    const alice = await client('alice-5');
    const lines = [
      chatLine('a', 'one'),
      JSON.stringify({
        custom_id: 'b',
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'two' }] },
      }),
    ];
    const input = await alice.files.create({
      file: await toFile(Buffer.from(lines.join('\n')), 'in.jsonl'),
      purpose: 'batch',
    });
    const created = await alice.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await untilEnded('the batch to complete', () => alice.batches.retrieve(created.id));
    assert.equal(done.status, 'completed');
    assert.equal('model' in done, false);
    const output = await resultLines(alice, done.output_file_id);
    const answered = output.map(
      (l) => l.response?.body.usage as { prompt_tokens: number; completion_tokens: number; total_tokens: number },
    );
    assert.equal(
      done.usage?.input_tokens,
      answered.reduce((n, u) => n + u.prompt_tokens, 0),
    );
    assert.equal(
      done.usage?.output_tokens,
      answered.reduce((n, u) => n + u.completion_tokens, 0),
    );
    assert.equal(
      done.usage?.total_tokens,
      answered.reduce((n, u) => n + u.total_tokens, 0),
    );
    const file = await alice.files.retrieve(done.output_file_id ?? '');
    assert.equal(file.expires_at, file.created_at + 30 * 86_400);
  });

  test('output_expires_after is refused when its anchor or seconds are wrong, naming the field', async () => {
    const key = await makeKey(fixture.gw.url, 'alice-6');
    const alice = new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: key });
    const input = await alice.files.create({
      file: await toFile(Buffer.from(chatLine('x', 'y')), 'in.jsonl'),
      purpose: 'batch',
    });
    const attempt = (outputExpiresAfter: unknown) =>
      call(`${fixture.gw.url}/v1/batches`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          input_file_id: input.id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
          output_expires_after: outputExpiresAfter,
        }),
      });
    const cases: Array<[unknown, string]> = [
      [{ anchor: 'last_active_at', seconds: 7200 }, 'output_expires_after.anchor'],
      [{ anchor: 'created_at', seconds: 3599 }, 'output_expires_after.seconds'],
      [{ anchor: 'created_at', seconds: 2_592_001 }, 'output_expires_after.seconds'],
      [{ anchor: 'created_at', seconds: 3600.5 }, 'output_expires_after.seconds'],
      [{ anchor: 'created_at', seconds: '7200' }, 'output_expires_after.seconds'],
      [{ anchor: 'created_at' }, 'output_expires_after.seconds'],
      ['7200', 'output_expires_after'],
    ];
    for (const [value, field] of cases) {
      const answer = await attempt(value);
      assert.equal(answer.status, 400, JSON.stringify(value));
      assert.equal(answer.json.code, 'batch_input_invalid');
      assert.equal((answer.json.details as { field: string }).field, field, JSON.stringify(value));
      assert.equal((answer.json.error as { param: string }).param, field);
    }
    // Through the SDK too; the bounds themselves are accepted.
    await assert.rejects(
      alice.batches.create({
        input_file_id: input.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        output_expires_after: { anchor: 'created_at', seconds: 60 },
      }),
      OpenAI.BadRequestError,
    );
    for (const seconds of [3600, 2_592_000])
      assert.equal((await attempt({ anchor: 'created_at', seconds })).status, 200);
  });
});
