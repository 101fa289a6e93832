/**
 * The one contract every rate-limit backend passes (as undici runs `cacheStoreTests` against each cache store):
 * GCRA admission, refill, costs, adjustments and in-flight leases, with explicit clocks so every number is exact.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LimitStore } from '../../src/store/store-contract.js';

export interface RateLimiterHarness {
  limiter: LimitStore;
  close(): Promise<void>;
}

/** A fixed instant far from 0, so "never below now" and expiry arithmetic are exercised with realistic values. */
const T0 = 1_700_000_000_000;
const MINUTE = 60_000;

export function rateLimiterContract(name: string, make: () => Promise<RateLimiterHarness>): void {
  describe(`rate limiter contract: ${name}`, () => {
    let harness: RateLimiterHarness | undefined;
    const limiter = (): LimitStore => {
      assert.ok(harness, 'the harness is made before the tests run');
      return harness.limiter;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });

    test('a fresh key allows exactly `limit` units at one instant, with exact RateLimit-* numbers', async () => {
      const l = limiter();
      // 10 per minute: the emission interval T is 6000 ms, the tolerance a whole minute.
      for (let i = 1; i <= 10; i++) {
        const d = await l.consume('burst', 10, MINUTE, 1, T0);
        assert.deepEqual(
          d,
          { allowed: true, limit: 10, remaining: 10 - i, resetMs: 6000 * i, retryAfterMs: 0 },
          `unit ${i}`,
        );
      }
      const refused = await l.consume('burst', 10, MINUTE, 1, T0);
      assert.deepEqual(refused, { allowed: false, limit: 10, remaining: 0, resetMs: MINUTE, retryAfterMs: 6000 });
      // One emission interval later exactly one unit has come back, and no more.
      const next = await l.consume('burst', 10, MINUTE, 1, T0 + 6000);
      assert.deepEqual(next, { allowed: true, limit: 10, remaining: 0, resetMs: MINUTE, retryAfterMs: 0 });
      const again = await l.consume('burst', 10, MINUTE, 1, T0 + 6000);
      assert.equal(again.allowed, false);
      assert.equal(again.retryAfterMs, 6000);
      assert.equal((await l.consume('burst', 10, MINUTE, 1, T0 + 5999 + 6000)).allowed, false, 'one ms early');
    });

    test('units refill continuously: half a window after exhaustion, half the limit is back', async () => {
      const l = limiter();
      assert.equal((await l.consume('refill', 10, MINUTE, 10, T0)).allowed, true);
      const half = T0 + MINUTE / 2;
      for (let i = 1; i <= 5; i++)
        assert.equal((await l.consume('refill', 10, MINUTE, 1, half)).allowed, true, `unit ${i}`);
      assert.equal((await l.consume('refill', 10, MINUTE, 1, half)).allowed, false);
      // After a full idle window the bucket is full again, not fuller.
      const later = await l.consume('refill', 10, MINUTE, 1, T0 + 10 * MINUTE);
      assert.deepEqual(later, { allowed: true, limit: 10, remaining: 9, resetMs: 6000, retryAfterMs: 0 });
    });

    test('a refused call takes nothing: a smaller cost that fits still passes right after', async () => {
      const l = limiter();
      assert.equal((await l.consume('atomic', 10, MINUTE, 7, T0)).remaining, 3);
      const refused = await l.consume('atomic', 10, MINUTE, 5, T0);
      assert.deepEqual(refused, { allowed: false, limit: 10, remaining: 0, resetMs: 42_000, retryAfterMs: 12_000 });
      const fits = await l.consume('atomic', 10, MINUTE, 3, T0);
      assert.deepEqual(fits, { allowed: true, limit: 10, remaining: 0, resetMs: MINUTE, retryAfterMs: 0 });
    });

    test('costs above 1 (token limits); a cost above the limit is never allowed and takes nothing', async () => {
      const l = limiter();
      // 1000 tokens per minute: 60 ms per token.
      assert.deepEqual(await l.consume('tokens', 1000, MINUTE, 400, T0), {
        allowed: true,
        limit: 1000,
        remaining: 600,
        resetMs: 24_000,
        retryAfterMs: 0,
      });
      assert.equal((await l.consume('tokens', 1000, MINUTE, 600, T0)).remaining, 0);
      assert.deepEqual(await l.consume('tokens', 1000, MINUTE, 1, T0), {
        allowed: false,
        limit: 1000,
        remaining: 0,
        resetMs: MINUTE,
        retryAfterMs: 60,
      });

      // Documented choice: the wait is the time to a full bucket, and at least one window.
      const tooBig = await l.consume('tokens-big', 1000, MINUTE, 1001, T0);
      assert.deepEqual(tooBig, { allowed: false, limit: 1000, remaining: 0, resetMs: 0, retryAfterMs: MINUTE });
      assert.equal(
        (await l.consume('tokens-big', 1000, MINUTE, 1001, T0 + 100 * MINUTE)).allowed,
        false,
        'not even later',
      );
      assert.equal((await l.consume('tokens-big', 1000, MINUTE, 1000, T0)).allowed, true, 'the refusal took nothing');
      const whileEmpty = await l.consume('tokens-big', 1000, MINUTE, 5000, T0);
      assert.deepEqual(whileEmpty, {
        allowed: false,
        limit: 1000,
        remaining: 0,
        resetMs: MINUTE,
        retryAfterMs: MINUTE,
      });
    });

    test('an interval that is not a whole number of ms still allows exactly `limit` at once', async () => {
      const l = limiter();
      for (const [limit, windowMs] of [
        [7, MINUTE],
        [6, 1000],
        [3, 1000],
        [30, 1000],
      ] as const) {
        const key = `fraction-${limit}-${windowMs}`;
        let allowed = 0;
        for (let i = 0; i < limit + 3; i++) if ((await l.consume(key, limit, windowMs, 1, T0)).allowed) allowed++;
        assert.equal(allowed, limit, `${limit} per ${windowMs} ms`);
      }
    });

    test('adjust: a positive delta leaves the key in debt until it is repaid', async () => {
      const l = limiter();
      await l.consume('debt', 10, MINUTE, 1, T0);
      await l.adjust('debt', 10, MINUTE, 14, T0); // 15 units taken: 90 s of emission, 30 s beyond the tolerance
      const refused = await l.consume('debt', 10, MINUTE, 1, T0);
      assert.deepEqual(refused, { allowed: false, limit: 10, remaining: 0, resetMs: 90_000, retryAfterMs: 36_000 });
      assert.equal((await l.consume('debt', 10, MINUTE, 1, T0 + 35_999)).allowed, false);
      assert.equal((await l.consume('debt', 10, MINUTE, 1, T0 + 36_000)).allowed, true);
    });

    test('adjust: a negative delta gives units back, never beyond a full bucket', async () => {
      const l = limiter();
      await l.consume('refund', 10, MINUTE, 10, T0);
      await l.adjust('refund', 10, MINUTE, -3, T0);
      assert.equal((await l.consume('refund', 10, MINUTE, 3, T0)).allowed, true);
      assert.equal((await l.consume('refund', 10, MINUTE, 1, T0)).allowed, false);

      await l.adjust('refund', 10, MINUTE, -1000, T0);
      assert.equal((await l.consume('refund', 10, MINUTE, 10, T0)).allowed, true, 'full again');
      assert.equal((await l.consume('refund', 10, MINUTE, 1, T0)).allowed, false, 'but not fuller');
      await l.adjust('refund-fresh', 10, MINUTE, -5, T0);
      assert.equal((await l.consume('refund-fresh', 10, MINUTE, 10, T0)).allowed, true);
      assert.equal(
        (await l.consume('refund-fresh', 10, MINUTE, 1, T0)).allowed,
        false,
        'a fresh key cannot bank units',
      );
    });

    test('consume then an equal negative adjust cancel exactly (the all-or-nothing undo of admission)', async () => {
      const l = limiter();
      await l.consume('undo', 7, MINUTE, 4, T0);
      await l.consume('undo', 7, MINUTE, 2, T0);
      await l.adjust('undo', 7, MINUTE, -2, T0);
      assert.equal((await l.consume('undo', 7, MINUTE, 3, T0)).allowed, true);
      assert.equal((await l.consume('undo', 7, MINUTE, 1, T0)).allowed, false);
    });

    test('keys are independent', async () => {
      const l = limiter();
      await l.consume('key-a', 10, MINUTE, 10, T0);
      assert.equal((await l.consume('key-a', 10, MINUTE, 1, T0)).allowed, false);
      assert.equal((await l.consume('key-b', 10, MINUTE, 1, T0)).remaining, 9);
    });

    test('arguments that describe no limit are rejected', async () => {
      const l = limiter();
      await assert.rejects(l.consume('bad', 0, MINUTE, 1, T0), RangeError);
      await assert.rejects(l.consume('bad', 10, 0, 1, T0), RangeError);
      await assert.rejects(l.consume('bad', 10, MINUTE, -1, T0), RangeError);
      await assert.rejects(l.consume('bad', 10, MINUTE, Number.NaN, T0), RangeError);
      await assert.rejects(l.acquire('bad', 'x', 1, 0, T0), RangeError);
    });

    test('a charge past MAX_DEBT_WINDOWS windows is capped: the key stays readable, limited, and a correction repays it (issue 41)', async () => {
      const l = limiter();
      const HOUR = 3_600_000;
      // A budget of 1,000 tokens an hour charged 1e15 (max_tokens of 1e15): 3.6e18 ms of debt, uncapped.
      const huge = { kind: 'rate' as const, key: 'huge', limit: 1000, windowMs: HOUR, cost: 1e15, need: 1 };
      assert.equal((await l.admit([huge], '', T0)).admitted, true);
      const refused = await l.consume('huge', 1000, HOUR, 1, T0);
      assert.equal(refused.allowed, false);
      // 1,000 windows of debt at most: the wait is 999 windows and one unit's interval (3.6 s).
      assert.equal(refused.retryAfterMs, 999 * HOUR + 3600);
      await l.adjust('huge', 1000, HOUR, -1e15, T0);
      assert.equal((await l.consume('huge', 1000, HOUR, 1, T0)).allowed, true, 'the correction gave it all back');
      await assert.rejects(l.consume('long', 10, 401 * 86_400_000, 1, T0), RangeError, 'a window of 401 days');
    });

    test('50 concurrent calls on one key with limit 20 allow exactly 20', async () => {
      const l = limiter();
      const decisions = await Promise.all(Array.from({ length: 50 }, () => l.consume('race', 20, MINUTE, 1, T0)));
      assert.equal(decisions.filter((d) => d.allowed).length, 20);
      const remaining = decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((a, b) => a - b);
      assert.deepEqual(
        remaining,
        Array.from({ length: 20 }, (_, i) => i),
        'each allowed call saw its own state',
      );
    });

    test('concurrency: max 2 refuses a third, release frees a slot, an expired lease frees itself', async () => {
      const l = limiter();
      assert.deepEqual(await l.acquire('slots', 'a', 2, 1000, T0), { acquired: true, inFlight: 1 });
      assert.deepEqual(await l.acquire('slots', 'b', 2, 1000, T0), { acquired: true, inFlight: 2 });
      assert.deepEqual(await l.acquire('slots', 'c', 2, 1000, T0), { acquired: false, inFlight: 2 });
      await l.release('slots', 'a');
      assert.deepEqual(await l.acquire('slots', 'c', 2, 5000, T0), { acquired: true, inFlight: 2 });
      assert.deepEqual(await l.acquire('slots', 'd', 2, 1000, T0 + 999), { acquired: false, inFlight: 2 });
      // b's lease ends at T0 + 1000: from then on its slot is free without a release.
      assert.deepEqual(await l.acquire('slots', 'd', 2, 1000, T0 + 1000), { acquired: true, inFlight: 2 });
      assert.deepEqual(
        await l.acquire('slots', 'e', 2, 1000, T0 + 6000),
        { acquired: true, inFlight: 1 },
        'c and d expired',
      );
      assert.deepEqual(
        await l.acquire('other-slots', 'a', 2, 1000, T0),
        { acquired: true, inFlight: 1 },
        'keys are independent',
      );
    });

    test('concurrency: the same token renews its lease instead of taking a second slot; releases are idempotent', async () => {
      const l = limiter();
      assert.deepEqual(await l.acquire('renew', 'a', 1, 1000, T0), { acquired: true, inFlight: 1 });
      assert.deepEqual(await l.acquire('renew', 'a', 1, 1000, T0 + 900), { acquired: true, inFlight: 1 });
      assert.deepEqual(
        await l.acquire('renew', 'b', 1, 1000, T0 + 1500),
        { acquired: false, inFlight: 1 },
        'renewed to T0 + 1900',
      );
      await l.release('renew', 'a');
      await l.release('renew', 'a');
      await l.release('renew', 'never-held');
      assert.deepEqual(await l.acquire('renew', 'b', 1, 1000, T0 + 1500), { acquired: true, inFlight: 1 });
    });

    test('concurrency: 30 concurrent acquires with max 5 grant exactly 5', async () => {
      const l = limiter();
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => l.acquire('crowd', `t${i}`, 5, 1000, T0)));
      assert.equal(results.filter((r) => r.acquired).length, 5);
    });

    test('admit: several limits pass together, each reported as if taken alone, all written', async () => {
      const l = limiter();
      const result = await l.admit(
        [
          { kind: 'rate', key: 'b-req', limit: 10, windowMs: MINUTE, cost: 1 },
          { kind: 'rate', key: 'b-tok', limit: 100, windowMs: MINUTE, cost: 40 },
          { kind: 'concurrency', key: 'b-cc', max: 2, leaseMs: 1000 },
        ],
        'holder-1',
        T0,
      );
      assert.deepEqual(result, {
        admitted: true,
        outcomes: [
          { kind: 'rate', decision: { allowed: true, limit: 10, remaining: 9, resetMs: 6000, retryAfterMs: 0 } },
          { kind: 'rate', decision: { allowed: true, limit: 100, remaining: 60, resetMs: 24000, retryAfterMs: 0 } },
          { kind: 'concurrency', acquired: true, inFlight: 1 },
        ],
      });
      // Written: the next single calls see the state the batch left.
      assert.equal((await l.consume('b-tok', 100, MINUTE, 60, T0)).remaining, 0);
      assert.deepEqual(await l.acquire('b-cc', 'holder-2', 2, 1000, T0), { acquired: true, inFlight: 2 });
    });

    test('admit: one refusing limit means nothing is taken, and the refusal says which', async () => {
      const l = limiter();
      assert.equal((await l.consume('n-tok', 100, MINUTE, 90, T0)).allowed, true);
      assert.deepEqual(await l.acquire('n-cc', 'other', 1, 5000, T0), { acquired: true, inFlight: 1 });
      const refused = await l.admit(
        [
          { kind: 'rate', key: 'n-req', limit: 10, windowMs: MINUTE, cost: 1 },
          { kind: 'rate', key: 'n-tok', limit: 100, windowMs: MINUTE, cost: 20 },
          { kind: 'concurrency', key: 'n-cc2', max: 1, leaseMs: 1000 },
        ],
        'me',
        T0,
      );
      assert.equal(refused.admitted, false);
      const [req, tok, cc] = refused.outcomes;
      assert.equal(req?.kind === 'rate' && req.decision.allowed, true, 'the request limit alone would allow');
      assert.deepEqual(tok, {
        kind: 'rate',
        decision: { allowed: false, limit: 100, remaining: 0, resetMs: 54000, retryAfterMs: 6000 },
      });
      assert.deepEqual(cc, { kind: 'concurrency', acquired: true, inFlight: 1 });
      // Nothing was taken: the request limit is full, the slot is free.
      assert.equal((await l.consume('n-req', 10, MINUTE, 10, T0)).allowed, true);
      assert.deepEqual(await l.acquire('n-cc2', 'someone', 1, 1000, T0), { acquired: true, inFlight: 1 });
      // A full concurrency limit refuses the batch too, and its rate limits stay untouched.
      const busy = await l.admit(
        [
          { kind: 'rate', key: 'n-req2', limit: 1, windowMs: MINUTE, cost: 1 },
          { kind: 'concurrency', key: 'n-cc', max: 1, leaseMs: 1000 },
        ],
        'me',
        T0,
      );
      assert.equal(busy.admitted, false);
      assert.deepEqual(busy.outcomes[1], { kind: 'concurrency', acquired: false, inFlight: 1 });
      assert.equal((await l.consume('n-req2', 1, MINUTE, 1, T0)).allowed, true);
    });

    test('admit: an oversized cost refuses the batch without touching any key; an empty batch admits', async () => {
      const l = limiter();
      const result = await l.admit(
        [
          { kind: 'rate', key: 'o-req', limit: 5, windowMs: MINUTE, cost: 1 },
          { kind: 'rate', key: 'o-tok', limit: 100, windowMs: MINUTE, cost: 101 },
        ],
        'me',
        T0,
      );
      assert.equal(result.admitted, false);
      assert.deepEqual(result.outcomes[1], {
        kind: 'rate',
        decision: { allowed: false, limit: 100, remaining: 0, resetMs: 0, retryAfterMs: MINUTE },
      });
      assert.equal((await l.consume('o-req', 5, MINUTE, 5, T0)).allowed, true);
      assert.deepEqual(await l.admit([], 'me', T0), { admitted: true, outcomes: [] });
    });

    test('need below cost: allowed while `need` units are left, the whole cost is charged (past the limit), then the debt is repaid', async () => {
      const l = limiter();
      // 100 per minute: 600 ms per unit. A cost of 150 with a need of 1 passes on a fresh key and leaves a debt.
      const first = await l.admit(
        [{ kind: 'rate', key: 'od', limit: 100, windowMs: MINUTE, cost: 150, need: 1 }],
        'me',
        T0,
      );
      assert.deepEqual(first, {
        admitted: true,
        outcomes: [
          { kind: 'rate', decision: { allowed: true, limit: 100, remaining: 0, resetMs: 90_000, retryAfterMs: 0 } },
        ],
      });
      // In debt: refused, and the wait is until one unit is back (the debt of 50 units plus one: 30.6 s).
      const refused = await l.admit(
        [{ kind: 'rate', key: 'od', limit: 100, windowMs: MINUTE, cost: 10, need: 1 }],
        'me',
        T0,
      );
      assert.deepEqual(refused.outcomes[0], {
        kind: 'rate',
        decision: { allowed: false, limit: 100, remaining: 0, resetMs: 90_000, retryAfterMs: 30_600 },
      });
      assert.equal(
        (
          await l.admit(
            [{ kind: 'rate', key: 'od', limit: 100, windowMs: MINUTE, cost: 10, need: 1 }],
            'me',
            T0 + 30_599,
          )
        ).admitted,
        false,
      );
      assert.equal(
        (
          await l.admit(
            [{ kind: 'rate', key: 'od', limit: 100, windowMs: MINUTE, cost: 10, need: 1 }],
            'me',
            T0 + 30_600,
          )
        ).admitted,
        true,
      );
      // Exactly one unit left is enough; none left is not.
      assert.equal((await l.consume('od2', 100, MINUTE, 99, T0)).allowed, true);
      assert.equal(
        (await l.admit([{ kind: 'rate', key: 'od2', limit: 100, windowMs: MINUTE, cost: 500, need: 1 }], 'me', T0))
          .admitted,
        true,
      );
      assert.equal((await l.consume('od3', 100, MINUTE, 100, T0)).allowed, true);
      assert.equal(
        (await l.admit([{ kind: 'rate', key: 'od3', limit: 100, windowMs: MINUTE, cost: 5, need: 1 }], 'me', T0))
          .admitted,
        false,
      );
      // A larger need: 30 units must be left (70 used: allowed; 71 used: refused, wait for one unit).
      assert.equal((await l.consume('od4', 100, MINUTE, 70, T0)).allowed, true);
      assert.equal(
        (await l.admit([{ kind: 'rate', key: 'od4', limit: 100, windowMs: MINUTE, cost: 1000, need: 30 }], 'me', T0))
          .admitted,
        true,
      );
      assert.equal((await l.consume('od5', 100, MINUTE, 71, T0)).allowed, true);
      const short = await l.admit(
        [{ kind: 'rate', key: 'od5', limit: 100, windowMs: MINUTE, cost: 1000, need: 30 }],
        'me',
        T0,
      );
      assert.deepEqual(short.outcomes[0], {
        kind: 'rate',
        decision: { allowed: false, limit: 100, remaining: 0, resetMs: 42_600, retryAfterMs: 600 },
      });
      // A need above the limit can never pass (oversized), and a need above the cost is a bug.
      const never = await l.admit(
        [{ kind: 'rate', key: 'od6', limit: 100, windowMs: MINUTE, cost: 200, need: 101 }],
        'me',
        T0,
      );
      assert.equal(never.admitted, false);
      await assert.rejects(
        l.admit([{ kind: 'rate', key: 'od7', limit: 100, windowMs: MINUTE, cost: 5, need: 6 }], 'me', T0),
        RangeError,
      );
    });

    test("settle: corrects rate limits and releases this token's slots in one step", async () => {
      const l = limiter();
      const limits = [
        { kind: 'rate', key: 's-tok', limit: 100, windowMs: MINUTE, cost: 50 },
        { kind: 'concurrency', key: 's-cc', max: 1, leaseMs: 60_000 },
      ] as const;
      assert.equal((await l.admit(limits, 'call-1', T0)).admitted, true);
      assert.equal((await l.admit(limits, 'call-2', T0)).admitted, false, 'the one slot is held');
      // The call used 10 tokens, not the 50 estimated: 40 come back; the slot is freed.
      await l.settle(
        [
          { kind: 'rate', key: 's-tok', limit: 100, windowMs: MINUTE, delta: -40 },
          { kind: 'concurrency', key: 's-cc' },
        ],
        'call-1',
        T0,
      );
      assert.equal((await l.consume('s-tok', 100, MINUTE, 90, T0)).allowed, true, '90 left after the correction');
      assert.deepEqual(await l.acquire('s-cc', 'call-2', 1, 1000, T0), { acquired: true, inFlight: 1 });
      // Another token's settlement does not free call-2's slot; a zero delta changes nothing.
      await l.settle(
        [
          { kind: 'concurrency', key: 's-cc' },
          { kind: 'rate', key: 's-tok', limit: 100, windowMs: MINUTE, delta: 0 },
        ],
        'call-1',
        T0,
      );
      assert.deepEqual(await l.acquire('s-cc', 'call-3', 1, 1000, T0), { acquired: false, inFlight: 1 });
      assert.equal((await l.consume('s-tok', 100, MINUTE, 1, T0)).allowed, false, 'still exhausted');
    });

    test('admit: 40 concurrent batches over a shared request limit of 15 admit exactly 15, charging nothing else for the rest', async () => {
      const l = limiter();
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          l.admit(
            [
              { kind: 'rate', key: 'c-tok', limit: 1000, windowMs: MINUTE, cost: 10 },
              { kind: 'rate', key: 'c-req', limit: 15, windowMs: MINUTE, cost: 1 },
            ],
            `t${i}`,
            T0,
          ),
        ),
      );
      assert.equal(results.filter((r) => r.admitted).length, 15);
      // 15 admissions of 10 tokens: 850 remain, not 600.
      assert.equal((await l.consume('c-tok', 1000, MINUTE, 850, T0)).allowed, true);
      assert.equal((await l.consume('c-tok', 1000, MINUTE, 1, T0)).allowed, false);
    });

    test('slot blocks: items with their own tokens take several slots of one key at once, never beyond max', async () => {
      const l = limiter();
      const block = (tokens: string[]) =>
        tokens.map((token) => ({ kind: 'concurrency' as const, key: 'blk', max: 5, leaseMs: 10_000, token }));
      const first = await l.admit(block(['i1:0', 'i1:1', 'i1:2']), 'unused', T0);
      assert.equal(first.admitted, true);
      assert.deepEqual(
        first.outcomes.map((o) => (o.kind === 'concurrency' ? o.inFlight : -1)),
        [1, 2, 3],
      );
      const tooMany = await l.admit(block(['i2:0', 'i2:1', 'i2:2']), 'unused', T0);
      assert.equal(tooMany.admitted, false, '3 + 3 > 5: nothing taken');
      assert.deepEqual(
        tooMany.outcomes.map((o) => (o.kind === 'concurrency' ? o.acquired : undefined)),
        [true, true, false],
      );
      assert.equal((await l.admit(block(['i2:0', 'i2:1']), 'unused', T0)).admitted, true, 'exactly up to max');
      assert.deepEqual(await l.acquire('blk', 'other', 5, 1000, T0), { acquired: false, inFlight: 5 });
      // Renewing held tokens takes nothing more; releasing one token frees exactly one slot.
      assert.equal((await l.admit(block(['i1:0', 'i1:1', 'i1:2']), 'unused', T0 + 5_000)).admitted, true);
      await l.settle([{ kind: 'concurrency', key: 'blk', token: 'i1:2' }], 'unused', T0);
      assert.deepEqual(await l.acquire('blk', 'other', 5, 1000, T0), { acquired: true, inFlight: 5 });
      // i2's slots lapse at T0 + 10 s; i1's were renewed to T0 + 15 s.
      assert.deepEqual(await l.acquire('blk', 'late', 5, 1000, T0 + 12_000), { acquired: true, inFlight: 3 });
    });
  });
}
