import type { FastifyInstance } from 'fastify';
import type { FileStore, StraySweep, UploadStore } from '../store/file-contract.js';
import { sweepInBackground } from './background-sweep-wiring.js';

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
  sweepInBackground(app, 'sweeping stray file bytes failed', (signal) => sweepOnce(app, stores, graceMs, signal));
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
