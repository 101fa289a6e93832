/**
 * A batch whose lines all go to an Anthropic upstream is forwarded to Anthropic's Message Batches API (half the
 * price): through `@anthropic-ai/sdk` (`messages.batches`: Messages lines as they are) and through the openai SDK's
 * Batch API (chat lines, translated both ways). The upstream gets ONE create holding every line (models renamed,
 * the upstream's key, never the caller's or the admin token), is polled, its results read back into the caller's
 * ids and shapes, usage recorded at the batch price; a cancel cancels upstream; a refusal makes the gateway run the
 * lines itself, one Messages call each; a restart polls the batch it created instead of creating another.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../../helpers/upstreams/anthropic.js';
import { makeKey, resultLines, untilEnded } from '../../helpers/batch-fixtures.js';
import { waitFor } from '../../helpers/wait.js';

const UPSTREAM_KEY = 'sk-ant-upstream-batches-0123456789abcdef';
const UPSTREAM_MODEL = 'claude-haiku-4-5-20251001';

function configText(mock: AnthropicUpstream): string {
  return [
    'upstreams:',
    `  - { name: claude, kind: anthropic, base_url: "${mock.baseUrl}", api_key_env: ANT_KEY, health_check: none }`,
    'models:',
    `  - { id: haiku, upstream: claude, upstream_model: ${UPSTREAM_MODEL}, pricing: { input_per_million: 1, output_per_million: 2 } }`,
    'batches:',
    '  poll_ms: 20',
    '  native_poll_ms: 20',
  ].join('\n');
}

const params = (text: string) => ({
  model: 'haiku',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: text }],
});

async function resultsOf(client: Anthropic, id: string) {
  const results: Anthropic.Messages.MessageBatchIndividualResponse[] = [];
  for await (const line of await client.messages.batches.results(id)) results.push(line);
  return results;
}

interface SentCreate {
  requests: Array<{ custom_id: string; params: Record<string, unknown> }>;
}

/** Usage rows of a route that answered 200, once `count` of them are there. */
async function usageRows(gw: TestGateway, route: string, count: number) {
  const read = () =>
    gw.store.db
      .prepare(`SELECT cost_usd, upstream, model FROM usage_records WHERE route = ? AND status = 200`)
      .all(route) as Array<{ cost_usd: number; upstream: string; model: string }>;
  await waitFor(`${count} usage records of ${route}`, () => read().length === count);
  return read();
}

describe('batches forwarded to Anthropic’s Message Batches API', () => {
  let mock: AnthropicUpstream;
  let gw: TestGateway;
  let callerKey: string;
  before(async () => {
    mock = await startAnthropicUpstream({ requiredKey: UPSTREAM_KEY, batches: { pollsBeforeDone: 2 } });
    gw = await startGateway({
      env: { ANT_KEY: UPSTREAM_KEY },
      configFile: { name: 'gw.yaml', text: configText(mock) },
    });
    callerKey = await makeKey(gw.url, 'alice');
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('Anthropic SDK: one create upstream with every line, results in Anthropic’s shape, usage at half price', async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: callerKey });
    const created = await client.messages.batches.create({
      requests: [
        { custom_id: 'first', params: params('one') },
        { custom_id: 'second', params: params('ERR') },
        { custom_id: 'third', params: params('three') },
      ],
    });
    const ended = await untilEnded('the forwarded batch', () => client.messages.batches.retrieve(created.id));
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 });

    // Upstream: ONE create, no line run as a Messages call of its own; the upstream key only.
    const creates = mock.of('POST', '/v1/messages/batches');
    assert.equal(creates.length, 1);
    assert.equal(mock.of('POST', '/v1/messages').filter((r) => r.url === '/v1/messages').length, 0);
    for (const request of mock.requests) {
      assert.equal(request.headers['x-api-key'], UPSTREAM_KEY);
      assert.equal(request.headers['anthropic-version'], '2023-06-01');
      assert.equal(request.headers.authorization, undefined);
      const seen = JSON.stringify(request.headers) + request.text;
      assert.ok(!seen.includes(ADMIN_TOKEN) && !seen.includes(callerKey), 'no gateway credential upstream');
    }
    const sent = JSON.parse(creates[0]?.text ?? '') as SentCreate;
    assert.deepEqual(
      sent.requests.map((r) => [r.custom_id, r.params.model]),
      [
        ['line-0', UPSTREAM_MODEL],
        ['line-1', UPSTREAM_MODEL],
        ['line-2', UPSTREAM_MODEL],
      ],
    );
    assert.deepEqual(sent.requests[0]?.params, { ...params('one'), model: UPSTREAM_MODEL });

    // Results: the caller's custom ids, Anthropic's message and error shapes.
    const results = await resultsOf(client, created.id);
    assert.deepEqual(
      results.map((r) => [r.custom_id, r.result.type]),
      [
        ['first', 'succeeded'],
        ['second', 'errored'],
        ['third', 'succeeded'],
      ],
    );
    const first = results[0]?.result;
    assert.ok(first?.type === 'succeeded');
    assert.equal(first.message.id, 'msg_line-0');
    assert.equal(first.message.model, UPSTREAM_MODEL);
    assert.deepEqual(first.message.content, [{ type: 'text', text: 'answer to one' }]);
    assert.deepEqual(first.message.usage, { input_tokens: 10, output_tokens: 20 });
    const second = results[1]?.result;
    assert.ok(second?.type === 'errored');
    assert.equal(second.error.type, 'error');
    assert.equal(second.error.error.type, 'invalid_request_error');
    assert.equal(second.error.error.message, 'messages: the last message is not acceptable');

    // Usage: each answered line at half of 10 × $1/M + 20 × $2/M = $0.00005 → $0.000025, the model as named.
    const rows = await usageRows(gw, 'messages', 2);
    for (const row of rows) {
      assert.ok(Math.abs(row.cost_usd - 0.000025) < 1e-12, String(row.cost_usd));
      assert.deepEqual([row.upstream, row.model], ['claude', 'haiku']);
    }
  });

  test('openai SDK: a chat-completions batch is translated to Messages params and its answers back', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: callerKey });
    const line = (id: string, content: string) =>
      JSON.stringify({
        custom_id: id,
        method: 'POST',
        url: '/v1/chat/completions',
        body: {
          model: 'haiku',
          messages: [
            { role: 'system', content: 'be brief' },
            { role: 'user', content },
          ],
        },
      });
    const input = await client.files.create({
      file: await toFile(Buffer.from(`${line('a', 'hello')}\n${line('b', 'world')}\n`), 'input.jsonl'),
      purpose: 'batch',
    });
    const before = mock.of('POST', '/v1/messages/batches').length;
    const created = await client.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await untilEnded('the translated batch', () => client.batches.retrieve(created.id));
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 2, completed: 2, failed: 0 });

    const creates = mock.of('POST', '/v1/messages/batches');
    assert.equal(creates.length, before + 1, 'one create');
    const sent = JSON.parse(creates.at(-1)?.text ?? '') as SentCreate;
    const first = sent.requests[0]?.params as { model: string; max_tokens: number; system: unknown; messages: unknown };
    assert.equal(first.model, UPSTREAM_MODEL);
    assert.equal(typeof first.max_tokens, 'number');
    assert.ok(JSON.stringify(first.system).includes('be brief'), 'the system message is Anthropic’s system');
    assert.ok(!JSON.stringify(first.messages).includes('be brief'));
    assert.ok(!('stream' in first));

    const output = await resultLines<{
      custom_id: string;
      response: { status_code: number; body: OpenAI.Chat.Completions.ChatCompletion };
    }>(client, done.output_file_id);
    assert.deepEqual(
      output.map((l) => [l.custom_id, l.response.status_code, l.response.body.object]),
      [
        ['a', 200, 'chat.completion'],
        ['b', 200, 'chat.completion'],
      ],
    );
    assert.equal(output[0]?.response.body.choices[0]?.message.content, 'answer to hello');
    assert.equal(output[0]?.response.body.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(output[0]?.response.body.usage, { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 });
    const rows = await usageRows(gw, 'chat', 2);
    assert.ok(rows.every((r) => Math.abs(r.cost_usd - 0.000025) < 1e-12 && r.upstream === 'claude'));
  });

  test('a cancel cancels upstream: what it answered is kept, the rest canceled', async () => {
    mock.batches.options.pollsBeforeDone = Infinity;
    mock.batches.options.answeredBeforeCancel = 1;
    try {
      const client = new Anthropic({ baseURL: gw.url, apiKey: callerKey });
      const known = new Set(mock.batches.keys());
      const created = await client.messages.batches.create({
        requests: ['x', 'y', 'z'].map((id) => ({ custom_id: id, params: params(id) })),
      });
      const upstreamId = await (async () => {
        await waitFor('the upstream batch created', () => [...mock.batches.keys()].some((id) => !known.has(id)));
        return [...mock.batches.keys()].find((id) => !known.has(id)) ?? '';
      })();
      await client.messages.batches.cancel(created.id);
      const ended = await untilEnded('the cancelled batch', () => client.messages.batches.retrieve(created.id));
      assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 1, errored: 0, canceled: 2, expired: 0 });
      assert.equal(mock.of('POST', `/v1/messages/batches/${upstreamId}/cancel`).length, 1);
      assert.equal(mock.batches.get(upstreamId)?.status, 'ended');
      const results = await resultsOf(client, created.id);
      assert.deepEqual(
        results.map((r) => [r.custom_id, r.result.type]),
        [
          ['x', 'succeeded'],
          ['y', 'canceled'],
          ['z', 'canceled'],
        ],
      );
    } finally {
      mock.batches.options.pollsBeforeDone = 2;
      delete mock.batches.options.answeredBeforeCancel;
    }
  });
});

describe('forwarding to Anthropic falls back, and survives restarts', () => {
  test('the upstream refuses the create: the gateway runs each line as a Messages call', async () => {
    const mock = await startAnthropicUpstream({
      requiredKey: UPSTREAM_KEY,
      batches: { pollsBeforeDone: 1, createStatus: 413 },
    });
    const gw = await startGateway({
      env: { ANT_KEY: UPSTREAM_KEY },
      configFile: { name: 'gw.yaml', text: configText(mock) },
    });
    try {
      const client = new Anthropic({ baseURL: gw.url, apiKey: await makeKey(gw.url, 'alice') });
      const created = await client.messages.batches.create({
        requests: ['a', 'b'].map((id) => ({ custom_id: id, params: params(id) })),
      });
      const ended = await untilEnded('the fallen-back batch', () => client.messages.batches.retrieve(created.id));
      assert.equal(ended.request_counts.succeeded, 2);
      assert.equal(mock.of('POST', '/v1/messages/batches').length, 1);
      const calls = mock.requests.filter((r) => r.method === 'POST' && r.url === '/v1/messages');
      assert.equal(calls.length, 2, 'each line ran as a call of its own');
      assert.ok(calls.every((r) => (r.body as { model?: string }).model === UPSTREAM_MODEL));
      assert.ok(gw.logLines.some((l) => l.includes('batch: run by the gateway instead')));
    } finally {
      await gw.close();
      await mock.close();
    }
  });

  test('a restart while the upstream batch runs: the stored id is polled, never a second create', async () => {
    const mock = await startAnthropicUpstream({ requiredKey: UPSTREAM_KEY, batches: { pollsBeforeDone: Infinity } });
    const text = configText(mock);
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-native-ant-'));
    const first = await startGateway({
      env: { ANT_KEY: UPSTREAM_KEY, DATA_DIR: dataDir },
      configFile: { name: 'gw.yaml', text },
    });
    const apiKey = await makeKey(first.url, 'alice');
    let id: string;
    {
      const client = new Anthropic({ baseURL: first.url, apiKey });
      id = (
        await client.messages.batches.create({
          requests: ['a', 'b'].map((c) => ({ custom_id: c, params: params(c) })),
        })
      ).id;
      await waitFor('the upstream batch polled', () => mock.of('GET', '/v1/messages/batches/msgbatch_').length >= 2);
      await first.close();
    }
    mock.batches.options.pollsBeforeDone = 0;
    const second = await startGateway({
      env: { ANT_KEY: UPSTREAM_KEY, DATA_DIR: dataDir },
      configFile: { name: 'gw2.yaml', text },
    });
    try {
      const client = new Anthropic({ baseURL: second.url, apiKey });
      const ended = await untilEnded('the batch after the restart', () => client.messages.batches.retrieve(id));
      assert.equal(ended.request_counts.succeeded, 2);
      assert.equal(mock.of('POST', '/v1/messages/batches').length, 1, 'created once');
      assert.equal(mock.requests.filter((r) => r.url === '/v1/messages').length, 0);
      assert.deepEqual(
        (await resultsOf(client, id)).map((r) => [r.custom_id, r.result.type]),
        [
          ['a', 'succeeded'],
          ['b', 'succeeded'],
        ],
      );
    } finally {
      await second.close();
      await mock.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
