import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamPauses, parseRetryAfter } from '../../../src/core/limits/upstream-pauses.js';
import { parsePauseScope, pauseScopeName } from '../../../src/core/limits/pause-scope.js';
import { isGatewayError } from '../../../src/errors/gateway-error.js';
import type { UpstreamPauseStore } from '../../../src/store/store-contract.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { REDIS_URL, redisSkipReason } from '../../helpers/services.js';
import { randomUUID } from 'node:crypto';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  test('delay-seconds, fractional seconds, HTTP-date; anything else is unreadable', () => {
    assert.equal(parseRetryAfter('7', now), 7_000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('1.5', now), 1_500);
    assert.equal(parseRetryAfter('Sat, 21 Nov 2026 12:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter(undefined, now), undefined);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('-3', now), undefined);
  });
});

/** A store in memory that can be told to fail, and counts its reads. */
function memoryStore(): UpstreamPauseStore & { reads: number; failing: boolean; data: Map<string, number> } {
  const data = new Map<string, number>();
  const store = {
    reads: 0,
    failing: false,
    data,
    async pause(scope: string, until: number) {
      if (store.failing) throw new Error('store down');
      data.set(scope, Math.max(until, data.get(scope) ?? 0));
    },
    async pausedUntil(scope: string, now = Date.now()) {
      store.reads++;
      if (store.failing) throw new Error('store down');
      const until = data.get(scope);
      return until !== undefined && until > now ? until : undefined;
    },
    async list(now = Date.now()) {
      if (store.failing) throw new Error('store down');
      return [...data].filter(([, until]) => until > now).map(([scope, untilMs]) => ({ scope, untilMs }));
    },
  };
  return store;
}

/** The details of the 429 a check throws (synchronously from memory, or as a rejection after a store read). */
async function refusal(check: () => Promise<void> | undefined): Promise<Record<string, unknown> | undefined> {
  try {
    await check();
    return undefined;
  } catch (error) {
    assert.ok(isGatewayError(error) && error.code === 'upstream_rate_limited');
    return { ...error.details, retryAfter: error.headers?.['retry-after'] };
  }
}

/** Scope names as the chat service builds them. */
const UP = pauseScopeName('up', 'model-1', undefined);
const OTHER = pauseScopeName('up', 'model-2', undefined);

describe('pause scope names', () => {
  test('(upstream, upstream model, key) read back from the name; the caller key is never in it', () => {
    const odd = 'org/model name:with spaces';
    assert.deepEqual(parsePauseScope(pauseScopeName('up-1', odd, undefined)), {
      upstream: 'up-1',
      upstreamModel: odd,
      key: 'configured',
    });
    const keyed = pauseScopeName('up-1', 'm', 'sk-secret-caller-key');
    assert.deepEqual(parsePauseScope(keyed), { upstream: 'up-1', upstreamModel: 'm', key: 'caller' });
    assert.ok(!keyed.includes('sk-secret'));
    assert.notEqual(keyed, pauseScopeName('up-1', 'm', 'sk-another-caller-key'));
    assert.equal(parsePauseScope('up'), undefined, 'a name of an older version is not read');
    assert.equal(parsePauseScope('up#abc'), undefined);
  });
});

describe('UpstreamPauses', () => {
  test('a 429 pauses the scope for its Retry-After, capped; other scopes are not paused', async () => {
    let now = 1_000_000;
    const store = memoryStore();
    const pauses = new UpstreamPauses({ store, maxPauseMs: 10_000, onStoreError: () => {}, now: () => now });
    assert.equal(await refusal(() => pauses.check(UP)), undefined);
    assert.equal(await pauses.record(UP, '3'), now + 3_000);
    assert.deepEqual(await refusal(() => pauses.check(UP)), {
      upstream: 'up',
      upstream_model: 'model-1',
      key: 'configured',
      paused: true,
      paused_until: new Date(now + 3_000).toISOString(),
      retry_after_seconds: 3,
      retryAfter: '3',
    });
    assert.equal(await refusal(() => pauses.check(OTHER)), undefined);
    await new Promise((r) => setImmediate(r));
    assert.equal(store.data.get(UP), now + 3_000, 'shared through the store');
    assert.equal(await pauses.record(UP, '86400'), now + 10_000, 'a day is capped at maxPauseMs');
    now += 10_000;
    assert.equal(await refusal(() => pauses.check(UP)), undefined, 'over at its end');
    assert.equal(await pauses.record(UP, undefined), undefined, 'no Retry-After: no pause');
    assert.equal(await pauses.record(UP, 'garbage'), undefined);
    assert.equal(await refusal(() => pauses.check(UP)), undefined);
  });

  test("another instance's pause is seen once this one's view is older than refreshMs; reads are rationed", async () => {
    let now = 2_000_000;
    const store = memoryStore();
    const pauses = new UpstreamPauses({
      store,
      maxPauseMs: 60_000,
      refreshMs: 1_000,
      onStoreError: () => {},
      now: () => now,
    });
    assert.equal(await refusal(() => pauses.check(UP)), undefined);
    assert.equal(store.reads, 1);
    store.data.set(UP, now + 5_000); // recorded by another instance
    assert.equal(pauses.check(UP), undefined, 'a fresh view answers from memory, without a promise');
    assert.equal(store.reads, 1);
    now += 1_000;
    const checks = [pauses.check(UP), pauses.check(UP)];
    assert.ok(checks[0] instanceof Promise, 'a stale view reads the store first');
    const results = await Promise.all(checks.map((c) => refusal(() => c)));
    assert.equal(store.reads, 2, 'concurrent checks share one read');
    assert.equal(results[0]?.paused, true);
    assert.equal(results[1]?.retry_after_seconds, 4);
  });

  test('a failing store costs only the sharing: local pauses hold, checks pass otherwise, errors are reported', async () => {
    const store = memoryStore();
    store.failing = true;
    const errors: unknown[] = [];
    const pauses = new UpstreamPauses({ store, maxPauseMs: 60_000, onStoreError: (e) => errors.push(e) });
    assert.equal(await refusal(() => pauses.check(UP)), undefined);
    await pauses.record(UP, '30');
    assert.equal((await refusal(() => pauses.check(UP)))?.paused, true);
    await new Promise((r) => setImmediate(r));
    assert.ok(errors.length >= 2, 'the failed read and the failed write were reported');
  });

  test('active(): the pauses in force, from the store and from memory, grouped by (upstream, model, kind of key)', async () => {
    let now = 3_000_000;
    const store = memoryStore();
    const pauses = new UpstreamPauses({
      store,
      maxPauseMs: 60_000,
      refreshMs: 1_000,
      onStoreError: () => {},
      now: () => now,
    });
    await pauses.record(UP, '10');
    // Recorded by other instances: two callers' own keys for model-2, and a name of an older version.
    store.data.set(pauseScopeName('up', 'model-2', 'sk-one-caller-key'), now + 5_000);
    store.data.set(pauseScopeName('up', 'model-2', 'sk-two-caller-key'), now + 7_000);
    store.data.set('up', now + 7_000);
    const expected = [
      { upstream: 'up', upstreamModel: 'model-1', key: 'configured', keys: 1, untilMs: now + 10_000 },
      { upstream: 'up', upstreamModel: 'model-2', key: 'caller', keys: 2, untilMs: now + 7_000 },
    ];
    assert.deepEqual(await pauses.active(), expected);
    store.data.clear();
    assert.deepEqual(await pauses.active(), expected, 'read at most once per refreshMs');
    now += 1_000;
    store.failing = true;
    assert.deepEqual(await pauses.active(), [expected[0]], "a failing store: this instance's own pauses still show");
    now += 9_000;
    assert.deepEqual(await pauses.active(), [], 'over at its end');
  });

  test('maxPauseMs 0 disables pauses entirely (no store traffic)', async () => {
    const store = memoryStore();
    const pauses = new UpstreamPauses({ store, maxPauseMs: 0, onStoreError: () => {} });
    assert.equal(await pauses.record(UP, '30'), undefined);
    assert.equal(pauses.check(UP), undefined);
    assert.equal(store.reads, 0);
  });
});

describe('an upstream 429 with Retry-After pauses that upstream (gateway, SQLite store)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  const chat = (headers: Record<string, string> = {}, body = chatBody()) =>
    call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(headers), body });
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(async () => {
    mock.reset();
    await gw?.close();
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl } });
  });

  test('later calls get 429 without reaching the upstream until Retry-After has passed; a caller key is its own scope', async () => {
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '2' } });
    const first = await chat();
    assert.equal(first.status, 429);
    assert.equal(first.json.code, 'upstream_rate_limited');
    assert.equal(first.json.details?.upstream_status, 429);
    assert.equal(first.headers['retry-after'], '2');

    const held = await chat();
    assert.equal(held.status, 429);
    assert.equal(held.json.code, 'upstream_rate_limited');
    assert.equal(held.json.details?.paused, true);
    assert.equal(held.json.details?.upstream, 'default');
    assert.match(String(held.json.details?.paused_until), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(['1', '2'].includes(String(held.headers['retry-after'])), `Retry-After ${held.headers['retry-after']}`);
    const heldStream = await chat({}, chatBody({ stream: true }));
    assert.equal(heldStream.status, 429, 'streams are held too');
    assert.equal(mock.chatRequests().length, 1, 'held calls never reached the upstream');

    // A caller's own key has its own quota at the provider: not paused.
    const ownKey = await chat({ 'x-upstream-key': 'sk-caller-own-key-123' });
    assert.equal(ownKey.status, 200);
    assert.equal(mock.chatRequests().length, 2);

    await new Promise((r) => setTimeout(r, 2_050));
    const resumed = await chat();
    assert.equal(resumed.status, 200, 'the pause ended with Retry-After');
    assert.equal(mock.chatRequests().length, 3);
  });

  test("a stream refused with 429 before its first chunk pauses too; a caller key's 429 pauses only that key", async () => {
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '30' } });
    const refused = await chat({ 'x-upstream-key': 'sk-caller-a-0000000' }, chatBody({ stream: true }));
    assert.equal(refused.status, 429);
    const sameKey = await chat({ 'x-upstream-key': 'sk-caller-a-0000000' });
    assert.equal(sameKey.json.details?.paused, true);
    assert.equal(sameKey.headers['retry-after'], '30');
    assert.ok(!JSON.stringify(sameKey.json).includes('sk-caller-a'), 'the key is never echoed');
    const otherKey = await chat({ 'x-upstream-key': 'sk-caller-b-0000000' });
    const configured = await chat();
    assert.deepEqual([otherKey.status, configured.status], [200, 200]);
    assert.equal(mock.chatRequests().length, 3);
  });

  test('without Retry-After, or with pauses turned off, nothing is paused', async () => {
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '' } });
    assert.equal((await chat()).status, 429);
    assert.equal((await chat()).status, 200);
    await gw.close();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: { name: 'g.yaml', text: 'limits:\n  upstream_pause_max_seconds: 0\n' },
    });
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '30' } });
    assert.equal((await chat()).status, 429);
    assert.equal((await chat()).status, 200);
    assert.equal(mock.chatRequests().length, 4);
  });
});

describe('a 429 pauses one upstream model with one key, not the whole upstream (gateway)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  const yaml = () =>
    [
      'upstreams:',
      `  - { name: shared, base_url: "${mock.baseUrl}" }`,
      'models:',
      '  - { id: alpha, upstream: shared, upstream_model: model-a }',
      '  - { id: beta, upstream: shared, upstream_model: model-b }',
    ].join('\n');
  const chat = (model: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
    call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(headers),
      body: chatBody({ model, ...extra }),
    });
  const modelsReceived = () => mock.chatRequests().map((r) => (r.json as { model?: string }).model);
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({ configFile: { name: 'two-models.yaml', text: yaml() } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test("model A's 429 holds A (with that key) but not B; health and metrics list the pause", async () => {
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '30' } });
    assert.equal((await chat('alpha')).status, 429);

    const freeB = await chat('beta');
    assert.equal(freeB.status, 200, `model B is not paused: ${freeB.text}`);

    const heldA = await chat('alpha');
    assert.equal(heldA.status, 429);
    assert.deepEqual(
      { ...heldA.json.details, paused_until: undefined, retry_after_seconds: undefined },
      {
        upstream: 'shared',
        upstream_model: 'model-a',
        key: 'configured',
        paused: true,
        paused_until: undefined,
        retry_after_seconds: undefined,
      },
    );
    assert.equal((await chat('alpha', {}, { stream: true })).status, 429, 'streams of A are held too');
    mock.enqueue({ kind: 'stream' });
    const streamB = await chat('beta', {}, { stream: true });
    assert.equal(streamB.status, 200, streamB.text);
    const ownKeyA = await chat('alpha', { 'x-upstream-key': 'sk-caller-own-key-123' });
    assert.equal(ownKeyA.status, 200, "a caller's own key is not held by the configured key's pause");
    assert.deepEqual(
      modelsReceived(),
      ['model-a', 'model-b', 'model-b', 'model-a'],
      'held calls never reached the upstream',
    );

    const health = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    const shared = (health.json.checks as { upstreams: Record<string, { paused?: Array<Record<string, unknown>> }> })
      .upstreams.shared;
    assert.equal(shared?.paused?.length, 1, JSON.stringify(shared));
    const pause = shared?.paused?.[0] ?? {};
    assert.deepEqual([pause.upstream_model, pause.key, pause.keys], ['model-a', 'configured', 1]);
    assert.ok(
      Number(pause.retry_after_seconds) >= 28 && Number(pause.retry_after_seconds) <= 30,
      JSON.stringify(pause),
    );
    assert.equal(pause.paused_until, heldA.json.details?.paused_until);

    const metrics = await call(`${gw.url}/metrics`, { headers: authHeaders() });
    assert.match(
      metrics.text,
      /^llmgw_upstream_paused\{upstream="shared",upstream_model="model-a",key="configured"\} 1$/m,
    );
    assert.doesNotMatch(metrics.text, /llmgw_upstream_paused\{[^}]*model-b/);
  });

  test("a caller key's 429 for model B pauses B for that key only", async () => {
    mock.reset();
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '30' } });
    const key = { 'x-upstream-key': 'sk-caller-b-000000000' };
    assert.equal((await chat('beta', key)).status, 429);
    const held = await chat('beta', key);
    assert.deepEqual(
      [held.status, held.json.details?.upstream_model, held.json.details?.key],
      [429, 'model-b', 'caller'],
    );
    assert.ok(!held.text.includes('sk-caller-b'), 'the key is never echoed');
    assert.equal((await chat('beta')).status, 200, 'the configured key still reaches B');
    assert.equal(
      (await chat('beta', { 'x-upstream-key': 'sk-caller-c-000000000' })).status,
      200,
      'another caller key too',
    );
    assert.equal(mock.chatRequests().length, 3);
    const health = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    const paused =
      (health.json.checks as { upstreams: Record<string, { paused?: Array<Record<string, unknown>> }> }).upstreams
        .shared?.paused ?? [];
    assert.deepEqual(paused.map((p) => [p.upstream_model, p.key, p.keys]).sort(), [
      ['model-a', 'configured', 1],
      ['model-b', 'caller', 1],
    ]);
    assert.ok(!health.text.includes('caller:'), 'no key digest on the unauthenticated health route');
  });
});

describe(
  'two instances sharing Redis: a pause of one model is exact on both',
  { skip: await redisSkipReason() },
  () => {
    let mock: OpenAiUpstream;
    const gateways: TestGateway[] = [];
    // Redis is shared with other tests: model names of this run only.
    const run = randomUUID().slice(0, 8);
    const [modelA, modelB] = [`model-a-${run}`, `model-b-${run}`];
    const chat = (gw: TestGateway, model: string) =>
      call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody({ model }) });
    before(async () => {
      mock = await startOpenAiUpstream();
      const text = [
        'upstreams:',
        `  - { name: shared, base_url: "${mock.baseUrl}" }`,
        'models:',
        `  - { id: alpha, upstream: shared, upstream_model: ${modelA} }`,
        `  - { id: beta, upstream: shared, upstream_model: ${modelB} }`,
      ].join('\n');
      for (let i = 0; i < 2; i++)
        gateways.push(await startGateway({ env: { REDIS_URL }, configFile: { name: 'shared.yaml', text } }));
    });
    after(async () => {
      for (const gw of gateways) await gw.close();
      await mock.close();
    });

    test("the other instance holds A at once (its first call reads the store) and not B; its health lists A's pause", async () => {
      const [one, two] = gateways as [TestGateway, TestGateway];
      mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '20' } });
      assert.equal((await chat(one, 'alpha')).status, 429);
      const heldOnTwo = await chat(two, 'alpha');
      assert.deepEqual(
        [heldOnTwo.status, heldOnTwo.json.details?.paused, heldOnTwo.json.details?.upstream_model],
        [429, true, modelA],
      );
      assert.equal((await chat(two, 'beta')).status, 200);
      assert.deepEqual(
        mock.chatRequests().map((r) => (r.json as { model?: string }).model),
        [modelA, modelB],
      );
      const health = await call(`${two.url}/v1/?route=health`, { headers: authHeaders() });
      const paused =
        (health.json.checks as { upstreams: Record<string, { paused?: Array<Record<string, unknown>> }> }).upstreams
          .shared?.paused ?? [];
      assert.deepEqual(
        paused.filter((p) => String(p.upstream_model).endsWith(run)).map((p) => [p.upstream_model, p.key]),
        [[modelA, 'configured']],
      );
    });
  },
);
