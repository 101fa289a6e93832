import { setTimeout as sleep } from 'node:timers/promises';
import { ClientGoneError } from '../errors/client-gone.js';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import type { LimitSet, RetryPolicy } from '../config/types.js';
import type { Budget } from './rate-limit-service.js';
import type { CallContext, ChatCompletionResult, ChatRequestBody, StreamChunk, Usage } from '../providers/contract.js';
import { costUsd } from './pricing.js';
import { CallScope, type ClientWatch } from './call-scope.js';
import type { CircuitBreakers, CircuitPermit } from './circuit-breaker.js';
import type { ChatTarget, ModelRouter, RoutePlan } from './model-router.js';
import { estimateTokens, type Admission, type RateLimitService } from './rate-limit-service.js';
import { isRetryable, retryDelayMs } from './retry-policy.js';
import { fitContextWindow } from './context-window.js';
import type { UpstreamPauses } from './upstream-pauses.js';
import { pauseScopeName } from './pause-scope.js';
import type { AttemptTrace, RequestTrace } from './trace-contract.js';

export interface ChatCall {
  /** Who is calling, for per-caller limits: `admin` or `key:<id>`. */
  caller: string;
  /** A scoped key's own limits and token budget. */
  callerLimits?: LimitSet;
  budget?: Budget;
  /** Called before each upstream attempt (the usage record counts them). */
  onAttempt?: () => void;
  /** The caller's X-Upstream-Key, replacing the configured key for this call only. */
  upstreamKey: string | undefined;
  requestId: string;
  /** The request body as received, forwarded byte for byte when routing changes nothing in it. */
  rawBody: string | undefined;
  /** The caller's side: every try of the call is cancelled when it hangs up. */
  client?: ClientWatch;
  /** X-Context-Overflow: `truncate` drops the oldest turns of a prompt too long for the model's window. */
  contextOverflow?: string;
  /** The request's trace, when tracing is on: a span per upstream attempt. */
  trace?: RequestTrace;
}

export interface CompletedChat {
  result: ChatCompletionResult;
  /** RateLimit-* headers for the answer. */
  headers: Record<string, string>;
  /** The upstream that answered. */
  upstream: string;
}

export interface StartedStream {
  upstream: string;
  scope: CallScope;
  /** The first chunk, already received: a stream only starts (and counts as started) once one arrived. */
  first: IteratorResult<StreamChunk>;
  chunks: AsyncIterator<StreamChunk>;
  headers: Record<string, string>;
  /** Must be called once when the stream ends, however it ends, with the tokens used if known and its failure if any. */
  finish(usage: Usage | undefined, failure?: unknown): Promise<void>;
}

/** Lease margin beyond the call's total budget before a concurrency slot frees itself. */
const LEASE_MARGIN_MS = 5_000;

export interface ChatServiceOptions {
  router: ModelRouter;
  limits: RateLimitService;
  pauses: UpstreamPauses;
  breakers: CircuitBreakers;
  random?: () => number;
}

/**
 * The chat use case, free of HTTP: plan the targets of the model, admit the call against the limits, then try the
 * targets in order — each up to the policy's attempts on a retryable failure (429, 5xx, transport), with backoff
 * and full jitter, honouring Retry-After, skipping upstreams whose circuit is open or that asked for quiet — all
 * within the policy's deadline. The caller's own mistakes (4xx) are never retried. A stream counts as answered
 * once its first chunk arrived: after that nothing is retried (the caller already has bytes).
 */
export class ChatService {
  private readonly random: () => number;

  constructor(private readonly options: ChatServiceOptions) {
    this.random = options.random ?? Math.random;
  }

  async complete(original: ChatRequestBody, originalCall: ChatCall): Promise<CompletedChat> {
    const { body, call } = await this.fitContext(original, originalCall);
    const plan = this.options.router.plan(body.model, this.random);
    const admission = await this.admit(body, call, plan);
    let result: ChatCompletionResult | undefined;
    try {
      const answered = await this.tryTargets(plan, call, async (target, scope, trace) => {
        try {
          const unchanged = target.upstreamModel === body.model && body.stream !== true;
          const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: false };
          return await target.provider.chat(upstreamBody, this.context(call, scope, unchanged, trace));
        } finally {
          scope.dispose();
        }
      }, 'success');
      result = answered.value;
      answered.trace?.succeeded(result.usage);
      return { result, headers: admission?.headers ?? {}, upstream: answered.target.upstream };
    } finally {
      if (admission) void admission.finish(result?.usage);
    }
  }

  /** Starts a stream: returns once a target delivered its first chunk; the caller must call `finish`. */
  async stream(original: ChatRequestBody, originalCall: ChatCall): Promise<StartedStream> {
    const { body, call } = await this.fitContext(original, originalCall);
    const plan = this.options.router.plan(body.model, this.random);
    const admission = await this.admit(body, call, plan);
    try {
      const { value, target, trace, permit } = await this.tryTargets(plan, call, async (target, scope, attemptTrace) => {
        const unchanged = target.upstreamModel === body.model && body.stream === true;
        const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: true };
        const chunks = target.provider.streamChat(upstreamBody, this.context(call, scope, unchanged, attemptTrace))[Symbol.asyncIterator]();
        try {
          const first = await chunks.next();
          if (first.done === true) throw new GatewayError('upstream_stream_truncated', { upstream: target.upstream, reason: 'the stream ended before any chunk' });
          return { chunks, first, scope };
        } catch (error) {
          scope.dispose();
          await chunks.return?.().catch(() => undefined);
          throw error;
        }
      }, 'answered');
      let finished = false;
      return {
        upstream: target.upstream,
        scope: value.scope,
        first: value.first,
        chunks: value.chunks,
        headers: admission?.headers ?? {},
        finish: async (usage, failure) => {
          if (finished) return;
          finished = true;
          value.scope.dispose();
          // The stream's own outcome: a cut mid-way counts against the upstream like a failed call, a caller who
          // left tells nothing about it.
          if (failure === undefined) permit.success();
          else if (failure instanceof ClientGoneError || value.scope.signal.reason instanceof ClientGoneError) permit.release();
          else settleFailed(permit, failure);
          if (failure === undefined) trace?.succeeded(usage);
          else trace?.failed(failure);
          await admission?.finish(usage);
        },
      };
    } catch (error) {
      await admission?.finish(undefined);
      throw error;
    }
  }

  /**
   * Runs `attempt` against the plan's targets until one succeeds. Throws the caller's error at once, the last
   * upstream failure when every try failed, or 503 `upstream_circuit_open` when every target was skipped.
   * `settle`: how a success settles the circuit permit — a JSON answer at once; a stream only proves the
   * upstream answers (`answered`), and its permit is handed back, to be settled when the stream ends.
   */
  private async tryTargets<T>(plan: RoutePlan, call: ChatCall, attempt: Attempt<T>, settle: 'success' | 'answered'): Promise<Answered<T>> {
    const deadline = Date.now() + plan.retry.deadlineMs;
    const failures: TargetFailures = { lastError: undefined, skipped: [] };
    for (const target of plan.candidates) {
      const answered = await this.tryTarget(target, plan.retry, call, deadline, attempt, settle, failures);
      if (answered) return answered;
      if (Date.now() >= deadline) break;
    }
    if (failures.lastError !== undefined) throw failures.lastError;
    throw new GatewayError(
      'upstream_circuit_open',
      { upstreams: failures.skipped },
      { headers: { 'retry-after': String(Math.max(1, Math.ceil(this.options.breakers.cooldownMs / 1000))) } },
    );
  }

  /**
   * One target: skipped while paused or while its circuit is open, else tried up to the policy's attempts, with
   * backoff. Undefined when the call should move on to the next target; throws what no other target can fix.
   * The circuit permit is settled however the tries end (the `finally`): a probe whose caller left, or whose
   * retry could not fit the deadline, frees its slot instead of keeping the upstream shut.
   */
  private async tryTarget<T>(
    target: ChatTarget,
    policy: RetryPolicy,
    call: ChatCall,
    deadline: number,
    attempt: Attempt<T>,
    settle: 'success' | 'answered',
    failures: TargetFailures,
  ): Promise<Answered<T> | undefined> {
    const pauseScope = this.pauseScope(target, call);
    try {
      const check = this.options.pauses.check(pauseScope);
      if (check) await check;
    } catch (paused) {
      failures.lastError = paused; // this upstream asked for quiet: the next target may answer
      call.trace?.skipped(target.upstream, 'paused');
      return undefined;
    }
    const { breakers } = this.options;
    let permit = breakers.acquire(target.upstream, leaseMs(target, deadline));
    if (!permit) {
      failures.skipped.push(target.upstream);
      call.trace?.skipped(target.upstream, 'circuit_open');
      return undefined;
    }
    let handedOff = false;
    try {
      for (let tries = 1; ; tries++) {
        const budget = Math.max(1, Math.min(target.totalTimeoutMs, deadline - Date.now()));
        const scope = new CallScope(budget, target.upstream);
        call.client?.follow(scope);
        const trace = call.trace?.attempt(target.upstream, target.provider.kind, target.upstreamModel, tries);
        try {
          call.onAttempt?.();
          const value = await attempt(target, scope, trace);
          if (settle === 'success') permit.success();
          else permit.answered();
          handedOff = true;
          return { value, target, trace, permit };
        } catch (error) {
          trace?.failed(error);
          if (error instanceof ClientGoneError || scope.signal.reason instanceof ClientGoneError) throw error;
          settleFailed(permit, error);
          if (!isRetryable(error)) throw error; // the caller's own mistake, or the call's deadline: no other target can fix it
          await this.notePause(pauseScope, error);
          failures.lastError = error;
          if (tries >= policy.attempts) return undefined;
          const wait = retryDelayMs(tries, policy, error, Date.now(), this.random);
          if (Date.now() + wait >= deadline) return undefined;
          await sleep(wait);
          if (call.client?.gone === true) throw new ClientGoneError();
          // Acquired after the wait, so nothing is held while sleeping; the circuit may have opened meanwhile.
          permit = breakers.acquire(target.upstream, leaseMs(target, deadline));
          if (!permit) return undefined;
        }
      }
    } finally {
      if (!handedOff) permit?.release(); // a no-op once settled; frees a probe whose call ended any other way
    }
  }

  /** The model id an alias stands for (or the id itself). */
  canonicalModel(model: string): string {
    return this.options.router.declared(model)?.id ?? model;
  }

  /** The call's usage with its cost when the model has prices (for the access line; usage records: issue 7). */
  usageRecord(model: string, usage: Usage | undefined): (Usage & { cost_usd?: number }) | undefined {
    if (!usage) return undefined;
    const pricing = this.options.router.declared(model)?.pricing;
    return pricing ? { ...usage, cost_usd: costUsd(usage, pricing) } : usage;
  }

  /** The context-window check (models with a declared window only); a truncated body is no longer the raw one. */
  private async fitContext(body: ChatRequestBody, call: ChatCall): Promise<{ body: ChatRequestBody; call: ChatCall }> {
    const declared = this.options.router.declared(body.model);
    if (declared?.contextWindow === undefined) return { body, call };
    const fitted = await fitContextWindow(body, declared, call.contextOverflow);
    return fitted === body ? { body, call } : { body: fitted, call: { ...call, rawBody: undefined } };
  }

  /** No limits configured: no admission at all. Limits apply to the first target's upstream. */
  private async admit(body: ChatRequestBody, call: ChatCall, plan: RoutePlan): Promise<Admission | undefined> {
    const { limits } = this.options;
    const first = plan.candidates[0];
    if ((!limits.enabled && !call.callerLimits && !call.budget) || !first) return undefined;
    const budget = Math.min(plan.retry.deadlineMs, Math.max(...plan.candidates.map((c) => c.totalTimeoutMs)));
    return limits.admit({
      caller: call.caller,
      // Per model id: a call through an alias counts against the model's limits.
      model: this.options.router.declared(body.model)?.id ?? body.model,
      upstream: first.upstream,
      estimatedTokens: estimateTokens(body.messages, body.max_tokens),
      requestId: call.requestId,
      leaseMs: Math.max(budget, first.totalTimeoutMs) + LEASE_MARGIN_MS,
      ...(call.callerLimits ? { callerLimits: call.callerLimits } : {}),
      ...(call.budget ? { budget: call.budget } : {}),
      ...(call.budget?.costMicros ? { pricing: this.options.router.declared(body.model)?.pricing } : {}),
    });
  }

  /**
   * What an upstream's 429 pauses: that upstream model with the configured key, for everyone (providers limit
   * per model); a caller's own key (X-Upstream-Key) has its own quota at the provider, so its 429 pauses only
   * calls made with that key.
   */
  private pauseScope(target: ChatTarget, call: ChatCall): string {
    if (!this.options.pauses.enabled) return '';
    return pauseScopeName(target.upstream, target.upstreamModel, call.upstreamKey);
  }

  private async notePause(pauseScope: string, error: unknown): Promise<void> {
    if (isGatewayError(error) && error.code === 'upstream_rate_limited' && error.details.paused !== true) {
      await this.options.pauses.record(pauseScope, error.headers?.['retry-after']);
    }
  }

  private context(call: ChatCall, scope: CallScope, bodyUnchanged: boolean, trace: AttemptTrace | undefined): CallContext {
    return {
      apiKeyOverride: call.upstreamKey,
      signal: scope.signal,
      requestId: call.requestId,
      bodyJson: bodyUnchanged ? call.rawBody : undefined,
      traceparent: trace?.traceparent,
    };
  }
}

type Attempt<T> = (target: ChatTarget, scope: CallScope, trace: AttemptTrace | undefined) => Promise<T>;

interface Answered<T> {
  value: T;
  target: ChatTarget;
  trace: AttemptTrace | undefined;
  /** Settled already for a JSON answer; a stream settles it when it ends. */
  permit: CircuitPermit;
}

/** What the tries of the targets left behind, for the error thrown when none answered. */
interface TargetFailures {
  lastError: unknown;
  /** Targets skipped because their circuit was open. */
  skipped: string[];
}

/** How long a half-open probe may hold its slot: the attempt's own budget and a margin. */
function leaseMs(target: ChatTarget, deadline: number): number {
  return Math.max(1, Math.min(target.totalTimeoutMs, deadline - Date.now())) + LEASE_MARGIN_MS;
}

/**
 * A failed call's verdict on the upstream: failures, timeouts and bad answers count towards opening its circuit;
 * a 429 says "later", not "broken" (it pauses the upstream instead); the caller's own mistakes tell nothing.
 */
function settleFailed(permit: CircuitPermit, error: unknown): void {
  if (isGatewayError(error) && error.code === 'upstream_rate_limited') permit.release();
  else if (isRetryable(error) || (isGatewayError(error) && error.code === 'upstream_total_timeout')) permit.failure();
  else permit.release();
}
