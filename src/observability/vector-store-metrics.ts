import { Gauge, type Registry } from 'prom-client';
import { INGESTION_OUTCOMES, type IngestionOutcome } from '../core/retrieval/retrieval-stats.js';
import type { FileCounts, VectorUsage } from '../store/vector-contract.js';
import { CollectedCounter } from './fast-metrics.js';

/** What the vector store metrics read: this process's tallies, and every store's usage from the shared store. */
export interface VectorStoreMetricsSource {
  files(): Readonly<Record<IngestionOutcome, number>>;
  chunksEmbedded(): number;
  searches(): ReadonlyMap<string, number>;
  /** Every owner's stores, files and bytes together (read at most every few seconds: `vector-usage.ts`). */
  usage(): Promise<VectorUsage>;
}

const STATUSES: readonly (keyof Omit<FileCounts, 'total'>)[] = ['in_progress', 'completed', 'failed', 'cancelled'];

/**
 * The vector store metrics (docs/metrics.md): counters of this process's ingestion and searches (summed across
 * workers), and gauges of every store, file and byte from the store (the same for every worker: `max`). No label
 * names a caller (metrics' labels are bounded: the per-caller figures are on the dashboard).
 */
export function registerVectorStoreMetrics(registry: Registry, source: VectorStoreMetricsSource): void {
  const registers = [registry];
  new CollectedCounter(
    'llmgw_vector_store_files_ingested_total',
    'Vector store files this process ingested, by outcome: completed, failed, cancelled (by their caller meanwhile), lost (removed meanwhile, or taken over by another process)',
    () => {
      const files = source.files();
      return INGESTION_OUTCOMES.map((outcome) => ({ labels: { outcome }, value: files[outcome] }));
    },
    registry,
  );
  new CollectedCounter(
    'llmgw_vector_store_chunks_embedded_total',
    'Chunks of vector store files this process embedded',
    () => [{ labels: {}, value: source.chunksEmbedded() }],
    registry,
  );
  new CollectedCounter(
    'llmgw_vector_store_searches_total',
    'Vector store searches this process ran (POST /v1/vector_stores/{id}/search and file_search runs), by outcome: ok or the error code',
    () => [...source.searches()].map(([outcome, value]) => ({ labels: { outcome }, value })),
    registry,
  );
  const usage = () => source.usage();
  new Gauge({
    name: 'llmgw_vector_stores',
    help: 'Vector stores, every caller together (expired ones included)',
    registers,
    aggregator: 'max',
    async collect() {
      this.set((await usage()).stores);
    },
  });
  new Gauge({
    name: 'llmgw_vector_store_files',
    help: 'Files in vector stores, every caller together, by status',
    labelNames: ['status'],
    registers,
    aggregator: 'max',
    async collect() {
      const { fileCounts } = await usage();
      for (const status of STATUSES) this.set({ status }, fileCounts[status]);
    },
  });
  new Gauge({
    name: 'llmgw_vector_store_bytes',
    help: "Bytes of vector stores' chunks (text and vectors), every caller together",
    registers,
    aggregator: 'max',
    async collect() {
      this.set((await usage()).usageBytes);
    },
  });
}
