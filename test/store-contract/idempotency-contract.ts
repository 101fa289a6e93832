/**
 * The contract every IdempotencyStore backend passes, with the same assertions (the shape of undici's
 * `cacheStoreTests`). Every test gets a fresh store from `make` and drives time through the explicit `nowMs`
 * arguments, so nothing here sleeps.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IdempotencyStore, StoredResponse } from '../../src/store/store-contract.js';

export interface ContractStore {
  store: IdempotencyStore;
  close(): Promise<void>;
}

/** An arbitrary fixed clock (2023-11-14T22:13:20Z); all times below are offsets from it. */
const T0 = 1_700_000_000_000;
/** The ceiling both backends put on `retryAfterMs`: the lease bounds a crash, it does not predict completion. */
const RETRY_HINT_CAP_MS = 5_000;
const FP_A = 'a'.repeat(64);
const FP_B = 'b'.repeat(64);

export const JSON_ANSWER: StoredResponse = {
  status: 200,
  headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'req-1' },
  kind: 'json',
  // Unicode in several planes, and a lone surrogate, which only survives because the store keeps JSON text.
  body: '{"choices":[{"message":{"content":"café 你好 🌍 \ud83d"}}]}',
  storedAt: '2023-11-14T22:13:20.000Z',
};

export const SSE_ANSWER: StoredResponse = {
  status: 200,
  headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  kind: 'sse',
  body: [
    'data: {"choices":[{"delta":{"content":"Grüße, "}}]}',
    'data: {"choices":[{"delta":{"content":"мир 🌍\\n\\nnext"}}]}',
    'event: ping\r\ndata: ',
    'data: [DONE]',
    '',
  ].join('\n\n'),
  storedAt: '2023-11-14T22:13:21.500Z',
};

export function idempotencyContract(
  name: string,
  make: () => Promise<ContractStore>,
  options: { skip?: string | boolean } = {},
): void {
  /** Runs `body` against a fresh store and always closes it. */
  const withStore = async (body: (store: IdempotencyStore) => Promise<void>): Promise<void> => {
    const made = await make();
    try {
      await body(made.store);
    } finally {
      await made.close();
    }
  };

  describe(`IdempotencyStore contract: ${name}`, { skip: options.skip }, () => {
    test('the first begin claims; a second with the same fingerprint is in progress until the lease ends', () =>
      withStore(async (s) => {
        assert.deepEqual(await s.begin('caller', 'k1', FP_A, 3_000, T0), { state: 'claimed' });
        assert.deepEqual(await s.begin('caller', 'k1', FP_A, 3_000, T0 + 1_000), {
          state: 'in_progress',
          retryAfterMs: 2_000,
        });
        assert.deepEqual(await s.begin('caller', 'k1', FP_A, 3_000, T0 + 2_999), {
          state: 'in_progress',
          retryAfterMs: 1,
        });
        // A second begin does not extend the holder's lease.
        assert.deepEqual(await s.begin('caller', 'k1', FP_A, 3_000, T0 + 2_000), {
          state: 'in_progress',
          retryAfterMs: 1_000,
        });
      }));

    test('retryAfterMs is capped: a long lease bounds a crash, it does not predict when the answer is ready', () =>
      withStore(async (s) => {
        assert.equal((await s.begin('caller', 'long', FP_A, 600_000, T0)).state, 'claimed');
        assert.deepEqual(await s.begin('caller', 'long', FP_A, 600_000, T0 + 10), {
          state: 'in_progress',
          retryAfterMs: RETRY_HINT_CAP_MS,
        });
      }));

    test('a different fingerprint is a mismatch, while in progress and after completion', () =>
      withStore(async (s) => {
        await s.begin('caller', 'k', FP_A, 3_000, T0);
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 3_000, T0 + 1), { state: 'mismatch' });
        await s.complete({ scope: 'caller', key: 'k', fingerprint: FP_A }, JSON_ANSWER, 60_000, T0 + 2);
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 3_000, T0 + 3), { state: 'mismatch' });
        assert.equal(
          (await s.begin('caller', 'k', FP_A, 3_000, T0 + 4)).state,
          'completed',
          'the mismatch changed nothing',
        );
      }));

    test('a completed answer is replayed exactly: status, headers, JSON body and a multi-event SSE stream', () =>
      withStore(async (s) => {
        for (const [key, answer] of [
          ['json', JSON_ANSWER],
          ['sse', SSE_ANSWER],
        ] as const) {
          assert.equal((await s.begin('caller', key, FP_A, 3_000, T0)).state, 'claimed');
          await s.complete({ scope: 'caller', key: key, fingerprint: FP_A }, answer, 60_000, T0 + 100);
          const replay = await s.begin('caller', key, FP_A, 3_000, T0 + 200);
          assert.deepEqual(replay, { state: 'completed', response: answer });
          if (replay.state === 'completed') assert.equal(replay.response.body, answer.body, 'byte for byte');
          // Replays are repeatable, and a replay does not consume the answer.
          assert.deepEqual(await s.begin('caller', key, FP_A, 3_000, T0 + 300), {
            state: 'completed',
            response: answer,
          });
        }
      }));

    test('abandon frees the key: the next begin claims it, even with another fingerprint', () =>
      withStore(async (s) => {
        await s.begin('caller', 'k', FP_A, 3_000, T0);
        await s.abandon('caller', 'k', FP_A);
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 3_000, T0 + 1), { state: 'claimed' });
        await s.abandon('caller', 'never-used', FP_A); // nothing to free: no error
      }));

    test('abandon by another fingerprint, or of a completed answer, deletes nothing', () =>
      withStore(async (s) => {
        await s.begin('caller', 'running', FP_A, 3_000, T0);
        await s.abandon('caller', 'running', FP_B);
        assert.deepEqual(await s.begin('caller', 'running', FP_A, 3_000, T0 + 1_000), {
          state: 'in_progress',
          retryAfterMs: 2_000,
        });

        await s.begin('caller', 'done', FP_A, 3_000, T0);
        await s.complete({ scope: 'caller', key: 'done', fingerprint: FP_A }, JSON_ANSWER, 60_000, T0 + 10);
        await s.abandon('caller', 'done', FP_A);
        await s.abandon('caller', 'done', FP_B);
        assert.deepEqual(await s.begin('caller', 'done', FP_A, 3_000, T0 + 20), {
          state: 'completed',
          response: JSON_ANSWER,
        });
      }));

    test('an expired lease is taken over (crash recovery); the crashed claimant cannot complete or abandon it after', () =>
      withStore(async (s) => {
        await s.begin('caller', 'k', FP_A, 1_000, T0); // this claimant is then killed -9
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 1_000, T0 + 999), { state: 'mismatch' });
        assert.deepEqual(
          await s.begin('caller', 'k', FP_B, 5_000, T0 + 1_000),
          { state: 'claimed' },
          'lease over at lease end',
        );
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 5_000, T0 + 2_000), {
          state: 'in_progress',
          retryAfterMs: 4_000,
        });

        // The old claimant was only slow: its late answer must not become the new claimant's.
        await s.complete({ scope: 'caller', key: 'k', fingerprint: FP_A }, SSE_ANSWER, 60_000, T0 + 2_100);
        await s.abandon('caller', 'k', FP_A);
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 5_000, T0 + 2_200), {
          state: 'in_progress',
          retryAfterMs: 3_800,
        });

        await s.complete({ scope: 'caller', key: 'k', fingerprint: FP_B }, JSON_ANSWER, 60_000, T0 + 3_000);
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 5_000, T0 + 3_100), {
          state: 'completed',
          response: JSON_ANSWER,
        });
      }));

    test("renew (the holder's heartbeat) extends a running claim; it never touches others or completed answers", () =>
      withStore(async (s) => {
        await s.begin('caller', 'r1', FP_A, 1_000, T0);
        await s.begin('caller', 'r2', FP_A, 1_000, T0);
        await s.begin('caller', 'done', FP_A, 1_000, T0);
        await s.complete({ scope: 'caller', key: 'done', fingerprint: FP_A }, JSON_ANSWER, 2_000, T0 + 10);
        await s.renew(
          [
            { scope: 'caller', key: 'r1', fingerprint: FP_A },
            { scope: 'caller', key: 'r2', fingerprint: FP_B }, // not this holder's claim
            { scope: 'caller', key: 'done', fingerprint: FP_A }, // completed: nothing to renew
            { scope: 'caller', key: 'never', fingerprint: FP_A }, // no row: nothing is created
          ],
          5_000,
          T0 + 900,
        );
        assert.deepEqual(
          await s.begin('caller', 'r1', FP_A, 1_000, T0 + 1_500),
          { state: 'in_progress', retryAfterMs: 4_400 },
          'renewed to T0 + 5900',
        );
        assert.deepEqual(
          await s.begin('caller', 'r2', FP_A, 1_000, T0 + 1_000),
          { state: 'claimed' },
          'not renewed: lapsed at T0 + 1000',
        );
        assert.deepEqual(await s.begin('caller', 'done', FP_A, 1_000, T0 + 1_500), {
          state: 'completed',
          response: JSON_ANSWER,
        });
        assert.deepEqual(
          await s.begin('caller', 'done', FP_A, 1_000, T0 + 2_010),
          { state: 'claimed' },
          'TTL unchanged by renew',
        );
        assert.deepEqual(await s.begin('caller', 'never', FP_B, 1_000, T0 + 1_000), { state: 'claimed' });
        // Once the holder stops renewing (it crashed), the claim lapses one lease after the last heartbeat.
        assert.deepEqual(await s.begin('caller', 'r1', FP_A, 1_000, T0 + 5_900), { state: 'claimed' });
        await s.renew([], 5_000, T0);
      }));

    test('the same request retried after its lease ended is claimed again', () =>
      withStore(async (s) => {
        await s.begin('caller', 'k', FP_A, 1_000, T0);
        assert.deepEqual(await s.begin('caller', 'k', FP_A, 1_000, T0 + 999), {
          state: 'in_progress',
          retryAfterMs: 1,
        });
        assert.deepEqual(await s.begin('caller', 'k', FP_A, 1_000, T0 + 1_000), { state: 'claimed' });
        assert.deepEqual(await s.begin('caller', 'k', FP_A, 1_000, T0 + 1_001), {
          state: 'in_progress',
          retryAfterMs: 999,
        });
      }));

    test('complete on a key that was never claimed (or already freed) writes nothing', () =>
      withStore(async (s) => {
        await s.complete({ scope: 'caller', key: 'ghost', fingerprint: FP_A }, JSON_ANSWER, 60_000, T0);
        assert.deepEqual(await s.begin('caller', 'ghost', FP_A, 3_000, T0 + 1), { state: 'claimed' });
        await s.abandon('caller', 'ghost', FP_A);
        await s.complete({ scope: 'caller', key: 'ghost', fingerprint: FP_A }, JSON_ANSWER, 60_000, T0 + 2);
        assert.deepEqual(await s.begin('caller', 'ghost', FP_B, 3_000, T0 + 3), { state: 'claimed' });
      }));

    test('a completed answer expires after its TTL, counted from completion; then the key is free again', () =>
      withStore(async (s) => {
        await s.begin('caller', 'k', FP_A, 1_000, T0);
        await s.complete({ scope: 'caller', key: 'k', fingerprint: FP_A }, JSON_ANSWER, 5_000, T0 + 500);
        assert.equal(
          (await s.begin('caller', 'k', FP_A, 1_000, T0 + 5_499)).state,
          'completed',
          'past the lease, within the TTL',
        );
        assert.deepEqual(await s.begin('caller', 'k', FP_B, 1_000, T0 + 5_500), { state: 'claimed' });
      }));

    test('scopes are isolated, and no scope/key pair can be confused with another across a ":"', () =>
      withStore(async (s) => {
        assert.deepEqual(await s.begin('alice', 'same-key', FP_A, 3_000, T0), { state: 'claimed' });
        assert.deepEqual(await s.begin('bob', 'same-key', FP_B, 3_000, T0), { state: 'claimed' });
        assert.deepEqual(await s.begin('a:b', 'c', FP_A, 3_000, T0), { state: 'claimed' });
        assert.deepEqual(await s.begin('a', 'b:c', FP_B, 3_000, T0), { state: 'claimed' });
        assert.deepEqual(await s.begin('a:', 'b:c', FP_B, 3_000, T0), { state: 'claimed' });
        assert.deepEqual(await s.begin('', 'a:b:c', FP_B, 3_000, T0), { state: 'claimed' });

        await s.complete({ scope: 'a:b', key: 'c', fingerprint: FP_A }, JSON_ANSWER, 60_000, T0 + 1);
        await s.abandon('a', 'b:c', FP_B);
        assert.deepEqual(await s.begin('a:b', 'c', FP_A, 3_000, T0 + 2), { state: 'completed', response: JSON_ANSWER });
        assert.deepEqual(await s.begin('alice', 'same-key', FP_A, 3_000, T0 + 2), {
          state: 'in_progress',
          retryAfterMs: 2_998,
        });
        assert.deepEqual(await s.begin('a:', 'b:c', FP_B, 3_000, T0 + 2), {
          state: 'in_progress',
          retryAfterMs: 2_998,
        });
      }));

    test('50 concurrent begins of one key: exactly one claims, the other 49 see it in progress', () =>
      withStore(async (s) => {
        const results = await Promise.all(Array.from({ length: 50 }, () => s.begin('caller', 'hot', FP_A, 30_000)));
        assert.equal(results.filter((r) => r.state === 'claimed').length, 1);
        assert.equal(results.filter((r) => r.state === 'in_progress').length, 49);
      }));

    test('a lease or TTL that is not a positive number is refused, as a rejection', () =>
      withStore(async (s) => {
        await assert.rejects(s.begin('caller', 'k', FP_A, 0, T0), RangeError);
        await assert.rejects(s.begin('caller', 'k', FP_A, Number.NaN, T0), RangeError);
        assert.deepEqual(
          await s.begin('caller', 'k', FP_A, 1_000, T0),
          { state: 'claimed' },
          'the refusals claimed nothing',
        );
        await assert.rejects(
          s.complete({ scope: 'caller', key: 'k', fingerprint: FP_A }, JSON_ANSWER, -1, T0),
          RangeError,
        );
        assert.deepEqual(await s.begin('caller', 'k', FP_A, 1_000, T0 + 1), {
          state: 'in_progress',
          retryAfterMs: 999,
        });
      }));
  });
}
