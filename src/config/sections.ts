// The config file's other sections into their typed form: limits, models, retry, webhooks, Basic users, OAuth,
// tracing. Each adds its problems to the list loadConfig reports at once.
import {
  CANARY_EVENT_KINDS,
  WEBHOOK_EVENT_KINDS,
  limitsSchema,
  tracingSchema,
  webhooksSchema,
  type ConfigFile,
  type LimitSetFileEntry,
  type WebhooksFileEntry,
} from './schema.js';
import type {
  BasicUser,
  GatewayConfig,
  OAuthConfig,
  TracingConfig,
  LimitSet,
  LimitsConfig,
  CachePolicy,
  ModelConfig,
  RetryPolicy,
  RolloutStage,
  WebhookSubscription,
  WebhooksConfig,
  WindowLimit,
} from './types.js';
import { isLoopbackHost, refusedHost } from '../net/address-guard.js';
import { isPasswordHash } from '../secrets/password.js';
import type { Env } from './env.js';
import { resolveSecretRef } from './secret-ref.js';
import { toolPatternsProblems } from './tool-patterns.js';
import { isHttpUrl } from './upstreams.js';

export function toLimitSet(entry: LimitSetFileEntry | undefined): LimitSet | undefined {
  if (!entry) return undefined;
  const window = (w: { limit: number; window_seconds: number } | undefined): WindowLimit | undefined =>
    w === undefined ? undefined : { limit: w.limit, windowMs: w.window_seconds * 1000 };
  return { requests: window(entry.requests), tokens: window(entry.tokens), concurrent: entry.concurrent };
}

export function toLimits(entry: ConfigFile['limits']): LimitsConfig {
  const file = limitsSchema.parse(entry ?? {}); // an absent section takes the schema's defaults, stated once there
  const map = (record: Record<string, LimitSetFileEntry> | undefined) =>
    new Map(Object.entries(record ?? {}).map(([k, v]) => [k, toLimitSet(v) as LimitSet]));
  return {
    caller: toLimitSet(file.caller),
    models: map(file.models),
    upstreams: map(file.upstreams),
    onStoreFailure: file.on_store_failure,
    upstreamPauseMaxMs: file.upstream_pause_max_seconds * 1000,
  };
}

export function toModel(
  entry: NonNullable<ConfigFile['models']>[number],
  cacheDefaults: ConfigFile['cache'],
): ModelConfig {
  const targets = (
    entry.targets ?? [{ upstream: entry.upstream ?? '', upstream_model: entry.upstream_model, weight: 1 }]
  ).map((t) => ({
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
    fallbacks: (entry.fallbacks ?? []).map((f) => ({
      upstream: f.upstream,
      upstreamModel: f.upstream_model ?? entry.id,
      weight: 1,
    })),
    retry: entry.retry ? toRetry(entry.retry) : undefined,
    aliases: entry.aliases ?? [],
    pricing: entry.pricing ? toPricing(entry.pricing) : undefined,
    contextWindow: entry.context_window,
    translation: entry.translation ?? 'tolerant',
    responses: entry.responses ?? 'native',
    promptCache: entry.prompt_cache ?? 'auto',
    cache: toCachePolicy(entry.cache, cacheDefaults),
    type: entry.type,
    dimensions: entry.dimensions,
    createdAt: entry.created_at === undefined ? undefined : new Date(entry.created_at).toISOString(),
    displayName: entry.display_name,
    description: entry.description,
  };
}

/** A model's cache policy: its own section over the global one; undefined when caching is off for it. */
/** A model's prices as the config file spells them (a cache price left out stays undefined: core/models/pricing.ts). */
function toPricing(
  entry: NonNullable<NonNullable<ConfigFile['models']>[number]['pricing']>,
): NonNullable<ModelConfig['pricing']> {
  return {
    inputPerMillion: entry.input_per_million,
    outputPerMillion: entry.output_per_million,
    cacheReadPerMillion: entry.cache_read_per_million,
    cacheWritePerMillion: entry.cache_write_per_million,
    cacheWrite1hPerMillion: entry.cache_write_1h_per_million,
  };
}

export function toCachePolicy(
  own: NonNullable<ConfigFile['models']>[number]['cache'],
  defaults: ConfigFile['cache'],
): CachePolicy | undefined {
  if (!(own?.enabled ?? defaults.enabled)) return undefined;
  return {
    ttlMs: (own?.ttl_seconds ?? defaults.ttl_seconds) * 1000,
    maxEntryBytes: Math.min(own?.max_entry_bytes ?? defaults.max_entry_bytes, defaults.max_total_bytes),
    shared: own?.shared ?? defaults.shared,
    sampled: own?.sampled ?? defaults.sampled,
  };
}

/** Stored Responses API responses: what is kept, for how long, and its bounds (docs/responses.md). */
export function toResponses(section: ConfigFile['responses']): GatewayConfig['responses'] {
  return {
    store: section.store,
    ttlMs: section.ttl_seconds * 1000,
    maxStoredBytes: section.max_stored_bytes,
    maxConversationBytes: section.max_conversation_bytes,
    maxConversationTurns: section.max_conversation_turns,
    maxCallerBytes: section.max_caller_bytes,
  };
}

export function toRetry(entry: NonNullable<ConfigFile['retry']>): RetryPolicy {
  return {
    attempts: entry.attempts,
    baseDelayMs: entry.base_delay_ms,
    maxDelayMs: entry.max_delay_ms,
    deadlineMs: entry.deadline_ms,
  };
}

/**
 * The webhook section of this environment: secrets resolved from the environment or files, the rollout stages
 * (the documented kinds default to `all`), and receiver URLs checked against SSRF when they name an address.
 */
export function toWebhooks(
  entry: WebhooksFileEntry | undefined,
  env: Env,
  fileDir: string,
  problems: string[],
): WebhooksConfig {
  const file = webhooksSchema.parse(entry ?? {});
  const ids = new Set<string>();
  const subscriptions = file.subscriptions.map((sub, i): WebhookSubscription => {
    if (ids.has(sub.id)) problems.push(`webhooks.subscriptions[${i}].id: "${sub.id}" is defined twice`);
    ids.add(sub.id);
    const refused = file.allow_private_addresses ? undefined : refusedHost(new URL(sub.url).hostname);
    if (refused)
      problems.push(
        `webhooks.subscriptions[${i}].url: ${refused} (set webhooks.allow_private_addresses: true to allow it)`,
      );
    const secrets = sub.secrets.map((ref, j) => {
      const where = `webhooks.subscriptions[${i}].secrets[${j}]`;
      return resolveSecretRef(ref, { env: `${where}.env`, file: `${where}.file` }, env, fileDir, problems) ?? '';
    });
    secrets.forEach((secret, j) => {
      if (secret !== '' && secret.length < 16)
        problems.push(`webhooks.subscriptions[${i}].secrets[${j}]: a signing secret needs 16 characters or more`);
    });
    return {
      id: sub.id,
      url: sub.url,
      secrets,
      events: sub.events,
      canary: sub.canary,
      includeContent: sub.include_content,
      maxConcurrency: sub.max_concurrency,
    };
  });
  const rollout: Record<string, RolloutStage> = Object.fromEntries(
    WEBHOOK_EVENT_KINDS.map((kind) => [kind, 'all' as RolloutStage]),
  );
  for (const kind of CANARY_EVENT_KINDS) rollout[kind] = 'canary';
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

export function toBasicUsers(
  entries: NonNullable<NonNullable<ConfigFile['auth']>['basic_users']>,
  env: Env,
  fileDir: string,
  problems: string[],
): BasicUser[] {
  return entries.map((u, i) => {
    const where = `auth.basic_users[${i}]`;
    const ref = { env: u.password_hash_env, file: u.password_hash_file };
    const hash = resolveSecretRef(
      ref,
      { env: `${where}.password_hash_env`, file: `${where}.password_hash_file` },
      env,
      fileDir,
      problems,
    );
    if (ref.env === undefined && ref.file === undefined)
      problems.push(
        `auth.basic_users[${i}]: give password_hash_env or password_hash_file (a scrypt hash from \`gateway users hash-password\`)`,
      );
    if (hash !== undefined && !isPasswordHash(hash))
      problems.push(`auth.basic_users[${i}]: the password hash is not a scrypt$... hash (never put a password itself)`);
    problems.push(...toolPatternsProblems(u.mcp_tools, `${where}.mcp_tools`));
    return {
      username: u.username,
      passwordHash: hash ?? '',
      routes: u.routes,
      models: u.models,
      mcpTools: u.mcp_tools,
    };
  });
}

export function toOAuth(entry: NonNullable<ConfigFile['auth']>['oauth'], problems: string[]): OAuthConfig | undefined {
  if (!entry) return undefined;
  const url = new URL(entry.jwks_url);
  if (url.protocol !== 'https:' && !isLoopbackHost(url.hostname))
    problems.push('auth.oauth.jwks_url: must be https:// (signing keys fetched in clear text could be replaced)');
  return {
    issuer: entry.issuer,
    audience: entry.audience,
    jwksUrl: entry.jwks_url,
    algorithms: entry.algorithms,
    clockToleranceSeconds: entry.clock_tolerance_seconds,
    ...(entry.scopes ? { scopes: entry.scopes } : {}),
    jwksCooldownMs: entry.jwks_refresh_cooldown_seconds * 1000,
  };
}

/**
 * Tracing is on when the file says `tracing.enabled: true` or OTEL_TRACES_EXPORTER=otlp. The standard variables
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), OTEL_SERVICE_NAME and
 * OTEL_EXPORTER_OTLP_HEADERS (`k=v,k=v`, for collector credentials, kept out of the file) override the file.
 */
export function toTracing(section: ConfigFile['tracing'], env: Env, problems: string[]): TracingConfig | undefined {
  const entry = tracingSchema.parse(section ?? {}); // an absent section takes the schema's defaults, stated once there
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp' && exporter !== 'none') {
    problems.push(`OTEL_TRACES_EXPORTER: must be "otlp" or "none" (got "${exporter.slice(0, 40)}")`);
  }
  const enabled = exporter === 'none' ? false : exporter === 'otlp' || entry.enabled;
  if (!enabled) return undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT
    ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`
    : undefined;
  const endpoint =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || base || entry.endpoint || 'http://127.0.0.1:4318/v1/traces';
  if (!isHttpUrl(endpoint))
    problems.push(
      'tracing.endpoint (or OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT): must be an http(s):// URL, e.g. http://127.0.0.1:4318/v1/traces',
    );
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
    serviceName: env.OTEL_SERVICE_NAME || entry.service_name || 'llm-gateway',
    sampleRatio: entry.sample_ratio,
    headers,
    exportDelayMs: entry.export_delay_ms,
    exportTimeoutMs: entry.export_timeout_ms,
  };
}

/** Limits are kept per model id, so every alias shares its model's limits; a limit set under an alias would never apply. */
export function checkLimitModels(
  limitModels: Record<string, unknown> | undefined,
  models: ModelConfig[],
  problems: string[],
): void {
  for (const key of Object.keys(limitModels ?? {})) {
    const owner = models.find((m) => m.aliases.includes(key));
    if (owner)
      problems.push(
        `limits.models.${key}: "${key}" is an alias of "${owner.id}"; set the limits under the model id (aliases share them)`,
      );
  }
}
