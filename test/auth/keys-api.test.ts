import { after, before, describe, test } from 'node:test';
import { createHash, randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { authHeaders, useGateway } from '../helpers/gateway.js';
import { call, fieldsOf } from '../helpers/http.js';
import { waitForValue } from '../helpers/wait.js';
import { started } from '../helpers/started.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';

const KEYS = '/v1/?route=keys';

interface ShownKey {
  id: string;
  name: string;
  state: string;
  routes: string[];
  models: string[];
  limits: Record<string, number> | null;
  budget: Record<string, number> | null;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_from: string | null;
  key?: string;
  previous?: ShownKey;
}

describe('the admin keys API (?route=keys)', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: 'sk-keys-api-upstream-0123456789' } });
  // POST creates or rotates: its answer shows the new secret, once, by design.
  const admin = (method: string, query = '', body?: unknown) =>
    call(fixture.url(`${KEYS}${query}`), {
      method,
      headers: authHeaders(),
      disclosesKey: method === 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const chatWith = (key: string) =>
    call(fixture.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
    });

  test('create: the secret once, in that answer only; the key works with its rights; every change is an audit line', async () => {
    const created = await admin('POST', '', {
      name: 'team-a',
      models: ['*'],
      routes: ['chat'],
      limits: { requests_per_minute: 100 },
    });
    assert.equal(created.status, 201);
    const key = created.json as unknown as ShownKey;
    assert.match(key.key ?? '', /^gwk_dev_[A-Za-z0-9]+_/);
    assert.deepEqual(
      [key.name, key.state, key.routes, key.models, key.limits],
      ['team-a', 'active', ['chat'], ['*'], { requests_per_minute: 100 }],
    );
    assert.equal((await chatWith(key.key as string)).status, 200);

    const got = (await admin('GET', `&id=${key.id}`)).json as unknown as ShownKey & { hash?: string };
    assert.equal(got.key, undefined, 'the secret is never shown again');
    assert.equal(got.hash, undefined, 'nor its hash');
    assert.equal(got.id, key.id);
    const line = fixture.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.audit === 'key.created');
    assert.deepEqual([line?.key_id, line?.by], [key.id, 'admin']);
    assert.ok(!fixture.gw.logLines.some((l) => l.includes(key.key as string)), 'the secret is never logged');
  });

  test('change rights (null removes), rotate with a grace period, revoke; the old and revoked keys stop working', async () => {
    const key = (
      await admin('POST', '', {
        name: 'team-b',
        models: ['gpt-4o-mini'],
        budget: { tokens: 1000, period_seconds: 86400 },
      })
    ).json as unknown as ShownKey;
    const changed = (await admin('PATCH', `&id=${key.id}`, { routes: ['chat', 'models'], budget: null }))
      .json as unknown as ShownKey;
    assert.deepEqual([changed.routes, changed.budget, changed.models], [['chat', 'models'], null, ['gpt-4o-mini']]);

    const rotated = await admin('POST', `&id=${key.id}&action=rotate`, { grace_seconds: 0 });
    assert.equal(rotated.status, 201);
    const next = rotated.json as unknown as ShownKey;
    assert.equal(next.rotated_from, key.id);
    assert.deepEqual(next.routes, ['chat', 'models'], 'the new key has the rights of the old one');
    assert.equal(next.previous?.state, 'expired', 'a grace of 0: the old key ends now');
    assert.equal((await chatWith(key.key as string)).status, 401);
    assert.equal((await chatWith(next.key as string)).status, 200);

    const again = await admin('POST', `&id=${key.id}&action=rotate`, {});
    assert.equal(again.status, 409);
    assert.deepEqual(
      [(again.json as { code: string }).code, (again.json as { details: { state: string } }).details.state],
      ['key_not_active', 'expired'],
    );

    const revoked = (await admin('DELETE', `&id=${next.id}`)).json as unknown as ShownKey;
    assert.equal(revoked.state, 'revoked');
    assert.ok(revoked.revoked_at);
    // At once on the instance that revoked it (every other instance within its key cache, 5 s by default).
    const refused = await chatWith(next.key as string);
    assert.deepEqual([refused.status, (refused.json as { code: string }).code], [401, 'key_revoked']);
    assert.equal(
      (await admin('PATCH', `&id=${next.id}`, { name: 'x' })).status,
      409,
      'a revoked key cannot be changed',
    );
  });

  test('a change of limits takes effect: the next calls are admitted under the new ones', async () => {
    const key = (await admin('POST', '', { name: 'team-limits', models: ['*'], limits: { requests_per_minute: 100 } }))
      .json as unknown as ShownKey;
    assert.equal((await chatWith(key.key as string)).headers['ratelimit-limit'], '100');
    await admin('PATCH', `&id=${key.id}`, { limits: { requests_per_minute: 50 } });
    // At once on this instance (every other one within its key cache, 5 s by default).
    assert.equal((await chatWith(key.key as string)).headers['ratelimit-limit'], '50');
  });

  test('a key replaced by a rotation can be neither rotated again (no fork) nor changed; a change that changes nothing writes nothing', async () => {
    const key = (await admin('POST', '', { name: 'team-fork', models: ['*'] })).json as unknown as ShownKey;
    const first = (await admin('POST', `&id=${key.id}&action=rotate`, { grace_seconds: 600 }))
      .json as unknown as ShownKey;
    assert.equal(first.expires_at, null, 'the successor keeps the original (absent) expiry');
    const second = await admin('POST', `&id=${key.id}&action=rotate`, { grace_seconds: 600 });
    assert.equal(second.status, 409);
    assert.deepEqual((second.json as { details: Record<string, unknown> }).details, {
      key_id: key.id,
      state: 'rotated',
      successor: first.id,
      problem: 'this key was replaced by a rotation: change or rotate its successor',
    });
    assert.equal(
      (await admin('PATCH', `&id=${key.id}`, { expires_at: '2030-01-01T00:00:00Z' })).status,
      409,
      'nor revived or changed',
    );
    const lines = () =>
      fixture.gw.logLines.filter((l) => l.includes('"audit":"key.updated"') && l.includes(first.id)).length;
    assert.equal((await admin('PATCH', `&id=${first.id}`, { expires_at: null })).status, 200);
    assert.equal(lines(), 0, 'no audit line for a change that changed nothing');
    await admin('PATCH', `&id=${first.id}`, { limits: { requests_per_minute: 10, concurrent: 2 } });
    const before = lines();
    await admin('PATCH', `&id=${first.id}`, { limits: { concurrent: 2, requests_per_minute: 10 } });
    assert.equal(lines(), before, 'the same limits in another order are no change');
    await admin('PATCH', `&id=${first.id}`, { name: 'team-fork-renamed' });
    const line = fixture.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .findLast((l) => l.audit === 'key.updated' && l.key_id === first.id);
    assert.deepEqual(line?.changed, ['name']);
  });

  test('a budget whose period is shortened starts a fresh window (a debt measured in the old period would block it for longer than the new one)', async () => {
    const key = (
      await admin('POST', '', {
        name: 'team-period',
        models: ['*'],
        budget: { tokens: 1000, period_seconds: 30 * 86_400 },
      })
    ).json as unknown as ShownKey;
    for (let i = 0; i < 3; i++) assert.equal((await chatWith(key.key as string)).status, 200);
    await admin('PATCH', `&id=${key.id}`, { budget: { tokens: 1000, period_seconds: 3600 } });
    const after = await chatWith(key.key as string);
    assert.equal(after.status, 200, after.text);
  });

  test('list pages with next_token and filters by state', async () => {
    for (const name of ['p1', 'p2', 'p3']) await admin('POST', '', { name, models: ['*'] });
    const seen: ShownKey[] = [];
    let token: string | undefined;
    do {
      const page = (await admin('GET', `&limit=2${token ? `&next_token=${token}` : ''}`)).json as {
        data: ShownKey[];
        next_token?: string;
      };
      assert.ok(page.data.length <= 2);
      seen.push(...page.data);
      token = page.next_token;
    } while (token !== undefined);
    assert.equal(new Set(seen.map((k) => k.id)).size, seen.length, 'no key twice');
    assert.ok(['p1', 'p2', 'p3'].every((n) => seen.some((k) => k.name === n)));

    // A key that changes state between two pages of a filtered list does not break the next page.
    const first = (await admin('GET', '&state=active&limit=1')).json as { data: ShownKey[]; next_token?: string };
    assert.ok(first.next_token);
    await admin('DELETE', `&id=${first.data[0]?.id}`);
    const next = await admin('GET', `&state=active&limit=1&next_token=${first.next_token}`);
    assert.equal(next.status, 200, next.text);
    assert.notEqual((next.json as { data: ShownKey[] }).data[0]?.id, first.data[0]?.id);
    assert.equal((await admin('GET', '&next_token=bm90LWEtY3Vyc29y')).status, 400, 'a made-up token');
    const active = (await admin('GET', '&state=active&limit=200')).json as { data: ShownKey[] };
    assert.ok(active.data.every((k) => k.state === 'active'));
    const revoked = (await admin('GET', '&state=revoked&limit=200')).json as { data: ShownKey[] };
    assert.ok(revoked.data.every((k) => k.state === 'revoked'));
    const own = (await admin('GET', '&environment=dev&limit=200')).json as { data: ShownKey[] };
    assert.equal(own.data.length, seen.length, 'the own environment: every key');
    const other = await admin('GET', '&environment=prod');
    assert.equal(other.status, 400);
    assert.deepEqual((other.json as { details: { parameter: string; allowed: string[] } }).details, {
      parameter: 'environment',
      allowed: ['dev'],
      problem: "a gateway manages its own environment's keys only: ask that environment's gateway",
    });
  });

  test('bad input names each field; an unknown id is a 404; a scoped key cannot manage keys', async () => {
    const bad = await admin('POST', '', {
      name: '',
      models: [],
      routes: ['keys', 'chat'],
      limits: { rpm: 5 },
      expires_at: 'tomorrow',
    });
    assert.equal(bad.status, 400);
    const fields = (bad.json as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field);
    for (const field of ['name', 'models', 'limits', 'expires_at'])
      assert.ok(
        fields.some((f) => f.includes(field)),
        `${field} in ${JSON.stringify(fields)}`,
      );
    const routes = await admin('POST', '', { name: 'x', models: ['*'], routes: ['keys'] });
    assert.equal(routes.status, 400);
    assert.deepEqual(
      (routes.json as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field),
      ['routes[0]'],
      'the keys route cannot be granted, and the entry is named',
    );

    // Bounds the limiter can hold: a budget period of years would overflow it (and silently stop being enforced).
    const forever = await admin('POST', '', {
      name: 'x',
      models: ['*'],
      budget: { tokens: 5, period_seconds: 99_999_999_999 },
    });
    assert.equal(forever.status, 400);
    assert.ok(
      fieldsOf(forever).some((f) => f.includes('period_seconds')),
      JSON.stringify(fieldsOf(forever)),
    );
    for (const meaningless of [{ budget: { period_seconds: 3600 } }, { limits: {} }, { models: ['*', 'm', 'm'] }]) {
      const answer = await admin('POST', '', { name: 'x', models: ['*'], ...meaningless });
      assert.equal(answer.status, 400, `refused: ${JSON.stringify(meaningless)}`);
    }
    // The query decides which body is expected, and is checked first.
    const typo = await admin('POST', '&id=abc0123456&action=rotat', { grace_seconds: 60 });
    assert.deepEqual(
      [typo.status, (typo.json as { details: { parameter: string } }).details.parameter],
      [400, 'action'],
    );
    const leap = await admin('POST', '', { name: 'x', models: ['*'], expires_at: '2030-06-30T23:59:60Z' });
    assert.deepEqual(
      [leap.status, fieldsOf(leap)],
      [400, ['expires_at']],
      'a leap second is refused, not stored as NaN',
    );
    assert.equal(
      (await admin('GET', '&id=abc0123456&action=usage&from=2026-11-01T00:00:00.123456Z')).status,
      404,
      'six fraction digits are a date (then: no such key)',
    );
    for (const date of ['2026-02-30', 'yesterday', '2026-13-01']) {
      const bad = await admin('GET', `&id=abc0123456&action=usage&from=${date}`);
      assert.deepEqual(
        [bad.status, (bad.json as { details: { parameter: string } }).details.parameter],
        [400, 'from'],
        date,
      );
    }
    const past = await admin('POST', '', { name: 'x', models: ['*'], expires_at: '2020-01-01T00:00:00Z' });
    assert.equal(past.status, 400);

    assert.equal((await admin('GET', '&id=nosuchkey00')).status, 404);
    assert.equal(((await admin('DELETE', '&id=nosuchkey00')).json as { code: string }).code, 'key_not_found');
    assert.equal((await admin('PATCH', '&id=nosuchkey00', {})).status, 400, 'an empty change names no field: refused');

    const scoped = (
      await admin('POST', '', {
        name: 'everything',
        models: ['*'],
        routes: ['chat', 'models', 'responses', 'messages', 'embeddings'],
      })
    ).json as unknown as ShownKey;
    const refused = await call(fixture.url(KEYS), { headers: { authorization: `Bearer ${scoped.key}` } });
    assert.equal(refused.status, 403);
    assert.equal((refused.json as { code: string }).code, 'route_not_allowed');
  });
});

describe('the admin keys API: Idempotency-Key on create and rotate, key events, usage and spend', () => {
  const SECRET = 'whsec_keys_test_0123456789abcdef';
  let canary: WebhookReceiver | undefined;
  let regular: WebhookReceiver | undefined;
  before(async () => {
    [canary, regular] = [await startWebhookReceiver(), await startWebhookReceiver()];
  });
  after(async () => {
    await canary?.close();
    await regular?.close();
  });
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: 'sk-keys-api-upstream-0123456789', WH_SECRET: SECRET },
    configFile: {
      name: 'keys-events.json',
      text: () =>
        JSON.stringify({
          models: [
            {
              id: 'priced',
              upstream: 'default',
              upstream_model: 'gpt-4o-mini',
              pricing: { input_per_million: 1000, output_per_million: 2000 },
            },
          ],
          default_upstream: 'default',
          webhooks: {
            allow_private_addresses: true,
            poll_interval_ms: 50,
            subscriptions: [
              {
                id: 'canary-rx',
                url: started(canary, 'canary').url,
                secrets: [{ env: 'WH_SECRET' }],
                events: ['*'],
                canary: true,
              },
              {
                id: 'regular-rx',
                url: started(regular, 'regular').url,
                secrets: [{ env: 'WH_SECRET' }],
                events: ['*'],
              },
            ],
          },
        }),
    },
  });
  const admin = (method: string, query = '', body?: unknown, headers: Record<string, string> = {}) =>
    call(fixture.url(`${KEYS}${query}`), {
      method,
      headers: authHeaders(headers),
      disclosesKey: method === 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const events = (rx: WebhookReceiver | undefined) =>
    started(rx, 'receiver').deliveries.map((d) => verifyWebhook({ body: d.body, headers: d.headers, secret: SECRET }));

  test('Idempotency-Key: a retried create answers the same key, secret included, and creates nothing more; the store holds no secret', async () => {
    const idempotencyKey = `create-${randomUUID()}`;
    const rights = { name: `idem-${randomUUID().slice(0, 8)}`, models: ['*'] };
    const first = await admin('POST', '', rights, { 'idempotency-key': idempotencyKey });
    assert.equal(first.status, 201);
    const retry = await admin('POST', '', rights, { 'idempotency-key': idempotencyKey });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.json, first.json, 'the same answer, the secret included');
    const list = (await admin('GET', '&limit=200')).json as { data: ShownKey[] };
    assert.equal(list.data.filter((k) => k.name === rights.name).length, 1, 'one key, not two');

    const secret = (first.json as unknown as ShownKey).key as string;
    const stored = JSON.stringify(fixture.gw.store.db.prepare('SELECT * FROM idempotency_keys').all());
    assert.ok(stored.includes('sealed.v1.'), 'the answer is kept, sealed');
    const randomPart = /^gwk_[a-z]+_[a-z0-9]+_(.+)$/.exec(secret)?.[1] ?? secret; // itself may hold '_'
    assert.ok(
      randomPart.length >= 40 && !stored.includes(secret) && !stored.includes(randomPart),
      'the secret is not readable in the store',
    );
    assert.ok(!stored.includes(idempotencyKey), 'nor is the Idempotency-Key that opens it');
    assert.ok(
      !stored.includes(createHash('sha256').update(idempotencyKey).digest('hex')),
      'nor its plain hash: a guessable key cannot be tried against the store',
    );

    // A refusal that describes the request is replayed too (with its code in the access line).
    const missingKey = `rotate-missing-${randomUUID()}`;
    const missing = await admin('POST', '&id=nosuchkey00&action=rotate', {}, { 'idempotency-key': missingKey });
    const missingAgain = await admin('POST', '&id=nosuchkey00&action=rotate', {}, { 'idempotency-key': missingKey });
    assert.deepEqual(
      [missing.status, missingAgain.status, missingAgain.headers['idempotent-replayed']],
      [404, 404, 'true'],
    );
    assert.deepEqual(missingAgain.json, missing.json);
    const replayLine = await waitForValue(
      'the access line of the replayed refusal',
      () =>
        fixture.gw.logLines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.request_id === missingAgain.headers['x-request-id'] && l.msg === 'request'),
      (line) => line !== undefined,
    );
    assert.equal(replayLine?.code, 'key_not_found');

    const other = await admin('POST', '', { ...rights, name: 'something else' }, { 'idempotency-key': idempotencyKey });
    assert.equal(other.status, 422, 'the same key with another body');
    assert.equal((other.json as { code: string }).code, 'idempotency_key_mismatch');

    const key = first.json as unknown as ShownKey;
    const rotateKey = `rotate-${randomUUID()}`;
    const rotated = await admin(
      'POST',
      `&id=${key.id}&action=rotate`,
      { grace_seconds: 60 },
      { 'idempotency-key': rotateKey },
    );
    const rotatedAgain = await admin(
      'POST',
      `&id=${key.id}&action=rotate`,
      { grace_seconds: 60 },
      { 'idempotency-key': rotateKey },
    );
    assert.equal(rotated.status, 201);
    assert.deepEqual(rotatedAgain.json, rotated.json, 'a retried rotation answers the same new key');
    const after = (await admin('GET', '&limit=200')).json as { data: ShownKey[] };
    assert.equal(after.data.filter((k) => k.rotated_from === key.id).length, 1, 'rotated once');
  });

  test('key.created, key.updated, key.rotated and key.revoked are signed events, in the canary stage: only canary receivers get them', async () => {
    const created = (await admin('POST', '', { name: `events-${randomUUID().slice(0, 8)}`, models: ['*'] }))
      .json as unknown as ShownKey;
    await admin('PATCH', `&id=${created.id}`, { models: ['priced'] });
    const rotated = (await admin('POST', `&id=${created.id}&action=rotate`, { grace_seconds: 0 }))
      .json as unknown as ShownKey;
    await admin('DELETE', `&id=${rotated.id}`);
    await admin('DELETE', `&id=${rotated.id}`); // again: no change, no event
    const mine = () =>
      events(canary).filter((e) => [created.id, rotated.id].includes((e.data as { key: { id: string } }).key.id));
    await waitForValue('four key events', mine, (list) => list.length >= 4);
    const got = mine();
    // Deliveries run concurrently (max_concurrency): they may arrive in any order.
    assert.deepEqual(got.map((e) => e.event).sort(), ['key.created', 'key.revoked', 'key.rotated', 'key.updated']);
    const updated = got.find((e) => e.event === 'key.updated')?.data as { changed: string[]; key: ShownKey };
    assert.deepEqual([updated.changed, updated.key.models], [['models'], ['priced']]);
    const [c, r, v] = ['key.created', 'key.rotated', 'key.revoked'].map(
      (kind) => got.find((e) => e.event === kind)?.data as { key: ShownKey; previous?: ShownKey; by: string },
    );
    assert.deepEqual(
      [c?.key.id, c?.by, r?.key.id, r?.previous?.id, v?.key.state],
      [created.id, 'admin', rotated.id, created.id, 'revoked'],
    );
    for (const event of got) assert.ok(!JSON.stringify(event).includes('gwk_'), 'never the secret');

    // The regular receiver gets events in the `all` stage (chat.completed), never the canary-stage key events.
    await call(fixture.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { ...authHeaders(), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await waitForValue(
      'a chat event at the regular receiver',
      () => events(regular),
      (list) => list.some((e) => e.event === 'chat.completed'),
    );
    assert.deepEqual(
      events(regular).filter((e) => e.event.startsWith('key.')),
      [],
    );
  });

  test('usage and spend of a key for a period, and what is left of its budget', async () => {
    const key = (
      await admin('POST', '', {
        name: `spender-${randomUUID().slice(0, 8)}`,
        models: ['*'],
        budget: { tokens: 100_000, cost_usd: 5, period_seconds: 3600 },
      })
    ).json as unknown as ShownKey;
    const chat = () =>
      call(fixture.url('/v1/chat/completions'), {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'count my tokens' }] }),
      });
    const answers = [await chat(), await chat()];
    const used = answers.reduce(
      (sum, a) => sum + (a.json as unknown as { usage: { total_tokens: number } }).usage.total_tokens,
      0,
    );
    const cost = answers.reduce((sum, a) => {
      const u = (a.json as unknown as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
      return sum + (u.prompt_tokens * 1000 + u.completion_tokens * 2000) / 1e6;
    }, 0);
    const report = (await admin('GET', `&id=${key.id}&action=usage`)).json as Record<string, unknown> & {
      budget: Record<string, number>;
    };
    assert.equal(report.object, 'key.usage');
    assert.deepEqual([report.requests, report.errors, report.total_tokens], [2, 0, used]);
    assert.ok(Math.abs((report.cost_usd as number) - cost) < 1e-9, `${report.cost_usd} vs ${cost}`);
    assert.deepEqual(
      [report.budget.period_seconds, report.budget.tokens_used, report.budget.tokens_left],
      [3600, used, 100_000 - used],
    );
    assert.ok(Math.abs((report.budget.cost_left_usd ?? Number.NaN) - (5 - cost)) < 1e-9);

    const past = (await admin('GET', `&id=${key.id}&action=usage&from=2020-01-01&to=2020-02-01`)).json as Record<
      string,
      unknown
    >;
    assert.deepEqual(
      [past.requests, past.total_tokens, past.from, past.to],
      [0, 0, '2020-01-01T00:00:00.000Z', '2020-02-01T00:00:00.000Z'],
    );
    const bad = await admin('GET', `&id=${key.id}&action=usage&from=yesterday`);
    assert.equal(bad.status, 400);
    assert.equal((bad.json as { details: { parameter: string } }).details.parameter, 'from');
    assert.equal(
      (await admin('GET', `&id=${key.id}&action=usage&from=2026-02-01&to=2026-01-01`)).status,
      400,
      'from after to',
    );
    assert.equal((await admin('GET', '&id=nosuchkey00&action=usage')).status, 404);
  });
});
