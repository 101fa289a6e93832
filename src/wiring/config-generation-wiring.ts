import type { GatewayConfig } from '../config/types.js';
import type { ConfigGeneration } from '../core/pipeline/config-generation.js';
import { ModelRouter } from '../core/models/model-router.js';
import { PriceBook } from '../core/models/price-book.js';
import { UpstreamProbe } from '../core/models/upstream-probe.js';
import type { Provider } from '../providers/provider-contract.js';
import { updateProviders, type ProviderSet } from '../providers/provider-registry.js';
import type { WiredLimits } from './limits-wiring.js';

/** The generation of the config the process started with. */
export function firstGeneration(config: GatewayConfig, providers: ProviderSet, limits: WiredLimits): ConfigGeneration {
  return assemble(config, providers, limits.service, new Map());
}

/**
 * The generation of a reloaded config. Unchanged upstreams keep their provider (and so their connection pool) and
 * probe; `retired`: the providers of removed or changed upstreams, to close once the new generation is current.
 * `fixedProviders`: providers given by the embedding program (tests) stay as they are.
 */
export function nextGeneration(
  previous: ConfigGeneration,
  config: GatewayConfig,
  limits: WiredLimits,
  fixedProviders: boolean,
): { generation: ConfigGeneration; retired: Provider[] } {
  const { providers, retired } = fixedProviders
    ? { providers: previous.providers, retired: [] }
    : updateProviders(previous.providers, previous.config, config);
  const probes = new Map(previous.probes.map((p) => [p.provider, p]));
  return { generation: assemble(config, providers, limits.make(config.limits), probes), retired };
}

function assemble(
  config: GatewayConfig,
  providers: ProviderSet,
  limits: ConfigGeneration['limits'],
  earlierProbes: ReadonlyMap<Provider, UpstreamProbe>,
): ConfigGeneration {
  const probes = [...providers.upstreams.values()].map((p) => earlierProbes.get(p) ?? new UpstreamProbe(p));
  return {
    config,
    providers,
    router: new ModelRouter(config, providers),
    prices: new PriceBook(config, providers.builtins),
    limits,
    probes,
    defaultProbe: probes.find((p) => p.provider.name === config.defaultUpstream),
    loadedAt: new Date(),
  };
}
