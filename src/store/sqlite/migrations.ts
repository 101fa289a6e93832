/**
 * Forward-only schema migrations of the embedded store, applied in order inside one immediate transaction each.
 * A migration is never edited after it has shipped: add a new one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'gateway_meta',
    sql: `CREATE TABLE gateway_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL
          ) STRICT;`,
  },
];
