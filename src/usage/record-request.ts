import type { FastifyRequest } from 'fastify';
import type { UsageRecorder } from './usage-recorder.js';
import { upstreamOf } from '../request/request-state.js';

/** Distinct strings kept by `intern` (model names come from callers: beyond this, strings are kept as they are). */
const MAX_INTERNED = 1_000;

/**
 * The one long-lived copy of strings that repeat from request to request (model, caller, upstream, error code):
 * a model name parsed from each request body is a new string each time, and the buffered record would keep that
 * young copy alive until its batch is written.
 */
export class Interner {
  private readonly known = new Map<string, string>();

  intern(value: string): string;
  intern(value: string | undefined): string | undefined;
  intern(value: string | undefined): string | undefined {
    if (value === undefined) return undefined;
    const known = this.known.get(value);
    if (known !== undefined) return known;
    if (this.known.size < MAX_INTERNED) this.known.set(value, value);
    return value;
  }
}

/**
 * One usage record per API request, written when the answer has been sent into the recorder's columnar buffer
 * (no object per request). `latency`: arrival to now, in ms (measured once for every observer of the request).
 */
export function usageObserver(recorder: UsageRecorder, environment: string): (request: FastifyRequest, status: number, latency: number) => void {
  const strings = new Interner();
  return (request, status, latency) => {
    const usage = request.usage;
    const body = request.body as { stream?: unknown } | undefined;
    recorder.buffer().push(
      Math.round(Date.now() - latency),
      request.id,
      strings.intern(request.caller),
      environment,
      request.routeName ?? 'unknown',
      strings.intern(request.chatModel),
      strings.intern(upstreamOf(request)),
      status,
      strings.intern(request.errorCode),
      Math.round(latency * 100) / 100,
      request.firstByteMs,
      body?.stream === true,
      usage?.prompt_tokens,
      usage?.completion_tokens,
      usage?.cost_usd,
      request.attempts,
      request.replayed,
    );
    recorder.added();
  };
}
