/** The contract every scoped-key backend passes. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ApiKeyPatch, ApiKeyRecord, KeyStore } from '../../src/store/store-contract.js';

export function keyStoreContract(name: string, make: () => Promise<{ keys: KeyStore; close(): Promise<void> }>): void {
  describe(`key store contract: ${name}`, () => {
    let harness: { keys: KeyStore; close(): Promise<void> } | undefined;
    const store = (): KeyStore => {
      assert.ok(harness);
      return harness.keys;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });
    const record = (over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
      keyId: randomUUID().replaceAll('-', '').slice(0, 10),
      environment: 'dev',
      name: 'team',
      hash: 'ab'.repeat(32),
      routes: ['chat'],
      models: ['fast'],
      limits: { requests_per_minute: 5 },
      budget: { tokens: 1000, period_seconds: 86_400 },
      createdMs: 1_700_000_000_000,
      ...over,
    });

    test('a created key reads back field for field; an unknown id is undefined', async () => {
      const r = record();
      await store().create(r);
      assert.deepEqual(await store().get(r.keyId), r);
      assert.equal(await store().get('nosuchkey0'), undefined);
    });

    test('a key id cannot be created twice', async () => {
      const r = record();
      await store().create(r);
      await assert.rejects(store().create({ ...r, name: 'other' }));
      assert.equal((await store().get(r.keyId))?.name, 'team');
    });

    test('update sets expiry and revocation and keeps the rest; unknown ids say false', async () => {
      const r = record();
      await store().create(r);
      assert.equal(await store().update(r.keyId, { expiresMs: 5, revokedMs: 6 }), true);
      assert.deepEqual(await store().get(r.keyId), { ...r, expiresMs: 5, revokedMs: 6 });
      assert.equal(await store().update('nosuchkey0', { revokedMs: 1 }), false);
    });

    test("update never changes a key's id, hash, environment or creation time, whatever the patch holds", async () => {
      const r = record();
      await store().create(r);
      const sneaky = { name: 'renamed', keyId: 'otherid000', hash: 'cd'.repeat(32), environment: 'prod', createdMs: 1 };
      assert.equal(await store().update(r.keyId, sneaky as ApiKeyPatch), true);
      assert.deepEqual(await store().get(r.keyId), { ...r, name: 'renamed' });
      assert.equal(await store().get('otherid000'), undefined);
    });

    test('list returns every key', async () => {
      const a = record();
      const b = record();
      await store().create(a);
      await store().create(b);
      const ids = (await store().list()).map((k) => k.keyId);
      assert.ok(ids.includes(a.keyId) && ids.includes(b.keyId));
    });
  });
}
