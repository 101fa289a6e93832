import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { GatewayConfig } from '../config/types.js';
import type { FileService } from '../core/files/file-service.js';
import type { StorageQuota } from '../core/files/storage-quota.js';
import type { RateLimitService } from '../core/limits/rate-limit-service.js';
import type { CallAs } from '../core/pipeline/call-as.js';
import type { FileSearch } from '../core/retrieval/file-search.js';
import { IngestionRunner } from '../core/retrieval/ingestion-runner.js';
import { countedSearch, RetrievalStats } from '../core/retrieval/retrieval-stats.js';
import { createFileSearch } from '../core/retrieval/search-service.js';
import { VectorUsageReader } from '../core/retrieval/vector-usage.js';
import { VectorStoreService } from '../core/retrieval/vector-store-service.js';
import type { VectorStoreMetricsSource } from '../observability/vector-store-metrics.js';
import { mountVectorStores } from '../routes/vector-stores-routes.js';
import type { VectorStoreStore } from '../store/vector-contract.js';
import { sweepInBackground } from './background-sweep-wiring.js';

export interface WiredVectorStores {
  service: VectorStoreService;
  /** The caller's stores searched (the `file_search` tool uses it too). */
  search: FileSearch;
  /** This process's ingestion runner; undefined when `vector_stores.ingest` is false. */
  runner: IngestionRunner | undefined;
  /** This process's ingestion and search tallies (the metrics). */
  stats: RetrievalStats;
  /** Every store's usage, per caller and in all (the metrics and the dashboard). */
  usage: VectorUsageReader;
}

/** Expired stores marked (their chunks dropped) per sweep step. */
const EXPIRY_STEP = 100;

/**
 * OpenAI's Vector Stores API on the gateway's storage (docs/retrieval.md): the routes, the search every surface's
 * `file_search` runs, this process's ingestion runner and the sweep of expired stores. Not served without a
 * vector store or without files (a store's files are Files API files).
 */
export function wireVectorStores(
  app: FastifyInstance,
  config: GatewayConfig,
  deps: {
    store: VectorStoreStore | undefined;
    files: FileService | undefined;
    /** The files' storage quotas: a store's chunk bytes count in them when both live in one database. */
    quota: StorageQuota | undefined;
    auth: Authenticator;
    limits: RateLimitService;
    callAs: CallAs;
    /** Throws `model_not_found` for a model this gateway does not serve (the current configuration's). */
    checkModel(model: string): void;
  },
): WiredVectorStores | undefined {
  const { store, files } = deps;
  if (!store || !files) return undefined;
  const settings = config.vectorStores;
  // The ledger of stored bytes counts the chunks in the database the vector stores live in (SQLite migration 28,
  // postgres-vector-schema.ts): the files' quotas see them when the files are in that database too.
  const sameDatabase = (config.files.store === 'postgres') === (store.capabilities.backend === 'postgres');
  const quota = sameDatabase ? deps.quota : undefined;
  const stats = new RetrievalStats();
  const search: FileSearch = Object.assign(countedSearch(createFileSearch({ store, callAs: deps.callAs }), stats), {
    maxToolSearches: settings.maxToolSearches,
  });
  const runner = settings.ingest
    ? new IngestionRunner({
        store,
        files,
        callAs: deps.callAs,
        bounds: {
          maxFileBytes: settings.maxFileBytes,
          maxFileChars: settings.maxFileChars,
          maxFileChunks: settings.maxFileChunks,
          embedBatchSize: settings.embedBatchSize,
        },
        concurrency: settings.ingestConcurrency,
        leaseMs: settings.leaseMs,
        pollMs: settings.pollMs,
        identity: `${config.batches.instanceId ?? hostname()}:${process.pid}`,
        log: app.log,
        stats,
        ...(quota ? { quota } : {}),
      })
    : undefined;
  const service = new VectorStoreService({
    store,
    files,
    search,
    defaults: {
      embeddingModel: settings.defaultEmbeddingModel,
      dimensions: settings.defaultDimensions,
      metric: settings.defaultMetric,
      index: settings.defaultIndex,
      maxBatchFiles: settings.maxBatchFiles,
      maxFilesPerStore: settings.maxFilesPerStore,
    },
    checkModel: deps.checkModel,
    ...(quota ? { quota } : {}),
    wake: () => runner?.wake(),
  });
  mountVectorStores(app, deps.auth, deps.limits, service);
  if (runner) {
    app.addHook('onReady', async () => runner.start());
    app.addHook('onClose', async () => runner.close());
  }
  sweepInBackground(
    app,
    'sweeping expired vector stores failed',
    async (signal) => {
      for (let n = 0; n < 1_000 && !signal.aborted; n++) {
        if ((await store.sweepExpired(Date.now(), EXPIRY_STEP)) < EXPIRY_STEP) break;
      }
    },
    settings.sweepIntervalMs,
  );
  return { service, search, runner, stats, usage: new VectorUsageReader(store) };
}

/** What the metrics read of the vector stores: this process's tallies and every store's usage. */
export function vectorStoreMetrics({ stats, usage }: WiredVectorStores): VectorStoreMetricsSource {
  return {
    files: () => stats.files,
    chunksEmbedded: () => stats.chunksEmbedded,
    searches: () => stats.searches,
    usage: async () => (await usage.read()).total,
  };
}
