import type { Logger } from 'pino';
import type { AttemptObserver, AttemptReport, FailoverReason } from '../core/pipeline/attempt-observer.js';

/** One upstream's attempts as the dashboard shows them (this instance, since it started). */
export interface UpstreamAttemptSummary {
  attempts: number;
  ok: number;
  /** Attempts that failed (the caller leaving is not a failure). */
  failed: number;
  /** Calls that moved on from this upstream to the next target. */
  failovers: number;
  lastFailure: { code: string; at: string } | null;
}

interface Tally {
  /** Attempts by outcome (`ok`, `client_closed_request`, an error code: a bounded set). */
  outcomes: Map<string, number>;
  failovers: Map<FailoverReason, number>;
  lastFailure: { code: string; atMs: number } | undefined;
}

const GONE = 'client_closed_request';

/**
 * Counts every upstream attempt by outcome and every failover, per upstream: read by /metrics
 * (`llmgw_upstream_attempts_total`, `llmgw_upstream_failovers_total`) and by the dashboard. Upstream names come
 * from the config and outcomes from the error registry, so the tallies stay small.
 */
export class UpstreamAttemptStats {
  private readonly upstreams = new Map<string, Tally>();

  attempt(upstream: string, outcome: string, nowMs?: number): void {
    const tally = this.tally(upstream);
    tally.outcomes.set(outcome, (tally.outcomes.get(outcome) ?? 0) + 1);
    if (outcome !== 'ok' && outcome !== GONE) tally.lastFailure = { code: outcome, atMs: nowMs ?? Date.now() };
  }

  failover(upstream: string, reason: FailoverReason): void {
    const tally = this.tally(upstream);
    tally.failovers.set(reason, (tally.failovers.get(reason) ?? 0) + 1);
  }

  /** Samples of `llmgw_upstream_attempts_total{upstream, outcome}`. */
  attemptSamples(): Array<{ labels: { upstream: string; outcome: string }; value: number }> {
    return [...this.upstreams].flatMap(([upstream, t]) =>
      [...t.outcomes].map(([outcome, value]) => ({ labels: { upstream, outcome }, value })),
    );
  }

  /** Samples of `llmgw_upstream_failovers_total{upstream, reason}`. */
  failoverSamples(): Array<{ labels: { upstream: string; reason: string }; value: number }> {
    return [...this.upstreams].flatMap(([upstream, t]) =>
      [...t.failovers].map(([reason, value]) => ({ labels: { upstream, reason }, value })),
    );
  }

  summary(): Record<string, UpstreamAttemptSummary> {
    const out: Record<string, UpstreamAttemptSummary> = {};
    for (const [upstream, t] of this.upstreams) {
      let attempts = 0;
      for (const n of t.outcomes.values()) attempts += n;
      const ok = t.outcomes.get('ok') ?? 0;
      let failovers = 0;
      for (const n of t.failovers.values()) failovers += n;
      out[upstream] = {
        attempts,
        ok,
        failed: attempts - ok - (t.outcomes.get(GONE) ?? 0),
        failovers,
        lastFailure: t.lastFailure
          ? { code: t.lastFailure.code, at: new Date(t.lastFailure.atMs).toISOString() }
          : null,
      };
    }
    return out;
  }

  private tally(upstream: string): Tally {
    let tally = this.upstreams.get(upstream);
    if (!tally) {
      tally = { outcomes: new Map(), failovers: new Map(), lastFailure: undefined };
      this.upstreams.set(upstream, tally);
    }
    return tally;
  }
}

const NEXT_MESSAGE: Record<AttemptReport['next'], string> = {
  retry: 'upstream attempt failed; retrying the same upstream',
  fallback: 'upstream attempt failed; trying the next target',
  none: 'upstream attempt failed; no try left',
};

/**
 * The observer the chat service reports to: tallies every attempt, and logs each failed one — at `warn` when the
 * upstream is at fault (5xx, 429, transport, timeouts, unreadable answers), at `info` for a caller's own mistake
 * the upstream refused. The line holds names, numbers and our own error code only: nothing an upstream wrote
 * (its messages may echo a key) and no key, so there is nothing to scrub.
 */
export function attemptObserver(stats: UpstreamAttemptStats, log: Pick<Logger, 'warn' | 'info'>): AttemptObserver {
  return {
    attempt(report) {
      stats.attempt(report.upstream, report.outcome);
      if (report.outcome === 'ok' || report.outcome === GONE) return;
      const fields = {
        event: 'upstream_attempt_failed',
        request_id: report.requestId,
        model: report.model,
        upstream: report.upstream,
        upstream_model: report.upstreamModel,
        try: report.tryNumber,
        code: report.outcome,
        ...(report.upstreamStatus === undefined ? {} : { upstream_status: report.upstreamStatus }),
        next: report.next,
      };
      if (report.upstreamFault) log.warn(fields, NEXT_MESSAGE[report.next]);
      else log.info(fields, NEXT_MESSAGE[report.next]);
    },
    failover(upstream, reason) {
      stats.failover(upstream, reason);
    },
  };
}
