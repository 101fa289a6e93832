import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { OwnRedis, REDIS_SERVER_BIN, freePort } from '../helpers/own-redis.js';

const skip = REDIS_SERVER_BIN
  ? undefined
  : process.env.REQUIRE_SERVICES === '1'
    ? assert.fail('redis-server is required in CI')
    : 'redis-server not installed: skipping the Redis failover tests';
if (skip) console.log(`# SKIP ${skip}`);

const LIMITS = (policy: 'open' | 'closed') =>
  `limits:\n  caller:\n    requests: { limit: 1000, window_seconds: 60 }\n  on_store_failure: ${policy}\n`;

async function eventually(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('not recovered in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('Redis goes away and comes back', { skip }, () => {
  let mock: OpenAiUpstream;
  let redis: OwnRedis;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    redis = new OwnRedis(await freePort());
    await redis.start();
  });
  after(async () => {
    await gw?.close();
    await redis.stop();
    await mock.close();
  });

  test('fail open for limits, closed for idempotency, and recovery without a gateway restart', async () => {
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, REDIS_URL: redis.url },
      configFile: { name: 'l.yaml', text: LIMITS('open') },
    });
    const chat = (headers: Record<string, string> = {}) =>
      call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(headers), body: chatBody() });

    const healthy = await chat();
    assert.equal(healthy.status, 200);
    assert.equal(healthy.headers['ratelimit-limit'], '1000');
    assert.equal((await chat({ 'idempotency-key': 'before-outage' })).status, 200);

    await redis.stop();
    const open = await chat();
    assert.equal(open.status, 200, 'limits fail open: traffic passes');
    assert.equal(open.headers['ratelimit-limit'], undefined);
    const keyed = await chat({ 'idempotency-key': 'during-outage' });
    assert.equal(keyed.status, 503);
    assert.equal(keyed.json.code, 'idempotency_store_unavailable');
    const health = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    assert.equal(health.json.status, 'degraded');
    assert.deepEqual((health.json.checks as Record<string, unknown>).rate_limits, { status: 'fail', store: 'redis' });
    assert.ok(gw.logLines.some((l) => l.includes('rate-limit store failing')));

    await redis.start(); // same port, empty data
    await eventually(async () => (await chat()).headers['ratelimit-limit'] === '1000');
    assert.equal((await chat({ 'idempotency-key': 'after-outage' })).status, 200);
    const recovered = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    assert.deepEqual((recovered.json.checks as Record<string, unknown>).rate_limits, { status: 'ok', store: 'redis' });
    assert.ok(gw.logLines.some((l) => l.includes('rate-limit store recovered')));
  });

  test('with on_store_failure: closed, limited calls are refused while Redis is down', async () => {
    await gw.close();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, REDIS_URL: redis.url },
      configFile: { name: 'l.yaml', text: LIMITS('closed') },
    });
    await redis.stop();
    const refused = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    assert.equal(refused.status, 503);
    assert.equal(refused.json.code, 'rate_limit_store_unavailable');
    await redis.start();
    await eventually(
      async () =>
        (await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() })).status ===
        200,
    );
  });

  test('a gateway started while Redis is down still starts, and uses Redis once it is up', async () => {
    await gw.close();
    await redis.stop();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, REDIS_URL: redis.url },
      configFile: { name: 'l.yaml', text: LIMITS('open') },
    });
    assert.equal(
      (await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() })).status,
      200,
    );
    await redis.start();
    await eventually(
      async () =>
        (await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() })).headers[
          'ratelimit-limit'
        ] === '1000',
    );
  });
});
