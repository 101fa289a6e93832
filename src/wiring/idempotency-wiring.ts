import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import { CallIdempotency } from '../routes/call-idempotency.js';
import { SealedIdempotency } from '../routes/sealed-idempotency.js';
import type { IdempotencyStore } from '../store/store-contract.js';

/** `Idempotency-Key` on chat calls: stored answers and claims, renewed while a call runs; released on close. */
export function wireIdempotency(app: FastifyInstance, config: GatewayConfig, store: IdempotencyStore): CallIdempotency {
  const idempotency = new CallIdempotency({
    store,
    ttlMs: config.idempotency.ttlMs,
    // Renewed every 10 s while the call runs; a crashed holder's claims free themselves within 30 s.
    leaseMs: config.idempotency.leaseMs,
    maxReplayBytes: config.idempotency.maxReplayBytes,
    onStoreFailure: config.idempotency.onStoreFailure,
    onStoreHealth: (healthy, error) => {
      if (!healthy) app.log.warn({ err: error }, 'idempotency store failing');
    },
  });
  app.addHook('onClose', async () => {
    idempotency.close();
  });
  return idempotency;
}

/** `Idempotency-Key` on the admin keys API's create and rotate: the same store, the answer sealed (it holds a secret). */
export function wireSealedIdempotency(
  app: FastifyInstance,
  config: GatewayConfig,
  store: IdempotencyStore,
): SealedIdempotency {
  return new SealedIdempotency({
    store,
    ttlMs: config.idempotency.ttlMs,
    leaseMs: config.idempotency.leaseMs,
    onStoreFailure: config.idempotency.onStoreFailure,
    onStoreHealth: (healthy, error) => {
      if (!healthy) app.log.warn({ err: error }, 'idempotency store failing');
    },
    // Only the administrator token reaches the keys API, so there is one; rotating it retires the sealed answers.
    pepper: config.adminTokens[0] ?? '',
  });
}
