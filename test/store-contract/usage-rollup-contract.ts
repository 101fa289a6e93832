/**
 * The contract of usage rollups every usage backend passes (docs/usage.md, "Retention"): records rolled into their
 * hours leave every report's totals as they were; a roll is one transaction (a failure between the roll and the
 * delete changes nothing); concurrent rolls never take a record twice; the footprint counts every write.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { UsageFootprint, UsageRecord, UsageStore } from '../../src/store/store-contract.js';
import { HOUR_MS, RECORD_OVERHEAD_BYTES, type Dialect } from '../../src/store/usage-rollup-sql.js';
import { summarizeTimeline } from '../../src/dashboard/overview.js';
import { USAGE_H0, variedRecords } from '../helpers/usage-fixtures.js';

export { variedRecords };

export interface RollupHarness {
  usage: UsageStore;
  dialect: Dialect;
  /** Another store on the same tables (another connection pool or handle: another instance or process). */
  another(): Promise<UsageStore>;
  /** Makes every DELETE from the records table fail until the returned function is called. */
  refuseDeletes(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const H0 = USAGE_H0;

/**
 * Every report a backend answers over [from, to): what must not change when records are rolled up. Timelines as
 * the dashboard reads them (src/dashboard/overview.ts `summarizeTimeline`: per bucket, with percentiles from the
 * latency bins), hourly and daily.
 */
export async function reports(store: UsageStore, from: number, to: number) {
  const day = 24 * HOUR_MS;
  const dayFrom = Math.floor(from / day) * day;
  return {
    model: await store.summarize('model', from, to),
    caller: await store.summarize('caller', from, to),
    route: await store.summarize('route', from, to),
    day: await store.summarize('day', from, to),
    keys: await store.summarizeCallers(['key:abc', 'key:déjà-vu', 'nobody'], from, to),
    hourly: summarizeTimeline(await store.timeline(from, to, HOUR_MS), from, HOUR_MS, Math.ceil((to - from) / HOUR_MS)),
    daily: summarizeTimeline(await store.timeline(dayFrom, to, day), dayFrom, day, Math.ceil((to - dayFrom) / day)),
  };
}

/** What a record is counted as against the size bound (src/store/usage-rollup-sql.ts), computed here in JS. */
export function recordBytes(r: UsageRecord, dialect: Dialect): number {
  const bytes = (s: string | null) => (s === null ? 0 : Buffer.byteLength(s));
  return (
    RECORD_OVERHEAD_BYTES[dialect] +
    bytes(r.requestId) +
    2 * bytes(r.caller) +
    bytes(r.environment) +
    bytes(r.route) +
    bytes(r.model) +
    bytes(r.upstream) +
    bytes(r.code)
  );
}

export function usageRollupContract(name: string, make: () => Promise<RollupHarness>): void {
  describe(`usage rollup contract: ${name}`, () => {
    let harness: RollupHarness | undefined;
    const h = (): RollupHarness => {
      assert.ok(harness);
      return harness;
    };
    const store = () => h().usage;
    const END = H0 + 5 * HOUR_MS;
    const empty = async () => {
      await store().purge(Number.MAX_SAFE_INTEGER);
      await store().purgeHours(Number.MAX_SAFE_INTEGER);
      assert.deepEqual(await store().footprint(), { records: 0, recordBytes: 0, hours: 0, hourBytes: 0 });
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });

    test('the footprint counts each stored record (texts in UTF-8 bytes plus the overhead) and each delete', async () => {
      await empty();
      const records = variedRecords(40, 'f');
      await store().append(records.slice(0, 25));
      await store().append(records.slice(25));
      const expected = records.reduce((n, r) => n + recordBytes(r, h().dialect), 0);
      assert.deepEqual(await store().footprint(), { records: 40, recordBytes: expected, hours: 0, hourBytes: 0 });
      assert.equal(await store().purge(H0 + HOUR_MS), 10, 'the first hour’s records');
      const left = records.filter((r) => r.timeMs >= H0 + HOUR_MS);
      assert.deepEqual(await store().footprint(), {
        records: 30,
        recordBytes: left.reduce((n, r) => n + recordBytes(r, h().dialect), 0),
        hours: 0,
        hourBytes: 0,
      });
    });

    test('rolling the oldest records, step by step, changes no report: summaries, key usage, timelines', async () => {
      await empty();
      const records = variedRecords(600);
      await store().append(records);
      const before = await reports(store(), H0, END);
      assert.equal(
        before.model.reduce((n, r) => n + r.requests, 0),
        600,
      );
      let rolled = 0;
      let last: UsageFootprint = await store().footprint();
      for (;;) {
        const n = await store().rollOldest(70);
        if (n === 0) break;
        rolled += n;
        const now = await store().footprint();
        assert.equal(now.records, 600 - rolled);
        assert.ok(now.recordBytes < last.recordBytes && now.hours >= last.hours && now.hourBytes > 0);
        last = now;
        assert.deepEqual(await reports(store(), H0, END), before, `after ${rolled} records rolled`);
      }
      assert.equal(rolled, 600);
      assert.deepEqual(await store().recent(10, false), [], 'no raw record is left');
      assert.deepEqual(await store().stored(undefined, 10), []);
      // Far fewer rollup rows than records: one per hour, caller, model, route, upstream and latency bin seen.
      assert.ok(last.hours > 0 && last.hours < 600, `${last.hours} rollup rows`);
      assert.equal(last.recordBytes, 0);
      // Rolled again: new records for hours already rolled are added to the same rows.
      const more = variedRecords(600, 'w');
      await store().append(more);
      await store().rollOldest(1_000);
      assert.equal((await store().footprint()).hours, last.hours, 'the same keys: no new rollup row');
      const twice = await reports(store(), H0, END);
      assert.deepEqual(
        twice.model.map((r) => [r.group, r.requests, r.errors]),
        before.model.map((r) => [r.group, 2 * r.requests, 2 * r.errors]),
      );
    });

    test('a range that starts inside a rolled hour counts that hour whole; one that starts on the hour is exact', async () => {
      await empty();
      const records = variedRecords(200);
      await store().append(records);
      const inside = H0 + HOUR_MS + 30 * 60_000;
      const raw = await store().summarize('route', inside, END);
      assert.equal(
        raw.reduce((n, r) => n + r.requests, 0),
        records.filter((r) => r.timeMs >= inside).length,
      );
      const onTheHour = await store().summarize('route', H0 + HOUR_MS, END);
      await store().rollOldest(1_000);
      assert.deepEqual(await store().summarize('route', H0 + HOUR_MS, END), onTheHour);
      assert.equal(
        (await store().summarize('route', inside, END)).reduce((n, r) => n + r.requests, 0),
        records.filter((r) => r.timeMs >= H0 + HOUR_MS).length,
        'never less than asked for',
      );
      // The timeline (15-minute buckets, as the dashboard's day) puts an hour that began before `from` in its first bucket.
      const quarter = await store().timeline(inside, END, 15 * 60_000);
      assert.equal(quarter[0]?.bucketMs, inside);
      assert.equal(
        quarter.filter((r) => r.bucketMs === inside).reduce((n, r) => n + r.requests, 0),
        records.filter((r) => r.timeMs >= H0 + HOUR_MS && r.timeMs < H0 + 2 * HOUR_MS).length,
      );
    });

    test('a roll that fails between adding to the hours and deleting the records changes nothing (one transaction)', async () => {
      await empty();
      await store().append(variedRecords(300));
      const before = await reports(store(), H0, END);
      const footprint = await store().footprint();
      const allow = await h().refuseDeletes();
      try {
        await assert.rejects(store().rollOldest(100));
        await assert.rejects(store().rollOldest(100));
      } finally {
        await allow();
      }
      assert.deepEqual(await store().footprint(), footprint, 'no hour added, no record gone, counts unchanged');
      assert.deepEqual(await reports(store(), H0, END), before, 'nothing counted twice');
      assert.equal(await store().rollOldest(100), 100);
      assert.deepEqual(await reports(store(), H0, END), before);
    });

    test('rolls from two stores at once (two instances) never take a record twice', async () => {
      await empty();
      await store().append(variedRecords(2_000));
      const before = await reports(store(), H0, END);
      const other = await h().another();
      const drain = async (s: UsageStore) => {
        let n = 0;
        for (let k = await s.rollOldest(50); k > 0; k = await s.rollOldest(50)) n += k;
        return n;
      };
      const [a, b] = await Promise.all([drain(store()), drain(other)]);
      assert.equal(a + b, 2_000, `${a} + ${b}`);
      assert.deepEqual(await reports(store(), H0, END), before);
      assert.equal((await store().footprint()).records, 0);
    });

    test('an hour × caller × environment keeps 64 models: the others roll into (other), totals exact, the bytes counted as stored', async () => {
      await empty();
      const [first] = variedRecords(1);
      assert.ok(first);
      const one = (i: number, model: string, caller = 'key:many') => ({
        ...first,
        requestId: `m${i}`,
        caller,
        timeMs: H0 + i * 1_000,
        model,
        promptTokens: i,
        costUsd: 0.5,
      });
      // 100 models in the first hour, rolled in steps of 30; another caller's 3 models in the same hour.
      await store().append(Array.from({ length: 100 }, (_, i) => one(i, `model-${String(i).padStart(3, '0')}`)));
      await store().append(['a', 'b', 'c'].map((m, i) => one(200 + i, m, 'key:abc')));
      const before = await store().summarize('caller', H0, END);
      while ((await store().rollOldest(30)) > 0);
      assert.deepEqual(
        await store().summarize('caller', H0, END),
        before,
        'requests, tokens and cost per caller exact',
      );
      const models = await store().summarize('model', H0, END);
      const named = models.filter((r) => r.group.startsWith('model-'));
      assert.deepEqual(
        named.map((r) => r.group),
        Array.from({ length: 64 }, (_, i) => `model-${String(i).padStart(3, '0')}`),
        'the first 64 by name, in the order they were rolled',
      );
      assert.equal(models.find((r) => r.group === '(other)')?.requests, 36);
      assert.deepEqual(
        models.filter((r) => ['a', 'b', 'c'].includes(r.group)).map((r) => r.requests),
        [1, 1, 1],
        'another caller keeps its own models',
      );
      // A model the hour already keeps keeps its name; a new one goes to (other), as does the name "(other)".
      await store().append([one(300, 'model-010'), one(301, 'model-999'), one(302, '(other)')]);
      while ((await store().rollOldest(30)) > 0);
      const again = await store().summarize('model', H0, END);
      assert.equal(again.find((r) => r.group === 'model-010')?.requests, 2);
      assert.equal(again.find((r) => r.group === '(other)')?.requests, 38);
      assert.equal(
        again.find((r) => r.group === 'model-999'),
        undefined,
      );
      // Another hour starts again from none.
      await store().append([one(3_700, 'model-999')]);
      await store().rollOldest(10);
      assert.equal((await store().summarize('model', H0, END)).find((r) => r.group === 'model-999')?.requests, 1);
      // What the rolls counted is what deleting the rows takes away: the count returns to zero exactly.
      await store().purgeHours(Number.MAX_SAFE_INTEGER);
      assert.deepEqual(await store().footprint(), { records: 0, recordBytes: 0, hours: 0, hourBytes: 0 });
    });

    test('purgeHours: hours that ended by the cut-off go, the hour holding it stays; the footprint returns to zero', async () => {
      await empty();
      await store().append(variedRecords(400));
      await store().rollOldest(1_000);
      const hoursOf = async () => (await store().timeline(H0, END, HOUR_MS)).map((r) => r.bucketMs);
      assert.deepEqual(
        [...new Set(await hoursOf())],
        [0, 1, 2, 3].map((i) => H0 + i * HOUR_MS),
      );
      const cut = H0 + 2 * HOUR_MS + 1;
      assert.equal(await store().purgeHours(cut, 1), 2, 'at most the limit of each table (hours, latency bins)');
      await store().purgeHours(cut);
      assert.deepEqual([...new Set(await hoursOf())], [H0 + 2 * HOUR_MS, H0 + 3 * HOUR_MS]);
      await store().purgeHours(Number.MAX_SAFE_INTEGER);
      assert.deepEqual(await store().footprint(), { records: 0, recordBytes: 0, hours: 0, hourBytes: 0 });
    });
  });
}
