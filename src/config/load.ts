import { resolve, dirname } from 'node:path';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { z } from 'zod';
import { ConfigError } from './config-error.js';
import { FILE_BOUNDS, readBoundedFileSync, readFailure } from './bounded-file.js';
import { configVersionOf } from './config-version.js';
import { parseFailureWhere } from './parse-failure.js';
import { ConfigYamlRefusal, parseConfigYaml } from './config-yaml.js';
import { configFileSchema, retrySchema, type ConfigFile } from './schema.js';
import type { GatewayConfig, ModelConfig, UpstreamConfig } from './types.js';
import type { Env } from './env.js';
import {
  checkAdminTokens,
  envTimeouts,
  parseAdminTokens,
  parseEnvironment,
  parseIntEnv,
  parseLogLevel,
  parseWorkers,
} from './env-values.js';
import { DEFAULT_TIMEOUTS, ENV_UPSTREAM_NAME, addEnvUpstream, mergeTimeouts, toUpstream } from './upstreams.js';
import { instanceIdOf, toBatches } from './batches-schema.js';
import { toFiles } from './files-schema.js';
import { toVectorStores } from './vector-stores-schema.js';
import { toMcp } from './mcp-schema.js';
import { DEFAULT_PRICE_CATALOG_FILE, readPriceCatalog } from './price-catalog.js';
import {
  checkLimitModels,
  toBasicUsers,
  toCachePolicy,
  toLimits,
  toModel,
  toOAuth,
  toResponses,
  toRetry,
  toTracing,
  toWebhooks,
} from './sections.js';

export { ConfigError, configVersionOf };

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** A 1 MiB body needs 30 s only below ~35 KB/s; a caller slower than that is holding a socket, not sending. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;

/** The built-in catalog, another file's, or none (`price_catalog: false`). */
function toPriceCatalog(setting: string | false | undefined, fileDir: string, problems: string[]) {
  if (setting === false) return undefined;
  return readPriceCatalog(setting === undefined ? DEFAULT_PRICE_CATALOG_FILE : resolve(fileDir, setting), problems);
}

/**
 * Reads the environment and the optional config file into one validated GatewayConfig. The environment is passed
 * in (the entry points hand it `process.env`, docs/architecture.md "Who reads process.env"; tests give their own),
 * never read here. Throws ConfigError listing every problem at once, each naming its field.
 */
export function loadConfig(env: Env, options: { cwd?: string; version?: string } = {}): GatewayConfig {
  const cwd = options.cwd ?? process.cwd();
  const problems: string[] = [];
  const environment = parseEnvironment(env.GATEWAY_ENV, problems);
  // No file: the schema's defaults, as for a file that sets nothing.
  const source: { file: string | undefined; version: string } = { file: undefined, version: 'none' };
  const file = env.GATEWAY_CONFIG
    ? readConfigFile(resolve(cwd, env.GATEWAY_CONFIG), problems, source)
    : configFileSchema.parse({});
  const fileDir = env.GATEWAY_CONFIG ? dirname(resolve(cwd, env.GATEWAY_CONFIG)) : cwd;

  const envSection = file.environments?.[environment];
  const defaultTimeouts = mergeTimeouts(DEFAULT_TIMEOUTS, file.timeouts, envTimeouts(env, problems));
  const reading = { defaults: defaultTimeouts, env, fileDir, problems };
  const upstreams = (envSection?.upstreams ?? file.upstreams ?? []).map((u, i) => toUpstream(u, i, reading));
  const envUpstreamAdded = env.UPSTREAM_BASE_URL ? addEnvUpstream(env, upstreams, defaultTimeouts, problems) : false;

  const models = (envSection?.models ?? file.models ?? []).map((entry) => toModel(entry, file.cache));
  let defaultUpstream = envSection?.default_upstream ?? file.default_upstream;
  if (defaultUpstream === undefined && envUpstreamAdded) defaultUpstream = ENV_UPSTREAM_NAME;
  checkReferences(upstreams, models, defaultUpstream, problems);
  checkLimitModels(file.limits?.models, models, problems);
  const webhooks = toWebhooks(envSection?.webhooks ?? file.webhooks, env, fileDir, problems);
  const mcp = toMcp(envSection?.mcp_servers ?? file.mcp_servers, file.mcp, env, fileDir, problems);

  const port = parseIntEnv(env, 'PORT', problems, 0, 65535) ?? file.server?.port ?? 8080;
  const bodyLimitBytes =
    parseIntEnv(env, 'BODY_LIMIT_BYTES', problems, 1024, 64 * 1024 * 1024) ??
    file.server?.body_limit_bytes ??
    DEFAULT_BODY_LIMIT_BYTES;
  const requestTimeoutSeconds =
    parseIntEnv(env, 'REQUEST_TIMEOUT_SECONDS', problems, 1, 3600) ??
    file.server?.request_timeout_seconds ??
    DEFAULT_REQUEST_TIMEOUT_SECONDS;
  const logLevel = parseLogLevel(env.LOG_LEVEL, problems);
  const shutdownGraceMs = parseIntEnv(env, 'SHUTDOWN_GRACE_MS', problems) ?? file.server?.shutdown_grace_ms ?? 10_000;
  const workers = parseWorkers(
    env.WORKERS ?? (file.server?.workers === undefined ? undefined : String(file.server.workers)),
    problems,
  );
  const adminTokens = parseAdminTokens(env.ADMIN_TOKEN);
  checkAdminTokens(environment, adminTokens, problems);
  const oauth = toOAuth(file.auth.oauth, problems);
  const basicUsers = toBasicUsers(file.auth.basic_users ?? [], env, fileDir, problems);
  const tracing = toTracing(file.tracing, env, problems);
  const priceCatalog = toPriceCatalog(file.price_catalog, fileDir, problems);
  const instanceId = instanceIdOf(env, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    environment,
    version: options.version ?? '0.0.0',
    host: env.HOST ?? file.server?.host ?? '127.0.0.1',
    port,
    dataDir: resolve(cwd, env.DATA_DIR ?? './data'),
    logLevel,
    bodyLimitBytes,
    requestTimeoutMs: requestTimeoutSeconds * 1000,
    shutdownGraceMs,
    workers,
    adminTokens,
    adminTokenSource: 'env',
    adminTokenFile: undefined,
    upstreams,
    models,
    defaultUpstream,
    // The echo model is a development aid only: it is never served in staging or prod, whatever the file says.
    devEchoModel: environment === 'dev' && file.dev_echo_model !== false,
    priceCatalog,
    limits: toLimits(file.limits),
    retry: toRetry(retrySchema.parse(file.retry ?? {})),
    circuitBreaker: {
      failureThreshold: file.circuit_breaker.failure_threshold,
      cooldownMs: file.circuit_breaker.cooldown_seconds * 1000,
    },
    cache: { maxTotalBytes: file.cache.max_total_bytes, undeclaredModels: toCachePolicy(undefined, file.cache) },
    idempotency: toIdempotency(file.idempotency),
    redisUrl: env.REDIS_URL || undefined,
    webhooks,
    keyCacheMs: file.auth.key_cache_seconds * 1000,
    oauth,
    usage: toUsage(file.usage),
    responses: toResponses(file.responses),
    batches: toBatches(file.batches, instanceId),
    files: toFiles(file.files),
    vectorStores: toVectorStores(file.vector_stores),
    mcp,
    databaseUrl: env.DATABASE_URL || undefined,
    metricsEnabled: file.metrics.enabled,
    dashboard: { enabled: file.dashboard.enabled, sessionTtlMs: Math.round(file.dashboard.session_hours * 3_600_000) },
    tracing,
    tls: file.server?.tls
      ? { certFile: resolve(fileDir, file.server.tls.cert_file), keyFile: resolve(fileDir, file.server.tls.key_file) }
      : undefined,
    trustedProxies: file.server?.trusted_proxies ?? [],
    publicBaseUrl: file.server?.public_base_url?.replace(/\/+$/, ''),
    basicUsers,
    source,
  };
}

function readConfigFile(path: string, problems: string[], source: { file?: string; version: string }): ConfigFile {
  let text: string;
  source.file = path;
  try {
    // A regular file of at most 4 MiB (a FIFO, a device or a huge file is refused, never waited on or read whole).
    const bytes = readBoundedFileSync(path, FILE_BOUNDS.config);
    source.version = configVersionOf(bytes);
    text = bytes.toString('utf8');
  } catch (error) {
    problems.push(`GATEWAY_CONFIG: cannot read ${path} (${readFailure(error)})`);
    return configFileSchema.parse({});
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    const what = /\.json$/i.test(path) ? 'JSON' : 'YAML';
    problems.push(
      error instanceof ConfigYamlRefusal
        ? `${path}: not valid YAML: ${error.message}`
        : `${path}: not valid ${what} (${parseFailureWhere(error)})`,
    );
    return configFileSchema.parse({});
  }
  const parsed = configFileSchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  problems.push(...formatZodIssues(path, parsed.error.issues));
  return configFileSchema.parse({});
}

/** Turns zod issues into lines like `config.yaml: upstreams[0].base_url: must be an http:// or https:// URL`. */
export function formatZodIssues(source: string, issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const path = issue.path
      .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
      .join('');
    // zod's own message quotes every unknown key: a file of 100,000 of them would be a megabyte per problem.
    const message =
      issue.code === 'unrecognized_keys'
        ? `${issue.keys.length === 1 ? 'Unrecognized key' : `${issue.keys.length} unrecognized keys`} (${someKeys(issue.keys)})`
        : issue.message;
    return `${source}: ${path || '(root)'}: ${message}`;
  });
}

/** The first keys of a list, and how many more (a file of 100,000 unknown keys is not a 1 MB log line). */
function someKeys(keys: readonly string[], shown = 10): string {
  const names = keys.slice(0, shown).map((key) => key.slice(0, 100));
  return keys.length > shown ? `${names.join(', ')} and ${keys.length - shown} more` : names.join(', ');
}

function checkReferences(
  upstreams: UpstreamConfig[],
  models: ModelConfig[],
  defaultUpstream: string | undefined,
  problems: string[],
): void {
  const names = new Set<string>();
  upstreams.forEach((u, i) => {
    if (names.has(u.name)) problems.push(`upstreams[${i}].name: "${u.name}" is defined twice`);
    names.add(u.name);
  });
  const ids = new Set<string>();
  models.forEach((m, i) => {
    m.aliases.forEach((alias, j) => {
      if (ids.has(alias) || models.some((other) => other.id === alias))
        problems.push(`models[${i}].aliases[${j}]: "${alias}" is already a model id or alias`);
      ids.add(alias);
    });
    for (const [list, targets] of [
      ['targets', m.targets],
      ['fallbacks', m.fallbacks],
    ] as const) {
      targets.forEach((t, j) => {
        if (!names.has(t.upstream))
          problems.push(
            `models[${i}].${m.targets.length === 1 && list === 'targets' ? 'upstream' : `${list}[${j}].upstream`}: no upstream named "${t.upstream}"`,
          );
      });
    }
    if (ids.has(m.id)) problems.push(`models[${i}].id: "${m.id}" is defined twice`);
    ids.add(m.id);
  });
  if (defaultUpstream !== undefined && !names.has(defaultUpstream)) {
    problems.push(`default_upstream: no upstream named "${defaultUpstream}"`);
  }
}

/**
 * The YAML parser, loaded only when a YAML config file is read (synchronously, as loadConfig is): a gateway
 * configured from the environment or a JSON file never loads it (a smaller idle footprint).
 */
function parseYaml(text: string): unknown {
  return parseConfigYaml(createRequire(import.meta.url)('yaml') as typeof Yaml, text);
}

function toIdempotency(section: ConfigFile['idempotency']): GatewayConfig['idempotency'] {
  return {
    ttlMs: section.ttl_seconds * 1000,
    onStoreFailure: section.on_store_failure,
    leaseMs: section.lease_seconds * 1000,
    maxReplayBytes: section.max_replay_bytes,
  };
}

function toUsage(section: ConfigFile['usage']): GatewayConfig['usage'] {
  return {
    enabled: section.enabled,
    retentionMs: section.retention_days * 86_400_000,
    maxBytes: section.retention_max_bytes,
  };
}
