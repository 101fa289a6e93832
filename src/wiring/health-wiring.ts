import cluster from 'node:cluster';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import { HealthService } from '../core/health/health-service.js';
import type { StoreLifecycle } from '../store/store-contract.js';
import type { WiredLimits } from './limits-wiring.js';
import type { WiredUpstreams } from './upstreams-wiring.js';

/**
 * The health report: the store, each upstream's probe, circuit, pause and load, the limit store, draining; which
 * process answered and which config file version it runs (with WORKERS > 1, each worker answers for itself).
 */
export function wireHealth(
  generations: ConfigGenerations,
  store: StoreLifecycle,
  upstreams: WiredUpstreams,
  limits: WiredLimits,
  isShuttingDown: () => boolean,
): HealthService {
  const { config } = generations.current;
  return new HealthService({
    version: config.version,
    environment: config.environment,
    store,
    probes: () => generations.current.probes,
    isShuttingDown,
    limits: () => (generations.current.limits.enabled ? limits.health : undefined),
    circuits: () => upstreams.breakers.snapshot(),
    pauses: () => upstreams.pauses.active(),
    loads: () => upstreams.capacity.loads(),
    priceCatalog: () => generations.current.config.priceCatalog,
    instance: { pid: process.pid, ...(cluster.worker ? { worker: cluster.worker.id } : {}) },
    config: () => generations.status(),
  });
}
