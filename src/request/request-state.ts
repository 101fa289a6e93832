import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.js';
import type { PricedUsage } from '../core/models/pricing.js';
import type { RateState } from '../core/limits/rate-limit-headers.js';
import type { RequestTrace } from '../core/pipeline/trace-contract.js';
import type { ErrorCode } from '../errors/codes.js';
import type { ErrorBody } from '../errors/gateway-error.js';
import type { RouteName } from './route-name.js';

/**
 * The error shape of the API whose path a request called: the gateway's own `{code, message, details}` plus that
 * API's error object (what its SDKs read), in a JSON answer and in the one final frame of a stream that failed after
 * it started. The gateway's own shape (http/error-shape.ts) adds nothing.
 */
export interface ErrorShape {
  /** 'gateway', 'openai', 'anthropic'... (for reading, never switched on by a surface). */
  readonly name: string;
  /** Our body plus the API's error object, for an answer with this status (and these headers: Retry-After...). */
  body(body: ErrorBody, status: number, headers?: Readonly<Record<string, string>>): ErrorBody;
  /** The final frame of a stream that failed after it started (never a success marker). */
  streamFrame(body: ErrorBody, status: number, headers?: Readonly<Record<string, string>>): string;
}

/** Per-request facts the handlers record for the access log line and the error handler. */
declare module 'fastify' {
  interface FastifyRequest {
    /** What the request was dispatched to, once it was. */
    routeName: RouteName | undefined;
    /** Content-Type of JSON answers: application/json, or the vendor type when the caller asked for it. */
    responseType: string;
    /** The error code the request ended with, if any (also set for errors sent as a final stream event). */
    errorCode: ErrorCode | undefined;
    /** That error's details (the webhook events report them). */
    errorDetails: Record<string, unknown> | undefined;
    /** The answer's text, kept only when a webhook subscription opted in to content. */
    answerText: string | undefined;
    /** Streams: ms from arrival to the first byte sent. */
    firstByteMs: number | undefined;
    /** Upstream attempts made for this request (retries and fallbacks included). */
    attempts: number;
    /** Answered from the idempotency store. */
    replayed: boolean;
    /** Answered from the response cache. */
    cacheHit: boolean;
    /** What the response cache did: looked up and found (hit) or not (miss); not looked up (bypass: not cacheable, no-cache, store unwell); undefined: no caching for the model. */
    cacheResult: 'hit' | 'miss' | 'bypass' | undefined;
    /** Why a keyed call's answer was not stored for replay ('too_large': over idempotency.max_replay_bytes). */
    replayNotStored: string | undefined;
    /** Who is calling, once authenticated ("admin" for the admin token, "key:<id>" for a scoped key). */
    caller: string;
    /** The caller's rights (routes, models, limits, budget), set by the guard of every authenticated route. */
    principal: Principal | null;
    /** The model asked for, on chat. */
    chatModel: string | undefined;
    /** Whether the call streams, once its surface said so (otherwise the body's `stream` is read). */
    streamed: boolean | undefined;
    /** The caller's fields a translation left out (also sent as X-Gateway-Dropped-Fields), for the access line. */
    droppedFields: readonly string[] | undefined;
    /** performance.now() when the request arrived (for the duration of aborted requests). */
    receivedAt: number;
    /** The body exactly as received, for forwarding without re-serialising when nothing in it changes. */
    rawBody: string | undefined;
    /** Set once the access line is written, so no request is logged twice. */
    accessLogged: boolean;
    /** Which upstream served a chat call. */
    upstreamName: string | undefined;
    /** A chat call's normalised usage and its cost (USD, when the model has prices), for the access line. */
    usage: PricedUsage | undefined;
    /**
     * Whose error shape the answer's errors carry besides ours: OpenAI's `error` object on its drop-in paths
     * (/v1/chat/completions...), Anthropic's `{type: "error", error}` on /v1/messages. Set by the first onRequest
     * hook of every request (http/server.ts), from the API that claims its URL.
     */
    errorShape: ErrorShape;
    /** The request's trace span (tracing on only; opened by the chat handler). */
    trace: RequestTrace | undefined;
    /** The caller's binding rate limit once the call was admitted (what RateLimit-* says), as numbers. */
    rate: RateState | undefined;
    /** An error answer's Retry-After, ms (set with `errorCode`). */
    retryAfterMs: number | undefined;
  }
}

export function decorateRequestState(app: FastifyInstance): void {
  app.decorateRequest('routeName', undefined);
  app.decorateRequest('responseType', 'application/json; charset=utf-8');
  app.decorateRequest('errorCode', undefined);
  app.decorateRequest('errorDetails', undefined);
  app.decorateRequest('answerText', undefined);
  app.decorateRequest('firstByteMs', undefined);
  app.decorateRequest('attempts', 0);
  app.decorateRequest('replayed', false);
  app.decorateRequest('cacheHit', false);
  app.decorateRequest('cacheResult', undefined);
  app.decorateRequest('replayNotStored', undefined);
  app.decorateRequest('chatModel', undefined);
  app.decorateRequest('streamed', undefined);
  app.decorateRequest('droppedFields', undefined);
  app.decorateRequest('caller', 'anonymous');
  app.decorateRequest('principal', null); // Fastify allows no shared object as a default: set per request
  app.decorateRequest('upstreamName', undefined);
  app.decorateRequest('usage', undefined);
  app.decorateRequest('receivedAt', 0);
  app.decorateRequest('accessLogged', false);
  app.decorateRequest('rawBody', undefined);
  // An object: Fastify allows no shared one as a default, so the first onRequest hook of every request sets it.
  app.decorateRequest('errorShape', undefined as unknown as ErrorShape);
  app.decorateRequest('trace', undefined);
  app.decorateRequest('rate', undefined);
  app.decorateRequest('retryAfterMs', undefined);
}

/** The upstream a request went to: the one that answered, or the one named by the upstream error it ended with. */
export function upstreamOf(request: FastifyRequest): string | undefined {
  const failed = request.errorDetails?.upstream;
  return request.upstreamName ?? (typeof failed === 'string' ? failed : undefined);
}
