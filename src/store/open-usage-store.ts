import type { GatewayConfig } from '../config/types.js';
import type { UsageStore } from './store-contract.js';
import type { ToolCallStore } from './tool-call-contract.js';
import type { SqliteStore } from './sqlite/sqlite-store.js';

export interface OpenedUsageStore {
  store: UsageStore;
  /** The MCP tool-call records, beside the usage records (docs/mcp.md, "Records"). */
  toolCalls: ToolCallStore;
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
    const { PostgresToolCallStore } = await import('./postgres/postgres-tool-calls.js');
    const store = await PostgresUsageStore.open(config.databaseUrl);
    const toolCalls = await PostgresToolCallStore.open(config.databaseUrl).catch(async (error: unknown) => {
      await store.close();
      throw error;
    });
    return {
      store,
      toolCalls,
      kind: 'postgres',
      close: async () => {
        await toolCalls.close();
        await store.close();
      },
    };
  }
  const { SqliteUsageStore } = await import('./sqlite/sqlite-usage.js');
  const { SqliteToolCallStore } = await import('./sqlite/sqlite-tool-calls.js');
  return {
    store: new SqliteUsageStore(sqlite.db),
    toolCalls: new SqliteToolCallStore(sqlite.db),
    kind: 'sqlite',
    close: () => Promise.resolve(),
  };
}
