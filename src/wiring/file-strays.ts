import type { FastifyInstance } from 'fastify';
import type { FileStore, StraySweep, UploadStore } from '../store/file-contract.js';

/** How often the stray sweep runs after the one at start-up: strays come only from crashes, and are few. */
export const STRAY_SWEEP_INTERVAL_MS = 3_600_000;

/**
 * The sweep of stray bytes (docs/files.md, "Storage"): what a crash left on disk with no record (only the embedded
 * store has any), removed once older than `graceMs`. Runs once the app is ready, in the background (readiness
 * never waits for it), then every hour; stops at its next step when the app closes. One log line when it removed
 * something, one when it had to skip entries (the first error and how many).
 */
export function sweepStraysInBackground(
  app: FastifyInstance,
  stores: { files: FileStore; uploads: UploadStore },
  graceMs: number,
): void {
  if (!stores.files.sweepStrays && !stores.uploads.sweepStrays) return;
  const stop = new AbortController();
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const run = () => {
    running ??= sweepOnce(app, stores, graceMs, stop.signal)
      .catch((error: unknown) => app.log.warn({ err: error }, 'sweeping stray file bytes failed'))
      .finally(() => (running = undefined));
  };
  app.addHook('onReady', async () => {
    run();
    timer = setInterval(run, STRAY_SWEEP_INTERVAL_MS);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    stop.abort();
    clearInterval(timer);
    await running;
  });
}

async function sweepOnce(
  app: FastifyInstance,
  stores: { files: FileStore; uploads: UploadStore },
  graceMs: number,
  signal: AbortSignal,
): Promise<void> {
  let skipped = 0;
  let first: { error: unknown; path: string } | undefined;
  const sweep: StraySweep = {
    before: Date.now() - graceMs,
    signal,
    onError: (error, path) => {
      skipped++;
      first ??= { error, path };
    },
  };
  let removed = (await stores.files.sweepStrays?.(sweep)) ?? 0;
  if (!signal.aborted) removed += (await stores.uploads.sweepStrays?.(sweep)) ?? 0;
  if (removed > 0)
    app.log.info({ removed, graceSeconds: graceMs / 1000 }, 'removed stray file bytes a crash left (no record)');
  if (first)
    app.log.warn({ err: first.error, path: first.path, skipped }, 'the stray sweep skipped entries it could not check');
}
