import { GatewayError } from '../../errors/gateway-error.js';
import type { LimitSet } from '../../config/types.js';
import type { CallContext, StreamBatch, Usage } from '../../providers/provider-contract.js';
import { checkedUsage } from '../../providers/usage-figures.js';
import type { CallScope, ClientWatch } from './call-scope.js';
import type { ChatTarget, RoutePlan } from '../models/model-router.js';
import type { PricedUsage } from '../models/pricing.js';
import type { PriceBook } from '../models/price-book.js';
import type { RateState } from '../limits/rate-limit-headers.js';
import type { Admission, Budget, RateLimitService, TokenEstimate } from '../limits/rate-limit-service.js';
import { deliveredTokens } from '../limits/admission-estimate.js';
import type { AttemptTrace, RequestTrace } from './trace-contract.js';
import type { Answered, Attempt, TargetRunner } from './target-runner.js';

/** What the caller's request brings to a model call (chat, a native forward, embeddings, a token count). */
export interface CallInput {
  /** Who is calling, for per-caller limits: `admin` or `key:<id>`. */
  caller: string;
  /** A scoped key's own limits and token budget. */
  callerLimits?: LimitSet;
  budget?: Budget;
  /** Called before each upstream attempt (the usage record counts them). */
  onAttempt?: () => void;
  /** Called once the call is admitted, with its binding limit's state (the request's record keeps it). */
  onAdmitted?: (rate: RateState | undefined) => void;
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
  /** Caller headers a native path forwards (Anthropic's `anthropic-version`, `anthropic-beta`). */
  forwardHeaders?: Readonly<Record<string, string>>;
  /** The caller's query a native path forwards (`?beta=true`, which Anthropic's beta SDK client adds), or undefined. */
  forwardQuery?: string;
}

/** A stream whose first batch arrived: a stream only starts (and counts as started) once a chunk did. */
export interface OpenedStream {
  first: IteratorResult<StreamBatch>;
  /** The batches after it: the chunks of one upstream read each (src/providers/provider-contract.ts). */
  chunks: AsyncIterator<StreamBatch>;
}

/** A started stream, handed to the route that writes it. */
export interface StartedStream extends OpenedStream {
  upstream: string;
  scope: CallScope;
  /** RateLimit-* headers for the answer. */
  headers: Record<string, string>;
  /** The call the stream answers: its `settle` must be called once when the stream ends, however it ends. */
  call: StreamCall;
}

/**
 * What the route that writes a stream does with its call: settle it when the stream ends, then wait for its lease.
 * A ModelCall, or several turns' calls answering one stream (surfaces/tool-turns/loop-stream.ts).
 */
export type StreamCall = Pick<ModelCall, 'settle' | 'leaseReturned'>;

/**
 * Where a stream's failure arose: from the upstream, or while the caller's surface translated chunks the upstream
 * had sent well formed (`translation`: a bug, or an answer the surface cannot use; the request's failure, not the
 * upstream's, and never counted against its circuit).
 */
export type FailureSource = 'upstream' | 'translation';

/** What every call shares (CallPipeline): the limits, the tries over targets, the prices. */
export interface CallMachinery {
  readonly limits: RateLimitService;
  readonly runner: TargetRunner;
  readonly prices: PriceBook;
  /** The model id an alias stands for (or the id itself): limits count per model id. */
  canonicalModel(model: string): string;
}

/** Lease margin beyond the call's total budget before a concurrency slot frees itself. */
export const LEASE_MARGIN_MS = 5_000;

const NOTHING_TO_RETURN: Promise<void> = Promise.resolve();

/**
 * One model call, in four steps. `CallPipeline.plan` makes it with its targets; `admit` takes its place under the
 * limits and budgets (a lease, when any apply); `run` (an answer read whole) or `start` (a stream) tries the
 * targets (TargetRunner: retries, fallbacks, circuits, pauses, capacity); `settle` ends it, exactly once, however
 * it ended: the lease goes back with the usage, the answering try's circuit permit and capacity slot are settled
 * and its attempt reported, its trace span closed, the usage priced. `run` and `start` settle a call that found no
 * answer themselves; an answer read whole is settled by the service that read it, a stream by the route that wrote
 * it, when it ends.
 */
export class ModelCall {
  /** The usage as `settle` recorded it, priced. */
  usage: PricedUsage | undefined;
  /** Resolves once the admission's lease is given back (a stream's end waits for it; a JSON answer does not). */
  leaseReturned: Promise<void> = NOTHING_TO_RETURN;
  private admission: Admission | undefined;
  private answer: Answered<unknown> | undefined;
  private settled = false;

  constructor(
    private readonly shared: CallMachinery,
    /** The model as the caller named it. */
    readonly model: string,
    readonly input: CallInput,
    readonly plan: RoutePlan,
  ) {}

  /** Whether the call is admitted at all: only when some limit or budget applies (and there is a target). */
  get admits(): boolean {
    const { input } = this;
    return (
      (this.shared.limits.enabled || input.callerLimits !== undefined || input.budget !== undefined) &&
      this.plan.candidates.length > 0
    );
  }

  /** RateLimit-* headers for the answer. */
  get headers(): Record<string, string> {
    return this.admission?.headers ?? {};
  }

  /** Takes the call's place under the limits that apply (called only when `admits`). Limits apply to the first target's upstream. */
  async admit(estimate: TokenEstimate): Promise<void> {
    const { plan, input, shared } = this;
    const first = plan.candidates[0] as ChatTarget;
    const budget = Math.min(plan.retry.deadlineMs, Math.max(...plan.candidates.map((c) => c.totalTimeoutMs)));
    this.admission = await shared.limits.admit({
      caller: input.caller,
      // Per model id: a call through an alias counts against the model's limits.
      model: shared.canonicalModel(this.model),
      upstream: first.upstream,
      estimatedTokens: estimate,
      // The model's window bounds the estimate (no completion is longer): the config's, else the price catalog's.
      contextWindow: shared.prices.of(this.model).contextWindow,
      requestId: input.requestId,
      leaseMs: Math.max(budget, first.totalTimeoutMs) + LEASE_MARGIN_MS,
      ...(input.callerLimits ? { callerLimits: input.callerLimits } : {}),
      ...(input.budget ? { budget: input.budget } : {}),
      ...(input.budget?.costMicros ? { pricing: shared.prices.of(this.model).pricing } : {}),
    });
    input.onAdmitted?.(this.admission.rate);
  }

  /** Tries the targets for an answer read whole (JSON); the caller settles it. A call that found none is settled here. */
  async run<T>(attempt: Attempt<T>): Promise<Answered<T>> {
    try {
      const answered = await this.shared.runner.run(this.plan, this.input, this.model, attempt, 'success');
      this.answer = answered;
      return answered;
    } catch (error) {
      this.settle(undefined, error);
      throw error;
    }
  }

  /**
   * Tries the targets for a stream: started once one delivered its first batch (nothing is retried after it). A
   * call that found no stream is settled here (its lease given back before the error goes out).
   */
  async start(attempt: Attempt<OpenedStream>): Promise<StartedStream> {
    let answered: Answered<OpenedStream>;
    try {
      answered = await this.shared.runner.run(this.plan, this.input, this.model, attempt, 'answered');
    } catch (error) {
      this.settle(undefined, error);
      await this.leaseReturned;
      throw error;
    }
    this.answer = answered;
    const { value } = answered;
    return {
      upstream: answered.target.upstream,
      scope: answered.scope,
      first: value.first,
      chunks: value.chunks,
      headers: this.headers,
      call: this,
    };
  }

  /**
   * Ends the call, once (a second call changes nothing): the answering try (if any) is ended with the call's
   * failure, its trace span closed, and the lease given back with the tokens used (`leaseReturned`). Returns that
   * usage, checked and priced.
   */
  settle(
    reported: Usage | undefined,
    failure?: unknown,
    from: FailureSource = 'upstream',
    /** Characters of completion a stream delivered (deliveredChars): without usage, at least these are charged. */
    delivered = 0,
  ): PricedUsage | undefined {
    if (this.settled) return this.usage;
    this.settled = true;
    const usage = reported && checkedUsage(reported);
    const answer = this.answer;
    if (answer) {
      answer.end(failure, from === 'translation');
      if (failure === undefined) answer.trace?.succeeded(usage);
      else answer.trace?.failed(failure);
    }
    this.usage = this.shared.prices.priced(this.model, usage);
    if (this.admission)
      this.leaseReturned = this.admission.finish(usage, usage ? undefined : deliveredTokens(delivered));
    return this.usage;
  }

  /** What a provider is told of one try: its signal, the caller's key and headers, the raw body when it went unchanged. */
  contextFor(
    target: ChatTarget,
    scope: CallScope,
    trace: AttemptTrace | undefined,
    bodyUnchanged: boolean,
  ): CallContext {
    const { input } = this;
    return {
      apiKeyOverride: input.upstreamKey,
      signal: scope.signal,
      requestId: input.requestId,
      bodyJson: bodyUnchanged ? input.rawBody : undefined,
      traceparent: trace?.traceparent,
      forwardHeaders: input.forwardHeaders,
      forwardQuery: input.forwardQuery,
      promptCache: target.promptCache,
    };
  }
}

/** An upstream's stream, opened: its first batch awaited (an empty stream is a truncated one), or it is given back. */
export async function openStream(target: ChatTarget, stream: AsyncIterable<StreamBatch>): Promise<OpenedStream> {
  const chunks = stream[Symbol.asyncIterator]();
  try {
    const first = await chunks.next();
    if (first.done === true)
      throw new GatewayError('upstream_stream_truncated', {
        upstream: target.upstream,
        reason: 'the stream ended before any chunk',
      });
    return { chunks, first };
  } catch (error) {
    await chunks.return?.().catch(() => undefined);
    throw error;
  }
}
