import { createHash } from 'node:crypto';
import type { Pool } from 'pg';

/**
 * The key of the transaction-level advisory lock every gateway takes around its PostgreSQL schema statements
 * (any fixed number: "llmg" in ASCII). One key for all of them: the statements take milliseconds, and one lock
 * cannot be taken in two orders.
 */
const MIGRATION_LOCK_KEY = 0x6c6c6d67;
/** How long a start waits for another instance's migration before failing (it takes milliseconds). */
const MIGRATION_LOCK_TIMEOUT = '60s';
/** One row per schema text applied (its SHA-256): shared by every store, whatever its table prefix. */
const APPLIED_TABLE = 'llmgw_schema_applied';

/** The tables a schema text creates (`CREATE TABLE IF NOT EXISTS <name>`): all must exist for it to count as applied. */
function tablesOf(sql: string): string[] {
  return [...sql.matchAll(/CREATE TABLE IF NOT EXISTS ([a-z_][a-z0-9_]*)/g)].map((m) => m[1] as string);
}

/** Whether this exact schema text was applied and its tables are all there (no lock taken, one round trip). */
async function applied(pool: Pick<Pool, 'query'>, sha256: string, tables: string[]): Promise<boolean> {
  try {
    const { rows } = await pool.query<{ ok: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${APPLIED_TABLE} WHERE sha256 = $1)
         AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]) AS t(name) WHERE to_regclass(t.name) IS NULL) AS ok`,
      [sha256, tables],
    );
    return rows[0]?.ok === true;
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return false; // no registry yet: a first start
    throw error;
  }
}

/**
 * Brings the schema `sql` (idempotent `CREATE ... IF NOT EXISTS` / `ADD COLUMN IF NOT EXISTS` statements) into the
 * database once, and after that costs a start one lock-free read.
 *
 * - **Already applied** (this exact text's SHA-256 is in `llmgw_schema_applied` and its tables exist): nothing runs.
 *   Those statements are not free even when they change nothing: `CREATE INDEX IF NOT EXISTS` takes a SHARE lock on
 *   its table and `ALTER TABLE … ADD COLUMN IF NOT EXISTS` an ACCESS EXCLUSIVE one, so running them at every start
 *   stalled the running instances' writes and could deadlock with them (PostgreSQL then aborts one statement).
 * - **Otherwise** they run in one transaction that first takes an advisory lock, so instances and workers that
 *   start together apply it one after the other (two concurrent `CREATE TABLE IF NOT EXISTS` both find no table and
 *   the second fails with `duplicate key value violates unique constraint "pg_type_typname_nsp_index"`: IF NOT
 *   EXISTS is checked, not locked), and the text's SHA-256 is recorded in the same transaction. The lock is released
 *   by COMMIT or ROLLBACK, also when the connection drops.
 */
export async function migrateUnderLock(pool: Pool, sql: string): Promise<void> {
  const sha256 = createHash('sha256').update(sql).digest('hex');
  const tables = tablesOf(sql);
  if (await applied(pool, sha256, tables)) return;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL lock_timeout = '${MIGRATION_LOCK_TIMEOUT}'`);
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${APPLIED_TABLE} (sha256 TEXT PRIMARY KEY, applied_ms BIGINT NOT NULL)`,
    );
    if (!(await applied(client, sha256, tables))) {
      await client.query(sql);
      await client.query(`INSERT INTO ${APPLIED_TABLE} (sha256, applied_ms) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
        sha256,
        Date.now(),
      ]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
