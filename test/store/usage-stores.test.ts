import { describe } from 'node:test';
import { randomUUID } from 'node:crypto';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { usageContract } from '../store-contract/usage-contract.js';

const skip = await postgresSkipReason();

usageContract('sqlite', async () => {
  const store = await openSqliteStore(':memory:');
  return { usage: new SqliteUsageStore(store.db), close: () => store.close() };
});

describe('postgres', { skip }, () => {
  usageContract('postgres', async () => {
    const usage = await PostgresUsageStore.open(
      DATABASE_URL,
      `usage_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`,
    );
    return {
      usage,
      close: async () => {
        await usage.dropTable();
        await usage.close();
      },
    };
  });
});
