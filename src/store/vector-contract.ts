/**
 * The vector store (docs/retrieval.md): OpenAI's vector stores, their files and file batches, and the chunks each
 * file is cut into with their vectors, one backend per deployment (`sqlite/sqlite-vectors.ts` embedded,
 * `postgres/postgres-vectors.ts` shared). Every backend passes test/store/vector-contract.test.ts.
 *
 * What a backend guarantees: a file's chunks are written with its `completed` status in one transaction (a file is
 * searchable whole or not at all, never twice); a file is worked on by the holder of its lease only (a dead
 * process's files are taken over once the lease runs out); a store's vectors all have its one dimension.
 */

/** How vectors are compared; the search score means the same for each (`similarityScore`). */
export type VectorMetric = 'cosine' | 'dot' | 'euclidean';
export const VECTOR_METRICS: readonly VectorMetric[] = ['cosine', 'dot', 'euclidean'];

/** How a store's vectors are searched: every vector compared (`flat`, exact) or a graph (`hnsw`, approximate). */
export type VectorIndexKind = 'flat' | 'hnsw';
export const VECTOR_INDEX_KINDS: readonly VectorIndexKind[] = ['flat', 'hnsw'];

/** A file's state in a store (OpenAI's four: its SDK's poll helpers spin on any other). */
export type VectorFileStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled';

/** OpenAI's `last_error.code` values. */
export type VectorFileErrorCode = 'server_error' | 'unsupported_file' | 'invalid_file';

export interface VectorFileError {
  code: VectorFileErrorCode;
  message: string;
}

/** A file's attributes: at most 16 keys; strings of at most 512 characters, numbers, booleans. */
export type VectorAttributes = Record<string, string | number | boolean>;

/** How a file is cut into chunks, in tokens; `auto` is 800 / 400 and shown as `static` (OpenAI does the same). */
export interface ChunkingRecord {
  maxTokens: number;
  overlapTokens: number;
}

export interface FileCounts {
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  total: number;
}

export interface VectorStoreRecord {
  id: string;
  /** The caller that created it (`key:<id>`, `admin`...): only it can see, search or change it. */
  owner: string;
  /** What the owner may do, as it was at creation (JSON; keys are read again when ingestion embeds). */
  principal: string;
  name: string;
  metadata: Record<string, string> | null;
  createdMs: number;
  lastActiveMs: number;
  /** `expires_after.days` (anchor `last_active_at`); null: never expires. */
  expiresAfterDays: number | null;
  /** When it was found expired (its chunks dropped); null: live. */
  expiredMs: number | null;
  /** The model its chunks and queries are embedded with (a model name of this gateway). */
  embeddingModel: string;
  /** The vectors' dimension; null until the first vector is stored when it was not declared. */
  dimensions: number | null;
  /**
   * Whether `dimensions` was declared at creation (then it is sent to the model as `dimensions`, which shortens
   * text-embedding-3's vectors) rather than learnt from the first vectors (then never sent: a model without the
   * parameter, such as text-embedding-ada-002, refuses it).
   */
  dimensionsDeclared: boolean;
  metric: VectorMetric;
  index: VectorIndexKind;
  /** Bytes of its chunks (text and vectors). */
  usageBytes: number;
  fileCounts: FileCounts;
}

export type NewVectorStore = Omit<VectorStoreRecord, 'usageBytes' | 'fileCounts' | 'expiredMs' | 'dimensionsDeclared'>;

export interface VectorStorePatch {
  name?: string;
  metadata?: Record<string, string> | null;
  expiresAfterDays?: number | null;
  embeddingModel?: string;
}

export interface VectorFileRecord {
  storeId: string;
  /** The Files API id of the file (`file-...`); also the vector store file's id. */
  fileId: string;
  owner: string;
  /** The file batch that added it last; null: added on its own. */
  batchId: string | null;
  /** The file's name (the search results' `filename`). */
  filename: string;
  createdMs: number;
  status: VectorFileStatus;
  lastError: VectorFileError | null;
  attributes: VectorAttributes;
  chunking: ChunkingRecord;
  usageBytes: number;
  chunkCount: number;
}

export type NewVectorFile = Omit<VectorFileRecord, 'status' | 'lastError' | 'usageBytes' | 'chunkCount'>;

export interface VectorFileBatchRecord {
  id: string;
  storeId: string;
  owner: string;
  createdMs: number;
  /** Set by a cancel: its files still in progress were cancelled then. */
  cancelledMs: number | null;
  fileCounts: FileCounts;
}

/**
 * Thrown by `nearest` / `matchText` when the backend has as many searches waiting as it takes (no hidden queue):
 * the caller is told to come back (`503 search_busy`).
 */
export class VectorSearchBusy extends Error {
  constructor(readonly waiting: number) {
    super(`${waiting} vector searches are waiting already`);
    this.name = 'VectorSearchBusy';
  }
}

/** One chunk of a file: its place in the file, its text and its vector. */
export interface NewChunk {
  seq: number;
  text: string;
  tokens: number;
  vector: Float32Array;
}

/** A chunk a search found; `score` in [0, 1], higher is closer (`similarityScore`). */
export interface ChunkHit {
  storeId: string;
  fileId: string;
  seq: number;
  text: string;
  score: number;
}

/** A file a search may return, with what filters look at. */
export interface SearchableFile {
  fileId: string;
  filename: string;
  attributes: VectorAttributes;
}

export interface ListQuery {
  limit: number;
  order: 'asc' | 'desc';
  /** An id: the page starts after it (in `order`). */
  after?: string;
  /** An id: the page ends before it (in `order`). */
  before?: string;
}

export interface ListPage<T> {
  data: T[];
  hasMore: boolean;
}

/** Vector stores, their files by status and their chunks' bytes (the operators' view, docs/retrieval.md). */
export interface VectorUsage {
  stores: number;
  fileCounts: FileCounts;
  usageBytes: number;
}

/** One owner's `VectorUsage`. */
export interface OwnerVectorUsage extends VectorUsage {
  owner: string;
}

/** The most owners `usage` answers (the metrics' and the dashboard's list stays small whatever the callers). */
export const MAX_USAGE_OWNERS = 100;

/**
 * The storage quotas' reservation of a file's chunk bytes while it is completed (store/storage-use.ts): the
 * completion's own statement ends it, moving its bytes to the owner's stored bytes (SQLite migration 28).
 */
export const vectorReservationId = (storeId: string, fileId: string): string => `vsf:${storeId}:${fileId}`;

/** The outcome of `completeFile`. */
export type CompleteOutcome =
  | { kind: 'completed'; file: VectorFileRecord }
  /** The lease was lost, or the file was cancelled or removed meanwhile: nothing was written. */
  | { kind: 'lost' }
  /** The vectors' dimension is not the store's: nothing was written; the file is `failed` with this error. */
  | { kind: 'dimension_mismatch'; expected: number; got: number };

/**
 * What a backend can build: `index` kinds per metric. Asking for another is a 400 (`vector_index_unsupported`).
 * Embedded (sqlite-vec 0.1.9): cosine and euclidean (vec0 has no dot-product metric), flat (vec0's exact KNN) and
 * hnsw (a graph in this process, `hnsw/hnsw-indexes.ts`). PostgreSQL: cosine, dot and euclidean, flat (an exact
 * scan) and hnsw (pgvector's index where the server has it, else a graph in this process).
 */
export interface VectorCapabilities {
  readonly backend: 'sqlite' | 'postgres';
  readonly metrics: readonly VectorMetric[];
  readonly indexes: readonly VectorIndexKind[];
}

export interface VectorStoreStore {
  readonly capabilities: VectorCapabilities;

  // Stores. Every read and change names the owner: another owner's store does not exist.
  createStore(store: NewVectorStore): Promise<VectorStoreRecord>;
  getStore(owner: string, id: string): Promise<VectorStoreRecord | undefined>;
  listStores(owner: string, query: ListQuery): Promise<ListPage<VectorStoreRecord>>;
  /** Refused (`'holds_vectors'`) when `embeddingModel` changes on a store that holds vectors. */
  updateStore(
    owner: string,
    id: string,
    patch: VectorStorePatch,
  ): Promise<VectorStoreRecord | undefined | 'holds_vectors'>;
  /** Removes the store, its files, batches and chunks. */
  deleteStore(owner: string, id: string): Promise<boolean>;
  /** `last_active_at` moves on (a search, a file added). */
  touchStore(id: string, nowMs: number): Promise<void>;
  /** Marks stores past `last_active + days` expired and drops their chunks; returns how many, at most `limit`. */
  sweepExpired(nowMs: number, limit: number): Promise<number>;

  // Files of a store.
  /**
   * Adds files (or adds them again: a file already in the store starts over, its chunks dropped) as
   * `in_progress`, with their batch when `batch` is given, in one transaction.
   */
  addFiles(files: NewVectorFile[], batch?: Omit<VectorFileBatchRecord, 'fileCounts' | 'cancelledMs'>): Promise<void>;
  getFile(owner: string, storeId: string, fileId: string): Promise<VectorFileRecord | undefined>;
  listFiles(
    owner: string,
    storeId: string,
    query: ListQuery & { status?: VectorFileStatus; batchId?: string },
  ): Promise<ListPage<VectorFileRecord>>;
  updateAttributes(
    owner: string,
    storeId: string,
    fileId: string,
    attributes: VectorAttributes,
  ): Promise<VectorFileRecord | undefined>;
  /** Removes the file from the store with its chunks (the Files API file stays). */
  deleteFile(owner: string, storeId: string, fileId: string): Promise<boolean>;
  /** The file's chunks' texts in order (`.../content`). */
  fileChunks(owner: string, storeId: string, fileId: string): Promise<string[] | undefined>;

  // File batches.
  getBatch(owner: string, storeId: string, batchId: string): Promise<VectorFileBatchRecord | undefined>;
  /** Cancels the batch's files still in progress; returns the batch as it is then. */
  cancelBatch(
    owner: string,
    storeId: string,
    batchId: string,
    nowMs: number,
  ): Promise<VectorFileBatchRecord | undefined>;

  // Ingestion (core/retrieval/ingestion-runner.ts).
  /**
   * Takes up to `limit` files `in_progress` whose lease is free or ran out, for `holder` until `nowMs + leaseMs`.
   * The store's record comes along (its model, dimension and principal).
   */
  claimFiles(
    holder: string,
    leaseMs: number,
    limit: number,
    nowMs: number,
  ): Promise<{ file: VectorFileRecord; store: VectorStoreRecord }[]>;
  /** Extends the lease; false when it is no longer held (cancelled, removed, taken over). */
  renewLease(storeId: string, fileId: string, holder: string, leaseMs: number, nowMs: number): Promise<boolean>;
  /**
   * In one transaction, while `holder` still holds the file in progress: its chunks replace any it had, the store's
   * dimension is set when it had none, the file is `completed`. A store of another dimension: nothing written, the
   * file `failed`.
   */
  completeFile(storeId: string, fileId: string, holder: string, chunks: NewChunk[]): Promise<CompleteOutcome>;
  /** Marks the file failed (or cancelled) while `holder` holds it; false when it no longer does. */
  endFile(
    storeId: string,
    fileId: string,
    holder: string,
    status: 'failed' | 'cancelled',
    error: VectorFileError | null,
  ): Promise<boolean>;

  // Search.
  /** The store's completed files with their attributes (what filters are evaluated on). */
  searchableFiles(storeId: string): Promise<SearchableFile[]>;
  /**
   * The `k` chunks closest to `vector` by the store's metric, among `fileIds` when given (already filtered),
   * exact for `flat`, approximate for `hnsw` (exact while its graph catches up). `vector` has the store's
   * dimension (the caller checked it). Scores are `similarityScore` of each returned chunk's real distance.
   */
  nearest(query: {
    store: VectorStoreRecord;
    vector: Float32Array;
    k: number;
    fileIds?: readonly string[];
  }): Promise<ChunkHit[]>;
  /**
   * The `k` chunks that best match `text` by full-text ranking (FTS5's BM25 / tsvector's ts_rank_cd) on any of its
   * words; `score` in (0, 1]: rank / (1 + rank) (`vector-rows.ts` `textScore`), not comparable to vector scores
   * (fuse the two lists by rank).
   */
  matchText(query: { storeId: string; text: string; k: number; fileIds?: readonly string[] }): Promise<ChunkHit[]>;

  // Operators.
  /**
   * Every owner's stores, files by status and bytes together (`total`), and the `limit` owners (at most
   * MAX_USAGE_OWNERS) holding the most bytes, then the most stores, then by owner id. Expired stores count (their
   * bytes are 0: their chunks were dropped). One pass over the stores and files: for a scrape, not per request.
   */
  usage(limit: number): Promise<{ total: VectorUsage; owners: OwnerVectorUsage[] }>;

  /**
   * For an `hnsw` store: brings its approximate index up to date now and resolves when it is (tests, the
   * benchmark); true when `nearest` then uses it, false when it stays exact (a `flat` store, over the memory bound,
   * or written to meanwhile). Searches never wait for it: until then they are exact.
   */
  indexReady?(store: VectorStoreRecord): Promise<boolean>;

  close(): Promise<void>;
}

/**
 * The score of a vector search, the same for every metric: (1 + s) / 2 in [0, 1], where s is the similarity the
 * metric implies for unit-length vectors (cosine: cos; dot: the product; euclidean: 1 - d^2 / 2), clamped to
 * [-1, 1]. For unit-length vectors (what embedding models return) the three give one score for one pair.
 */
export function similarityScore(metric: VectorMetric, value: number): number {
  const similarity = metric === 'euclidean' ? 1 - (value * value) / 2 : value;
  const clamped = Math.max(-1, Math.min(1, similarity));
  return (1 + clamped) / 2;
}
