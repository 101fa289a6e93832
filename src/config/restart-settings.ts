import type { GatewayConfig } from './types.js';

/**
 * The settings a running process cannot change: what it listens on, how many processes serve, where its state
 * lives, and what was built once at start (the HTTP server's bounds, the stores' policies, metrics and tracing).
 * A reload that changes one names it in its log line and keeps the running value (docs/config.md, "Live reload").
 * Each entry: the name an operator knows it by, and how to copy the running value into the new config.
 */
const RESTART_ONLY: ReadonlyArray<readonly [string, (running: GatewayConfig, next: GatewayConfig) => void]> = [
  ['server.host (HOST)', (r, n) => void (n.host = r.host)],
  ['server.port (PORT)', (r, n) => void (n.port = r.port)],
  ['server.workers (WORKERS)', (r, n) => void (n.workers = r.workers)],
  ['DATA_DIR', (r, n) => void (n.dataDir = r.dataDir)],
  ['REDIS_URL', (r, n) => void (n.redisUrl = r.redisUrl)],
  ['DATABASE_URL', (r, n) => void (n.databaseUrl = r.databaseUrl)],
  ['server.tls', (r, n) => void (n.tls = r.tls)],
  ['server.body_limit_bytes', (r, n) => void (n.bodyLimitBytes = r.bodyLimitBytes)],
  ['server.request_timeout_seconds', (r, n) => void (n.requestTimeoutMs = r.requestTimeoutMs)],
  ['server.shutdown_grace_ms', (r, n) => void (n.shutdownGraceMs = r.shutdownGraceMs)],
  ['server.trusted_proxies', (r, n) => void (n.trustedProxies = r.trustedProxies)],
  ['server.public_base_url', (r, n) => void (n.publicBaseUrl = r.publicBaseUrl)],
  ['environment (GATEWAY_ENV)', (r, n) => void (n.environment = r.environment)],
  ['metrics.enabled', (r, n) => void (n.metricsEnabled = r.metricsEnabled)],
  ['tracing', (r, n) => void (n.tracing = r.tracing)],
  ['idempotency', (r, n) => void (n.idempotency = r.idempotency)],
  ['responses', (r, n) => void (n.responses = r.responses)],
  ['usage', (r, n) => void (n.usage = r.usage)],
  ['circuit_breaker', (r, n) => void (n.circuitBreaker = r.circuitBreaker)],
  // The file stores, the uploads' bounds and the batch runner are built once at start (docs/files.md).
  ['files', (r, n) => void (n.files = r.files)],
  ['batches', (r, n) => void (n.batches = r.batches)],
  // The vector store backend and its ingestion runner are built once at start (docs/retrieval.md).
  ['vector_stores', (r, n) => void (n.vectorStores = r.vectorStores)],
  ['cache.max_total_bytes', (r, n) => void (n.cache = { ...n.cache, maxTotalBytes: r.cache.maxTotalBytes })],
  ['auth.key_cache_seconds', (r, n) => void (n.keyCacheMs = r.keyCacheMs)],
  [
    'dashboard.session_hours',
    (r, n) => void (n.dashboard = { ...n.dashboard, sessionTtlMs: r.dashboard.sessionTtlMs }),
  ],
  [
    'webhooks.timeout_seconds / allow_private_addresses',
    (r, n) =>
      void (n.webhooks = {
        ...n.webhooks,
        timeoutMs: r.webhooks.timeoutMs,
        allowPrivateAddresses: r.webhooks.allowPrivateAddresses,
      }),
  ],
];

/** Values the file does not hold (the environment's, or the data directory's): carried over silently. */
function carryProcessValues(running: GatewayConfig, next: GatewayConfig): void {
  next.version = running.version;
  next.logLevel = running.logLevel;
  next.adminTokens = running.adminTokens;
  next.adminTokenSource = running.adminTokenSource;
  next.adminTokenFile = running.adminTokenFile;
}

/**
 * The config to apply: `next` with every restart-only setting set back to its running value, and the names of
 * those that differed (to be logged: they take effect at the next start).
 */
export function keepRestartSettings(
  running: GatewayConfig,
  next: GatewayConfig,
): { config: GatewayConfig; needRestart: string[] } {
  const config: GatewayConfig = { ...next };
  carryProcessValues(running, config);
  const needRestart: string[] = [];
  for (const [name, keep] of RESTART_ONLY) {
    const before = JSON.stringify(config);
    keep(running, config);
    if (JSON.stringify(config) !== before) needRestart.push(name);
  }
  return { config, needRestart };
}
