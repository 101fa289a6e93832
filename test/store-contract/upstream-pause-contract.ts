/** The contract every upstream-pause backend passes: pauses grow, end on time, and are per scope. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { UpstreamPauseStore } from '../../src/store/store-contract.js';

export interface UpstreamPauseHarness {
  pauses: UpstreamPauseStore;
  close(): Promise<void>;
}

export function upstreamPauseContract(name: string, make: () => Promise<UpstreamPauseHarness>): void {
  describe(`upstream pause contract: ${name}`, () => {
    let harness: UpstreamPauseHarness | undefined;
    const store = (): UpstreamPauseStore => {
      assert.ok(harness);
      return harness.pauses;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });

    // Real clock values: a backend may expire keys on its own clock (Redis PX), so "now" must be now.
    test('an unknown scope is not paused; a pause lasts until its end, exclusive', async () => {
      const now = Date.now();
      assert.equal(await store().pausedUntil('fresh', now), undefined);
      await store().pause('p', now + 5_000, now);
      assert.equal(await store().pausedUntil('p', now), now + 5_000);
      assert.equal(await store().pausedUntil('p', now + 4_999), now + 5_000);
      assert.equal(await store().pausedUntil('p', now + 5_000), undefined, 'over at its end');
    });

    test('a pause only grows: an earlier end changes nothing, a later one extends', async () => {
      const now = Date.now();
      await store().pause('grow', now + 8_000, now);
      await store().pause('grow', now + 3_000, now);
      assert.equal(await store().pausedUntil('grow', now), now + 8_000);
      await store().pause('grow', now + 9_000, now);
      assert.equal(await store().pausedUntil('grow', now), now + 9_000);
    });

    test('a pause that already ended is not recorded; scopes are independent', async () => {
      const now = Date.now();
      await store().pause('past', now, now);
      await store().pause('past', now - 1_000, now);
      assert.equal(await store().pausedUntil('past', now - 5_000), undefined, 'nothing was written');
      await store().pause('a', now + 4_000, now);
      assert.equal(await store().pausedUntil('b', now), undefined);
    });

    test('list: the scopes paused now, latest end first, at most `limit`; ended ones are left out', async () => {
      const now = Date.now();
      const scope = (n: number) => `listed ${n} model`;
      await store().pause(scope(1), now + 6_000, now);
      await store().pause(scope(2), now + 9_000, now);
      await store().pause(scope(3), now + 3_000, now);
      const mine = (rows: Array<{ scope: string; untilMs: number }>) =>
        rows.filter((r) => r.scope.startsWith('listed '));
      assert.deepEqual(mine(await store().list(now, 1_000)), [
        { scope: scope(2), untilMs: now + 9_000 },
        { scope: scope(1), untilMs: now + 6_000 },
        { scope: scope(3), untilMs: now + 3_000 },
      ]);
      assert.deepEqual(
        mine(await store().list(now + 6_000, 1_000)),
        [{ scope: scope(2), untilMs: now + 9_000 }],
        'over at its end',
      );
      await store().pause(scope(3), now + 12_000, now);
      assert.deepEqual(
        (await store().list(now, 1)).map((r) => r.scope),
        [scope(3)],
        'extended, and the limit holds',
      );
    });
  });
}
