import type { FastifyInstance } from 'fastify';
import type { BatchStore, SweptLines } from '../store/batch-contract.js';
import { sweepInBackground, sweepInSteps } from './background-sweep-wiring.js';
import { CREATE_SWEEP_STEP } from './batch-create-sweep-wiring.js';

/**
 * The sweep of ended batches' lines (docs/files.md, "How long batch results are kept"): a batch's lines (each
 * line's request and answer, up to `batches.max_line_bytes` each) are removed once its `lines_until_ms` has passed:
 * its output files' expiry (OpenAI's), its results' end (Anthropic's, `batches.anthropic_results_retention_days`
 * after creation), at once for a failed one. The batch's record stays (its status and counts). Bounded steps as the
 * sweep of abandoned creates (CREATE_SWEEP_STEP: 200 lines or 4 MiB, one store call each, a turn of the event loop
 * between them); once the app is ready, then every hour; stops at its next step when the app closes.
 */
export function sweepEndedLinesInBackground(app: FastifyInstance, store: BatchStore): void {
  sweepInBackground(app, "sweeping ended batches' lines failed", async (signal) => {
    const removed = await sweepEndedLinesOnce(store, Date.now(), signal);
    if (removed.lines > 0 || removed.batches > 0)
      app.log.info(removed, "removed the lines of ended batches past their results' retention");
  });
}

/** One pass: steps until nothing is due, the pass's bound, or `signal`. What it removed. */
export async function sweepEndedLinesOnce(store: BatchStore, nowMs: number, signal: AbortSignal): Promise<SweptLines> {
  return sweepInSteps(signal, { lines: 0, batches: 0 }, () => store.sweepEndedLines(nowMs, CREATE_SWEEP_STEP));
}
