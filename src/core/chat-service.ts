import { GatewayError } from '../errors/gateway-error.js';
import type { CachePolicy, LimitSet } from '../config/types.js';
import type { Budget } from './rate-limit-service.js';
import type { CallContext, ChatCompletionResult, ChatExtra, ChatRequestBody, EmbeddingsRequestBody, EmbeddingsResult, NativeApi, NativeApiName, NativeBody, StreamBatch, Usage } from '../providers/contract.js';
import { checkedUsage } from '../providers/usage-figures.js';
import { cacheSavingsUsd, costUsd, type PricedUsage } from './pricing.js';
import type { PriceBook } from './price-book.js';
import type { CallScope, ClientWatch } from './call-scope.js';
import type { CircuitBreakers } from './circuit-breaker.js';
import type { ChatTarget, ModelRouter, RoutePlan } from './model-router.js';
import { estimateTokens, type Admission, type RateLimitService, type TokenEstimate } from './rate-limit-service.js';
import { estimateInputTokens } from './token-estimate.js';
import { fitContextWindow } from './context-window.js';
import type { UpstreamPauses } from './upstream-pauses.js';
import type { AttemptObserver } from './attempt-observer.js';
import type { UpstreamCapacities } from './upstream-capacity.js';
import { TargetRunner } from './try-targets.js';
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
  /** Caller headers a native path forwards (Anthropic's `anthropic-version`, `anthropic-beta`). */
  forwardHeaders?: Readonly<Record<string, string>>;
  /** The caller's query a native path forwards (`?beta=true`, which Anthropic's beta SDK client adds), or undefined. */
  forwardQuery?: string;
}

export interface CompletedChat {
  result: ChatCompletionResult;
  /** RateLimit-* headers for the answer. */
  headers: Record<string, string>;
  /** The upstream that answered. */
  upstream: string;
  /** What the call used, priced (undefined when the upstream reported no usage). */
  usage: PricedUsage | undefined;
}

export interface CompletedEmbeddings {
  result: EmbeddingsResult;
  headers: Record<string, string>;
  upstream: string;
  usage: PricedUsage | undefined;
}

export interface StartedStream {
  upstream: string;
  scope: CallScope;
  /** The first batch, already received: a stream only starts (and counts as started) once a chunk arrived. */
  first: IteratorResult<StreamBatch>;
  /** The batches after it: the chunks of one upstream read each (src/providers/contract.ts). */
  chunks: AsyncIterator<StreamBatch>;
  headers: Record<string, string>;
  /**
   * Must be called once when the stream ends, however it ends, with the tokens used if known and its failure if
   * any. Resolves with that usage, priced. `from: 'translation'` says the failure arose while the caller's surface
   * translated chunks the upstream had sent well formed (a bug, or an answer the surface cannot use): it is the
   * request's failure, not the upstream's, and never counts against its circuit.
   */
  finish(usage: Usage | undefined, failure?: unknown, from?: 'upstream' | 'translation'): Promise<PricedUsage | undefined>;
}

/** Lease margin beyond the call's total budget before a concurrency slot frees itself. */
const LEASE_MARGIN_MS = 5_000;

export interface ChatServiceOptions {
  router: ModelRouter;
  /** Each model's prices and context window: its config's, else the price catalog's. */
  prices: PriceBook;
  limits: RateLimitService;
  pauses: UpstreamPauses;
  breakers: CircuitBreakers;
  /** Told of every upstream attempt and every move to the next target (metrics, the log, the dashboard). */
  observer?: AttemptObserver;
  /** Calls in flight per upstream and their configured bounds (503 `upstream_busy` past them). */
  capacity?: UpstreamCapacities;
  random?: () => number;
  /** The response cache's policy of models the config does not declare (`cache.enabled: true`); none: not cached. */
  undeclaredCachePolicy?: CachePolicy | undefined;
}

/**
 * The chat use case, free of HTTP: plan the targets of the model, admit the call against the limits, then try the
 * targets in order (TargetRunner: retries, fallbacks, circuits, pauses; src/core/try-targets.ts). The caller's own
 * mistakes (4xx) are never retried. A stream counts as answered once its first chunk arrived: after that nothing
 * is retried (the caller already has bytes).
 */
export class ChatService {
  private readonly random: () => number;
  private readonly targets: TargetRunner;

  constructor(private readonly options: ChatServiceOptions) {
    this.random = options.random ?? Math.random;
    this.targets = new TargetRunner({
      pauses: options.pauses,
      breakers: options.breakers,
      random: this.random,
      ...(options.observer ? { observer: options.observer } : {}),
      ...(options.capacity ? { capacity: options.capacity } : {}),
    });
  }

  async complete(original: ChatRequestBody, originalCall: ChatCall): Promise<CompletedChat> {
    this.requireType(original.model, 'chat');
    const { body, call } = await this.fitContext(original, originalCall);
    const plan = this.options.router.plan(body.model, this.random);
    const admission = await this.admit(body.model, estimateTokens(body.messages, body.tools, body.max_tokens), call, plan);
    return this.completeWith(original.model, plan, admission, call, (target, scope, trace) => {
      const unchanged = target.upstreamModel === body.model && body.stream !== true;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: false };
      return target.provider.chat(upstreamBody, this.context(target, call, scope, unchanged, trace));
    });
  }

  /** Starts a stream: returns once a target delivered its first chunk; the caller must call `finish`. */
  async stream(original: ChatRequestBody, originalCall: ChatCall): Promise<StartedStream> {
    this.requireType(original.model, 'chat');
    const { body, call } = await this.fitContext(original, originalCall);
    const plan = this.options.router.plan(body.model, this.random);
    const admission = await this.admit(body.model, estimateTokens(body.messages, body.tools, body.max_tokens), call, plan);
    return this.startWith(original.model, plan, admission, call, (target, scope, trace) => {
      const unchanged = target.upstreamModel === body.model && body.stream === true;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: true };
      return target.provider.streamChat(upstreamBody, this.context(target, call, scope, unchanged, trace));
    });
  }

  /**
   * Forwards a request of a public API as it is to the upstreams of its model that speak that API natively (the
   * Responses API to OpenAI and Azure, the Messages API to Anthropic). The same plan, admission (`estimate`: the
   * surface's, from the request's size and its maximum output), retries, fallbacks and circuits as a chat call.
   */
  async forwardNative(api: NativeApiName, body: NativeBody, call: ChatCall, estimate: TokenEstimate): Promise<CompletedChat | StartedStream> {
    const plan = this.nativePlan(api, body.model);
    const admission = await this.admit(body.model, estimate, call, plan);
    const upstreamBody = (target: ChatTarget) => (target.upstreamModel === body.model ? body : { ...body, model: target.upstreamModel });
    const forwarded = (target: ChatTarget) => target.provider.native?.[api] as NativeApi;
    if (body.stream === true) {
      return this.startWith(body.model, plan, admission, call, (target, scope, trace) =>
        forwarded(target).stream(upstreamBody(target), this.context(target, call, scope, upstreamBody(target) === body, trace)),
      );
    }
    return this.completeWith(body.model, plan, admission, call, (target, scope, trace) =>
      forwarded(target).complete(upstreamBody(target), this.context(target, call, scope, upstreamBody(target) === body, trace)),
    );
  }

  /** The input tokens of a request of `api` (Messages), counted by the model's upstream that speaks it (with retries and circuits). */
  async countNativeTokens(api: NativeApiName, body: NativeBody, call: ChatCall): Promise<number> {
    const plan = this.nativePlan(api, body.model);
    const answered = await this.targets.run(plan, call, body.model, async (target, scope, trace) => {
      try {
        const upstreamBody = target.upstreamModel === body.model ? body : { ...body, model: target.upstreamModel };
        const count = target.provider.native?.[api]?.countTokens;
        if (!count) throw new GatewayError('capability_not_supported', { field: 'model', problem: 'its upstream cannot count tokens', upstream: target.upstream });
        return await count(upstreamBody, this.context(target, call, scope, upstreamBody === body, trace));
      } finally {
        scope.dispose();
      }
    }, 'success');
    return answered.value;
  }

  /** Whether some upstream of the model serves `api` natively (see forwardNative). */
  forwardsNatively(api: NativeApiName, model: string): boolean {
    return this.options.router.plan(model, () => 0.5).candidates.some((target) => target.provider.native?.[api] !== undefined);
  }

  /** Whether every upstream the model may be sent to carries the chat field `field` (providers/contract.ts ChatExtra). */
  carries(model: string, field: ChatExtra): boolean {
    return this.options.router.plan(model, () => 0.5).candidates.every((target) => target.provider.chatExtras?.has(field) === true);
  }

  private nativePlan(api: NativeApiName, model: string): RoutePlan {
    const plan = this.options.router.plan(model, this.random);
    const candidates = plan.candidates.filter((target) => target.provider.native?.[api] !== undefined);
    if (candidates.length === 0) throw new GatewayError('capability_not_supported', { field: 'model', problem: `no upstream of this model serves the ${api} API natively` });
    return { ...plan, candidates };
  }

  /** One answered call over the plan's targets (retries, fallbacks, circuits); the admission settles with its usage. */
  private async completeWith(
    model: string,
    plan: RoutePlan,
    admission: Admission | undefined,
    call: ChatCall,
    send: (target: ChatTarget, scope: CallScope, trace: AttemptTrace | undefined) => Promise<ChatCompletionResult>,
  ): Promise<CompletedChat> {
    let usage: Usage | undefined;
    try {
      const answered = await this.targets.run(plan, call, model, async (target, scope, trace) => {
        try {
          return await send(target, scope, trace);
        } finally {
          scope.dispose();
        }
      }, 'success');
      const result = answered.value;
      usage = result.usage && checkedUsage(result.usage);
      answered.trace?.succeeded(usage);
      return { result, headers: admission?.headers ?? {}, upstream: answered.target.upstream, usage: this.priced(model, usage) };
    } finally {
      if (admission) void admission.finish(usage);
    }
  }

  /** A stream over the plan's targets: started once one delivered its first batch (nothing is retried after it). */
  private async startWith(
    model: string,
    plan: RoutePlan,
    admission: Admission | undefined,
    call: ChatCall,
    open: (target: ChatTarget, scope: CallScope, trace: AttemptTrace | undefined) => AsyncIterable<StreamBatch>,
  ): Promise<StartedStream> {
    try {
      const { value, target, trace, end } = await this.targets.run(plan, call, model, async (target, scope, attemptTrace) => {
        const chunks = open(target, scope, attemptTrace)[Symbol.asyncIterator]();
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
        finish: async (reported, failure, from) => {
          const usage = reported && checkedUsage(reported);
          const priced = this.priced(model, usage);
          if (finished) return priced;
          finished = true;
          value.scope.dispose();
          end(failure, from === 'translation');
          if (failure === undefined) trace?.succeeded(usage);
          else trace?.failed(failure);
          await admission?.finish(usage);
          return priced;
        },
      };
    } catch (error) {
      await admission?.finish(undefined);
      throw error;
    }
  }

  /**
   * Embeds input: the same plan, admission (its estimate: the input's tokens, no completion), retries, fallbacks
   * and circuits as a chat call, over the targets whose provider has embeddings. Usage is the upstream's, or the
   * estimate when it reports none (Gemini).
   */
  async embed(body: EmbeddingsRequestBody, call: ChatCall): Promise<CompletedEmbeddings> {
    this.requireType(body.model, 'embedding');
    const plan = this.embeddingPlan(body.model);
    const estimate: TokenEstimate = { prompt: estimateInputTokens(body.input), maxTokens: 0 };
    const admission = await this.admit(body.model, estimate, call, plan);
    let usage: Usage | undefined;
    try {
      const answered = await this.targets.run(plan, call, body.model, async (target, scope, trace) => {
        try {
          const unchanged = target.upstreamModel === body.model;
          const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel };
          const embed = target.provider.embed?.bind(target.provider);
          if (!embed) throw new GatewayError('capability_not_supported', { field: 'model', problem: 'its upstream has no embeddings', upstream: target.upstream });
          return await embed(upstreamBody, this.context(target, call, scope, unchanged, trace));
        } finally {
          scope.dispose();
        }
      }, 'success');
      usage = checkedUsage(answered.value.usage ?? { prompt_tokens: estimate.prompt, completion_tokens: 0, total_tokens: estimate.prompt });
      answered.trace?.succeeded(usage);
      return { result: answered.value, headers: admission?.headers ?? {}, upstream: answered.target.upstream, usage: this.priced(body.model, usage) };
    } finally {
      if (admission) void admission.finish(usage);
    }
  }

  /** A model declared as one type is not called as the other (an embedding model cannot chat). */
  private requireType(model: string, wanted: 'chat' | 'embedding'): void {
    const declared = this.options.router.declared(model)?.type;
    if (declared !== undefined && declared !== wanted) {
      throw new GatewayError('capability_not_supported', { field: 'model', problem: `"${model.slice(0, 200)}" is declared as a ${declared} model`, route: wanted === 'chat' ? 'chat' : 'embeddings' });
    }
  }

  /** The model's targets whose provider has embeddings; a 400 naming the upstream when none has. */
  private embeddingPlan(model: string): RoutePlan {
    const plan = this.options.router.plan(model, this.random);
    const candidates = plan.candidates.filter((target) => typeof target.provider.embed === 'function');
    const first = plan.candidates[0];
    if (candidates.length === 0 && first) {
      throw new GatewayError('capability_not_supported', { field: 'model', problem: `the upstream serving "${model.slice(0, 200)}" has no embeddings API`, upstream: first.upstream, kind: first.provider.kind });
    }
    return { ...plan, candidates };
  }

  /**
   * The context-window check of a natively forwarded request, on its chat form: a 400 `context_length_exceeded` when
   * it cannot fit the declared window (the native body is never truncated: it is forwarded as it is).
   */
  async checkContextWindow(asChat: ChatRequestBody, client?: ClientWatch): Promise<void> {
    const facts = this.options.prices.of(asChat.model);
    // A catalog window never refuses a call (see fitContext).
    if (facts.contextWindowSource === 'config') await fitContextWindow(asChat, facts, 'error', client);
  }

  /** The name the model's first target knows it by (for counting its tokens with the right tokenizer). */
  upstreamModelOf(model: string): string {
    return this.options.router.plan(model, () => 0.5).candidates[0]?.upstreamModel ?? model;
  }

  /** The model id an alias stands for (or the id itself). */
  /** How a translated request to `model` treats fields without an equivalent (its config's `translation`). */
  translationOf(model: unknown): 'tolerant' | 'strict' {
    return typeof model === 'string' ? (this.options.router.declared(model)?.translation ?? 'tolerant') : 'tolerant';
  }

  canonicalModel(model: string): string {
    return this.options.router.declared(model)?.id ?? model;
  }

  /** The call's usage with its cost when the model (as the caller named it) has prices (config, else catalog). */
  private priced(model: string, usage: Usage | undefined): PricedUsage | undefined {
    if (!usage) return undefined;
    const pricing = this.options.prices.of(model).pricing;
    return pricing ? { ...usage, cost_usd: costUsd(usage, pricing), cache_savings_usd: cacheSavingsUsd(usage, pricing) } : usage;
  }

  /**
   * The context-window check; a truncated body is no longer the raw one. A window from the config is enforced (400
   * context_length_exceeded, or truncation when asked). A window from the price catalog is the provider's published
   * figure, and the gateway's count is exact only for OpenAI's tokenizers: it serves only a caller who asked for
   * `X-Context-Overflow: truncate`, and never refuses a call (a prompt that cannot be fitted goes as it came, and the
   * provider judges it). So a call without that header does no window work at all for a catalog window.
   */
  private async fitContext(body: ChatRequestBody, call: ChatCall): Promise<{ body: ChatRequestBody; call: ChatCall }> {
    const facts = this.options.prices.of(body.model);
    if (facts.contextWindowSource === undefined) return { body, call };
    let fitted: ChatRequestBody;
    if (facts.contextWindowSource === 'config') {
      fitted = await fitContextWindow(body, facts, call.contextOverflow, call.client);
    } else {
      if (call.contextOverflow !== 'truncate') return { body, call };
      fitted = await fitContextWindow(body, facts, 'truncate', call.client).catch((error: unknown) => {
        if (error instanceof GatewayError && error.code === 'context_length_exceeded') return body;
        throw error;
      });
    }
    return fitted === body ? { body, call } : { body: fitted, call: { ...call, rawBody: undefined } };
  }

  /**
   * A call answered from the response cache: it counts against the caller's requests-per-window limit (and says so
   * in the RateLimit headers it returns), never against tokens, a budget, or a model's or upstream's limits.
   */
  async admitCachedAnswer(model: string, call: ChatCall): Promise<Record<string, string>> {
    const { limits } = this.options;
    if (!limits.enabled && !call.callerLimits) return {};
    const admission = await limits.admit({
      caller: call.caller,
      model: this.options.router.declared(model)?.id ?? model,
      upstream: '',
      estimatedTokens: { prompt: 0, maxTokens: 0 },
      requestId: call.requestId,
      leaseMs: LEASE_MARGIN_MS,
      requestsOnly: true,
      ...(call.callerLimits ? { callerLimits: call.callerLimits } : {}),
    });
    await admission.finish(undefined);
    return admission.headers;
  }

  /** The response cache's policy of a model (undefined: its answers are not cached). */
  cachePolicy(model: string): CachePolicy | undefined {
    const declared = this.options.router.declared(model);
    return declared ? declared.cache : this.options.undeclaredCachePolicy;
  }

  /** No limits configured: no admission at all. Limits apply to the first target's upstream. */
  private async admit(model: string, estimate: TokenEstimate, call: ChatCall, plan: RoutePlan): Promise<Admission | undefined> {
    const { limits } = this.options;
    const first = plan.candidates[0];
    if ((!limits.enabled && !call.callerLimits && !call.budget) || !first) return undefined;
    const budget = Math.min(plan.retry.deadlineMs, Math.max(...plan.candidates.map((c) => c.totalTimeoutMs)));
    return limits.admit({
      caller: call.caller,
      // Per model id: a call through an alias counts against the model's limits.
      model: this.options.router.declared(model)?.id ?? model,
      upstream: first.upstream,
      estimatedTokens: estimate,
      requestId: call.requestId,
      leaseMs: Math.max(budget, first.totalTimeoutMs) + LEASE_MARGIN_MS,
      ...(call.callerLimits ? { callerLimits: call.callerLimits } : {}),
      ...(call.budget ? { budget: call.budget } : {}),
      ...(call.budget?.costMicros ? { pricing: this.options.prices.of(model).pricing } : {}),
    });
  }

  private context(target: ChatTarget, call: ChatCall, scope: CallScope, bodyUnchanged: boolean, trace: AttemptTrace | undefined): CallContext {
    return {
      apiKeyOverride: call.upstreamKey,
      signal: scope.signal,
      requestId: call.requestId,
      bodyJson: bodyUnchanged ? call.rawBody : undefined,
      traceparent: trace?.traceparent,
      forwardHeaders: call.forwardHeaders,
      forwardQuery: call.forwardQuery,
      promptCache: target.promptCache,
    };
  }
}
