/**
 * Shutting batches down cleanly. The runner (src/core/batches/batch-runner.ts): a batch it claims while it stops is
 * given back, never started on a store about to close. The gateway's own line runner
 * (src/core/batches/gateway-run-backend.ts) when the store fails to record a line's
 * outcome (the store failing, or closed under a shutdown): the run stops starting lines and rejects with that error
 * once the lines in flight are done, so the runner logs it and the line stays pending. It used to leave the line's
 * rejected promise unawaited (an unhandled rejection: seen as "database is not open" after a gateway closed) and
 * start the same line again and again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchRunner } from '../../../src/core/batches/batch-runner.js';
import { GatewayRunBackend, LineSlots } from '../../../src/core/batches/gateway-run-backend.js';
import { SqliteBatches } from '../../../src/store/sqlite/sqlite-batches.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { batchRecord, storeWith } from '../../helpers/batch-fixtures.js';

test('a line whose outcome cannot be stored: the run rejects with the error, nothing unhandled, no line run twice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-run-backend-'));
  const sqlite = await openSqliteStore(dir);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const real = new SqliteBatches(sqlite.db);
    const broken = new Error('database is not open');
    // Line 1's outcome cannot be written; the others can.
    const store = storeWith(real, {
      recordOutcome: (id, index, outcome) =>
        index === 1 ? Promise.reject(broken) : real.recordOutcome(id, index, outcome),
    });
    const batch = batchRecord({ total: 3 });
    await store.addLines(
      batch.id,
      [0, 1, 2].map((index) => ({ index, customId: `c${index}`, url: '/v1/chat/completions', body: '{}' })),
    );
    await store.create(batch);
    const runs: number[] = [];
    const backend = new GatewayRunBackend({
      store,
      execute: async (_batch, line) => {
        runs.push(line.index);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { status: 200, body: '{"object":"chat.completion"}', requestId: null };
      },
      slots: new LineSlots(1),
      log: { error: () => undefined },
      rateShare: 1,
      pollMs: 10,
      counters: { succeeded: 0, errored: 0, deferred: 0 },
    });
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 3_000);
    await assert.rejects(backend.run(batch, { lost: false, signal: controller.signal }), (error) => error === broken);
    clearTimeout(timer);
    assert.equal(controller.signal.aborted, false, 'the run ended by itself, not by the abort');
    // Give any stray rejection its turn to be reported.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
    assert.deepEqual(runs, [0, 1], 'no line after the failure started, none twice');
    assert.equal(await store.pendingCount(batch.id), 2, 'the failed line (and the one not started) stay pending');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a batch claimed while the runner stops is given back, not started: stop waits for the claim under way', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-runner-stop-'));
  const sqlite = await openSqliteStore(dir);
  try {
    const real = new SqliteBatches(sqlite.db);
    let claimed!: () => void;
    const claimHeld = new Promise<void>((resolve) => (claimed = resolve));
    let claimStarted!: () => void;
    const claimCalled = new Promise<void>((resolve) => (claimStarted = resolve));
    // The store's claim answers only once the runner has been told to stop.
    const store = storeWith(real, {
      claim: async (...args) => {
        const answer = await real.claim(...args);
        claimStarted();
        await claimHeld;
        return answer;
      },
    });
    const batch = batchRecord({ total: 3 });
    await store.addLines(batch.id, [{ index: 0, customId: 'c0', url: '/v1/chat/completions', body: '{}' }]);
    await store.create(batch);
    const started: string[] = [];
    const runner = new BatchRunner({
      store,
      files: undefined,
      limits: { maxLines: 10, maxLineBytes: 1024 },
      backends: [
        {
          name: 'probe',
          takes: () => true,
          run: async (b) => {
            started.push(b.id);
          },
        },
      ],
      leaseMs: 60_000,
      pollMs: 60_000,
      maxBatches: 4,
      onEnded: () => undefined,
      readLine: (text) => ({ ok: true, value: JSON.parse(text) as unknown }),
      log: { warn: () => undefined, error: () => undefined },
    });
    runner.start();
    await claimCalled;
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(stopped, false, 'stop waits for the claim under way');
    claimed();
    await stopping;
    assert.deepEqual(started, [], 'nothing started after stop');
    // Given back: another holder can claim it at once (the lease was 60 s).
    const other = await real.claim('runner_other', Date.now(), 60_000, 4);
    assert.deepEqual(
      other.map((b) => b.id),
      [batch.id],
    );
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
