import { GatewayError } from '../../errors/gateway-error.js';
import type { NativeApiName } from '../../providers/provider-contract.js';
import type { AttemptObserver } from './attempt-observer.js';
import type { CircuitBreakers } from './circuit-breaker.js';
import { LEASE_MARGIN_MS, ModelCall, type CallInput, type CallMachinery } from './model-call.js';
import type { ModelRouter, RoutePlan } from '../models/model-router.js';
import type { PriceBook } from '../models/price-book.js';
import type { RateLimitService } from '../limits/rate-limit-service.js';
import { TargetRunner } from './target-runner.js';
import type { UpstreamCapacities } from '../limits/upstream-capacity.js';
import type { UpstreamPauses } from '../limits/upstream-pauses.js';

export interface CallPipelineOptions {
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
}

/** Narrows a model's plan to the targets that can serve the call (a 400 naming why when none can). */
export type TargetFilter = (plan: RoutePlan, model: string) => RoutePlan;

/**
 * What every model call shares, free of HTTP — chat, native forwarding, embeddings, token counts: the first step of
 * each (`plan`: its targets, in order, as a ModelCall whose `admit`, `run` or `start`, and `settle` are the rest),
 * the machinery those steps use (the limits, the tries over targets, the prices), and the questions about a model
 * they all ask. The caller's own mistakes (4xx) are never retried; a stream counts as answered once its first chunk
 * arrived, and nothing is retried after it (the caller already has bytes).
 */
export class CallPipeline implements CallMachinery {
  router: ModelRouter;
  prices: PriceBook;
  limits: RateLimitService;
  readonly runner: TargetRunner;
  private readonly random: () => number;
  /** What a call made now keeps to its end (see `swap`). */
  private machinery: CallMachinery;

  constructor(options: CallPipelineOptions) {
    this.router = options.router;
    this.prices = options.prices;
    this.limits = options.limits;
    this.random = options.random ?? Math.random;
    this.runner = new TargetRunner({
      pauses: options.pauses,
      breakers: options.breakers,
      random: this.random,
      ...(options.observer ? { observer: options.observer } : {}),
      ...(options.capacity ? { capacity: options.capacity } : {}),
    });
    this.machinery = this.freeze();
  }

  /**
   * A config reload (docs/config.md, "Live reload"): calls planned from now on use these; a call already planned
   * keeps the router's targets, the limits and the prices it was planned with until it settles, so a call running
   * across a reload is admitted, settled and priced by one configuration. The runner (circuits, pauses, capacity)
   * is the same object before and after: that state belongs to the upstreams, not to a configuration.
   */
  swap(parts: { router: ModelRouter; prices: PriceBook; limits: RateLimitService }): void {
    this.router = parts.router;
    this.prices = parts.prices;
    this.limits = parts.limits;
    this.machinery = this.freeze();
  }

  private freeze(): CallMachinery {
    const { router, prices, limits, runner } = this;
    return { prices, limits, runner, canonicalModel: (model) => router.declared(model)?.id ?? model };
  }

  /** A call's first step: the model's targets to try, in order (narrowed to those that can serve it). */
  plan(model: string, input: CallInput, narrow?: TargetFilter): ModelCall {
    const plan = this.router.plan(model, this.random);
    return new ModelCall(this.machinery, model, input, narrow ? narrow(plan, model) : plan);
  }

  /** A call to the model's upstreams that speak `api` natively; a 400 when none does. */
  planNative(api: NativeApiName, model: string, input: CallInput): ModelCall {
    const plan = this.router.plan(model, this.random);
    const candidates = plan.candidates.filter((target) => target.provider.native?.[api] !== undefined);
    if (candidates.length === 0)
      throw new GatewayError('capability_not_supported', {
        field: 'model',
        problem: `no upstream of this model serves the ${api} API natively`,
      });
    return new ModelCall(this.machinery, model, input, { ...plan, candidates });
  }

  /** Whether some upstream of the model serves `api` natively (see planNative). */
  forwardsNatively(api: NativeApiName, model: string): boolean {
    return this.router.plan(model, () => 0.5).candidates.some((target) => target.provider.native?.[api] !== undefined);
  }

  /**
   * Whether a request the translation could carry goes natively anyway: every upstream of the model serves `api`
   * natively (none would be lost by forwarding) and its config does not ask for chat (`responses: chat`).
   */
  forwardsWholly(api: NativeApiName, model: string): boolean {
    if (this.router.declared(model)?.responses === 'chat') return false;
    return this.router.plan(model, () => 0.5).candidates.every((target) => target.provider.native?.[api] !== undefined);
  }

  /** A model declared as one type is not called as the other (an embedding model cannot chat). */
  requireType(model: string, wanted: 'chat' | 'embedding'): void {
    const declared = this.router.declared(model)?.type;
    if (declared !== undefined && declared !== wanted) {
      throw new GatewayError('capability_not_supported', {
        field: 'model',
        problem: `"${model.slice(0, 200)}" is declared as a ${declared} model`,
        route: wanted === 'chat' ? 'chat' : 'embeddings',
      });
    }
  }

  /** The model id an alias stands for (or the id itself). */
  canonicalModel(model: string): string {
    return this.router.declared(model)?.id ?? model;
  }

  /** The name the model's first target knows it by (for counting its tokens with the right tokenizer). */
  upstreamModelOf(model: string): string {
    return this.router.plan(model, () => 0.5).candidates[0]?.upstreamModel ?? model;
  }

  /**
   * A call answered from the response cache: it counts against the caller's requests-per-window limit (and says so
   * in the RateLimit headers it returns), never against tokens, a budget, or a model's or upstream's limits.
   */
  async admitCachedAnswer(model: string, input: CallInput): Promise<Record<string, string>> {
    const { limits } = this;
    if (!limits.enabled && !input.callerLimits) return {};
    const admission = await limits.admit({
      caller: input.caller,
      model: this.canonicalModel(model),
      upstream: '',
      estimatedTokens: { prompt: 0, maxTokens: 0 },
      requestId: input.requestId,
      leaseMs: LEASE_MARGIN_MS,
      requestsOnly: true,
      ...(input.callerLimits ? { callerLimits: input.callerLimits } : {}),
    });
    await admission.finish(undefined);
    input.onAdmitted?.(admission.rate);
    return admission.headers;
  }
}
