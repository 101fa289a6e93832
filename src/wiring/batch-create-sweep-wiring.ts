import type { FastifyInstance } from 'fastify';
import type { BatchStore, SweepStep } from '../store/batch-contract.js';
import { sweepInBackground, sweepInSteps } from './background-sweep-wiring.js';

/**
 * One step (one store call, one transaction on SQLite, whose writes hold the event loop): 200 lines, or fewer once
 * they hold 4 MiB (one line of any size). Such a step holds the loop for milliseconds at most (docs/files.md);
 * the 4 MiB lines of a 256 MiB create go one step each.
 */
export const CREATE_SWEEP_STEP: SweepStep = { lines: 200, bytes: 4 * 1024 * 1024 };
/**
 * The sweep of Anthropic creates a crash cut off (docs/files.md, "How big an Anthropic batch can be"): their lines
 * were written before a batch record that never came, and nothing else reads or removes them. Those whose create
 * began more than `graceMs` ago are removed in bounded steps (CREATE_SWEEP_STEP), each its own store call with
 * a turn of the event loop between them. Runs once the app is ready, in the background (readiness never waits for
 * it), then every hour; stops at its next step when the app closes. One log line when it removed something.
 */
export function sweepCreatesInBackground(app: FastifyInstance, store: BatchStore, graceMs: number): void {
  sweepInBackground(app, 'sweeping abandoned batch creates failed', (signal) => sweepOnce(app, store, graceMs, signal));
}

async function sweepOnce(app: FastifyInstance, store: BatchStore, graceMs: number, signal: AbortSignal): Promise<void> {
  const before = Date.now() - graceMs;
  const removed = { lines: 0, creates: 0 };
  try {
    await sweepInSteps(signal, removed, () => store.sweepCreates(before, CREATE_SWEEP_STEP));
  } finally {
    if (removed.lines > 0 || removed.creates > 0)
      app.log.info(
        { lines: removed.lines, creates: removed.creates, graceSeconds: graceMs / 1000 },
        'removed the lines of batch creates a crash cut off (no batch record)',
      );
  }
}
