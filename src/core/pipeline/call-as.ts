import type { ErrorCode } from '../../errors/codes.js';
import type { PricedUsage } from '../models/pricing.js';
import type { RateState } from '../limits/rate-limit-headers.js';

/**
 * Who a call is made as: the owner's caller name (`admin`, `key:<id>`...) and its principal's snapshot as stored
 * (auth/principal.ts `principalSnapshot`; a key is read again, so a revoked one's calls fail).
 */
export interface CallingAs {
  owner: string;
  principal: string;
}

/** A call of one of the gateway's API paths, as a caller would send it. */
export interface CallRequest {
  /** The path (`/v1/chat/completions`, `/v1/messages`...). */
  url: string;
  /** The JSON body, as text. */
  body: string;
}

/** What the call's pipeline ended with, typed: nothing is read back out of an HTTP answer. */
export interface CallResult {
  status: number;
  /** The error code it ended with (undefined: answered). */
  code: ErrorCode | undefined;
  /** The answer's body, as its caller would get it (JSON text). */
  body: string;
  /** The request's id (null: refused before it was made, e.g. the owner's key was revoked). */
  requestId: string | null;
  /** The usage the pipeline settled and recorded (undefined: none, e.g. an answer from the response cache). */
  usage: PricedUsage | undefined;
  /** Whether the response cache answered it (it settled no usage: the answer's own figures are the cached call's). */
  cacheHit: boolean;
  /** A refusal's Retry-After, ms. */
  retryAfterMs: number | undefined;
  /** The caller's binding rate limit once the call was admitted. */
  rate: RateState | undefined;
}

/**
 * The surfaces' one typed entry (routes/call-as-inject.ts): a call made as `as`, through the same request pipeline as any
 * call (route right, model rights, limits and budgets, retries and fallbacks, the request's record and its
 * observers: usage, metrics, traces, events, the access line).
 */
export type CallAs = (as: CallingAs, request: CallRequest) => Promise<CallResult>;
