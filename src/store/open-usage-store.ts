import type { GatewayConfig } from '../config/types.js';
import type { UsageStore } from './store-contract.js';
import type { SqliteStore } from './sqlite/sqlite-store.js';

export interface OpenedUsageStore {
  store: UsageStore;
  kind: 'sqlite' | 'postgres';
  close(): Promise<void>;
}

/**
 * Where usage records go: PostgreSQL when DATABASE_URL is set (every instance writes one table, so summaries see
 * all traffic; `pg` is imported only then), otherwise the embedded SQLite file. Undefined when usage recording is
 * off.
 */
export async function openUsageStore(
  config: GatewayConfig,
  sqlite: SqliteStore,
): Promise<OpenedUsageStore | undefined> {
  if (!config.usage.enabled) return undefined;
  if (config.databaseUrl) {
    const { PostgresUsageStore } = await import('./postgres/postgres-usage.js');
    const store = await PostgresUsageStore.open(config.databaseUrl);
    return { store, kind: 'postgres', close: () => store.close() };
  }
  const { SqliteUsageStore } = await import('./sqlite/sqlite-usage.js');
  return { store: new SqliteUsageStore(sqlite.db), kind: 'sqlite', close: () => Promise.resolve() };
}
