import type { Usage } from '../../providers/provider-contract.js';

/**
 * What the chat use case tells a tracer, without knowing which one (OpenTelemetry in src/observability/tracing.ts).
 * Absent when tracing is off: the hot path then pays one optional-chaining check per attempt.
 */
export interface RequestTrace {
  /** Opens a span for one upstream attempt (retries and fallbacks each get their own). */
  attempt(upstream: string, provider: string, model: string, tryNumber: number): AttemptTrace;
  /** Notes a target passed over without a call (open circuit, upstream paused). */
  skipped(upstream: string, reason: string): void;
}

export interface AttemptTrace {
  /** W3C trace context of the attempt, sent upstream in the `traceparent` header. */
  readonly traceparent: string;
  /** The attempt answered; for a stream, called when the stream ended. Only the first end counts. */
  succeeded(usage: Usage | undefined): void;
  failed(error: unknown): void;
}
