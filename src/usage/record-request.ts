import type { UsageRecorder } from './usage-recorder.js';
import type { RequestRecord } from '../request/request-record.js';
import { USAGE_ANOMALIES } from '../providers/provider-contract.js';

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
 * (no object kept per request).
 */
export function usageObserver(recorder: UsageRecorder, environment: string): (record: RequestRecord) => void {
  const strings = new Interner();
  return (record) => {
    const usage = record.usage;
    recorder.buffer().push({
      timeMs: Math.round(record.endedAtMs - record.latencyMs),
      requestId: record.id,
      caller: strings.intern(record.caller),
      environment,
      route: record.route ?? 'unknown',
      model: strings.intern(record.model),
      upstream: strings.intern(record.upstream),
      status: record.status,
      code: strings.intern(record.code),
      latencyMs: Math.round(record.latencyMs * 100) / 100,
      ttfbMs: record.firstByteMs,
      stream: record.stream,
      promptTokens: usage?.prompt_tokens,
      completionTokens: usage?.completion_tokens,
      costUsd: usage?.cost_usd,
      attempts: record.attempts,
      replay: record.replayed,
      cacheHit: record.cacheHit,
      usageAnomaly: usage?.[USAGE_ANOMALIES] !== undefined,
      parts: usage && {
        cacheRead: usage.cache_read_tokens ?? 0,
        cacheWrite: usage.cache_write_tokens ?? 0,
        reasoning: usage.reasoning_tokens ?? 0,
      },
      cacheSavingsUsd: usage?.cache_savings_usd,
    });
    recorder.added();
  };
}
