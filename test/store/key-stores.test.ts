import { describe } from 'node:test';
import { randomUUID } from 'node:crypto';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisKeyStore } from '../../src/store/redis/redis-keys.js';
import { SqliteKeyStore } from '../../src/store/sqlite/sqlite-keys.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { keyStoreContract } from '../store-contract/key-store-contract.js';

const skip = await redisSkipReason();

keyStoreContract('sqlite', async () => {
  const store = await openSqliteStore(':memory:');
  return { keys: new SqliteKeyStore(store.db), close: () => store.close() };
});

describe('redis', { skip }, () => {
  const hashKey = `gw-test:${randomUUID()}:keys`;
  keyStoreContract('redis', async () => {
    const client = await connectRedis(REDIS_URL);
    return {
      keys: new RedisKeyStore(client, hashKey),
      close: async () => {
        await client.del(hashKey);
        await client.quit();
      },
    };
  });
});
