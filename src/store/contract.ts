/**
 * Stores are small interfaces, one per job (the rate limiter, idempotency, the webhook outbox and the usage log
 * join this file as they are built), so each backend implements only what it can do well and every backend
 * passes the same contract suite.
 */

/** What every backend offers: a cheap liveness probe for the health route, and an orderly close. */
export interface StoreLifecycle {
  /** "sqlite", "redis", "postgres": shown in health. */
  readonly kind: string;
  /** Resolves when the backend answered a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface GatewayStore extends StoreLifecycle {
  /** The schema version the store is at after its migrations ran. */
  readonly schemaVersion: number;
}
