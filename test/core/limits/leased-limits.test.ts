import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeasedLimits } from '../../../src/core/limits/leased-limits.js';
import type {
  AdmissionLimit,
  AdmissionSettlement,
  AdmissionStore,
  LimitStore,
} from '../../../src/store/store-contract.js';
import { SqliteRateLimiter } from '../../../src/store/sqlite/sqlite-rate-limiter.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { waitFor } from '../../helpers/wait.js';

const MINUTE = 60_000;
const failOnStoreError = (error: unknown): void => assert.fail(`store error: ${String(error)}`);

/** The real SQLite limiter, counting the store steps the leasing layer makes. */
async function countingStore(): Promise<{
  store: AdmissionStore;
  inner: LimitStore;
  calls: { admit: number; settle: number };
  close(): Promise<void>;
}> {
  const sqlite = await openSqliteStore(':memory:');
  const inner = new SqliteRateLimiter(sqlite.db);
  const calls = { admit: 0, settle: 0 };
  const store: AdmissionStore = {
    admit: (limits: readonly AdmissionLimit[], token: string, now?: number) => {
      calls.admit++;
      return inner.admit(limits, token, now);
    },
    settle: (items: readonly AdmissionSettlement[], token: string, now?: number) => {
      calls.settle++;
      return inner.settle(items, token, now);
    },
  };
  return { store, inner, calls, close: () => sqlite.close() };
}

const rate = (key: string, limit: number, cost = 1): AdmissionLimit => ({
  kind: 'rate',
  key,
  limit,
  windowMs: MINUTE,
  cost,
});
const slots = (key: string, max: number): AdmissionLimit => ({ kind: 'concurrency', key, max, leaseMs: 60_000 });

describe('LeasedLimits: quota leasing in front of the shared limit store', () => {
  test('a large limit costs one store step per chunk, not per request; headers stay plausible', async () => {
    const s = await countingStore();
    const now = 1_700_000_000_000;
    const leased = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    // 60,000 per minute (1 ms per unit, so the store's arithmetic is exact): a 50 ms chunk is 50 units.
    const results = [];
    for (let i = 0; i < 3000; i++) results.push(await leased.admit([rate('big', 60_000)], `r${i}`));
    assert.ok(results.every((r) => r.admitted));
    assert.equal(s.calls.admit, Math.ceil(3000 / 51), '3000 requests: one purchase of 51 units per 51 requests');
    const last = results.at(-1)?.outcomes[0];
    assert.ok(last?.kind === 'rate');
    assert.equal(last.decision.limit, 60_000);
    assert.ok(
      last.decision.remaining >= 57_000 && last.decision.remaining <= 57_050,
      `remaining ${last.decision.remaining}`,
    );
    await leased.close();
    // Everything bought and not used went back: the shared bucket has exactly 3000 units taken.
    assert.equal((await s.inner.consume('big', 60_000, MINUTE, 60_000 - 3000, now)).allowed, true);
    assert.equal((await s.inner.consume('big', 60_000, MINUTE, 1, now)).allowed, false);
    await s.close();
  });

  test('two instances sharing one store never admit more than the limit in total', async () => {
    const s = await countingStore();
    const now = 1_700_000_000_000;
    const a = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    const b = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    // 2400 per minute: chunks of 2 units; 3000 attempts spread over both, interleaved and concurrent.
    const attempts = Array.from({ length: 3000 }, (_, i) =>
      (i % 2 === 0 ? a : b).admit([rate('shared', 2400)], `t${i}`),
    );
    const admitted = (await Promise.all(attempts)).filter((r) => r.admitted).length;
    assert.ok(admitted <= 2400, `admitted ${admitted}`);
    assert.ok(admitted >= 2400 - 4, `at most a chunk per instance held back: admitted ${admitted}`);
    assert.ok(s.calls.admit < 3000, `purchases are shared by waiting requests: ${s.calls.admit} store steps`);
    await a.close();
    await b.close();
    await s.close();
  });

  test('small limits bypass leasing: every request is decided in the store (exact)', async () => {
    const s = await countingStore();
    const leased = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError });
    for (let i = 0; i < 5; i++)
      assert.equal((await leased.admit([rate('small', 10), slots('few', 3)], `r${i}`)).admitted, i < 3);
    assert.equal(s.calls.admit, 5);
    await leased.close();
    await s.close();
  });

  test('units unused for idleReturnMs go back to the shared store by themselves', async () => {
    const s = await countingStore();
    let now = 1_700_000_000_000;
    const leased = new LeasedLimits({
      store: s.store,
      onStoreError: failOnStoreError,
      now: () => now,
      idleReturnMs: 20,
    });
    assert.equal((await leased.admit([rate('idle', 1_200_000)], 'r1')).admitted, true); // bought 1001, used 1
    now += 1_000;
    await waitFor('the sweep returned the rest', () => s.calls.settle >= 1, 2_000);
    assert.equal(s.calls.settle, 1, 'one settlement');
    // At `now` the one used unit has long refilled: the whole limit is free again, and not more.
    assert.equal((await s.inner.consume('idle', 1_200_000, MINUTE, 1_200_000, now)).allowed, true);
    await leased.close();
    await s.close();
  });

  test('token corrections stay local: units given back are used by the next requests', async () => {
    const s = await countingStore();
    const now = 1_700_000_000_000;
    const leased = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    // 120,000 tokens a minute: chunks of 100. Estimate 60, real use 10: 50 come back each time.
    for (let i = 0; i < 20; i++) {
      assert.equal((await leased.admit([rate('tok', 120_000, 60)], `r${i}`)).admitted, true);
      await leased.settle([{ kind: 'rate', key: 'tok', limit: 120_000, windowMs: MINUTE, delta: -50 }], `r${i}`);
    }
    assert.ok(s.calls.admit <= 3, `store steps: ${s.calls.admit}`);
    assert.equal(s.calls.settle, 0);
    // A correction beyond what is held is charged to the store at once (it never refuses).
    await leased.settle([{ kind: 'rate', key: 'tok', limit: 120_000, windowMs: MINUTE, delta: 10_000 }], 'big-user');
    assert.equal(s.calls.settle, 1);
    await leased.close();
    await s.close();
  });

  test('concurrency blocks: at most max in flight over two instances; released slots are reused locally', async () => {
    const s = await countingStore();
    const now = 1_700_000_000_000;
    const a = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    const b = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    const limits = [slots('cc', 40)]; // blocks of 2 slots
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).admit(limits, `c${i}`)));
    const inFlight = results
      .map((r, i) => ({ admitted: r.admitted, token: `c${i}`, by: i % 2 ? a : b }))
      .filter((r) => r.admitted);
    assert.ok(inFlight.length <= 40 && inFlight.length >= 36, `in flight ${inFlight.length}`);
    const before = s.calls.admit;
    for (const r of inFlight) await r.by.settle([{ kind: 'concurrency', key: 'cc' }], r.token);
    assert.equal(s.calls.settle, 0, 'releases are local');
    // The slots are still held by the instances: the next requests reuse them without the store.
    for (let i = 0; i < 10; i++) assert.equal((await a.admit(limits, `again${i}`)).admitted, true);
    assert.equal(s.calls.admit, before, 'no store step');
    for (let i = 0; i < 10; i++) await a.settle([{ kind: 'concurrency', key: 'cc' }], `again${i}`);
    await a.close();
    await b.close();
    // Closed instances returned every slot.
    assert.deepEqual(await s.inner.acquire('cc', 'probe', 1, 1000, now), { acquired: true, inFlight: 1 });
    await s.close();
  });

  test('a limit that may be overdrawn (need < cost) is served locally only when held units cover the cost, else by the store alone', async () => {
    const s = await countingStore();
    const now = 1_700_000_000_000;
    const leased = new LeasedLimits({ store: s.store, onStoreError: failOnStoreError, now: () => now });
    // 60,000 per minute (1 ms per unit). Another instance took all but 10 units.
    assert.equal((await s.inner.consume('owed', 60_000, MINUTE, 59_990, now)).allowed, true);
    const asked = { kind: 'rate' as const, key: 'owed', limit: 60_000, windowMs: MINUTE, cost: 500, need: 5 };
    assert.equal((await leased.admit([asked], 'a')).admitted, true, '5 units left in the store are enough');
    assert.equal(s.calls.admit, 1);
    // Exactly the call's cost was charged (no chunk bought on top of a debt): 490 units owed, so one unit is 491 ms away.
    assert.equal((await s.inner.consume('owed', 60_000, MINUTE, 1, now)).retryAfterMs, 491);
    assert.equal((await leased.admit([asked], 'b')).admitted, false, 'in debt: refused');
    // With units held locally that cover the cost, the call is served here without a store step.
    assert.equal((await leased.admit([rate('held', 60_000)], 'c')).admitted, true);
    const steps = s.calls.admit;
    assert.equal(
      (await leased.admit([{ kind: 'rate', key: 'held', limit: 60_000, windowMs: MINUTE, cost: 20, need: 2 }], 'd'))
        .admitted,
      true,
    );
    assert.equal(s.calls.admit, steps);
    await leased.close();
    await s.close();
  });

  /**
   * A store in front of the real SQLite limiter whose admissions naming `gatedKey` wait until `open()`: a store
   * step in flight for as long as the test wants. Counts the units of `counted` taken from the store (admitted
   * costs plus settled deltas), so a test can compare what was bought with what was admitted.
   */
  async function gatedStore(gatedKey: string, counted: string) {
    const s = await countingStore();
    let gate: Promise<void> | undefined;
    let open = () => {};
    const units = { taken: 0 };
    const store: AdmissionStore = {
      admit: async (limits, token, now) => {
        if (gate && limits.some((l) => l.key === gatedKey)) await gate;
        const result = await s.inner.admit(limits, token, now);
        if (result.admitted) for (const l of limits) if (l.kind === 'rate' && l.key === counted) units.taken += l.cost;
        return result;
      },
      settle: (items, token, now) => {
        for (const i of items) if (i.kind === 'rate' && i.key === counted) units.taken += i.delta;
        return s.inner.settle(items, token, now);
      },
    };
    return {
      store,
      inner: s.inner,
      units,
      close: s.close,
      closeGate() {
        gate = new Promise<void>((resolve) => (open = resolve));
      },
      openGate: () => open(),
    };
  }

  test('a held lease stays with an admission that waits for the store: the idle sweep cannot take it (issue 41)', async () => {
    // On main: the request planned its held units of `big` as local, waited for the store (its `small` limit),
    // the idle sweep returned the lease meanwhile, and the admission failed with "a local rate step without a
    // lease" (which the service then took for a store outage and let the call through unchecked).
    const g = await gatedStore('small', 'big');
    let clock = 1_700_000_000_000;
    let clockReads = 0;
    const leased = new LeasedLimits({
      store: g.store,
      onStoreError: failOnStoreError,
      now: () => (clockReads++, clock),
      idleReturnMs: 20,
    });
    assert.equal((await leased.admit([rate('big', 60_000)], 'r0')).admitted, true, 'buys a chunk of `big`');
    clock += 1_000; // the lease is idle now
    g.closeGate();
    const pending = leased.admit([rate('big', 60_000), rate('small', 10)], 'r1');
    const reads = clockReads;
    await waitFor('the idle sweep ran while the store step was in flight', () => clockReads > reads + 1, 5_000);
    g.openGate();
    const result = await pending;
    assert.equal(result.admitted, true);
    await leased.close();
    // Everything bought and not used went back: the store lost exactly the two units admitted.
    assert.equal(g.units.taken, 2);
    await g.close();
  });

  test('units an admission planned with are set aside at once: no other request takes them meanwhile (no over-admission)', async () => {
    const g = await gatedStore('small', 'big');
    const now = 1_700_000_000_000;
    const leased = new LeasedLimits({ store: g.store, onStoreError: failOnStoreError, now: () => now });
    // 2,400 a minute: chunks of 2 units. r0 buys 3 (its own and 2 held); another instance takes all the rest.
    assert.equal((await leased.admit([rate('big', 2_400)], 'r0')).admitted, true);
    assert.equal((await g.inner.consume('big', 2_400, MINUTE, 2_400 - 3, now)).allowed, true);
    g.closeGate();
    const pending = leased.admit([rate('big', 2_400), rate('small', 10)], 'r1'); // plans 1 held unit, then waits
    const later = [];
    for (let i = 2; i <= 3; i++) later.push((await leased.admit([rate('big', 2_400)], `r${i}`)).admitted);
    g.openGate();
    const admitted = [true, (await pending).admitted, ...later].filter(Boolean).length;
    assert.equal(admitted, 3, `3 units bought in all, ${admitted} requests admitted`);
    await leased.close();
    assert.equal(g.units.taken, 3);
    await g.close();
  });
});
