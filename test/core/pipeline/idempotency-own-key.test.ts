/**
 * Issue 29: an Idempotency-Key's request includes the caller's own provider key (X-Upstream-Key), as the response
 * cache's key does: the same Idempotency-Key and body with another provider key (or none) is another request, a
 * 422, never a replay of an answer another provider account paid for. The provider key is kept only hashed.
 * Real sockets: the real gateway in front of a real mock upstream.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, CHAT_PATH, chatBody, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';

const KEY_A = 'sk-tenant-a-provider-key-0123456789abcdef';
const KEY_B = 'sk-tenant-b-provider-key-fedcba9876543210';

describe('Idempotency-Key and X-Upstream-Key', () => {
  const fixture = useGateway();
  const send = (path: string, body: string, headers: Record<string, string>) =>
    call(fixture.url(path), { method: 'POST', headers: authHeaders(headers), body });

  for (const { route, path, body, upstreamPath } of [
    { route: 'chat', path: CHAT_PATH, body: chatBody(), upstreamPath: '/v1/chat/completions' },
    {
      route: 'embeddings',
      path: '/v1/embeddings',
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
      upstreamPath: '/v1/embeddings',
    },
  ]) {
    test(`${route}: the same key with another provider key, or none, is a 422; with the first one, a replay`, async () => {
      const upstreamCalls = () => fixture.mock.requests.filter((r) => r.path === upstreamPath);
      const idempotencyKey = `own-key-${route}`;
      const first = await send(path, body, { 'idempotency-key': idempotencyKey, 'x-upstream-key': KEY_A });
      assert.equal(first.status, 200);
      assert.equal(upstreamCalls()[0]?.headers.authorization, `Bearer ${KEY_A}`);

      for (const other of [{ 'x-upstream-key': KEY_B }, {}] as Array<Record<string, string>>) {
        const refused = await send(path, body, { 'idempotency-key': idempotencyKey, ...other });
        assert.equal(refused.status, 422, JSON.stringify(Object.keys(other)));
        assert.equal(refused.json.code, 'idempotency_key_mismatch');
        assert.notEqual(refused.headers['idempotent-replayed'], 'true');
        assert.ok(!refused.text.includes(first.text), "never the other account's answer");
      }
      const again = await send(path, body, { 'idempotency-key': idempotencyKey, 'x-upstream-key': KEY_A });
      assert.equal(again.status, 200);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.text, first.text);
      assert.equal(upstreamCalls().length, 1, 'one upstream call in all');
    });
  }

  test('a header that changes the answer (X-Context-Overflow) is part of the request too; the provider key is stored only hashed', async () => {
    const first = await send(CHAT_PATH, chatBody(), {
      'idempotency-key': 'own-key-overflow',
      'x-context-overflow': 'truncate',
    });
    assert.equal(first.status, 200);
    const refused = await send(CHAT_PATH, chatBody(), {
      'idempotency-key': 'own-key-overflow',
      'x-context-overflow': 'error',
    });
    assert.equal(refused.status, 422);
    const rows = fixture.gw.store.db
      .prepare('SELECT scope, key, fingerprint, response FROM idempotency_keys')
      .all() as Array<Record<string, unknown>>;
    assert.ok(rows.length > 0);
    const stored = JSON.stringify(rows);
    for (const key of [KEY_A, KEY_B])
      assert.ok(
        !stored.includes(key) && !stored.includes(key.slice(3, 20)),
        'no provider key in the idempotency store',
      );
  });
});
