import type { GatewayConfig } from '../config/types.js';
import { HealthService } from '../core/health-service.js';
import type { StoreLifecycle } from '../store/contract.js';
import type { WiredLimits } from './limits.js';
import type { WiredUpstreams } from './upstreams.js';

/** The health report: the store, each upstream's probe, circuit, pause and load, the limit store, draining. */
export function wireHealth(
  config: GatewayConfig,
  store: StoreLifecycle,
  upstreams: WiredUpstreams,
  limits: WiredLimits,
  isShuttingDown: () => boolean,
): HealthService {
  return new HealthService({
    version: config.version,
    environment: config.environment,
    store,
    probes: upstreams.probes,
    isShuttingDown,
    limits: limits.health,
    circuits: () => upstreams.breakers.snapshot(),
    pauses: () => upstreams.pauses.active(),
    loads: () => upstreams.capacity.loads(),
    priceCatalog: config.priceCatalog,
  });
}
