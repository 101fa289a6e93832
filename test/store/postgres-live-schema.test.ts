/**
 * PostgreSQL shared by running instances: an instance that starts must not stall or break the others. Its schema
 * statements used to run on every start: `CREATE INDEX IF NOT EXISTS` takes a SHARE lock on its table and `ALTER
 * TABLE … ADD COLUMN IF NOT EXISTS` an ACCESS EXCLUSIVE one even when there is nothing to do, so a second gateway
 * starting blocked every write of the running one, and could deadlock with a line's answer being recorded (seen in
 * CI: PostgreSQL aborted the running instance's statement after its 1 s deadlock check, and the line ran upstream
 * again). Now a schema already applied is recognised by its SHA-256 and nothing is locked; and a batch statement that
 * PostgreSQL aborts as a deadlock victim is tried again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PostgresBatches } from '../../src/store/postgres/postgres-batches.js';
import { PostgresFileStores } from '../../src/store/postgres/postgres-files.js';
import { storageUseFunctions } from '../../src/store/postgres/postgres-storage-use.js';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { batchRecord } from '../helpers/batch-fixtures.js';
import { waitFor } from '../helpers/wait.js';

const skip = await postgresSkipReason();

/** Settles within `ms`, or says what it was waiting for. */
async function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('PostgreSQL: an instance starting beside running ones', { skip }, () => {
  const prefix = `t${randomUUID().replaceAll('-', '').slice(0, 12)}_`;
  const usageTable = `${prefix}usage`;
  let admin: pg.Client;
  const tables = ['batches', 'batch_lines', 'batch_native', 'files', 'uploads', 'upload_parts', 'blob_chunks']
    .concat(['forwarded_files', 'batch_creates', 'storage_use', 'storage_reservations'])
    .map((t) => `${prefix}${t}`)
    .concat(
      [usageTable],
      ['hours', 'latency', 'size', 'spool_marks'].map((t) => `${usageTable}_${t}`),
    );
  before(async () => {
    admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
  });
  after(async () => {
    for (const table of tables) await admin.query(`DROP TABLE IF EXISTS ${table}`);
    for (const fn of storageUseFunctions(prefix)) await admin.query(`DROP FUNCTION IF EXISTS ${fn}`);
    await admin.end();
  });

  test('opening a schema already applied waits for no lock the running instances hold', async () => {
    const batches = await PostgresBatches.open(DATABASE_URL, prefix);
    const files = await PostgresFileStores.open(DATABASE_URL, prefix);
    const usage = await PostgresUsageStore.open(DATABASE_URL, usageTable);
    const running = new pg.Client({ connectionString: DATABASE_URL });
    await running.connect();
    try {
      // A running instance's writes in flight: a transaction holding row-exclusive locks on every table.
      await running.query('BEGIN');
      for (const table of tables) await running.query(`LOCK TABLE ${table} IN ROW EXCLUSIVE MODE`);
      const opened = await within(
        'a second instance opening its stores',
        5_000,
        Promise.all([
          PostgresBatches.open(DATABASE_URL, prefix),
          PostgresFileStores.open(DATABASE_URL, prefix),
          PostgresUsageStore.open(DATABASE_URL, usageTable),
        ]),
      );
      await Promise.all(opened.map((store) => store.close()));
    } finally {
      await running.query('ROLLBACK');
      await running.end();
      await Promise.all([batches.close(), files.close(), usage.close()]);
    }
  });

  test('a table dropped by hand is created again at the next open', async () => {
    const first = await PostgresBatches.open(DATABASE_URL, prefix);
    await first.close();
    await admin.query(`DROP TABLE ${prefix}batch_native`);
    const again = await PostgresBatches.open(DATABASE_URL, prefix);
    try {
      const { rows } = await admin.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
        `${prefix}batch_native`,
      ]);
      assert.equal(rows[0]?.t, `${prefix}batch_native`);
    } finally {
      await again.close();
    }
  });

  test("a line's answer whose statement PostgreSQL aborts as a deadlock victim is recorded on a second try", async () => {
    const store = await PostgresBatches.open(DATABASE_URL, prefix);
    const other = new pg.Client({ connectionString: DATABASE_URL });
    await other.connect();
    try {
      const batch = batchRecord({ total: 1 });
      await store.addLines(batch.id, [{ index: 0, customId: 'c0', url: '/v1/chat/completions', body: '{}' }]);
      await store.create(batch);
      // Another transaction holds the batch's row; recordOutcome takes the line's row, then waits for the batch's.
      await other.query('BEGIN');
      await other.query(`UPDATE ${prefix}batches SET total = total WHERE id = $1`, [batch.id]);
      const recording = store.recordOutcome(batch.id, 0, {
        state: 'succeeded',
        statusCode: 200,
        response: '{}',
        requestId: null,
        error: null,
      });
      const settled = recording.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      await waitFor(
        'recordOutcome to wait for the batch row',
        async () => {
          const { rows } = await admin.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
            [`%UPDATE ${prefix}batch_lines SET state%`],
          );
          return (rows[0]?.n ?? 0) > 0;
        },
        5_000,
      );
      // Now the other transaction wants the line's row: a deadlock. recordOutcome waited first, so its own check
      // (after deadlock_timeout, 1 s by default) finds the cycle and aborts it; the other goes on and commits.
      await other.query(`UPDATE ${prefix}batch_lines SET attempts = attempts WHERE batch_id = $1 AND idx = 0`, [
        batch.id,
      ]);
      await other.query('COMMIT');
      const outcome = await within('recordOutcome', 10_000, settled);
      assert.deepEqual(outcome, { value: true }, 'recorded, not failed with the deadlock');
      assert.equal(await store.pendingCount(batch.id), 0);
      const fresh = await store.get(batch.owner, batch.id);
      assert.equal(fresh?.counts.succeeded, 1, 'counted once');
    } finally {
      await other.end();
      await store.close();
    }
  });
});
