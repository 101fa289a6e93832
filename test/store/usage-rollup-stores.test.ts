/** The usage rollup contract (test/store-contract/usage-rollup-contract.ts) on SQLite and PostgreSQL. */
import { after, describe } from 'node:test';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { usageRollupContract } from '../store-contract/usage-rollup-contract.js';

const skip = await postgresSkipReason();
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

usageRollupContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-rollups-'));
  dirs.push(dir);
  const stores: SqliteStore[] = [await openSqliteStore(dir)];
  const first = stores[0] as SqliteStore;
  return {
    usage: new SqliteUsageStore(first.db),
    dialect: 'sqlite',
    another: async () => {
      const store = await openSqliteStore(dir);
      stores.push(store);
      return new SqliteUsageStore(store.db);
    },
    refuseDeletes: async () => {
      first.db.exec(
        `CREATE TEMP TRIGGER refuse_deletes BEFORE DELETE ON main.usage_records BEGIN SELECT RAISE(ABORT, 'deletes refused'); END`,
      );
      return async () => {
        first.db.exec('DROP TRIGGER temp.refuse_deletes');
      };
    },
    close: async () => {
      for (const store of stores) await store.close();
    },
  };
});

describe('postgres', { skip }, () => {
  usageRollupContract('postgres', async () => {
    const table = `usage_rollup_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const usage = await PostgresUsageStore.open(DATABASE_URL, table);
    const others: PostgresUsageStore[] = [];
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    return {
      usage,
      dialect: 'postgres',
      another: async () => {
        const other = await PostgresUsageStore.open(DATABASE_URL, table);
        others.push(other);
        return other;
      },
      refuseDeletes: async () => {
        await admin.query(`CREATE FUNCTION ${table}_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN RAISE EXCEPTION 'deletes refused'; END $$`);
        await admin.query(
          `CREATE TRIGGER ${table}_refuse BEFORE DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_refuse()`,
        );
        return async () => {
          await admin.query(`DROP TRIGGER ${table}_refuse ON ${table}`);
          await admin.query(`DROP FUNCTION ${table}_refuse()`);
        };
      },
      close: async () => {
        await Promise.all(others.map((o) => o.close()));
        await usage.dropTable();
        await usage.close();
        await admin.end();
      },
    };
  });
});
