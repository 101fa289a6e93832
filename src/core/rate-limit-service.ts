import type { LimitSet, LimitsConfig } from '../config/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { AppliedLimit } from '../http/rate-limit-headers.js';
import { bindingLimit, rateLimitHeaders } from '../http/rate-limit-headers.js';
import type { ConcurrencyLimiter, RateLimiter } from '../store/contract.js';

export interface AdmissionRequest {
  caller: string;
  model: string;
  upstream: string;
  /** Prompt estimate + max_tokens: what the call may cost, charged up front and corrected afterwards. */
  estimatedTokens: number;
  requestId: string;
  /** How long a concurrency slot may be held before it expires by itself (the call's total budget + margin). */
  leaseMs: number;
}

export interface Admission {
  /** The RateLimit-* headers for the answer (empty when no windowed limit applies). */
  headers: Record<string, string>;
  /** Ends the admission: frees concurrency slots and corrects token limits with the real count, if known. */
  finish(actualTokens: number | undefined): Promise<void>;
}

interface Scope {
  kind: 'caller' | 'model' | 'upstream';
  id: string;
  limits: LimitSet;
}

export interface RateLimitServiceOptions {
  limiter: RateLimiter & ConcurrencyLimiter;
  config: LimitsConfig;
  /** Called when the store fails or recovers, so health can show `degraded`. */
  onStoreHealth: (healthy: boolean, error?: unknown) => void;
}

const NO_OP_ADMISSION: Admission = { headers: {}, finish: () => Promise.resolve() };

/**
 * Admission control before a chat call reaches its upstream: requests and tokens per window for the caller, the
 * model and the upstream (GCRA in the store, exact across instances when the store is shared), and requests in
 * flight. All limits are taken or none: when a later limit refuses, the units already taken are given back.
 */
export class RateLimitService {
  readonly enabled: boolean;

  constructor(private readonly options: RateLimitServiceOptions) {
    const { config } = options;
    this.enabled = config.caller !== undefined || config.models.size > 0 || config.upstreams.size > 0;
  }

  async admit(request: AdmissionRequest): Promise<Admission> {
    const scopes = this.scopesFor(request);
    if (scopes.length === 0) return NO_OP_ADMISSION;
    try {
      const admission = await this.take(scopes, request);
      this.options.onStoreHealth(true);
      return admission;
    } catch (error) {
      if (error instanceof GatewayError) throw error;
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
    if (config.caller) scopes.push({ kind: 'caller', id: request.caller, limits: config.caller });
    const model = config.models.get(request.model);
    if (model) scopes.push({ kind: 'model', id: request.model, limits: model });
    const upstream = config.upstreams.get(request.upstream);
    if (upstream) scopes.push({ kind: 'upstream', id: request.upstream, limits: upstream });
    return scopes;
  }

  private async take(scopes: Scope[], request: AdmissionRequest): Promise<Admission> {
    const { limiter } = this.options;
    const applied: AppliedLimit[] = [];
    const taken: Array<{ key: string; limit: number; windowMs: number; cost: number }> = [];
    const leases: string[] = [];
    const undo = async () => {
      await Promise.all([
        ...taken.map((t) => limiter.adjust(t.key, t.limit, t.windowMs, -t.cost)),
        ...leases.map((key) => limiter.release(key, request.requestId)),
      ]);
    };
    for (const scope of scopes) {
      const windows = [
        { what: 'requests', window: scope.limits.requests, cost: 1 },
        { what: 'tokens', window: scope.limits.tokens, cost: Math.max(1, request.estimatedTokens) },
      ] as const;
      for (const { what, window, cost } of windows) {
        if (!window) continue;
        const key = `${what}:${scope.kind}:${scope.id}`;
        const decision = await limiter.consume(key, window.limit, window.windowMs, cost);
        const limit: AppliedLimit = { name: `${what} per ${scope.kind}`, windowMs: window.windowMs, decision };
        applied.push(limit);
        if (!decision.allowed) {
          await undo();
          throw refusal(limit, scope, what, applied);
        }
        taken.push({ key, limit: window.limit, windowMs: window.windowMs, cost });
      }
      if (scope.limits.concurrent !== undefined) {
        const key = `concurrent:${scope.kind}:${scope.id}`;
        const slot = await limiter.acquire(key, request.requestId, scope.limits.concurrent, request.leaseMs);
        if (!slot.acquired) {
          await undo();
          throw new GatewayError(
            'rate_limited',
            { limit: 'concurrent requests', scope: scope.kind, scope_id: scope.id, max: scope.limits.concurrent, in_flight: slot.inFlight },
            { headers: { ...rateLimitHeaders(applied), 'retry-after': '1' } },
          );
        }
        leases.push(key);
      }
    }
    const tokenLimits = taken.filter((t) => t.key.startsWith('tokens:'));
    return {
      headers: rateLimitHeaders(applied),
      finish: async (actualTokens) => {
        const corrections =
          actualTokens === undefined
            ? []
            : tokenLimits.map((t) => limiter.adjust(t.key, t.limit, t.windowMs, Math.max(0, actualTokens) - t.cost));
        await Promise.all([...corrections, ...leases.map((key) => limiter.release(key, request.requestId))]).catch(
          (error: unknown) => this.options.onStoreHealth(false, error),
        );
      },
    };
  }
}

function refusal(limit: AppliedLimit, scope: Scope, what: string, applied: AppliedLimit[]): GatewayError {
  const binding = bindingLimit(applied) ?? limit;
  return new GatewayError(
    'rate_limited',
    {
      limit: what,
      scope: scope.kind,
      scope_id: scope.id,
      max: limit.decision.limit,
      window_seconds: Math.ceil(limit.windowMs / 1000),
      retry_after_seconds: Math.max(1, Math.ceil(binding.decision.retryAfterMs / 1000)),
    },
    { headers: rateLimitHeaders(applied) },
  );
}

/**
 * The admission estimate of a call's tokens, before a real tokenizer arrives with issue 4: about four characters
 * a token for the prompt, plus `max_tokens` (or 1024 when the caller sets none). Corrected with the provider's
 * reported usage when the call ends.
 */
export function estimateTokens(messages: ReadonlyArray<{ content?: unknown }>, maxTokens: number | undefined): number {
  let chars = 0;
  for (const message of messages) {
    if (typeof message.content === 'string') chars += message.content.length;
    else if (message.content !== undefined && message.content !== null) chars += JSON.stringify(message.content).length;
  }
  return Math.ceil(chars / 4) + 4 * messages.length + (maxTokens ?? 1024);
}
