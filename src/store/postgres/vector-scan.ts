import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { VectorMetric } from '../vector-contract.js';

/**
 * The exact search of the PostgreSQL vector store when the server has no pgvector (docs/retrieval.md): a store's
 * vectors as Float32 matrices in blocks of BLOCK_ROWS rows, every row compared with the query. Measured at 10k ×
 * 256 dimensions: ~2 ms from memory against ~140 ms fetching the rows each time (docs/plans/retrieval-research.md
 * section 2), so a store's blocks are kept (`VectorScanCache`) while the store's version (bumped by every chunk
 * write and delete) is unchanged.
 */

/** Rows per block: a block is scored in one go (~5 ms at 1,536 dimensions), then the loop may serve others. */
export const BLOCK_ROWS = 4096;

/** Some rows of one store: chunk ids, the index of each one's file in `VectorSet.files`, vectors and their norms. */
export interface VectorBlock {
  ids: Float64Array;
  files: Int32Array;
  vectors: Float32Array;
  norms: Float32Array;
  rows: number;
}

/** A store's vectors as read at one version. */
export interface VectorSet {
  version: string;
  dimension: number;
  files: string[];
  blocks: VectorBlock[];
  bytes: number;
}

/** A scan's best rows: chunk id, what ranks it (higher is closer) and the value `similarityScore` takes. */
export interface ScanHit {
  id: number;
  rank: number;
  value: number;
}

/** Builds blocks from rows `(id, file_id, embedding bytes)` as they arrive, numbering the files it meets. */
export class VectorSetBuilder {
  private readonly fileIndex = new Map<string, number>();
  readonly files: string[] = [];

  constructor(readonly dimension: number) {}

  /** One block of `rows` (at most BLOCK_ROWS); a row whose bytes are not `dimension` Float32s is skipped. */
  block(rows: readonly { id: string | number; file_id: string; embedding: Buffer }[]): VectorBlock {
    const { dimension } = this;
    const ids = new Float64Array(rows.length);
    const files = new Int32Array(rows.length);
    const vectors = new Float32Array(rows.length * dimension);
    const norms = new Float32Array(rows.length);
    const bytes = new Uint8Array(vectors.buffer);
    let n = 0;
    for (const row of rows) {
      if (row.embedding.length !== dimension * 4) continue;
      let file = this.fileIndex.get(row.file_id);
      if (file === undefined) {
        file = this.files.push(row.file_id) - 1;
        this.fileIndex.set(row.file_id, file);
      }
      ids[n] = Number(row.id);
      files[n] = file;
      // Float32 little-endian as written (`vectorBytes`); this platform reads its own order, little-endian on
      // every platform Node ships for but s390x (refused at start by `vectorBytes`).
      bytes.set(row.embedding, n * dimension * 4);
      let sum = 0;
      for (let j = n * dimension; j < (n + 1) * dimension; j++) sum += vectors[j]! * vectors[j]!;
      norms[n] = Math.sqrt(sum);
      n++;
    }
    return { ids, files, vectors, norms, rows: n };
  }
}

export function blockBytes(block: VectorBlock): number {
  return block.ids.byteLength + block.files.byteLength + block.vectors.byteLength + block.norms.byteLength;
}

/**
 * Keeps the k best of the rows it is shown: a small array sorted best first (k is at most a few thousand and most
 * rows are refused by one comparison with the worst kept).
 */
export class TopK {
  readonly hits: ScanHit[] = [];
  constructor(private readonly k: number) {}

  offer(id: number, rank: number, value: number): void {
    const { hits, k } = this;
    if (hits.length === k) {
      const worst = hits[k - 1]!;
      if (rank < worst.rank || (rank === worst.rank && id > worst.id)) return;
      hits.pop();
    }
    let at = hits.length;
    while (at > 0 && (hits[at - 1]!.rank < rank || (hits[at - 1]!.rank === rank && hits[at - 1]!.id > id))) at--;
    hits.splice(at, 0, { id, rank, value });
  }
}

/**
 * Scores one block against `query` into `top`: cosine ranks by cos, dot by the product, euclidean by the negated
 * distance (the clamped score would tie every far row). `allowed[file]` false skips a row (the `fileIds` filter).
 */
export function scoreBlock(
  block: VectorBlock,
  query: { vector: Float32Array; norm: number; metric: VectorMetric; allowed?: Uint8Array },
  top: TopK,
): void {
  const { vector, norm, metric, allowed } = query;
  const dimension = vector.length;
  const { vectors } = block;
  for (let i = 0; i < block.rows; i++) {
    if (allowed && allowed[block.files[i]!] !== 1) continue;
    const base = i * dimension;
    let value: number;
    let rank: number;
    if (metric === 'euclidean') {
      let squares = 0;
      for (let j = 0; j < dimension; j++) {
        const d = vector[j]! - vectors[base + j]!;
        squares += d * d;
      }
      value = Math.sqrt(squares);
      rank = -value;
    } else {
      let dot = 0;
      for (let j = 0; j < dimension; j++) dot += vector[j]! * vectors[base + j]!;
      const norms = norm * block.norms[i]!;
      value = metric === 'dot' ? dot : norms === 0 ? 0 : dot / norms;
      rank = value;
    }
    top.offer(block.ids[i]!, rank, value);
  }
}

/**
 * Scores blocks as they come (from the cache or from the database), yielding to the event loop between them.
 * `files` is the set's file list, which may grow while blocks arrive; `wanted` restricts the scan to those files.
 */
export async function scan(
  blocks: AsyncIterable<VectorBlock> | Iterable<VectorBlock>,
  query: {
    vector: Float32Array;
    metric: VectorMetric;
    k: number;
    files: readonly string[];
    wanted?: ReadonlySet<string>;
  },
): Promise<ScanHit[]> {
  let sum = 0;
  for (const x of query.vector) sum += x * x;
  const top = new TopK(query.k);
  const scored = {
    vector: query.vector,
    metric: query.metric,
    norm: Math.sqrt(sum),
    allowed: undefined as Uint8Array | undefined,
  };
  for await (const block of blocks) {
    const { wanted, files } = query;
    if (wanted && (scored.allowed?.length ?? -1) < files.length)
      scored.allowed = Uint8Array.from(files, (file) => (wanted.has(file) ? 1 : 0));
    scoreBlock(block, scored, top);
    await yieldToLoop();
  }
  return top.hits;
}

/**
 * The stores' vector sets kept in memory, at most `maxBytes` in all, the least recently used dropped first. A set
 * is valid for its store's version only: the caller reads the version (one indexed row) before each search.
 */
export class VectorScanCache {
  private readonly sets = new Map<string, VectorSet>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The set of `storeId` at `version`, marked recently used; undefined when absent or stale (then dropped). */
  get(storeId: string, version: string): VectorSet | undefined {
    const set = this.sets.get(storeId);
    if (!set) return undefined;
    this.sets.delete(storeId);
    if (set.version !== version) {
      this.bytes -= set.bytes;
      return undefined;
    }
    this.sets.set(storeId, set); // Map order is use order: the first key is the least recently used
    return set;
  }

  /** Keeps `set` unless it alone is over the bound; evicts the least recently used sets to make room. */
  put(storeId: string, set: VectorSet): void {
    this.drop(storeId);
    if (set.bytes > this.maxBytes) return;
    for (const [id, old] of this.sets) {
      if (this.bytes + set.bytes <= this.maxBytes) break;
      this.sets.delete(id);
      this.bytes -= old.bytes;
    }
    this.sets.set(storeId, set);
    this.bytes += set.bytes;
  }

  drop(storeId: string): void {
    const set = this.sets.get(storeId);
    if (!set) return;
    this.sets.delete(storeId);
    this.bytes -= set.bytes;
  }

  get usedBytes(): number {
    return this.bytes;
  }
}

/**
 * A vector as stored (`bytea`, Float32 little-endian: 4 bytes a dimension). This platform's own order is used
 * for speed; `assertLittleEndian` refuses to open the store on a big-endian one.
 */
export function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
}

export function assertLittleEndian(): void {
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1)
    throw new Error('the PostgreSQL vector store stores Float32 little-endian and needs a little-endian platform');
}
