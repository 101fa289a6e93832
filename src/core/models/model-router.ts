import type { CachePolicy, GatewayConfig, ModelConfig, RetryPolicy, RouteTarget } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Provider } from '../../providers/provider-contract.js';
import type { ProviderSet } from '../../providers/provider-registry.js';

const BUILTIN_TOTAL_TIMEOUT_MS = 60_000;
const MAX_CACHED_PLANS = 1_000;

export interface ChatTarget {
  /** The upstream's configured name (circuit breakers and pauses are per upstream). */
  upstream: string;
  provider: Provider;
  /** The model name the upstream knows. */
  upstreamModel: string;
  /** The whole-call budget for this target. */
  totalTimeoutMs: number;
  /** The model's `prompt_cache` (`auto` for a model the config does not declare). */
  promptCache: 'auto' | 'off';
}

/**
 * Which upstream serves a model id: a model declared in config goes to its upstream; a built-in model (the dev
 * echo) to its provider; anything else to the default upstream (pass-through, the model name unchanged) when one is set.
 */
export class ModelRouter {
  private readonly models: Map<string, ModelConfig>;
  private readonly config: GatewayConfig;
  private readonly providers: ProviderSet;
  private readonly fixedPlans = new Map<string, RoutePlan>();

  constructor(config: GatewayConfig, providers: ProviderSet) {
    this.config = config;
    this.providers = providers;
    this.models = new Map(config.models.flatMap((m) => [[m.id, m] as const, ...m.aliases.map((a) => [a, m] as const)]));
  }

  /**
   * The targets to try for a model, in order: its targets in a weighted random order (the first pick is
   * proportional to weight: load balancing), then its fallbacks as listed; and the retry policy that applies.
   */
  plan(modelId: string, random: () => number = Math.random): RoutePlan {
    const declared = this.models.get(modelId);
    if (!declared || (declared.targets.length === 1 && declared.fallbacks.length === 0)) {
      // One target and nothing random about it: the same plan every time, built once.
      let plan = this.fixedPlans.get(modelId);
      if (!plan) {
        plan = { candidates: [this.resolve(modelId)], retry: declared?.retry ?? this.config.retry };
        if (this.fixedPlans.size >= MAX_CACHED_PLANS) this.fixedPlans.clear(); // model ids come from callers
        this.fixedPlans.set(modelId, plan);
      }
      return plan;
    }
    const ordered = declared.targets.length === 1 ? declared.targets : weightedOrder(declared.targets, random);
    return {
      candidates: [...ordered, ...declared.fallbacks].map((t) =>
        this.target(t.upstream, t.upstreamModel, declared.promptCache),
      ),
      retry: declared.retry ?? this.config.retry,
    };
  }

  /** The model's entry in the config file, if it has one. */
  declared(modelId: string): ModelConfig | undefined {
    return this.models.get(modelId);
  }

  /** The response cache's policy of a model: its config's, else `cache.enabled`'s for undeclared ids (undefined: not cached). */
  cachePolicy(modelId: string): CachePolicy | undefined {
    const declared = this.models.get(modelId);
    return declared ? declared.cache : this.config.cache.undeclaredModels;
  }

  resolve(modelId: string): ChatTarget {
    const declared = this.models.get(modelId);
    if (declared) return this.target(declared.upstream, declared.upstreamModel, declared.promptCache);
    const builtin = this.providers.builtins.get(modelId);
    if (builtin)
      return {
        upstream: builtin.provider.name,
        provider: builtin.provider,
        upstreamModel: builtin.id,
        totalTimeoutMs: BUILTIN_TOTAL_TIMEOUT_MS,
        promptCache: 'auto',
      };
    if (this.config.defaultUpstream !== undefined) return this.target(this.config.defaultUpstream, modelId, 'auto');
    if (this.providers.upstreams.size === 0) {
      throw new GatewayError('no_upstream_configured', {
        configure: 'set UPSTREAM_BASE_URL and UPSTREAM_API_KEY, or list upstreams in the GATEWAY_CONFIG file',
        docs: 'docs/config.md',
        ...(this.providers.builtins.size > 0 ? { try_offline: [...this.providers.builtins.keys()] } : {}),
      });
    }
    throw new GatewayError('model_not_found', { model: modelId });
  }

  private target(upstream: string, upstreamModel: string, promptCache: 'auto' | 'off'): ChatTarget {
    const provider = this.providers.upstreams.get(upstream);
    const upstreamConfig = this.config.upstreams.find((u) => u.name === upstream);
    if (!provider || !upstreamConfig) throw new GatewayError('no_upstream_configured', { upstream });
    return { upstream, provider, upstreamModel, totalTimeoutMs: upstreamConfig.timeouts.totalMs, promptCache };
  }
}

export interface RoutePlan {
  candidates: ChatTarget[];
  retry: RetryPolicy;
}

/** A weighted random permutation (Efraimidis-Spirakis: sort by u^(1/w)): P(first) is proportional to weight. */
function weightedOrder(targets: readonly RouteTarget[], random: () => number): RouteTarget[] {
  return targets
    .map((t) => ({ t, key: Math.pow(random(), 1 / t.weight) }))
    .sort((a, b) => b.key - a.key)
    .map((x) => x.t);
}
