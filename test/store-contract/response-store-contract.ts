/** The contract every store of Responses API responses passes (SQLite in memory, on a file, Redis). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ResponseStore, StoredConversationTurn } from '../../src/store/contract.js';

export interface ResponseStoreHarness {
  responses: ResponseStore;
  close(): Promise<void>;
}

export function responseStoreContract(name: string, make: () => Promise<ResponseStoreHarness>, options: { skip?: string | undefined } = {}): void {
  describe(`response store contract: ${name}`, { skip: options.skip }, () => {
    let harness: ResponseStoreHarness | undefined;
    const store = (): ResponseStore => {
      assert.ok(harness);
      return harness.responses;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });
    const turn = (text: string): StoredConversationTurn => ({
      response: JSON.stringify({ id: 'resp_x', text }),
      inputItems: JSON.stringify([{ id: 'msg_1', text }]),
      conversation: JSON.stringify([{ role: 'user', content: text }]),
    });
    const id = () => `resp_${randomUUID().replaceAll('-', '')}`;
    const T0 = 1_700_000_000_000;

    test('a stored turn reads back byte for byte for its caller; an unknown id is undefined', async () => {
      const r = id();
      await store().put('admin', r, turn('héllo 👋'), 60_000, T0);
      assert.deepEqual(await store().get('admin', r, T0 + 1), turn('héllo 👋'));
      assert.equal(await store().get('admin', id(), T0 + 1), undefined);
    });

    test('callers are apart: another caller, even one whose name shares a prefix, neither reads nor deletes it', async () => {
      const r = id();
      await store().put('key:ab', r, turn('mine'), 60_000, T0);
      assert.equal(await store().get('key:a', r, T0), undefined);
      assert.equal(await store().get('key:abc', r, T0), undefined);
      assert.equal(await store().delete('key:a', r, T0), false);
      assert.deepEqual(await store().get('key:ab', r, T0), turn('mine'));
    });

    test('it expires after its ttl (on the caller-given clock); an expired one cannot be deleted', async () => {
      const r = id();
      await store().put('admin', r, turn('short'), 1_000, T0);
      assert.ok(await store().get('admin', r, T0 + 999));
      assert.equal(await store().get('admin', r, T0 + 1_000), undefined);
      assert.equal(await store().delete('admin', r, T0 + 1_000), false);
    });

    test('delete removes it once: true, then false; writing the same id again replaces it', async () => {
      const r = id();
      await store().put('admin', r, turn('one'), 60_000, T0);
      await store().put('admin', r, turn('two'), 60_000, T0);
      assert.deepEqual(await store().get('admin', r, T0), turn('two'));
      assert.equal(await store().delete('admin', r, T0), true);
      assert.equal(await store().delete('admin', r, T0), false);
      assert.equal(await store().get('admin', r, T0), undefined);
    });

    test('many puts at once (one burst, more than one multi-row group) are each stored and each readable', async () => {
      const ids = Array.from({ length: 41 }, () => id());
      await Promise.all(ids.map((r, i) => store().put(`caller-${i % 3}`, r, turn(`n${i}`), 60_000, T0)));
      const read = await Promise.all(ids.map((r, i) => store().get(`caller-${i % 3}`, r, T0)));
      assert.deepEqual(read, ids.map((_, i) => turn(`n${i}`)));
    });

    test('bad arguments are rejections, not synchronous throws', async () => {
      await assert.rejects(store().put('admin', id(), turn('x'), -1, T0));
      await assert.rejects(store().get('admin', id(), Number.NaN));
    });
  });
}
