import { mcpSecrets } from './config/mcp-secrets.js';
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { ConfigError } from './config/config-error.js';
import { createLogger } from './observability/logger.js';
import { runPrimary } from './process/primary.js';
import { mayRunWorkers, readConfigInChild } from './process/config-from-child.js';
import { readConfigInThread } from './process/config-thread.js';
import { configFromPrimary } from './process/config-handoff.js';
import { EXIT_CANNOT_START } from './process/exit-codes.js';
import { unsupportedNode } from './process/node-version.js';
import { judgeFileLimit, readOpenFileLimit } from './process/file-limit.js';
import { callBound } from './core/limits/upstream-capacity.js';
import type { GatewayConfig } from './config/types.js';
import type { Logger } from './observability/logger.js';
import { printDevTokenHint } from './process/dev-token-hint.js';

/**
 * Start-up: read config -> build dependencies -> listen -> drain on SIGTERM/SIGINT. With WORKERS > 1 this
 * process becomes the cluster primary and each worker runs the same start-up as a single process.
 * An entry point: it acts when loaded, and it is one of the four modules that read process.env (with the CLI's,
 * the config child's and the reload thread's entry points; docs/architecture.md "Who reads process.env").
 */
export async function main(): Promise<void> {
  const unsupported = unsupportedNode();
  if (unsupported) {
    process.stderr.write(`gateway: ${unsupported}\n`);
    process.exit(EXIT_CANNOT_START);
  }
  const version = readPackageVersion();
  const config = await readConfig(version);
  const logger = createLogger({
    level: config.logLevel,
    secrets: [
      ...config.adminTokens,
      ...config.upstreams.map((u) => u.apiKey),
      ...config.webhooks.subscriptions.flatMap((s) => s.secrets),
      ...mcpSecrets(config.mcp),
    ],
    ...(cluster.isWorker ? { base: { worker: cluster.worker?.id } } : {}),
  });
  // Log lines are batched for speed; flush at least every second so a quiet gateway's log is never stale.
  const flushLogs = setInterval(() => logger.flush(), 1000);
  flushLogs.unref();
  // Workers inherit the primary's limit: told once, by the primary or the single process.
  if (cluster.isPrimary) reportFileLimit(config, logger);
  if (config.workers > 1 && cluster.isPrimary) {
    // The config child already ran the migrations, once, before the workers open the file.
    printDevTokenHint(config, config.port);
    const code = await runPrimary(config, logger);
    logger.flush();
    process.exit(code);
  }
  // Loaded only here: a cluster primary never serves, and without the server's modules (Fastify, undici, the
  // stores...) it holds less memory while idle (bench/idle-rss.ts).
  const { runServer } = await import('./serve.js');
  // A reload reads the same file and environment again (docs/config.md, "Live reload"), on a thread of its own:
  // the serving thread never reads, parses or validates a config file (nor loads zod, in a cluster worker).
  const reread = () => readConfigInThread(version);
  await runServer(config, logger, version, reread);
}

/**
 * The validated config. A cluster worker takes the primary's (config-handoff.ts). A process that may become a
 * cluster primary has it read by a child process (config-from-child.ts), which also provisions the dev token and
 * runs the migrations: the primary then never loads zod or node:sqlite (a smaller idle footprint for the primary and
 * each worker, bench/idle-rss.ts).
 * Otherwise (no WORKERS, no config file) it is read here, as it always was: the default start pays no child.
 */
async function readConfig(version: string): Promise<GatewayConfig> {
  if (cluster.isWorker) return configFromPrimary();
  if (mayRunWorkers(process.env)) return readConfigInChild(version);
  // WORKERS=1, or neither WORKERS nor a config file: a single process, which provisions the dev token itself.
  const [{ loadConfig }, { provisionAdminToken }] = await Promise.all([
    import('./config/load.js'),
    import('./config/admin-token.js'),
  ]);
  return provisionAdminToken(loadConfig(process.env, { version }));
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
