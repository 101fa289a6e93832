/**
 * A PostgreSQL schema of a test's own, for gateway processes that create their tables under the default names
 * (`gw_batches`...): a connection URL whose `search_path` is a fresh schema, so nothing another test file or an
 * earlier run left in the shared database (an unfinished batch another runner would claim) is seen, and `drop`
 * removes everything the test made.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { DATABASE_URL } from './services.js';

export async function scratchPostgresSchema(): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const url = new URL(DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}
