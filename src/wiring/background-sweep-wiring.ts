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
