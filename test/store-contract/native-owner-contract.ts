/** The contract every store of native-id owners passes (SQLite in memory, on a file, Redis). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { NativeOwnerStore } from '../../src/store/store-contract.js';

export interface NativeOwnerHarness {
  owners: NativeOwnerStore;
  close(): Promise<void>;
}

export function nativeOwnerContract(
  name: string,
  make: () => Promise<NativeOwnerHarness>,
  options: { skip?: string | undefined } = {},
): void {
  describe(`native owner store contract: ${name}`, { skip: options.skip }, () => {
    let harness: NativeOwnerHarness | undefined;
    const store = (): NativeOwnerStore => {
      assert.ok(harness);
      return harness.owners;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });
    const id = (prefix = 'resp') => `${prefix}_${randomUUID().replaceAll('-', '')}`;
    const T0 = 1_700_000_000_000;

    test('ids claimed by a caller are its own; unknown ids and another caller are not (the first such id is named)', async () => {
      const [r, m] = [id(), id('msg')];
      await store().claim('admin', [r, m], 60_000, T0);
      assert.equal(await store().firstNotOwned('admin', [r, m], T0 + 1), undefined);
      assert.equal(await store().firstNotOwned('key:b', [r], T0 + 1), r);
      const unknown = id();
      assert.equal(await store().firstNotOwned('admin', [r, unknown, m], T0 + 1), unknown);
      assert.equal(await store().firstNotOwned('admin', [], T0 + 1), undefined);
      await store().claim('admin', [], 60_000, T0); // nothing to do
    });

    test('callers are compared whole: a caller whose name shares a prefix owns nothing of the other', async () => {
      const r = id();
      await store().claim('key:ab', [r], 60_000, T0);
      assert.equal(await store().firstNotOwned('key:a', [r], T0), r);
      assert.equal(await store().firstNotOwned('key:abc', [r], T0), r);
      assert.equal(await store().firstNotOwned('key:ab', [r], T0), undefined);
    });

    test('the first live owner keeps an id: another caller claiming it changes nothing', async () => {
      const r = id();
      await store().claim('key:first', [r], 60_000, T0);
      await store().claim('key:second', [r], 60_000, T0 + 10);
      assert.equal(await store().firstNotOwned('key:first', [r], T0 + 20), undefined);
      assert.equal(await store().firstNotOwned('key:second', [r], T0 + 20), r);
    });

    test('an id expires after its ttl (on the caller-given clock); then anyone may claim it', async () => {
      const r = id();
      // A minute, not a second: Redis also drops the key by its own clock, which must not get there first.
      await store().claim('key:first', [r], 60_000, T0);
      assert.equal(await store().firstNotOwned('key:first', [r], T0 + 59_999), undefined);
      assert.equal(await store().firstNotOwned('key:first', [r], T0 + 60_000), r);
      await store().claim('key:second', [r], 60_000, T0 + 60_000);
      assert.equal(await store().firstNotOwned('key:second', [r], T0 + 60_001), undefined);
      assert.equal(await store().firstNotOwned('key:first', [r], T0 + 60_001), r);
    });

    test('many ids in one claim (past one command of Redis), and in one check', async () => {
      const ids = Array.from({ length: 600 }, () => id('msg'));
      await store().claim('admin', ids, 60_000, T0);
      assert.equal(await store().firstNotOwned('admin', ids, T0 + 1), undefined);
      const stranger = id();
      assert.equal(await store().firstNotOwned('admin', [...ids, stranger], T0 + 1), stranger);
    });

    test('bad time arguments are refused before anything is written', async () => {
      await assert.rejects(store().claim('admin', [id()], 0, T0), RangeError);
      await assert.rejects(store().claim('admin', [id()], 60_000, Number.NaN), RangeError);
    });
  });
}
