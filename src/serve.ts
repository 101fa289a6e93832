import cluster from 'node:cluster';
import { buildApp } from './app.js';
import type { GatewayConfig } from './config/types.js';
import { flushLogSync, type Logger } from './observability/logger.js';
import { EXIT_CANNOT_START } from './process/exit-codes.js';
import { printDevTokenHint } from './process/dev-token-hint.js';
import { listenFailure } from './process/listen-failure.js';
import { openDependencies } from './dependencies.js';
import { installUndiciPatch } from './net/undici.js';

/** One serving process (the single process, or a cluster worker): open the stores, build the app, listen, drain. */
export async function runServer(
  config: GatewayConfig,
  logger: Logger,
  version: string,
  readConfig?: () => Promise<GatewayConfig>,
): Promise<void> {
  // undici's dispatchers come from its internal modules: a layout other than the pinned release's stops the start
  // here, with an error naming the installed version, before any store is opened.
  installUndiciPatch();
  const deps = await openDependencies(config, logger);
  const { app, beginShutdown, reloadCertificate, reloadConfig } = await buildApp({
    ...deps,
    ...(readConfig ? { readConfig } : {}),
  });
  try {
    // A burst of thousands of callers connecting at once overflows Node's default accept queue (511): the
    // kernel's somaxconn caps whatever is asked here (4096 on current Linux).
    await app.listen({ host: config.host, port: config.port, backlog: 4096 });
  } catch (error) {
    const reason = listenFailure(error, config.host, config.port);
    if (reason === undefined) throw error;
    // The address cannot be had: say so plainly and exit with the code that tells a cluster primary (and a
    // supervisor such as systemd's RestartPreventExitStatus) that starting again would fail the same way.
    logger.fatal({ host: config.host, port: config.port, code: (error as { code?: string }).code }, reason);
    flushLogSync(logger);
    process.stderr.write(`gateway: ${reason}\n`);
    process.exit(EXIT_CANNOT_START);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;

  logger.info(
    {
      environment: config.environment,
      version,
      // Which runtime: `npm start` runs the project's own Node (node_modules/.bin), not necessarily the PATH's.
      node: process.version,
      host: config.host,
      port,
      upstreams: config.upstreams.map((u) => u.name),
      store: deps.sqlite.kind,
      rate_limits:
        config.limits.caller || config.limits.models.size > 0 || config.limits.upstreams.size > 0
          ? deps.kinds.limits
          : 'off (scoped keys may carry their own)',
      usage: deps.kinds.usage,
      idempotency: deps.kinds.idempotency,
      files: deps.kinds.files,
      batches: deps.kinds.batches,
      vector_stores: deps.kinds.vectorStores,
      pid: process.pid,
    },
    'gateway started',
  );
  if (!cluster.isWorker) printDevTokenHint(config, port);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    beginShutdown();
    logger.info(
      { signal, grace_ms: config.shutdownGraceMs },
      'draining: no new connections, finishing in-flight requests',
    );
    const force = setTimeout(() => {
      logger.warn('grace period over: closing the remaining connections');
      app.server.closeAllConnections();
    }, config.shutdownGraceMs);
    force.unref();
    app
      .close()
      .then(() => deps.close())
      .then(() => {
        clearTimeout(force);
        logger.info('stopped');
        logger.flush();
        process.exitCode = 0;
        // A cluster worker's IPC channel would keep it alive: let go of it so the process ends like a single one.
        cluster.worker?.disconnect();
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        flushLogSync(logger);
        process.exit(1);
      });
  };
  // SIGHUP: the config file and the TLS certificate are read again (with WORKERS > 1 the primary passes it on).
  process.on('SIGHUP', () => {
    if (!reloadCertificate()) logger.info('SIGHUP: no TLS certificate to reload');
    void reloadConfig('SIGHUP');
  });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
