import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isBusyError, openDatabase, type Database, type Statement } from './database.js';
import type { GatewayStore } from '../store-contract.js';
import { SQLITE_MIGRATIONS, type Migration } from './migrations.js';
import { WalCheckpointer } from './wal-checkpointer.js';

export const SQLITE_FILE = 'gateway.db';

/**
 * The embedded default store: one SQLite file in DATA_DIR, in WAL mode so readers never block the writer and a
 * crash (even kill -9) leaves a consistent database. The driver (node:sqlite, behind `./database.ts`) is imported
 * lazily by `openSqliteStore`. A file's WAL is checkpointed off the event loop (`./wal-checkpointer.ts`).
 */
export class SqliteStore implements GatewayStore {
  readonly kind = 'sqlite';
  readonly db: Database;
  readonly schemaVersion: number;
  /** What checkpoints a file's WAL on a thread of its own; none for `:memory:`. */
  readonly checkpointer: WalCheckpointer | undefined;
  private readonly pingStatement: Statement;

  /** `path`: the file, whose WAL is then checkpointed off the event loop once migrated. */
  constructor(db: Database, path?: string) {
    this.db = db;
    this.schemaVersion = migrate(db, SQLITE_MIGRATIONS);
    this.checkpointer = path === undefined ? undefined : new WalCheckpointer(db, path);
    this.pingStatement = db.prepare('SELECT 1 AS ok');
  }

  // async so that a failure is a rejection, as the contract says, not a synchronous throw.
  async ping(): Promise<void> {
    this.pingStatement.get();
  }

  async close(): Promise<void> {
    await this.checkpointer?.close();
    if (this.db.open) this.db.close();
  }
}

/** Opens (creating if needed) `<dataDir>/gateway.db`, or an in-memory database for `:memory:`. */
export async function openSqliteStore(dataDir: string | ':memory:'): Promise<SqliteStore> {
  let path = ':memory:';
  if (dataDir !== ':memory:') {
    mkdirSync(dataDir, { recursive: true });
    path = join(dataDir, SQLITE_FILE);
  }
  const db = await openDatabase(path, BUSY_TIMEOUT_MS); // several workers may share the file
  await enableWal(db);
  db.pragma('synchronous = NORMAL'); // WAL + NORMAL: durable against process crashes, fast commits
  db.pragma('foreign_keys = ON');
  return new SqliteStore(db, path === ':memory:' ? undefined : path);
}

/** How long a statement waits for another process's lock on the file (SQLite's busy handler). */
const BUSY_TIMEOUT_MS = 5_000;

/**
 * Switches a new file to WAL. Several processes opening one new file at once (WORKERS > 1, or the CLI beside a
 * starting gateway) can make this fail at once with SQLITE_BUSY: the switch upgrades a shared lock to an
 * exclusive one, and SQLite does not call the busy handler for such an upgrade (it could deadlock). So retry it
 * for as long as the busy timeout; once one process has switched, the mode is stored in the file.
 */
async function enableWal(db: Database): Promise<void> {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusyError(error) || Date.now() > deadline) throw error;
      await sleep(5 + Math.random() * 20);
    }
  }
}

/** Applies pending migrations; returns the resulting schema version. Safe when several processes start at once. */
export function migrate(db: Database, migrations: readonly Migration[]): number {
  // Immediate, like each migration: a deferred write would upgrade a read lock, which fails at once (no busy
  // wait) when another process opening the same new file got there first.
  db.transaction(() =>
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
               version INTEGER PRIMARY KEY,
               name TEXT NOT NULL,
               applied_at TEXT NOT NULL
             ) STRICT`),
  ).immediate();
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
