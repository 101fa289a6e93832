import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import { CircuitBreakers } from '../core/pipeline/circuit-breaker.js';
import { capacitiesOf, type UpstreamCapacities } from '../core/limits/upstream-capacity.js';
import { UpstreamPauses } from '../core/limits/upstream-pauses.js';
import type { UpstreamPauseStore } from '../store/store-contract.js';
import { EVENT, INSTANCE } from '../webhooks/gateway-events.js';
import type { Webhooks } from '../webhooks/webhooks.js';

/**
 * What the gateway knows of each upstream's state: circuits, pauses after a 429, calls in flight. It outlives a
 * config reload (kept for the upstreams that stay; the probes and providers belong to the config generation).
 */
export interface WiredUpstreams {
  breakers: CircuitBreakers;
  pauses: UpstreamPauses;
  capacity: UpstreamCapacities;
}

/** Builds the per-upstream state; a circuit that opens or closes is an event. */
export function wireUpstreams(
  app: FastifyInstance,
  config: GatewayConfig,
  pauseStore: UpstreamPauseStore,
  webhooks: Webhooks,
): WiredUpstreams {
  const breakers = new CircuitBreakers({
    ...config.circuitBreaker,
    onTransition: (t) => {
      if (t.kind === 'opened') {
        void webhooks.emit(EVENT.upstreamUnhealthy, {
          upstream: t.upstream,
          consecutive_failures: t.failures,
          cooldown_seconds: Math.round(t.cooldownMs / 1000),
          instance: INSTANCE,
        });
      } else {
        void webhooks.emit(EVENT.upstreamRecovered, {
          upstream: t.upstream,
          unhealthy_for_seconds: Math.round(t.openForMs / 1000),
          instance: INSTANCE,
        });
      }
    },
  });
  const pauses = new UpstreamPauses({
    store: pauseStore,
    maxPauseMs: config.limits.upstreamPauseMaxMs,
    onStoreError: (error) =>
      app.log.warn({ err: error }, 'upstream pause store failing; pauses stay local to this instance'),
  });
  return { breakers, pauses, capacity: capacitiesOf(config.upstreams) };
}
