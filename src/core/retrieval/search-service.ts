/**
 * File search over a caller's vector stores (`POST /v1/vector_stores/{id}/search` and the `file_search` tool).
 *
 * - Only the caller's own stores are found: another caller's id is the same `404 vector_store_not_found` as an
 *   unknown one. A store past `expires_after` is `vector_store_expired`.
 * - Queries are embedded through the gateway's own embeddings pipeline as the caller (query-embedder.ts), once per
 *   distinct (model, dimension) among the stores, with the store's dimension asked for (as ingestion does), so a
 *   model that shortens its vectors gives queries and chunks the same cut. A vector of another length than the
 *   store's is `vector_dimension_mismatch`; a refused embedding call is its own error (a spent budget, a limit).
 * - Filters are evaluated here on the store's searchable files (attribute-filter.ts); the backend is given the
 *   allowed file ids. No file allowed in any store: no embedding call and no result.
 * - Scores: vector scores are the backend's `similarityScore` in [0, 1] (the same for every metric). Hybrid search
 *   fuses them with the full-text ranking by weighted reciprocal rank fusion normalized to [0, 1] (rank-fusion.ts,
 *   where the why is). `ranker: 'none'` is the raw vector order (hybrid ignored); `auto` and `default-2024-11-15`
 *   rank by those scores (no reranking model).
 * - `score_threshold` drops results scoring below it (after fusion). A passage is returned once: results are keyed
 *   by (file, passage text), keeping the best score any query or store gave it, so one file in two stores or found
 *   by two queries is not cited twice. Best first; ties in file id then chunk order; at most `maxNumResults`.
 * - `rewrite_query`: we do not rewrite queries (that would take a model call the caller did not ask for and could
 *   not see); the queries are searched as given and returned as searched (the search page's `search_query`).
 * - A search moves each searched store's `last_active_at` on (its `expires_after` anchor).
 */
import { GatewayError } from '../../errors/gateway-error.js';
import {
  VectorSearchBusy,
  type ChunkHit,
  type SearchableFile,
  type VectorStoreRecord,
  type VectorStoreStore,
} from '../../store/vector-contract.js';
import type { PricedUsage } from '../models/pricing.js';
import type { CallAs, CallingAs } from '../pipeline/call-as.js';
import { compileFilter, type AttributeMatcher } from './attribute-filter.js';
import type { FileSearch, FileSearchHit, FileSearchRequest } from './file-search.js';
import { EMBED_BATCH_SIZE, embedTexts } from './query-embedder.js';
import { byScoreThenPlace, fuseRanks, keepBest, rankingOf, type Candidate, type Ranking } from './rank-fusion.js';

export interface FileSearchDeps {
  store: VectorStoreStore;
  callAs: CallAs;
  /** The clock, ms (tests). */
  now?: () => number;
}

/** OpenAI's bound on `max_num_results`. */
export const MAX_NUM_RESULTS = 50;
/** How many candidates each list gives a hybrid fusion, at least and at most. */
const HYBRID_MIN_CANDIDATES = 20;
const HYBRID_MAX_CANDIDATES = 150;
/** Files filtered between two yields of the event loop. */
const FILTER_SLICE = 1_000;
const DAY_MS = 86_400_000;

/** A store to search: its record, its searchable files by id, and the allowed ids when a filter applies. */
interface SearchTarget {
  store: VectorStoreRecord;
  files: Map<string, SearchableFile>;
  fileIds: readonly string[] | undefined;
}

export function createFileSearch(deps: FileSearchDeps): FileSearch {
  const now = deps.now ?? Date.now;
  return async function searchFiles(request: FileSearchRequest) {
    const nowMs = now();
    const stores = await storesOf(deps.store, request.as.owner, request.vectorStoreIds, nowMs);
    const matcher = request.filters ? compileFilter(request.filters) : undefined;
    const targets: SearchTarget[] = [];
    // No query (a surface checking the tool's stores are the caller's): nothing to search, no store's files read.
    for (const store of request.queries.length > 0 ? stores : []) {
      const target = await targetOf(deps.store, store, matcher);
      // No vectors yet (no dimension) or no file the filter allows: nothing to search, nothing to embed for it.
      if (target.store.dimensions !== null && target.files.size > 0 && target.fileIds?.length !== 0)
        targets.push(target);
    }
    const queries = [...request.queries];
    const usage: PricedUsage[] = [];
    const limit = Math.max(1, Math.min(MAX_NUM_RESULTS, Math.floor(request.maxNumResults)));
    const best = new Map<string, Candidate>();
    if (targets.length > 0 && queries.length > 0) {
      const vectors = await embedQueries(deps.callAs, request.as, targets, queries, usage);
      const ranking = rankingOf(request.rankingOptions);
      for (const target of targets) {
        const key = modelKey(target.store);
        const queryVectors = vectors.get(key) ?? [];
        for (let q = 0; q < queries.length; q++) {
          const vector = queryVectors[q];
          if (vector === undefined) continue;
          checkDimension(target.store, vector);
          const scored = await searchOne(deps.store, target, vector, queries[q] ?? '', limit, ranking);
          for (const candidate of scored) keepBest(best, candidate, ranking.threshold);
        }
      }
    }
    const hits = [...best.values()]
      .sort(byScoreThenPlace)
      .slice(0, limit)
      .map((c) => hitOf(c, targets));
    for (const store of stores) await deps.store.touchStore(store.id, nowMs);
    return { hits, queries, usage };
  };
}

/** The caller's stores, each once, in the order named; an unknown, foreign or expired one throws. */
async function storesOf(
  backend: VectorStoreStore,
  owner: string,
  ids: readonly string[],
  nowMs: number,
): Promise<VectorStoreRecord[]> {
  const stores: VectorStoreRecord[] = [];
  for (const id of new Set(ids)) {
    const store = await backend.getStore(owner, id);
    if (!store) throw new GatewayError('vector_store_not_found', { id });
    const expiresMs = store.expiresAfterDays === null ? null : store.lastActiveMs + store.expiresAfterDays * DAY_MS;
    if (store.expiredMs !== null || (expiresMs !== null && nowMs >= expiresMs))
      throw new GatewayError('vector_store_expired', { id });
    stores.push(store);
  }
  return stores;
}

/** The store's searchable files and, under a filter, the ids it allows (evaluated in slices: thousands of files). */
async function targetOf(
  backend: VectorStoreStore,
  store: VectorStoreRecord,
  matcher: AttributeMatcher | undefined,
): Promise<SearchTarget> {
  const searchable = await backend.searchableFiles(store.id);
  const files = new Map(searchable.map((file) => [file.fileId, file]));
  if (!matcher) return { store, files, fileIds: undefined };
  const fileIds: string[] = [];
  for (let i = 0; i < searchable.length; i++) {
    if (i > 0 && i % FILTER_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const file = searchable[i] as SearchableFile;
    if (matcher(file.attributes)) fileIds.push(file.fileId);
  }
  return { store, files, fileIds };
}

/** Stores embedded alike: the same model asked for the same dimension. */
function modelKey(store: VectorStoreRecord): string {
  return `${store.embeddingModel}\u0000${requestedDimensions(store) ?? ''}`;
}

/**
 * The `dimensions` a store's texts are embedded with: its declared one (text-embedding-3 shortens its vectors to
 * it); none when it was learnt from the first vectors (a model without the parameter refuses it). Ingestion and
 * search ask alike, so a store's chunks and its queries always come out of the model the same way.
 */
export function requestedDimensions(store: VectorStoreRecord): number | undefined {
  return store.dimensionsDeclared && store.dimensions !== null ? store.dimensions : undefined;
}

/**
 * Each query's vector per (model, dimension), each distinct query text embedded once per model, in calls of at most
 * EMBED_BATCH_SIZE texts; every call's usage is pushed to `usage`.
 */
async function embedQueries(
  callAs: CallAs,
  as: CallingAs,
  targets: readonly SearchTarget[],
  queries: readonly string[],
  usage: PricedUsage[],
): Promise<Map<string, Float32Array[]>> {
  const distinct = [...new Set(queries)];
  const byModel = new Map<string, Float32Array[]>();
  for (const { store } of targets) {
    const key = modelKey(store);
    if (byModel.has(key)) continue;
    const byText = new Map<string, Float32Array>();
    for (let start = 0; start < distinct.length; start += EMBED_BATCH_SIZE) {
      const texts = distinct.slice(start, start + EMBED_BATCH_SIZE);
      const embedded = await embedTexts({
        callAs,
        as,
        model: store.embeddingModel,
        texts,
        dimensions: requestedDimensions(store),
      });
      if (embedded.usage) usage.push(embedded.usage);
      texts.forEach((text, i) => byText.set(text, embedded.vectors[i] as Float32Array));
    }
    byModel.set(
      key,
      queries.map((query) => byText.get(query) as Float32Array),
    );
  }
  return byModel;
}

function checkDimension(store: VectorStoreRecord, vector: Float32Array): void {
  if (store.dimensions !== null && vector.length !== store.dimensions)
    throw new GatewayError(
      'vector_dimension_mismatch',
      { id: store.id, expected: store.dimensions, got: vector.length, embedding_model: store.embeddingModel },
      {
        message: `The store's vectors have ${store.dimensions} dimensions; its model ${store.embeddingModel} returned ${vector.length}.`,
      },
    );
}

/** One query on one store: its candidates scored (vector scores, or fused with the full-text ranking). */
async function searchOne(
  backend: VectorStoreStore,
  target: SearchTarget,
  vector: Float32Array,
  query: string,
  limit: number,
  ranking: Ranking,
): Promise<Candidate[]> {
  try {
    return await rankedIn(backend, target, { vector, query, limit, ranking });
  } catch (error) {
    if (!(error instanceof VectorSearchBusy)) throw error;
    throw new GatewayError('search_busy', { waiting: error.waiting }, { headers: { 'retry-after': '1' } });
  }
}

async function rankedIn(
  backend: VectorStoreStore,
  target: SearchTarget,
  { vector, query, limit, ranking }: { vector: Float32Array; query: string; limit: number; ranking: Ranking },
): Promise<Candidate[]> {
  const fileIds = target.fileIds ? { fileIds: target.fileIds } : {};
  // Only files searchable when the search began and allowed by the filter (a file removed meanwhile is not cited).
  const allowed = target.fileIds ? new Set(target.fileIds) : undefined;
  const known = (hits: readonly ChunkHit[]) =>
    hits.filter((hit) => target.files.has(hit.fileId) && (allowed === undefined || allowed.has(hit.fileId)));
  // A threshold needs no over-fetch: the best k above it are among the best k.
  if (!ranking.hybrid) {
    const hits = await backend.nearest({ store: target.store, vector, k: limit, ...fileIds });
    return known(hits).map((hit) => ({ hit, score: hit.score }));
  }
  // Fusion reorders: each list gives more than the page so a chunk ranked lower in one can rise.
  const k = Math.min(HYBRID_MAX_CANDIDATES, Math.max(HYBRID_MIN_CANDIDATES, limit * 3));
  const byVector = await backend.nearest({ store: target.store, vector, k, ...fileIds });
  const byText = await backend.matchText({ storeId: target.store.id, text: query, k, ...fileIds });
  return fuseRanks(known(byVector), known(byText), ranking.hybrid);
}

function hitOf(candidate: Candidate, targets: readonly SearchTarget[]): FileSearchHit {
  const { hit, score } = candidate;
  const file = targets.find((t) => t.store.id === hit.storeId)?.files.get(hit.fileId);
  return {
    fileId: hit.fileId,
    filename: file?.filename ?? '',
    score,
    attributes: file?.attributes ?? {},
    text: hit.text,
  };
}
