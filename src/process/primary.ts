import cluster, { type Worker } from 'node:cluster';
import type { GatewayConfig } from '../config/types.js';
import type { Logger } from '../observability/logger.js';

/** A worker that dies within this long of starting counts as a crash loop, not a one-off failure. */
const EARLY_DEATH_MS = 10_000;
/** Early deaths in a row after which the primary gives up (a broken config or port, not bad luck). */
const MAX_EARLY_DEATHS = 5;
const RESPAWN_DELAY_MS = 500;

/**
 * The cluster primary (WORKERS > 1): it serves nothing itself. It forks `config.workers` server processes that
 * share the listening port (node:cluster hands connections out round-robin on Linux), replaces a worker that
 * dies, and on SIGTERM/SIGINT asks every worker to drain (each does the same graceful shutdown as a single
 * process) and exits when they all have.
 *
 * Shared state stays correct across workers on the embedded store: every worker opens the same SQLite file and
 * each rate-limit, idempotency or pause decision is a BEGIN IMMEDIATE transaction on it, which serialises them
 * across processes. The primary prepares what must exist once before the workers race for it: the development
 * admin token file and the schema migrations (both done by the caller before `runPrimary`).
 */
export function runPrimary(config: GatewayConfig, logger: Logger): Promise<number> {
  let stopping = false;
  let exitCode = 0;
  let earlyDeaths = 0;
  const startedAt = new Map<number, number>();

  const fork = (): Worker => {
    const worker = cluster.fork();
    startedAt.set(worker.id, Date.now());
    return worker;
  };

  return new Promise<number>((resolve) => {
    const finishIfDone = () => {
      if (stopping && Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info('all workers stopped');
        resolve(exitCode);
      }
    };

    cluster.on('exit', (worker, code, signal) => {
      const lived = Date.now() - (startedAt.get(worker.id) ?? 0);
      startedAt.delete(worker.id);
      if (stopping) {
        finishIfDone();
        return;
      }
      earlyDeaths = lived < EARLY_DEATH_MS ? earlyDeaths + 1 : 0;
      logger.error({ worker: worker.process.pid, code, signal, lived_ms: lived }, 'worker died; starting a new one');
      if (earlyDeaths >= MAX_EARLY_DEATHS) {
        logger.fatal({ early_deaths: earlyDeaths }, 'workers keep dying right after start; giving up');
        stopping = true;
        exitCode = 1;
        for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
        finishIfDone();
        return;
      }
      setTimeout(fork, RESPAWN_DELAY_MS).unref();
    });

    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal, workers: Object.keys(cluster.workers ?? {}).length }, 'stopping: asking every worker to drain');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
      // A worker that ignores SIGTERM past its own grace period (plus a margin) is killed.
      setTimeout(() => {
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      }, config.shutdownGraceMs + 5_000).unref();
      finishIfDone();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));

    for (let i = 0; i < config.workers; i++) fork();
    logger.info({ workers: config.workers, pid: process.pid }, 'cluster primary started');
  });
}
