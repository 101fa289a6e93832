import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { VectorStoreRecord } from '../vector-contract.js';
import { HNSW_DEFAULTS, HnswGraph, graphBytes, type HnswParams } from './hnsw-graph.js';

/**
 * The approximate indexes of `hnsw` stores (docs/retrieval.md "Index types"), one HNSW graph per store in this
 * process, for either backend: the backend supplies its store's version and vectors (`HnswSource`); this keeps each
 * graph up to date with it and searches it.
 *
 * - Up to date, or not used: a graph answers a search only when it was brought up to the store's current version;
 *   otherwise the search is exact (the caller's flat path) while a sync runs in the background. Never wrong, only
 *   slower while catching up.
 * - A sync diffs the store's files (each file's first chunk id and chunk count: a file added again has new chunk
 *   ids) with the graph's: removed files' nodes are tombstoned (skipped by searches), new files' vectors read and
 *   added. When the dead pass REBUILD_DEAD_SHARE of the graph it is rebuilt from its live vectors.
 * - The event loop: nodes are added in slices of at most SLICE_MS, with a yield between them.
 * - Memory: all graphs together hold at most `maxBytes`, the least recently searched dropped first (its store is
 *   searched exactly until it is synced again); a store whose graph alone would pass it is never built.
 * - `fileIds` (and tombstones): the beam is widened by the inverse of the share of the graph's nodes allowed and walks
 *   through the others keeping only the allowed ones, unless that costs more distances than an exact scan of the
 *   allowed chunks (a small share, or a small store): then the search is exact.
 */

/** One batch of a store's vectors: chunk ids, their files and the vectors (rows × dimension). */
export interface SourceRows {
  ids: number[];
  files: string[];
  vectors: Float32Array;
}

/** What a backend tells about a store. */
export interface HnswSource {
  /** The store's version now (changes with every chunk written or dropped); undefined: gone or expired. */
  version(storeId: string): Promise<string | undefined>;
  /** The store's searchable files, as they are at or after the version read before. */
  files(storeId: string): Promise<{ fileId: string; firstId: number; count: number }[]>;
  /** The vectors of these files' searchable chunks, in batches. */
  vectors(storeId: string, fileIds: readonly string[], dimension: number): AsyncIterable<SourceRows>;
}

/** Rows as `SourceRows`; a vector of another length is left out. */
export function rowsOf(
  rows: readonly { id: string | number; file_id: string; embedding: Uint8Array }[],
  dimension: number,
): SourceRows {
  const fitting = rows.filter((row) => row.embedding.byteLength === dimension * 4);
  const vectors = new Float32Array(fitting.length * dimension);
  const bytes = new Uint8Array(vectors.buffer);
  // Float32 little-endian as written (both backends); copied byte for byte (a Buffer may not be 4-byte aligned).
  fitting.forEach((row, i) => bytes.set(row.embedding, i * dimension * 4));
  return { ids: fitting.map((row) => Number(row.id)), files: fitting.map((row) => row.file_id), vectors };
}

/** Work between two yields to the event loop while a graph is built. */
export const SLICE_MS = 4;
/** The graph is rebuilt from its live nodes when this share of it is tombstones. */
export const REBUILD_DEAD_SHARE = 0.25;
/** The widest beam a filtered search uses. */
const MAX_FILTERED_EF = 4096;
/** The most multiply-adds one graph search may take (~ef × M × dimension): ~2-4 ms here. */
const MAX_SEARCH_WORK = 4_000_000;
/** All graphs together, by default. */
export const DEFAULT_HNSW_BYTES = 1024 * 1024 * 1024;

interface FileNodes {
  firstId: number;
  count: number;
  index: number;
  nodes: number[];
}

interface StoreGraph {
  graph: HnswGraph;
  /** The version the graph is up to date with; undefined while it syncs. */
  version: string | undefined;
  files: Map<string, FileNodes>;
  fileIds: string[];
  syncing: Promise<void> | undefined;
}

export interface HnswHit {
  /** The chunk's id. */
  id: number;
  /** The value `similarityScore` takes (the real distance or similarity). */
  value: number;
}

export interface HnswStats {
  graphs: number;
  bytes: number;
  graphSearches: number;
  exactSearches: number;
}

export class HnswIndexes {
  /** By store, least recently used first. */
  private readonly graphs = new Map<string, StoreGraph>();
  /** Stores too big for the bound, at the version found so: not tried again until it changes. */
  private readonly tooBig = new Map<string, string>();
  private readonly params: HnswParams;
  private readonly stats = { graphSearches: 0, exactSearches: 0 };
  private closed = false;

  constructor(
    private readonly source: HnswSource,
    private readonly options: { maxBytes?: number; params?: Partial<HnswParams> } = {},
  ) {
    this.params = { ...HNSW_DEFAULTS, ...options.params };
  }

  get maxBytes(): number {
    return this.options.maxBytes ?? DEFAULT_HNSW_BYTES;
  }

  get usage(): HnswStats {
    let bytes = 0;
    for (const entry of this.graphs.values()) bytes += entry.graph.bytes;
    return { graphs: this.graphs.size, bytes, ...this.stats };
  }

  /**
   * The `k` nearest chunks by the store's graph when it is up to date with `version`; undefined: search exactly
   * (a sync is started when the graph is missing or behind).
   */
  search(
    store: VectorStoreRecord,
    version: string,
    query: { vector: Float32Array; k: number; fileIds?: readonly string[] },
  ): HnswHit[] | undefined {
    const entry = this.graphs.get(store.id);
    if (!entry || entry.version !== version || entry.graph.dimension !== store.dimensions) {
      this.refresh(store, version);
      this.stats.exactSearches++;
      return undefined;
    }
    this.graphs.delete(store.id);
    this.graphs.set(store.id, entry); // most recently used
    const { graph } = entry;
    const live = graph.live;
    let allowedCount = live;
    let allowed: Uint8Array | undefined;
    if (query.fileIds !== undefined) {
      allowed = new Uint8Array(entry.fileIds.length);
      allowedCount = 0;
      for (const fileId of query.fileIds) {
        const file = entry.files.get(fileId);
        if (!file || allowed[file.index] === 1) continue;
        allowed[file.index] = 1;
        allowedCount += file.nodes.length;
      }
      if (allowedCount === 0) return [];
    }
    // The graph's search computes about ef × M distances, the exact scan one per allowed chunk: the cheaper wins
    // (few chunks, or a filter keeping a small share of them). A graph search runs in one go: one that would hold
    // the event loop for more than a few ms (a wide beam of long vectors) is left to the exact scan, which yields.
    const share = allowedCount / graph.size;
    const ef = Math.min(MAX_FILTERED_EF, Math.ceil(Math.max(this.params.efSearch, query.k) / share));
    if (allowedCount <= ef * graph.m || ef * graph.m * graph.dimension > MAX_SEARCH_WORK) {
      this.stats.exactSearches++;
      return undefined;
    }
    const accept = allowed ? (node: number) => allowed[graph.file(node)] === 1 : undefined;
    this.stats.graphSearches++;
    return graph.search(query.vector, query.k, ef, accept).map((hit) => ({
      id: graph.chunkId(hit.node),
      value: graph.scoreValue(query.vector, hit.node),
    }));
  }

  /**
   * Brings the store's graph up to date now and waits for it (tests, the benchmark): true when its searches use
   * the graph, false when they stay exact (too big for the bound, or changed again meanwhile).
   */
  async ready(store: VectorStoreRecord): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const version = await this.source.version(store.id);
      if (version === undefined || store.dimensions === null) return false;
      const entry = this.graphs.get(store.id);
      if (entry?.version === version) return true;
      if (this.tooBig.get(store.id) === version) return false;
      this.refresh(store, version);
      await this.graphs.get(store.id)?.syncing;
    }
    return false;
  }

  /** Forgets a store's graph (the store was deleted or expired). */
  drop(storeId: string): void {
    this.graphs.delete(storeId);
    this.tooBig.delete(storeId);
  }

  close(): void {
    this.closed = true;
    this.graphs.clear();
  }

  /** Starts a sync of the store's graph unless one runs or the store is known too big at this version. */
  private refresh(store: VectorStoreRecord, version: string): void {
    if (this.closed || store.dimensions === null || this.tooBig.get(store.id) === version) return;
    let entry = this.graphs.get(store.id);
    if (entry?.syncing) return;
    if (!entry || entry.graph.dimension !== store.dimensions) {
      entry = {
        graph: new HnswGraph(store.dimensions, store.metric, this.params),
        version: undefined,
        files: new Map(),
        fileIds: [],
        syncing: undefined,
      };
      this.graphs.set(store.id, entry);
    }
    const syncing = entry;
    syncing.version = undefined;
    syncing.syncing = this.sync(store.id, syncing)
      .catch(() => {
        // The store could not be read (a lost connection): forgotten, rebuilt by a later search.
        if (this.graphs.get(store.id) === syncing) this.graphs.delete(store.id);
      })
      .finally(() => {
        syncing.syncing = undefined;
      });
  }

  private async sync(storeId: string, entry: StoreGraph): Promise<void> {
    const version = await this.source.version(storeId);
    if (version === undefined) {
      this.drop(storeId);
      return;
    }
    const files = await this.source.files(storeId);
    const wanted = new Map(files.map((file) => [file.fileId, file]));
    for (const [fileId, held] of entry.files) {
      const now = wanted.get(fileId);
      if (now && now.firstId === held.firstId && now.count === held.count) continue;
      for (const node of held.nodes) entry.graph.kill(node);
      entry.files.delete(fileId);
    }
    const added = files.filter((file) => !entry.files.has(file.fileId));
    const { graph } = entry;
    // What the graph will hold: its nodes dead ones included (unless rebuilt), and the new ones.
    const rebuilding = graph.deadCount > REBUILD_DEAD_SHARE * graph.size;
    const nodes = (rebuilding ? graph.live : graph.size) + added.reduce((sum, file) => sum + file.count, 0);
    const needed = graphBytes(nodes, graph.dimension, graph.m);
    if (needed > this.maxBytes) {
      this.graphs.delete(storeId);
      this.tooBig.set(storeId, version);
      return;
    }
    this.makeRoom(storeId, needed);
    if (rebuilding) await this.rebuild(entry);
    if (added.length > 0) await this.insert(storeId, entry, added);
    if (this.graphs.get(storeId) !== entry) return; // dropped or evicted meanwhile
    entry.version = version;
  }

  /** Drops the least recently used other graphs until `needed` more bytes fit the bound. */
  private makeRoom(storeId: string, needed: number): void {
    let used = 0;
    for (const [id, entry] of this.graphs) if (id !== storeId) used += entry.graph.bytes;
    for (const [id, entry] of this.graphs) {
      if (used + needed <= this.maxBytes) return;
      if (id === storeId) continue;
      used -= entry.graph.bytes;
      this.graphs.delete(id);
    }
  }

  /** A new graph of the live nodes (their vectors copied from the old one), in slices. */
  private async rebuild(entry: StoreGraph): Promise<void> {
    const old = entry.graph;
    const graph = new HnswGraph(old.dimension, old.metric, this.params);
    let sliceStart = performance.now();
    for (const file of entry.files.values()) {
      const nodes: number[] = [];
      for (const node of file.nodes) {
        nodes.push(graph.add(old.chunkId(node), file.index, old.vector(node)));
        if (performance.now() - sliceStart >= SLICE_MS) {
          await yieldToLoop();
          sliceStart = performance.now();
        }
      }
      file.nodes = nodes;
    }
    entry.graph = graph;
  }

  private async insert(
    storeId: string,
    entry: StoreGraph,
    added: { fileId: string; firstId: number; count: number }[],
  ): Promise<void> {
    const { graph } = entry;
    const fresh = new Map<string, FileNodes>();
    for (const file of added) {
      const index = entry.fileIds.push(file.fileId) - 1;
      fresh.set(file.fileId, { firstId: file.firstId, count: file.count, index, nodes: [] });
    }
    const { dimension } = graph;
    let sliceStart = performance.now();
    for await (const rows of this.source.vectors(storeId, [...fresh.keys()], dimension)) {
      for (let i = 0; i < rows.ids.length; i++) {
        const file = fresh.get(rows.files[i]!);
        if (!file) continue;
        const vector = rows.vectors.subarray(i * dimension, (i + 1) * dimension);
        file.nodes.push(graph.add(rows.ids[i]!, file.index, vector));
        if (performance.now() - sliceStart >= SLICE_MS) {
          await yieldToLoop();
          if (this.graphs.get(storeId) !== entry) return;
          sliceStart = performance.now();
        }
      }
      await yieldToLoop();
      if (this.graphs.get(storeId) !== entry) return;
      sliceStart = performance.now();
    }
    for (const [fileId, file] of fresh) entry.files.set(fileId, file);
  }
}
