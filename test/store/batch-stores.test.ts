/** The batch store against its one contract: embedded (SQLite) and PostgreSQL (issue 34). */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { SqliteBatches } from '../../src/store/sqlite/sqlite-batches.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresBatches } from '../../src/store/postgres/postgres-batches.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { batchStoreContract } from '../store-contract/batch-store-contract.js';

const skip = await postgresSkipReason();

batchStoreContract('embedded (SQLite)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-batches-'));
  const first = await openSqliteStore(dir);
  const second = await openSqliteStore(dir);
  return {
    store: new SqliteBatches(first.db),
    other: new SqliteBatches(second.db),
    close: async () => {
      await first.close();
      await second.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

batchStoreContract(
  'PostgreSQL',
  async () => {
    const prefix = `t${randomUUID().replaceAll('-', '').slice(0, 12)}_`;
    const store = await PostgresBatches.open(DATABASE_URL, prefix);
    const other = await PostgresBatches.open(DATABASE_URL, prefix);
    return {
      store,
      other,
      close: async () => {
        await store.close();
        await other.close();
        const client = new pg.Client({ connectionString: DATABASE_URL });
        await client.connect();
        for (const table of ['batches', 'batch_lines', 'batch_native', 'batch_creates'])
          await client.query(`DROP TABLE IF EXISTS ${prefix}${table}`);
        await client.end();
      },
    };
  },
  { skip },
);
