/**
 * Scoped API keys end to end: created by the CLI code against the gateway's own store, then used against the
 * real gateway: rights per route and model, environments, expiry, rotation with a grace period, revocation,
 * per-key limits and budgets.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { keysCommand } from '../../src/cli/keys-command.js';
import { SqliteKeyStore } from '../../src/store/sqlite/sqlite-keys.js';
import { hashApiKey, newApiKey } from '../../src/auth/api-key.js';
import { RedisKeyStore } from '../../src/store/redis/redis-keys.js';
import { connectRedis } from '../../src/store/redis/connect.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';

const CONFIG = {
  name: 'keys.json',
  text: JSON.stringify({
    auth: { key_cache_seconds: 0 },
    limits: { upstream_pause_max_seconds: 0 },
    models: [
      { id: 'fast', upstream: 'default', upstream_model: 'gpt-4o-mini', aliases: ['fast-latest'] },
      // $0.001 per token either way: a $1 budget is about 1,000 tokens.
      {
        id: 'priced',
        upstream: 'default',
        upstream_model: 'gpt-4o-mini',
        pricing: { input_per_million: 1000, output_per_million: 1000 },
      },
    ],
  }),
};

/** A chat completion reporting this usage (the gateway charges budgets with the provider's usage). */
function completionWithUsage(prompt: number, completion: number): Record<string, unknown> {
  return {
    id: 'chatcmpl-usage',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'A long answer.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

describe('scoped API keys', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let keys: SqliteKeyStore;
  const output: string[] = [];
  const io = { out: (l: string) => output.push(l), err: (l: string) => output.push(`ERR ${l}`) };
  /** Runs `gateway keys ...` and returns the printed key (for create/rotate). */
  const cli = async (...args: string[]): Promise<{ code: number; key?: string; lines: string[] }> => {
    output.length = 0;
    const code = await keysCommand(keys, 'dev', args, io);
    const key = output.find((l) => l.startsWith('key: '))?.slice(5);
    return { code, ...(key ? { key } : {}), lines: [...output] };
  };
  const chatWith = (key: string, body = chatBody({ model: 'fast' })) =>
    call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });

  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, UPSTREAM_API_KEY: 'sk-upstream-configured-key' },
      configFile: CONFIG,
    });
    keys = new SqliteKeyStore(gw.store.db);
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  afterEach(() => mock.reset());

  test('a created key is shown once, stored hashed, and works within its rights (the upstream never sees it)', async () => {
    const created = await cli('create', '--name', 'team-a', '--models', 'fast', '--routes', 'chat');
    assert.equal(created.code, 0, created.lines.join('\n'));
    const key = created.key ?? '';
    assert.match(key, /^gwk_dev_[a-z0-9]{10}_[A-Za-z0-9_-]{43}$/);
    const keyId = key.split('_')[2] ?? '';
    const stored = await keys.get(keyId);
    assert.equal(stored?.hash, hashApiKey(key));
    assert.ok(
      !JSON.stringify(stored).includes(key.split('_').slice(3).join('_') || 'x'),
      'the secret part is not stored',
    ); // the secret may itself contain '_'
    const listed = await cli('list');
    assert.ok(
      listed.lines.some((l) => l.startsWith(`${keyId}  active`)),
      listed.lines.join('\n'),
    );
    assert.ok(!listed.lines.join('\n').includes(key));

    const answer = await chatWith(key);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(mock.chatRequests().at(-1)?.headers.authorization, 'Bearer sk-upstream-configured-key');
    const viaAlias = await chatWith(key, chatBody({ model: 'fast-latest' }));
    assert.equal(viaAlias.status, 200, 'an alias of an allowed model is allowed');
    await new Promise((r) => setTimeout(r, 20));
    const line = gw.logLines
      .map((l) => JSON.parse(l) as { msg?: string; request_id?: string; caller?: string })
      .find((l) => l.msg === 'request' && l.request_id === answer.headers['x-request-id']);
    assert.equal(line?.caller, `key:${keyId}`);
  });

  test('outside its rights: 403 naming the missing right; a tampered or unknown key: 401', async () => {
    const { key = '' } = await cli('create', '--name', 'narrow', '--models', 'fast', '--routes', 'chat');
    const otherModel = await chatWith(key, chatBody({ model: 'gpt-4o' }));
    assert.equal(otherModel.status, 403);
    assert.deepEqual(
      [otherModel.json.code, otherModel.json.details?.model, otherModel.json.details?.allowed_models],
      ['model_not_allowed', 'gpt-4o', ['fast']],
    );
    assert.equal(mock.chatRequests().length, 0, 'refused before any upstream call');
    const models = await call(`${gw.url}/v1/?route=models`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(models.status, 403);
    assert.deepEqual(
      [models.json.code, models.json.details?.route, models.json.details?.allowed_routes],
      ['route_not_allowed', 'models', ['chat']],
    );
    const tampered = `${key.slice(0, -4)}AAAA`;
    const refused = await chatWith(tampered);
    assert.deepEqual([refused.status, refused.json.code], [401, 'invalid_token']);
    assert.equal((await chatWith(newApiKey('dev').key)).json.code, 'invalid_token', 'well-formed but unknown');
    assert.equal((await chatWith('gwk_dev_short')).json.code, 'invalid_token');
    // OpenAI drop-in path: same rights
    const dropIn = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chatBody({ model: 'gpt-4o' }),
    });
    assert.deepEqual(
      [dropIn.status, dropIn.json.code, (dropIn.json.error as { code?: string })?.code],
      [403, 'model_not_allowed', 'model_not_allowed'],
    );
  });

  test('the models a key lists are only those it may call; any other is a 404, like an unknown model', async () => {
    const get = (key: string, path: string) =>
      call(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const ids = (answer: { json: Record<string, unknown> }) =>
      (answer.json.data as Array<{ id: string }>).map((m) => m.id);
    const everything = ids(await get(ADMIN_TOKEN, '/v1/?route=models'));
    assert.ok(
      everything.includes('priced') && everything.includes('echo') && everything.length > 3,
      `the admin sees all: ${everything.join(', ')}`,
    );

    const { key: one = '' } = await cli('create', '--name', 'lister', '--models', 'fast', '--routes', 'chat,models');
    const listed = await get(one, '/v1/?route=models');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(ids(listed), ['fast']);
    assert.deepEqual(
      (listed.json.data as Array<{ aliases?: string[] }>)[0]?.aliases,
      ['fast-latest'],
      'its aliases are callable too',
    );
    assert.equal(listed.json.next_token, undefined);
    assert.deepEqual(ids(await get(one, '/v1/?route=models&limit=1')), ['fast']);
    assert.deepEqual(ids(await get(one, '/v1/models')), ['fast']);
    assert.equal((await get(one, '/v1/models/fast')).status, 200);
    for (const hidden of ['priced', 'echo', 'gpt-4o-mini', 'no-such-model']) {
      const answer = await get(one, `/v1/models/${hidden}`);
      assert.deepEqual(
        [answer.status, answer.json.code, answer.json.details],
        [404, 'model_not_found', { model: hidden }],
        `${hidden}: the same answer as an unknown model`,
      );
    }

    // Allowed only an alias of a model (and another model): it sees the alias, never the id it could not call.
    const { key: alias = '' } = await cli(
      'create',
      '--name',
      'alias-lister',
      '--models',
      'fast-latest,priced',
      '--routes',
      'chat,models',
    );
    const seen = await get(alias, '/v1/models');
    assert.deepEqual(ids(seen), ['fast-latest', 'priced']);
    assert.equal((seen.json.data as Array<{ aliases?: string[] }>)[0]?.aliases, undefined);
    assert.equal((await get(alias, '/v1/models/fast-latest')).status, 200);
    assert.equal((await get(alias, '/v1/models/fast')).status, 404);
    assert.equal(
      (await chatWith(alias, chatBody({ model: 'fast-latest' }))).status,
      200,
      'what is listed can be called',
    );
    assert.equal((await chatWith(alias, chatBody({ model: 'fast' }))).status, 403);
  });

  test('a key of another environment is refused as wrong_environment, even when it is otherwise valid', async () => {
    const staging = newApiKey('staging');
    await keys.create({
      keyId: staging.keyId,
      environment: 'staging',
      name: 'staging',
      hash: staging.hash,
      routes: ['chat'],
      models: ['*'],
      createdMs: Date.now(),
    });
    const answer = await chatWith(staging.key);
    assert.equal(answer.status, 403);
    assert.deepEqual(
      [answer.json.code, answer.json.details?.key_environment, answer.json.details?.gateway_environment],
      ['wrong_environment', 'staging', 'dev'],
    );
  });

  test('rotation: the successor works at once, the old key until the grace period ends (then key_expired); revocation: key_revoked', async () => {
    const { key: old = '' } = await cli('create', '--name', 'rotating', '--models', '*');
    const oldId = old.split('_')[2] ?? '';
    const rotated = await cli('rotate', oldId, '--grace', '1s');
    assert.equal(rotated.code, 0, rotated.lines.join('\n'));
    const successor = rotated.key ?? '';
    assert.notEqual(successor, old);
    assert.equal((await keys.get(successor.split('_')[2] ?? ''))?.rotatedFrom, oldId);
    assert.equal((await chatWith(old)).status, 200, 'still inside the grace period');
    assert.equal((await chatWith(successor)).status, 200);
    await new Promise((r) => setTimeout(r, 1_100));
    const expired = await chatWith(old);
    assert.deepEqual([expired.status, expired.json.code, expired.json.details?.key_id], [401, 'key_expired', oldId]);
    assert.equal((await chatWith(successor)).status, 200);

    assert.equal((await cli('revoke', successor.split('_')[2] ?? '')).code, 0);
    const revoked = await chatWith(successor);
    assert.deepEqual([revoked.status, revoked.json.code], [401, 'key_revoked']);
    assert.match(String(revoked.headers['www-authenticate']), /error="invalid_token"/);
    assert.equal((await cli('rotate', successor.split('_')[2] ?? '')).code, 2, 'a revoked key cannot be rotated');
  });

  test('a key with its own limits: counted under the key, separately from the admin and from other keys', async () => {
    const { key: limited = '' } = await cli('create', '--name', 'limited', '--models', '*', '--rpm', '2');
    const { key: other = '' } = await cli('create', '--name', 'other', '--models', '*', '--rpm', '2');
    const id = limited.split('_')[2] ?? '';
    const first = await chatWith(limited);
    assert.deepEqual([first.status, first.headers['ratelimit-remaining']], [200, '1']);
    assert.equal((await chatWith(limited)).status, 200);
    const third = await chatWith(limited);
    assert.equal(third.status, 429);
    assert.deepEqual(
      [third.json.code, third.json.details?.scope, third.json.details?.scope_id],
      ['rate_limited', 'caller', `key:${id}`],
    );
    assert.equal((await chatWith(other)).status, 200, 'another key has its own budget of requests');
    const admin = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    assert.deepEqual(
      [admin.status, admin.headers['ratelimit-limit']],
      [200, undefined],
      'the admin has no limit configured',
    );
  });

  test('a token budget admits every call while some of it is left (the first without max_tokens too), may be overdrawn by one call, then 429', async () => {
    const { key = '' } = await cli(
      'create',
      '--name',
      'budgeted',
      '--models',
      '*',
      '--budget-tokens',
      '1000',
      '--budget-period',
      '1d',
    );
    // Estimated at prompt + 1024 > 1000: a fresh budget must not refuse it.
    const first = await chatWith(key);
    assert.equal(first.status, 200, first.text);
    // More than the whole budget asked for, while some is left: admitted, then charged its real usage (2,010 tokens).
    mock.enqueue({ kind: 'json', body: completionWithUsage(10, 2_000) });
    const big = await chatWith(key, chatBody({ model: 'fast', max_tokens: 5_000 }));
    assert.equal(big.status, 200, big.text);
    // Charged 5,006 at admission (6 days of the budget's rate), corrected to 2,010 when the call ended.
    const budgetKey = `tokens:budget:key:${key.split('_')[2] ?? ''}:86400000`; // keyed by its period (1 d) too
    const aheadMs = () =>
      ((
        gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(budgetKey) as
          { tat_ms: number } | undefined
      )?.tat_ms ?? 0) - Date.now();
    for (const deadline = Date.now() + 2_000; aheadMs() > 3 * 86_400_000;) {
      assert.ok(Date.now() < deadline, 'the correction to the real usage is written');
      await new Promise((r) => setTimeout(r, 5));
    }
    const spent = await chatWith(key, chatBody({ model: 'fast', max_tokens: 10 }));
    assert.equal(spent.status, 429);
    assert.equal(spent.json.code, 'budget_exceeded');
    assert.deepEqual([spent.json.details?.budget_tokens, spent.json.details?.period_seconds], [1000, 86_400]);
    // Overdrawn by the one call: used ~2,020 of 1,000. The wait is until the debt is repaid and one token is back
    // (86.4 s a token): a bit over a day here, and it does help, unlike a refusal that no wait can lift.
    const retryAfter = Number(spent.headers['retry-after']);
    assert.ok(retryAfter >= 1_011 * 86.4 && retryAfter <= 1_031 * 86.4, `Retry-After ${retryAfter}`);
    assert.equal(Number(spent.json.details?.retry_after_seconds), retryAfter);
    assert.equal(mock.chatRequests().length, 2);
  });

  test("a cost budget: charged at the model's prices (estimate first, real cost after); admitted while some is left, then budget_exceeded", async () => {
    const { key = '', lines } = await cli(
      'create',
      '--name',
      'dollars',
      '--models',
      '*',
      '--budget-usd',
      '1',
      '--budget-period',
      '1d',
    );
    assert.ok(key, lines.join('\n'));
    // Five estimates of ~$0.21 add up to more than $1: each is admitted while some of the budget is left, and
    // corrected to the real (small) usage afterwards.
    for (let i = 0; i < 5; i++) {
      const small = await chatWith(key, chatBody({ model: 'priced', max_tokens: 200 }));
      assert.equal(small.status, 200, `call ${i + 1}: ~${200 + 10} tokens estimated ($0.21)`);
    }
    // Estimated at $1.5, more than the whole budget: admitted (some is left), then charged its real $1.51.
    mock.enqueue({ kind: 'json', body: completionWithUsage(10, 1_500) });
    assert.equal((await chatWith(key, chatBody({ model: 'priced', max_tokens: 1_500 }))).status, 200);
    const spent = await chatWith(key, chatBody({ model: 'priced', max_tokens: 10 }));
    assert.deepEqual([spent.status, spent.json.code, spent.json.details?.budget_usd], [429, 'budget_exceeded', 1]);
    assert.equal(
      (await chatWith(key, chatBody({ model: 'fast', max_tokens: 1_500 }))).status,
      200,
      'a model without prices costs nothing against it',
    );
  });

  test('the CLI refuses bad input with a clear message and exit code 2', async () => {
    assert.deepEqual((await cli('create', '--models', '*')).lines, [
      'ERR --name is required (who or what the key is for)',
    ]);
    assert.equal((await cli('create', '--name', 'x')).code, 2);
    assert.match(
      (await cli('create', '--name', 'x', '--models', '*', '--routes', 'admin')).lines[0] ?? '',
      /--routes: a comma-separated list of chat, models/,
    );
    assert.match(
      (await cli('create', '--name', 'x', '--models', '*', '--rpm', '0')).lines[0] ?? '',
      /--rpm takes a whole number/,
    );
    assert.equal((await cli('revoke', 'nokey')).code, 2);
  });
});

const redisSkip = await redisSkipReason();

describe('scoped keys across instances sharing Redis', { skip: redisSkip }, () => {
  let mock: OpenAiUpstream;
  const gateways: TestGateway[] = [];
  const created: string[] = [];
  before(async () => {
    mock = await startOpenAiUpstream();
    for (let i = 0; i < 2; i++)
      gateways.push(await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl, REDIS_URL }, configFile: CONFIG }));
  });
  after(async () => {
    for (const g of gateways) await g.close();
    await mock.close();
    const client = await connectRedis(REDIS_URL);
    if (created.length > 0) await client.hdel('gw:keys:dev', ...created);
    // Budgets and limits of these keys (they would otherwise expire by themselves, days later).
    for (const id of created) {
      const leftovers = await client.keys(`gw:rl:*:key:${id}`);
      if (leftovers.length > 0) await client.del(...leftovers);
    }
    await client.quit();
  });

  test('a key created once works on every instance, its limit is shared, and a revocation is seen by all', async () => {
    const client = await connectRedis(REDIS_URL);
    const keys = new RedisKeyStore(client, 'gw:keys:dev');
    try {
      const lines: string[] = [];
      await keysCommand(keys, 'dev', ['create', '--name', 'shared', '--models', '*', '--rpm', '3'], {
        out: (l) => lines.push(l),
        err: (l) => lines.push(l),
      });
      const key = lines.find((l) => l.startsWith('key: '))?.slice(5) ?? '';
      const keyId = key.split('_')[2] ?? '';
      created.push(keyId);
      const on = (i: number) =>
        call(`${gateways[i]?.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: chatBody(),
        });
      assert.deepEqual([(await on(0)).status, (await on(1)).status, (await on(0)).status], [200, 200, 200]);
      const fourth = await on(1);
      assert.deepEqual(
        [fourth.status, fourth.json.code],
        [429, 'rate_limited'],
        'the 3 per minute are counted across both instances',
      );
      await keys.update(keyId, { revokedMs: Date.now() });
      assert.deepEqual([(await on(0)).json.code, (await on(1)).json.code], ['key_revoked', 'key_revoked']);
    } finally {
      await client.quit();
    }
  });

  test('a token budget in Redis: a fresh one admits a call without max_tokens; overdrawn by one call, every instance refuses', async () => {
    const client = await connectRedis(REDIS_URL);
    const keys = new RedisKeyStore(client, 'gw:keys:dev');
    try {
      const lines: string[] = [];
      await keysCommand(
        keys,
        'dev',
        ['create', '--name', 'budget', '--models', '*', '--budget-tokens', '1000', '--budget-period', '1d'],
        { out: (l) => lines.push(l), err: (l) => lines.push(l) },
      );
      const key = lines.find((l) => l.startsWith('key: '))?.slice(5) ?? '';
      created.push(key.split('_')[2] ?? '');
      const on = (i: number, body = chatBody()) =>
        call(`${gateways[i]?.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        });
      const first = await on(0);
      assert.equal(first.status, 200, `estimated at prompt + 1024 > 1000, yet the budget is untouched: ${first.text}`);
      mock.enqueue({ kind: 'json', body: completionWithUsage(10, 2_000) });
      assert.equal(
        (await on(1, chatBody({ max_tokens: 5_000 }))).status,
        200,
        'more than the whole budget, admitted while some is left',
      );
      const [a, b] = [await on(0), await on(1)];
      assert.deepEqual(
        [a.status, a.json.code, b.status, b.json.code],
        [429, 'budget_exceeded', 429, 'budget_exceeded'],
      );
    } finally {
      await client.quit();
    }
  });
});
