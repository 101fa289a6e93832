import type { Redis as RedisClient } from 'ioredis';

export type { RedisClient };

/**
 * Opens a Redis connection. `ioredis` is imported here, lazily, so a gateway on the embedded default never loads
 * it. The client reconnects by itself (backoff capped at 2 s) and fails commands fast while disconnected
 * (`maxRetriesPerRequest: 1`, no offline queue), so a Redis outage becomes a quick, handled error instead of
 * requests that hang.
 */
export async function connectRedis(url: string, options: { connectTimeoutMs?: number } = {}): Promise<RedisClient> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    // Commands issued in the same event-loop turn (many requests' scripts under load) go out in one write.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: options.connectTimeoutMs ?? 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  client.on('error', () => {
    // Connection errors surface on the commands that fail; without a listener ioredis would log them itself.
  });
  // Not awaited to the end: a gateway whose Redis is down at start still starts (each feature then applies its
  // failure policy) and picks Redis up when it comes back. A short wait lets a healthy Redis be ready first.
  const connected = client.connect().then(
    () => true,
    () => false,
  );
  await Promise.race([
    connected,
    new Promise((resolve) => setTimeout(resolve, options.connectTimeoutMs ?? 2_000).unref()),
  ]);
  return client;
}
