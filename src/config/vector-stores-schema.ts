import { z } from 'zod';

/**
 * The `vector_stores` section: OpenAI's Vector Stores API served by the gateway (docs/retrieval.md). A store is
 * created with the embedding model that fills it and how it is searched; what a create does not say comes from
 * here (a plain OpenAI-shaped create gets all of it).
 */
export const vectorStoresSectionSchema = z
  .object({
    /** Where stores, files and chunks live: `embedded` (the SQLite file, sqlite-vec), or `postgres` (DATABASE_URL). */
    store: z.enum(['embedded', 'postgres']).default('embedded'),
    /** The model a store's chunks and queries are embedded with when its create names none (a model of this gateway). */
    default_embedding_model: z.string().min(1).max(256).default('text-embedding-3-small'),
    /** The vectors' dimension when the create names none; absent: whatever the model returns first. */
    default_dimensions: z.number().int().min(1).max(16_384).optional(),
    default_metric: z.enum(['cosine', 'dot', 'euclidean']).default('cosine'),
    default_index: z.enum(['flat', 'hnsw']).default('flat'),
    /** Files ingested at once by this process (parsed, chunked, embedded), across all stores. */
    ingest_concurrency: z.number().int().min(1).max(64).default(2),
    /** Whether this process ingests files (the API answers either way; another process may ingest). */
    ingest: z.boolean().default(true),
    /** How long a process's claim on a file lasts unrenewed (a dead process's files are taken over after it). */
    lease_seconds: z.number().min(0.2).max(3_600).default(60),
    /** How often a process looks for files to ingest it was not told of (another process's, a dead one's). */
    poll_ms: z.number().int().min(10).max(60_000).default(1_000),
    /** The largest file that is parsed (a bigger one ends `failed`, `invalid_file`). */
    max_file_bytes: z
      .number()
      .int()
      .min(1024)
      .max(512 * 1024 * 1024)
      .default(64 * 1024 * 1024),
    /** The characters of text kept from one file (cut past it). */
    max_file_chars: z.number().int().min(1_000).max(100_000_000).default(10_000_000),
    /** Chunks of one file at most (more: the file ends `failed`). */
    max_file_chunks: z.number().int().min(1).max(1_000_000).default(20_000),
    /** Texts per embeddings call during ingestion. */
    embed_batch_size: z.number().int().min(1).max(2_048).default(64),
    /**
     * Files one store may hold: a search reads its files' attributes (what filters look at) on every call, so this
     * bounds a search's work; OpenAI's stores hold 10,000 for the file_search tool.
     */
    max_files_per_store: z.number().int().min(1).max(1_000_000).default(10_000),
    /** Files one `file_batches` create may name (OpenAI's: 2,000). */
    max_batch_files: z.number().int().min(1).max(10_000).default(2_000),
    /** Searches one `file_search` answer may run (the model asks again after each), at most. */
    max_tool_searches: z.number().int().min(1).max(16).default(4),
    /** How often stores past their `expires_after` are looked for. */
    sweep_interval_seconds: z.number().min(1).max(86_400).default(60),
  })
  .strict()
  .prefault({});

export type VectorStoresSection = z.infer<typeof vectorStoresSectionSchema>;

/** The `vector_stores` section as the program reads it (ms where a duration). */
export interface VectorStoresConfig {
  store: 'embedded' | 'postgres';
  defaultEmbeddingModel: string;
  defaultDimensions: number | undefined;
  defaultMetric: 'cosine' | 'dot' | 'euclidean';
  defaultIndex: 'flat' | 'hnsw';
  ingestConcurrency: number;
  ingest: boolean;
  leaseMs: number;
  pollMs: number;
  maxFileBytes: number;
  maxFileChars: number;
  maxFileChunks: number;
  embedBatchSize: number;
  maxBatchFiles: number;
  maxFilesPerStore: number;
  maxToolSearches: number;
  sweepIntervalMs: number;
}

export function toVectorStores(section: VectorStoresSection): VectorStoresConfig {
  return {
    store: section.store,
    defaultEmbeddingModel: section.default_embedding_model,
    defaultDimensions: section.default_dimensions,
    defaultMetric: section.default_metric,
    defaultIndex: section.default_index,
    ingestConcurrency: section.ingest_concurrency,
    ingest: section.ingest,
    leaseMs: Math.round(section.lease_seconds * 1000),
    pollMs: section.poll_ms,
    maxFileBytes: section.max_file_bytes,
    maxFileChars: section.max_file_chars,
    maxFileChunks: section.max_file_chunks,
    embedBatchSize: section.embed_batch_size,
    maxBatchFiles: section.max_batch_files,
    maxFilesPerStore: section.max_files_per_store,
    maxToolSearches: section.max_tool_searches,
    sweepIntervalMs: Math.round(section.sweep_interval_seconds * 1000),
  };
}
