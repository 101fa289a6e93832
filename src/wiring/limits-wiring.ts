import type { FastifyInstance } from 'fastify';
import type { GatewayConfig, LimitsConfig } from '../config/types.js';
import { LeasedLimits } from '../core/limits/leased-limits.js';
import { RateLimitService } from '../core/limits/rate-limit-service.js';
import type { AdmissionStore, LimitStore } from '../store/store-contract.js';

export interface WiredLimits {
  service: RateLimitService;
  /**
   * The shared limit store behind leasing, for limits that are not a model call's (the MCP tool calls: one store and
   * one lease of slots for every kind of limit); undefined when buildApp was given no limiter store.
   */
  admissions: AdmissionStore | undefined;
  /** Reports the store failing or recovering (health's `degraded`, the log), as the service's own steps do. */
  onStoreHealth(healthy: boolean, error?: unknown): void;
  /** The service for another config's limits over the same store and leases (a config reload). */
  make(config: LimitsConfig): RateLimitService;
  /** For health: the store's kind and whether its last step succeeded. */
  health: { kind: string; isHealthy: () => boolean };
}

/**
 * Rate limits, token limits and budgets: the service, its store behind leasing (large limits are leased in
 * chunks, so they cost a store step per chunk rather than per request), and the store's health. Closing the app
 * gives leased units back.
 */
export function wireLimits(
  app: FastifyInstance,
  config: GatewayConfig,
  limiter: { store: LimitStore; kind: string } | undefined,
): WiredLimits {
  let healthy = true;
  const leased = new LeasedLimits({
    store: limiter?.store ?? missingLimiter(),
    onStoreError: (error) => app.log.warn({ err: error }, 'rate-limit store failing while returning leased units'),
  });
  app.addHook('onClose', async () => {
    await leased.close();
  });
  // Windows and counts live in the store, keyed by caller, model and upstream names: a service made for a reloaded
  // config over the same store and leases sees the same windows for the names that stay.
  const onStoreHealth = (nowHealthy: boolean, error?: unknown) => {
    if (!nowHealthy && healthy) app.log.warn({ err: error }, 'rate-limit store failing');
    if (nowHealthy && !healthy) app.log.info('rate-limit store recovered');
    healthy = nowHealthy;
  };
  const make = (limits: LimitsConfig) => {
    const service = new RateLimitService({
      limiter: leased,
      config: limits,
      onStoreHealth,
      // Not an outage (the store answered, or was never reached): a bug to see in the log, not a degraded store.
      onInternalError: (error) => app.log.error({ err: error }, 'rate-limit settlement failed unexpectedly'),
    });
    if (service.enabled && !limiter) throw new Error('limits are configured but buildApp was given no limiter store');
    return service;
  };
  return {
    service: make(config.limits),
    make,
    admissions: limiter ? leased : undefined,
    onStoreHealth,
    health: { kind: limiter?.kind ?? 'unknown', isHealthy: () => healthy },
  };
}

/** Stands in when no limit is configured: never called, because the service is disabled then. */
function missingLimiter(): LimitStore {
  const fail = () => Promise.reject(new Error('no limiter store configured'));
  return { admit: fail, settle: fail, consume: fail, adjust: fail, acquire: fail, release: fail };
}
