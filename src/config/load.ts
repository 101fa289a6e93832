import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { resolve, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_AZURE_API_VERSION, OPENAI_PRESETS, type OpenAiPresetName } from './provider-presets.js';
import type { z } from 'zod';
import { configFileSchema, DEFAULT_MAX_REPLAY_BYTES, DEFAULT_QUEUE_TIMEOUT_MS, ENVIRONMENTS, retrySchema, WEBHOOK_EVENT_KINDS, webhooksSchema, type ConfigFile, type GatewayEnvironment, type LimitSetFileEntry, type WebhooksFileEntry } from './schema.js';
import type { BasicUser, GatewayConfig, OAuthConfig, TracingConfig, LimitSet, LimitsConfig, ModelConfig, RetryPolicy, RolloutStage, Timeouts, UpstreamConfig, WebhookSubscription, WebhooksConfig, WindowLimit } from './types.js';
import { isLoopbackHost, refusedHost } from '../net/address-guard.js';
import { isPasswordHash } from '../secrets/password.js';

/** Defaults chosen for chat workloads: generation can legitimately take minutes, silence for 60 s cannot. */
export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 5_000, firstByteMs: 60_000, idleMs: 60_000, totalMs: 600_000 };
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** A 1 MiB body needs 30 s only below ~35 KB/s; a caller slower than that is holding a socket, not sending. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;
const ENV_UPSTREAM_NAME = 'default';

/** A configuration problem; `problems` name each bad field so `gateway config check` and start-up can list them. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads the environment and the optional config file into one validated GatewayConfig. This function and the
 * CLI are the only readers of `process.env` (passed in, so tests give their own). Throws ConfigError listing
 * every problem at once, each naming its field.
 */
export function loadConfig(env: Env, options: { cwd?: string; version?: string } = {}): GatewayConfig {
  const cwd = options.cwd ?? process.cwd();
  const problems: string[] = [];
  const environment = parseEnvironment(env.GATEWAY_ENV, problems);
  const file = env.GATEWAY_CONFIG ? readConfigFile(resolve(cwd, env.GATEWAY_CONFIG), problems) : {};
  const fileDir = env.GATEWAY_CONFIG ? dirname(resolve(cwd, env.GATEWAY_CONFIG)) : cwd;

  const envSection = file.environments?.[environment];
  const defaultTimeouts = mergeTimeouts(DEFAULT_TIMEOUTS, file.timeouts, envTimeouts(env, problems));
  const upstreams = (envSection?.upstreams ?? file.upstreams ?? []).map((u, i) =>
    toUpstream(u, i, defaultTimeouts, env, fileDir, problems),
  );
  const envUpstreamAdded = env.UPSTREAM_BASE_URL ? addEnvUpstream(env, upstreams, defaultTimeouts, problems) : false;

  const models = (envSection?.models ?? file.models ?? []).map(toModel);
  let defaultUpstream = envSection?.default_upstream ?? file.default_upstream;
  if (defaultUpstream === undefined && envUpstreamAdded) defaultUpstream = ENV_UPSTREAM_NAME;
  checkReferences(upstreams, models, defaultUpstream, problems);
  checkLimitModels(file.limits?.models, models, problems);
  const webhooks = toWebhooks(envSection?.webhooks ?? file.webhooks, env, fileDir, problems);

  const port = parseIntEnv(env, 'PORT', problems, 0, 65535) ?? file.server?.port ?? 8080;
  const bodyLimitBytes =
    parseIntEnv(env, 'BODY_LIMIT_BYTES', problems, 1024, 64 * 1024 * 1024) ?? file.server?.body_limit_bytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const requestTimeoutSeconds =
    parseIntEnv(env, 'REQUEST_TIMEOUT_SECONDS', problems, 1, 3600) ?? file.server?.request_timeout_seconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS;
  const logLevel = parseLogLevel(env.LOG_LEVEL, problems);
  const shutdownGraceMs = parseIntEnv(env, 'SHUTDOWN_GRACE_MS', problems) ?? file.server?.shutdown_grace_ms ?? 10_000;
  const workers = parseWorkers(env.WORKERS ?? (file.server?.workers === undefined ? undefined : String(file.server.workers)), problems);
  const adminTokens = parseAdminTokens(env.ADMIN_TOKEN);
  checkAdminTokens(environment, adminTokens, problems);
  const oauth = toOAuth(file.auth?.oauth, problems);
  const basicUsers = toBasicUsers(file.auth?.basic_users ?? [], env, fileDir, problems);
  const tracing = toTracing(file.tracing, env, problems);
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
    limits: toLimits(file.limits),
    retry: toRetry(retrySchema.parse(file.retry ?? {})),
    circuitBreaker: {
      failureThreshold: file.circuit_breaker?.failure_threshold ?? 5,
      cooldownMs: (file.circuit_breaker?.cooldown_seconds ?? 30) * 1000,
    },
    idempotency: {
      ttlMs: (file.idempotency?.ttl_seconds ?? 86_400) * 1000,
      onStoreFailure: file.idempotency?.on_store_failure ?? 'closed',
      leaseMs: (file.idempotency?.lease_seconds ?? 30) * 1000,
      maxReplayBytes: file.idempotency?.max_replay_bytes ?? DEFAULT_MAX_REPLAY_BYTES,
    },
    redisUrl: env.REDIS_URL || undefined,
    webhooks,
    keyCacheMs: (file.auth?.key_cache_seconds ?? 5) * 1000,
    oauth,
    usage: { enabled: file.usage?.enabled ?? true, retentionMs: (file.usage?.retention_days ?? 90) * 86_400_000 },
    databaseUrl: env.DATABASE_URL || undefined,
    metricsEnabled: file.metrics?.enabled ?? true,
    dashboard: { enabled: file.dashboard?.enabled ?? true, sessionTtlMs: Math.round((file.dashboard?.session_hours ?? 12) * 3_600_000) },
    tracing,
    tls: file.server?.tls ? { certFile: resolve(fileDir, file.server.tls.cert_file), keyFile: resolve(fileDir, file.server.tls.key_file) } : undefined,
    trustedProxies: file.server?.trusted_proxies ?? [],
    basicUsers,
  };
}

function toLimitSet(entry: LimitSetFileEntry | undefined): LimitSet | undefined {
  if (!entry) return undefined;
  const window = (w: { limit: number; window_seconds: number } | undefined): WindowLimit | undefined =>
    w === undefined ? undefined : { limit: w.limit, windowMs: w.window_seconds * 1000 };
  return { requests: window(entry.requests), tokens: window(entry.tokens), concurrent: entry.concurrent };
}

function toLimits(file: ConfigFile['limits']): LimitsConfig {
  const map = (record: Record<string, LimitSetFileEntry> | undefined) =>
    new Map(Object.entries(record ?? {}).map(([k, v]) => [k, toLimitSet(v) as LimitSet]));
  return {
    caller: toLimitSet(file?.caller),
    models: map(file?.models),
    upstreams: map(file?.upstreams),
    onStoreFailure: file?.on_store_failure ?? 'open',
    upstreamPauseMaxMs: (file?.upstream_pause_max_seconds ?? 60) * 1000,
  };
}

/** ADMIN_TOKEN may hold several comma-separated tokens, so a new one can be rolled out before the old one is removed. */
export function parseAdminTokens(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

/** Outside dev a gateway never starts unprotected, nor with a token short enough to guess. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

function checkAdminTokens(environment: GatewayEnvironment, tokens: string[], problems: string[]): void {
  if (environment === 'dev') return;
  if (tokens.length === 0) {
    problems.push(`ADMIN_TOKEN: required when GATEWAY_ENV=${environment} (comma-separate several tokens to rotate)`);
  } else if (tokens.some((t) => t.length < MIN_ADMIN_TOKEN_LENGTH)) {
    problems.push(`ADMIN_TOKEN: every token must have at least ${MIN_ADMIN_TOKEN_LENGTH} characters when GATEWAY_ENV=${environment}`);
  }
}

function parseEnvironment(raw: string | undefined, problems: string[]): GatewayEnvironment {
  const value = raw ?? 'dev';
  if ((ENVIRONMENTS as readonly string[]).includes(value)) return value as GatewayEnvironment;
  problems.push(`GATEWAY_ENV: must be one of ${ENVIRONMENTS.join(', ')} (got "${value}")`);
  return 'dev';
}

function readConfigFile(path: string, problems: string[]): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(`GATEWAY_CONFIG: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return {};
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    problems.push(`${path}: not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(error as Error).message}`);
    return {};
  }
  const parsed = configFileSchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  problems.push(...formatZodIssues(path, parsed.error.issues));
  return {};
}

/** Turns zod issues into lines like `config.yaml: upstreams[0].base_url: must be an http:// or https:// URL`. */
export function formatZodIssues(source: string, issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const path = issue.path
      .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
      .join('');
    const unknownKeys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    return `${source}: ${path || '(root)'}: ${issue.message}${unknownKeys}`;
  });
}

function envTimeouts(env: Env, problems: string[]): Partial<Timeouts> {
  return {
    connectMs: parseIntEnv(env, 'UPSTREAM_CONNECT_TIMEOUT_MS', problems),
    firstByteMs: parseIntEnv(env, 'UPSTREAM_FIRST_BYTE_TIMEOUT_MS', problems),
    idleMs: parseIntEnv(env, 'UPSTREAM_IDLE_TIMEOUT_MS', problems),
    totalMs: parseIntEnv(env, 'UPSTREAM_TOTAL_TIMEOUT_MS', problems),
  };
}

function mergeTimeouts(
  base: Timeouts,
  file: ConfigFile['timeouts'] | undefined,
  override: Partial<Timeouts> = {},
): Timeouts {
  return {
    connectMs: override.connectMs ?? file?.connect_ms ?? base.connectMs,
    firstByteMs: override.firstByteMs ?? file?.first_byte_ms ?? base.firstByteMs,
    idleMs: override.idleMs ?? file?.idle_ms ?? base.idleMs,
    totalMs: override.totalMs ?? file?.total_ms ?? base.totalMs,
  };
}

function toUpstream(
  entry: NonNullable<ConfigFile['upstreams']>[number],
  index: number,
  defaults: Timeouts,
  env: Env,
  fileDir: string,
  problems: string[],
): UpstreamConfig {
  let apiKey: string | undefined;
  if (entry.api_key_env) {
    apiKey = env[entry.api_key_env];
    if (!apiKey) problems.push(`upstreams[${index}].api_key_env: environment variable ${entry.api_key_env} is not set`);
  } else if (entry.api_key_file) {
    try {
      apiKey = readFileSync(resolve(fileDir, entry.api_key_file), 'utf8').trim();
    } catch {
      problems.push(`upstreams[${index}].api_key_file: cannot read ${entry.api_key_file}`);
    }
  }
  const preset = Object.hasOwn(OPENAI_PRESETS, entry.kind) ? OPENAI_PRESETS[entry.kind as OpenAiPresetName] : undefined;
  const baseUrl = entry.base_url ?? preset?.baseUrl ?? NATIVE_DEFAULT_URLS[entry.kind];
  if (!baseUrl) problems.push(`upstreams[${index}].base_url: required for kind ${entry.kind}`);
  else if (insecure(baseUrl) && !entry.allow_insecure_http) {
    problems.push(`upstreams[${index}].base_url: plain http:// to a host that is not loopback; use https:// (TLS 1.2+), or set allow_insecure_http: true for a trusted private network`);
  }
  return {
    name: entry.name,
    kind: entry.kind,
    auth: preset?.auth ?? 'bearer',
    deploymentInPath: preset?.deploymentInPath ?? false,
    apiVersion: preset?.deploymentInPath ? (entry.api_version ?? DEFAULT_AZURE_API_VERSION) : entry.api_version,
    streamUsage: entry.stream_usage === undefined ? (preset?.streamUsage ?? 'off') : entry.stream_usage === 'auto' ? 'auto' : entry.stream_usage ? 'on' : 'off',
    baseUrl: (baseUrl ?? 'http://invalid').replace(/\/+$/, ''),
    apiKey,
    maxConnections: entry.max_connections,
    maxConcurrent: entry.max_concurrent,
    queueTimeoutMs: entry.queue_timeout_ms,
    timeouts: mergeTimeouts(defaults, entry.timeouts),
    healthCheck: entry.health_check,
    defaultMaxTokens: entry.default_max_tokens,
  };
}

/** Plain HTTP to anything but this machine: keys and prompts would cross a network in clear text. */
function insecure(baseUrl: string): boolean {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  return url?.protocol === 'http:' && !isLoopbackHost(url.hostname);
}

/** Default base URLs of the providers with their own wire format. */
const NATIVE_DEFAULT_URLS: Record<string, string> = {
  anthropic: 'https://api.anthropic.com/v1',
  gemini: 'https://generativelanguage.googleapis.com/v1beta',
};

function addEnvUpstream(env: Env, upstreams: UpstreamConfig[], timeouts: Timeouts, problems: string[]): boolean {
  const baseUrl = env.UPSTREAM_BASE_URL ?? '';
  if (!/^https?:\/\/[^/]/i.test(baseUrl) || !URL.canParse(baseUrl)) {
    problems.push('UPSTREAM_BASE_URL: must be an http:// or https:// URL'); // not echoed: it may embed a key
    return false;
  }
  if (upstreams.some((u) => u.name === ENV_UPSTREAM_NAME)) {
    problems.push(`UPSTREAM_BASE_URL: the config file already defines an upstream named "${ENV_UPSTREAM_NAME}"`);
    return false;
  }
  if (insecure(baseUrl) && env.UPSTREAM_ALLOW_INSECURE_HTTP !== 'true') {
    problems.push('UPSTREAM_BASE_URL: plain http:// to a host that is not loopback; use https:// (TLS 1.2+), or set UPSTREAM_ALLOW_INSECURE_HTTP=true for a trusted private network');
    return false;
  }
  const kind = env.UPSTREAM_KIND || 'openai-compatible';
  if (!Object.hasOwn(NATIVE_DEFAULT_URLS, kind) && !Object.hasOwn(OPENAI_PRESETS, kind)) {
    problems.push(`UPSTREAM_KIND: must be anthropic, gemini or one of ${Object.keys(OPENAI_PRESETS).join(', ')} (got "${kind.slice(0, 40)}")`);
    return false;
  }
  const preset = Object.hasOwn(OPENAI_PRESETS, kind) ? OPENAI_PRESETS[kind as OpenAiPresetName] : undefined;
  upstreams.push({
    name: ENV_UPSTREAM_NAME,
    kind,
    auth: preset?.auth ?? 'bearer',
    deploymentInPath: preset?.deploymentInPath ?? false,
    apiVersion: preset?.deploymentInPath ? (env.UPSTREAM_API_VERSION ?? DEFAULT_AZURE_API_VERSION) : undefined,
    streamUsage: preset?.streamUsage ?? 'off',
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey: env.UPSTREAM_API_KEY || undefined,
    maxConnections: undefined,
    maxConcurrent: parseIntEnv(env, 'UPSTREAM_MAX_CONCURRENT', problems, 1, 1_000_000),
    queueTimeoutMs: parseIntEnv(env, 'UPSTREAM_QUEUE_TIMEOUT_MS', problems, 0, 60_000) ?? DEFAULT_QUEUE_TIMEOUT_MS,
    timeouts,
    healthCheck: 'models',
    defaultMaxTokens: 4096,
  });
  return true;
}

function toModel(entry: NonNullable<ConfigFile['models']>[number]): ModelConfig {
  const targets = (entry.targets ?? [{ upstream: entry.upstream ?? '', upstream_model: entry.upstream_model, weight: 1 }]).map((t) => ({
    upstream: t.upstream,
    upstreamModel: t.upstream_model ?? entry.id,
    weight: t.weight,
  }));
  const first = targets[0] ?? { upstream: '', upstreamModel: entry.id, weight: 1 };
  return {
    id: entry.id,
    upstream: first.upstream,
    upstreamModel: first.upstreamModel,
    targets,
    fallbacks: (entry.fallbacks ?? []).map((f) => ({ upstream: f.upstream, upstreamModel: f.upstream_model ?? entry.id, weight: 1 })),
    retry: entry.retry ? toRetry(entry.retry) : undefined,
    aliases: entry.aliases ?? [],
    pricing: entry.pricing ? { inputPerMillion: entry.pricing.input_per_million, outputPerMillion: entry.pricing.output_per_million } : undefined,
    contextWindow: entry.context_window,
    createdAt: entry.created_at === undefined ? undefined : new Date(entry.created_at).toISOString(),
    description: entry.description,
  };
}

function toRetry(entry: NonNullable<ConfigFile['retry']>): RetryPolicy {
  return { attempts: entry.attempts, baseDelayMs: entry.base_delay_ms, maxDelayMs: entry.max_delay_ms, deadlineMs: entry.deadline_ms };
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
      if (ids.has(alias) || models.some((other) => other.id === alias)) problems.push(`models[${i}].aliases[${j}]: "${alias}" is already a model id or alias`);
      ids.add(alias);
    });
    for (const [list, targets] of [['targets', m.targets], ['fallbacks', m.fallbacks]] as const) {
      targets.forEach((t, j) => {
        if (!names.has(t.upstream)) problems.push(`models[${i}].${m.targets.length === 1 && list === 'targets' ? 'upstream' : `${list}[${j}].upstream`}: no upstream named "${t.upstream}"`);
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
 * The webhook section of this environment: secrets resolved from the environment or files, the rollout stages
 * (the documented kinds default to `all`), and receiver URLs checked against SSRF when they name an address.
 */
function toWebhooks(entry: WebhooksFileEntry | undefined, env: Env, fileDir: string, problems: string[]): WebhooksConfig {
  const file = webhooksSchema.parse(entry ?? {});
  const ids = new Set<string>();
  const subscriptions = file.subscriptions.map((sub, i): WebhookSubscription => {
    if (ids.has(sub.id)) problems.push(`webhooks.subscriptions[${i}].id: "${sub.id}" is defined twice`);
    ids.add(sub.id);
    const refused = file.allow_private_addresses ? undefined : refusedHost(new URL(sub.url).hostname);
    if (refused) problems.push(`webhooks.subscriptions[${i}].url: ${refused} (set webhooks.allow_private_addresses: true to allow it)`);
    const secrets = sub.secrets.map((ref, j) => {
      const where = `webhooks.subscriptions[${i}].secrets[${j}]`;
      if (ref.env !== undefined) {
        const value = env[ref.env];
        if (!value) problems.push(`${where}.env: environment variable ${ref.env} is not set`);
        return value ?? '';
      }
      try {
        return readFileSync(resolve(fileDir, ref.file ?? ''), 'utf8').trim();
      } catch {
        problems.push(`${where}.file: cannot read ${ref.file}`);
        return '';
      }
    });
    secrets.forEach((secret, j) => {
      if (secret !== '' && secret.length < 16) problems.push(`webhooks.subscriptions[${i}].secrets[${j}]: a signing secret needs 16 characters or more`);
    });
    return { id: sub.id, url: sub.url, secrets, events: sub.events, canary: sub.canary, includeContent: sub.include_content, maxConcurrency: sub.max_concurrency };
  });
  const rollout: Record<string, RolloutStage> = Object.fromEntries(WEBHOOK_EVENT_KINDS.map((kind) => [kind, 'all' as RolloutStage]));
  Object.assign(rollout, file.rollout);
  if (file.max_delay_ms < file.base_delay_ms) problems.push('webhooks.max_delay_ms: must be at least base_delay_ms');
  return {
    subscriptions,
    rollout,
    allowPrivateAddresses: file.allow_private_addresses,
    maxAttempts: file.max_attempts,
    maxAgeMs: file.max_age_seconds * 1000,
    baseDelayMs: file.base_delay_ms,
    maxDelayMs: file.max_delay_ms,
    timeoutMs: file.timeout_ms,
    pollIntervalMs: file.poll_interval_ms,
  };
}

function toBasicUsers(entries: NonNullable<NonNullable<ConfigFile['auth']>['basic_users']>, env: Env, fileDir: string, problems: string[]): BasicUser[] {
  return entries.map((u, i) => {
    let hash: string | undefined;
    if (u.password_hash_env) hash = env[u.password_hash_env];
    else if (u.password_hash_file) {
      try {
        hash = readFileSync(resolve(fileDir, u.password_hash_file), 'utf8').trim();
      } catch {
        problems.push(`auth.basic_users[${i}].password_hash_file: cannot read ${u.password_hash_file}`);
      }
    } else problems.push(`auth.basic_users[${i}]: give password_hash_env or password_hash_file (a scrypt hash from \`gateway users hash-password\`)`);
    if (hash !== undefined && !isPasswordHash(hash)) problems.push(`auth.basic_users[${i}]: the password hash is not a scrypt$... hash (never put a password itself)`);
    return { username: u.username, passwordHash: hash ?? '', routes: u.routes, models: u.models };
  });
}

function toOAuth(entry: NonNullable<ConfigFile['auth']>['oauth'], problems: string[]): OAuthConfig | undefined {
  if (!entry) return undefined;
  const url = new URL(entry.jwks_url);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !loopback) problems.push('auth.oauth.jwks_url: must be https:// (signing keys fetched in clear text could be replaced)');
  return {
    issuer: entry.issuer,
    audience: entry.audience,
    jwksUrl: entry.jwks_url,
    algorithms: entry.algorithms,
    clockToleranceSeconds: entry.clock_tolerance_seconds,
    scopes: entry.scopes,
    jwksCooldownMs: entry.jwks_refresh_cooldown_seconds * 1000,
  };
}

/**
 * Tracing is on when the file says `tracing.enabled: true` or OTEL_TRACES_EXPORTER=otlp. The standard variables
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), OTEL_SERVICE_NAME and
 * OTEL_EXPORTER_OTLP_HEADERS (`k=v,k=v`, for collector credentials, kept out of the file) override the file.
 */
function toTracing(entry: ConfigFile['tracing'], env: Env, problems: string[]): TracingConfig | undefined {
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp' && exporter !== 'none') {
    problems.push(`OTEL_TRACES_EXPORTER: must be "otlp" or "none" (got "${exporter.slice(0, 40)}")`);
  }
  const enabled = exporter === 'none' ? false : exporter === 'otlp' || entry?.enabled === true;
  if (!enabled) return undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || base || entry?.endpoint || 'http://127.0.0.1:4318/v1/traces';
  if (!isHttpUrl(endpoint)) problems.push('tracing.endpoint (or OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT): must be an http(s):// URL, e.g. http://127.0.0.1:4318/v1/traces');
  const headers: Record<string, string> = {};
  for (const pair of (env.OTEL_EXPORTER_OTLP_HEADERS ?? '').split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf('=');
    if (at <= 0) {
      problems.push('OTEL_EXPORTER_OTLP_HEADERS: must be name=value pairs separated by commas');
      break;
    }
    const value = pair.slice(at + 1).trim();
    try {
      headers[pair.slice(0, at).trim().toLowerCase()] = decodeURIComponent(value);
    } catch {
      headers[pair.slice(0, at).trim().toLowerCase()] = value;
    }
  }
  return {
    endpoint,
    serviceName: env.OTEL_SERVICE_NAME || entry?.service_name || 'llm-gateway',
    sampleRatio: entry?.sample_ratio ?? 1,
    headers,
    exportDelayMs: entry?.export_delay_ms ?? 2000,
    exportTimeoutMs: entry?.export_timeout_ms ?? 10_000,
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** Limits are kept per model id, so every alias shares its model's limits; a limit set under an alias would never apply. */
function checkLimitModels(limitModels: Record<string, unknown> | undefined, models: ModelConfig[], problems: string[]): void {
  for (const key of Object.keys(limitModels ?? {})) {
    const owner = models.find((m) => m.aliases.includes(key));
    if (owner) problems.push(`limits.models.${key}: "${key}" is an alias of "${owner.id}"; set the limits under the model id (aliases share them)`);
  }
}

function parseIntEnv(env: Env, name: string, problems: string[], min = 1, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    problems.push(`${name}: must be a whole number from ${min} to ${max} (got "${raw.slice(0, 40)}")`);
    return undefined;
  }
  return value;
}

/** WORKERS: how many server processes share the port; "auto" is one per CPU core the process may use. */
function parseWorkers(raw: string | undefined, problems: string[]): number {
  if (raw === undefined || raw === '') return 1;
  if (raw === 'auto') return Math.min(MAX_WORKERS, availableParallelism());
  if (/^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= MAX_WORKERS) return Number(raw);
  problems.push(`WORKERS: must be "auto" or a whole number from 1 to ${MAX_WORKERS} (got "${raw.slice(0, 40)}")`);
  return 1;
}

const MAX_WORKERS = 64;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseLogLevel(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw === '') return 'info';
  if (LOG_LEVELS.includes(raw)) return raw;
  problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')} (got "${raw.slice(0, 40)}")`);
  return 'info';
}
