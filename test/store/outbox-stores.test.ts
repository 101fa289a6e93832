import { describe } from 'node:test';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisOutbox } from '../../src/store/redis/redis-outbox.js';
import { SqliteOutbox } from '../../src/store/sqlite/sqlite-outbox.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { outboxContract } from '../store-contract/outbox-contract.js';

const skip = await redisSkipReason();

outboxContract('sqlite (two connections on one file)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-outbox-'));
  const [a, b] = [await openSqliteStore(dir), await openSqliteStore(dir)];
  return {
    outbox: new SqliteOutbox(a.db),
    other: new SqliteOutbox(b.db),
    close: async () => {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('redis', { skip }, () => {
  const prefix = `gw-test:${randomUUID()}:wh:`;
  outboxContract('redis (two clients)', async () => {
    const [a, b] = [await connectRedis(REDIS_URL), await connectRedis(REDIS_URL)];
    return {
      outbox: new RedisOutbox(a, prefix),
      other: new RedisOutbox(b, prefix),
      close: async () => {
        const keys = await a.keys(`${prefix}*`);
        if (keys.length > 0) await a.del(...keys);
        await a.quit();
        await b.quit();
      },
    };
  });
});
