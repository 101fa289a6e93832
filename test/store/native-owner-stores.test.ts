/** The stores of native-id owners (issue 29) against their one contract: SQLite (memory, file) and Redis. */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisNativeOwners } from '../../src/store/redis/redis-native-owners.js';
import { SqliteNativeOwners } from '../../src/store/sqlite/sqlite-native-owners.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { nativeOwnerContract } from '../store-contract/native-owner-contract.js';

const skip = await redisSkipReason();

async function makeSqlite(where: 'memory' | 'file') {
  const dir = where === 'file' ? mkdtempSync(join(tmpdir(), 'gw-own-')) : undefined;
  const sqlite = await openSqliteStore(dir ?? ':memory:');
  return {
    owners: new SqliteNativeOwners(sqlite.db),
    close: async () => {
      await sqlite.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

nativeOwnerContract('SQLite in memory', () => makeSqlite('memory'));
nativeOwnerContract('SQLite on a file (WAL)', () => makeSqlite('file'));
nativeOwnerContract(
  'Redis',
  async () => {
    const client = await connectRedis(REDIS_URL);
    const prefix = `test:own:${randomUUID()}:`;
    return {
      owners: new RedisNativeOwners(client, prefix),
      close: async () => {
        const keys = await client.keys(`${prefix}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
      },
    };
  },
  { skip },
);
