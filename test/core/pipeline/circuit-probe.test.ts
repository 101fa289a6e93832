/**
 * The half-open probe of a circuit breaker is settled however its call ends: the caller hanging up before the
 * answer, a retry that cannot fit its deadline, a stream cut mid-way. Before this was fixed, a probe whose caller
 * left kept its slot forever: every later call got 503 upstream_circuit_open and health said half_open for good.
 * A real gateway over a real mock upstream; the mock's record of what reached it is the evidence.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreakers } from '../../../src/core/pipeline/circuit-breaker.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';
import { waitFor } from '../../helpers/wait.js';

describe('circuit permits (unit)', () => {
  test('a released probe frees the slot; a settled permit ignores later settlements; an abandoned probe expires', () => {
    let now = 0;
    const b = new CircuitBreakers({ failureThreshold: 1, cooldownMs: 1_000 }, () => now);
    b.acquire('a', 5_000)?.failure();
    now = 1_000;
    const probe = b.acquire('a', 5_000);
    assert.ok(probe, 'the probe');
    assert.equal(b.acquire('a', 5_000), undefined, 'one probe at a time');
    probe.release();
    const second = b.acquire('a', 5_000);
    assert.ok(second, 'released: the next caller probes');
    probe.failure(); // the first permit was settled already: no effect on the second probe's circuit
    assert.equal(b.state('a'), 'half_open');
    assert.equal(b.acquire('a', 5_000), undefined);
    now += 5_000;
    const third = b.acquire('a', 5_000);
    assert.ok(third, 'a probe never settled (a lost call) expires after its lease');
    second.release(); // the superseded probe's release must not free the current probe's slot
    assert.equal(b.acquire('a', 5_000), undefined);
    third.success();
    assert.equal(b.state('a'), 'closed');
  });
});

describe('a half-open probe is settled whatever ends its call (gateway, mock upstream)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  const yaml = () =>
    [
      'upstreams:',
      `  - { name: b, base_url: "${mock.baseUrl}" }`,
      'models:',
      '  - { id: fragile, upstream: b, upstream_model: model-b }',
      '  - id: patient',
      '    upstream: b',
      '    upstream_model: model-b',
      '    retry: { attempts: 2, base_delay_ms: 5, max_delay_ms: 20, deadline_ms: 3000 }',
      'circuit_breaker: { failure_threshold: 2, cooldown_seconds: 1 }',
      // A 429 would otherwise pause the upstream; these tests are about the breaker alone.
      'limits: { upstream_pause_max_seconds: 0 }',
    ].join('\n');
  const chat = (model: string) =>
    call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody({ model }) });
  const circuitOf = async (): Promise<string | undefined> => {
    const health = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    return (health.json.checks as { upstreams: Record<string, { circuit?: string }> }).upstreams.b?.circuit;
  };
  /** Two 500s open the circuit; resolves once its cooldown is over (health says half_open). */
  const openCircuit = async () => {
    mock.enqueue({ kind: 'error', status: 500 }, { kind: 'error', status: 500 });
    assert.equal((await chat('fragile')).status, 502);
    assert.equal((await chat('fragile')).status, 502);
    const refused = await chat('fragile');
    assert.equal(refused.json.code, 'upstream_circuit_open');
    assert.equal(mock.chatRequests().length, 2);
    await waitFor('the cooldown to end', async () => (await circuitOf()) === 'half_open');
  };
  /** Sends a call and hangs up once the upstream has it (the probe is then in flight). */
  const probeAndHangUp = async (body: string, stream: boolean) => {
    const before = mock.chatRequests().length;
    const controller = new AbortController();
    const pending = stream
      ? readStream(`${gw.url}${CHAT_PATH}`, body, authHeaders(), { signal: controller.signal })
      : import('undici').then(({ request }) =>
          request(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body, signal: controller.signal }),
        );
    const settled = pending.then(
      () => 'answered',
      () => 'aborted',
    );
    await waitFor('the probe to reach the upstream', () => mock.chatRequests().length === before + 1);
    controller.abort();
    assert.equal(await settled, 'aborted');
    assert.equal(await mock.chatRequests()[before]?.aborted, true, 'the gateway cancelled the upstream call');
  };
  /** After the probe's caller left: the next call is let through as a new probe, answers, and closes the circuit. */
  const assertRecovered = async () => {
    const before = mock.chatRequests().length;
    const next = await chat('fragile');
    assert.equal(next.status, 200, `a new probe is let through (got ${next.status} ${next.json?.code})`);
    assert.equal(mock.chatRequests().length, before + 1);
    assert.equal(await circuitOf(), undefined, 'health no longer reports the circuit');
    assert.equal((await chat('fragile')).status, 200);
  };

  before(async () => {
    mock = await startOpenAiUpstream();
  });
  beforeEach(async () => {
    mock.reset();
    await gw?.close();
    gw = await startGateway({ configFile: { name: 'circuit.yaml', text: yaml() } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test("JSON call: the probe's caller hangs up before the answer", async () => {
    await openCircuit();
    mock.enqueue({ kind: 'hang' });
    await probeAndHangUp(chatBody({ model: 'fragile' }), false);
    await assertRecovered();
  });

  test("stream: the probe's caller hangs up before the first chunk", async () => {
    await openCircuit();
    mock.enqueue({ kind: 'hang' });
    await probeAndHangUp(chatBody({ model: 'fragile', stream: true }), true);
    await assertRecovered();
  });

  test('a probe answered 429 whose retry cannot fit the deadline (Retry-After 10 s, deadline 3 s)', async () => {
    await openCircuit();
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '10' } });
    const limited = await chat('patient');
    assert.equal(limited.status, 429);
    assert.equal(mock.chatRequests().length, 3, 'one try: the retry would end past the deadline');
    await assertRecovered();
  });

  test("the probe's caller hangs up while the gateway waits to retry it", async () => {
    await openCircuit();
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '2' } });
    const controller = new AbortController();
    const { request } = await import('undici');
    const pending = request(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'patient' }),
      signal: controller.signal,
    }).then(
      () => 'answered',
      () => 'aborted',
    );
    await waitFor('the 429 to reach the gateway', () => mock.chatRequests().length === 3);
    controller.abort();
    assert.equal(await pending, 'aborted');
    // The gateway notices the caller left once its backoff ends (Retry-After 2 s); give it that long.
    await waitFor('a new probe to be let through', async () => (await chat('fragile')).status === 200, 5_000);
    assert.equal(mock.chatRequests().length, 4, 'the abandoned retry never reached the upstream');
    assert.equal(await circuitOf(), undefined);
  });

  test('a streamed probe cut mid-way: its first chunk closed the circuit, the cut counts as one failure', async () => {
    await openCircuit();
    mock.enqueue({ kind: 'reset', afterChunks: 1 });
    const cut = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ model: 'fragile', stream: true }), authHeaders());
    assert.equal(cut.status, 200);
    assert.match(cut.text, /event: error/);
    assert.equal(await circuitOf(), undefined, 'closed by the first chunk');
    mock.enqueue({ kind: 'reset', afterChunks: 1 });
    await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ model: 'fragile', stream: true }), authHeaders());
    assert.equal(await circuitOf(), 'open', 'two streams cut mid-way are two consecutive failures (threshold 2)');
  });
});
