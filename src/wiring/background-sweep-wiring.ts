import type { FastifyInstance } from 'fastify';

/** How often a crash-leftover sweep runs after the one at start-up: its leftovers come only from crashes, and are few. */
export const SWEEP_INTERVAL_MS = 3_600_000;

/**
 * Runs `pass` once the app is ready, in the background (readiness never waits for it), then every hour (or every
 * `intervalMs`); one pass at a time. On close, `pass`'s signal is aborted (it stops at its next step) and the close waits for it. A pass that
 * fails is logged as a warning with `failure`.
 */
export function sweepInBackground(
  app: FastifyInstance,
  failure: string,
  pass: (signal: AbortSignal) => Promise<void>,
  intervalMs = SWEEP_INTERVAL_MS,
): void {
  const stop = new AbortController();
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const run = () => {
    running ??= pass(stop.signal)
      .catch((error: unknown) => app.log.warn({ err: error }, failure))
      .finally(() => (running = undefined));
  };
  app.addHook('onReady', async () => {
    run();
    timer = setInterval(run, intervalMs);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    stop.abort();
    clearInterval(timer);
    await running;
  });
}

/** Steps per pass at most (200,000 lines, or 4 GiB, at the batch sweeps' step): whatever is left waits for the next pass. */
const MAX_STEPS_PER_PASS = 1_000;

/**
 * One pass of a sweep in bounded steps: `step` (one store call) until a step removes nothing, the pass's bound, or
 * `signal`, with a turn of the event loop between steps. Each step's counts are added into `removed` as they come,
 * so a pass cut off by a failure still shows what it removed before it; `removed` is also what it returns.
 */
export async function sweepInSteps<Counts extends { [name in keyof Counts]: number }>(
  signal: AbortSignal,
  removed: Counts,
  step: () => Promise<Counts>,
): Promise<Counts> {
  const names = Object.keys(removed) as Array<keyof Counts>;
  for (let n = 0; n < MAX_STEPS_PER_PASS && !signal.aborted; n++) {
    const swept = await step();
    for (const name of names) (removed[name] as number) += swept[name];
    if (names.every((name) => swept[name] === 0)) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return removed;
}
