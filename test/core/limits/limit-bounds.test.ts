/**
 * Issue 41 (High, and the Medium "an internal error fails admission open"): no number a caller sends may switch a
 * limit or a budget off. On main, one chat call with `"max_tokens": 1e15` stored a budget window of 3.6e18 ms that
 * no later step could read: every later call of the key was admitted without RateLimit-* headers, past its budget
 * and its rpm, also after a restart (on Redis each such call was admitted free). Here, over real sockets, with the
 * real app and a mock upstream: every such number is a 400 naming its field; the estimate that reaches a store is
 * bounded; a stored window that cannot be read is repaired (SQLite, across restarts of the real process; Redis);
 * and only a real store outage fails open, any other error being a logged 500 that admits nothing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call, type Answer } from '../../helpers/http.js';
import {
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { waitFor } from '../../helpers/wait.js';
import { REDIS_URL, redisSkipReason } from '../../helpers/services.js';
import { connectRedis } from '../../../src/store/redis/connect.js';
import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/load.js';
import { createLogger } from '../../../src/observability/logger.js';
import { openDependencies } from '../../../src/dependencies.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteRateLimiter } from '../../../src/store/sqlite/sqlite-rate-limiter.js';
import type { LimitStore } from '../../../src/store/store-contract.js';

const HOUR_MS = 3_600_000;
const KEYS = '/v1/?route=keys';
const CHAT = '/v1/chat/completions';

const UPSTREAM_KEY = 'sk-bounds-upstream-0123456789';

/** The config file's text: one upstream of kind openai (so the price catalog knows its models) at the mock. */
function configText(mock: OpenAiUpstream): string {
  return JSON.stringify({
    auth: { key_cache_seconds: 0 },
    limits: { upstream_pause_max_seconds: 0 },
    upstreams: [{ name: 'oai', kind: 'openai', base_url: mock.baseUrl, api_key_env: 'BOUNDS_UPSTREAM_KEY' }],
    models: [
      // gpt-4o-mini's window comes from the price catalog: 128,000 tokens.
      { id: 'fast', upstream: 'oai', upstream_model: 'gpt-4o-mini' },
      // $0.001 a token either way; a model the catalog does not know, so no window bounds its estimate.
      {
        id: 'priced',
        upstream: 'oai',
        upstream_model: 'house-model-7',
        pricing: { input_per_million: 1000, output_per_million: 1000 },
      },
    ],
  });
}

/** A chat completion reporting this usage (budgets are corrected with the provider's usage). */
function completionWithUsage(prompt: number, completion: number): Record<string, unknown> {
  return {
    id: 'chatcmpl-usage',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'An answer.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'Hello?' }], max_tokens: 20, ...extra });

interface Key {
  id: string;
  key: string;
  /** The limiter's caller id of the key. */
  caller: string;
}

async function createKey(base: string, rights: Record<string, unknown>): Promise<Key> {
  const created = await call(`${base}${KEYS}`, {
    method: 'POST',
    headers: authHeaders(),
    disclosesKey: true,
    body: JSON.stringify({ name: 'bounds', models: ['*'], routes: ['chat'], ...rights }),
  });
  assert.equal(created.status, 201, created.text);
  const { id, key } = created.json as { id: string; key: string };
  return { id, key, caller: `key:${id}` };
}

function chatAs(base: string, key: string, body: string): Promise<Answer> {
  return call(`${base}${CHAT}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
}

/** The fields a 400 names (details.errors[].field), or its details.field. */
function fieldsNamed(answer: Answer): string[] {
  const details = answer.json?.details ?? {};
  const errors = (details.errors as Array<{ field: string }> | undefined) ?? [];
  return [...errors.map((e) => e.field), ...(typeof details.field === 'string' ? [details.field] : [])];
}

function assertLimited(answer: Answer, what: string): void {
  assert.ok(answer.headers['ratelimit-limit'], `${what}: RateLimit-Limit (${answer.status} ${answer.text})`);
  assert.ok(answer.headers['ratelimit-policy'], `${what}: RateLimit-Policy`);
}

describe('caller numbers cannot switch limits off (embedded store)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { BOUNDS_UPSTREAM_KEY: UPSTREAM_KEY },
      configFile: { name: 'bounds.json', text: configText(mock) },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  /** The key's stored TAT in the gateway's SQLite file (undefined: no row). */
  const storedTat = (key: string): number | undefined =>
    (gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(key) as { tat_ms: number } | undefined)
      ?.tat_ms;

  test("the issue's scenario: max_tokens 1e15 is a 400 naming it, and the key stays limited (RateLimit-*, 429 after its 3rd call)", async () => {
    const key = await createKey(gw.url, {
      limits: { requests_per_minute: 3 },
      budget: { tokens: 1000, period_seconds: 3600 },
    });
    const seen = mock.chatRequests().length;
    const huge = await chatAs(gw.url, key.key, chatBody({ max_tokens: 1_000_000_000_000_000 }));
    assert.equal(huge.status, 400, huge.text);
    assert.equal(huge.json.code, 'validation_failed');
    assert.deepEqual(fieldsNamed(huge), ['max_tokens']);
    assert.equal(mock.chatRequests().length, seen, 'never sent upstream');
    for (let i = 1; i <= 3; i++) {
      const answer = await chatAs(gw.url, key.key, chatBody());
      assert.equal(answer.status, 200, `call ${i}: ${answer.text}`);
      assertLimited(answer, `call ${i}`);
    }
    const fourth = await chatAs(gw.url, key.key, chatBody());
    assert.equal(fourth.status, 429, fourth.text);
    assert.equal(fourth.json.code, 'rate_limited');
    assert.ok(Number(fourth.headers['retry-after']) >= 1 && Number(fourth.headers['retry-after']) <= 60);
    assertLimited(fourth, 'the refusal');
    assert.ok(!gw.logLines.some((l) => l.includes('rate-limit store failing')), 'no store failure logged');
  });

  test('a token budget still refuses once spent, after a huge max_tokens was tried', async () => {
    const key = await createKey(gw.url, { budget: { tokens: 1000, period_seconds: 3600 } });
    const budgetKey = `tokens:budget:${key.caller}:${HOUR_MS}`;
    const huge = await chatAs(gw.url, key.key, chatBody({ max_tokens: 1_000_000_000_000_000 }));
    assert.deepEqual([huge.status, fieldsNamed(huge)], [400, ['max_tokens']]);
    mock.enqueue({ kind: 'json', body: completionWithUsage(600, 500) });
    const spending = await chatAs(gw.url, key.key, chatBody());
    assert.equal(spending.status, 200, spending.text);
    assertLimited(spending, 'the spending call');
    // Settled with the real usage (1,100 tokens) after the answer went out.
    await waitFor(
      'the budget is settled with the real usage',
      () => (storedTat(budgetKey) ?? 0) > Date.now() + 3_000_000,
    );
    const refused = await chatAs(gw.url, key.key, chatBody());
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.code, 'budget_exceeded');
    assert.equal(refused.json.details?.budget_tokens, 1000);
    assertLimited(refused, 'the refusal');
  });

  test('every surface bounds the numbers that reach a limit, a budget or a store: 400 naming the field', async () => {
    const seen = mock.requests.length;
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      call(`${gw.url}${path}`, { method: 'POST', headers: authHeaders(headers), body: JSON.stringify(body) });
    const messages = [{ role: 'user', content: 'Hello?' }];
    const contents = [{ role: 'user', parts: [{ text: 'Hello?' }] }];
    const anthropic = { 'anthropic-version': '2023-06-01' };
    const cases: Array<[string, Promise<Answer>, string]> = [
      [
        'chat max_completion_tokens',
        post(CHAT, { model: 'fast', messages, max_completion_tokens: 1e15 }),
        'max_completion_tokens',
      ],
      [
        'chat max_tokens past the bound',
        post(CHAT, { model: 'fast', messages, max_tokens: 100_000_001 }),
        'max_tokens',
      ],
      ['chat n', post(CHAT, { model: 'fast', messages, n: 129 }), 'n'],
      [
        'responses',
        post('/v1/responses', { model: 'fast', input: 'Hello?', max_output_tokens: 1e15 }),
        'max_output_tokens',
      ],
      ['messages', post('/v1/messages', { model: 'fast', max_tokens: 1e15, messages }, anthropic), 'max_tokens'],
      [
        'gemini maxOutputTokens',
        post('/v1beta/models/fast:generateContent', { contents, generationConfig: { maxOutputTokens: 1e15 } }),
        'generationConfig.maxOutputTokens',
      ],
      [
        'gemini candidateCount',
        post('/v1beta/models/fast:generateContent', { contents, generationConfig: { candidateCount: 129 } }),
        'generationConfig.candidateCount',
      ],
      [
        'embeddings dimensions',
        post('/v1/embeddings', { model: 'fast', input: 'x', dimensions: 100_001 }),
        'dimensions',
      ],
      [
        'gemini outputDimensionality',
        post('/v1beta/models/fast:embedContent', {
          content: { parts: [{ text: 'x' }] },
          outputDimensionality: 100_001,
        }),
        'outputDimensionality',
      ],
      [
        'an Anthropic batch line',
        post(
          '/v1/messages/batches',
          { requests: [{ custom_id: 'a', params: { model: 'fast', max_tokens: 1e15, messages } }] },
          anthropic,
        ),
        'requests[0].params.max_tokens',
      ],
    ];
    for (const [what, answering, field] of cases) {
      const answer = await answering;
      assert.equal(answer.status, 400, `${what}: ${answer.text}`);
      assert.ok(answer.text.includes(field), `${what}: names ${field}: ${answer.text}`);
    }
    assert.equal(mock.requests.length, seen, 'none of them reached the upstream');
  });

  test("the estimate is bounded by the model's window and counts every choice", async () => {
    const key = await createKey(gw.url, { limits: { tokens_per_minute: 200_000 } });
    // 1e8 tokens asked of a model whose window is 128,000: at most the window is estimated, which fits the limit.
    const bounded = await chatAs(gw.url, key.key, chatBody({ max_tokens: 100_000_000 }));
    assert.equal(bounded.status, 200, bounded.text);
    assertLimited(bounded, 'the bounded call');
    // 100 choices of 10,000 tokens: 1,000,000, more than a whole window of the limit can hold.
    const many = await chatAs(gw.url, key.key, chatBody({ max_tokens: 10_000, n: 100 }));
    assert.equal(many.status, 400, many.text);
    assert.equal(many.json.code, 'request_exceeds_limit');
    assert.ok(Number(many.json.details?.estimated_tokens) >= 1_000_000, many.text);
  });

  test('a USD budget: a max_tokens of 3e14 is a 400, the bound itself is charged at most 1,000 budgets, and the budget still refuses once spent', async () => {
    const key = await createKey(gw.url, { budget: { cost_usd: 1, period_seconds: 3600 } });
    const costKey = `cost:budget:${key.caller}:${HOUR_MS}`;
    const priced = (extra: Record<string, unknown>) => chatBody({ model: 'priced', ...extra });
    const huge = await chatAs(gw.url, key.key, priced({ max_tokens: 300_000_000_000_000 }));
    assert.deepEqual([huge.status, fieldsNamed(huge)], [400, ['max_tokens']], huge.text);
    // The largest max_tokens allowed, on a model without a window: $100,000 estimated, charged as $1,000 of debt
    // (1,000 budgets), then corrected with the real cost ($0.01).
    mock.enqueue({ kind: 'json', body: completionWithUsage(5, 5) });
    const largest = await chatAs(gw.url, key.key, priced({ max_tokens: 100_000_000 }));
    assert.equal(largest.status, 200, largest.text);
    assertLimited(largest, 'the largest call');
    await waitFor('corrected with the real cost', () => (storedTat(costKey) ?? 0) < Date.now() + 60_000);
    mock.enqueue({ kind: 'json', body: completionWithUsage(600, 600) }); // $1.20
    assert.equal((await chatAs(gw.url, key.key, priced({}))).status, 200);
    await waitFor('the spend is settled', () => (storedTat(costKey) ?? 0) > Date.now() + HOUR_MS);
    const refused = await chatAs(gw.url, key.key, priced({}));
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.code, 'budget_exceeded');
    assert.equal(refused.json.details?.budget_usd, 1);
    assertLimited(refused, 'the refusal');
  });
});

describe('only a store outage fails open; any other error is a 500 that admits nothing', () => {
  let mock: OpenAiUpstream;
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await mock.close();
  });

  /** The real app over real sockets, its limiter store replaced by `replace(store, dataDir)`. */
  async function startWithLimiter(replace: (store: LimitStore, dataDir: string) => Promise<LimitStore>) {
    const dataDir = makeTempDir('gw-bounds-');
    const configPath = join(dataDir, 'gateway.json');
    // The admin caller: 100 requests a minute, so every call is admitted by the limiter store.
    writeFileSync(configPath, JSON.stringify({ limits: { caller: { requests: { limit: 100, window_seconds: 60 } } } }));
    const env = {
      GATEWAY_ENV: 'dev',
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      GATEWAY_CONFIG: configPath,
      UPSTREAM_BASE_URL: mock.baseUrl,
      LOG_LEVEL: 'info',
    };
    const config = loadConfig(env, { version: '0.0.0-test' });
    const logLines: string[] = [];
    const logger = createLogger({
      level: config.logLevel,
      secrets: config.adminTokens,
      destination: { write: (line: string) => void logLines.push(line) },
    });
    const deps = await openDependencies(config, logger);
    const limiter = deps.limiter;
    assert.ok(limiter);
    const gateway = await buildApp({
      ...deps,
      limiter: { ...limiter, store: await replace(limiter.store, dataDir) },
    });
    await gateway.app.listen({ host: '127.0.0.1', port: 0 });
    const address = gateway.app.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    return {
      url,
      logLines,
      dataDir,
      chat: () => call(`${url}${CHAT}`, { method: 'POST', headers: authHeaders(), body: chatBody() }),
      health: async () => (await call(`${url}/v1/?route=health`)).json as Record<string, unknown>,
      close: async () => {
        await gateway.app.close();
        await deps.close();
      },
    };
  }

  test('an error in the value, not the store ("too large to be represented"): 500 internal_error, logged, not admitted, health ok', async () => {
    const gw = await startWithLimiter(async (real) => ({
      ...bound(real),
      admit: () =>
        Promise.reject(
          Object.assign(new RangeError('Value is too large to be represented as a JavaScript number: 3.6e18'), {
            code: 'ERR_OUT_OF_RANGE',
          }),
        ),
    }));
    try {
      const seen = mock.chatRequests().length;
      const answer = await gw.chat();
      assert.equal(answer.status, 500, answer.text);
      assert.equal(answer.json.code, 'internal_error');
      assert.ok(!answer.text.includes('too large'), 'no internal text reaches the caller');
      assert.equal(mock.chatRequests().length, seen, 'not admitted: the upstream saw nothing');
      await waitFor('the error is logged with the request id', () =>
        gw.logLines.some((l) => l.includes('"unexpected error"') && l.includes(String(answer.headers['x-request-id']))),
      );
      const health = await gw.health();
      assert.equal(health.status, 'ok', JSON.stringify(health));
    } finally {
      await gw.close();
    }
  });

  test('a real outage (the SQLite file locked past the busy timeout) fails open, health degraded, then recovers', async () => {
    let holder: DatabaseSync | undefined;
    const gw = await startWithLimiter(async (_real, dataDir) => {
      // The limiter on its own connection with a 50 ms busy timeout, so the outage is quick to see.
      const own = await openDatabase(join(dataDir, 'gateway.db'), 50);
      holder = new DatabaseSync(join(dataDir, 'gateway.db'), { timeout: 50 });
      return new SqliteRateLimiter(own);
    });
    try {
      assertLimited(await gw.chat(), 'before the outage');
      holder?.exec('BEGIN IMMEDIATE');
      const open = await gw.chat();
      holder?.exec('ROLLBACK');
      assert.equal(open.status, 200, open.text);
      assert.equal(open.headers['ratelimit-limit'], undefined, 'let through unchecked: no RateLimit-* headers');
      assert.equal((await gw.health()).status, 'degraded');
      assert.ok(gw.logLines.some((l) => l.includes('rate-limit store failing') && l.includes('StoreOutageError')));
      assertLimited(await gw.chat(), 'after the outage');
      assert.equal((await gw.health()).status, 'ok');
    } finally {
      holder?.close();
      await gw.close();
    }
  });
});

/** A store's methods bound to it (to spread into a wrapper). */
function bound(store: LimitStore): LimitStore {
  return {
    admit: store.admit.bind(store),
    settle: store.settle.bind(store),
    consume: store.consume.bind(store),
    adjust: store.adjust.bind(store),
    acquire: store.acquire.bind(store),
    release: store.release.bind(store),
  };
}

describe('a budget window that cannot be read is repaired: the real process, restarted on its data folder', () => {
  let mock: OpenAiUpstream;
  const TOKEN = 'bounds-admin-token-0123456789abcdef';
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  const start = (dataDir: string) =>
    startGatewayProcess({
      dataDir,
      env: { GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, UPSTREAM_BASE_URL: mock.baseUrl, LOG_LEVEL: 'info' },
    });
  const stop = async (gw: GatewayProcess) => {
    gw.signal('SIGTERM');
    await gw.waitForExit(15_000);
  };
  const chat = (gw: GatewayProcess, key: string) =>
    httpCall(`${gw.url}${CHAT}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chatBody(),
    });

  test("a TAT of 3.6e18 (main's bug) is read, repaired and written back: the key is limited again, also after a restart", async () => {
    const dataDir = makeTempDir('gw-bounds-proc-');
    const first = await start(dataDir);
    const created = await httpCall(`${first.url}${KEYS}`, {
      disclosesKey: true,
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'b',
        models: ['*'],
        routes: ['chat'],
        budget: { tokens: 1000, period_seconds: 3600 },
      }),
    });
    assert.equal(created.status, 201, created.text);
    const { id, key } = JSON.parse(created.text) as { id: string; key: string };
    await stop(first);

    // What one call with max_tokens 1e15 left on main: a budget window 3.6e18 ms ahead.
    const budgetKey = `tokens:budget:key:${id}:${HOUR_MS}`;
    const file = new DatabaseSync(join(dataDir, 'gateway.db'));
    file
      .prepare('INSERT INTO rate_limits (key, tat_ms, expires_ms) VALUES (?, ?, ?)')
      .run(budgetKey, 3_600_000_000_000_000_000n, 3_600_000_000_000_000_000n);
    file.close();

    // Repaired to one whole window of debt: the budget is spent (RateLimit-Remaining 0) and refills at its rate,
    // 1,000 tokens an hour (one token every 3.6 s: the wait until the budget has any left).
    const second = await start(dataDir);
    const limited = await chat(second, key);
    assert.equal(limited.status, 429, limited.text);
    assert.equal((JSON.parse(limited.text) as { code: string }).code, 'budget_exceeded');
    assert.equal(limited.headers['ratelimit-limit'], '1000', 'RateLimit-* headers');
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    assert.equal(limited.headers['retry-after'], '4');
    assert.ok(!second.stdout().includes('rate-limit store failing'), 'no store failure: repaired');
    const health = JSON.parse((await httpCall(`${second.url}/v1/?route=health`)).text) as { status: string };
    assert.equal(health.status, 'ok');
    await stop(second);

    const repaired = new DatabaseSync(join(dataDir, 'gateway.db'), { readOnly: true });
    const row = repaired.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(budgetKey) as { tat_ms: number };
    repaired.close();
    assert.ok(row.tat_ms > Date.now() && row.tat_ms <= Date.now() + HOUR_MS, `written back: ${row.tat_ms}`);

    // After a restart the repaired window is what counts: still nearly spent (a few tokens back per 3.6 s), so at
    // most one call passes before the next is refused, every answer with its RateLimit-* headers.
    const third = await start(dataDir);
    const answers = [await chat(third, key), await chat(third, key)];
    for (const answer of answers) assert.equal(answer.headers['ratelimit-limit'], '1000', answer.text);
    assert.ok(Number(answers[0]?.headers['ratelimit-remaining']) < 100, 'not a fresh budget');
    assert.equal(answers[1]?.status, 429, answers[1]?.text);
    await stop(third);
  });
});

const redisSkip = await redisSkipReason();

describe('on Redis', { skip: redisSkip }, () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { BOUNDS_UPSTREAM_KEY: UPSTREAM_KEY, REDIS_URL },
      configFile: { name: 'bounds.json', text: configText(mock) },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('max_tokens 1e15 is a 400 (not "ERR value is not an integer", admitted free), and the limits hold', async () => {
    const key = await createKey(gw.url, {
      limits: { requests_per_minute: 3 },
      budget: { tokens: 1000, period_seconds: 3600 },
    });
    const huge = await chatAs(gw.url, key.key, chatBody({ max_tokens: 1_000_000_000_000_000 }));
    assert.deepEqual([huge.status, fieldsNamed(huge)], [400, ['max_tokens']], huge.text);
    for (let i = 1; i <= 3; i++) {
      const answer = await chatAs(gw.url, key.key, chatBody());
      assert.equal(answer.status, 200, `call ${i}: ${answer.text}`);
      assertLimited(answer, `call ${i}`);
    }
    const fourth = await chatAs(gw.url, key.key, chatBody());
    assert.equal(fourth.status, 429, fourth.text);
    assert.ok(!gw.logLines.some((l) => l.includes('not an integer')), 'no script error');
  });

  test('a budget window holding what no script can read is repaired and written back as a whole number', async () => {
    const key = await createKey(gw.url, { budget: { tokens: 1000, period_seconds: 3600 } });
    const stored = `gw:rl:tokens:budget:${key.caller}:${HOUR_MS}`;
    const client = await connectRedis(REDIS_URL);
    try {
      await client.set(stored, '3.6e+18');
      const limited = await chatAs(gw.url, key.key, chatBody());
      assert.equal(limited.status, 429, limited.text);
      assert.equal(limited.json.code, 'budget_exceeded');
      assertLimited(limited, 'the refusal');
      const value = await client.get(stored);
      assert.match(value ?? '', /^\d+$/);
      assert.ok(Number(value) <= Date.now() + HOUR_MS, `repaired to one window of debt: ${value}`);
      assert.ok(!gw.logLines.some((l) => l.includes('rate-limit store failing')), 'no store failure logged');
    } finally {
      await client.del(stored);
      await client.quit();
    }
  });
});
