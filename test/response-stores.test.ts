/** The stores of Responses API responses against their one contract: SQLite (memory, file) and Redis. */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectRedis } from '../src/store/redis/connect.js';
import { RedisResponseStore } from '../src/store/redis/redis-response-store.js';
import { SqliteResponseStore } from '../src/store/sqlite/sqlite-response-store.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { REDIS_URL, redisSkipReason } from './helpers/services.js';
import { responseStoreContract } from './store-contract/response-store-contract.js';

const skip = await redisSkipReason();

async function makeSqlite(where: 'memory' | 'file') {
  const dir = where === 'file' ? mkdtempSync(join(tmpdir(), 'gw-resp-')) : undefined;
  const sqlite = await openSqliteStore(dir ?? ':memory:');
  return {
    responses: new SqliteResponseStore(sqlite.db),
    close: async () => {
      await sqlite.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

responseStoreContract('SQLite in memory', () => makeSqlite('memory'));
responseStoreContract('SQLite on a file (WAL)', () => makeSqlite('file'));
responseStoreContract(
  'Redis',
  async () => {
    const client = await connectRedis(REDIS_URL);
    const prefix = `test:resp:${randomUUID()}:`;
    return {
      responses: new RedisResponseStore(client, prefix),
      close: async () => {
        const keys = await client.keys(`${prefix}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
      },
    };
  },
  { skip },
);
