/**
 * Signed webhooks end to end: the real gateway (in process, real SQLite outbox, real dispatcher) delivering to a
 * real receiver on loopback, and `verifyWebhook` checking what the dispatcher actually sent.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';
import { startWebhookReceiver, type Delivery, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from '../../src/webhooks/verify.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { WebhookSender } from '../../src/webhooks/deliver.js';
import { SqliteOutbox } from '../../src/store/sqlite/sqlite-outbox.js';
import { listDeadLetters, redeliver, sendTestEvent } from '../../src/cli/webhooks-command.js';

const SECRET = 'whsec_test_0123456789abcdef';
const OLD_SECRET = 'whsec_old_fedcba9876543210';
const SECRET_ENV = { WH_SECRET: SECRET, WH_OLD_SECRET: OLD_SECRET };

interface SubscriptionSpec {
  id?: string;
  url: string;
  events?: string[];
  canary?: boolean;
  include_content?: boolean;
  max_concurrency?: number;
  secrets?: Array<{ env: string }>;
}

function webhookConfig(
  subscriptions: SubscriptionSpec[],
  extra: Record<string, unknown> = {},
): { name: string; text: string } {
  return {
    name: 'webhooks.json',
    text: JSON.stringify({
      limits: { upstream_pause_max_seconds: 0 },
      circuit_breaker: { failure_threshold: 1000 },
      webhooks: {
        allow_private_addresses: true, // the receivers are on loopback
        poll_interval_ms: 50,
        base_delay_ms: 150,
        max_delay_ms: 5_000,
        timeout_ms: 2_000,
        ...extra,
        subscriptions: subscriptions.map((s) => ({
          id: s.id ?? 'rx',
          secrets: [{ env: 'WH_SECRET' }],
          events: ['*'],
          ...s,
        })),
      },
    }),
  };
}

const verify = (d: Delivery, secret: string | string[] = SECRET, nowMs?: number): WebhookEvent =>
  verifyWebhook({ body: d.body, headers: d.headers, secret, ...(nowMs !== undefined ? { nowMs } : {}) });

function verificationCode(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.code;
    throw error;
  }
  assert.fail('expected a WebhookVerificationError');
}

describe('signed webhooks (SQLite outbox, real receiver on loopback)', () => {
  let mock: OpenAiUpstream;
  let receiver: WebhookReceiver;
  let gw: TestGateway | undefined;
  const start = async (config: { name: string; text: string }, env: Record<string, string> = {}) => {
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl, ...SECRET_ENV, ...env }, configFile: config });
    return gw;
  };
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await mock.close();
  });
  afterEach(async () => {
    await receiver?.close(); // first: a hanging receiver's connections are cut, so the dispatcher stops at once
    await gw?.close();
    gw = undefined;
  });

  test('a chat call is reported as chat.completed: signed, verifiable, with usage and no prompt text', async () => {
    receiver = await startWebhookReceiver();
    const g = await start(webhookConfig([{ url: receiver.url, events: ['chat.completed'] }]));
    const answer = await call(`${g.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ messages: [{ role: 'user', content: 'my secret plan' }] }),
    });
    assert.equal(answer.status, 200);
    const [delivery] = await receiver.waitFor(1);
    assert.ok(delivery);
    const event = verify(delivery);
    assert.equal(event.event, 'chat.completed');
    assert.equal(event.environment, 'dev');
    assert.match(event.id, /^evt_[0-9a-f]{32}$/);
    assert.equal(delivery.headers['x-webhook-id'], event.id);
    assert.equal(delivery.headers['x-webhook-event'], 'chat.completed');
    assert.equal(delivery.headers['content-type'], 'application/json');
    assert.match(delivery.headers['x-signature'] as string, /^v1=[0-9a-f]{64}$/);
    assert.match(event.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const usage = answer.json.usage as Record<string, number>;
    assert.deepEqual(event.data, {
      request_id: answer.headers['x-request-id'],
      caller: 'admin',
      model: 'gpt-4o-mini',
      upstream: 'default',
      stream: false,
      status: 200,
      duration_ms: event.data.duration_ms,
      usage: {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
      },
      cost_usd: null,
      cache_savings_usd: null,
    });
    assert.equal(typeof event.data.duration_ms, 'number');
    assert.ok(!delivery.body.includes('my secret plan'), 'no prompt text unless opted in');
    assert.ok(!delivery.body.includes(SECRET));
    const outbox = new SqliteOutbox(g.store.db);
    await waitUntil(async () => (await outbox.get(`${event.id}:rx`))?.state === 'delivered');
  });

  test('the Responses API and embeddings have their own events: response.completed (with content) and embeddings.completed', async () => {
    receiver = await startWebhookReceiver();
    const g = await start(
      webhookConfig([
        { url: receiver.url, events: ['response.completed', 'embeddings.completed'], include_content: true },
      ]),
    );
    mock.enqueue({ kind: 'stream', content: ['Hi', ' back'] });
    const streamed = await readStream(
      `${g.url}/v1/responses`,
      JSON.stringify({ model: 'gpt-4o-mini', input: 'hello there', stream: true }),
      authHeaders(),
    );
    assert.ok(streamed.text.includes('event: response.completed'));
    const embedded = await call(`${g.url}/v1/embeddings`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
    });
    assert.equal(embedded.status, 200);
    const deliveries = await receiver.waitFor(2);
    const events = deliveries.map((d) => verify(d)).sort((a, b) => a.event.localeCompare(b.event));
    assert.deepEqual(
      events.map((e) => e.event),
      ['embeddings.completed', 'response.completed'],
    );
    assert.deepEqual(events[1]?.data.content, { input: 'hello there', answer: 'Hi back' });
    assert.equal(events[1]?.data.stream, true);
    assert.equal((events[0]?.data.usage as { prompt_tokens: number; completion_tokens: number }).completion_tokens, 0);
    assert.equal(events[0]?.data.content !== undefined, true, 'the embeddings event carries its input too');
  });

  test('opt-in content: the prompt and the answer text, streams included', async () => {
    receiver = await startWebhookReceiver();
    const g = await start(webhookConfig([{ url: receiver.url, events: ['chat.completed'], include_content: true }]));
    mock.enqueue({ kind: 'stream', content: ['Hel', 'lo ', 'there'] });
    const streamed = await readStream(
      `${g.url}${CHAT_PATH}`,
      chatBody({ stream: true, messages: [{ role: 'user', content: 'say hello' }] }),
      authHeaders(),
    );
    assert.ok(streamed.text.endsWith('data: [DONE]\n\n'));
    const [delivery] = await receiver.waitFor(1);
    const event = verify(delivery as Delivery);
    assert.deepEqual(event.data.content, { messages: [{ role: 'user', content: 'say hello' }], answer: 'Hello there' });
    assert.equal(event.data.stream, true);
  });

  test('opt-in content of a very long stream: the answer is cut at its first 262,144 characters', async () => {
    receiver = await startWebhookReceiver();
    const g = await start(webhookConfig([{ url: receiver.url, events: ['chat.completed'], include_content: true }]));
    const piece = 'abcdefgh'.repeat(1024); // 8 KiB a chunk, 40 chunks: 320 KiB of answer
    mock.enqueue({ kind: 'stream', content: Array.from({ length: 40 }, () => piece) });
    const streamed = await readStream(`${g.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    assert.ok(streamed.text.endsWith('data: [DONE]\n\n'));
    const [delivery] = await receiver.waitFor(1);
    const answer = (verify(delivery as Delivery).data.content as { answer: string }).answer;
    assert.equal(answer.length, 262_144);
    assert.equal(answer, piece.repeat(32));
  });

  test('several secrets (rotation): one signature per secret, either one verifies; a wrong secret does not', async () => {
    receiver = await startWebhookReceiver();
    const g = await start(
      webhookConfig([{ url: receiver.url, secrets: [{ env: 'WH_SECRET' }, { env: 'WH_OLD_SECRET' }] }]),
    );
    await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const [delivery] = await receiver.waitFor(1);
    assert.ok(delivery);
    assert.match(delivery.headers['x-signature'] as string, /^v1=[0-9a-f]{64}, v1=[0-9a-f]{64}$/);
    assert.equal(verify(delivery, SECRET).event, 'chat.completed');
    assert.equal(verify(delivery, OLD_SECRET).event, 'chat.completed');
    assert.equal(verify(delivery, ['unrelated-secret-0000000', OLD_SECRET]).event, 'chat.completed');
    assert.equal(
      verificationCode(() => verify(delivery, 'unrelated-secret-0000000')),
      'signature_mismatch',
    );
  });

  test('verifyWebhook refuses a tampered body, a swapped id, stale and far-future timestamps, missing headers', async () => {
    receiver = await startWebhookReceiver();
    const g = await start(webhookConfig([{ url: receiver.url }]));
    await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const [d] = await receiver.waitFor(1);
    assert.ok(d);
    const stamp = Number(d.headers['x-webhook-timestamp']) * 1000;
    assert.equal(verify(d, SECRET, stamp + 299_000).event, 'chat.completed', 'inside the 5-minute window');
    assert.equal(
      verificationCode(() => verify({ ...d, body: d.body.replace('"status":200', '"status":201') })),
      'signature_mismatch',
    );
    assert.equal(
      verificationCode(() => verify({ ...d, headers: { ...d.headers, 'x-webhook-id': 'evt_other' } })),
      'signature_mismatch',
    );
    assert.equal(
      verificationCode(() =>
        verify({ ...d, headers: { ...d.headers, 'x-webhook-timestamp': String(stamp / 1000 + 1) } }),
      ),
      'signature_mismatch',
    );
    assert.equal(
      verificationCode(() => verify(d, SECRET, stamp + 301_000)),
      'timestamp_too_old',
    );
    assert.equal(
      verificationCode(() => verify(d, SECRET, stamp - 301_000)),
      'timestamp_in_future',
    );
    assert.equal(
      verificationCode(() =>
        verifyWebhook({
          body: d.body,
          headers: d.headers,
          secret: SECRET,
          toleranceSeconds: 10,
          nowMs: stamp + 11_000,
        }),
      ),
      'timestamp_too_old',
    );
    assert.equal(
      verificationCode(() => verify({ ...d, headers: { ...d.headers, 'x-signature': undefined } })),
      'missing_header',
    );
    assert.equal(
      verificationCode(() => verify({ ...d, headers: { ...d.headers, 'x-signature': 'sha256=abc' } })),
      'malformed_header',
    );
    // fetch-style Headers work too
    const headers = new Headers(Object.entries(d.headers).map(([k, v]) => [k, String(v)]));
    assert.equal(verifyWebhook({ body: Buffer.from(d.body), headers, secret: SECRET }).id, d.headers['x-webhook-id']);
  });

  test('a failing receiver gets the same event id again with growing waits, until it answers 2xx', async () => {
    receiver = await startWebhookReceiver();
    receiver.respond(500, 503, 200);
    const g = await start(webhookConfig([{ url: receiver.url, events: ['chat.completed'] }]));
    await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const attempts = await receiver.waitFor(3);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(receiver.deliveries.length, 3, 'nothing after the 2xx');
    const ids = attempts.map((d) => d.headers['x-webhook-id']);
    assert.equal(new Set(ids).size, 1, `same id on every attempt: ${ids.join(', ')}`);
    assert.equal(new Set(attempts.map((d) => d.body)).size, 1, 'same body on every attempt');
    for (const d of attempts) assert.equal(verify(d).id, ids[0], 'each attempt is signed afresh and verifies');
    const [a, b, c] = attempts.map((d) => d.atMs) as [number, number, number];
    // base 150 ms: the first retry waits 120-180 ms, the second 240-360 ms (± 20 % jitter), plus the poll.
    assert.ok(b - a >= 110, `first wait ${b - a} ms`);
    assert.ok(c - b >= 230, `second wait ${c - b} ms`);
    assert.ok(c - b > b - a, `waits grow: ${b - a} then ${c - b} ms`);
    const outbox = new SqliteOutbox(g.store.db);
    await waitUntil(async () => (await outbox.get(`${ids[0]}:rx`))?.state === 'delivered');
    assert.equal((await outbox.get(`${ids[0]}:rx`))?.attempts, 3);
  });

  test('out of attempts: dead-lettered, listed by the CLI, redelivered with the same id once the receiver is back', async () => {
    receiver = await startWebhookReceiver();
    receiver.setDefault(503);
    const g = await start(webhookConfig([{ url: receiver.url, events: ['chat.completed'] }], { max_attempts: 2 }));
    await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const failed = await receiver.waitFor(2);
    const outbox = new SqliteOutbox(g.store.db);
    const id = `${String(failed[0]?.headers['x-webhook-id'])}:rx`;
    await waitUntil(async () => (await outbox.get(id))?.state === 'dead');
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(`ERR ${l}`) };
    assert.equal(await listDeadLetters(outbox, 10, false, io), 0);
    assert.match(
      lines.join('\n'),
      new RegExp(`${id}  chat.completed  subscription=rx  attempts=2 .*last_error=HTTP 503 \\(after 2 attempts\\)`),
    );
    receiver.setDefault(200);
    lines.length = 0;
    assert.equal(await redeliver(outbox, [], true, io), 0);
    assert.deepEqual(lines, ['1 of 1 queued for redelivery']);
    const third = (await receiver.waitFor(3))[2];
    assert.equal(third?.headers['x-webhook-id'], failed[0]?.headers['x-webhook-id']);
    await waitUntil(async () => (await outbox.get(id))?.state === 'delivered');
    lines.length = 0;
    await listDeadLetters(outbox, 10, false, io);
    assert.deepEqual(lines, ['no dead letters']);
  });

  test('rollout: a kind in canary goes only to canary subscriptions; off goes to nobody', async () => {
    receiver = await startWebhookReceiver();
    const other = await startWebhookReceiver();
    try {
      const g = await start(
        webhookConfig(
          [
            // Only the two kinds under test (the others' stages are other tests' subjects). One loaded full run
            // saw one delivery reach the regular receiver, kind unknown: the failure now names what arrived.
            { id: 'canary-rx', url: receiver.url, canary: true, events: ['chat.completed', 'chat.failed'] },
            { id: 'regular-rx', url: other.url, events: ['chat.completed', 'chat.failed'] },
          ],
          { rollout: { 'chat.completed': 'canary', 'chat.failed': 'off' } },
        ),
      );
      await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
      mock.enqueue({ kind: 'json', status: 500, body: { error: { message: 'boom' } } });
      const failed = await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
      assert.equal(failed.status, 502);
      await receiver.waitFor(1);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        receiver.deliveries.map((d) => verify(d).event),
        ['chat.completed'],
      );
      assert.deepEqual(
        other.deliveries.map((d) => verify(d).event),
        [],
        'not canary: nothing in canary, and chat.failed is off',
      );
    } finally {
      await other.close();
    }
  });

  test('events for rate limits and for an upstream going unhealthy and recovering', async () => {
    receiver = await startWebhookReceiver();
    const config = webhookConfig([
      { url: receiver.url, events: ['ratelimit.exceeded', 'upstream.unhealthy', 'upstream.recovered', 'chat.failed'] },
    ]);
    const text = JSON.parse(config.text) as Record<string, unknown>;
    text.limits = { upstream_pause_max_seconds: 0, caller: { requests: { limit: 4, window_seconds: 60 } } };
    text.circuit_breaker = { failure_threshold: 2, cooldown_seconds: 1 };
    const g = await start({ name: 'wh-events.json', text: JSON.stringify(text) });
    for (let i = 0; i < 2; i++) {
      mock.enqueue({ kind: 'json', status: 500, body: { error: { message: 'down' } } });
      assert.equal(
        (await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() })).status,
        502,
      );
    }
    await new Promise((r) => setTimeout(r, 1_100)); // the cooldown: the next call is the half-open probe
    assert.equal(
      (await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() })).status,
      200,
    );
    assert.equal(
      (await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() })).status,
      200,
    );
    const limited = await call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    assert.equal(limited.status, 429);
    await receiver.waitFor(6);
    const events = receiver.deliveries.map((d) => verify(d));
    const byKind = (kind: string) => events.filter((e) => e.event === kind);
    assert.equal(byKind('upstream.unhealthy').length, 1);
    assert.deepEqual(
      { ...byKind('upstream.unhealthy')[0]?.data, instance: 'x' },
      { upstream: 'default', consecutive_failures: 2, cooldown_seconds: 1, instance: 'x' },
    );
    assert.equal(byKind('upstream.recovered')[0]?.data.upstream, 'default');
    assert.deepEqual(
      byKind('chat.failed').map((e) => [e.data.status, e.data.code]),
      [
        [502, 'upstream_error'],
        [502, 'upstream_error'],
        [429, 'rate_limited'],
      ],
    );
    const rate = byKind('ratelimit.exceeded')[0]?.data;
    assert.deepEqual(
      [rate?.request_id, rate?.scope, rate?.limit, rate?.max, rate?.window_seconds],
      [limited.headers['x-request-id'], 'caller', 'requests', 4, 60],
    );
  });

  test('a receiver that never answers costs the chat path nothing, and gets at most max_concurrency connections', async () => {
    receiver = await startWebhookReceiver();
    receiver.setDefault('hang');
    const g = await start(
      webhookConfig([{ url: receiver.url, events: ['chat.completed'], max_concurrency: 2 }], { timeout_ms: 5_000 }),
    );
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call(`${g.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() }),
      ),
    );
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    await receiver.waitFor(2);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(receiver.inFlight().max, 2, 'bounded per receiver');
    assert.equal(receiver.deliveries.length, 2, 'the other 18 wait in the outbox');
  });

  test('the CLI test command sends a signed webhook.test event and reports the answer', async () => {
    receiver = await startWebhookReceiver();
    const config = loadConfig({
      ...SECRET_ENV,
      GATEWAY_CONFIG: writeTemp(webhookConfig([{ id: 'billing', url: receiver.url }])),
    });
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(`ERR ${l}`) };
    assert.equal(await sendTestEvent(config, 'billing', io), 0);
    const event = verify(receiver.deliveries[0] as Delivery);
    assert.equal(event.event, 'webhook.test');
    assert.equal(lines[1], 'answer: HTTP 200');
    receiver.respond(500);
    assert.equal(await sendTestEvent(config, 'billing', io), 1);
    assert.equal(lines.at(-1), 'ERR not delivered: HTTP 500');
    assert.equal(await sendTestEvent(config, 'nope', io), 2);
  });
});

describe('webhook receivers and server-side request forgery', () => {
  const config = (url: string, allow = false) =>
    loadConfig({
      ...SECRET_ENV,
      GATEWAY_CONFIG: writeTemp({
        name: 'ssrf.json',
        text: JSON.stringify({
          webhooks: {
            allow_private_addresses: allow,
            subscriptions: [{ id: 'x', url, secrets: [{ env: 'WH_SECRET' }], events: ['*'] }],
          },
        }),
      }),
    });
  const problems = (url: string): string[] => {
    try {
      config(url);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  test('loopback, private, link-local and localhost URLs are refused at start unless allowed', () => {
    for (const url of [
      'http://127.0.0.1:9/h',
      'http://localhost/h',
      'http://10.1.2.3/h',
      'http://192.168.0.10/h',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/h',
      'http://[::ffff:127.0.0.1]/h',
      'http://[fd00::1]/h',
    ]) {
      const found = problems(url);
      assert.equal(found.length, 1, `${url}: ${found.join('; ')}`);
      assert.match(found[0] ?? '', /^webhooks\.subscriptions\[0\]\.url: .*allow_private_addresses/);
    }
    assert.deepEqual(problems('https://hooks.example.com/gateway'), []);
    assert.doesNotThrow(() => config('http://127.0.0.1:9/h', true));
  });

  test('a name that resolves to a private address is refused when connecting (DNS checked on every delivery)', async () => {
    const receiver = await startWebhookReceiver();
    const sender = new WebhookSender({ timeoutMs: 2_000, allowPrivateAddresses: false, userAgent: 'test' });
    try {
      const url = receiver.url.replace('127.0.0.1', 'localhost');
      const result = await sender.send(
        { id: 'x', url, secrets: [SECRET], events: ['*'], canary: false, includeContent: false, maxConcurrency: 1 },
        { eventId: 'evt_1', event: 'x', body: '{}' },
      );
      assert.equal(result.ok, false);
      assert.match(result.error ?? '', /resolves to (127\.0\.0\.1|::1), a loopback, private or link-local address/);
      assert.equal(receiver.deliveries.length, 0, 'nothing reached the receiver');
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
function writeTemp(file: { name: string; text: string }): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gw-wh-')), file.name);
  writeFileSync(path, file.text);
  return path;
}
