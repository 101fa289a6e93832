/**
 * Issue 41, attacked again (Redis): "a stored window that cannot be read is repaired, not skipped". A Redis key of
 * the limiter's that holds another type (a hash where a budget's TAT belongs, a string where a key's in-flight
 * slots belong: a stray write, a restore, another tool on the same prefix) made every script step fail with
 * `WRONGTYPE`, which is not an outage: every call of that key was a 500, for good (the key never expires). Here,
 * over real sockets with the real app on Redis: such a key is repaired by the step that reads it (a budget to one
 * whole period of debt, in-flight slots to none), the call is decided under its limits, and nothing is logged as a
 * failure. And a TAT stored with a fraction of a ms next to now no longer makes a zero-cost step fail
 * ("invalid expire time").
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call, type Answer } from '../helpers/http.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { connectRedis, type RedisClient } from '../../src/store/redis/connect.js';
import { RedisRateLimiter } from '../../src/store/redis/redis-rate-limiter.js';

const HOUR_MS = 3_600_000;
const KEYS = '/v1/?route=keys';
const CHAT = '/v1/chat/completions';

function configText(mock: OpenAiUpstream): string {
  return JSON.stringify({
    auth: { key_cache_seconds: 0 },
    limits: { upstream_pause_max_seconds: 0 },
    upstreams: [{ name: 'oai', kind: 'openai', base_url: mock.baseUrl, api_key_env: 'REPAIR_UPSTREAM_KEY' }],
    models: [{ id: 'fast', upstream: 'oai', upstream_model: 'gpt-4o-mini' }],
  });
}

const chatBody = JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'Hello?' }], max_tokens: 20 });

async function createKey(base: string, rights: Record<string, unknown>): Promise<{ key: string; caller: string }> {
  const created = await call(`${base}${KEYS}`, {
    method: 'POST',
    headers: authHeaders(),
    disclosesKey: true,
    body: JSON.stringify({ name: 'repair', models: ['*'], routes: ['chat'], ...rights }),
  });
  assert.equal(created.status, 201, created.text);
  const { id, key } = created.json as { id: string; key: string };
  return { key, caller: `key:${id}` };
}

const chatAs = (base: string, key: string): Promise<Answer> =>
  call(`${base}${CHAT}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: chatBody,
  });

const redisSkip = await redisSkipReason();

describe('a limiter key of the wrong type in Redis is repaired, not a 500 for good', { skip: redisSkip }, () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let client: RedisClient;
  before(async () => {
    mock = await startOpenAiUpstream();
    client = await connectRedis(REDIS_URL);
    gw = await startGateway({
      env: { REPAIR_UPSTREAM_KEY: 'sk-repair-upstream-0123456789', REDIS_URL },
      configFile: { name: 'repair.json', text: configText(mock) },
    });
  });
  after(async () => {
    await gw.close();
    await client.quit();
    await mock.close();
  });

  test('a budget window holding a hash: the key is limited (429 budget_exceeded, RateLimit-*), the window a whole number again', async () => {
    const { key, caller } = await createKey(gw.url, { budget: { tokens: 1000, period_seconds: 3600 } });
    const stored = `gw:rl:tokens:budget:${caller}:${HOUR_MS}`;
    await client.hset(stored, 'tat', '1');
    try {
      const seen = mock.chatRequests().length;
      for (let i = 0; i < 2; i++) {
        const answer = await chatAs(gw.url, key);
        assert.equal(answer.status, 429, `call ${i + 1}: ${answer.text}`);
        assert.equal(answer.json.code, 'budget_exceeded');
        assert.equal(answer.headers['ratelimit-limit'], '1000');
        assert.equal(answer.headers['ratelimit-remaining'], '0');
      }
      assert.equal(mock.chatRequests().length, seen, 'refused, not let through');
      assert.equal(await client.type(stored), 'string');
      const value = Number(await client.get(stored));
      assert.ok(value > Date.now() && value <= Date.now() + HOUR_MS, `one period of debt: ${value}`);
      assert.ok(!gw.logLines.some((l) => l.includes('WRONGTYPE')), 'no script error logged');
    } finally {
      await client.del(stored);
    }
  });

  test("a key's in-flight slots holding a string: the call is admitted under its concurrency limit and the slot freed", async () => {
    const { key, caller } = await createKey(gw.url, { limits: { concurrent: 2, requests_per_minute: 100 } });
    const stored = `gw:cc:concurrent:caller:${caller}`;
    await client.set(stored, 'not a sorted set');
    try {
      const answer = await chatAs(gw.url, key);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.headers['ratelimit-limit'], '100');
      assert.ok(!gw.logLines.some((l) => l.includes('WRONGTYPE')), 'no script error logged');
      // The slot is given back when the answer's lease returns: nothing of the stray string is left.
      const type = await client.type(stored);
      assert.ok(type === 'none' || type === 'zset', type);
      assert.equal(await client.zcard(stored), 0);
    } finally {
      await client.del(stored);
    }
  });

  test('a TAT with a fraction of a ms just ahead of now: a zero-cost step is decided, not "invalid expire time"', async () => {
    const prefix = `repair-${randomUUID()}:`;
    const limiter = new RedisRateLimiter(client, { prefix });
    const now = Date.now();
    const stored = `${prefix}rl:cost:fraction`;
    await client.set(stored, String(now + 0.4));
    try {
      const item = { kind: 'rate', key: 'cost:fraction', limit: 1000, windowMs: HOUR_MS, cost: 0, need: 0 } as const;
      const result = await limiter.admit([item], 'request-1', now);
      assert.equal(result.admitted, true);
      await limiter.settle(
        [{ kind: 'rate', key: 'cost:fraction', limit: 1000, windowMs: HOUR_MS, delta: 1 }],
        'r',
        now,
      );
      assert.match((await client.get(stored)) ?? '', /^\d+$/);
    } finally {
      await client.del(stored);
    }
  });
});
