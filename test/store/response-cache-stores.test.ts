/** The response cache stores against their one contract: SQLite (memory, file) and Redis. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisResponseCache } from '../../src/store/redis/redis-response-cache.js';
import { SqliteResponseCache } from '../../src/store/sqlite/sqlite-response-cache.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { responseCacheContract } from '../store-contract/response-cache-contract.js';

const skip = await redisSkipReason();

async function makeSqlite(where: 'memory' | 'file', maxBytes: number) {
  const dir = where === 'file' ? mkdtempSync(join(tmpdir(), 'gw-cache-')) : undefined;
  const sqlite = await openSqliteStore(dir ?? ':memory:');
  return {
    cache: new SqliteResponseCache(sqlite.db, maxBytes),
    close: async () => {
      await sqlite.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

responseCacheContract('SQLite in memory', (maxBytes) => makeSqlite('memory', maxBytes));
responseCacheContract('SQLite on a file (WAL)', (maxBytes) => makeSqlite('file', maxBytes));
responseCacheContract(
  'Redis',
  async (maxBytes) => {
    const client = await connectRedis(REDIS_URL);
    const prefix = `test:cache:{${randomUUID()}}:`;
    return {
      cache: new RedisResponseCache(client, maxBytes, prefix),
      close: async () => {
        const keys = await client.keys(`${prefix.replace(/[{}]/g, '?')}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
      },
    };
  },
  { skip },
);

describe('the Redis response cache recovers a drifted byte counter', { skip }, () => {
  test('a counter below zero (its key lost to Redis’ own eviction) is recounted from the sizes by the next put', async () => {
    const client = await connectRedis(REDIS_URL);
    const prefix = `test:cache:{${randomUUID()}}:`;
    try {
      const cache = new RedisResponseCache(client, 10_000, prefix);
      const entry = (body: string) => ({
        status: 200,
        headers: {},
        kind: 'json' as const,
        body,
        storedAt: new Date().toISOString(),
      });
      await cache.put('a', entry('a'.repeat(300)), 60_000);
      await cache.put('b', entry('b'.repeat(200)), 60_000);
      await client.set(`${prefix}bytes`, '-4000');
      await cache.put('c', entry('c'.repeat(100)), 60_000);
      assert.deepEqual(await cache.size(), { entries: 3, bytes: 600 });
    } finally {
      const keys = await client.keys(`${prefix.replace(/[{}]/g, '?')}*`);
      if (keys.length > 0) await client.del(...keys);
      await client.quit();
    }
  });
});
