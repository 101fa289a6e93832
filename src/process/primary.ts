import cluster, { type Worker } from 'node:cluster';
import type { GatewayConfig } from '../config/types.js';
import type { Logger } from '../observability/logger.js';
import { serveClusterMetrics } from '../observability/cluster-metrics.js';
import { EXIT_CANNOT_START } from './exit-codes.js';
import { RespawnPolicy } from './respawn-policy.js';
import { handConfigToWorkers } from './config-handoff.js';

/**
 * The cluster primary (WORKERS > 1): it serves nothing itself. It forks `config.workers` server processes that
 * share the listening port (node:cluster hands connections out round-robin on Linux), replaces a worker that
 * dies, and on SIGTERM/SIGINT asks every worker to drain (each does the same graceful shutdown as a single
 * process) and exits when they all have.
 *
 * Replacing is never given up for workers that had been serving, whatever killed them and however many at once:
 * the respawn timer is a normal (ref'ed) timer, so the primary stays alive even in the moment when no worker is
 * (`kill -9` of every worker at once used to let the primary's event loop run empty and the port close). Only
 * workers that die *before listening* several times in a row make it give up (RespawnPolicy), with a message on
 * stderr and exit code 1; a worker that says it can never start (EXIT_CANNOT_START: the port is taken, say) ends
 * the primary at once with that code.
 *
 * Shared state stays correct across workers on the embedded store: every worker opens the same SQLite file and
 * each rate-limit, idempotency or pause decision is a BEGIN IMMEDIATE transaction on it, which serialises them
 * across processes. The primary prepares what must exist once before the workers race for it: the development
 * admin token file and the schema migrations (both done by the caller before `runPrimary`).
 */
export function runPrimary(config: GatewayConfig, logger: Logger): Promise<number> {
  let stopping = false;
  let exitCode = 0;
  const policy = new RespawnPolicy();
  const listening = new Set<number>();
  const respawns = new Set<NodeJS.Timeout>();
  const forkedAt = new Map<number, number>();

  const fork = (): void => {
    forkedAt.set(cluster.fork().id, Date.now());
  };
  handConfigToWorkers(config);
  serveClusterMetrics(logger, () =>
    [...listening].map((id) => cluster.workers?.[id]).filter((w): w is Worker => w !== undefined),
  );

  return new Promise<number>((resolve) => {
    const finishIfDone = () => {
      if (stopping && respawns.size === 0 && Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info('all workers stopped');
        resolve(exitCode);
      }
    };
    const giveUp = (code: number, message: string) => {
      logger.fatal({ exit_code: code }, message);
      process.stderr.write(`gateway: ${message}\n`);
      stopping = true;
      exitCode = code;
      for (const timer of respawns) clearTimeout(timer);
      respawns.clear();
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      finishIfDone();
    };

    cluster.on('listening', (worker) => {
      listening.add(worker.id);
      policy.started();
    });

    cluster.on('exit', (worker, code, signal) => {
      const started = listening.delete(worker.id);
      const livedMs = Date.now() - (forkedAt.get(worker.id) ?? 0);
      forkedAt.delete(worker.id);
      if (stopping) {
        finishIfDone();
        return;
      }
      if (code === EXIT_CANNOT_START) {
        giveUp(EXIT_CANNOT_START, 'a worker cannot start (see its message above); stopping');
        return;
      }
      const delayMs = policy.died(started, livedMs);
      if (delayMs === undefined) {
        giveUp(
          1,
          `${policy.startFailures} workers in a row died before they could listen; giving up (see the log above)`,
        );
        return;
      }
      logger.error(
        { worker: worker.process.pid, code, signal, lived_ms: livedMs, was_listening: started, respawn_in_ms: delayMs },
        'worker died; starting a new one',
      );
      const timer = setTimeout(() => {
        respawns.delete(timer);
        if (!stopping) fork();
      }, delayMs);
      respawns.add(timer);
    });

    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      for (const timer of respawns) clearTimeout(timer);
      respawns.clear();
      logger.info(
        { signal, workers: Object.keys(cluster.workers ?? {}).length },
        'stopping: asking every worker to drain',
      );
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
      // A worker that ignores SIGTERM past its own grace period (plus a margin) is killed.
      setTimeout(() => {
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      }, config.shutdownGraceMs + 5_000).unref();
      finishIfDone();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    // SIGHUP reloads the TLS certificate in each server process. Sent to the primary (the pid a supervisor
    // knows), its default action would end the primary, and with it every worker: pass it on instead.
    process.on('SIGHUP', () => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
    });

    for (let i = 0; i < config.workers; i++) fork();
    logger.info({ workers: config.workers, pid: process.pid }, 'cluster primary started');
  });
}
