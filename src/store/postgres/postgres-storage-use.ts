import type { Pool, PoolClient } from 'pg';
import {
  ALL_OWNERS,
  type ReserveOutcome,
  type StorageLimits,
  type StorageUse,
  type StorageUseStore,
} from '../storage-use.js';
import { inTransaction } from './postgres-blobs.js';

/**
 * The ledger of stored bytes in PostgreSQL (`files.store: postgres`; SQLite's is migration 24, the same design):
 * `<prefix>storage_use` (the row `*` holds every owner's bytes), `<prefix>storage_reservations`, and row triggers on
 * the files, upload parts and reservations that move the ledger in the statement that writes or removes each row.
 *
 * Lock order, so no two transactions wait on each other: an upload's row (a part's transaction), then the ledger's
 * `*` row, then the owner's row. Every ledger change goes through `<prefix>storage_add`, which takes them in that
 * order, and `reserve` locks them in that order too.
 *
 * The ledger is computed from what is stored when this text is applied (`storage_recount`): the triggers are
 * created first, and the counted tables are locked against writes until the transaction commits, so no write falls
 * between the count and the triggers. A vector store's chunk bytes count too (postgres-vector-schema.ts keeps them
 * by its own trigger and recounts when it is applied after this text).
 */
export const storageUseSchema = (p: string) => `
CREATE TABLE IF NOT EXISTS ${p}storage_use (owner TEXT PRIMARY KEY, bytes BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS ${p}storage_reservations (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, bytes BIGINT NOT NULL, expires_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ${p}storage_reservations_expiry ON ${p}storage_reservations (expires_ms);
CREATE OR REPLACE FUNCTION ${p}storage_add(who TEXT, delta BIGINT) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ${p}storage_use (owner, bytes) VALUES ('*', delta)
    ON CONFLICT (owner) DO UPDATE SET bytes = ${p}storage_use.bytes + EXCLUDED.bytes;
  INSERT INTO ${p}storage_use (owner, bytes) VALUES (who, delta)
    ON CONFLICT (owner) DO UPDATE SET bytes = ${p}storage_use.bytes + EXCLUDED.bytes;
$$;
CREATE OR REPLACE FUNCTION ${p}files_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM ${p}storage_add(NEW.owner, NEW.bytes);
    DELETE FROM ${p}storage_reservations WHERE id = NEW.id;
  ELSE
    PERFORM ${p}storage_add(OLD.owner, -OLD.bytes);
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION ${p}upload_parts_storage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE who TEXT;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT owner INTO who FROM ${p}uploads WHERE id = NEW.upload_id;
    IF FOUND THEN PERFORM ${p}storage_add(who, NEW.bytes); END IF;
    DELETE FROM ${p}storage_reservations WHERE id = NEW.id;
  ELSE
    SELECT owner INTO who FROM ${p}uploads WHERE id = OLD.upload_id;
    IF FOUND THEN PERFORM ${p}storage_add(who, -OLD.bytes); END IF;
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION ${p}storage_reservations_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM ${p}storage_add(NEW.owner, NEW.bytes);
  ELSIF TG_OP = 'UPDATE' THEN
    PERFORM ${p}storage_add(NEW.owner, NEW.bytes - OLD.bytes);
  ELSE
    PERFORM ${p}storage_add(OLD.owner, -OLD.bytes);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS ${p}files_storage ON ${p}files;
CREATE TRIGGER ${p}files_storage AFTER INSERT OR DELETE ON ${p}files
  FOR EACH ROW EXECUTE FUNCTION ${p}files_storage();
DROP TRIGGER IF EXISTS ${p}upload_parts_storage ON ${p}upload_parts;
CREATE TRIGGER ${p}upload_parts_storage AFTER INSERT OR DELETE ON ${p}upload_parts
  FOR EACH ROW EXECUTE FUNCTION ${p}upload_parts_storage();
DROP TRIGGER IF EXISTS ${p}storage_reservations_storage ON ${p}storage_reservations;
CREATE TRIGGER ${p}storage_reservations_storage AFTER INSERT OR DELETE OR UPDATE OF bytes ON ${p}storage_reservations
  FOR EACH ROW EXECUTE FUNCTION ${p}storage_reservations_storage();
CREATE OR REPLACE FUNCTION ${p}storage_recount() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- Every table the ledger counts is locked against writes until COMMIT: none falls between the count and the
  -- triggers. A vector store's chunk bytes count too, once its tables exist (postgres-vector-schema.ts).
  LOCK TABLE ${p}files, ${p}upload_parts, ${p}storage_reservations IN SHARE ROW EXCLUSIVE MODE;
  IF to_regclass('${p}vector_store_files') IS NOT NULL THEN
    LOCK TABLE ${p}vector_store_files IN SHARE ROW EXCLUSIVE MODE;
  END IF;
  UPDATE ${p}storage_use SET bytes = 0;
  INSERT INTO ${p}storage_use (owner, bytes)
    SELECT owner, sum(bytes) FROM (
      SELECT owner, bytes FROM ${p}files
      UNION ALL SELECT u.owner, x.bytes FROM ${p}upload_parts x JOIN ${p}uploads u ON u.id = x.upload_id
      UNION ALL SELECT owner, bytes FROM ${p}storage_reservations
    ) AS stored GROUP BY owner
    ON CONFLICT (owner) DO UPDATE SET bytes = EXCLUDED.bytes;
  IF to_regclass('${p}vector_store_files') IS NOT NULL THEN
    EXECUTE 'INSERT INTO ${p}storage_use (owner, bytes)
      SELECT owner, sum(usage_bytes) FROM ${p}vector_store_files GROUP BY owner HAVING sum(usage_bytes) <> 0
      ON CONFLICT (owner) DO UPDATE SET bytes = ${p}storage_use.bytes + EXCLUDED.bytes';
  END IF;
  INSERT INTO ${p}storage_use (owner, bytes)
    SELECT '*', coalesce(sum(bytes), 0) FROM ${p}storage_use WHERE owner <> '*'
    ON CONFLICT (owner) DO UPDATE SET bytes = EXCLUDED.bytes;
END $$;
SELECT ${p}storage_recount();`;

/** The names `storageUseSchema` creates besides its tables (for a test's scratch schema to drop). */
export const storageUseFunctions = (p: string) => [
  `${p}storage_add(text, bigint)`,
  `${p}files_storage()`,
  `${p}upload_parts_storage()`,
  `${p}storage_reservations_storage()`,
  `${p}storage_recount()`,
];

/** The stored bytes ledger in PostgreSQL: shared by every instance on the database. */
export class PostgresStorageUseStore implements StorageUseStore {
  constructor(
    private readonly pool: Pool,
    private readonly p: string,
  ) {}

  async reserve(
    id: string,
    owner: string,
    bytes: number,
    expiresMs: number,
    limits?: StorageLimits,
  ): Promise<ReserveOutcome> {
    return inTransaction(this.pool, async (client) => {
      // The ledger rows locked ('*' first, as storage_add does) until COMMIT: a concurrent reservation waits here.
      const all = await this.lockedUse(client, ALL_OWNERS);
      const mine = await this.lockedUse(client, owner);
      const current = await client.query<{ bytes: string }>(
        `SELECT bytes FROM ${this.p}storage_reservations WHERE id = $1`,
        [id],
      );
      const held = Number(current.rows[0]?.bytes ?? 0);
      const more = bytes - held;
      if (more > 0 && limits) {
        if (mine + more > limits.perOwner)
          return { reserved: false, limit: 'owner', usedBytes: mine - held, limitBytes: limits.perOwner } as const;
        if (all + more > limits.total)
          return { reserved: false, limit: 'total', usedBytes: all - held, limitBytes: limits.total } as const;
      }
      await client.query(
        `INSERT INTO ${this.p}storage_reservations (id, owner, bytes, expires_ms) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO UPDATE SET bytes = GREATEST(${this.p}storage_reservations.bytes, EXCLUDED.bytes),
           expires_ms = EXCLUDED.expires_ms`,
        [id, owner, bytes, expiresMs],
      );
      return { reserved: true } as const;
    });
  }

  /** The owner's ledger row, created when missing and locked until the transaction ends. */
  private async lockedUse(client: PoolClient, owner: string): Promise<number> {
    const result = await client.query<{ bytes: string }>(
      `INSERT INTO ${this.p}storage_use (owner, bytes) VALUES ($1, 0)
       ON CONFLICT (owner) DO UPDATE SET bytes = ${this.p}storage_use.bytes RETURNING bytes`,
      [owner],
    );
    return Number(result.rows[0]?.bytes ?? 0);
  }

  async release(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.p}storage_reservations WHERE id = $1`, [id]);
  }

  async use(owner: string): Promise<StorageUse> {
    const result = await this.pool.query<{ owner: string; bytes: string }>(
      `SELECT owner, bytes FROM ${this.p}storage_use WHERE owner = ANY($1)`,
      [[ALL_OWNERS, owner]],
    );
    const of = (who: string) => Number(result.rows.find((row) => row.owner === who)?.bytes ?? 0);
    return { owner: of(owner), total: of(ALL_OWNERS) };
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    const result = await this.pool.query(
      `DELETE FROM ${this.p}storage_reservations
       WHERE id IN (SELECT id FROM ${this.p}storage_reservations WHERE expires_ms <= $1 LIMIT $2)`,
      [nowMs, limit],
    );
    return result.rowCount ?? 0;
  }
}
