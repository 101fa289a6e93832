import { setTimeout as sleep } from 'node:timers/promises';
import { ClientGoneError } from '../../errors/client-gone.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { errorSpec } from '../../errors/codes.js';
import type { RetryPolicy } from '../../config/types.js';
import type { AttemptObserver, AttemptReport, FailoverReason } from './attempt-observer.js';
import { CallScope, type ClientWatch } from './call-scope.js';
import type { CircuitBreakers, CircuitPermit } from './circuit-breaker.js';
import type { ChatTarget, RoutePlan } from '../models/model-router.js';
import { pauseScopeName } from '../limits/pause-scope.js';
import { isRetryable, retryDelayMs } from './retry-policy.js';
import type { AttemptTrace, RequestTrace } from './trace-contract.js';
import type { UpstreamPauses } from '../limits/upstream-pauses.js';
import { CapacitySlot, type UpstreamCapacities } from '../limits/upstream-capacity.js';

/** Lease margin beyond an attempt's budget before a half-open probe's slot frees itself. */
const PROBE_LEASE_MARGIN_MS = 5_000;

/** What of the chat call the tries need. */
export interface TargetCall {
  requestId: string;
  /** The caller's X-Upstream-Key: a 429 with it pauses only calls with that key. */
  upstreamKey: string | undefined;
  client?: ClientWatch;
  trace?: RequestTrace;
  onAttempt?: () => void;
}

export type Attempt<T> = (target: ChatTarget, scope: CallScope, trace: AttemptTrace | undefined) => Promise<T>;

/** The try that answered. */
export interface Answered<T> {
  value: T;
  target: ChatTarget;
  trace: AttemptTrace | undefined;
  /** The try's scope (its deadline, the caller's cancel), disposed by the runner when the try is over. */
  scope: CallScope;
  /**
   * For a stream (`settle: 'answered'`), called once when it ends, with its failure if any: settles the circuit
   * permit with the stream's own outcome, gives back the capacity slot, disposes the scope and reports the attempt.
   * A no-op for a JSON answer (all of that was done when it was read). `translation`: the failure is the gateway's
   * translation of what the upstream sent well formed, not the upstream's (the permit is released, the attempt not
   * blamed on the upstream).
   */
  end(failure: unknown, translation?: boolean): void;
}

export interface TargetRunnerOptions {
  pauses: UpstreamPauses;
  breakers: CircuitBreakers;
  observer?: AttemptObserver;
  /** Calls in flight per upstream, and the configured bounds (max_concurrent, max_connections). */
  capacity?: UpstreamCapacities;
  random: () => number;
}

/** One run over a plan's targets. */
interface Run<T> {
  call: TargetCall;
  /** The model the caller asked for (for the attempt reports). */
  model: string;
  policy: RetryPolicy;
  deadline: number;
  attempt: Attempt<T>;
  settle: 'success' | 'answered';
  lastError: unknown;
  /** Targets skipped because their circuit was open. */
  skipped: string[];
}

/**
 * Tries a plan's targets in order — each up to the policy's attempts on a retryable failure (429, 5xx,
 * transport), with backoff and full jitter, honouring Retry-After, skipping upstreams whose circuit is open or
 * that asked for quiet — all within the policy's deadline. The caller's own mistakes are never retried. Every
 * attempt and every move to the next target is reported to the observer: a fallback that answers must not hide
 * a primary that fails.
 */
export class TargetRunner {
  constructor(private readonly options: TargetRunnerOptions) {}

  /**
   * Runs `attempt` until one target succeeds. Throws the caller's error at once, the last upstream failure when
   * every try failed, or 503 `upstream_circuit_open` when every target was skipped. `settle`: how a success
   * settles the circuit permit — a JSON answer at once; a stream's first chunk only proves the upstream answers
   * (`answered`), and the stream's end settles the rest through `Answered.end`.
   */
  async run<T>(
    plan: RoutePlan,
    call: TargetCall,
    model: string,
    attempt: Attempt<T>,
    settle: 'success' | 'answered',
  ): Promise<Answered<T>> {
    const run: Run<T> = {
      call,
      model,
      policy: plan.retry,
      deadline: Date.now() + plan.retry.deadlineMs,
      attempt,
      settle,
      lastError: undefined,
      skipped: [],
    };
    const { candidates } = plan;
    let leaving: { upstream: string; reason: FailoverReason } | undefined;
    for (let i = 0; i < candidates.length; i++) {
      const target = candidates[i] as ChatTarget;
      if (leaving) this.options.observer?.failover(leaving.upstream, leaving.reason);
      const outcome = await this.tryTarget(run, target, i < candidates.length - 1);
      if (typeof outcome !== 'string') return outcome;
      leaving = { upstream: target.upstream, reason: outcome };
      if (Date.now() >= run.deadline) break;
    }
    if (run.lastError !== undefined) throw run.lastError;
    throw new GatewayError(
      'upstream_circuit_open',
      { upstreams: run.skipped },
      { headers: { 'retry-after': String(Math.max(1, Math.ceil(this.options.breakers.cooldownMs / 1000))) } },
    );
  }

  /**
   * One target: skipped while paused or while its circuit is open, else tried up to the policy's attempts.
   * Returns why the call moves on to the next target, or the answer; throws what no other target can fix. The
   * circuit permit is settled however the tries end (the `finally`): a probe whose caller left, or whose retry
   * could not fit the deadline, frees its slot instead of keeping the upstream shut.
   */
  private async tryTarget<T>(run: Run<T>, target: ChatTarget, hasNext: boolean): Promise<Answered<T> | FailoverReason> {
    const { call } = run;
    const pauseScope = this.options.pauses.enabled
      ? pauseScopeName(target.upstream, target.upstreamModel, call.upstreamKey)
      : '';
    try {
      const check = this.options.pauses.check(pauseScope);
      if (check) await check;
    } catch (paused) {
      run.lastError = paused; // this upstream model asked for quiet: the next target may answer
      call.trace?.skipped(target.upstream, 'paused');
      return 'paused';
    }
    let permit = this.options.breakers.acquire(target.upstream, probeLeaseMs(target, run.deadline));
    if (!permit) {
      run.skipped.push(target.upstream);
      call.trace?.skipped(target.upstream, 'circuit_open');
      return 'circuit_open';
    }
    let handedOff = false;
    const capacity = this.options.capacity?.of(target.upstream);
    try {
      for (let tries = 1; ; tries++) {
        const scope = new CallScope(
          Math.max(1, Math.min(target.totalTimeoutMs, run.deadline - Date.now())),
          target.upstream,
        );
        call.client?.follow(scope);
        const trace = call.trace?.attempt(target.upstream, target.provider.kind, target.upstreamModel, tries);
        const slot = new CapacitySlot(capacity);
        try {
          call.onAttempt?.();
          const waiting = slot.take(scope.signal);
          if (waiting) await waiting;
          const value = await run.attempt(target, scope, trace);
          handedOff = true;
          return this.answered({ run, target, tries, permit, value, trace, scope, slot });
        } catch (error) {
          scope.dispose();
          slot.release();
          trace?.failed(error);
          const report = (next: AttemptReport['next']) =>
            reportAttempt(this.options.observer, { run, target, tryNumber: tries, error, scope, next });
          if (error instanceof ClientGoneError || scope.signal.reason instanceof ClientGoneError) {
            report('none');
            throw error;
          }
          if (isGatewayError(error) && error.code === 'upstream_busy') {
            // Full here (it waited its queue time already): no retry of this upstream, but the next target may
            // have room. It says nothing about the upstream's health: the circuit is not told.
            permit.release();
            run.lastError = error;
            report(hasNext && Date.now() < run.deadline ? 'fallback' : 'none');
            return 'busy';
          }
          settleFailed(permit, error);
          if (!isRetryable(error)) {
            report('none');
            throw error; // the caller's own mistake, or the call's deadline: no other target can fix it
          }
          run.lastError = await this.noteRateLimit(pauseScope, error);
          const wait =
            tries < run.policy.attempts
              ? retryDelayMs(tries, run.policy, error, Date.now(), this.options.random)
              : undefined;
          if (wait === undefined || Date.now() + wait >= run.deadline) {
            report(hasNext && Date.now() < run.deadline ? 'fallback' : 'none');
            return 'failed';
          }
          report('retry');
          await sleep(wait);
          if (call.client?.gone === true) throw new ClientGoneError();
          // Acquired after the wait, so nothing is held while sleeping; the circuit may have opened meanwhile.
          permit = this.options.breakers.acquire(target.upstream, probeLeaseMs(target, run.deadline));
          if (!permit) return 'circuit_open';
        }
      }
    } finally {
      if (!handedOff) permit?.release(); // a no-op once settled; frees a probe whose call ended any other way
    }
  }

  /** A JSON answer settles its permit and is reported now; a stream's, when it ends (`Answered.end`). */
  private answered<T>({ run, target, tries, permit, value, trace, scope, slot }: AnsweredTry<T>): Answered<T> {
    if (run.settle === 'success') {
      scope.dispose();
      slot.release();
      permit.success();
      reportAttempt(this.options.observer, { run, target, tryNumber: tries, error: undefined, scope, next: 'none' });
      return { value, target, trace, scope, end: settledAlready };
    }
    permit.answered();
    return new OpenAnswer(value, target, trace, scope, { run, tries, permit, slot, observer: this.options.observer });
  }

  /**
   * An upstream's own 429 pauses its scope for Retry-After, and is passed on with that Retry-After in whole
   * seconds, capped like the pause. Any other failure is returned as it is.
   */
  private async noteRateLimit(pauseScope: string, error: unknown): Promise<unknown> {
    if (!isGatewayError(error) || error.code !== 'upstream_rate_limited' || error.details.paused === true) return error;
    const raw = error.headers?.['retry-after'];
    await this.options.pauses.record(pauseScope, raw);
    const seconds = String(this.options.pauses.retryAfterSeconds(raw));
    return new GatewayError('upstream_rate_limited', error.details, {
      headers: { ...error.headers, 'retry-after': seconds },
      cause: error.cause,
    });
  }
}

/** The try that answered, as `TargetRunner.answered` settles it. */
interface AnsweredTry<T> {
  run: Run<T>;
  target: ChatTarget;
  tries: number;
  permit: CircuitPermit;
  value: T;
  trace: AttemptTrace | undefined;
  scope: CallScope;
  slot: CapacitySlot;
}

/** What a stream's answering try holds until the stream ends. */
interface Held<T> {
  run: Run<T>;
  tries: number;
  permit: CircuitPermit;
  slot: CapacitySlot;
  observer: AttemptObserver | undefined;
}

/** A stream's answering try: its permit, its slot, its scope and its report wait for the stream's end. */
class OpenAnswer<T> implements Answered<T> {
  private ended = false;

  constructor(
    readonly value: T,
    readonly target: ChatTarget,
    readonly trace: AttemptTrace | undefined,
    readonly scope: CallScope,
    private readonly held: Held<T>,
  ) {}

  end(failure: unknown, translation = false): void {
    if (this.ended) return;
    this.ended = true;
    const { run, tries, permit, slot, observer } = this.held;
    this.scope.dispose();
    slot.release();
    // The stream's own outcome: a cut mid-way counts against the upstream like a failed call; a caller who left,
    // or a translation that failed on what the upstream sent well formed, tells nothing about it.
    if (failure === undefined) permit.success();
    else if (translation || failure instanceof ClientGoneError || this.scope.signal.reason instanceof ClientGoneError)
      permit.release();
    else settleFailed(permit, failure);
    reportAttempt(observer, {
      run,
      target: this.target,
      tryNumber: tries,
      error: failure,
      scope: this.scope,
      next: 'none',
      translation,
    });
  }
}

/** A JSON answer's `end`: its try was settled when it was read. */
function settledAlready(): void {}

/** One attempt's outcome, as `reportAttempt` tells it. */
interface AttemptOutcome<T> {
  run: Run<T>;
  target: ChatTarget;
  tryNumber: number;
  /** The attempt's failure; `undefined` when it answered. */
  error: unknown;
  scope: CallScope;
  next: AttemptReport['next'];
  /** The failure is the gateway's translation of a well-formed answer, not the upstream's. */
  translation?: boolean;
}

/** Tells the observer of one attempt's outcome (a stream's when it ended). */
function reportAttempt<T>(
  observer: AttemptObserver | undefined,
  { run, target, tryNumber, error, scope, next, translation = false }: AttemptOutcome<T>,
): void {
  if (!observer) return;
  const gone =
    error instanceof ClientGoneError || (error !== undefined && scope.signal.reason instanceof ClientGoneError);
  const status = isGatewayError(error) ? error.details.upstream_status : undefined;
  observer.attempt({
    requestId: run.call.requestId,
    model: run.model,
    upstream: target.upstream,
    upstreamModel: target.upstreamModel,
    tryNumber,
    outcome:
      error === undefined
        ? 'ok'
        : gone
          ? 'client_closed_request'
          : isGatewayError(error)
            ? error.code
            : 'internal_error',
    ...(typeof status === 'number' ? { upstreamStatus: status } : {}),
    upstreamFault: error !== undefined && !gone && !translation && blamesUpstream(error),
    next,
  });
}

/** How long a half-open probe may hold its slot: the attempt's own budget and a margin. */
function probeLeaseMs(target: ChatTarget, deadline: number): number {
  return Math.max(1, Math.min(target.totalTimeoutMs, deadline - Date.now())) + PROBE_LEASE_MARGIN_MS;
}

/** Failures that are the upstream's (the registry's `upstream`): server errors, 429s, transport failures, timeouts. */
function blamesUpstream(error: unknown): boolean {
  return isGatewayError(error) && errorSpec(error.code).upstream !== undefined;
}

/**
 * A failed call's verdict on the upstream, as the registry says (`upstream.opensCircuit`): failures, timeouts and
 * bad answers count towards opening its circuit; a 429 says "later", not "broken" (it pauses the upstream model
 * instead); the caller's own mistakes tell nothing.
 */
function settleFailed(permit: CircuitPermit, error: unknown): void {
  if (isGatewayError(error) && errorSpec(error.code).upstream?.opensCircuit === true) permit.failure();
  else permit.release();
}
