import { hash } from 'node:crypto';
import type { CachePolicy } from '../../config/types.js';
import type { ResponseCacheStore, StoredResponse } from '../../store/store-contract.js';
import type { AnswerRecorder } from './answer-recorder.js';
import { canonicalJson } from './idempotency-key.js';

/**
 * The longest a call waits for the cache store, to read or to write. SQLite and a healthy Redis answer in well
 * under a millisecond; a Redis that stalls (connected but not answering) must cost a call this much at most.
 */
export const CACHE_STORE_TIMEOUT_MS = 100;
/** After a store failure or timeout the cache is skipped for this long (no commands queued behind a sick store). */
export const CACHE_COOL_DOWN_MS = 5_000;

export interface AnswerCacheOptions {
  store: ResponseCacheStore;
  environment: string;
  /** The model's policy; undefined when its answers are not cached. */
  policyOf: (model: string) => CachePolicy | undefined;
  log: { warn(fields: Record<string, unknown>, msg: string): void };
}

/** What a route's answers are cached under, and what makes one cacheable (a surface's descriptor says). */
export interface CacheRule {
  /** The route: part of the key (the same body sent to two routes is two requests). */
  readonly route: string;
  /** Whether a request's answer may be served from (and kept in) the cache under the model's policy. */
  cacheable(body: unknown, policy: CachePolicy): boolean;
}

/** What makes two requests the same request for the cache, besides the route and the body. */
export interface CacheKeyParts {
  readonly caller: string;
  /** The caller's own provider key (X-Upstream-Key), when it sent one. */
  readonly ownKey: string | undefined;
  /** The answer's media type and the request headers that change the answer, one per line. */
  readonly vary: string;
  /** What of the URL changes the answer (a surface whose model is in its path); absent for the others. */
  readonly extra: string | undefined;
}

/** What `find` says when the store failed (or did not answer in time): the call goes on as a miss, not stored. */
export const STORE_FAILED = Symbol('store failed');

/**
 * The exact response cache's rules (docs/cache.md), without HTTP: the key (the body as canonical JSON, the route,
 * what changes the answer, and the scope: per caller unless the model's policy shares it), the bounded store waits,
 * and the cool-down. A failing store never fails the call: a read or write waits CACHE_STORE_TIMEOUT_MS at most, and a
 * failure or a timeout turns the cache off for CACHE_COOL_DOWN_MS (calls go upstream as misses, nothing queues
 * behind the store). The route's side (Cache-Control, X-Cache, the answer of a hit) is routes/response-cache.ts.
 */
export class AnswerCache {
  private sickUntil = 0;

  constructor(private readonly options: AnswerCacheOptions) {}

  /** The model's policy; undefined when its answers are not cached. */
  policyOf(model: string): CachePolicy | undefined {
    return this.options.policyOf(model);
  }

  /** Whether the store is being left alone after a failure. */
  cooling(): boolean {
    return Date.now() < this.sickUntil;
  }

  keyOf(rule: CacheRule, body: unknown, parts: CacheKeyParts, policy: CachePolicy): string {
    // A caller's own provider key (X-Upstream-Key) is part of the scope, shared or not: an answer another
    // provider account paid for is never served to it, nor its answers to callers of the gateway's account.
    const { ownKey } = parts;
    const scope = `${policy.shared ? 'shared' : `caller:${parts.caller}`}\n${ownKey !== undefined ? `own-key:${hash('sha256', ownKey, 'hex')}` : 'gateway-key'}`;
    // Canonical JSON holds no raw newline, so the newline-separated parts cannot be forged by any one of them (the
    // URL's part, last and only on the routes that have one, is JSON too).
    const url = parts.extra === undefined ? '' : `\n${JSON.stringify(parts.extra)}`;
    return hash(
      'sha256',
      `${this.options.environment}\n${scope}\n${rule.route}\n${parts.vary}\n${canonicalJson(body)}${url}`,
      'hex',
    );
  }

  /** The stored answer, undefined when there is none, or STORE_FAILED (then the cache cools down). */
  async find(key: string, requestId: string): Promise<StoredResponse | undefined | typeof STORE_FAILED> {
    try {
      return await this.bounded(this.options.store.get(key));
    } catch (error) {
      this.failed(error, requestId, 'response cache lookup failed: answered as a miss');
      return STORE_FAILED;
    }
  }

  /** What stores the answer to come under `key` (a JSON 200, or a stream that ended well; never one past the policy's bound). */
  recorder(key: string, policy: CachePolicy, requestId: string): AnswerRecorder {
    const put = async (response: StoredResponse) => {
      if (Buffer.byteLength(response.body) > policy.maxEntryBytes || this.cooling()) return;
      await this.bounded(this.options.store.put(key, response, policy.ttlMs)).catch((error: unknown) =>
        this.failed(error, requestId, 'response cache write failed'),
      );
    };
    const nothing = async () => undefined;
    return {
      maxBytes: policy.maxEntryBytes,
      json: (status, headers, body) =>
        status === 200 ? put({ status, headers, kind: 'json', body, storedAt: new Date().toISOString() }) : nothing(),
      stream: (headers, text) =>
        put({ status: 200, headers, kind: 'sse', body: text, storedAt: new Date().toISOString() }),
      tooLarge: () => undefined,
      failed: nothing,
    };
  }

  /** The store's answer, or a rejection once CACHE_STORE_TIMEOUT_MS passed (the command itself is not waited for). */
  private bounded<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the cache store did not answer within ${CACHE_STORE_TIMEOUT_MS} ms`)),
        CACHE_STORE_TIMEOUT_MS,
      );
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }

  private failed(error: unknown, requestId: string, message: string): void {
    const first = Date.now() >= this.sickUntil;
    this.sickUntil = Date.now() + CACHE_COOL_DOWN_MS;
    // One line per cool-down, not one per call: a sick store under load must not flood the log.
    if (first) this.options.log.warn({ err: error, request_id: requestId, cool_down_ms: CACHE_COOL_DOWN_MS }, message);
  }
}

/**
 * Whether a request asks for a fixed answer, what the cache keeps unless the model's policy says `sampled`:
 * `temperature: 0` sent explicitly (every provider's default samples) and no tools offered (a tool call's answer
 * depends on the world the tools act on). A surface passes its own fields (chat's `temperature`, `tools`, `functions`).
 */
export function fixedAnswer(policy: CachePolicy, temperature: unknown, offered: readonly unknown[]): boolean {
  if (policy.sampled) return true;
  if (temperature !== 0) return false;
  return !offered.some((tools) => Array.isArray(tools) && tools.length > 0);
}

/** A body that is a JSON object (what every cache rule asks first). */
export function isObjectBody(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null;
}

/** Embeddings: always cacheable (a vector is a function of its input: nothing is drawn). */
export const EMBEDDINGS_CACHE_RULE: CacheRule = { route: 'embeddings', cacheable: (body) => isObjectBody(body) };
