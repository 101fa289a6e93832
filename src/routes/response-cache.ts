import type { FastifyReply, FastifyRequest } from 'fastify';
import { AnswerCache, STORE_FAILED, type AnswerCacheOptions, type CacheRule } from '../core/pipeline/answer-cache.js';
import type { AnswerRecorder } from '../core/pipeline/answer-recorder.js';
import type { CachePolicy } from '../config/types.js';
import { SSE_HEADERS } from '../http/sse.js';
import type { StoredResponse } from '../store/store-contract.js';
import type { ChatService } from '../core/pipeline/chat-service.js';
import type { CallInput } from '../core/pipeline/model-call.js';
import { ANSWER_HEADERS, type CallIdempotency } from './call-idempotency.js';

export { bothRecorders } from '../core/pipeline/answer-recorder.js';

/** The header that says whether an answer came from the cache. */
export const CACHE_HEADER = 'x-cache';

export type ResponseCacheOptions = AnswerCacheOptions;

/** What a lookup found: nothing to do (caching is off for the model), a stored answer, or a miss to record. */
export type CacheLookup =
  { kind: 'off' } | { kind: 'hit'; response: StoredResponse } | { kind: 'miss'; recorder: AnswerRecorder | undefined };

const OFF: CacheLookup = { kind: 'off' };
const BYPASS: CacheLookup = { kind: 'miss', recorder: undefined };

/**
 * The exact response cache on a route (docs/cache.md): the HTTP side of core/pipeline/answer-cache.ts. The caller steers it
 * with `Cache-Control: no-cache` (no lookup) and `no-store` (nothing stored); every answer of a cached model says
 * `X-Cache: hit` or `miss`; the request's record says what the cache did. Only complete successful answers are
 * stored (a JSON 200, or a stream that ended well); a request that samples or offers tools is neither looked up nor
 * stored unless the policy allows it (the route's CacheRule, from its surface's descriptor).
 */
export class ResponseCache {
  private readonly cache: AnswerCache;

  constructor(options: ResponseCacheOptions) {
    this.cache = new AnswerCache(options);
  }

  /**
   * Synchronous for a model without caching (no promise, no microtask on the path of every other call). The key is
   * the request's validated body; `extra`: what of the URL changes the answer, for a surface whose model is in its
   * path.
   */
  lookup(
    request: FastifyRequest,
    reply: FastifyReply,
    rule: CacheRule,
    model: string,
    extra?: string,
  ): CacheLookup | Promise<CacheLookup> {
    const policy = this.cache.policyOf(model);
    const { body } = request;
    if (!policy) return OFF;
    void reply.header(CACHE_HEADER, 'miss');
    const { noCache, noStore } = readCacheControl(request.headers['cache-control']);
    if (!rule.cacheable(body, policy) || (noCache && noStore) || this.cache.cooling()) {
      request.cacheResult = 'bypass';
      return BYPASS;
    }
    const ownKey = request.headers['x-upstream-key'];
    const key = this.cache.keyOf(
      rule,
      body,
      { caller: request.caller, ownKey: typeof ownKey === 'string' ? ownKey : undefined, vary: varyOf(request), extra },
      policy,
    );
    if (noCache) {
      request.cacheResult = 'bypass';
      return { kind: 'miss', recorder: this.cache.recorder(key, policy, request.id) };
    }
    return this.find(request, key, policy, noStore);
  }

  private async find(
    request: FastifyRequest,
    key: string,
    policy: CachePolicy,
    noStore: boolean,
  ): Promise<CacheLookup> {
    request.cacheResult = 'miss';
    const response = await this.cache.find(key, request.id);
    if (response === STORE_FAILED) return BYPASS;
    if (response) {
      request.cacheResult = 'hit';
      request.cacheHit = true;
      return { kind: 'hit', response };
    }
    return { kind: 'miss', recorder: noStore ? undefined : this.cache.recorder(key, policy, request.id) };
  }
}

/** The answer's media type (chosen from Accept) and the request headers that change the answer. */
function varyOf(request: FastifyRequest): string {
  let vary = request.responseType;
  for (const name of ANSWER_HEADERS) {
    const value = request.headers[name];
    if (value !== undefined) vary += `\n${name}:${Array.isArray(value) ? value.join(',') : value}`;
  }
  return vary;
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
 * Sends a cached answer: its status, content type and body (a stream's whole text in one write: the original
 * pacing is not kept), `X-Cache: hit` and `Age` (seconds since it was stored, RFC 9111 §5.1).
 */
export async function sendCached(
  reply: FastifyReply,
  response: StoredResponse,
  rateLimitHeaders: Record<string, string>,
): Promise<FastifyReply> {
  const age = Math.max(0, Math.floor((Date.now() - Date.parse(response.storedAt)) / 1000));
  // A stream's own content type (stored with it: SSE, or a JSON-array stream's) wins over the SSE default.
  if (response.kind === 'sse') void reply.headers(SSE_HEADERS);
  void reply
    .code(response.status)
    .headers(response.headers)
    .headers(rateLimitHeaders)
    .header(CACHE_HEADER, 'hit')
    .header('age', String(age));
  return reply.send(response.body);
}

/** A cache hit to answer: the stored answer, the call's claimed Idempotency-Key if any, and the call it answers. */
export interface CacheHit {
  response: StoredResponse;
  claimed: AnswerRecorder | undefined;
  deps: { chat: ChatService; idempotency: CallIdempotency };
  model: string;
  call: CallInput;
}

/**
 * An answer from the response cache: no upstream call, no tokens, no budget; the caller's request limit still
 * counts it. A keyed call (Idempotency-Key) records the cached answer as its own, so its retry replays the same.
 */
export async function answerFromCache(
  request: FastifyRequest,
  reply: FastifyReply,
  { response, claimed, deps, model, call }: CacheHit,
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
