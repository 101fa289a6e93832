import type { AppDependencies } from './app.js';
import type { GatewayConfig } from './config/types.js';
import type { Logger } from './observability/logger.js';
import { openStateStores } from './store/open-state-stores.js';
import { openUsageStore } from './store/open-usage-store.js';
import { openFileStores } from './store/open-file-stores.js';
import { openBatchStore } from './store/open-batch-store.js';
import { openVectorStore } from './store/open-vector-store.js';
import { openSqliteStore, type SqliteStore } from './store/sqlite/sqlite-store.js';

/** What `buildApp` needs, opened from the config, and how to close it once the app has closed. */
export interface Dependencies extends AppDependencies {
  /** The embedded store (always open: migrations, and the state when no Redis is configured). */
  sqlite: SqliteStore;
  /** Where each kind of state lives, for the start-up line. */
  kinds: {
    limits: string | undefined;
    idempotency: string;
    usage: string;
    files: string;
    batches: string;
    vectorStores: string;
  };
  /** Closes the stores (after the app): the shared state, the usage store, then the SQLite file. */
  close(): Promise<void>;
}

/**
 * Opens everything the config asks for: the SQLite file in `config.dataDir`, the shared state (Redis when
 * `REDIS_URL` is set, else SQLite), the usage store (PostgreSQL when `DATABASE_URL` is set, else SQLite; none when
 * usage is off). The one wiring of stores: the server (src/serve.ts), the tests and embedding programs use it.
 */
export async function openDependencies(config: GatewayConfig, logger: Logger): Promise<Dependencies> {
  const sqlite = await openSqliteStore(config.dataDir);
  const state = await openStateStores(config, sqlite);
  const usage = await openUsageStore(config, sqlite);
  const files = await openFileStores(config, sqlite);
  const batches = await openBatchStore(config, sqlite);
  const vectors = await openVectorStore(config.vectorStores.store, { sqlite, databaseUrl: config.databaseUrl });
  return {
    config,
    logger,
    store: sqlite,
    sqlite,
    limiter: state.limiter,
    idempotency: state.idempotency,
    pauses: state.pauses,
    outbox: state.outbox,
    keys: state.keys,
    responses: state.responses,
    nativeOwners: state.nativeOwners,
    responseCache: state.responseCache,
    // Where files live (docs/files.md, "Batches"): the SQLite file, or PostgreSQL shared by every instance.
    batches: batches.store,
    ...(usage ? { usage: usage.store, toolCalls: usage.toolCalls } : {}),
    files,
    // Vector stores (docs/retrieval.md): the SQLite file with sqlite-vec, or PostgreSQL shared by every instance.
    vectorStores: vectors.store,
    kinds: {
      limits: state.limiter?.kind,
      idempotency: state.idempotency.kind,
      usage: usage?.kind ?? 'off',
      files: files.kind,
      batches: batches.kind,
      vectorStores: vectors.kind,
    },
    async close() {
      await state.close();
      await usage?.close();
      await batches.close();
      await vectors.close();
      await files.close();
      await sqlite.close();
    },
  };
}
