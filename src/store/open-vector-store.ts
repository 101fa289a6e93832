import type { VectorStoreStore } from './vector-contract.js';
import type { SqliteStore } from './sqlite/sqlite-store.js';

/** Where vector stores live: the embedded SQLite file (sqlite-vec) or DATABASE_URL's PostgreSQL. */
export type VectorBackendKind = 'embedded' | 'postgres';

export interface OpenedVectorStore {
  store: VectorStoreStore;
  kind: VectorBackendKind;
  close(): Promise<void>;
}

/**
 * Opens the vector store (docs/retrieval.md): `embedded` on the gateway's SQLite connection, which loads
 * sqlite-vec now (not at start: a gateway without vector stores never loads it); `postgres` in `databaseUrl`'s
 * database, shared by every instance (`pg` is imported only then). The kind is the caller's (the config's
 * `vector_stores` section), so this file reads no config.
 */
export async function openVectorStore(
  kind: VectorBackendKind,
  options: { sqlite: SqliteStore; databaseUrl?: string | undefined },
): Promise<OpenedVectorStore> {
  if (kind === 'postgres') {
    if (!options.databaseUrl) throw new Error('vector stores are kept in PostgreSQL but DATABASE_URL is not set');
    const { PostgresVectors } = await import('./postgres/postgres-vectors.js');
    const store = await PostgresVectors.open(options.databaseUrl);
    return { store, kind, close: () => store.close() };
  }
  const { SqliteVectors } = await import('./sqlite/sqlite-vectors.js');
  const store = new SqliteVectors(options.sqlite.db);
  return { store, kind, close: () => store.close() };
}
