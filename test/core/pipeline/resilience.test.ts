/**
 * Many upstreams behind one model: retries with backoff on 429/5xx/transport failures, weighted load balancing,
 * ordered fallbacks, never a retry once the caller has bytes, and a circuit breaker per upstream shown in health.
 * Two real mock upstreams; what each one received is the evidence.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreakers } from '../../../src/core/pipeline/circuit-breaker.js';
import { retryDelayMs } from '../../../src/core/pipeline/retry-policy.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { MOCK_CONTENT, startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';

describe('retry policy and circuit breaker (units)', () => {
  test('full jitter within an exponential ceiling, never below Retry-After', () => {
    const policy = { attempts: 5, baseDelayMs: 100, maxDelayMs: 1000, deadlineMs: 60_000 };
    assert.equal(
      retryDelayMs(1, policy, undefined, 0, () => 0.999),
      99,
    );
    assert.equal(
      retryDelayMs(3, policy, undefined, 0, () => 0.5),
      200,
    );
    assert.equal(
      retryDelayMs(10, policy, undefined, 0, () => 0.999),
      999,
      'capped by maxDelayMs',
    );
    const limited = new GatewayError('upstream_rate_limited', {}, { headers: { 'retry-after': '2' } });
    assert.equal(
      retryDelayMs(1, policy, limited, 0, () => 0),
      2000,
    );
  });

  test('opens after the threshold, lets one probe through after the cooldown, closes on success', () => {
    let now = 0;
    const b = new CircuitBreakers({ failureThreshold: 2, cooldownMs: 1000 }, () => now);
    b.failure('a');
    assert.equal(b.state('a'), 'closed');
    b.failure('a');
    assert.equal(b.state('a'), 'open');
    assert.equal(b.acquire('a', 10_000), undefined);
    now = 1000;
    assert.equal(b.state('a'), 'half_open');
    const probe = b.acquire('a', 10_000);
    assert.equal(probe?.probe, true, 'the probe');
    assert.equal(b.acquire('a', 10_000), undefined, 'only one probe at a time');
    probe?.failure();
    assert.equal(b.state('a'), 'open', 'a failed probe reopens for another cooldown');
    now = 2000;
    b.acquire('a', 10_000)?.success();
    assert.equal(b.state('a'), 'closed');
    assert.deepEqual(b.snapshot(), {});
  });
});

describe('routing over two real upstreams', () => {
  let a: OpenAiUpstream;
  let b: OpenAiUpstream;
  let gw: TestGateway;
  const yaml = () =>
    [
      'upstreams:',
      `  - { name: a, base_url: "${a.baseUrl}" }`,
      `  - { name: b, base_url: "${b.baseUrl}" }`,
      'models:',
      '  - id: retried',
      '    upstream: a',
      '    upstream_model: model-a',
      '    retry: { attempts: 3, base_delay_ms: 5, max_delay_ms: 20 }',
      '  - id: with-fallback',
      '    upstream: a',
      '    upstream_model: model-a',
      '    fallbacks: [{ upstream: b, upstream_model: model-b }]',
      '  - id: balanced',
      '    targets: [{ upstream: a, upstream_model: model-a, weight: 3 }, { upstream: b, upstream_model: model-b, weight: 1 }]',
      '  - id: fragile',
      '    upstream: b',
      '    upstream_model: model-b',
      'circuit_breaker: { failure_threshold: 2, cooldown_seconds: 1 }',
      'limits: { upstream_pause_max_seconds: 0 }',
    ].join('\n');
  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody({ model, ...extra }) });
  const reset = () => {
    a.reset();
    b.reset();
  };
  before(async () => {
    [a, b] = await Promise.all([startOpenAiUpstream(), startOpenAiUpstream()]);
  });
  beforeEach(async () => {
    // A fresh gateway per test: circuit breakers are per instance and remember earlier failures.
    await gw?.close();
    gw = await startGateway({ configFile: { name: 'routing.yaml', text: yaml() } });
  });
  after(async () => {
    await gw.close();
    await Promise.all([a.close(), b.close()]);
  });

  test('a 503 and a 429 are retried on the same target, and the third try answers', async () => {
    reset();
    a.enqueue({ kind: 'error', status: 503 }, { kind: 'error', status: 429, headers: { 'retry-after': '0' } });
    const answer = await chat('retried');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(a.chatRequests().length, 3);
  });

  test('a caller mistake (upstream 400) is never retried nor sent elsewhere', async () => {
    reset();
    a.enqueue({ kind: 'error', status: 400 });
    const answer = await chat('with-fallback');
    assert.equal(answer.status, 400);
    assert.deepEqual([a.chatRequests().length, b.chatRequests().length], [1, 0]);
  });

  test('when the target fails, the fallback answers, with its own upstream model name', async () => {
    reset();
    a.enqueue({ kind: 'error', status: 500 });
    const answer = await chat('with-fallback');
    assert.equal(answer.status, 200, answer.text);
    assert.equal((b.chatRequests()[0]?.json as { model?: string } | undefined)?.model, 'model-b');
  });

  test('a stream that fails before its first chunk moves to the fallback; the caller sees one clean stream', async () => {
    reset();
    a.enqueue({ kind: 'reset', afterChunks: 0 });
    b.enqueue({ kind: 'stream' });
    const answer = await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ model: 'with-fallback', stream: true }),
      authHeaders(),
    );
    assert.equal(answer.status, 200);
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
    assert.ok(!answer.text.includes('event: error'));
    assert.deepEqual([a.chatRequests().length, b.chatRequests().length], [1, 1]);
  });

  test('once the first chunk went out, a failure is never retried: one error event, no [DONE]', async () => {
    reset();
    a.enqueue({ kind: 'malformed', afterChunks: 2 });
    b.enqueue({ kind: 'stream' });
    const answer = await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ model: 'with-fallback', stream: true }),
      authHeaders(),
    );
    assert.match(answer.text, /event: error/);
    assert.ok(!answer.text.includes('[DONE]'));
    assert.deepEqual([a.chatRequests().length, b.chatRequests().length], [1, 0]);
  });

  test('weights share the traffic: about 3 to 1 over 400 calls', async () => {
    reset();
    const answers = await Promise.all(Array.from({ length: 400 }, () => chat('balanced')));
    assert.ok(answers.every((x) => x.status === 200));
    const toA = a.chatRequests().length;
    assert.equal(toA + b.chatRequests().length, 400);
    assert.ok(toA > 250 && toA < 350, `a got ${toA} of 400 (expected ~300)`);
  });

  test('the circuit opens after 2 failures: calls fail fast without reaching the upstream, health shows it, a probe closes it', async () => {
    reset();
    b.enqueue({ kind: 'error', status: 500 }, { kind: 'error', status: 500 });
    assert.equal((await chat('fragile')).status, 502);
    assert.equal((await chat('fragile')).status, 502);
    const open = await chat('fragile');
    assert.equal(open.status, 503);
    assert.equal(open.json.code, 'upstream_circuit_open');
    assert.deepEqual(open.json.details?.upstreams, ['b']);
    assert.equal(open.headers['retry-after'], '1');
    assert.equal(b.chatRequests().length, 2, 'the third call never reached b');
    const health = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    assert.equal(health.json.status, 'degraded');
    assert.equal(
      (health.json.checks as { upstreams: Record<string, { circuit?: string }> }).upstreams.b?.circuit,
      'open',
    );

    await new Promise((r) => setTimeout(r, 1_050));
    const probe = await chat('fragile');
    assert.equal(probe.status, 200, 'the half-open probe went through and succeeded');
    assert.equal((probe.json.choices as Array<{ message: { content: string } }>)[0]?.message.content, MOCK_CONTENT);
    const closed = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    assert.equal(
      (closed.json.checks as { upstreams: Record<string, { circuit?: string }> }).upstreams.b?.circuit,
      undefined,
    );
  });
});
