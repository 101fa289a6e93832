/**
 * The gateway's own line runner (src/core/batches/gateway-run-backend.ts) sends each line upstream once per claim.
 * On PostgreSQL a line's answer and the runner's next look for pending lines travel on different pool connections:
 * the look can be answered from before the answer was stored, yet arrive after the line has left the in-flight set.
 * Such a line was started again (seen in CI: 9 upstream repeats with 8 lines in flight at a kill); a line in flight
 * when the look was sent is now skipped by that look.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayRunBackend, LineSlots } from '../../../src/core/batches/gateway-run-backend.js';
import { SqliteBatches } from '../../../src/store/sqlite/sqlite-batches.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { batchRecord, storeWith } from '../../helpers/batch-fixtures.js';

test('a look for pending lines answered from before a line was recorded does not start that line again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-line-once-'));
  const sqlite = await openSqliteStore(dir);
  try {
    const real = new SqliteBatches(sqlite.db);
    const recorded = new Set<number>();
    let onRecorded: () => void = () => undefined;
    const runs: number[] = [];
    // pendingLines reads the store at once but answers only after the lines it found pending and already started
    // were recorded and their runs had ended (or after 500 ms): the order two PostgreSQL connections can give.
    const store = storeWith(real, {
      recordOutcome: async (...args) => {
        const stored = await real.recordOutcome(...args);
        recorded.add(args[1]);
        onRecorded();
        return stored;
      },
      pendingLines: async (...args) => {
        const lines = await real.pendingLines(...args);
        const deadline = Date.now() + 500;
        const stale = () => lines.some((l) => runs.includes(l.index) && !recorded.has(l.index));
        while (stale() && Date.now() < deadline)
          await new Promise<void>((resolve) => {
            onRecorded = resolve;
            setTimeout(resolve, 20);
          });
        await new Promise((resolve) => setImmediate(resolve));
        return lines;
      },
    });
    const batch = batchRecord({ total: 3 });
    await store.addLines(
      batch.id,
      [0, 1, 2].map((index) => ({ index, customId: `c${index}`, url: '/v1/chat/completions', body: '{}' })),
    );
    await store.create(batch);
    const backend = new GatewayRunBackend({
      store,
      execute: async (_batch, line) => {
        runs.push(line.index);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { status: 200, body: '{"object":"chat.completion"}', requestId: null };
      },
      slots: new LineSlots(3),
      log: { error: () => undefined },
      rateShare: 1,
      pollMs: 10,
      counters: { succeeded: 0, errored: 0, deferred: 0 },
    });
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 5_000);
    await backend.run(batch, { lost: false, signal: controller.signal });
    clearTimeout(timer);
    assert.equal(controller.signal.aborted, false, 'the run ended by itself');
    assert.deepEqual(
      runs.toSorted((a, b) => a - b),
      [0, 1, 2],
      'each line started once',
    );
    assert.equal(await store.pendingCount(batch.id), 0);
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
