import type { GatewayConfig } from '../config/types.js';
import type { BatchStore } from './batch-contract.js';
import type { SqliteStore } from './sqlite/sqlite-store.js';

export interface OpenedBatchStore {
  store: BatchStore;
  kind: 'embedded' | 'postgres';
  close(): Promise<void>;
}

/**
 * Where batches live (docs/files.md, "Batches"): they follow `files.store`, because a batch reads its input file
 * and writes its output files there. `postgres` keeps them in DATABASE_URL's database, so every instance sharing
 * it sees every batch and the lease decides which one runs it; `embedded` keeps them in the SQLite file (several
 * processes on one data folder share it). `pg` is imported only for `postgres`.
 */
export async function openBatchStore(config: GatewayConfig, sqlite: SqliteStore): Promise<OpenedBatchStore> {
  if (config.files.store === 'postgres') {
    if (!config.databaseUrl) throw new Error('files.store is postgres but DATABASE_URL is not set');
    const { PostgresBatches } = await import('./postgres/postgres-batches.js');
    const store = await PostgresBatches.open(config.databaseUrl);
    return { store, kind: 'postgres', close: () => store.close() };
  }
  const { SqliteBatches } = await import('./sqlite/sqlite-batches.js');
  return { store: new SqliteBatches(sqlite.db), kind: 'embedded', close: () => Promise.resolve() };
}
