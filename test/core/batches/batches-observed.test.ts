/**
 * What watches a batch: the dashboard's table of batches in flight (with their progress), the Prometheus metrics
 * (lines by outcome, active batches), the `batch.completed` / `batch.cancelled` webhooks, and the right `batches`
 * (a key without it is refused; a key without the line's route gets each line refused as its own call would be).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { call } from '../../helpers/http.js';
import { captureSecrets } from '../../helpers/capture.js';
import { QUICK_BATCHES, untilEnded } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';

const BATCHES = '/v1/messages/batches';

interface Batch {
  id: string;
  processing_status: string;
  request_counts: { succeeded: number; errored: number; canceled: number; expired: number; processing: number };
}

describe('batches: dashboard, metrics, webhooks, rights', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let receiver: WebhookReceiver;
  before(async () => {
    mock = await startOpenAiUpstream();
    receiver = await startWebhookReceiver();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, WH_SECRET: 'batch-webhook-secret-0123456789' },
      configFile: {
        name: 'gw.yaml',
        text: [
          QUICK_BATCHES,
          'webhooks:',
          '  allow_private_addresses: true',
          '  poll_interval_ms: 50',
          // New kinds start in the canary stage (docs/webhooks.md): turned on here.
          '  rollout: { batch.completed: all, batch.failed: all, batch.cancelled: all }',
          '  subscriptions:',
          `    - { id: rx, url: "${receiver.url}", secrets: [{ env: WH_SECRET }], events: [batch.completed, batch.failed, batch.cancelled] }`,
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await receiver.close();
    await mock.close();
  });

  const admin = (method: string, path: string, body?: unknown) =>
    call(`${gw.url}${path}`, {
      method,
      ...(body === undefined
        ? { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }
        : { headers: authHeaders(), body: JSON.stringify(body) }),
    });
  const requests = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      custom_id: `r${i}`,
      params: { model: 'gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: `m${i}` }] },
    }));

  test('in flight on the dashboard with its progress; then batch.completed delivered and the lines counted', async () => {
    mock.defaultBehavior = { kind: 'json', delayMs: 100 };
    const created = await admin('POST', BATCHES, { requests: requests(24) });
    assert.equal(created.status, 200, created.text);
    const id = created.json.id as string;
    const overview = await waitForValue(
      'the batch on the dashboard with some progress',
      async () => (await admin('GET', '/dashboard/api/overview?window=1h')).json,
      (o) => ((o.batches as Array<{ id: string; done: number }>) ?? []).some((b) => b.id === id && b.done > 0),
    );
    const shown = (overview.batches as Array<Record<string, unknown>>).find((b) => b.id === id);
    assert.equal(shown?.api, 'anthropic');
    assert.equal(shown?.caller, 'admin');
    assert.equal(shown?.total, 24);
    assert.equal(shown?.runBy, 'gateway');
    mock.defaultBehavior = { kind: 'json' };
    await untilEnded('the batch to end', async () => (await admin('GET', `${BATCHES}/${id}`)).json as unknown as Batch);

    const [delivery] = await receiver.waitFor(1);
    const event = JSON.parse(delivery?.body ?? '{}') as { event: string; data: Record<string, unknown> };
    assert.equal(event.event, 'batch.completed');
    assert.equal(event.data.batch_id, id);
    assert.equal(event.data.status, 'completed');
    assert.deepEqual(event.data.request_counts, { total: 24, succeeded: 24, errored: 0, canceled: 0, expired: 0 });
    assert.equal(event.data.model, 'gpt-4o-mini');
    // The event's usage is the sum of what the lines' answers reported (the mock counts each line's own text).
    const results = (await admin('GET', `${BATCHES}/${id}/results`)).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { result: { message: { usage: { input_tokens: number; output_tokens: number } } } });
    const input = results.reduce((n, r) => n + r.result.message.usage.input_tokens, 0);
    const output = results.reduce((n, r) => n + r.result.message.usage.output_tokens, 0);
    assert.ok(input > 0 && output > 0);
    assert.deepEqual(event.data.usage, {
      input_tokens: input,
      cached_input_tokens: 0,
      output_tokens: output,
      reasoning_tokens: 0,
      total_tokens: input + output,
    });
    assert.ok(typeof delivery?.headers['x-signature'] === 'string');

    const metrics = (await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text;
    const succeeded = /^llmgw_batch_lines_total\{outcome="succeeded"\} (\d+)$/m.exec(metrics)?.[1];
    assert.equal(succeeded, '24');
    assert.match(metrics, /^llmgw_batch_lines_in_flight 0$/m);
    // Nothing in flight any more: the dashboard's table is empty again.
    const after = (await admin('GET', '/dashboard/api/overview?window=1h')).json;
    assert.deepEqual(after.batches, []);
  });

  test('a cancelled batch is announced as batch.cancelled', async () => {
    mock.defaultBehavior = { kind: 'json', delayMs: 200 };
    const created = await admin('POST', BATCHES, { requests: requests(40) });
    const id = created.json.id as string;
    await waitFor('a line at the upstream', () => mock.chatRequests().length > 0);
    const before = receiver.deliveries.length;
    assert.equal((await admin('POST', `${BATCHES}/${id}/cancel`)).status, 200);
    const deliveries = await receiver.waitFor(before + 1);
    const event = JSON.parse(deliveries.at(-1)?.body ?? '{}') as { event: string; data: Record<string, unknown> };
    assert.deepEqual([event.event, event.data.batch_id, event.data.status], ['batch.cancelled', id, 'cancelled']);
    mock.defaultBehavior = { kind: 'json' };
  });

  test('a batch past its completion window expires: pending lines expired, answered ones kept, batch.failed sent', async () => {
    mock.defaultBehavior = { kind: 'json', delayMs: 150 };
    const created = await admin('POST', BATCHES, { requests: requests(60) });
    const id = created.json.id as string;
    await waitFor('a line answered', async () => {
      const batch = (await admin('GET', `${BATCHES}/${id}`)).json as unknown as Batch;
      return batch.request_counts.succeeded > 0;
    });
    const before = receiver.deliveries.length;
    // The 24 hours have passed (as the store sees it): the runner notices at its next look.
    gw.store.db.prepare('UPDATE batches SET expires_ms = ? WHERE id = ?').run(Date.now() - 1, id);
    const ended = await untilEnded(
      'the batch to expire',
      async () => (await admin('GET', `${BATCHES}/${id}`)).json as unknown as Batch,
    );
    const counts = ended.request_counts;
    assert.ok(counts.expired > 0 && counts.succeeded > 0, JSON.stringify(counts));
    assert.equal(counts.succeeded + counts.expired, 60);
    const results = (await admin('GET', `${BATCHES}/${id}/results`)).text.trimEnd().split('\n');
    assert.equal(results.filter((l) => l.includes('"type":"expired"')).length, counts.expired);
    const deliveries = await receiver.waitFor(before + 1);
    const event = JSON.parse(deliveries.at(-1)?.body ?? '{}') as { event: string; data: Record<string, unknown> };
    assert.deepEqual([event.event, event.data.batch_id, event.data.status], ['batch.failed', id, 'expired']);
    mock.defaultBehavior = { kind: 'json' };
  });

  test('a line refused by a limit waits and runs again later instead of failing', async () => {
    const metric = async () => {
      const text = (await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text;
      return Number(/^llmgw_batch_lines_total\{outcome="deferred"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const deferredBefore = await metric();
    // The upstream refuses the first calls with 429 and Retry-After: 1 (more than the gateway's own retries take).
    mock.enqueue(
      ...Array.from({ length: 8 }, () => ({ kind: 'error' as const, status: 429, headers: { 'retry-after': '1' } })),
    );
    const created = await admin('POST', BATCHES, { requests: requests(3) });
    const id = created.json.id as string;
    const ended = await untilEnded(
      'the batch to end',
      async () => (await admin('GET', `${BATCHES}/${id}`)).json as unknown as Batch,
    );
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 3, errored: 0, canceled: 0, expired: 0 });
    assert.ok((await metric()) > deferredBefore, 'some line was deferred');
  });

  test('rights: no `batches` right is a 403 on every batch path; without the line route each line is refused', async () => {
    const make = async (routes: string[]) => {
      const answer = await call(`${gw.url}/v1/?route=keys`, {
        method: 'POST',
        headers: authHeaders(),
        disclosesKey: true,
        body: JSON.stringify({ name: routes.join('+'), models: ['*'], routes }),
      });
      const key = answer.json.key as string;
      captureSecrets([key]);
      return { 'x-api-key': key, authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    };
    const noBatches = await make(['messages']);
    for (const [method, path] of [
      ['GET', BATCHES],
      ['POST', BATCHES],
      ['GET', `${BATCHES}/msgbatch_x`],
      ['GET', '/v1/batches'],
    ] as const) {
      const answer = await call(`${gw.url}${path}`, {
        method,
        headers: noBatches,
        ...(method === 'POST' ? { body: JSON.stringify({ requests: requests(1) }) } : {}),
      });
      assert.equal(answer.status, 403, `${method} ${path}`);
      assert.equal(answer.json.code, 'route_not_allowed');
    }
    const onlyBatches = await make(['batches']);
    const created = await call(`${gw.url}${BATCHES}`, {
      method: 'POST',
      headers: onlyBatches,
      body: JSON.stringify({ requests: requests(2) }),
    });
    const id = created.json.id as string;
    const ended = await untilEnded(
      'the batch to end',
      async () => (await call(`${gw.url}${BATCHES}/${id}`, { headers: onlyBatches })).json as unknown as Batch,
    );
    assert.equal(ended.request_counts.errored, 2);
    const results = await call(`${gw.url}${BATCHES}/${id}/results`, { headers: onlyBatches });
    const first = JSON.parse(results.text.split('\n')[0] ?? '{}') as {
      result: { type: string; error: { error: { type: string } } };
    };
    assert.equal(first.result.type, 'errored');
    assert.equal(first.result.error.error.type, 'permission_error');
  });
});
