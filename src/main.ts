import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { buildApp } from './app.js';
import { provisionAdminToken } from './config/admin-token.js';
import { ConfigError, loadConfig } from './config/load.js';
import { createLogger } from './observability/logger.js';
import { openStateStores } from './store/open-state-stores.js';
import { openSqliteStore } from './store/sqlite/sqlite-store.js';
import { runPrimary } from './process/primary.js';
import { EXIT_CANNOT_START } from './process/exit-codes.js';
import { listenFailure } from './process/listen-failure.js';
import { unsupportedNode } from './process/node-version.js';
import { judgeFileLimit, readOpenFileLimit } from './process/file-limit.js';
import { callBound } from './core/upstream-capacity.js';
import type { GatewayConfig } from './config/types.js';
import type { Logger } from './observability/logger.js';
import { openUsageStore } from './store/open-usage-store.js';

/**
 * Start-up: read config -> build dependencies -> listen -> drain on SIGTERM/SIGINT. With WORKERS > 1 this
 * process becomes the cluster primary and each worker runs the same start-up as a single process.
 * The only module with side effects at start, and the only place (with the CLI) that reads process.env.
 */
export async function main(): Promise<void> {
  const unsupported = unsupportedNode();
  if (unsupported) {
    process.stderr.write(`gateway: ${unsupported}\n`);
    process.exit(EXIT_CANNOT_START);
  }
  const version = readPackageVersion();
  // The primary (or the single process) provisions the dev token; workers find it in the data directory.
  const config = provisionAdminToken(loadConfig(process.env, { version }));
  const logger = createLogger({
    level: config.logLevel,
    secrets: [...config.adminTokens, ...config.upstreams.map((u) => u.apiKey), ...config.webhooks.subscriptions.flatMap((s) => s.secrets)],
    ...(cluster.isWorker ? { base: { worker: cluster.worker?.id } } : {}),
  });
  // Log lines are batched for speed; flush at least every second so a quiet gateway's log is never stale.
  const flushLogs = setInterval(() => logger.flush(), 1000);
  flushLogs.unref();
  // Workers inherit the primary's limit: told once, by the primary or the single process.
  if (cluster.isPrimary) reportFileLimit(config, logger);
  if (config.workers > 1 && cluster.isPrimary) {
    // Migrations run once here, before the workers open the file.
    await (await openSqliteStore(config.dataDir)).close();
    printDevTokenHint(config, config.port);
    const code = await runPrimary(config, logger);
    logger.flush();
    process.exit(code);
  }
  await runServer(config, logger, version);
}

async function runServer(config: GatewayConfig, logger: Logger, version: string): Promise<void> {
  const store = await openSqliteStore(config.dataDir);
  const state = await openStateStores(config, store);
  const usage = await openUsageStore(config, store);
  const { app, beginShutdown, reloadCertificate } = await buildApp({ config, logger, store, limiter: state.limiter, idempotency: state.idempotency, pauses: state.pauses, outbox: state.outbox, keys: state.keys, ...(usage ? { usage: usage.store } : {}) });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    const reason = listenFailure(error, config.host, config.port);
    if (reason === undefined) throw error;
    // The address cannot be had: say so plainly and exit with the code that tells a cluster primary (and a
    // supervisor such as systemd's RestartPreventExitStatus) that starting again would fail the same way.
    logger.fatal({ host: config.host, port: config.port, code: (error as { code?: string }).code }, reason);
    logger.flush();
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
      store: store.kind,
      rate_limits: config.limits.caller || config.limits.models.size > 0 || config.limits.upstreams.size > 0 ? state.limiter?.kind : 'off (scoped keys may carry their own)',
      usage: usage?.kind ?? 'off',
      idempotency: state.idempotency.kind,
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
    logger.info({ signal, grace_ms: config.shutdownGraceMs }, 'draining: no new connections, finishing in-flight requests');
    const force = setTimeout(() => {
      logger.warn('grace period over: closing the remaining connections');
      app.server.closeAllConnections();
    }, config.shutdownGraceMs);
    force.unref();
    app
      .close()
      .then(() => state.close())
      .then(() => usage?.close())
      .then(() => store.close())
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
        logger.flush();
        process.exit(1);
      });
  };
  process.on('SIGHUP', () => {
    if (!reloadCertificate()) logger.info('SIGHUP: no TLS certificate to reload');
  });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

/** The descriptor limit and the streams it allows per process; a warning when that is fewer than configured. */
function reportFileLimit(config: GatewayConfig, logger: Logger): void {
  const limit = readOpenFileLimit();
  if (!limit) return;
  const verdict = judgeFileLimit(limit, config.upstreams.map(callBound));
  const fields = { open_files_soft: limit.soft, open_files_hard: limit.hard, streams_per_process: verdict.streams };
  if (verdict.warning) logger.warn(fields, verdict.warning);
  else logger.info(fields, 'open-file limit');
}

function printDevTokenHint(config: GatewayConfig, port: number): void {
  if (!config.adminTokenFile) return;
  // Where the token is, never the token: this line may be shipped to a log aggregator.
  const verb = config.adminTokenSource === 'generated' ? 'generated a development admin token' : 'using the development admin token';
  process.stderr.write(
    `\nNo ADMIN_TOKEN set: ${verb} stored in ${config.adminTokenFile} (mode 0600).\n` +
      `Try: curl -H "Authorization: Bearer $(cat ${config.adminTokenFile})" http://${config.host}:${port}/v1/?route=models\n\n`,
  );
}

function readPackageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`gateway: ${error.message}\n`);
  } else {
    process.stderr.write(`gateway: failed to start: ${(error as Error).stack ?? String(error)}\n`);
  }
  process.exit(1);
});
