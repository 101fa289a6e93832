/** The contract every batch store passes: records, owners, lines, leases, exactly-once outcomes (issue 34). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { BatchRecord, BatchStore, LineOutcome, NewBatchLine } from '../../src/store/batch-contract.js';

export interface BatchStoreHarness {
  store: BatchStore;
  /** A second handle on the same data (another instance). */
  other: BatchStore;
  close(): Promise<void>;
}

function batch(owner: string, createdMs = Date.now()): BatchRecord {
  return {
    id: `batch_${randomUUID()}`,
    owner,
    principal: '{}',
    api: 'openai',
    endpoint: '/v1/chat/completions',
    inputFileId: 'file-x',
    completionWindow: '24h',
    metadata: { k: 'v' },
    status: 'in_progress',
    counts: { total: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    errors: null,
    outputFileId: null,
    errorFileId: null,
    createdMs,
    expiresMs: createdMs + 86_400_000,
    inProgressMs: null,
    finalizingMs: null,
    completedMs: null,
    failedMs: null,
    expiredMs: null,
    cancellingMs: null,
    cancelledMs: null,
    outputTtlSeconds: 7200,
    model: null,
    usage: { lines: 0, input: 0, cached: 0, output: 0, reasoning: 0, total: 0 },
    linesUntilMs: null,
    resultsUntilMs: null,
  };
}

const lines = (n: number): NewBatchLine[] =>
  Array.from({ length: n }, (_, index) => ({
    index,
    customId: `c-${index}`,
    url: '/v1/chat/completions',
    body: `{"n":${index}}`,
  }));

const ok = (text: string): LineOutcome => ({
  state: 'succeeded',
  statusCode: 200,
  response: text,
  requestId: 'r',
  error: null,
});

export function batchStoreContract(
  name: string,
  make: () => Promise<BatchStoreHarness>,
  opts: { skip?: string | false } = {},
): void {
  describe(`batch store contract: ${name}`, { skip: opts.skip }, () => {
    let h: BatchStoreHarness | undefined;
    const s = (): BatchStore => {
      assert.ok(h);
      return h.store;
    };
    before(async () => {
      h = await make();
    });
    after(async () => {
      await h?.close();
    });

    test('a batch is seen by its owner only, listed newest first with a cursor, and transitions once', async () => {
      const owner = `key:${randomUUID()}`;
      const a = batch(owner, 1000);
      const b = batch(owner, 2000);
      await s().create(a);
      await s().create(b);
      assert.deepEqual(await s().get(owner, a.id), a);
      assert.equal(await s().get('key:other', a.id), undefined);
      assert.deepEqual(
        (await s().list(owner, 'openai', undefined, 10)).map((r) => r.id),
        [b.id, a.id],
      );
      assert.deepEqual(
        (await s().list(owner, 'openai', b.id, 10)).map((r) => r.id),
        [a.id],
      );
      assert.deepEqual(await s().list(owner, 'anthropic', undefined, 10), []);
      assert.equal(await s().transition(a.id, ['in_progress'], 'finalizing', { finalizingMs: 5 }), true);
      assert.equal(await s().transition(a.id, ['in_progress'], 'finalizing', { finalizingMs: 6 }), false);
      const errors = [{ code: 'x', message: 'y', line: 2 }];
      assert.equal(await s().transition(a.id, ['finalizing'], 'failed', { failedMs: 7, errors }), true);
      const got = await s().get(owner, a.id);
      assert.equal(got?.status, 'failed');
      assert.equal(got?.finalizingMs, 5);
      assert.deepEqual(got?.errors, errors);
      assert.equal(await s().delete('key:other', a.id), false);
      assert.equal(await s().delete(owner, b.id), false, 'an active batch is not deleted');
      assert.equal(await s().delete(owner, a.id), true);
      assert.equal(await s().get(owner, a.id), undefined);
    });

    test('how a batch runs is kept: decided once, its upstream ids replaced as they come, gone with the batch', async () => {
      assert.ok(h);
      const { store, other } = h;
      const record = { ...batch('key:native'), status: 'completed' as const };
      await store.create(record);
      assert.equal(await store.nativeState(record.id), undefined);
      const decided = {
        mode: 'native' as const,
        upstream: 'oai',
        phase: 'decided' as const,
        upstreamFileId: null,
        upstreamBatchId: null,
        reason: null,
      };
      await store.saveNativeState(record.id, decided);
      assert.deepEqual(await other.nativeState(record.id), decided);
      const submitted = {
        ...decided,
        phase: 'submitted' as const,
        upstreamFileId: 'file-1',
        upstreamBatchId: 'batch_1',
      };
      await other.saveNativeState(record.id, submitted);
      assert.deepEqual(await store.nativeState(record.id), submitted);
      const fallback = { ...submitted, mode: 'gateway' as const, reason: 'refused: 403' };
      await store.saveNativeState(record.id, fallback);
      assert.deepEqual(await other.nativeState(record.id), fallback);
      assert.equal(await store.delete('key:native', record.id), true);
      assert.equal(await other.nativeState(record.id), undefined);
    });

    test('lines are added once (again adds nothing), read in order, and an outcome is recorded exactly once', async () => {
      const owner = `key:${randomUUID()}`;
      const b = batch(owner);
      await s().create(b);
      await s().addLines(b.id, lines(1500));
      await s().addLines(b.id, lines(1500));
      assert.equal((await s().get(owner, b.id))?.counts.total, 1500);
      assert.equal(await s().pendingCount(b.id), 1500);
      const page = await s().pendingLines(b.id, 9, Date.now(), 3);
      assert.deepEqual(
        page.map((l) => [l.index, l.customId, l.state, l.body]),
        [
          [10, 'c-10', 'pending', '{"n":10}'],
          [11, 'c-11', 'pending', '{"n":11}'],
          [12, 'c-12', 'pending', '{"n":12}'],
        ],
      );
      // Two instances race on every one of 200 lines: each line is won by exactly one.
      const wins = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          Promise.all([s().recordOutcome(b.id, i, ok(`a${i}`)), h!.other.recordOutcome(b.id, i, ok(`b${i}`))]),
        ),
      );
      assert.ok(
        wins.every(([x, y]) => x !== y),
        'each line recorded by one writer only',
      );
      const after = await s().get(owner, b.id);
      assert.equal(after?.counts.succeeded, 200);
      assert.equal(await s().pendingCount(b.id), 1300);
      const [first] = await s().lines(b.id, -1, 1);
      assert.equal(first?.state, 'succeeded');
      assert.equal(first?.attempts, 1);
      assert.match(first?.response ?? '', /^[ab]0$/);
      await s().defer(b.id, 200, Date.now() + 60_000);
      assert.equal((await s().pendingLines(b.id, 199, Date.now(), 1))[0]?.index, 201, 'a deferred line waits');
      assert.equal(await s().closePending(b.id, 'canceled', '{"code":"c","message":"m"}'), 1300);
      assert.equal(await s().recordOutcome(b.id, 300, ok('late')), false, 'a closed line takes no answer');
      const end = await s().get(owner, b.id);
      assert.deepEqual(end?.counts, { total: 1500, succeeded: 200, errored: 0, canceled: 1300, expired: 0 });
    });

    test("output expiry and model are kept; a line's usage is added with its outcome, once, seen by every instance", async () => {
      assert.ok(h);
      const { store, other } = h;
      const owner = `key:${randomUUID()}`;
      const b = { ...batch(owner), status: 'validating' as const, outputTtlSeconds: 3600 };
      const plain = { ...batch(owner), outputTtlSeconds: null };
      // A batch whose lines come with it (Anthropic's create) knows its model when it is written.
      const named = { ...batch(owner), model: 'claude-x' };
      await store.create(b);
      await store.create(plain);
      await store.create(named);
      assert.equal((await other.get(owner, named.id))?.model, 'claude-x');
      assert.equal((await other.get(owner, plain.id))?.model, null);
      assert.equal((await other.get(owner, b.id))?.outputTtlSeconds, 3600);
      assert.equal((await other.get(owner, plain.id))?.outputTtlSeconds, null);
      assert.equal(
        await store.transition(b.id, ['validating'], 'in_progress', { inProgressMs: 1, model: 'm-1' }),
        true,
      );
      assert.equal((await other.get(owner, b.id))?.model, 'm-1');
      await store.addLines(b.id, lines(40));
      const used = (i: number) => ({
        input: 10 + i,
        cached: i % 3,
        output: 5 + i,
        reasoning: i % 2,
        total: 15 + 2 * i,
      });
      // Both instances race on every line, each with the line's usage: only the winner's is added.
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          Promise.all([
            store.recordOutcome(b.id, i, { ...ok(`a${i}`), usage: used(i) }),
            other.recordOutcome(b.id, i, { ...ok(`b${i}`), usage: used(i) }),
          ]),
        ),
      );
      // An errored line without usage adds none; a line already answered adds nothing again.
      await store.recordOutcome(b.id, 30, { ...ok('e'), state: 'errored', statusCode: 400 });
      assert.equal(await other.recordOutcome(b.id, 0, { ...ok('again'), usage: used(0) }), false);
      const sum = (pick: (u: ReturnType<typeof used>) => number) =>
        Array.from({ length: 30 }, (_, i) => pick(used(i))).reduce((x, y) => x + y, 0);
      const expected = {
        lines: 30,
        input: sum((u) => u.input),
        cached: sum((u) => u.cached),
        output: sum((u) => u.output),
        reasoning: sum((u) => u.reasoning),
        total: sum((u) => u.total),
      };
      assert.deepEqual((await store.get(owner, b.id))?.usage, expected);
      assert.deepEqual((await other.get(owner, b.id))?.usage, expected);
      assert.deepEqual((await other.get(owner, plain.id))?.usage, batch(owner).usage);
    });

    test('the lines of a batch never created are discarded; a created batch keeps its own', async () => {
      const owner = `key:${randomUUID()}`;
      const uncreated = batch(owner);
      await s().addLines(uncreated.id, lines(700));
      const created = batch(owner);
      await s().create(created);
      await s().addLines(created.id, lines(3));
      assert.equal(await s().discardLines(created.id), 0, 'a created batch keeps its lines');
      assert.equal(await h!.other.discardLines(uncreated.id), 700);
      assert.deepEqual(await s().lines(uncreated.id, -1, 10), []);
      assert.equal(await s().discardLines(uncreated.id), 0, 'again: nothing left');
      assert.equal((await s().lines(created.id, -1, 10)).length, 3);
    });

    test('a create a crash cut off is swept after its grace, in bounded steps; a finished or young create is not', async () => {
      assert.ok(h);
      const { store, other } = h;
      const owner = `key:${randomUUID()}`;
      const now = Date.now();
      const grace = 3_600_000;
      // Abandoned: marked two hours ago, 450 lines, never a record (the process died part way).
      const abandoned = batch(owner);
      await store.beginCreate(abandoned.id, now - 2 * grace);
      await store.addLines(abandoned.id, lines(450));
      // Abandoned before its first line: a mark alone.
      const empty = batch(owner);
      await store.beginCreate(empty.id, now - 2 * grace);
      // Finished: marked as long ago, its record written (which ends the mark).
      const finished = batch(owner);
      await store.beginCreate(finished.id, now - 2 * grace);
      await store.addLines(finished.id, lines(30));
      await store.create({ ...finished, counts: { ...finished.counts, total: 30 } });
      // Under way: marked a minute ago, no record yet.
      const young = batch(owner);
      await store.beginCreate(young.id, now - 60_000);
      await store.addLines(young.id, lines(20));
      // A batch with lines and no mark at all (OpenAI's, lines added by its runner) is never looked at.
      const unmarked = batch(owner);
      await store.addLines(unmarked.id, lines(5));

      const before = now - grace;
      const bounds = { lines: 200, bytes: 1024 * 1024 };
      const first = await other.sweepCreates(before, bounds);
      assert.equal(first.lines, 200, 'one step removes at most its bound');
      assert.equal((await store.lines(abandoned.id, -1, 1000)).length, 250);
      const steps = [first];
      for (let i = 0; i < 10; i++) {
        const step = await other.sweepCreates(before, bounds);
        steps.push(step);
        assert.ok(step.lines <= 200);
        if (step.lines === 0 && step.creates === 0) break;
      }
      assert.deepEqual(steps.at(-1), { lines: 0, creates: 0 }, 'the sweep ends');
      assert.equal(
        steps.reduce((n, step) => n + step.lines, 0),
        450,
      );
      assert.equal(
        steps.reduce((n, step) => n + step.creates, 0),
        2,
        'the abandoned create and the empty mark',
      );
      assert.deepEqual(await store.lines(abandoned.id, -1, 10), []);
      assert.equal((await store.lines(finished.id, -1, 100)).length, 30, 'a finished create keeps its lines');
      assert.equal((await store.get(owner, finished.id))?.counts.total, 30);
      assert.equal((await store.lines(young.id, -1, 100)).length, 20, 'a create under way keeps its lines');
      assert.equal((await store.lines(unmarked.id, -1, 100)).length, 5);
      // Once past its grace, the young one goes too; a failed create's discard ends its mark (nothing to sweep).
      const failed = batch(owner);
      await store.beginCreate(failed.id, now - 2 * grace);
      await store.addLines(failed.id, lines(3));
      assert.equal(await store.discardLines(failed.id), 3);
      assert.deepEqual(await store.sweepCreates(now, bounds), { lines: 20, creates: 1 });
      assert.deepEqual(await store.lines(young.id, -1, 10), []);
      assert.deepEqual(await store.sweepCreates(now, bounds), { lines: 0, creates: 0 });
      assert.equal((await store.lines(finished.id, -1, 100)).length, 30);
    });

    test('a step of the sweep stops at its bytes: the line that reaches them is the last, a line past them goes alone', async () => {
      assert.ok(h);
      const { store, other } = h;
      const big = batch(`key:${randomUUID()}`);
      await store.beginCreate(big.id, 1000);
      await store.addLines(
        big.id,
        lines(5).map((line) => ({ ...line, body: 'x'.repeat(1000) })),
      );
      // Bodies before each line: 0, 1000, 2000 under 2,500 (three go), 3000 not.
      assert.deepEqual(await other.sweepCreates(2000, { lines: 100, bytes: 2500 }), { lines: 3, creates: 0 });
      assert.deepEqual(
        (await store.lines(big.id, -1, 10)).map((line) => line.index),
        [3, 4],
      );
      assert.deepEqual(await other.sweepCreates(2000, { lines: 100, bytes: 10 }), { lines: 1, creates: 0 });
      assert.deepEqual(await other.sweepCreates(2000, { lines: 100, bytes: 10 }), { lines: 1, creates: 1 });
      assert.deepEqual(await other.sweepCreates(2000, { lines: 100, bytes: 10 }), { lines: 0, creates: 0 });
      assert.deepEqual(await store.lines(big.id, -1, 10), []);
    });

    test("an ended batch's lines are swept once its lines_until_ms passes, in bounded steps; its record stays", async () => {
      assert.ok(h);
      const { store, other } = h;
      const owner = `key:${randomUUID()}`;
      const ended = async (linesUntilMs: number | undefined, n: number) => {
        const b = batch(owner);
        await store.create(b);
        await store.addLines(b.id, lines(n));
        for (let i = 0; i < Math.min(n, 10); i++) await store.recordOutcome(b.id, i, ok(`{"answer":${i}}`));
        if (linesUntilMs !== undefined)
          assert.equal(
            await store.transition(b.id, ['in_progress'], 'completed', { completedMs: 1_500, linesUntilMs }),
            true,
          );
        return b;
      };
      const due = await ended(1_000, 450);
      const later = await ended(1_000_000_000_000_000, 5);
      const running = await ended(undefined, 5);
      assert.equal((await store.get(owner, due.id))?.linesUntilMs, 1_000);
      const bounds = { lines: 200, bytes: 1024 * 1024 };
      const steps = [];
      for (let i = 0; i < 10; i++) {
        const step = await other.sweepEndedLines(2_000, bounds);
        steps.push(step);
        assert.ok(step.lines <= 200, 'one step removes at most its bound');
        if (step.lines === 0 && step.batches === 0) break;
      }
      assert.equal(steps[0]?.lines, 200);
      assert.deepEqual(steps.at(-1), { lines: 0, batches: 0 }, 'the sweep ends');
      assert.equal(
        steps.reduce((n, step) => n + step.lines, 0),
        450,
      );
      assert.equal(
        steps.reduce((n, step) => n + step.batches, 0),
        1,
      );
      assert.deepEqual(await store.lines(due.id, -1, 10), []);
      const kept = await store.get(owner, due.id);
      assert.equal(kept?.status, 'completed', 'the record stays');
      assert.equal(kept?.counts.total, 450);
      assert.equal(kept?.counts.succeeded, 10);
      assert.equal(kept?.linesUntilMs, null, 'its mark is cleared: nothing left to sweep');
      assert.equal((await store.lines(later.id, -1, 10)).length, 5, 'not yet due');
      assert.equal((await store.lines(running.id, -1, 10)).length, 5, 'a running batch is never swept');
      // Answers count in a step's bytes: bodies of 7 bytes, answers of 1,000.
      const answered = batch(owner);
      await store.create(answered);
      await store.addLines(answered.id, lines(4));
      for (let i = 0; i < 4; i++) await store.recordOutcome(answered.id, i, ok('y'.repeat(1000)));
      await store.transition(answered.id, ['in_progress'], 'completed', { completedMs: 1, linesUntilMs: 1_500 });
      // Before each line: 0, 1007, 2014 bytes; under 1,500 two go.
      assert.deepEqual(await other.sweepEndedLines(2_000, { lines: 100, bytes: 1_500 }), { lines: 2, batches: 0 });
      assert.deepEqual(await other.sweepEndedLines(2_000, { lines: 100, bytes: 1_500 }), { lines: 2, batches: 1 });
      assert.deepEqual(await other.sweepEndedLines(2_000, { lines: 100, bytes: 1_500 }), { lines: 0, batches: 0 });
    });

    test('the leases held by one name prefix are found (the prefix taken literally), active batches only', async () => {
      assert.ok(h);
      const { store, other } = h;
      const prefix = `runner_${randomUUID().slice(0, 8)}_`;
      const mine = batch(`key:${randomUUID()}`);
      const lookAlike = batch(`key:${randomUUID()}`);
      const done = batch(`key:${randomUUID()}`);
      for (const b of [mine, lookAlike, done]) await store.create(b);
      const now = Date.now() + 20_000_000;
      const claimOne = async (holder: string, id: string) => {
        const claimed = await store.claim(holder, now, 60_000, 1000);
        // Only the one batch is kept by this holder: the others it took are given back.
        for (const r of claimed) if (r.id !== id) await store.release(r.id, holder);
        assert.ok(claimed.some((r) => r.id === id));
      };
      await claimOne(`${prefix}42_a`, mine.id);
      // A LIKE pattern would take "_" for any character: this name must not match.
      await claimOne(`${prefix.slice(0, -1)}X42_b`, lookAlike.id);
      await claimOne(`${prefix}43_c`, done.id);
      await store.transition(done.id, ['in_progress'], 'completed', { completedMs: 1 });
      assert.deepEqual(await other.leasesHeldBy(prefix, 100), [{ id: mine.id, holder: `${prefix}42_a` }]);
      await store.release(mine.id, `${prefix}42_a`);
      assert.deepEqual(await other.leasesHeldBy(prefix, 100), []);
    });

    test('a lease is held by one instance, renewed by it, and taken over only after it expires', async () => {
      const b = batch(`key:${randomUUID()}`);
      await s().create(b);
      const now = Date.now();
      const mine = (await s().claim('A', now, 1000, 1000)).filter((r) => r.id === b.id);
      assert.equal(mine.length, 1);
      assert.equal(
        (await h!.other.claim('B', now + 500, 1000, 1000)).some((r) => r.id === b.id),
        false,
      );
      assert.equal(await h!.other.renew(b.id, 'B', now + 5000), false);
      assert.equal(await s().renew(b.id, 'A', now + 3000), true);
      assert.equal(
        (await h!.other.claim('B', now + 2000, 1000, 1000)).some((r) => r.id === b.id),
        false,
        'renewed',
      );
      assert.equal(
        (await h!.other.claim('B', now + 3000, 1000, 1000)).some((r) => r.id === b.id),
        true,
        'expired',
      );
      assert.equal(await s().renew(b.id, 'A', now + 9000), false, 'the old holder lost it');
      await h!.other.release(b.id, 'B');
      assert.equal(
        (await s().claim('A', now + 3001, 1000, 1000)).some((r) => r.id === b.id),
        true,
        'released',
      );
      assert.ok((await s().active(1000)).some((r) => r.id === b.id));
    });

    test('many instances claiming at once: each batch goes to exactly one', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const b = batch(`key:${randomUUID()}`);
        await s().create(b);
        ids.add(b.id);
      }
      const now = Date.now() + 10_000_000;
      const claims = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? h!.other : s()).claim(`H${i}`, now, 60_000, 1000)),
      );
      const won = claims
        .flat()
        .filter((r) => ids.has(r.id))
        .map((r) => r.id);
      assert.equal(won.length, ids.size);
      assert.equal(new Set(won).size, ids.size);
    });
  });
}
