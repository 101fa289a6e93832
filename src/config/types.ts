import type { McpConfig } from './mcp-schema.js';
import type { BatchesConfig } from './batches-schema.js';
import type { GatewayEnvironment } from './names.js';
import type { StreamUsageMode } from './provider-presets.js';
import type { PriceCatalog } from './price-catalog.js';
import type { FilesConfig } from './files-schema.js';
import type { VectorStoresConfig } from './vector-stores-schema.js';

export type { StreamUsageMode };

export interface Timeouts {
  /** TCP + TLS connection establishment. */
  connectMs: number;
  /** From sending the request until the upstream's response headers arrive. */
  firstByteMs: number;
  /** Longest silence allowed between two pieces of the response body (a stalled stream ends here). */
  idleMs: number;
  /** The whole upstream call, streams included. */
  totalMs: number;
}

export interface UpstreamConfig {
  name: string;
  /** Which wire format the upstream speaks: `anthropic`, or an OpenAI-compatible preset name. */
  kind: string;
  /** OpenAI-compatible: how the key is sent and whether the model is a deployment in the path (Azure). */
  auth: 'bearer' | 'api-key';
  deploymentInPath: boolean;
  /** Azure OpenAI's `api-version`. */
  apiVersion: string | undefined;
  /**
   * OpenAI-compatible: ask for usage on every stream (`stream_options.include_usage`): `on`, `off`, or `auto`
   * (ask, and stop asking this upstream once it refuses the field).
   */
  streamUsage: StreamUsageMode;
  baseUrl: string;
  /** Resolved secret; never logged (the logger also scrubs its value). */
  apiKey: string | undefined;
  /** Keep-alive connections per process, at most; undefined: no bound. */
  maxConnections: number | undefined;
  /** Calls in flight per process, at most; undefined: no bound. */
  maxConcurrent: number | undefined;
  /** Longest wait for a slot when a bound is reached, before `503 upstream_busy`. */
  queueTimeoutMs: number;
  timeouts: Timeouts;
  healthCheck: 'models' | 'none';
  /** Anthropic only: `max_tokens` when the caller gives none. */
  defaultMaxTokens: number;
  /** Batches routed wholly to this upstream: forwarded to its own batch API (`native`) or run by the gateway. */
  batch: 'native' | 'gateway';
}

export interface RouteTarget {
  upstream: string;
  upstreamModel: string;
  weight: number;
}

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  deadlineMs: number;
}

/** How one model's answers are cached (docs/cache.md). */
export interface CachePolicy {
  ttlMs: number;
  maxEntryBytes: number;
  /** One cache for every caller, rather than one per caller. */
  shared: boolean;
  /** Cache requests that sample (temperature absent or > 0) or offer tools, too. */
  sampled: boolean;
}

export interface ModelConfig {
  id: string;
  /** The first target's upstream and model (what the models route shows). */
  upstream: string;
  upstreamModel: string;
  /** Load-balanced by weight; then `fallbacks` in order. */
  targets: RouteTarget[];
  fallbacks: RouteTarget[];
  /** Undefined: the config's default policy. */
  retry: RetryPolicy | undefined;
  aliases: string[];
  /** USD per million input / output tokens, and cache reads / 5-minute writes / 1-hour writes (absent: core/models/pricing.ts). */
  pricing:
    | {
        inputPerMillion: number;
        outputPerMillion: number;
        cacheReadPerMillion: number | undefined;
        cacheWritePerMillion: number | undefined;
        cacheWrite1hPerMillion: number | undefined;
      }
    | undefined;
  contextWindow: number | undefined;
  /** A translated request's fields that have no equivalent: dropped and named (tolerant) or refused (strict). */
  translation: 'tolerant' | 'strict';
  /** Responses requests to upstreams that all speak the API: forwarded as they are, or through chat when exact. */
  responses: 'native' | 'chat';
  /** Whether a request translated for an Anthropic upstream gets the gateway's prompt-cache breakpoints (docs/usage.md). */
  promptCache: 'auto' | 'off';
  /** The response cache's settings for this model (global ones merged with its own); undefined: not cached. */
  cache: CachePolicy | undefined;
  /** chat or embedding, when declared (a call of the other kind is a 400). */
  type: 'chat' | 'embedding' | undefined;
  dimensions: number | undefined;
  createdAt: string | undefined;
  /** The model's human-readable name, when the config gives one. */
  displayName: string | undefined;
  description: string | undefined;
}

export interface WindowLimit {
  limit: number;
  windowMs: number;
}

export interface LimitSet {
  requests: WindowLimit | undefined;
  tokens: WindowLimit | undefined;
  concurrent: number | undefined;
}

export interface LimitsConfig {
  caller: LimitSet | undefined;
  models: Map<string, LimitSet>;
  upstreams: Map<string, LimitSet>;
  onStoreFailure: 'open' | 'closed';
  /** The longest pause an upstream's 429 + Retry-After imposes on that upstream; 0: no pauses. */
  upstreamPauseMaxMs: number;
}

/** The one validated configuration object: what the program knows of the environment, past its entry points. */
export interface GatewayConfig {
  environment: GatewayEnvironment;
  version: string;
  host: string;
  port: number;
  dataDir: string;
  logLevel: string;
  bodyLimitBytes: number;
  /** The longest a caller may take to send one whole request, headers and body (slow senders hold sockets). */
  requestTimeoutMs: number;
  shutdownGraceMs: number;
  /** Server processes sharing the port (node:cluster); 1 runs the server in this process. */
  workers: number;
  /** Accepted administrator tokens (several during a rotation). */
  adminTokens: string[];
  /** Where the admin token came from, for the start-up message (never the token itself). */
  adminTokenSource: 'env' | 'generated' | 'data-dir';
  adminTokenFile: string | undefined;
  upstreams: UpstreamConfig[];
  models: ModelConfig[];
  defaultUpstream: string | undefined;
  devEchoModel: boolean;
  /** Prices and context windows of models whose config gives none (`price_catalog: false`: undefined). */
  priceCatalog: PriceCatalog | undefined;
  limits: LimitsConfig;
  /** The retry policy of models without their own (default: one try, no retry). */
  retry: RetryPolicy;
  circuitBreaker: { failureThreshold: number; cooldownMs: number };
  /**
   * The response cache: the bound of its store, and the policy of models the config does not declare (pass-through
   * ids to the default upstream, built-in models) when `cache.enabled` is true; declared models carry their own.
   */
  cache: { maxTotalBytes: number; undeclaredModels: CachePolicy | undefined };
  idempotency: { ttlMs: number; onStoreFailure: 'open' | 'closed'; leaseMs: number; maxReplayBytes: number };
  /** Stored Responses API responses: kept at all, for how long, and their bounds (docs/responses.md). */
  responses: {
    store: boolean;
    ttlMs: number;
    maxStoredBytes: number;
    maxConversationBytes: number;
    maxConversationTurns: number;
    maxCallerBytes: number;
  };
  /** Batches run by the gateway itself (docs/files.md, "Batches"). */
  batches: BatchesConfig;
  /** Files and uploads: where they live, their bounds and ages (docs/files.md). */
  files: FilesConfig;
  /** Vector stores: where they live, their defaults and bounds (docs/retrieval.md). */
  vectorStores: VectorStoresConfig;
  /** Upstream MCP servers and the MCP gateway's settings (docs/mcp.md). */
  mcp: McpConfig;
  /** REDIS_URL: when set, limits (and later idempotency) live in Redis, shared by every instance. */
  redisUrl: string | undefined;
  webhooks: WebhooksConfig;
  /** Scoped keys: how long a key record is cached per instance. */
  keyCacheMs: number;
  oauth: OAuthConfig | undefined;
  /** Usage records: on or off, kept for `retentionMs` and within `maxBytes` with their rollups (docs/usage.md). */
  usage: { enabled: boolean; retentionMs: number; maxBytes: number };
  metricsEnabled: boolean;
  /** The /dashboard page; sessionTtlMs: how long a login lasts. */
  dashboard: { enabled: boolean; sessionTtlMs: number };
  /** OpenTelemetry tracing; undefined when off (the default). */
  tracing: TracingConfig | undefined;
  /** DATABASE_URL: usage records go to PostgreSQL, shared by every instance. */
  databaseUrl: string | undefined;
  /** HTTPS listener: PEM file paths (read at start and on change). */
  tls: { certFile: string; keyFile: string } | undefined;
  trustedProxies: string[];
  /** `server.public_base_url` without a final `/`: the start of the URLs the gateway gives out; undefined: the request's origin. */
  publicBaseUrl?: string | undefined;
  basicUsers: BasicUser[];
  /**
   * The config file this was read from (absolute path; undefined: none) and its version, the short SHA-256 of its
   * bytes (`none` without a file). Absent in configurations built by hand (tests, embedding programs).
   */
  source?: { file: string | undefined; version: string };
}

export interface TracingConfig {
  /** OTLP/HTTP traces endpoint (JSON encoding). */
  endpoint: string;
  serviceName: string;
  sampleRatio: number;
  /** OTEL_EXPORTER_OTLP_HEADERS (collector credentials: never logged). */
  headers: Record<string, string>;
  exportDelayMs: number;
  exportTimeoutMs: number;
}

export interface BasicUser {
  username: string;
  /** scrypt$... (see src/secrets/password.ts). */
  passwordHash: string;
  routes: string[];
  models: string[];
  /** The MCP tools the user may list and call (patterns `<server>/<tool glob>`); empty: none. */
  mcpTools: string[];
}

export type RolloutStage = 'off' | 'canary' | 'all';

export interface WebhookSubscription {
  id: string;
  url: string;
  /** Resolved signing secrets (never logged). */
  secrets: string[];
  /** Event kinds wanted (`*` = all). */
  events: string[];
  canary: boolean;
  includeContent: boolean;
  maxConcurrency: number;
}

export interface WebhooksConfig {
  subscriptions: WebhookSubscription[];
  /** Stage per event kind; a kind not listed is `off`. */
  rollout: Record<string, RolloutStage>;
  allowPrivateAddresses: boolean;
  maxAttempts: number;
  maxAgeMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
  pollIntervalMs: number;
}

export interface OAuthConfig {
  issuer: string;
  /** One accepted audience, or several (any one of them in the token's `aud` will do). */
  audience: string | string[];
  jwksUrl: string;
  /** Asymmetric algorithms only: `none` and HMAC (HS*) are refused whatever this says. */
  algorithms: string[];
  clockToleranceSeconds: number;
  /**
   * OAuth scope → the gateway routes it grants, as the file says; absent: each route's default scope, those of the
   * surfaces the app mounts included (names/api-names.ts `defaultOAuthScopes`, resolved by the wiring).
   */
  scopes?: Record<string, string[]>;
  /** The shortest wait between two JWKS refreshes caused by unknown key ids. */
  jwksCooldownMs: number;
}
