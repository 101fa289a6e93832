import type { LimitSet, LimitsConfig, WindowLimit } from '../../config/types.js';
import type { Usage } from '../../providers/provider-contract.js';
import { costMicros, dearestPerMillion, type Pricing } from '../models/pricing.js';
import {
  boundedEstimate,
  debtBound,
  windowNeed,
  type BoundedEstimate,
  type TokenEstimate,
} from './admission-estimate.js';
import { isStoreOutage } from '../../store/store-outage.js';
import { MAX_USAGE_TOKENS } from '../../providers/usage-figures.js';

/** A scoped key's budget per rolling period: tokens, and/or cost in millionths of a USD (priced models only). */
export interface Budget {
  tokens?: WindowLimit;
  costMicros?: WindowLimit;
}
import { GatewayError } from '../../errors/gateway-error.js';
import type { AppliedLimit, RateState } from './rate-limit-headers.js';
import { bindingLimit, rateLimitHeaders, rateLimitPolicy, rateStateOf } from './rate-limit-headers.js';
import type { AdmissionLimit, AdmissionSettlement, AdmissionStore, LimitOutcome } from '../../store/store-contract.js';

export { DEFAULT_COMPLETION_TOKENS, estimateTokens, type TokenEstimate } from './admission-estimate.js';

export interface AdmissionRequest {
  caller: string;
  model: string;
  upstream: string;
  /** What the call may cost (prompt estimate + max_tokens), charged up front and corrected afterwards. */
  estimatedTokens: TokenEstimate;
  /** The model's context window, if known: no choice's completion is longer (bounds the estimate). */
  contextWindow?: number | undefined;
  requestId: string;
  /** How long a concurrency slot may be held before it expires by itself (the call's total budget + margin). */
  leaseMs: number;
  /** A scoped key's own per-caller limits, replacing the configured ones. */
  callerLimits?: LimitSet;
  /** A scoped key's budget (rolling windows). */
  budget?: Budget;
  /** The model's prices, for a cost budget (a model without prices costs nothing against it). */
  pricing?: Pricing;
  /**
   * Only the caller's requests-per-window limit applies (an answer from the response cache: no tokens, no budget,
   * no model or upstream capacity used, nothing held in flight).
   */
  requestsOnly?: boolean;
}

export interface Admission {
  /** The RateLimit-* headers for the answer (empty when no windowed limit applies). */
  headers: Record<string, string>;
  /** The same limit's state as numbers (undefined when no windowed limit applies). */
  rate: RateState | undefined;
  /**
   * Ends the admission: frees concurrency slots and corrects token and cost limits with the real usage, if known.
   * Without usage, `deliveredTokens` (the completion a cut stream delivered before its usage came) is a floor: the
   * charge is raised to the prompt's estimate plus it when the estimate was less, never lowered.
   */
  finish(usage: Usage | undefined, deliveredTokens?: number): Promise<void>;
}

interface Scope {
  kind: 'caller' | 'model' | 'upstream' | 'budget';
  id: string;
  limits: LimitSet;
}

export interface RateLimitServiceOptions {
  /** The shared limit store, usually behind quota leasing (LeasedLimits). */
  limiter: AdmissionStore;
  config: LimitsConfig;
  /** Called when the store fails or recovers, so health can show `degraded`. */
  onStoreHealth: (healthy: boolean, error?: unknown) => void;
  /** Called with an error of a settlement that is not a store outage (a bug: logged, never hidden as an outage). */
  onInternalError?: (error: unknown) => void;
}

interface Described {
  scope: Scope;
  what: 'requests' | 'tokens' | 'concurrent' | 'cost';
  /** For RateLimit-Policy and AppliedLimit, e.g. "requests per caller". */
  name: string;
}

interface LimitPlan {
  /** The store items, `cost` of token items to be replaced per request. */
  items: AdmissionLimit[];
  described: Described[];
  /** The RateLimit-Policy header value: the same for every request of this combination. */
  policy: string;
  hasTokens: boolean;
}

const MAX_PLANS = 1_000;

const NO_OP_ADMISSION: Admission = { headers: {}, rate: undefined, finish: () => Promise.resolve() };

/**
 * Admission control before a chat call reaches its upstream: requests and tokens per window for the caller, the
 * model and the upstream (GCRA in the store, exact across instances when the store is shared), and requests in
 * flight. All limits are taken or none: when a later limit refuses, the units already taken are given back.
 */
export class RateLimitService {
  readonly enabled: boolean;
  private readonly plans = new Map<string, LimitPlan>();

  constructor(private readonly options: RateLimitServiceOptions) {
    const { config } = options;
    this.enabled = config.caller !== undefined || config.models.size > 0 || config.upstreams.size > 0;
  }

  async admit(request: AdmissionRequest): Promise<Admission> {
    const scopes = this.scopesFor(request);
    if (scopes.length === 0 && (!request.budget?.costMicros || request.requestsOnly)) return NO_OP_ADMISSION;
    try {
      const admission = await this.take(scopes, request);
      this.options.onStoreHealth(true);
      return admission;
    } catch (error) {
      // Only an outage of the store may let a call through unchecked. Any other error (a value the store cannot
      // hold, a broken invariant of ours) would happen again on every call: failing open on it switched limits
      // off for good. It goes to the error handler: a logged 500 internal_error, never admitted.
      if (!isStoreOutage(error)) throw error;
      this.options.onStoreHealth(false, error);
      if (this.options.config.onStoreFailure === 'closed') {
        throw new GatewayError('rate_limit_store_unavailable', { policy: 'closed' }, { cause: error });
      }
      return NO_OP_ADMISSION; // fail open: let the call through, health says degraded
    }
  }

  private scopesFor(request: AdmissionRequest): Scope[] {
    const { config } = this.options;
    const scopes: Scope[] = [];
    const callerLimits = request.callerLimits ?? config.caller;
    if (request.requestsOnly) {
      return callerLimits?.requests
        ? [
            {
              kind: 'caller',
              id: request.caller,
              limits: { requests: callerLimits.requests, tokens: undefined, concurrent: undefined },
            },
          ]
        : [];
    }
    if (callerLimits) scopes.push({ kind: 'caller', id: request.caller, limits: callerLimits });
    if (request.budget?.tokens)
      scopes.push({
        kind: 'budget',
        id: request.caller,
        limits: { requests: undefined, tokens: request.budget.tokens, concurrent: undefined },
      });
    const model = config.models.get(request.model);
    if (model) scopes.push({ kind: 'model', id: request.model, limits: model });
    const upstream = config.upstreams.get(request.upstream);
    if (upstream) scopes.push({ kind: 'upstream', id: request.upstream, limits: upstream });
    return scopes;
  }

  /** The limits of a (caller, model, upstream) combination, built once: config does not change while running. */
  private planFor(scopes: Scope[], request: AdmissionRequest): LimitPlan {
    // A key's own limits and budget are part of the signature: changed through the keys API, they take effect
    // (on every instance, within the key cache) instead of a plan built from the old values.
    const own =
      request.callerLimits || request.budget ? `\u0000${JSON.stringify([request.callerLimits, request.budget])}` : '';
    const signature = `${request.caller}\u0000${request.model}\u0000${request.upstream}${request.requestsOnly ? '\u0000requests' : ''}${own}`;
    let plan = this.plans.get(signature);
    if (plan) return plan;
    const items: AdmissionLimit[] = [];
    const described: Described[] = [];
    for (const scope of scopes) {
      const { requests, tokens, concurrent } = scope.limits;
      if (requests) {
        items.push({
          kind: 'rate',
          key: `requests:${scope.kind}:${scope.id}`,
          limit: requests.limit,
          windowMs: requests.windowMs,
          cost: 1,
        });
        described.push({ scope, what: 'requests', name: `requests per ${scope.kind}` });
      }
      if (tokens) {
        // A budget's counter is keyed by its period too: a key whose period is changed starts a fresh window rather
        // than carry a debt measured in the old, longer one (which would block it for longer than its new period).
        const key =
          scope.kind === 'budget' ? `tokens:budget:${scope.id}:${tokens.windowMs}` : `tokens:${scope.kind}:${scope.id}`;
        items.push({ kind: 'rate', key, limit: tokens.limit, windowMs: tokens.windowMs, cost: 1 });
        described.push({ scope, what: 'tokens', name: `tokens per ${scope.kind}` });
      }
      if (concurrent !== undefined) {
        items.push({
          kind: 'concurrency',
          key: `concurrent:${scope.kind}:${scope.id}`,
          max: concurrent,
          leaseMs: request.leaseMs,
        });
        described.push({ scope, what: 'concurrent', name: 'concurrent requests' });
      }
    }
    const rateItems = items.flatMap((item, i) =>
      item.kind === 'rate' ? [{ item, name: described[i]?.name ?? '' }] : [],
    );
    plan = {
      items,
      described,
      policy: rateLimitPolicy(
        rateItems.map(({ item, name }) => ({ limit: item.limit, windowMs: item.windowMs, name })),
      ),
      hasTokens: described.some((d) => d.what === 'tokens'),
    };
    if (this.plans.size >= MAX_PLANS) this.plans.clear(); // model ids come from callers: keep the cache bounded
    this.plans.set(signature, plan);
    return plan;
  }

  /** Every limit of every scope in one atomic store step; the settlement at the end is one more. */
  private async take(scopes: Scope[], request: AdmissionRequest): Promise<Admission> {
    const { limiter } = this.options;
    const plan = this.planFor(scopes, request);
    let limits = plan.items;
    let described = plan.described;
    let policy = plan.policy;
    // Bounded before any of it reaches a store: by the model's window and the usage bound (admission-estimate.ts).
    const estimate = boundedEstimate(request.estimatedTokens, request.contextWindow);
    if (plan.hasTokens) {
      limits = limits.map((item, i) => {
        const about = plan.described[i];
        if (about?.what !== 'tokens' || item.kind !== 'rate') return item;
        const tokens = Math.max(1, estimate.total);
        // No charge puts more than MAX_DEBT_WINDOWS windows of debt on a key (gcra.ts, "Bounds").
        const cost = debtBound(tokens, item.limit);
        // A budget admits while any of it is left and may be overdrawn by this one call (docs/auth.md).
        if (about.scope.kind === 'budget') return { ...item, cost, need: 1 };
        const need = windowNeed(estimate, tokens);
        if (need > item.limit) throw exceedsLimit(about, item, need, estimate, request.estimatedTokens);
        return need < cost ? { ...item, cost, need } : { ...item, cost };
      });
    }
    const costBudget = request.budget?.costMicros;
    // A model without prices costs nothing against a cost budget: no item at all (not even the "some left" check).
    if (costBudget && request.pricing) {
      // Charged up front at the dearest of its prices for every estimated token, corrected with the real cost.
      const perToken = dearestPerMillion(request.pricing);
      const scope: Scope = {
        kind: 'budget',
        id: request.caller,
        limits: { requests: undefined, tokens: undefined, concurrent: undefined },
      };
      const cost = debtBound(Math.ceil(estimate.total * perToken), costBudget.limit);
      limits = [
        ...limits,
        {
          kind: 'rate',
          key: `cost:budget:${request.caller}:${costBudget.windowMs}`,
          limit: costBudget.limit,
          windowMs: costBudget.windowMs,
          cost,
          need: Math.min(1, cost),
        },
      ];
      described = [...described, { scope, what: 'cost', name: 'cost per budget' }];
      // Listed in RateLimit-Policy like every other limit that applied (it was missing: an empty header).
      const costPolicy = rateLimitPolicy([
        { limit: costBudget.limit, windowMs: costBudget.windowMs, name: 'cost per budget' },
      ]);
      policy = policy ? `${policy}, ${costPolicy}` : costPolicy;
    }
    const { admitted, outcomes } = await limiter.admit(limits, request.requestId);
    const applied: AppliedLimit[] = [];
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i];
      const limit = limits[i];
      if (outcome?.kind === 'rate' && limit?.kind === 'rate') {
        applied.push({ name: described[i]?.name ?? '', windowMs: limit.windowMs, decision: outcome.decision });
      }
    }
    if (!admitted) throw this.refusal(limits, outcomes, described, applied);

    return {
      headers: rateLimitHeaders(applied, policy),
      rate: rateStateOf(applied),
      finish: async (usage, deliveredTokens) => {
        const floor = usage === undefined ? deliveredFloor(estimate, deliveredTokens) : undefined;
        const items = settlementsOf(limits, described, usage, floor, request.pricing);
        if (items.length === 0) return;
        await limiter.settle(items, request.requestId).catch((error: unknown) => {
          if (isStoreOutage(error)) this.options.onStoreHealth(false, error);
          else this.options.onInternalError?.(error);
        });
      },
    };
  }

  /** The 429 for a refused admission: the first refusing limit is named; headers report the binding one. */
  private refusal(
    limits: AdmissionLimit[],
    outcomes: LimitOutcome[],
    described: Described[],
    applied: AppliedLimit[],
  ): GatewayError {
    const index = outcomes.findIndex((o) => (o.kind === 'rate' ? !o.decision.allowed : !o.acquired));
    const outcome = outcomes[index];
    const limit = limits[index];
    const about = described[index];
    if (!outcome || !limit || !about)
      return new GatewayError('rate_limited', {}, { headers: rateLimitHeaders(applied) });
    const { scope, what } = about;
    if (scope.kind === 'budget' && outcome.kind === 'rate' && limit.kind === 'rate') {
      return new GatewayError(
        'budget_exceeded',
        {
          key: scope.id,
          ...(what === 'cost' ? { budget_usd: limit.limit / 1e6 } : { budget_tokens: limit.limit }),
          period_seconds: Math.ceil(limit.windowMs / 1000),
          retry_after_seconds: Math.max(1, Math.ceil(outcome.decision.retryAfterMs / 1000)),
        },
        {
          headers: {
            ...rateLimitHeaders(applied),
            'retry-after': String(Math.max(1, Math.ceil(outcome.decision.retryAfterMs / 1000))),
          },
        },
      );
    }
    if (outcome.kind === 'concurrency' && limit.kind === 'concurrency') {
      return new GatewayError(
        'rate_limited',
        {
          limit: 'concurrent requests',
          scope: scope.kind,
          scope_id: scope.id,
          max: limit.max,
          in_flight: outcome.inFlight,
        },
        { headers: { ...rateLimitHeaders(applied), 'retry-after': '1' } },
      );
    }
    // Headers and the wait name the refusing limit with the longest wait: retrying earlier cannot succeed.
    const binding = bindingLimit(applied);
    return new GatewayError(
      'rate_limited',
      {
        limit: what,
        scope: scope.kind,
        scope_id: scope.id,
        max: outcome.kind === 'rate' ? outcome.decision.limit : undefined,
        window_seconds: limit.kind === 'rate' ? Math.ceil(limit.windowMs / 1000) : undefined,
        retry_after_seconds: Math.max(1, Math.ceil((binding?.decision.retryAfterMs ?? 1000) / 1000)),
      },
      { headers: rateLimitHeaders(applied) },
    );
  }
}

/**
 * The store items that end an admission: every slot freed; token and cost limits corrected with the real usage, or
 * raised to `floor` (what a stream cut before its usage delivered) when that is more than was charged.
 */
function settlementsOf(
  limits: readonly AdmissionLimit[],
  described: readonly Described[],
  usage: Usage | undefined,
  floor: Usage | undefined,
  pricing: Pricing | undefined,
): AdmissionSettlement[] {
  const items: AdmissionSettlement[] = [];
  const actualTokens = usage?.total_tokens;
  for (let i = 0; i < limits.length; i++) {
    const limit = limits[i];
    const what = described[i]?.what;
    if (limit?.kind === 'concurrency') items.push({ kind: 'concurrency', key: limit.key });
    else if (limit && floor && (what === 'tokens' || what === 'cost')) {
      // A stream cut before its usage: at least what it delivered is charged.
      const units = what === 'tokens' ? floor.total_tokens : pricing ? Math.ceil(costMicros(floor, pricing)) : 0;
      const delta = debtBound(units, limit.limit) - limit.cost;
      if (delta > 0) items.push({ kind: 'rate', key: limit.key, limit: limit.limit, windowMs: limit.windowMs, delta });
    } else if (limit && actualTokens !== undefined && what === 'tokens') {
      items.push({
        kind: 'rate',
        key: limit.key,
        limit: limit.limit,
        windowMs: limit.windowMs,
        delta: debtBound(Math.max(0, actualTokens), limit.limit) - limit.cost,
      });
    } else if (limit && usage && what === 'cost') {
      // The call's cost as the provider bills it (cache reads and writes at their prices: pricing.ts).
      const micros = pricing ? Math.round(costMicros(usage, pricing)) : 0;
      items.push({
        kind: 'rate',
        key: limit.key,
        limit: limit.limit,
        windowMs: limit.windowMs,
        delta: debtBound(micros, limit.limit) - limit.cost,
      });
    }
  }
  return items;
}

/**
 * The least a call without reported usage used, when it delivered completion: its prompt's estimate and what it
 * delivered (each bounded like the estimate). Undefined when nothing was delivered (the estimate stands).
 */
function deliveredFloor(estimate: BoundedEstimate, deliveredTokens: number | undefined): Usage | undefined {
  if (deliveredTokens === undefined || !Number.isFinite(deliveredTokens) || deliveredTokens <= 0) return undefined;
  const completion = Math.min(Math.ceil(deliveredTokens), MAX_USAGE_TOKENS);
  return { prompt_tokens: estimate.prompt, completion_tokens: completion, total_tokens: estimate.prompt + completion };
}

/** A call that needs more than a whole window can ever hold: a 400 that says so, not a 429 whose wait cannot help. */
function exceedsLimit(
  about: Described,
  limit: { limit: number; windowMs: number },
  need: number,
  estimate: BoundedEstimate,
  asked: TokenEstimate,
): GatewayError {
  return new GatewayError('request_exceeds_limit', {
    limit: about.what,
    scope: about.scope.kind,
    scope_id: about.scope.id,
    max: limit.limit,
    window_seconds: Math.ceil(limit.windowMs / 1000),
    estimated_tokens: need,
    estimated_prompt_tokens: estimate.prompt,
    max_tokens: asked.maxTokens ?? null,
  });
}
