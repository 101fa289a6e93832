import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamPauses, parseRetryAfter } from '../src/core/upstream-pauses.js';
import { isGatewayError } from '../src/errors/gateway-error.js';
import type { UpstreamPauseStore } from '../src/store/contract.js';
import { startMockUpstream, type MockUpstream } from './helpers/mock-openai-upstream.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from './helpers/gateway.js';
import { call } from './helpers/http.js';

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

describe('UpstreamPauses', () => {
  test('a 429 pauses the scope for its Retry-After, capped; other scopes are not paused', async () => {
    let now = 1_000_000;
    const store = memoryStore();
    const pauses = new UpstreamPauses({ store, maxPauseMs: 10_000, onStoreError: () => {}, now: () => now });
    assert.equal(await refusal(() => pauses.check('up', 'up')), undefined);
    assert.equal(await pauses.record('up', '3'), now + 3_000);
    assert.deepEqual(await refusal(() => pauses.check('up', 'up')), {
      upstream: 'up',
      paused: true,
      paused_until: new Date(now + 3_000).toISOString(),
      retry_after_seconds: 3,
      retryAfter: '3',
    });
    assert.equal(await refusal(() => pauses.check('other', 'other')), undefined);
    await new Promise((r) => setImmediate(r));
    assert.equal(store.data.get('up'), now + 3_000, 'shared through the store');
    assert.equal(await pauses.record('up', '86400'), now + 10_000, 'a day is capped at maxPauseMs');
    now += 10_000;
    assert.equal(await refusal(() => pauses.check('up', 'up')), undefined, 'over at its end');
    assert.equal(await pauses.record('up', undefined), undefined, 'no Retry-After: no pause');
    assert.equal(await pauses.record('up', 'garbage'), undefined);
    assert.equal(await refusal(() => pauses.check('up', 'up')), undefined);
  });

  test("another instance's pause is seen once this one's view is older than refreshMs; reads are rationed", async () => {
    let now = 2_000_000;
    const store = memoryStore();
    const pauses = new UpstreamPauses({ store, maxPauseMs: 60_000, refreshMs: 1_000, onStoreError: () => {}, now: () => now });
    assert.equal(await refusal(() => pauses.check('up', 'up')), undefined);
    assert.equal(store.reads, 1);
    store.data.set('up', now + 5_000); // recorded by another instance
    assert.equal(pauses.check('up', 'up'), undefined, 'a fresh view answers from memory, without a promise');
    assert.equal(store.reads, 1);
    now += 1_000;
    const checks = [pauses.check('up', 'up'), pauses.check('up', 'up')];
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
    assert.equal(await refusal(() => pauses.check('up', 'up')), undefined);
    await pauses.record('up', '30');
    assert.equal((await refusal(() => pauses.check('up', 'up')))?.paused, true);
    await new Promise((r) => setImmediate(r));
    assert.ok(errors.length >= 2, 'the failed read and the failed write were reported');
  });

  test('maxPauseMs 0 disables pauses entirely (no store traffic)', async () => {
    const store = memoryStore();
    const pauses = new UpstreamPauses({ store, maxPauseMs: 0, onStoreError: () => {} });
    assert.equal(await pauses.record('up', '30'), undefined);
    assert.equal(pauses.check('up', 'up'), undefined);
    assert.equal(store.reads, 0);
  });
});

describe('an upstream 429 with Retry-After pauses that upstream (gateway, SQLite store)', () => {
  let mock: MockUpstream;
  let gw: TestGateway;
  const chat = (headers: Record<string, string> = {}, body = chatBody()) =>
    call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(headers), body });
  before(async () => {
    mock = await startMockUpstream();
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
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl }, configFile: { name: 'g.yaml', text: 'limits:\n  upstream_pause_max_seconds: 0\n' } });
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '30' } });
    assert.equal((await chat()).status, 429);
    assert.equal((await chat()).status, 200);
    assert.equal(mock.chatRequests().length, 4);
  });
});
