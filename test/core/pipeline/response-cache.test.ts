/**
 * The exact response cache through the real gateway and a real upstream: hits without an upstream call, per-caller
 * scope (and sharing only when configured), the safe default for sampled and tool requests, Cache-Control,
 * stream replay, failures never stored, request limits counted and token budgets not, eviction under the bound,
 * usage records and metrics.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway, useGateway } from '../../helpers/gateway.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { REDIS_URL, redisSkipReason } from '../../helpers/services.js';
import { started } from '../../helpers/started.js';
import { OwnRedis, REDIS_SERVER_BIN, freePort } from '../../helpers/own-redis.js';
import { call } from '../../helpers/http.js';
import { dataFrames, readStream } from '../../helpers/sse-client.js';
import { waitForValue } from '../../helpers/wait.js';
import OpenAI from 'openai';
import { SqliteUsageStore } from '../../../src/store/sqlite/sqlite-usage.js';

const CHAT = '/v1/chat/completions';
const CONFIG = [
  'default_upstream: default',
  'retry: { attempts: 1 }',
  'cache: { ttl_seconds: 600, max_total_bytes: 4096 }',
  'models:',
  '  - { id: cached, upstream: default, upstream_model: gpt-4o-mini, cache: {} }',
  '  - { id: shared, upstream: default, upstream_model: gpt-4o-mini, cache: { shared: true } }',
  '  - { id: sampled, upstream: default, upstream_model: gpt-4o-mini, cache: { sampled: true } }',
  '  - { id: plain, upstream: default, upstream_model: gpt-4o-mini }',
  '  - { id: embed-cached, upstream: default, upstream_model: text-embedding-3-small, type: embedding, dimensions: 4, cache: {} }',
].join('\n');

interface Completion {
  id: string;
  choices: Array<{ message: { content: string } }>;
}

describe('the exact response cache (embedded store)', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: 'sk-cache-upstream-0123456789abcdef' },
    configFile: { name: 'cache.yaml', text: CONFIG },
  });
  const upstreamCalls = () => fixture.mock.chatRequests().length;
  /** A request body of its own per test (a nonce in the prompt): tests never see each other's entries. */
  const body = (model: string, extra: Record<string, unknown> = {}, nonce = randomUUID()) => ({
    model,
    temperature: 0,
    messages: [{ role: 'user', content: `what is 2+2? ${nonce}` }],
    ...extra,
  });
  const chat = (payload: unknown, headers: Record<string, string> = authHeaders()) =>
    call(fixture.url(CHAT), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(payload),
    });
  const newKey = async (rights: Record<string, unknown> = {}) => {
    const created = await call(fixture.url('/v1/?route=keys'), {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({ name: `cache-${randomUUID().slice(0, 8)}`, models: ['*'], ...rights }),
    });
    assert.equal(created.status, 201, created.text);
    return { authorization: `Bearer ${(created.json as unknown as { key: string }).key}` };
  };

  test('the same request again: the stored answer, byte for byte, without an upstream call; X-Cache and Age say so', async () => {
    const request = body('cached');
    const first = await chat(request);
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-cache'], 'miss');
    assert.equal(upstreamCalls(), 1);

    // The same request re-serialised with its keys in another order is the same canonical request.
    const reordered = { messages: request.messages, temperature: 0, model: 'cached' };
    const second = await chat(reordered);
    assert.equal(second.status, 200);
    assert.equal(second.headers['x-cache'], 'hit');
    assert.match(String(second.headers.age), /^\d+$/);
    assert.equal(second.text, first.text, 'the stored answer, byte for byte');
    assert.equal(upstreamCalls(), 1, 'no upstream call for a hit');

    const other = await chat(body('cached'));
    assert.equal(other.headers['x-cache'], 'miss', 'another prompt is another request');
    assert.equal(upstreamCalls(), 2);

    const plain = await chat(body('plain'));
    assert.equal(plain.headers['x-cache'], undefined, 'a model without caching says nothing about it');
  });

  test('through the openai SDK: a stream and a completion each hit on the second call, the SDK none the wiser', async () => {
    const client = new OpenAI({ baseURL: fixture.url('/v1'), apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const prompt = `sdk ${randomUUID()}`;
    const ask = () =>
      client.chat.completions
        .create({ model: 'cached', temperature: 0, messages: [{ role: 'user', content: prompt }] })
        .withResponse();
    const first = await ask();
    const second = await ask();
    assert.equal(second.response.headers.get('x-cache'), 'hit');
    assert.deepEqual(second.data, first.data);
    fixture.mock.defaultBehavior = { kind: 'stream' };
    const streamed = async () => {
      const { data, response } = await client.chat.completions
        .create({ model: 'cached', temperature: 0, stream: true, messages: [{ role: 'user', content: prompt }] })
        .withResponse();
      let text = '';
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
      return { text, cache: response.headers.get('x-cache') };
    };
    const live = await streamed();
    const replayed = await streamed();
    assert.deepEqual([live.cache, replayed.cache], ['miss', 'hit']);
    assert.equal(replayed.text, live.text);
    assert.equal(replayed.text, 'Hello from mock');
    assert.equal(upstreamCalls(), 2, 'one upstream call for the completion, one for the stream');
  });

  test('scoped per caller: another key sends the same request and gets its own upstream answer; `shared: true` shares', async () => {
    const [alice, bob] = [await newKey(), await newKey()];
    const request = body('cached');
    const a = await chat(request, alice);
    const b = await chat(request, bob);
    assert.equal(b.headers['x-cache'], 'miss', "bob never gets alice's answer");
    assert.notEqual(
      (b.json as unknown as Completion).id,
      (a.json as unknown as Completion).id,
      'a second upstream answer',
    );
    assert.equal(upstreamCalls(), 2);
    assert.equal((await chat(request, alice)).headers['x-cache'], 'hit', 'each caller hits its own entry');
    assert.equal((await chat(request, bob)).headers['x-cache'], 'hit');
    assert.equal((await chat(request)).headers['x-cache'], 'miss', 'nor does the admin token see either');
    assert.equal(upstreamCalls(), 3);

    // The same gateway credential with a caller's own provider key is another scope, and two such keys are two.
    const ownKey = (key: string) => authHeaders({ 'x-upstream-key': key });
    assert.equal(
      (await chat(request, ownKey('sk-own-account-a-0123456789'))).headers['x-cache'],
      'miss',
      'not the admin entry',
    );
    assert.equal(
      (await chat(request, ownKey('sk-own-account-b-0123456789'))).headers['x-cache'],
      'miss',
      'nor account a',
    );
    assert.equal((await chat(request, ownKey('sk-own-account-a-0123456789'))).headers['x-cache'], 'hit');
    assert.equal(fixture.mock.chatRequests().at(-1)?.headers.authorization, 'Bearer sk-own-account-b-0123456789');
    assert.equal(upstreamCalls(), 5);

    const sharedRequest = body('shared');
    const first = await chat(sharedRequest, alice);
    const second = await chat(sharedRequest, bob);
    assert.equal(second.headers['x-cache'], 'hit', 'a model configured as shared serves every caller');
    assert.equal(second.text, first.text);
    assert.equal(upstreamCalls(), 6);
  });

  test('the safe default: a request that samples (no temperature, or above 0) or offers tools is never cached', async () => {
    for (const request of [
      body('cached', { temperature: undefined }),
      body('cached', { temperature: 0.7 }),
      body('cached', {
        tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }],
      }),
    ]) {
      const before = upstreamCalls();
      const first = await chat(request);
      const second = await chat(request);
      assert.equal(first.status, 200, first.text);
      assert.equal(second.headers['x-cache'], 'miss', `not cached: ${JSON.stringify(request).slice(0, 80)}`);
      assert.equal(upstreamCalls(), before + 2, 'both went upstream');
    }
    // A model whose policy says `sampled: true` caches them too.
    const sampled = body('sampled', { temperature: 1 });
    await chat(sampled);
    assert.equal((await chat(sampled)).headers['x-cache'], 'hit');
  });

  test('Cache-Control: no-cache skips the lookup (and refreshes the entry); no-store keeps nothing', async () => {
    const request = body('cached');
    const first = await chat(request);
    const fresh = await chat(request, authHeaders({ 'cache-control': 'no-cache' }));
    assert.equal(fresh.headers['x-cache'], 'miss');
    assert.equal(upstreamCalls(), 2, 'no-cache went upstream although an entry existed');
    assert.notEqual((fresh.json as unknown as Completion).id, (first.json as unknown as Completion).id);
    const next = await chat(request);
    assert.equal(next.headers['x-cache'], 'hit');
    assert.equal(next.text, fresh.text, 'the fresh answer replaced the entry');

    const unstored = body('cached');
    await chat(unstored, authHeaders({ 'cache-control': 'no-store, max-age=0' }));
    assert.equal((await chat(unstored)).headers['x-cache'], 'miss', 'no-store: nothing was kept');
    assert.equal(upstreamCalls(), 4);
  });

  test('streams: a complete stream is replayed as a stream (same events, ending in [DONE]); a cut one is not stored', async () => {
    const request = JSON.stringify(body('cached', { stream: true }));
    const headers = { ...authHeaders(), 'content-type': 'application/json' };
    fixture.mock.defaultBehavior = { kind: 'stream' };
    const first = await readStream(fixture.url(CHAT), request, headers);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers['x-cache'], 'miss');
    const replayed = await readStream(fixture.url(CHAT), request, headers);
    assert.equal(replayed.status, 200, replayed.text);
    assert.equal(replayed.headers['x-cache'], 'hit');
    assert.match(String(replayed.headers['content-type']), /^text\/event-stream/);
    assert.equal(replayed.text, first.text, 'the same event text');
    assert.equal(dataFrames(replayed.text).at(-1), '[DONE]');
    assert.equal(upstreamCalls(), 1);

    const cut = JSON.stringify(body('cached', { stream: true }));
    fixture.mock.enqueue({ kind: 'reset', afterChunks: 1 });
    const broken = await readStream(fixture.url(CHAT), cut, headers);
    assert.ok(!dataFrames(broken.text).includes('[DONE]'), 'the cut stream ended without [DONE]');
    const retried = await readStream(fixture.url(CHAT), cut, headers);
    assert.equal(retried.headers['x-cache'], 'miss', 'a cut stream was not stored');
    assert.equal(dataFrames(retried.text).at(-1), '[DONE]');
    assert.equal(upstreamCalls(), 3);
  });

  test('only successful answers are stored: an upstream error is not, and the next call goes upstream again', async () => {
    const request = body('cached');
    fixture.mock.enqueue({ kind: 'error', status: 500 });
    assert.equal((await chat(request)).status, 502);
    const second = await chat(request);
    assert.equal(second.status, 200);
    assert.equal(second.headers['x-cache'], 'miss');
    assert.equal((await chat(request)).headers['x-cache'], 'hit');
    assert.equal(upstreamCalls(), 2);
  });

  test('a hit counts against the caller’s request limit but not against its token budget', async () => {
    const limited = await newKey({ limits: { requests_per_minute: 3 } });
    const request = body('cached');
    assert.equal((await chat(request, limited)).status, 200);
    const hit = await chat(request, limited);
    assert.equal(hit.headers['x-cache'], 'hit');
    assert.equal(hit.headers['ratelimit-remaining'], '1', 'the hit was counted');
    assert.equal((await chat(request, limited)).status, 200);
    const refused = await chat(request, limited);
    assert.equal(refused.status, 429, 'the fourth request of the minute is refused, cached or not');
    assert.equal((refused.json as { code: string }).code, 'rate_limited');

    // A budget of one token: the first call overdraws it, so a new request is refused; the cached one is served.
    const budgeted = await newKey({ budget: { tokens: 1, period_seconds: 3600 } });
    const cachedRequest = body('cached');
    assert.equal((await chat(cachedRequest, budgeted)).status, 200);
    const overBudget = await chat(body('cached'), budgeted);
    assert.equal(overBudget.status, 429);
    assert.equal((overBudget.json as { code: string }).code, 'budget_exceeded');
    const served = await chat(cachedRequest, budgeted);
    assert.equal(served.status, 200, 'a hit costs no tokens');
    assert.equal(served.headers['x-cache'], 'hit');
  });

  test('usage records mark hits (no tokens, no cost, no upstream); metrics count hits and misses', async () => {
    const request = body('cached');
    const miss = await chat(request);
    const hit = await chat(request);
    const usage = new SqliteUsageStore(fixture.gw.store.db);
    const records = await waitForValue(
      'both usage records',
      () => usage.recent(200, false),
      (rs) => [miss, hit].every((a) => rs.some((r) => r.requestId === a.headers['x-request-id'])),
    );
    const missRecord = records.find((r) => r.requestId === miss.headers['x-request-id']);
    const hitRecord = records.find((r) => r.requestId === hit.headers['x-request-id']);
    assert.equal(missRecord?.cacheHit, false);
    assert.ok((missRecord?.promptTokens ?? 0) > 0);
    assert.deepEqual(
      [
        hitRecord?.cacheHit,
        hitRecord?.status,
        hitRecord?.promptTokens,
        hitRecord?.costUsd,
        hitRecord?.upstream,
        hitRecord?.attempts,
      ],
      [true, 200, null, null, null, 0],
    );

    await chat(body('cached', { temperature: 0.5 })); // not cacheable: not looked up
    const metrics = await call(fixture.url('/metrics'), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const count = (result: string) =>
      Number(
        new RegExp(`llmgw_cache_lookups_total\\{model="cached",result="${result}"\\} (\\d+)`).exec(metrics.text)?.[1] ??
          Number.NaN,
      );
    const lines = metrics.text
      .split('\n')
      .filter((l) => l.includes('cache'))
      .join('\n');
    assert.ok(count('hit') >= 1 && count('miss') >= 1 && count('bypass') >= 1, lines);
  });

  test('bounded: past max_total_bytes the least recently used entries are evicted', async () => {
    const db = fixture.gw.store.db;
    const requests = Array.from({ length: 24 }, () => body('cached'));
    for (const request of requests) assert.equal((await chat(request)).status, 200);
    const size = db.prepare('SELECT bytes FROM response_cache_size').get() as { bytes: number };
    const summed = db
      .prepare('SELECT coalesce(sum(bytes), 0) AS bytes, count(*) AS entries FROM response_cache')
      .get() as { bytes: number; entries: number };
    assert.ok(size.bytes <= 4096, `held ${size.bytes} bytes, bound 4096`);
    assert.equal(size.bytes, summed.bytes, 'the running total matches the rows');
    assert.ok(summed.entries < 24, `some were evicted (${summed.entries} left)`);
    const calls = upstreamCalls();
    assert.equal((await chat(requests[23])).headers['x-cache'], 'hit', 'the most recent is kept');
    assert.equal((await chat(requests[0])).headers['x-cache'], 'miss', 'the least recently used went first');
    assert.equal(upstreamCalls(), calls + 1);
  });

  test('embeddings are always cacheable (nothing is drawn); the Messages API is cached like chat', async () => {
    const embeddingCalls = () => fixture.mock.requests.filter((r) => r.path === '/v1/embeddings').length;
    const embed = (input: string) =>
      call(fixture.url('/v1/embeddings'), {
        method: 'POST',
        headers: { ...authHeaders(), 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'embed-cached', input }),
      });
    const input = `vectorise ${randomUUID()}`;
    const first = await embed(input);
    assert.equal(first.status, 200, first.text);
    const second = await embed(input);
    assert.equal(second.headers['x-cache'], 'hit');
    assert.equal(second.text, first.text);
    assert.equal(embeddingCalls(), 1);

    const messages = (payload: unknown) =>
      call(fixture.url('/v1/messages'), {
        method: 'POST',
        headers: { ...authHeaders(), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(payload),
      });
    const request = {
      model: 'cached',
      max_tokens: 64,
      temperature: 0,
      messages: [{ role: 'user', content: `hello ${randomUUID()}` }],
    };
    const a = await messages(request);
    assert.equal(a.status, 200, a.text);
    assert.equal((a.json as { type: string }).type, 'message');
    const b = await messages(request);
    assert.equal(b.headers['x-cache'], 'hit');
    assert.equal(b.text, a.text);
    assert.equal(upstreamCalls(), 1);
    assert.equal(
      (await messages({ ...request, temperature: undefined })).headers['x-cache'],
      'miss',
      'Anthropic samples by default too',
    );
  });

  test('the Responses API: a request with store: false is cached; a stored response (the default) never is', async () => {
    const responses = (payload: unknown) =>
      call(fixture.url('/v1/responses'), {
        method: 'POST',
        headers: { ...authHeaders(), 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    const unstored = { model: 'cached', input: `hello ${randomUUID()}`, temperature: 0, store: false };
    const first = await responses(unstored);
    assert.equal(first.status, 200, first.text);
    const second = await responses(unstored);
    assert.equal(second.headers['x-cache'], 'hit');
    assert.equal(second.text, first.text);
    const stored = { model: 'cached', input: `hello ${randomUUID()}`, temperature: 0 };
    const a = await responses(stored);
    const b = await responses(stored);
    assert.equal(b.headers['x-cache'], 'miss');
    assert.notEqual(
      (a.json as { id: string }).id,
      (b.json as { id: string }).id,
      'each stored response is its own object',
    );
  });
});

describe('the exact response cache shared by two instances through Redis', async () => {
  const skip = await redisSkipReason();
  let mock: OpenAiUpstream | undefined;
  const gateways: TestGateway[] = [];
  before(async () => {
    if (skip) return;
    mock = await startOpenAiUpstream();
    for (let i = 0; i < 2; i++) {
      gateways.push(
        await startGateway({
          env: { UPSTREAM_BASE_URL: mock.baseUrl, UPSTREAM_API_KEY: 'sk-cache-upstream-0123456789abcdef', REDIS_URL },
          configFile: { name: 'cache.yaml', text: CONFIG },
        }),
      );
    }
  });
  after(async () => {
    for (const gw of gateways) await gw.close();
    await mock?.close();
  });

  test(
    'one instance stores, the other answers from the cache; the scope still holds across instances',
    { skip },
    async () => {
      const [one, two] = gateways as [TestGateway, TestGateway];
      const payload = JSON.stringify({
        model: 'cached',
        temperature: 0,
        messages: [{ role: 'user', content: `shared ${randomUUID()}` }],
      });
      const post = (gw: TestGateway, headers: Record<string, string> = authHeaders()) =>
        call(`${gw.url}${CHAT}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: payload,
        });
      const first = await post(one);
      assert.equal(first.headers['x-cache'], 'miss');
      const second = await post(two);
      assert.equal(second.headers['x-cache'], 'hit', 'the second instance found the first one’s entry');
      assert.equal(second.text, first.text);
      assert.equal(started(mock, 'mock').chatRequests().length, 1);

      const created = await call(`${two.url}/v1/?route=keys`, {
        method: 'POST',
        headers: authHeaders(),
        disclosesKey: true,
        body: JSON.stringify({ name: 'other-tenant', models: ['*'] }),
      });
      const other = await post(two, { authorization: `Bearer ${(created.json as unknown as { key: string }).key}` });
      assert.equal(other.headers['x-cache'], 'miss', 'another caller on another instance does not see it');
      assert.equal(started(mock, 'mock').chatRequests().length, 2);
    },
  );
});

describe('the response cache when its Redis stalls', async () => {
  const skip = REDIS_SERVER_BIN ? undefined : 'redis-server is not installed: skipping the stalled-Redis test';
  if (skip) console.log(`# SKIP ${skip}`);
  let mock: OpenAiUpstream | undefined;
  let redis: OwnRedis | undefined;
  let gw: TestGateway | undefined;
  before(async () => {
    if (skip) return;
    mock = await startOpenAiUpstream();
    redis = new OwnRedis(await freePort());
    await redis.start();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, REDIS_URL: redis.url },
      configFile: { name: 'cache.yaml', text: CONFIG },
    });
  });
  after(async () => {
    redis?.resume();
    await gw?.close();
    await redis?.stop();
    await mock?.close();
  });

  test(
    'a Redis that keeps the connection but answers nothing costs a call at most the store timeout: answered from upstream as a miss',
    { skip },
    async () => {
      const post = (content: string) =>
        call(`${started(gw, 'gateway').url}${CHAT}`, {
          method: 'POST',
          headers: { ...authHeaders(), 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'cached', temperature: 0, messages: [{ role: 'user', content }] }),
        });
      assert.equal((await post('before the stall')).headers['x-cache'], 'miss');
      assert.equal((await post('before the stall')).headers['x-cache'], 'hit');
      started(redis, 'redis').pause();
      const during = await Promise.race([
        post('before the stall'),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 3_000)),
      ]);
      assert.ok(during, 'answered although the cache store answers nothing');
      assert.equal(during.status, 200);
      assert.equal(during.headers['x-cache'], 'miss');
      assert.equal(started(mock, 'mock').chatRequests().length, 2, 'the upstream answered it');
      // While the store is unwell the cache is not consulted at all: nothing queues behind it.
      const next = await Promise.race([
        post('another question'),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 3_000)),
      ]);
      assert.equal(next?.status, 200);
      assert.ok(
        started(gw, 'gateway').logLines.some((line) => line.includes('response cache lookup failed')),
        'the failure is logged',
      );
    },
  );
});

describe('the response cache for every model (cache.enabled: true), declared or not', () => {
  const fixture = useGateway({ configFile: { name: 'cache-all.yaml', text: 'cache: { enabled: true }\n' } });
  test('a pass-through model id to the default upstream is cached too', async () => {
    const payload = JSON.stringify({
      model: 'gpt-4o-mini',
      temperature: 0,
      messages: [{ role: 'user', content: `any model ${randomUUID()}` }],
    });
    const post = () =>
      call(fixture.url(CHAT), {
        method: 'POST',
        headers: { ...authHeaders(), 'content-type': 'application/json' },
        body: payload,
      });
    assert.equal((await post()).headers['x-cache'], 'miss');
    const second = await post();
    assert.equal(second.headers['x-cache'], 'hit');
    assert.equal(fixture.mock.chatRequests().length, 1);
  });
});
