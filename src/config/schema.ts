import { PROVIDER_KIND_NAMES } from './provider-presets.js';
import { z } from 'zod';
import { batchesSectionSchema } from './batches-schema.js';
import { filesSectionSchema } from './files-schema.js';
import { vectorStoresSectionSchema } from './vector-stores-schema.js';
import { mcpSectionSchema, mcpServersSchema } from './mcp-schema.js';
import { serverSectionSchema } from './server-schema.js';
import { ROUTE_NAME, apiEventKinds } from '../names/api-names.js';

/**
 * The configuration file's shape (YAML or JSON, named by GATEWAY_CONFIG). Field names are snake_case like the
 * rest of the wire format. Secrets are never values in this file: only the names of environment variables or
 * files that hold them (`api_key_env`, `api_key_file`), so the file can be committed and reviewed.
 */
// The names also used outside the config (routes, keys, the dashboard) live in a module without zod: a server
// process loads them without the schema (a smaller idle footprint).
export { DEFAULT_OAUTH_SCOPES, ENVIRONMENTS, GRANTABLE_ROUTES } from './names.js';
export type { GatewayEnvironment, GrantableRoute } from './names.js';

/** idempotency.max_replay_bytes: 8 MiB, a quarter of the 32 MiB cap on an upstream's JSON answer. */
export const DEFAULT_MAX_REPLAY_BYTES = 8 * 1024 * 1024;

/** queue_timeout_ms: a call under a full upstream bound waits this long for a slot, then gets 503 upstream_busy. */
export const DEFAULT_QUEUE_TIMEOUT_MS = 1_000;

const positiveMs = z.number().int().positive();

export const timeoutsSchema = z
  .object({
    connect_ms: positiveMs.optional(),
    first_byte_ms: positiveMs.optional(),
    idle_ms: positiveMs.optional(),
    total_ms: positiveMs.optional(),
  })
  .strict();

const upstreamName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'use 1-64 characters: lower-case letters, digits, "-" and "_"');

export const upstreamSchema = z
  .object({
    name: upstreamName,
    /** The wire format: `anthropic`, or an OpenAI-compatible preset (`openai-compatible` is the plain one). */
    kind: z.enum(PROVIDER_KIND_NAMES).default('openai-compatible'),
    /** Required unless the preset has a default (every preset but `openai-compatible` and `azure`). */
    base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    /**
     * OpenAI-compatible: ask for usage on every stream. `true` always, `false` never, `auto` ask and, if the
     * server refuses the field, ask no more (default: the preset's; `auto` for servers not known either way).
     */
    stream_usage: z.union([z.boolean(), z.literal('auto')]).optional(),
    /** Azure OpenAI: the `api-version` query parameter. */
    api_version: z
      .string()
      .regex(/^[0-9a-z.-]{1,40}$/)
      .optional(),
    api_key_env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name')
      .optional(),
    api_key_file: z.string().min(1).optional(),
    api_key: z.never({ error: 'secrets do not belong in the config file: use api_key_env or api_key_file' }).optional(),
    /**
     * Keep-alive connections to this upstream (per process), at most; one call uses one. Unset: no bound (as many
     * as the machine holds). Set, it also bounds the calls in flight, like `max_concurrent`.
     */
    max_connections: z.number().int().min(1).max(1_000_000).optional(),
    /** Calls in flight to this upstream at once (per process); past it a call waits up to `queue_timeout_ms`. */
    max_concurrent: z.number().int().min(1).max(1_000_000).optional(),
    /** How long a call waits for a slot under a bound before `503 upstream_busy`; 0 refuses at once. */
    queue_timeout_ms: z.number().int().min(0).max(60_000).default(DEFAULT_QUEUE_TIMEOUT_MS),
    /** Allow a plain http:// base_url to a host that is not loopback (a trusted private network). */
    allow_insecure_http: z.boolean().default(false),
    timeouts: timeoutsSchema.default({}),
    health_check: z.enum(['models', 'none']).default('models'),
    /** Anthropic: `max_tokens` sent when the caller gives none (the Messages API requires one). */
    default_max_tokens: z.number().int().min(1).max(1_000_000).default(4096),
    /**
     * Batches whose lines all go to this upstream: `native` forwards them to its own batch API (half the price;
     * the default for openai, anthropic and gemini), `gateway` runs their lines through the gateway one by one.
     * `native` on another OpenAI-compatible kind says the server has OpenAI's Files + Batches API.
     */
    batch: z.enum(['native', 'gateway']).optional(),
  })
  .strict();

const targetSchema = z
  .object({
    upstream: upstreamName,
    upstream_model: z.string().min(1).max(256).optional(),
    /** Share of the traffic among a model's targets (relative to the others' weights). */
    weight: z.number().int().min(1).max(1000).default(1),
  })
  .strict();

/** Retries of one target on 429, 5xx and connection failures; exponential backoff with full jitter. */
export const retrySchema = z
  .object({
    /** Tries per target, the first included (1 = no retry). */
    attempts: z.number().int().min(1).max(10).default(1),
    base_delay_ms: z.number().int().min(1).max(60_000).default(200),
    max_delay_ms: z.number().int().min(1).max(300_000).default(5_000),
    /** The whole call, every target and wait included: no new try starts after it. */
    deadline_ms: z.number().int().min(1).max(3_600_000).default(60_000),
  })
  .strict();

/** A model's own cache settings, over the global `cache` section's (each field optional). */
export const modelCacheSchema = z
  .object({
    /** Cache this model's answers (a model's `cache` section enables it unless it says false). */
    enabled: z.boolean().default(true),
    ttl_seconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 86_400)
      .optional(),
    max_entry_bytes: z
      .number()
      .int()
      .min(256)
      .max(32 * 1024 * 1024)
      .optional(),
    shared: z.boolean().optional(),
    sampled: z.boolean().optional(),
  })
  .strict();

export const modelSchema = z
  .object({
    id: z.string().min(1).max(256),
    /** The upstream serving the model; or `targets` for several, load-balanced by weight. */
    upstream: upstreamName.optional(),
    upstream_model: z.string().min(1).max(256).optional(),
    targets: z.array(targetSchema).min(1).max(32).optional(),
    /** Tried in this order when every target failed (before any byte went to the caller). */
    fallbacks: z
      .array(targetSchema.omit({ weight: true }))
      .max(32)
      .optional(),
    retry: retrySchema.optional(),
    /** Other ids callers may use for this model (listed with it, routed like it). */
    aliases: z.array(z.string().min(1).max(256)).max(32).optional(),
    /** What the model does: chat (chat, Responses) or embedding (embeddings). Unset: whatever the caller asks. */
    type: z.enum(['chat', 'embedding']).optional(),
    /** An embedding model's vector length (shown by the models route). */
    dimensions: z.number().int().min(1).max(100_000).optional(),
    /** USD per million tokens, for cost in usage records and the models route (an embedding model has input only). */
    pricing: z
      .object({
        input_per_million: z.number().min(0).max(1_000_000),
        output_per_million: z.number().min(0).max(1_000_000).default(0),
        // Absent: cache reads and writes at the input price, 1-hour writes at the 5-minute write price (docs/usage.md).
        cache_read_per_million: z.number().min(0).max(1_000_000).optional(),
        cache_write_per_million: z.number().min(0).max(1_000_000).optional(),
        cache_write_1h_per_million: z.number().min(0).max(1_000_000).optional(),
      })
      .strict()
      .optional(),
    context_window: z.number().int().positive().optional(),
    /**
     * What a translated request does with a field that only tags or hints and has no equivalent upstream
     * (docs/messages.md, docs/responses.md): `tolerant` (the default) drops it and names it in
     * X-Gateway-Dropped-Fields; `strict` refuses the request (400 capability_not_supported naming the field).
     */
    translation: z.enum(['tolerant', 'strict']).optional(),
    /**
     * How a Responses API request for this model travels when every upstream of the model speaks that API (`kind:
     * openai`, `azure`): `native` (the default) forwards it as it is; `chat` translates whatever chat carries exactly
     * and forwards only the rest (docs/responses.md "Forwarded natively").
     */
    responses: z.enum(['native', 'chat']).optional(),
    /**
     * Prompt caching of a chat or Responses request translated for an Anthropic upstream (docs/usage.md): `auto`
     * (the default) marks cache breakpoints on the tools, the system prompt and the last turns unless the caller
     * marked its own; `off` marks none. Other providers cache on their own; a forwarded Messages request is the caller's.
     */
    prompt_cache: z.enum(['auto', 'off']).optional(),
    /** The exact response cache for this model (over the global `cache` section). */
    cache: modelCacheSchema.optional(),
    /** When the model was released (the models APIs' `created_at` / `created`; absent: the price catalog's). */
    created_at: z.iso.datetime({ offset: true }).optional(),
    /** Its human-readable name (Anthropic's `display_name`, Gemini's `displayName`; absent: the price catalog's). */
    display_name: z.string().min(1).max(200).optional(),
    description: z.string().max(1000).optional(),
  })
  .strict()
  .refine((m) => (m.upstream === undefined) !== (m.targets === undefined), {
    message: 'give either upstream or targets',
  });

const windowLimit = z
  .object({
    limit: z.number().int().positive(),
    window_seconds: z.number().int().positive().max(86_400).default(60),
  })
  .strict();

/** Limits for one scope: requests and tokens per window (GCRA), and requests in flight. */
export const limitSetSchema = z
  .object({
    requests: windowLimit.optional(),
    tokens: windowLimit.optional(),
    concurrent: z.number().int().positive().optional(),
  })
  .strict();

export const limitsSchema = z
  .object({
    /** Per caller (the admin token is one caller, each scoped key another). */
    caller: limitSetSchema.optional(),
    /** Per public model id, across all callers. */
    models: z.record(z.string(), limitSetSchema).optional(),
    /** Per upstream, across all callers and models (protects the provider account's quota). */
    upstreams: z.record(z.string(), limitSetSchema).optional(),
    /** When the limit store cannot be reached: refuse (503) or let traffic through (logged, health degraded). */
    on_store_failure: z.enum(['open', 'closed']).default('open'),
    /**
     * An upstream's 429 with Retry-After pauses that upstream (for the key used) for every caller and instance,
     * for at most this long; 0 turns the pause off.
     */
    upstream_pause_max_seconds: z.number().int().min(0).max(3_600).default(60),
  })
  .strict();

export const tracingSchema = z
  .object({
    enabled: z.boolean().default(false),
    /** The collector's OTLP/HTTP traces endpoint. */
    endpoint: z
      .url({ protocol: /^https?$/, error: 'must be an http(s):// URL, e.g. http://127.0.0.1:4318/v1/traces' })
      .optional(),
    service_name: z.string().min(1).max(200).optional(),
    /** Share of new traces kept (0..1); a caller's sampled `traceparent` is always followed. */
    sample_ratio: z.number().min(0).max(1).default(1),
    export_delay_ms: z.number().int().min(10).max(60_000).default(2000),
    export_timeout_ms: z.number().int().min(100).max(60_000).default(10_000),
  })
  .strict();

/** The event kinds of the first release: the APIs' (names/api-names.ts), then the gateway's own. */
export const WEBHOOK_EVENT_KINDS: readonly string[] = [
  ...apiEventKinds('all'),
  'ratelimit.exceeded',
  'upstream.unhealthy',
  'upstream.recovered',
];
/** Kinds added after the first release: they start in the canary stage (docs/webhooks.md, "Rollout of event kinds"). */
export const CANARY_EVENT_KINDS: readonly string[] = [
  'key.created',
  'key.updated',
  'key.rotated',
  'key.revoked',
  ...apiEventKinds('canary'),
  'config.reloaded',
];
export const ROLLOUT_STAGES = ['off', 'canary', 'all'] as const;

/**
 * A route a key, a scope or a user is given: any well-formed name here, since a surface may declare its own route in
 * its descriptor alone; the app checks each against the routes it serves when it is built (config/route-check.ts).
 */
const routeName = z.string().regex(ROUTE_NAME, 'must be a route name: lowercase letters, digits and _ (e.g. chat)');

const secretRef = z
  .object({
    env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name')
      .optional(),
    file: z.string().min(1).optional(),
  })
  .strict()
  .refine((s) => (s.env === undefined) !== (s.file === undefined), 'give exactly one of env or file');

export const webhookSubscriptionSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'use 1-64 characters: lower-case letters, digits, "-" and "_"'),
    url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
    /** Signing secrets, by reference; several during a rotation (one signature each). */
    secrets: z.array(secretRef).min(1).max(4),
    secret: z
      .never({ error: 'secrets do not belong in the config file: use secrets: [{ env: NAME }] or [{ file: path }]' })
      .optional(),
    /** Event kinds wanted; `*` for every kind. */
    events: z.array(z.string().min(1).max(64)).min(1),
    /** Receives kinds in the canary rollout stage. */
    canary: z.boolean().default(false),
    /** Opt-in: chat events carry the prompt messages and the answer text. */
    include_content: z.boolean().default(false),
    /** Deliveries in flight to this receiver at once (per instance). */
    max_concurrency: z.number().int().min(1).max(64).default(4),
  })
  .strict();

export const webhooksSchema = z
  .object({
    subscriptions: z.array(webhookSubscriptionSchema).max(64).default([]),
    /** Rollout stage per event kind (default `all` for the documented kinds); unlisted new kinds are `off`. */
    rollout: z.record(z.string(), z.enum(ROLLOUT_STAGES)).default({}),
    /** Allow receivers on loopback, private and link-local addresses (off: refused, against SSRF). */
    allow_private_addresses: z.boolean().default(false),
    max_attempts: z.number().int().min(1).max(100).default(12),
    /** An event older than this is dead-lettered instead of tried again. */
    max_age_seconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 86_400)
      .default(3 * 86_400),
    base_delay_ms: z.number().int().min(1).max(3_600_000).default(5_000),
    max_delay_ms: z.number().int().min(1).max(86_400_000).default(3_600_000),
    /** One attempt's budget: connect, send, and the receiver's answer. */
    timeout_ms: z.number().int().min(100).max(120_000).default(10_000),
    /** How often each instance looks for due deliveries (new local events are sent at once). */
    poll_interval_ms: z.number().int().min(10).max(60_000).default(1_000),
  })
  .strict();

const sections = {
  webhooks: webhooksSchema.optional(),
  upstreams: z.array(upstreamSchema).optional(),
  models: z.array(modelSchema).optional(),
  default_upstream: upstreamName.optional(),
  /** Upstream MCP servers (docs/mcp.md); a per-environment list replaces the top-level one, as for upstreams. */
  mcp_servers: mcpServersSchema.optional(),
};

export const configFileSchema = z
  .object({
    server: serverSectionSchema.optional(),
    timeouts: timeoutsSchema.optional(),
    dev_echo_model: z.boolean().optional(),
    /**
     * The price catalog used where a model's config gives no `pricing` or `context_window` (docs/usage.md): absent,
     * the one shipped in catalog/model-prices.json; a path (relative to this file) to use another; false for none.
     */
    price_catalog: z.union([z.literal(false), z.string().min(1).max(4096)]).optional(),
    /** Prometheus metrics at GET /metrics (admin token). */
    metrics: z
      .object({ enabled: z.boolean().default(true) })
      .strict()
      .prefault({}),
    /** The operators' web page at /dashboard (admin token login). */
    dashboard: z
      .object({
        enabled: z.boolean().default(true),
        /** How long a login lasts. */
        session_hours: z.number().min(0.1).max(168).default(12),
      })
      .strict()
      // An absent section is parsed as {}: every default is stated here once, and the loader reads no `??`.
      .prefault({}),
    /** OpenTelemetry traces over OTLP/HTTP (JSON): a span per request and per upstream attempt. Off by default. */
    tracing: tracingSchema.optional(),
    /** One usage record per API request (chat, models), in the embedded store or PostgreSQL (DATABASE_URL). */
    usage: z
      .object({
        enabled: z.boolean().default(true),
        retention_days: z.number().int().min(1).max(3650).default(90),
        /**
         * The bytes records and their hourly rollups may take (docs/usage.md, "Retention"): past it the oldest records
         * are rolled into their hours and deleted. 1 MiB to 1 PiB; default 1 GiB.
         */
        retention_max_bytes: z
          .number()
          .int()
          .min(1_048_576)
          .max(2 ** 50)
          .default(1_073_741_824),
      })
      .strict()
      // An absent section is parsed as {}: every default is stated here once, and the loader reads no `??`.
      .prefault({}),
    auth: z
      .object({
        /** How long a scoped key's record is trusted before it is read again (a revocation takes effect within it). */
        key_cache_seconds: z.number().int().min(0).max(300).default(5),
        /** OAuth 2.0 access tokens (JWT) from one issuer. */
        oauth: z
          .object({
            issuer: z.string().min(1),
            /**
             * The token's `aud` must hold this (or one of these): MCP clients ask for a token whose audience is the
             * `/mcp` URL (RFC 8707 `resource`), other callers may use another name.
             */
            audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(16)]),
            jwks_url: z.url({ protocol: /^https?$/, error: 'must be an https:// URL (http:// only for loopback)' }),
            algorithms: z
              .array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']))
              .min(1)
              .default(['RS256', 'PS256', 'ES256', 'EdDSA']),
            clock_tolerance_seconds: z.number().int().min(0).max(300).default(30),
            /**
             * Scope -> routes. Absent: each route's default scope (names/api-names.ts `defaultOAuthScopes`):
             * `<route>:write` (chat, responses, messages, embeddings...), models:read -> the route of that name, and
             * a mounted surface's own. The routes are checked against those the app serves when it is built.
             */
            scopes: z.record(z.string(), z.array(routeName)).optional(),
            jwks_refresh_cooldown_seconds: z.number().int().min(1).max(3600).default(30),
          })
          .strict()
          .optional(),
        /** Users for `Authorization: Basic`, accepted over HTTPS only. Password hashes by reference. */
        basic_users: z
          .array(
            z
              .object({
                username: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'letters, digits, . _ @ - (1-64)'),
                password_hash_env: z
                  .string()
                  .regex(/^[A-Z_][A-Z0-9_]*$/)
                  .optional(),
                password_hash_file: z.string().min(1).optional(),
                routes: z.array(routeName).min(1).default(['chat', 'models']),
                models: z.array(z.string().min(1)).min(1).default(['*']),
                /** MCP tools (patterns `<server>/<tool glob>`, checked when loaded); default none. */
                mcp_tools: z.array(z.string()).max(1024).default([]),
              })
              .strict(),
          )
          .max(256)
          .optional(),
      })
      .strict()
      // An absent section is parsed as {}: every default is stated here once, and the loader reads no `??`.
      .prefault({}),
    limits: limitsSchema.optional(),
    /** The retry policy of models that set none (and of the default upstream). */
    retry: retrySchema.optional(),
    circuit_breaker: z
      .object({
        /** Consecutive failures of one upstream after which it is skipped. */
        failure_threshold: z.number().int().min(1).max(1000).default(5),
        /** How long it is skipped before one probe call is let through. */
        cooldown_seconds: z.number().int().min(1).max(3600).default(30),
      })
      .strict()
      // An absent section is parsed as {}: every default is stated here once, and the loader reads no `??`.
      .prefault({}),
    /** The exact response cache (docs/cache.md): off unless enabled here for every model or per model. */
    cache: z
      .object({
        /** Every model's default (a model's own `cache.enabled` overrides it). */
        enabled: z.boolean().default(false),
        /** How long an answer is served from the cache. */
        ttl_seconds: z
          .number()
          .int()
          .min(1)
          .max(30 * 86_400)
          .default(300),
        /** The largest answer kept (JSON body, or a stream's whole event text, UTF-8 bytes). */
        max_entry_bytes: z
          .number()
          .int()
          .min(256)
          .max(32 * 1024 * 1024)
          .default(1024 * 1024),
        /** The bound on all entries' bytes together (per environment, in the state store); least recently used go first. */
        max_total_bytes: z
          .number()
          .int()
          .min(1024)
          .max(64 * 1024 * 1024 * 1024)
          .default(256 * 1024 * 1024),
        /** One cache for every caller of a model. Off: each caller (admin, key, OAuth subject, user) has its own. */
        shared: z.boolean().default(false),
        /**
         * Also cache requests whose answer is drawn, not fixed: temperature absent or above 0, or tools offered.
         * Off (the default): only requests with `temperature: 0` and no tools are cached.
         */
        sampled: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    idempotency: z
      .object({
        /** How long a completed answer is kept for replay. */
        ttl_seconds: z
          .number()
          .int()
          .min(60)
          .max(7 * 86_400)
          .default(86_400),
        /** When the idempotency store cannot be reached: refuse keyed calls (503) or run them unprotected. */
        on_store_failure: z.enum(['open', 'closed']).default('closed'),
        /** A running call's claim, renewed every third of it; a crashed holder's keys are free again after it. */
        lease_seconds: z.number().int().min(3).max(3_600).default(30),
        /**
         * The largest answer (JSON body or whole event stream, UTF-8 bytes) kept for replay. A larger one still
         * reaches its caller, but is not stored: the key is freed when the call ends and a retry runs again.
         */
        max_replay_bytes: z
          .number()
          .int()
          .min(1024)
          .max(32 * 1024 * 1024)
          .default(DEFAULT_MAX_REPLAY_BYTES),
      })
      .strict()
      // An absent section is parsed as {}: every default is stated here once, and the loader reads no `??`.
      .prefault({}),
    /** Stored Responses API responses (previous_response_id, GET /v1/responses/{id}), in the state store. */
    responses: z
      .object({
        /** Whether responses are kept at all (a request's own `store: false` always keeps nothing). */
        store: z.boolean().default(true),
        /** How long a stored response can be read or continued. */
        ttl_seconds: z
          .number()
          .int()
          .min(60)
          .max(90 * 86_400)
          .default(7 * 86_400),
        /** The largest stored turn (its own input items, messages and response), UTF-8 bytes. */
        max_stored_bytes: z
          .number()
          .int()
          .min(4096)
          .max(64 * 1024 * 1024)
          .default(16 * 1024 * 1024),
        /** A conversation whose stored part is larger cannot be continued (400 conversation_too_large). */
        max_conversation_bytes: z
          .number()
          .int()
          .min(4096)
          .max(256 * 1024 * 1024)
          .default(16 * 1024 * 1024),
        /** A conversation of this many turns cannot be continued (400 conversation_too_large). */
        max_conversation_turns: z.number().int().min(2).max(100_000).default(1_000),
        /** What one caller keeps stored, UTF-8 bytes; past it its least recently continued turns are evicted. */
        max_caller_bytes: z
          .number()
          .int()
          .min(64 * 1024)
          .max(64 * 1024 * 1024 * 1024)
          .default(256 * 1024 * 1024),
      })
      .strict()
      .prefault({}),
    /** Batches (OpenAI's Batch API, Anthropic's Message Batches) run by the gateway itself: docs/files.md, "Batches". */
    batches: batchesSectionSchema,
    /** Files and uploads (docs/files.md). */
    files: filesSectionSchema,
    /** Vector stores and the file_search tool (docs/retrieval.md). */
    vector_stores: vectorStoresSectionSchema,
    /** The MCP gateway's settings (docs/mcp.md). */
    mcp: mcpSectionSchema,
    ...sections,
    /** Per-environment sections replace the top-level section of the same name for that environment. */
    environments: z
      .object({
        dev: z.object(sections).strict().optional(),
        staging: z.object(sections).strict().optional(),
        prod: z.object(sections).strict().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type ConfigFile = z.infer<typeof configFileSchema>;
export type UpstreamFileEntry = z.infer<typeof upstreamSchema>;
export type ModelFileEntry = z.infer<typeof modelSchema>;
export type LimitSetFileEntry = z.infer<typeof limitSetSchema>;
export type WebhooksFileEntry = z.infer<typeof webhooksSchema>;
