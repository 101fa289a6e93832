/**
 * What the chat use case reports about each upstream attempt, without knowing who listens (metrics, the log and
 * the dashboard: src/observability/upstream-attempts.ts). A fallback that hides a failing primary is only
 * visible if every attempt is told, not only the request's final answer.
 */
export interface AttemptReport {
  requestId: string;
  /** The model the caller asked for. */
  model: string;
  upstream: string;
  upstreamModel: string;
  /** 1 for the first try of this target, 2 for its first retry... */
  tryNumber: number;
  /** `ok`, `client_closed_request` (the caller left), or the error code the attempt failed with. */
  outcome: string;
  /** The upstream's HTTP status, when it answered with an error. */
  upstreamStatus?: number;
  /**
   * True when the failure is the upstream's (5xx, 429, transport, timeouts, unreadable answers): what an operator
   * must hear about. False for the caller's own mistakes and for a caller who left.
   */
  upstreamFault: boolean;
  /** What the call does next: try this target again, move on to the next target, or stop here. */
  next: 'retry' | 'fallback' | 'none';
}

/** Why a call left a target for the next one. */
export type FailoverReason = 'failed' | 'circuit_open' | 'paused' | 'busy';

export interface AttemptObserver {
  /** Once per attempt, when its outcome is known (a stream's when it ends). */
  attempt(report: AttemptReport): void;
  /** The call moved on from `upstream` to the next target. */
  failover(upstream: string, reason: FailoverReason): void;
}
