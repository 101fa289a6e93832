/**
 * A batch whose lines all go to an OpenAI upstream is forwarded to OpenAI's own Batch API (half the price): one
 * upload of the lines (models renamed, the upstream's key, never the caller's), one batch created with the
 * gateway's id in its metadata, polled, its output and error files read back into the gateway's own, usage at the
 * batch price. A refusal falls back to the gateway running the lines; a restart polls the batch it created (and a
 * crash after the create finds it by its metadata) instead of submitting again; a cancel cancels upstream and keeps
 * what it did; a failed upstream batch fails its lines, once; a hostile result file breaks nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { captureSecrets } from '../../helpers/capture.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { makeKey, resultLines, untilEnded } from '../../helpers/batch-fixtures.js';
import { waitFor } from '../../helpers/wait.js';

const UPSTREAM_KEY = 'sk-upstream-openai-0123456789abcdef';

function configText(mock: OpenAiUpstream, extra: string[] = []): string {
  return [
    'upstreams:',
    `  - { name: oai, kind: openai, base_url: "${mock.baseUrl}", api_key_env: OAI_KEY, health_check: none }`,
    'models:',
    '  - { id: mini, upstream: oai, upstream_model: gpt-4o-mini-2024-07-18, pricing: { input_per_million: 1, output_per_million: 2 } }',
    'batches:',
    '  poll_ms: 20',
    '  native_poll_ms: 20',
    ...extra,
  ].join('\n');
}

const line = (customId: string, content: string) =>
  JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'mini', messages: [{ role: 'user', content }] },
  });

async function submit(client: OpenAI, lines: string[]) {
  const input = await client.files.create({
    file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'),
    purpose: 'batch',
  });
  return client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
}

describe('batches forwarded to OpenAI’s Batch API', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  let callerKey: string;
  before(async () => {
    mock = await startOpenAiUpstream({ batches: { pollsBeforeDone: 2 } });
    gw = await startGateway({
      env: { OAI_KEY: UPSTREAM_KEY },
      configFile: { name: 'gw.yaml', text: configText(mock) },
    });
    callerKey = await makeKey(gw.url, 'alice');
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: callerKey });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('one upload and one create upstream; the results come back in the caller’s ids; usage at half price', async () => {
    const created = await submit(client, [line('a', 'one'), line('b', 'ERR'), line('c', 'three')]);
    const done = await untilEnded('the forwarded batch', () => client.batches.retrieve(created.id));
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 3, completed: 2, failed: 1 });
    // OpenAI's batch fields: the model the lines name (the caller's), the two answered lines' tokens (10 in, 20 out each).
    assert.equal(done.model, 'mini');
    assert.deepEqual(done.usage, {
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 40,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 60,
    });

    // Upstream: exactly one upload, one create, no line run as a call of its own.
    const uploads = mock.requestsTo('POST', '/v1/files');
    assert.equal(uploads.length, 1);
    assert.equal(mock.requestsTo('POST', '/v1/batches').length, 1);
    assert.equal(mock.requestsTo('POST', '/v1/chat/completions').length, 0);
    for (const request of mock.requests) {
      assert.equal(request.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
      assert.ok(!request.body.includes(ADMIN_TOKEN) && !request.body.includes(callerKey));
    }
    const uploaded = uploads[0]?.body ?? '';
    const sentLines = uploaded
      .split('\r\n\r\n')
      .at(-1)
      ?.split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { custom_id: string; url: string; body: { model: string; messages: unknown } });
    assert.deepEqual(
      sentLines?.map((l) => [l.custom_id, l.url, l.body.model]),
      [
        ['line-0', '/v1/chat/completions', 'gpt-4o-mini-2024-07-18'],
        ['line-1', '/v1/chat/completions', 'gpt-4o-mini-2024-07-18'],
        ['line-2', '/v1/chat/completions', 'gpt-4o-mini-2024-07-18'],
      ],
    );
    const createBody = mock.requestsTo('POST', '/v1/batches')[0]?.json as {
      metadata: Record<string, string>;
      endpoint: string;
    };
    assert.deepEqual(createBody.metadata, { gateway_batch_id: created.id });
    assert.equal(createBody.endpoint, '/v1/chat/completions');

    // The gateway's output and error files, in the caller's custom ids.
    const output = await resultLines(client, done.output_file_id);
    assert.deepEqual(
      output.map((l) => [
        l.custom_id,
        l.response?.status_code,
        (l.response?.body.choices as Array<{ message: { content: string } }>)[0]?.message.content,
      ]),
      [
        ['a', 200, 'answer to one'],
        ['c', 200, 'answer to three'],
      ],
    );
    assert.equal(output[0]?.response?.request_id, 'req_line-0');
    const errors = await resultLines(client, done.error_file_id);
    assert.deepEqual(
      errors.map((l) => [l.custom_id, l.response?.status_code]),
      [['b', 400]],
    );
    // The input file uploaded upstream is deleted once its results are read.
    await waitFor('the upstream input file deleted', () => mock.requestsTo('DELETE', '/v1/files/').length === 1);

    // Counted in the batch metrics like lines the gateway ran.
    const metrics = await (
      await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).text();
    assert.match(metrics, /llmgw_batch_lines_total\{outcome="succeeded"\} 2\b/);
    assert.match(metrics, /llmgw_batch_lines_total\{outcome="errored"\} 1\b/);
    // Usage records: each answered line at half of 10 × $1/M + 20 × $2/M = $0.00005 → $0.000025.
    await waitFor('the usage records', () => {
      const rows = gw.store.db
        .prepare(
          `SELECT cost_usd, upstream, model, prompt_tokens FROM usage_records WHERE route = 'chat' AND status = 200`,
        )
        .all() as Array<{ cost_usd: number; upstream: string; model: string; prompt_tokens: number }>;
      return (
        rows.length === 2 &&
        rows.every((r) => Math.abs(r.cost_usd - 0.000025) < 1e-12 && r.upstream === 'oai' && r.model === 'mini')
      );
    });
  });

  test('a cancel cancels upstream: what it answered is kept, the rest cancelled', async () => {
    mock.batches.options.pollsBeforeDone = Infinity;
    mock.batches.options.answeredBeforeCancel = 1;
    try {
      const created = await submit(client, [line('x', 'one'), line('y', 'two'), line('z', 'three')]);
      await waitFor('the upstream batch created', () =>
        [...mock.batches.created.values()].some((b) => b.metadata.gateway_batch_id === created.id),
      );
      // The dashboard says who runs it: the upstream's batch API.
      const overview = await call(`${gw.url}/dashboard/api/overview?window=1h`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const shown = (overview.json.batches as Array<Record<string, unknown>>).find((b) => b.id === created.id);
      assert.equal(shown?.runBy, 'upstream oai', JSON.stringify(overview.json.batches));
      await client.batches.cancel(created.id);
      const done = await untilEnded('the cancelled batch', () => client.batches.retrieve(created.id));
      assert.equal(done.status, 'cancelled');
      const upstream = [...mock.batches.created.values()].find((b) => b.metadata.gateway_batch_id === created.id);
      assert.equal(upstream?.status, 'cancelled');
      assert.equal(mock.requestsTo('POST', `/v1/batches/${upstream?.id}/cancel`).length, 1);
      assert.deepEqual(
        (await resultLines(client, done.output_file_id)).map((l) => l.custom_id),
        ['x'],
      );
      assert.deepEqual(
        (await resultLines(client, done.error_file_id)).map((l) => [l.custom_id, l.error?.code]),
        [
          ['y', 'batch_cancelled'],
          ['z', 'batch_cancelled'],
        ],
      );
    } finally {
      mock.batches.options.pollsBeforeDone = 2;
      delete mock.batches.options.answeredBeforeCancel;
    }
  });

  test('an upstream batch that fails fails its lines with the reason, without running them again', async () => {
    mock.batches.options.failWith = 'the input file has an invalid line';
    try {
      const before = mock.requestsTo('POST', '/v1/chat/completions').length;
      const created = await submit(client, [line('p', 'one'), line('q', 'two')]);
      const done = await untilEnded('the failed upstream batch', () => client.batches.retrieve(created.id));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.request_counts, { total: 2, completed: 0, failed: 2 });
      const errors = await resultLines(client, done.error_file_id);
      for (const result of errors) {
        assert.equal(result.response?.status_code, 502);
        assert.equal(result.response?.body.code, 'batch_upstream_failed');
        assert.match(String(result.response?.body.message), /the input file has an invalid line/);
      }
      assert.equal(mock.requestsTo('POST', '/v1/chat/completions').length, before);
    } finally {
      delete mock.batches.options.failWith;
    }
  });

  test('a hostile result file: unknown ids, garbage, bad status codes and absurd usage break nothing', async () => {
    mock.batches.options.rawOutput = [
      'not json at all',
      JSON.stringify({ custom_id: 'line-999', response: { status_code: 200, body: {} } }),
      JSON.stringify({ custom_id: 'line-0', response: { status_code: 'two hundred', body: {} }, error: null }),
      JSON.stringify({
        custom_id: 'line-1',
        response: {
          status_code: 200,
          request_id: 'r1',
          body: { choices: [], usage: { prompt_tokens: -5, completion_tokens: 1e300, total_tokens: 'x' } },
        },
        error: null,
      }),
      '',
    ].join('\n');
    try {
      const created = await submit(client, [line('h0', 'one'), line('h1', 'two'), line('h2', 'three')]);
      const done = await untilEnded('the hostile batch', () => client.batches.retrieve(created.id));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.request_counts, { total: 3, completed: 1, failed: 2 });
      const errors = await resultLines(client, done.error_file_id);
      assert.deepEqual(
        errors.map((l) => [l.custom_id, l.response?.status_code]),
        [
          ['h0', 502],
          ['h2', 502],
        ],
      );
      assert.equal(errors[1]?.response?.body.code, 'batch_result_missing');
      await waitFor(
        'the hostile line’s usage record',
        () => gw.store.db.prepare(`SELECT 1 FROM usage_records WHERE request_id = 'r1'`).get() !== undefined,
      );
      const stored = gw.store.db
        .prepare(`SELECT prompt_tokens, completion_tokens FROM usage_records WHERE request_id = 'r1'`)
        .get() as { prompt_tokens: number; completion_tokens: number };
      assert.equal(stored.prompt_tokens, 0);
      assert.ok(stored.completion_tokens <= 100_000_000, 'an absurd count is bounded');
    } finally {
      delete mock.batches.options.rawOutput;
    }
  });
});

describe('forwarding falls back, and survives restarts', () => {
  test('the upstream refuses the create: the gateway runs the lines itself', async () => {
    const mock = await startOpenAiUpstream({ batches: { pollsBeforeDone: 1, createStatus: 403 } });
    const gw = await startGateway({
      env: { OAI_KEY: UPSTREAM_KEY },
      configFile: { name: 'gw.yaml', text: configText(mock) },
    });
    try {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await makeKey(gw.url, 'alice') });
      const created = await submit(client, [line('a', 'one'), line('b', 'two')]);
      const done = await untilEnded('the fallen-back batch', () => client.batches.retrieve(created.id));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.request_counts, { total: 2, completed: 2, failed: 0 });
      assert.equal(mock.requestsTo('POST', '/v1/chat/completions').length, 2, 'each line ran as a call of its own');
      assert.equal(mock.requestsTo('DELETE', '/v1/files/').length, 1, 'the upload was cleaned up');
      assert.ok(gw.logLines.some((l) => l.includes('batch: run by the gateway instead') && l.includes('upstream_')));
    } finally {
      await gw.close();
      await mock.close();
    }
  });

  test('a key with a budget: its lines are run by the gateway one by one, so the budget can stop them', async () => {
    const mock = await startOpenAiUpstream({ batches: { pollsBeforeDone: 1 } });
    const gw = await startGateway({
      env: { OAI_KEY: UPSTREAM_KEY },
      configFile: { name: 'gw.yaml', text: configText(mock) },
    });
    try {
      const made = await call(`${gw.url}/v1/?route=keys`, {
        method: 'POST',
        headers: authHeaders(),
        disclosesKey: true,
        body: JSON.stringify({
          name: 'budgeted',
          models: ['*'],
          routes: ['chat', 'files', 'batches'],
          budget: { cost_usd: 5, period_seconds: 3600 },
        }),
      });
      assert.equal(made.status, 201, made.text);
      const apiKey = made.json.key as string;
      captureSecrets([apiKey]);
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey });
      const created = await submit(client, [line('a', 'one'), line('b', 'two')]);
      const done = await untilEnded('the budgeted batch', () => client.batches.retrieve(created.id));
      assert.deepEqual(done.request_counts, { total: 2, completed: 2, failed: 0 });
      assert.equal(mock.requestsTo('POST', '/v1/batches').length, 0, 'not forwarded');
      assert.equal(mock.requestsTo('POST', '/v1/chat/completions').length, 2);
      assert.ok(gw.logLines.some((l) => l.includes('budget is enforced line by line')));
    } finally {
      await gw.close();
      await mock.close();
    }
  });

  test('a crash after the create, then a restart: the batch is found by its metadata, never created twice', async () => {
    const mock = await startOpenAiUpstream({ batches: { pollsBeforeDone: Infinity, resetAfterCreate: 1 } });
    const text = configText(mock);
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-native-'));
    const first = await startGateway({
      env: { OAI_KEY: UPSTREAM_KEY, DATA_DIR: dataDir },
      configFile: { name: 'gw.yaml', text },
    });
    const apiKey = await makeKey(first.url, 'alice');
    let id: string;
    {
      const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey });
      id = (await submit(client, [line('a', 'one'), line('b', 'two')])).id;
      // The create's answer was lost; the next try finds the batch by its metadata, then polls it.
      await waitFor('the upstream batch polled', () => mock.requestsTo('GET', '/v1/batches/batch_up_').length >= 2);
      await first.close();
    }
    mock.batches.options.pollsBeforeDone = 0;
    const second = await startGateway({
      env: { OAI_KEY: UPSTREAM_KEY, DATA_DIR: dataDir },
      configFile: { name: 'gw2.yaml', text },
    });
    try {
      const client = new OpenAI({ baseURL: `${second.url}/v1`, apiKey });
      const done = await untilEnded('the batch after the restart', () => client.batches.retrieve(id));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.request_counts, { total: 2, completed: 2, failed: 0 });
      assert.equal(mock.requestsTo('POST', '/v1/files').length, 1, 'uploaded once');
      assert.equal(mock.requestsTo('POST', '/v1/batches').length, 1, 'created once');
      assert.ok(mock.requestsTo('GET', '/v1/batches?').length >= 1, 'looked for by its metadata');
      assert.equal(mock.requestsTo('POST', '/v1/chat/completions').length, 0);
    } finally {
      await second.close();
      await mock.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
