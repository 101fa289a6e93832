/**
 * The PostgreSQL file stores on tables of their own (a random prefix), dropped again by `close`: one test file's
 * stores never see another's, and nothing is left in the database.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PostgresFileStores } from '../../src/store/postgres/postgres-files.js';
import { storageUseFunctions } from '../../src/store/postgres/postgres-storage-use.js';
import { DATABASE_URL } from './services.js';

export async function scratchPostgresFileStores(): Promise<{
  stores: PostgresFileStores;
  prefix: string;
  close: () => Promise<void>;
}> {
  const prefix = `t${randomUUID().replaceAll('-', '').slice(0, 12)}_`;
  const stores = await PostgresFileStores.open(DATABASE_URL, prefix);
  return {
    stores,
    prefix,
    close: async () => {
      await stores.close();
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      for (const table of [
        'files',
        'uploads',
        'upload_parts',
        'blob_chunks',
        'forwarded_files',
        'storage_use',
        'storage_reservations',
      ])
        await client.query(`DROP TABLE IF EXISTS ${prefix}${table}`);
      for (const fn of storageUseFunctions(prefix)) await client.query(`DROP FUNCTION IF EXISTS ${fn}`);
      await client.end();
    },
  };
}
