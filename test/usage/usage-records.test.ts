/**
 * Usage records from real traffic: one per API request, written off the request path in batches, with the
 * numbers the answers carried; summaries through the CLI code; PostgreSQL when DATABASE_URL is set.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { usageCommand } from '../../src/cli/usage-command.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { waitForValue } from '../helpers/wait.js';

const CONFIG = {
  name: 'usage.json',
  text: JSON.stringify({
    limits: { upstream_pause_max_seconds: 0 },
    circuit_breaker: { failure_threshold: 1000 },
    retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 2, deadline_ms: 5000 },
    models: [
      {
        id: 'priced',
        upstream: 'default',
        upstream_model: 'gpt-4o-mini',
        pricing: { input_per_million: 1, output_per_million: 2 },
      },
    ],
  }),
};

describe('usage records (embedded store)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl }, configFile: CONFIG });
    usage = new SqliteUsageStore(gw.store.db);
  });
  after(async () => {
    const t = Date.now();
    await gw.close();
    console.log('# gw.close took', Date.now() - t);
    await mock.close();
  });

  test("one record per API request with the answer's numbers; streams have a TTFB; retries are counted; no text", async () => {
    const json = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'priced', messages: [{ role: 'user', content: 'a private question' }] }),
    });
    mock.enqueue({ kind: 'stream' });
    const streamed = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    mock.enqueue({ kind: 'json', status: 500, body: { error: { message: 'boom' } } });
    const retried = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const models = await call(`${gw.url}/v1/?route=models`, { headers: authHeaders() });
    await call(`${gw.url}/v1/?route=health`);
    assert.deepEqual([json.status, streamed.status, retried.status, models.status], [200, 200, 200, 200]);

    const records = await waitForValue(
      'usage records',
      () => usage.recent(10, false),
      (r) => r.length >= 4,
    );
    assert.equal(records.length, 4, 'health is not usage');
    const byId = new Map(records.map((r) => [r.requestId, r]));
    const first = byId.get(String(json.headers['x-request-id']));
    const u = json.json.usage as { prompt_tokens: number; completion_tokens: number };
    assert.deepEqual(
      { ...first, latencyMs: 0, timeMs: 0 },
      {
        timeMs: 0,
        requestId: json.headers['x-request-id'],
        caller: 'admin',
        environment: 'dev',
        route: 'chat',
        model: 'priced',
        upstream: 'default',
        status: 200,
        code: null,
        latencyMs: 0,
        ttfbMs: null,
        stream: false,
        promptTokens: u.prompt_tokens,
        completionTokens: u.completion_tokens,
        costUsd: Math.round(((u.prompt_tokens * 1 + u.completion_tokens * 2) / 1e6) * 1e8) / 1e8,
        attempts: 1,
        replay: false,
        cacheHit: false,
        usageAnomaly: false,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        cacheSavingsUsd: 0,
      },
    );
    assert.ok((first?.latencyMs ?? 0) > 0);
    assert.ok(Math.abs((first?.timeMs ?? 0) - Date.now()) < 10_000);
    const stream = byId.get(String(streamed.headers['x-request-id']));
    assert.equal(stream?.stream, true);
    assert.ok((stream?.ttfbMs ?? -1) >= 0 && (stream?.ttfbMs ?? 0) <= (stream?.latencyMs ?? 0));
    assert.equal(byId.get(String(retried.headers['x-request-id']))?.attempts, 2, 'the 500 and the retry');
    assert.equal(byId.get(String(models.headers['x-request-id']))?.route, 'models');
    const stored = JSON.stringify(gw.store.db.prepare('SELECT * FROM usage_records').all());
    assert.ok(!stored.includes('a private question'), 'no prompt text');
  });

  test('failures and idempotent replays are recorded as such', async () => {
    const bad = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'no-such-model-xyz', temperature: 9 }),
    });
    assert.equal(bad.status, 400);
    const key = `usage-${randomUUID()}`;
    await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'idempotency-key': key }),
      body: chatBody(),
    });
    const replay = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'idempotency-key': key }),
      body: chatBody(),
    });
    const records = await waitForValue(
      'usage records',
      () => usage.recent(50, false),
      (r) => r.some((x) => x.requestId === replay.headers['x-request-id']),
    );
    const failed = records.find((r) => r.requestId === bad.headers['x-request-id']);
    assert.deepEqual([failed?.status, failed?.code, failed?.attempts], [400, 'validation_failed', 0]);
    const replayed = records.find((r) => r.requestId === replay.headers['x-request-id']);
    assert.deepEqual([replayed?.replay, replayed?.attempts], [true, 0]);
    assert.ok((await usage.recent(50, true)).some((r) => r.requestId === bad.headers['x-request-id']));
  });

  test('gateway usage: summaries by model, caller or day, as a table, CSV or JSON', async () => {
    await waitForValue(
      'usage records',
      () => usage.recent(100, false),
      (r) => r.length >= 7,
    );
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(`ERR ${l}`) };
    assert.equal(await usageCommand(usage, ['--by', 'model', '--format', 'json'], io), 0);
    const rows = JSON.parse(lines.join('\n')) as Array<{ group: string; requests: number; cost_usd: number }>;
    assert.equal(rows.find((r) => r.group === 'priced')?.requests, 1);
    assert.ok((rows.find((r) => r.group === 'priced')?.cost_usd ?? 0) > 0);
    lines.length = 0;
    assert.equal(await usageCommand(usage, ['--by', 'day', '--format', 'csv'], io), 0);
    assert.equal(
      lines[0],
      'day,requests,errors,prompt_tokens,completion_tokens,cache_read_tokens,cache_write_tokens,reasoning_tokens,cache_read_share,cost_usd,cache_savings_usd,avg_latency_ms',
    );
    assert.match(lines[1] ?? '', new RegExp(`^${new Date().toISOString().slice(0, 10)},\\d+,\\d+,`));
    lines.length = 0;
    assert.equal(await usageCommand(usage, ['--by', 'caller'], io), 0);
    assert.match(lines.join('\n'), /admin\s+\d+/);
    assert.equal(await usageCommand(usage, ['--by', 'planet'], io), 2);
    assert.equal(await usageCommand(usage, ['--since', 'yesterday'], io), 2);
  });

  test('a caller who hangs up is recorded too: status 499, client_closed_request (stream and plain call)', async () => {
    mock.enqueue({ kind: 'stall', afterChunks: 1 });
    const left = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders(), {
      stopAfterBytes: 10,
    });
    mock.enqueue({ kind: 'hang' });
    const controller = new AbortController();
    const plain = request(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'x-request-id': 'usage-hangup-plain' }),
      body: chatBody(),
      signal: controller.signal,
    }).catch(() => undefined);
    await waitForValue(
      'usage records',
      async () => mock.chatRequests().length,
      (n) => n > 0 && mock.chatRequests().at(-1)?.headers['x-request-id'] === 'usage-hangup-plain',
    );
    controller.abort();
    await plain;
    const ids = [String(left.headers['x-request-id']), 'usage-hangup-plain'];
    const records = await waitForValue(
      'usage records',
      () => usage.recent(100, true),
      (r) => ids.every((id) => r.some((x) => x.requestId === id)),
    );
    for (const id of ids) {
      const record = records.find((r) => r.requestId === id);
      assert.deepEqual([record?.status, record?.code, record?.route], [499, 'client_closed_request', 'chat'], id);
    }
  });
});

const pgSkip = await postgresSkipReason();

describe('usage records in PostgreSQL (DATABASE_URL)', { skip: pgSkip }, () => {
  test('a gateway with DATABASE_URL writes its records to PostgreSQL', async () => {
    const mock = await startOpenAiUpstream();
    const gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl, DATABASE_URL } });
    const pg = await PostgresUsageStore.open(DATABASE_URL);
    try {
      const answer = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
      const id = String(answer.headers['x-request-id']);
      const found = await waitForValue(
        'usage records',
        () => pg.recent(200, false),
        (r) => r.some((x) => x.requestId === id),
      );
      assert.equal(found.find((x) => x.requestId === id)?.status, 200);
      assert.equal(
        (gw.store.db.prepare('SELECT COUNT(*) AS n FROM usage_records WHERE request_id = ?').get(id) as { n: number })
          .n,
        0,
        'not in the embedded store',
      );
      await pg.purge(Date.now() + 60_000); // the test database keeps nothing
    } finally {
      await gw.close();
      await mock.close();
      await pg.close();
    }
  });
});
