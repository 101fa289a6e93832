import type { Pool } from 'pg';

/**
 * The key of the transaction-level advisory lock every gateway takes around its PostgreSQL schema statements
 * (any fixed number: "llmg" in ASCII). One key for all of them: the statements take milliseconds, and one lock
 * cannot be taken in two orders.
 */
const MIGRATION_LOCK_KEY = 0x6c6c6d67;
/** How long a start waits for another instance's migration before failing (it takes milliseconds). */
const MIGRATION_LOCK_TIMEOUT = '60s';

/**
 * Runs `sql` (idempotent `CREATE ... IF NOT EXISTS` statements) in one transaction that first takes an advisory
 * lock, so instances and workers that start together apply it one after the other. Without it, two concurrent
 * `CREATE TABLE IF NOT EXISTS` both find no table and the second fails with `duplicate key value violates unique
 * constraint "pg_type_typname_nsp_index"` (IF NOT EXISTS is checked, not locked: PostgreSQL docs, CREATE TABLE).
 * The lock is released by COMMIT or ROLLBACK, also when the connection drops.
 */
export async function migrateUnderLock(pool: Pool, sql: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL lock_timeout = '${MIGRATION_LOCK_TIMEOUT}'`);
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(sql);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
