/** The vector store against its one contract: embedded (SQLite + sqlite-vec) and PostgreSQL (bytea + exact scan). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../../src/store/sqlite/sqlite-vectors.js';
import { postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresSchema } from '../helpers/scratch-postgres-schema.js';
import { vectorStoreContract } from '../store-contract/vector-store-contract.js';

const skip = await postgresSkipReason();

vectorStoreContract('embedded (SQLite + sqlite-vec)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-vectors-'));
  const sqlite = await openSqliteStore(dir);
  const store = new SqliteVectors(sqlite.db);
  return {
    store,
    close: async () => {
      await store.close();
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

vectorStoreContract(
  'PostgreSQL (no pgvector: exact scan)',
  async () => {
    const { PostgresVectors } = await import('../../src/store/postgres/postgres-vectors.js');
    const schema = await scratchPostgresSchema();
    const store = await PostgresVectors.open(schema.url);
    return {
      store,
      close: async () => {
        await store.close();
        await schema.drop();
      },
    };
  },
  { skip },
);
