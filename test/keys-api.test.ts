import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders } from './helpers/gateway.js';
import { call } from './helpers/http.js';
import { useMockedGateway } from './helpers/mocked-gateway.js';
import { waitForValue } from './helpers/wait.js';

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
  const fixture = useMockedGateway({ env: { UPSTREAM_API_KEY: 'sk-keys-api-upstream-0123456789' } });
  // POST creates or rotates: its answer shows the new secret, once, by design.
  const admin = (method: string, query = '', body?: unknown) =>
    call(fixture.url(`${KEYS}${query}`), { method, headers: authHeaders(), disclosesKey: method === 'POST', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const chatWith = (key: string) =>
    call(fixture.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
    });

  test('create: the secret once, in that answer only; the key works with its rights; every change is an audit line', async () => {
    const created = await admin('POST', '', { name: 'team-a', models: ['*'], routes: ['chat'], limits: { requests_per_minute: 100 } });
    assert.equal(created.status, 201);
    const key = created.json as unknown as ShownKey;
    assert.match(key.key ?? '', /^gwk_dev_[A-Za-z0-9]+_/);
    assert.deepEqual([key.name, key.state, key.routes, key.models, key.limits], ['team-a', 'active', ['chat'], ['*'], { requests_per_minute: 100 }]);
    assert.equal((await chatWith(key.key as string)).status, 200);

    const got = (await admin('GET', `&id=${key.id}`)).json as unknown as ShownKey & { hash?: string };
    assert.equal(got.key, undefined, 'the secret is never shown again');
    assert.equal(got.hash, undefined, 'nor its hash');
    assert.equal(got.id, key.id);
    const line = fixture.gw.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.audit === 'key.created');
    assert.deepEqual([line?.key_id, line?.by], [key.id, 'admin']);
    assert.ok(!fixture.gw.logLines.some((l) => l.includes(key.key as string)), 'the secret is never logged');
  });

  test('change rights (null removes), rotate with a grace period, revoke; the old and revoked keys stop working', async () => {
    const key = (await admin('POST', '', { name: 'team-b', models: ['gpt-4o-mini'], budget: { tokens: 1000, period_seconds: 86400 } })).json as unknown as ShownKey;
    const changed = (await admin('PATCH', `&id=${key.id}`, { routes: ['chat', 'models'], budget: null })).json as unknown as ShownKey;
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
    assert.deepEqual([(again.json as { code: string }).code, (again.json as { details: { state: string } }).details.state], ['key_not_active', 'expired']);

    const revoked = (await admin('DELETE', `&id=${next.id}`)).json as unknown as ShownKey;
    assert.equal(revoked.state, 'revoked');
    assert.ok(revoked.revoked_at);
    // A revocation takes effect within the key cache (5 s by default).
    await waitForValue('the revoked key refused', async () => (await chatWith(next.key as string)).status, (status) => status === 401);
    assert.equal((await admin('PATCH', `&id=${next.id}`, { name: 'x' })).status, 409, 'a revoked key cannot be changed');
  });

  test('list pages with next_token and filters by state', async () => {
    for (const name of ['p1', 'p2', 'p3']) await admin('POST', '', { name, models: ['*'] });
    const seen: ShownKey[] = [];
    let token: string | undefined;
    do {
      const page = (await admin('GET', `&limit=2${token ? `&next_token=${token}` : ''}`)).json as { data: ShownKey[]; next_token?: string };
      assert.ok(page.data.length <= 2);
      seen.push(...page.data);
      token = page.next_token;
    } while (token !== undefined);
    assert.equal(new Set(seen.map((k) => k.id)).size, seen.length, 'no key twice');
    assert.ok(['p1', 'p2', 'p3'].every((n) => seen.some((k) => k.name === n)));
    const active = (await admin('GET', '&state=active&limit=200')).json as { data: ShownKey[] };
    assert.ok(active.data.every((k) => k.state === 'active'));
    const revoked = (await admin('GET', '&state=revoked&limit=200')).json as { data: ShownKey[] };
    assert.ok(revoked.data.every((k) => k.state === 'revoked'));
  });

  test('bad input names each field; an unknown id is a 404; a scoped key cannot manage keys', async () => {
    const bad = await admin('POST', '', { name: '', models: [], routes: ['keys', 'chat'], limits: { rpm: 5 }, expires_at: 'tomorrow' });
    assert.equal(bad.status, 400);
    const fields = (bad.json as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field);
    for (const field of ['name', 'models', 'limits', 'expires_at']) assert.ok(fields.some((f) => f.includes(field)), `${field} in ${JSON.stringify(fields)}`);
    const routes = await admin('POST', '', { name: 'x', models: ['*'], routes: ['keys'] });
    assert.equal(routes.status, 400);
    assert.deepEqual((routes.json as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field), ['routes'], 'the keys route cannot be granted');
    const past = await admin('POST', '', { name: 'x', models: ['*'], expires_at: '2020-01-01T00:00:00Z' });
    assert.equal(past.status, 400);

    assert.equal((await admin('GET', '&id=nosuchkey00')).status, 404);
    assert.equal(((await admin('DELETE', '&id=nosuchkey00')).json as { code: string }).code, 'key_not_found');
    assert.equal((await admin('PATCH', '&id=nosuchkey00', {})).status, 400, 'an empty change names no field: refused');

    const scoped = (await admin('POST', '', { name: 'everything', models: ['*'], routes: ['chat', 'models', 'responses', 'messages', 'embeddings'] })).json as unknown as ShownKey;
    const refused = await call(fixture.url(KEYS), { headers: { authorization: `Bearer ${scoped.key}` } });
    assert.equal(refused.status, 403);
    assert.equal((refused.json as { code: string }).code, 'route_not_allowed');
  });
});
