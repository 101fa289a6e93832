import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisUpstreamPauses } from '../../src/store/redis/redis-upstream-pauses.js';
import { SqliteUpstreamPauses } from '../../src/store/sqlite/sqlite-upstream-pauses.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { upstreamPauseContract } from '../store-contract/upstream-pause-contract.js';

const skip = await redisSkipReason();

upstreamPauseContract('sqlite', async () => {
  const store = await openSqliteStore(':memory:');
  return { pauses: new SqliteUpstreamPauses(store.db), close: () => store.close() };
});

describe('redis', { skip }, () => {
  const prefix = `gw-test:${randomUUID()}:pause:`;
  upstreamPauseContract('redis', async () => {
    const client = await connectRedis(REDIS_URL);
    return {
      pauses: new RedisUpstreamPauses(client, prefix),
      close: async () => {
        const keys = await client.keys(`${prefix}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
      },
    };
  });

  test('a pause key expires in Redis when the pause ends', async () => {
    const client = await connectRedis(REDIS_URL);
    try {
      const pauses = new RedisUpstreamPauses(client, prefix);
      await pauses.pause('ttl', Date.now() + 3_000);
      const ttl = await client.pttl(`${prefix}ttl`);
      assert.ok(ttl > 2_500 && ttl <= 3_000, `PTTL ${ttl}`);
    } finally {
      await client.del(`${prefix}ttl`);
      await client.quit();
    }
  });
});
