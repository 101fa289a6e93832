import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { GatewayStore } from '../contract.js';
import { SQLITE_MIGRATIONS, type Migration } from './migrations.js';

export const SQLITE_FILE = 'gateway.db';

type Database = BetterSqlite3.Database;

/**
 * The embedded default store: one SQLite file in DATA_DIR, in WAL mode so readers never block the writer and a
 * crash (even kill -9) leaves a consistent database. The driver is imported lazily by `openSqliteStore`.
 */
export class SqliteStore implements GatewayStore {
  readonly kind = 'sqlite';
  readonly db: Database;
  readonly schemaVersion: number;
  private readonly pingStatement: BetterSqlite3.Statement;

  constructor(db: Database) {
    this.db = db;
    this.schemaVersion = migrate(db, SQLITE_MIGRATIONS);
    this.pingStatement = db.prepare('SELECT 1 AS ok');
  }

  // async so that a failure is a rejection, as the contract says, not a synchronous throw.
  async ping(): Promise<void> {
    this.pingStatement.get();
  }

  close(): Promise<void> {
    if (this.db.open) this.db.close();
    return Promise.resolve();
  }
}

/** Opens (creating if needed) `<dataDir>/gateway.db`, or an in-memory database for `:memory:`. */
export async function openSqliteStore(dataDir: string | ':memory:'): Promise<SqliteStore> {
  const { default: Sqlite } = await import('better-sqlite3');
  let path = ':memory:';
  if (dataDir !== ':memory:') {
    mkdirSync(dataDir, { recursive: true });
    path = join(dataDir, SQLITE_FILE);
  }
  const db = new Sqlite(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL'); // WAL + NORMAL: durable against process crashes, fast commits
  db.pragma('busy_timeout = 5000'); // several workers may share the file
  db.pragma('foreign_keys = ON');
  return new SqliteStore(db);
}

/** Applies pending migrations; returns the resulting schema version. Safe when several processes start at once. */
export function migrate(db: Database, migrations: readonly Migration[]): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY,
             name TEXT NOT NULL,
             applied_at TEXT NOT NULL
           ) STRICT`);
  const applied = db.prepare('SELECT version FROM schema_migrations WHERE version = ?');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const migration of migrations) {
    db.transaction(() => {
      if (applied.get(migration.version)) return;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString());
    }).immediate();
  }
  const row = db.prepare('SELECT MAX(version) AS version FROM schema_migrations').get() as { version: number | null };
  return row.version ?? 0;
}
