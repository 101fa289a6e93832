import type { GatewayConfig } from '../config/types.js';
import type {
  IdempotencyStore,
  KeyStore,
  LimitStore,
  NativeOwnerStore,
  OutboxStore,
  ResponseCacheStore,
  ResponseStore,
  UpstreamPauseStore,
} from './store-contract.js';
import type { SqliteStore } from './sqlite/sqlite-store.js';

export interface StateStores {
  /** Present when any limit is configured. */
  limiter: { store: LimitStore; kind: 'sqlite' | 'redis' } | undefined;
  idempotency: { store: IdempotencyStore; kind: 'sqlite' | 'redis' };
  /** Pauses of upstreams that answered 429, seen by every instance sharing the store. */
  pauses: UpstreamPauseStore;
  /** The webhook outbox: in the same store as the state the events report, shared when the store is. */
  outbox: OutboxStore;
  /** Scoped API keys: in the shared store when there is one, so a key works (and is revoked) everywhere. */
  keys: KeyStore;
  /** Stored Responses API responses (previous_response_id, GET /v1/responses/{id}): shared when the store is. */
  responses: ResponseStore;
  /** Who made each id an upstream keeps for a natively forwarded call: shared when the store is. */
  nativeOwners: NativeOwnerStore;
  /** The exact response cache (bounded by cache.max_total_bytes): shared when the store is. */
  responseCache: ResponseCacheStore;
  close(): Promise<void>;
}

/**
 * Where the shared hot state lives (rate limits, idempotency keys). With REDIS_URL: Redis, shared by every
 * gateway instance, so N replicas let N requests through in total and one Idempotency-Key runs once across all
 * of them. Otherwise the embedded SQLite file, exact for every process on this machine that shares the data
 * directory. The Redis driver is imported only on the Redis path.
 */
export async function openStateStores(config: GatewayConfig, sqlite: SqliteStore): Promise<StateStores> {
  if (config.redisUrl) {
    const [
      { connectRedis },
      { RedisRateLimiter },
      { RedisIdempotencyStore },
      { RedisUpstreamPauses },
      { RedisOutbox },
    ] = await Promise.all([
      import('./redis/connect.js'),
      import('./redis/redis-rate-limiter.js'),
      import('./redis/redis-idempotency-store.js'),
      import('./redis/redis-upstream-pauses.js'),
      import('./redis/redis-outbox.js'),
    ]);
    const { RedisKeyStore } = await import('./redis/redis-keys.js');
    const { RedisResponseStore } = await import('./redis/redis-response-store.js');
    const { RedisResponseCache } = await import('./redis/redis-response-cache.js');
    const { RedisNativeOwners } = await import('./redis/redis-native-owners.js');
    const client = await connectRedis(config.redisUrl);
    return {
      // Always there: scoped keys may carry their own limits even when the config sets none.
      limiter: { store: new RedisRateLimiter(client), kind: 'redis' },
      idempotency: { store: new RedisIdempotencyStore(client), kind: 'redis' },
      pauses: new RedisUpstreamPauses(client),
      // Per environment: a staging and a prod gateway sharing one Redis by mistake still never swap deliveries.
      outbox: new RedisOutbox(client, `gw:wh:${config.environment}:`),
      keys: new RedisKeyStore(client, `gw:keys:${config.environment}`),
      responses: new RedisResponseStore(client, `gw:resp:${config.environment}:`),
      nativeOwners: new RedisNativeOwners(client, `gw:own:${config.environment}:`),
      responseCache: new RedisResponseCache(client, config.cache.maxTotalBytes, `gw:cache:{${config.environment}}:`),
      close: async () => {
        await client.quit().catch(() => client.disconnect());
      },
    };
  }
  const [{ SqliteRateLimiter }, { SqliteIdempotencyStore }, { SqliteUpstreamPauses }, { SqliteOutbox }] =
    await Promise.all([
      import('./sqlite/sqlite-rate-limiter.js'),
      import('./sqlite/sqlite-idempotency-store.js'),
      import('./sqlite/sqlite-upstream-pauses.js'),
      import('./sqlite/sqlite-outbox.js'),
    ]);
  const { SqliteKeyStore } = await import('./sqlite/sqlite-keys.js');
  const { SqliteResponseStore } = await import('./sqlite/sqlite-response-store.js');
  const { SqliteResponseCache } = await import('./sqlite/sqlite-response-cache.js');
  const { SqliteNativeOwners } = await import('./sqlite/sqlite-native-owners.js');
  return {
    limiter: { store: new SqliteRateLimiter(sqlite.db), kind: 'sqlite' },
    idempotency: { store: new SqliteIdempotencyStore(sqlite.db), kind: 'sqlite' },
    pauses: new SqliteUpstreamPauses(sqlite.db),
    outbox: new SqliteOutbox(sqlite.db),
    keys: new SqliteKeyStore(sqlite.db),
    responses: new SqliteResponseStore(sqlite.db),
    nativeOwners: new SqliteNativeOwners(sqlite.db),
    responseCache: new SqliteResponseCache(sqlite.db, config.cache.maxTotalBytes),
    close: () => Promise.resolve(),
  };
}
