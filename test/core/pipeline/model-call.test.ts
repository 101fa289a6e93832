/**
 * One model call's steps (src/core/pipeline/model-call.ts): plan → admit → run or start → settle. Whatever way a call ends
 * (an answer read whole, a failure before any answer, a stream that ended well, was cut, lost its caller or failed
 * in translation), `settle` runs once: the admission's lease goes back once with the call's usage, the answering
 * try's capacity slot is given back and its circuit permit settled with the call's own outcome, its attempt
 * reported once. Real circuit breakers and capacity, a provider answering in-process, a limits service that counts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/load.js';
import type { AttemptReport } from '../../../src/core/pipeline/attempt-observer.js';
import { CallPipeline } from '../../../src/core/pipeline/call-pipeline.js';
import { CircuitBreakers } from '../../../src/core/pipeline/circuit-breaker.js';
import { openStream, type CallInput, type ModelCall } from '../../../src/core/pipeline/model-call.js';
import { ModelRouter } from '../../../src/core/models/model-router.js';
import { PriceBook } from '../../../src/core/models/price-book.js';
import type { RateLimitService } from '../../../src/core/limits/rate-limit-service.js';
import { UpstreamCapacities } from '../../../src/core/limits/upstream-capacity.js';
import type { UpstreamPauses } from '../../../src/core/limits/upstream-pauses.js';
import { ClientGoneError } from '../../../src/errors/client-gone.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import type { ChatCompletionResult, Provider, StreamBatch, Usage } from '../../../src/providers/provider-contract.js';
import type { ProviderSet } from '../../../src/providers/provider-registry.js';

const MODEL = 'gpt-4o-mini';
const USAGE: Usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
const batch = (content: string, usage?: Usage): StreamBatch => [
  {
    chunk: {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 0,
      model: MODEL,
      choices: [{ index: 0, delta: { content }, finish_reason: null }],
    },
    ...(usage ? { usage } : {}),
  },
];

/** The call's tries ask its upstream for an answer read whole. */
const answerOf = (call: ModelCall) =>
  call.run((target, scope, trace) =>
    target.provider.chat({ model: MODEL, messages: [] }, call.contextFor(target, scope, trace, false)),
  );

/** The call's tries open its upstream's stream. */
const streamOf = (call: ModelCall) =>
  call.start((target, scope, trace) =>
    openStream(
      target,
      target.provider.streamChat(
        { model: MODEL, messages: [], stream: true },
        call.contextFor(target, scope, trace, false),
      ),
    ),
  );

/** A pipeline over one upstream whose answers the test scripts, with every piece a call settles observable. */
function setUp() {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'model-call-')), 'gateway.yaml');
  writeFileSync(
    file,
    [
      'upstreams:',
      '  - { name: up, kind: openai, base_url: "http://127.0.0.1:9/v1", api_key_env: TEST_UPSTREAM_KEY }',
      'models:',
      `  - { id: ${MODEL}, upstream: up, upstream_model: ${MODEL}, pricing: { input_per_million: 1, output_per_million: 2 } }`,
    ].join('\n'),
  );
  const config = loadConfig({
    ADMIN_TOKEN: 'a-long-admin-token-123',
    GATEWAY_CONFIG: file,
    TEST_UPSTREAM_KEY: 'sk-test',
    GATEWAY_ENV: 'prod',
  });
  const upstream = 'up';
  const script = {
    answer: (): Promise<ChatCompletionResult> => Promise.resolve({ body: Buffer.from('{}'), usage: { ...USAGE } }),
    stream: (): AsyncIterable<StreamBatch> => (async function* () {})(),
  };
  const provider = {
    name: upstream,
    kind: 'openai',
    probeable: false,
    chat: () => script.answer(),
    streamChat: () => script.stream(),
  } as unknown as Provider;
  const providers = { upstreams: new Map([[upstream, provider]]), builtins: new Map() } as unknown as ProviderSet;
  const leases: Array<Usage | undefined> = [];
  const finish = async (usage: Usage | undefined) => void leases.push(usage);
  const limits = {
    enabled: true,
    admit: async () => ({ headers: { 'ratelimit-limit': '10' }, finish }),
  } as unknown as RateLimitService;
  const pauses = { enabled: false, check: () => undefined } as unknown as UpstreamPauses;
  const breakers = new CircuitBreakers({ failureThreshold: 1, cooldownMs: 60_000 });
  const capacity = new UpstreamCapacities([[upstream, { bound: 4, queueTimeoutMs: 1_000 }]]);
  const reports: AttemptReport[] = [];
  const observer = { attempt: (report: AttemptReport) => void reports.push(report), failover: () => undefined };
  const prices = new PriceBook(config);
  const calls = new CallPipeline({
    router: new ModelRouter(config, providers),
    prices,
    limits,
    pauses,
    breakers,
    capacity,
    observer,
  });
  const input: CallInput = { caller: 'admin', upstreamKey: undefined, requestId: 'r-1', rawBody: undefined };
  const plan = async () => {
    const call = calls.plan(MODEL, input);
    assert.equal(call.admits, true);
    await call.admit({ prompt: 10, maxTokens: 100 });
    return call;
  };
  const inFlight = () => capacity.of(upstream).load().inFlight;
  const circuit = () => breakers.state(upstream);
  return { script, plan, leases, reports, inFlight, circuit, priced: (usage: Usage) => prices.priced(MODEL, usage) };
}

describe('a model call settles once, however it ends', () => {
  test('an answer read whole: the lease back with its usage, priced; the try settled and reported when read', async () => {
    const t = setUp();
    const call = await t.plan();
    const answered = await answerOf(call);
    assert.equal(t.inFlight(), 0, 'the slot is back once the answer was read');
    assert.deepEqual(
      t.reports.map((r) => r.outcome),
      ['ok'],
    );
    const usage = call.settle(answered.value.usage);
    assert.deepEqual(usage, t.priced(USAGE));
    assert.equal(usage?.cost_usd, 0.002, "priced at the model's prices: 1,000 × $1 + 500 × $2 per million");
    call.settle({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
    await call.leaseReturned;
    assert.deepEqual(t.leases, [USAGE], 'one lease, given back once, with the first usage');
    assert.deepEqual(call.headers, { 'ratelimit-limit': '10' });
  });

  test('no answer at all: `run` settles it (the lease back without usage), the failure counts against the circuit', async () => {
    const t = setUp();
    t.script.answer = () => Promise.reject(new GatewayError('upstream_error', { upstream_status: 500 }));
    const call = await t.plan();
    await assert.rejects(answerOf(call), /server error/);
    call.settle(USAGE, undefined);
    await call.leaseReturned;
    assert.deepEqual(t.leases, [undefined]);
    assert.equal(t.inFlight(), 0);
    assert.equal(t.circuit(), 'open');
    assert.deepEqual(
      t.reports.map((r) => [r.outcome, r.upstreamFault]),
      [['upstream_error', true]],
    );
  });

  test('a stream holds its slot and its permit until the route settles it; a second settle changes nothing', async () => {
    const t = setUp();
    t.script.stream = () =>
      (async function* () {
        yield batch('a');
        yield batch('b', USAGE);
      })();
    const call = await t.plan();
    const started = await streamOf(call);
    assert.equal(started.call, call);
    assert.equal(t.inFlight(), 1, 'held while the stream runs');
    assert.equal(t.reports.length, 0, 'reported when it ends');
    assert.equal(t.leases.length, 0);
    assert.equal((await started.chunks.next()).done, false);
    assert.equal((await started.chunks.next()).done, true);
    assert.deepEqual(call.settle(USAGE), t.priced(USAGE));
    call.settle(undefined, new GatewayError('upstream_error', {}));
    await call.leaseReturned;
    assert.deepEqual(t.leases, [USAGE]);
    assert.equal(t.inFlight(), 0);
    assert.equal(t.circuit(), 'closed');
    assert.deepEqual(
      t.reports.map((r) => r.outcome),
      ['ok'],
    );
  });

  const cut = [
    {
      name: 'cut by the upstream: counts against its circuit',
      failure: new GatewayError('upstream_connection_reset', {}),
      from: 'upstream',
      circuit: 'open',
      outcome: 'upstream_connection_reset',
      fault: true,
    },
    {
      name: 'the caller left: tells nothing about the upstream',
      failure: new ClientGoneError(),
      from: 'upstream',
      circuit: 'closed',
      outcome: 'client_closed_request',
      fault: false,
    },
    {
      name: "failed in translation: the request's failure, not the upstream's",
      // An error that would open the circuit had the upstream caused it.
      failure: new GatewayError('upstream_invalid_response', {}),
      from: 'translation',
      circuit: 'closed',
      outcome: 'upstream_invalid_response',
      fault: false,
    },
  ] as const;
  for (const c of cut) {
    test(`a stream that ended early, ${c.name}`, async () => {
      const t = setUp();
      t.script.stream = () =>
        (async function* () {
          yield batch('a');
        })();
      const call = await t.plan();
      await streamOf(call);
      assert.equal(call.settle(undefined, c.failure, c.from), undefined);
      await call.leaseReturned;
      assert.deepEqual(t.leases, [undefined]);
      assert.equal(t.inFlight(), 0);
      assert.equal(t.circuit(), c.circuit);
      assert.deepEqual(
        t.reports.map((r) => [r.outcome, r.upstreamFault]),
        [[c.outcome, c.fault]],
      );
    });
  }

  test('a stream that never started: `start` settles it and gives the lease back before the error is thrown', async () => {
    const t = setUp();
    t.script.stream = () => (async function* () {})();
    const call = await t.plan();
    await assert.rejects(
      streamOf(call),
      (error: unknown) => error instanceof GatewayError && error.code === 'upstream_stream_truncated',
    );
    assert.deepEqual(t.leases, [undefined], 'given back before the error reached the caller');
    assert.equal(t.inFlight(), 0);
    assert.equal(t.circuit(), 'open', 'an empty stream is a truncated one');
  });
});
