import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CachePolicy } from '../config/types.js';
import { canonicalJson } from '../core/idempotency-key.js';
import { SSE_HEADERS } from '../http/sse.js';
import type { ResponseCacheStore, StoredResponse } from '../store/contract.js';
import type { ChatCall, ChatService } from '../core/chat-service.js';
import { ANSWER_HEADERS, type AnswerRecorder, type ChatIdempotency } from './chat-idempotency.js';

/** The header that says whether an answer came from the cache. */
export const CACHE_HEADER = 'x-cache';

export interface ResponseCacheOptions {
  store: ResponseCacheStore;
  environment: string;
  /** The model's policy; undefined when its answers are not cached. */
  policyOf: (model: string) => CachePolicy | undefined;
  log: { warn(fields: Record<string, unknown>, msg: string): void };
}

/** What a lookup found: nothing to do (caching is off for the model), a stored answer, or a miss to record. */
export type CacheLookup = { kind: 'off' } | { kind: 'hit'; response: StoredResponse } | { kind: 'miss'; recorder: AnswerRecorder | undefined };

const OFF: CacheLookup = { kind: 'off' };
const BYPASS: CacheLookup = { kind: 'miss', recorder: undefined };

/**
 * The longest a call waits for the cache store, to read or to write. SQLite and a healthy Redis answer in well
 * under a millisecond; a Redis that stalls (connected but not answering) must cost a call this much at most.
 */
export const CACHE_STORE_TIMEOUT_MS = 100;
/** After a store failure or timeout the cache is skipped for this long (no commands queued behind a sick store). */
export const CACHE_COOL_DOWN_MS = 5_000;


/**
 * The exact response cache (docs/cache.md): the same canonical request (the body as canonical JSON, the route, the
 * headers that change the answer, and the scope) gets the stored answer without an upstream call. Scoped per caller
 * unless the model's policy shares it. Only complete successful answers are stored (a JSON 200, or a stream that
 * ended well); a request that samples or offers tools is neither looked up nor stored unless the policy allows it.
 * The caller steers it with `Cache-Control: no-cache` (no lookup) and `no-store` (nothing stored).
 *
 * A failing store never fails the call: a read or write waits CACHE_STORE_TIMEOUT_MS at most, and a failure or a
 * timeout turns the cache off for CACHE_COOL_DOWN_MS (calls go upstream as misses, nothing queues behind the store).
 */
export class ResponseCache {
  private sickUntil = 0;

  constructor(private readonly options: ResponseCacheOptions) {}

  /** Synchronous for a model without caching (no promise, no microtask on the path of every other call). */
  lookup(request: FastifyRequest, reply: FastifyReply, route: string, model: string, body: unknown): CacheLookup | Promise<CacheLookup> {
    const policy = this.options.policyOf(model);
    if (!policy) return OFF;
    void reply.header(CACHE_HEADER, 'miss');
    const { noCache, noStore } = readCacheControl(request.headers['cache-control']);
    if (!cacheable(route, body, policy) || (noCache && noStore) || Date.now() < this.sickUntil) {
      request.cacheResult = 'bypass';
      return BYPASS;
    }
    const key = this.keyOf(request, route, body, policy);
    if (noCache) {
      request.cacheResult = 'bypass';
      return { kind: 'miss', recorder: this.recorder(request, key, policy) };
    }
    return this.find(request, key, policy, noStore);
  }

  private keyOf(request: FastifyRequest, route: string, body: unknown, policy: CachePolicy): string {
    // A caller's own provider key (X-Upstream-Key) is part of the scope, shared or not: an answer another
    // provider account paid for is never served to it, nor its answers to callers of the gateway's account.
    const ownKey = request.headers['x-upstream-key'];
    const scope = `${policy.shared ? 'shared' : `caller:${request.caller}`}\n${typeof ownKey === 'string' ? `own-key:${hash('sha256', ownKey, 'hex')}` : 'gateway-key'}`;
    let vary = request.responseType;
    // (The answer's media type, chosen from Accept, is part of the key too.)
    for (const name of ANSWER_HEADERS) {
      const value = request.headers[name];
      if (value !== undefined) vary += `\n${name}:${Array.isArray(value) ? value.join(',') : value}`;
    }
    // Canonical JSON holds no raw newline, so the newline-separated parts cannot be forged by any one of them.
    return hash('sha256', `${this.options.environment}\n${scope}\n${route}\n${vary}\n${canonicalJson(body)}`, 'hex');
  }

  private async find(request: FastifyRequest, key: string, policy: CachePolicy, noStore: boolean): Promise<CacheLookup> {
    request.cacheResult = 'miss';
    try {
      const response = await this.bounded(this.options.store.get(key));
      if (response) {
        request.cacheResult = 'hit';
        request.cacheHit = true;
        return { kind: 'hit', response };
      }
    } catch (error) {
      this.failed(error, request, 'response cache lookup failed: answered as a miss');
      return BYPASS;
    }
    return { kind: 'miss', recorder: noStore ? undefined : this.recorder(request, key, policy) };
  }

  private recorder(request: FastifyRequest, key: string, policy: CachePolicy): AnswerRecorder {
    const put = async (response: StoredResponse) => {
      if (Buffer.byteLength(response.body) > policy.maxEntryBytes || Date.now() < this.sickUntil) return;
      await this.bounded(this.options.store.put(key, response, policy.ttlMs)).catch((error: unknown) => this.failed(error, request, 'response cache write failed'));
    };
    const nothing = async () => undefined;
    return {
      maxBytes: policy.maxEntryBytes,
      json: (status, headers, body) => (status === 200 ? put({ status, headers, kind: 'json', body, storedAt: new Date().toISOString() }) : nothing()),
      stream: (headers, text) => put({ status: 200, headers, kind: 'sse', body: text, storedAt: new Date().toISOString() }),
      tooLarge: () => undefined,
      failed: nothing,
    };
  }

  /** The store's answer, or a rejection once CACHE_STORE_TIMEOUT_MS passed (the command itself is not waited for). */
  private bounded<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the cache store did not answer within ${CACHE_STORE_TIMEOUT_MS} ms`)), CACHE_STORE_TIMEOUT_MS);
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }

  private failed(error: unknown, request: FastifyRequest, message: string): void {
    const first = Date.now() >= this.sickUntil;
    this.sickUntil = Date.now() + CACHE_COOL_DOWN_MS;
    // One line per cool-down, not one per call: a sick store under load must not flood the log.
    if (first) this.options.log.warn({ err: error, request_id: request.id, cool_down_ms: CACHE_COOL_DOWN_MS }, message);
  }
}

/**
 * Whether a request's answer may be served from (and kept in) the cache. A stored Responses API response is never
 * cached: each one is a new object with its own id that later calls continue. Unless the policy says `sampled`,
 * only fixed answers are: `temperature: 0` sent explicitly (every provider's default samples) and no tools offered
 * (a tool call's answer depends on the world the tools act on).
 */
export function cacheable(route: string, body: unknown, policy: CachePolicy): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const fields = body as Record<string, unknown>;
  if (route === 'embeddings') return true; // a vector is a function of its input: nothing is drawn
  if (route === 'responses' && fields.store !== false) return false;
  if (policy.sampled) return true;
  if (fields.temperature !== 0) return false;
  for (const field of ['tools', 'functions']) {
    const offered = fields[field];
    if (Array.isArray(offered) && offered.length > 0) return false;
  }
  return true;
}

/** The request's `Cache-Control` directives the cache obeys (RFC 9111 §5.2.1): `no-cache` and `no-store`. */
export function readCacheControl(header: string | string[] | undefined): { noCache: boolean; noStore: boolean } {
  if (header === undefined) return { noCache: false, noStore: false };
  const directives = (Array.isArray(header) ? header.join(',') : header)
    .toLowerCase()
    .split(',')
    .map((d) => d.trim().split('=')[0]);
  return { noCache: directives.includes('no-cache'), noStore: directives.includes('no-store') };
}

/**
 * Sends a cached answer: its status, content type and body (a stream's whole event text in one write: the original
 * pacing is not kept), `X-Cache: hit` and `Age` (seconds since it was stored, RFC 9111 §5.1).
 */
export async function sendCached(reply: FastifyReply, response: StoredResponse, rateLimitHeaders: Record<string, string>): Promise<FastifyReply> {
  const age = Math.max(0, Math.floor((Date.now() - Date.parse(response.storedAt)) / 1000));
  void reply.code(response.status).headers(response.headers).headers(rateLimitHeaders).header(CACHE_HEADER, 'hit').header('age', String(age));
  if (response.kind === 'sse') void reply.headers(SSE_HEADERS);
  return reply.send(response.body);
}

/**
 * An answer from the response cache: no upstream call, no tokens, no budget; the caller's request limit still
 * counts it. A keyed call (Idempotency-Key) records the cached answer as its own, so its retry replays the same.
 */
export async function answerFromCache(
  request: FastifyRequest,
  reply: FastifyReply,
  response: StoredResponse,
  claimed: AnswerRecorder | undefined,
  deps: { chat: ChatService; idempotency: ChatIdempotency },
  model: string,
  call: ChatCall,
): Promise<FastifyReply> {
  try {
    const rateLimitHeaders = await deps.chat.admitCachedAnswer(model, call);
    if (claimed && response.kind === 'sse') await claimed.stream(response.headers, response.body);
    else if (claimed) await claimed.json(response.status, response.headers, response.body);
    // A replayed stream's first byte, like a live one's; a JSON answer has no TTFB (the metric is for streams).
    if (response.kind === 'sse') request.firstByteMs = Math.round((performance.now() - request.receivedAt) * 100) / 100;
    return await sendCached(reply, response, rateLimitHeaders);
  } catch (error) {
    if (claimed) await deps.idempotency.settleError(claimed, error, request.responseType);
    throw error;
  }
}

/** One recorder feeding two (Idempotency-Key and the cache): each keeps what fits its own bound. */
export function bothRecorders(a: AnswerRecorder | undefined, b: AnswerRecorder | undefined): AnswerRecorder | undefined {
  if (!a || !b) return a ?? b;
  return {
    maxBytes: Math.max(a.maxBytes, b.maxBytes),
    json: async (status, headers, body) => {
      await Promise.all([a.json(status, headers, body), b.json(status, headers, body)]);
    },
    stream: async (headers, text) => {
      await Promise.all([a.stream(headers, text), b.stream(headers, text)]);
    },
    tooLarge: () => {
      a.tooLarge();
      b.tooLarge();
    },
    failed: async () => {
      await Promise.all([a.failed(), b.failed()]);
    },
  };
}
