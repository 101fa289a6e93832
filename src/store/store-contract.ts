/**
 * Stores are small interfaces, one per job (the rate limiter, idempotency, the webhook outbox and the usage log
 * join this file as they are built), so each backend implements only what it can do well and every backend
 * passes the same contract suite.
 */

/** What every backend offers: a cheap liveness probe for the health route, and an orderly close. */
export interface StoreLifecycle {
  /** "sqlite", "redis", "postgres": shown in health. */
  readonly kind: string;
  /** Resolves when the backend answered a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface GatewayStore extends StoreLifecycle {
  /** The schema version the store is at after its migrations ran. */
  readonly schemaVersion: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Rate limiting. Keys are opaque strings built by the core, e.g. "req:caller:admin:model:gpt-4o".

/** The state of one limit after a decision, enough to fill the IETF RateLimit-* headers. */
export interface RateLimitDecision {
  allowed: boolean;
  /** The limit (units per window) this decision was made against. */
  limit: number;
  /** Units still available right after this decision (0 when refused). */
  remaining: number;
  /** Milliseconds until the bucket is full again (the quota fully restored). */
  resetMs: number;
  /** Milliseconds until `cost` units would be allowed; 0 when allowed. */
  retryAfterMs: number;
}

/**
 * A limit of `limit` units per `windowMs`, enforced with GCRA (the generic cell rate algorithm): one timestamp per
 * key (the theoretical arrival time), no burst at window edges, exact across processes when the backend is shared.
 * `consume` is atomic: it either takes all `cost` units or takes nothing.
 */
export interface RateLimiter {
  consume(key: string, limit: number, windowMs: number, cost: number, nowMs?: number): Promise<RateLimitDecision>;
  /**
   * Corrects an earlier admission once the real cost is known (admission by estimate, then correction): a
   * positive delta takes more units (never refuses, may leave the key in debt), a negative one gives units back.
   */
  adjust(key: string, limit: number, windowMs: number, delta: number, nowMs?: number): Promise<void>;
}

/** Requests in flight per key; a lease expires by itself so a crashed process cannot hold a slot forever. */
export interface ConcurrencyLimiter {
  /** Takes a slot if fewer than `max` are held; `token` identifies this holder. */
  acquire(
    key: string,
    token: string,
    max: number,
    leaseMs: number,
    nowMs?: number,
  ): Promise<{ acquired: boolean; inFlight: number }>;
  release(key: string, token: string): Promise<void>;
}

/**
 * One limit of an admission: `cost` units of a GCRA window, or one in-flight slot of at most `max`.
 *
 * `need` (at most `cost`; default `cost`): the units that must be left for the limit to allow. The whole `cost` is
 * then charged, which may take the key past its limit: a debt repaid at the limit's rate before the key allows
 * anything else. Used where the cost is a guess rather than the caller's demand (a budget admits while any of it
 * is left; a call without max_tokens needs room for its prompt), then corrected with the real usage.
 */
export type AdmissionLimit =
  | { kind: 'rate'; key: string; limit: number; windowMs: number; cost: number; need?: number }
  | { kind: 'concurrency'; key: string; max: number; leaseMs: number; token?: string };

/** Index-aligned with the limits asked for. */
export type LimitOutcome =
  { kind: 'rate'; decision: RateLimitDecision } | { kind: 'concurrency'; acquired: boolean; inFlight: number };

export interface AdmissionResult {
  /** True: every limit allowed and all were taken. False: at least one refused and nothing was taken. */
  admitted: boolean;
  /**
   * What each limit says. When admitted, the state after taking (as `consume` / `acquire` report it). When
   * refused, what each limit alone would have answered; the refusing ones have `allowed` / `acquired` false.
   */
  outcomes: LimitOutcome[];
}

/** How an admission ends: a rate limit corrected by `delta` units (see `adjust`), or a slot given back. */
export type AdmissionSettlement =
  | { kind: 'rate'; key: string; limit: number; windowMs: number; delta: number }
  | { kind: 'concurrency'; key: string; token?: string };

/**
 * Every limit of one request in one atomic step (one transaction, one script): all taken or none, so a refusal
 * by the last limit never leaves the first ones charged, and a request costs two store round trips (admit,
 * settle) however many limits apply. `token` identifies the holder of concurrency slots; an item's own `token`
 * overrides it (an instance holding a block of slots, one token per slot).
 */
export interface AdmissionStore {
  admit(limits: readonly AdmissionLimit[], token: string, nowMs?: number): Promise<AdmissionResult>;
  settle(items: readonly AdmissionSettlement[], token: string, nowMs?: number): Promise<void>;
}

/** What a rate-limit backend implements: the batch operations and the single-limit ones built on them. */
export type LimitStore = AdmissionStore & RateLimiter & ConcurrencyLimiter;

/**
 * Pauses of upstream targets after the upstream said "too many requests" (429 + Retry-After), shared by every
 * instance so that nobody keeps hammering a provider that asked for quiet. A pause only ever grows: recording
 * an earlier end than the stored one changes nothing.
 */
export interface UpstreamPauseStore {
  pause(scope: string, untilMs: number, nowMs?: number): Promise<void>;
  /** The end of the pause of `scope`, or undefined when it is not paused at `nowMs`. */
  pausedUntil(scope: string, nowMs?: number): Promise<number | undefined>;
  /** Up to `limit` scopes paused at `nowMs`, latest end first (health and metrics list them). */
  list(nowMs?: number, limit?: number): Promise<Array<{ scope: string; untilMs: number }>>;
}

// ---------------------------------------------------------------------------------------------------------------
// Idempotency.

/** What is kept of a completed answer so it can be replayed exactly. */
export interface StoredResponse {
  status: number;
  /** The headers that matter for a replay (content-type, retry-after...), lower-case names. */
  headers: Record<string, string>;
  /** 'json': `body` is the body text; 'sse': `body` is the whole event stream text, replayed as a stream. */
  kind: 'json' | 'sse';
  body: string;
  /** ISO 8601 UTC time the answer was stored. */
  storedAt: string;
}

export type IdempotencyBegin =
  /** The key was free (or its earlier claim expired): the caller now owns it and must complete or abandon it. */
  | { state: 'claimed' }
  /** Another request holds the key and has not finished; `retryAfterMs` estimates when its lease ends. */
  | { state: 'in_progress'; retryAfterMs: number }
  /** Completed earlier with the same fingerprint: replay this. */
  | { state: 'completed'; response: StoredResponse }
  /** The key was used with a different request body. */
  | { state: 'mismatch' };

/**
 * Idempotency-Key bookkeeping, scoped per caller. `begin` is atomic across processes: of N concurrent callers with
 * the same scope and key exactly one gets `claimed`. Failed calls are `abandon`ed, so a retry can run again.
 */
export interface IdempotencyStore {
  begin(scope: string, key: string, fingerprint: string, leaseMs: number, nowMs?: number): Promise<IdempotencyBegin>;
  /** Stores the answer of `claim`, replayed for `ttlMs`, while the claim is still its holder's. */
  complete(claim: IdempotencyClaim, response: StoredResponse, ttlMs: number, nowMs?: number): Promise<void>;
  abandon(scope: string, key: string, fingerprint: string): Promise<void>;
  /**
   * Extends the leases of claims still running (the holder's heartbeat), to `nowMs + leaseMs`. Only a claim still
   * in progress with the same fingerprint is touched. A holder that dies stops renewing, so its claims lapse one
   * lease after its last heartbeat, whatever the length of the call it was running.
   */
  renew(claims: ReadonlyArray<IdempotencyClaim>, leaseMs: number, nowMs?: number): Promise<void>;
}

/**
 * One stored turn of a Responses API conversation: what its call added, and the turn it continues. A conversation
 * is its chain of turns (each names its parent), so a turn holds only its own part: a chain of N turns of size S
 * keeps N*S bytes, not N*N*S. Opaque JSON texts to the store; the Responses surface writes and reads them.
 */
export interface StoredConversationTurn {
  /** The response object (JSON). */
  response: string;
  /** The input items of its call, as the caller sent them with their ids (JSON array), for input_items. */
  inputItems: string;
  /**
   * Its own part of the conversation as chat messages, its input then its output (JSON array). A turn stored
   * before turns were chained (SQLite migration 13) holds the whole conversation up to it here, and no parent.
   */
  messages: string;
  /** The turn it continues (its `previous_response_id`), the same caller's; undefined for a first turn. */
  parentId: string | undefined;
  /** Turns of its conversation up to and including it (1 for a first turn). */
  depth: number;
  /** UTF-8 bytes of `messages` over its conversation up to and including it: what continuing it carries. */
  conversationBytes: number;
  /** What it counts against its caller's bound (its texts' bytes and an overhead per turn), set by the writer. */
  bytes: number;
}

/** Where a turn ends its conversation: what a continuation is checked against before any turn is read. */
export interface ConversationHead {
  depth: number;
  conversationBytes: number;
}

export interface ConversationRead {
  head: ConversationHead;
  /**
   * The conversation's turns, its first one first and the asked-for one last; undefined when the head is past
   * the bounds asked for (nothing else is read then). When an earlier turn is gone (deleted, evicted) the walk
   * stops there: the first turn returned then still names a `parentId`.
   */
  turns: StoredConversationTurn[] | undefined;
}

/** What a caller keeps stored: the turns and bytes its bound counts (expired ones until they are purged). */
export interface StoredUsage {
  turns: number;
  bytes: number;
}

/**
 * Stored responses, per caller: a caller only ever sees, continues or deletes its own (another caller's id is as
 * unknown as a made-up one). A turn expires `ttlMs` after it was written, or after the latest turn written on
 * top of it: continuing a conversation keeps its earlier turns alive. Each caller keeps at most `maxCallerBytes`
 * (the turns' `bytes`): a put past it evicts that caller's least recently continued turns, a later turn before
 * the one it continues (so no kept turn loses an earlier one to eviction), never the turns of the chain it just
 * wrote.
 */
export interface ResponseStore {
  /** Stores a turn; resolves to how many of the caller's turns were evicted to make room. */
  put(
    caller: string,
    id: string,
    turn: StoredConversationTurn,
    bounds: { ttlMs: number; maxCallerBytes: number },
    nowMs?: number,
  ): Promise<number>;
  get(caller: string, id: string, nowMs?: number): Promise<StoredConversationTurn | undefined>;
  /**
   * The conversation that ends with `id`, at most `maxTurns` turns walked; undefined when `id` is not held. Its
   * turns are read only when its head is within `maxTurns` and `maxBytes` (conversation bytes).
   */
  conversation(
    caller: string,
    id: string,
    bounds: { maxTurns: number; maxBytes: number },
    nowMs?: number,
  ): Promise<ConversationRead | undefined>;
  /** True when it existed (and was the caller's). Only that turn goes: a later turn that continued it stays. */
  delete(caller: string, id: string, nowMs?: number): Promise<boolean>;
  usage(caller: string): Promise<StoredUsage>;
}

// ---------------------------------------------------------------------------------------------------------------
// Owners of the ids an upstream keeps for a natively forwarded call.

/**
 * Which caller each upstream-held id belongs to: a Responses API response forwarded natively and its output
 * items, a code-execution container. The upstream keeps them under the gateway's account, so the gateway records
 * who made each and lets only that caller refer to it again (`previous_response_id`, `item_reference`, a
 * container). Small and separate from the stored conversations: an id, a caller, an expiry. The first live owner
 * of an id keeps it (a later claim by anyone changes nothing until it expires `ttlMs` after it was recorded).
 */
export interface NativeOwnerStore {
  /** Records `caller` as the owner of each id that has no live owner. */
  claim(caller: string, ids: readonly string[], ttlMs: number, nowMs?: number): Promise<void>;
  /** The first of `ids` that is not the caller's (never recorded, expired, or another caller's); undefined when all are. */
  firstNotOwned(caller: string, ids: readonly string[], nowMs?: number): Promise<string | undefined>;
}

// ---------------------------------------------------------------------------------------------------------------
// The exact response cache.

/**
 * Cached answers, by an opaque key the core builds (a hash of environment, scope and canonical request). Bounded:
 * a `put` that takes the total past the store's byte bound evicts the least recently used entries until it fits.
 * Every operation may fail (the cache is then skipped, never the request).
 */
export interface ResponseCacheStore {
  /** The live entry, marked as used now; undefined when absent or expired. */
  get(key: string, nowMs?: number): Promise<StoredResponse | undefined>;
  /** Stores (or replaces) an entry for `ttlMs`; returns how many entries were evicted to make room. */
  put(key: string, response: StoredResponse, ttlMs: number, nowMs?: number): Promise<number>;
  /** Entries and body bytes held now (expired ones still count until evicted or read). */
  size(): Promise<{ entries: number; bytes: number }>;
}

export interface IdempotencyClaim {
  scope: string;
  key: string;
  fingerprint: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Webhook outbox.

/** One event to deliver to one subscription; the event id is the same on every attempt (receivers de-duplicate). */
export interface OutboxDelivery {
  /** Unique per (event, subscription): `<event id>:<subscription id>`. */
  id: string;
  eventId: string;
  subscription: string;
  /** The envelope as sent, JSON text: the bytes are fixed once, so every attempt signs the same body. */
  body: string;
  /** Attempts made so far (0 before the first). */
  attempts: number;
  createdMs: number;
  /** When the next attempt is due. */
  nextAttemptMs: number;
  lastError?: string;
  state: 'pending' | 'delivered' | 'dead';
}

/**
 * The durable outbox. `enqueue` writes the deliveries of one event atomically. `claim` hands due deliveries of one
 * subscription to one dispatcher at a time by leasing them: a claimed delivery is not due again until its lease
 * ends, so a dispatcher that dies (kill -9) leaves its claims to be taken again by anyone after the lease, and no
 * event is lost. Every state change is keyed by delivery id.
 */
export interface OutboxStore {
  enqueue(
    deliveries: ReadonlyArray<Pick<OutboxDelivery, 'id' | 'eventId' | 'subscription' | 'body'>>,
    nowMs?: number,
  ): Promise<void>;
  claim(subscription: string, limit: number, leaseMs: number, nowMs?: number): Promise<OutboxDelivery[]>;
  /** A 2xx from the receiver. */
  delivered(id: string, nowMs?: number): Promise<void>;
  /** A failed attempt with another one due at `nextAttemptMs`. */
  retryLater(id: string, attempts: number, nextAttemptMs: number, error: string): Promise<void>;
  /** Out of attempts or too old: kept for inspection until redelivered. */
  deadLetter(id: string, attempts: number, error: string, nowMs?: number): Promise<void>;
  /** Dead letters, oldest first. */
  listDead(limit: number): Promise<OutboxDelivery[]>;
  /** Back to pending, due now, attempts from zero; returns how many were dead and now are pending again. */
  redeliver(ids: readonly string[], nowMs?: number): Promise<number>;
  /** One delivery by id (any state), for tools and tests. */
  get(id: string): Promise<OutboxDelivery | undefined>;
  /** Deliveries of a subscription still pending (due or waiting for a retry): the metrics' backlog. */
  backlog(subscription: string): Promise<number>;
}

// ---------------------------------------------------------------------------------------------------------------
// Scoped API keys.

/** What a key may do; `*` in `models` allows every model. */
export interface ApiKeyRecord {
  keyId: string;
  environment: string;
  name: string;
  /** SHA-256 (hex) of the whole key; the key itself is never stored. */
  hash: string;
  routes: string[];
  models: string[];
  /** Own limits, replacing the configured per-caller limits for this key (JSON of LimitSet in file units). */
  limits?: {
    requests_per_minute?: number;
    tokens_per_minute?: number;
    concurrent?: number;
    /** Its MCP tool calls a minute and in flight, replacing `mcp.caller_limits`' (docs/mcp.md, "Limits"). */
    mcp_calls_per_minute?: number;
    mcp_concurrent?: number;
  };
  /** Tokens and/or USD allowed per period (a rolling window of `period_seconds`). */
  budget?: { tokens?: number; cost_usd?: number; period_seconds: number };
  /**
   * The MCP tools it may list and call, patterns `<server>/<tool glob>` (core/mcp/tool-rights.ts); absent or empty:
   * none (it needs the `mcp` route too). A JSON field of the record: keys stored before it simply have none.
   */
  mcpTools?: string[];
  createdMs: number;
  expiresMs?: number;
  revokedMs?: number;
  /** The key this one replaced (rotation). */
  rotatedFrom?: string;
}

/** Key records, keyed by key id. Shared by every instance when the store is. */
export interface KeyStore {
  create(record: ApiKeyRecord): Promise<void>;
  get(keyId: string): Promise<ApiKeyRecord | undefined>;
  list(): Promise<ApiKeyRecord[]>;
  /**
   * Changes a key: `expiresMs` / `revokedMs`, or (given the whole record) its rights; returns false for an unknown
   * key. The key's id, hash, environment and creation time never change.
   */
  update(keyId: string, patch: ApiKeyPatch): Promise<boolean>;
}

/** What `KeyStore.update` may change: anything but the key's id, hash, environment and creation time. */
export type ApiKeyPatch = Partial<Omit<ApiKeyRecord, 'keyId' | 'hash' | 'environment' | 'createdMs'>>;

// ---------------------------------------------------------------------------------------------------------------
// Usage records.

/** One API request, as operators look at it. Never prompt or answer text. */
export interface UsageRecord {
  /** When the request arrived, in ms since 1970 (stored as a number: no formatting on the request path). */
  timeMs: number;
  requestId: string;
  caller: string;
  environment: string;
  route: string;
  model: string | null;
  upstream: string | null;
  status: number;
  code: string | null;
  latencyMs: number;
  /** Streams: when the first byte went out. */
  ttfbMs: number | null;
  stream: boolean;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
  /** Upstream attempts (retries and fallbacks included); 0 when none was made. */
  attempts: number;
  /** Answered from the idempotency store (no upstream call). */
  replay: boolean;
  /** Answered from the response cache (no upstream call, no provider cost). */
  cacheHit: boolean;
  /**
   * The gateway had to correct a usage figure the upstream reported (not a number, negative, not whole, above
   * 100 million tokens, or a part larger than what it is a part of): the tokens and cost are the corrected ones
   * (docs/usage.md).
   */
  usageAnomaly: boolean;
  /**
   * Parts of promptTokens read from the provider's cache and written to it, and the part of completionTokens that
   * was reasoning (docs/usage.md, "Token parts"); 0 when the upstream reported none, null when no usage at all.
   */
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  reasoningTokens: number | null;
  /**
   * What prompt caching saved on the call in USD at its prices when it was made (negative: cache writes cost more
   * than reads saved; docs/usage.md, "What caching saved"); null when the model had no prices or no usage.
   */
  cacheSavingsUsd: number | null;
}

export type UsageGrouping = 'model' | 'caller' | 'route' | 'day';

/** What a set of usage records adds up to: requests, tokens, spend (a summary row's figures, a key's usage). */
export interface UsageTotals {
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  /** The parts of the prompt and completion tokens (UsageRecord's). */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** cacheReadTokens / promptTokens, rounded to 4 decimals; null without prompt tokens. */
  cacheReadShare: number | null;
  costUsd: number;
  /** What prompt caching saved (the sum of the records'; negative when writes cost more than reads saved). */
  cacheSavingsUsd: number;
}

export interface UsageSummaryRow extends UsageTotals {
  /** The model, the caller, or the day (YYYY-MM-DD, UTC). */
  group: string;
  avgLatencyMs: number;
}

/** Requests of one time bucket whose latency fell in one bin of LATENCY_BIN_EDGES_MS (the dashboard's charts). */
export interface UsageTimelineRow {
  /** Start of the bucket (epoch ms, a multiple of the bucket size). */
  bucketMs: number;
  /** Index into LATENCY_BIN_EDGES_MS: latency < edges[bin] (the last bin: at least the last edge). */
  bin: number;
  requests: number;
  /** 5xx answers, and streams that failed after their 200. */
  serverErrors: number;
  /** 4xx answers (the caller's mistakes, refusals by limits). */
  clientErrors: number;
  promptTokens: number;
  completionTokens: number;
  /** The cache-read part of promptTokens, and what caching saved (UsageRecord's, summed). */
  cacheReadTokens: number;
  costUsd: number;
  cacheSavingsUsd: number;
}

/**
 * Usage records to be written, row by row, without an object per record: the recorder's columnar buffer, or an
 * array of records (`recordRows`).
 */
export interface UsageRows {
  readonly length: number;
  /** The values of row `row`, in USAGE_COLUMNS order (booleans as 0/1, absent values null), into `target` from `offset`. */
  writeValues(row: number, target: unknown[], offset: number): void;
  toRecords(): UsageRecord[];
}

/**
 * Records `first`..`last` of the local write-ahead spool `spool` (src/usage/usage-spool.ts), stored: written in the
 * same transaction as those records, so a replay of the spool after a crash skips exactly what was stored.
 */
export interface SpoolMark {
  readonly spool: string;
  readonly first: number;
  readonly last: number;
}

/**
 * Where usage records go: appended in batches, summarised for the CLI and the dashboard, purged by age, rolled
 * into hours by size (src/usage/usage-retention.ts). Summaries and the timeline read the raw records of their
 * range and the rollup hours that start in it (the hour holding `fromMs` included whole); `recent` and `stored`
 * read raw records only.
 */
export interface UsageStore {
  append(records: readonly UsageRecord[]): Promise<void>;
  /**
   * Writes the rows of every batch, in order, all or none (the usage recorder's path: no object per record), and
   * with them, in the same transaction, the spool marks of those rows (when they were spooled). The batches must
   * stay unchanged until the promise settles.
   */
  appendRows(batches: readonly UsageRows[], marks?: readonly SpoolMark[]): Promise<void>;
  /** The marks stored for one spool (the records of it already in the store), by `first`. */
  spoolMarks(spool: string): Promise<SpoolMark[]>;
  /** Forgets the marks of one spool: all of them, or those that end before `beforeSeq` (their records' file is gone). */
  forgetSpool(spool: string, beforeSeq?: number): Promise<void>;
  /** Records that arrived in [fromMs, toMs), grouped; rows sorted by group. */
  summarize(grouping: UsageGrouping, fromMs: number, toMs: number): Promise<UsageSummaryRow[]>;
  /** The rows of these callers only (e.g. `key:<id>`), in [fromMs, toMs), grouped by caller: read through an index. */
  summarizeCallers(callers: readonly string[], fromMs: number, toMs: number): Promise<UsageSummaryRow[]>;
  /** Records in [fromMs, toMs) counted per time bucket and latency bin, sorted by bucket then bin. */
  timeline(fromMs: number, toMs: number, bucketMs: number): Promise<UsageTimelineRow[]>;
  /** The most recent records, newest first (optionally failures only). */
  recent(limit: number, failuresOnly: boolean): Promise<UsageRecord[]>;
  /**
   * Records in the order they were stored (not the order requests arrived: a long stream is stored after shorter
   * calls that began later), with their position `seq`, increasing. With `afterSeq` undefined: the last `limit`
   * stored; otherwise the first `limit` stored after that position. For following the table (`gateway usage tail`).
   */
  stored(afterSeq: number | undefined, limit: number): Promise<Array<{ seq: number; record: UsageRecord }>>;
  /**
   * Deletes records that arrived before `beforeMs`, the oldest first, at most `limit` (default: all); returns how
   * many. They are not rolled up: past the retention in days nothing is kept.
   */
  purge(beforeMs: number, limit?: number): Promise<number>;
  /**
   * Deletes rollup hours that ended by `beforeMs` (`hour start + 1 h <= beforeMs`), the oldest first, at most
   * `limit` rows of each rollup table (default: all); returns how many rollup rows.
   */
  purgeHours(beforeMs: number, limit?: number): Promise<number>;
  /**
   * Rolls the `limit` oldest records (by arrival) into their hours and deletes them, in one transaction: a crash
   * leaves them either raw or rolled up, never both. Returns how many were rolled (0: no record left).
   */
  rollOldest(limit: number): Promise<number>;
  /** What the records and the rollup hours hold, as counted against `usage.retention_max_bytes`. */
  footprint(): Promise<UsageFootprint>;
}

/**
 * Rows and bytes of the usage tables, kept by the writes themselves (each insert, roll and delete updates them in
 * its own transaction): reading them costs one small query whatever the tables hold. Bytes are an estimate of the
 * space on disk (texts plus a fixed overhead per row, src/store/usage-rollup-sql.ts).
 */
export interface UsageFootprint {
  records: number;
  recordBytes: number;
  /** Rollup rows (one per hour and key, model, route, upstream, latency bin). */
  hours: number;
  hourBytes: number;
}
