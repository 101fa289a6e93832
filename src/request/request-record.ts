import type { FastifyRequest } from 'fastify';
import type { PricedUsage } from '../core/models/pricing.js';
import type { RateState } from '../core/limits/rate-limit-headers.js';
import type { RequestTrace } from '../core/pipeline/trace-contract.js';
import type { ErrorCode } from '../errors/codes.js';
import type { RouteName } from './route-name.js';
import { upstreamOf } from './request-state.js';

/** What a request's span is opened from: its method, route, id and the caller's trace context. */
export interface RequestHead {
  readonly method: string;
  readonly route: RouteName | undefined;
  readonly id: string;
  /** The caller's W3C trace context, when it sent one header of it. */
  readonly traceparent: string | undefined;
}

export function headOf(request: FastifyRequest): RequestHead {
  const traceparent = request.headers.traceparent;
  return {
    method: request.method,
    route: request.routeName,
    id: request.id,
    traceparent: typeof traceparent === 'string' ? traceparent : undefined,
  };
}

/**
 * What one request was, once it ended: built once by endRequest, and all its observers see (the access line,
 * usage records, metrics, the trace's request span). Read-only: an observer cannot change what another sees.
 */
export interface RequestRecord extends RequestHead {
  readonly status: number;
  /** Arrival to the end, in ms. */
  readonly latencyMs: number;
  /** `Date.now()` when it ended. */
  readonly endedAtMs: number;
  readonly caller: string;
  /** The model asked for (chat). */
  readonly model: string | undefined;
  /** The upstream that answered, or the one named by the upstream error the request ended with. */
  readonly upstream: string | undefined;
  readonly stream: boolean;
  /** The URL as called (its query values redacted by the access line). */
  readonly url: string;
  /** Tokens used, and their cost when the model has prices. */
  readonly usage: PricedUsage | undefined;
  readonly code: ErrorCode | undefined;
  /** That error's details (the rate-limit event reports them). */
  readonly errorDetails: Readonly<Record<string, unknown>> | undefined;
  /**
   * The request's parsed body (its own value, not a copy): what events that opted in to content show as the prompt,
   * in the words of its surface (chat's `messages`, the Responses API's `input`: webhooks/gateway-events.ts).
   */
  readonly body: unknown;
  /** The answer's text, kept only when a webhook subscription opted in to content. */
  readonly answerText: string | undefined;
  /** Streams: ms from arrival to the first byte sent. */
  readonly firstByteMs: number | undefined;
  /** Upstream attempts (retries and fallbacks included). */
  readonly attempts: number;
  readonly replayed: boolean;
  readonly cacheHit: boolean;
  readonly cacheResult: 'hit' | 'miss' | 'bypass' | undefined;
  readonly replayNotStored: string | undefined;
  /** The request's span, when the handler opened one (otherwise it is opened at the end, from the head). */
  readonly trace: RequestTrace | undefined;
  /** The caller's binding rate limit once admitted (absent: no windowed limit applied, or not admitted). */
  readonly rate?: RateState | undefined;
  /** An error answer's Retry-After, ms (absent: none). */
  readonly retryAfterMs?: number | undefined;
}

export function recordOf(request: FastifyRequest, status: number, latencyMs: number): RequestRecord {
  const body = request.body as { stream?: unknown } | undefined;
  return {
    ...headOf(request),
    status,
    latencyMs,
    endedAtMs: Date.now(),
    caller: request.caller,
    // Set by the handler once the body passed its schema: a refused body's model is never a metric label or group.
    model: request.chatModel,
    upstream: upstreamOf(request),
    // Set by the pipeline once the surface decided (Gemini streams by its path); else the body says.
    stream: request.streamed ?? body?.stream === true,
    url: request.url,
    usage: request.usage,
    code: request.errorCode,
    errorDetails: request.errorDetails,
    body,
    answerText: request.answerText,
    firstByteMs: request.firstByteMs,
    attempts: request.attempts,
    replayed: request.replayed,
    cacheHit: request.cacheHit,
    cacheResult: request.cacheResult,
    replayNotStored: request.replayNotStored,
    trace: request.trace,
    rate: request.rate,
    retryAfterMs: request.retryAfterMs,
  };
}
