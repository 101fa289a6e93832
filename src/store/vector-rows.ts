/**
 * What both vector store backends share (`sqlite/sqlite-vectors.ts`, `postgres/postgres-vectors.ts`): their rows
 * (the same column names in SQLite's migration 27 and PostgreSQL's tables) read as the contract's records, the
 * keyset pages of the lists, the bytes a chunk counts for, and the words of a full-text query.
 */
import type {
  ChunkingRecord,
  FileCounts,
  ListQuery,
  NewChunk,
  VectorAttributes,
  VectorFileBatchRecord,
  VectorFileRecord,
  VectorFileStatus,
  VectorIndexKind,
  VectorMetric,
  VectorStoreRecord,
  OwnerVectorUsage,
  VectorUsage,
} from './vector-contract.js';
import { MAX_USAGE_OWNERS } from './vector-contract.js';

/** An integer column as either backend returns it: a number from SQLite, a BIGINT string from PostgreSQL. */
type Int = number | string;

/** The most dimensions a vector may have (sqlite-vec's vec0 limit; pgvector's HNSW stops at 2,000 of them). */
export const MAX_VECTOR_DIMENSIONS = 8192;
/** The most chunks a search may ask for (vec0 refuses a `k` above 4,096). */
export const MAX_NEAREST_K = 4096;

export const STORE_COLUMNS =
  'id, owner, principal, name, metadata, created_ms, last_active_ms, expires_after_days, expired_ms, embedding_model, dimensions, dimensions_declared, metric, index_kind';

export interface StoreRow {
  id: string;
  owner: string;
  principal: string;
  name: string;
  metadata: string | null;
  created_ms: Int;
  last_active_ms: Int;
  expires_after_days: Int | null;
  expired_ms: Int | null;
  embedding_model: string;
  dimensions: Int | null;
  dimensions_declared: Int | boolean;
  metric: string;
  index_kind: string;
}

export const FILE_COLUMNS =
  'store_id, file_id, owner, batch_id, filename, created_ms, status, error_code, error_message, attributes, max_tokens, overlap_tokens, usage_bytes, chunk_count';

export interface FileRow {
  store_id: string;
  file_id: string;
  owner: string;
  batch_id: string | null;
  filename: string;
  created_ms: Int;
  status: string;
  error_code: string | null;
  error_message: string | null;
  attributes: string;
  max_tokens: Int;
  overlap_tokens: Int;
  usage_bytes: Int;
  chunk_count: Int;
}

export const BATCH_COLUMNS = 'id, store_id, owner, created_ms, cancelled_ms';

export interface BatchRow {
  id: string;
  store_id: string;
  owner: string;
  created_ms: Int;
  cancelled_ms: Int | null;
}

/** One row of `SELECT status, count(*) AS n, sum(usage_bytes) AS bytes ... GROUP BY status`. */
export interface CountRow {
  status: string;
  n: Int;
  bytes: Int | null;
}

const nullableNumber = (value: Int | null): number | null => (value === null ? null : Number(value));

/** The files' counts by status and their bytes, from the GROUP BY rows (statuses absent count zero). */
export function countsOf(rows: readonly CountRow[]): { fileCounts: FileCounts; usageBytes: number } {
  const fileCounts: FileCounts = { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 };
  let usageBytes = 0;
  for (const row of rows) {
    const n = Number(row.n);
    if (row.status in fileCounts && row.status !== 'total') fileCounts[row.status as VectorFileStatus] = n;
    fileCounts.total += n;
    usageBytes += Number(row.bytes ?? 0);
  }
  return { fileCounts, usageBytes };
}

export function storeOf(row: StoreRow, counts: readonly CountRow[]): VectorStoreRecord {
  const { fileCounts, usageBytes } = countsOf(counts);
  return {
    id: row.id,
    owner: row.owner,
    principal: row.principal,
    name: row.name,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, string>),
    createdMs: Number(row.created_ms),
    lastActiveMs: Number(row.last_active_ms),
    expiresAfterDays: nullableNumber(row.expires_after_days),
    expiredMs: nullableNumber(row.expired_ms),
    embeddingModel: row.embedding_model,
    dimensions: nullableNumber(row.dimensions),
    dimensionsDeclared: row.dimensions_declared === true || Number(row.dimensions_declared) === 1,
    metric: row.metric as VectorMetric,
    index: row.index_kind as VectorIndexKind,
    usageBytes,
    fileCounts,
  };
}

export function fileOf(row: FileRow): VectorFileRecord {
  const chunking: ChunkingRecord = { maxTokens: Number(row.max_tokens), overlapTokens: Number(row.overlap_tokens) };
  return {
    storeId: row.store_id,
    fileId: row.file_id,
    owner: row.owner,
    batchId: row.batch_id,
    filename: row.filename,
    createdMs: Number(row.created_ms),
    status: row.status as VectorFileStatus,
    lastError:
      row.error_code === null ? null : { code: row.error_code as 'server_error', message: row.error_message ?? '' },
    attributes: JSON.parse(row.attributes) as VectorAttributes,
    chunking,
    usageBytes: Number(row.usage_bytes),
    chunkCount: Number(row.chunk_count),
  };
}

export function batchOf(row: BatchRow, counts: readonly CountRow[]): VectorFileBatchRecord {
  return {
    id: row.id,
    storeId: row.store_id,
    owner: row.owner,
    createdMs: Number(row.created_ms),
    cancelledMs: nullableNumber(row.cancelled_ms),
    fileCounts: countsOf(counts).fileCounts,
  };
}

/** Where a list page starts or ends: the row the cursor id names. */
export interface Cursor {
  createdMs: number;
  id: string;
}

/**
 * The WHERE terms and ORDER BY of one page over `(created_ms, <idColumn>)`, `param` adding a value and returning
 * its placeholder (`?` or `$n`). With only `before`, the rows just before it are read backwards and `reverse`
 * says to turn them round, so the page is the one that ends at the cursor. Read `limit + 1` rows: one more means
 * `hasMore`.
 */
export function pageSql(
  query: ListQuery,
  cursors: { after?: Cursor; before?: Cursor },
  idColumn: string,
  param: (value: unknown) => string,
): { where: string[]; orderBy: string; reverse: boolean } {
  const asc = query.order === 'asc';
  const key = `(created_ms, ${idColumn})`;
  const where: string[] = [];
  const bound = (cursor: Cursor, greater: boolean) =>
    where.push(`${key} ${greater ? '>' : '<'} (${param(cursor.createdMs)}, ${param(cursor.id)})`);
  if (cursors.after) bound(cursors.after, asc);
  if (cursors.before) bound(cursors.before, !asc);
  const reverse = cursors.before !== undefined && cursors.after === undefined;
  const dir = asc !== reverse ? 'ASC' : 'DESC';
  return { where, orderBy: `ORDER BY created_ms ${dir}, ${idColumn} ${dir}`, reverse };
}

/** The page of `rows` (read with `limit + 1` by `pageSql`'s order). */
export function pageOf<T>(rows: T[], limit: number, reverse: boolean): { data: T[]; hasMore: boolean } {
  const data = rows.slice(0, limit);
  return { data: reverse ? data.reverse() : data, hasMore: rows.length > limit };
}

/** The bytes a chunk counts for in `usage_bytes`: its text (UTF-8) and its vector (4 bytes a dimension). */
export function chunkBytes(chunk: NewChunk): number {
  return Buffer.byteLength(chunk.text, 'utf8') + chunk.vector.length * 4;
}

/**
 * The one dimension of `chunks`' vectors; undefined when there are none. Vectors of different lengths in one file,
 * or a length outside 1..MAX_VECTOR_DIMENSIONS, are the caller's bug: a RangeError.
 */
export function dimensionOf(chunks: readonly NewChunk[]): number | undefined {
  const first = chunks[0];
  if (!first) return undefined;
  const dimension = first.vector.length;
  if (dimension < 1 || dimension > MAX_VECTOR_DIMENSIONS)
    throw new RangeError(`a vector has ${dimension} dimensions (1 to ${MAX_VECTOR_DIMENSIONS})`);
  for (const chunk of chunks) {
    if (chunk.vector.length !== dimension) throw new RangeError("a file's vectors differ in dimension");
  }
  return dimension;
}

/** How many words of a full-text query are looked for, and the longest word. */
const MAX_QUERY_WORDS = 32;
const MAX_WORD_CHARS = 64;
/**
 * Words not looked for: the operators of websearch_to_tsquery and FTS5 when bare, and English function words, so
 * that a question ("what is the refund policy?") ranks by its content words on both backends (PostgreSQL's
 * `english` configuration drops these itself; FTS5 has no stop words). A subset of PostgreSQL's english list.
 */
const SKIPPED_WORDS = new Set(
  (
    'or and not near a an the is are was were be been being am do does did of in on at to for from by with as ' +
    'it its this that these those there here what which who whom whose when where why how i me my we our you your ' +
    'he him his she her they them their if then than so but no nor too very can will just should would could ' +
    'has have had having into onto about over under again further once all any both each few more most other ' +
    'some such only own same s t'
  ).split(' '),
);

/**
 * The words of a full-text query (letters and digits, lower-cased, each once, at most 32, SKIPPED_WORDS left out), which both backends
 * look for with OR: any word matching counts, more and rarer ones rank higher (BM25 / ts_rank_cd). Only words
 * are kept, so nothing a caller writes is read as query syntax by FTS5 or websearch_to_tsquery.
 */
export function queryWords(text: string): string[] {
  const words = new Set<string>();
  for (const match of text.slice(0, 8192).matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0].toLowerCase().slice(0, MAX_WORD_CHARS);
    if (!SKIPPED_WORDS.has(word)) words.add(word);
    if (words.size === MAX_QUERY_WORDS) break;
  }
  return [...words];
}

/**
 * A full-text rank (FTS5's -bm25, PostgreSQL's ts_rank_cd; both ≥ 0, higher is better) as a score in (0, 1):
 * r / (1 + r), which keeps the order and reads the same on both backends (ts_rank_cd's normalization 32 is this
 * formula). A rank of 0 (a match on words that are everywhere) still scores just above 0: it matched.
 */
export function textScore(rank: number): number {
  const r = Math.max(rank, 1e-6);
  return r / (1 + r);
}

/** One row of `SELECT owner, count(*) AS n FROM vector_stores GROUP BY owner`. */
export interface OwnerStoresRow {
  owner: string;
  n: Int;
}

/** One row of the files by owner and status (`CountRow` with the owner). */
export interface OwnerCountRow extends CountRow {
  owner: string;
}

/** The SQL both backends answer `usage` with (`p`: the table prefix; SQLite's is empty). */
export const usageSql = (p: string) => ({
  stores: `SELECT owner, count(*) AS n FROM ${p}vector_stores GROUP BY owner`,
  files: `SELECT s.owner AS owner, f.status AS status, count(*) AS n, sum(f.usage_bytes) AS bytes
    FROM ${p}vector_store_files f JOIN ${p}vector_stores s ON s.id = f.store_id GROUP BY s.owner, f.status`,
});

/** `usage`'s answer from the grouped rows: the total, and the `limit` owners with the most bytes (then stores, id). */
export function usageOf(
  storeRows: readonly OwnerStoresRow[],
  fileRows: readonly OwnerCountRow[],
  limit: number,
): { total: VectorUsage; owners: OwnerVectorUsage[] } {
  const byOwner = new Map<string, { stores: number; counts: CountRow[] }>();
  const entry = (owner: string) => {
    let found = byOwner.get(owner);
    if (!found) byOwner.set(owner, (found = { stores: 0, counts: [] }));
    return found;
  };
  for (const row of storeRows) entry(row.owner).stores += Number(row.n);
  for (const row of fileRows) entry(row.owner).counts.push(row);
  const owners = [...byOwner].map(([owner, { stores, counts }]) => ({ owner, stores, ...countsOf(counts) }));
  // Rows of one status come once per owner: everyone's counts are the owners' added up.
  const total = { fileCounts: countsOf([]).fileCounts, usageBytes: 0 };
  for (const owner of owners) {
    for (const key of Object.keys(total.fileCounts) as (keyof FileCounts)[])
      total.fileCounts[key] += owner.fileCounts[key];
    total.usageBytes += owner.usageBytes;
  }
  owners.sort((a, b) => b.usageBytes - a.usageBytes || b.stores - a.stores || (a.owner < b.owner ? -1 : 1));
  const stores = owners.reduce((sum, owner) => sum + owner.stores, 0);
  return {
    total: { stores, ...total },
    owners: owners.slice(0, Math.max(0, Math.min(MAX_USAGE_OWNERS, Math.floor(limit)))),
  };
}
