import type { PricedUsage } from '../models/pricing.js';
import type { CallingAs } from '../pipeline/call-as.js';
import type { VectorAttributes } from '../../store/vector-contract.js';

/** OpenAI's comparison filter on a file's attributes. */
export interface ComparisonFilter {
  type: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin';
  key: string;
  value: string | number | boolean | (string | number)[];
}

/** OpenAI's compound filter; nested to any depth the request's bounds allow. */
export interface CompoundFilter {
  type: 'and' | 'or';
  filters: AttributeFilter[];
}

export type AttributeFilter = ComparisonFilter | CompoundFilter;

/** `ranking_options` of a search and of the `file_search` tool. */
export interface RankingOptions {
  ranker?: 'none' | 'auto' | 'default-2024-11-15';
  /** Results scoring below it are left out, in [0, 1]. */
  score_threshold?: number;
  /** Full-text matching fused with the vector scores; absent: vector scores alone. */
  hybrid_search?: { embedding_weight: number; text_weight: number };
}

/** A search of one or more of a caller's stores, as `POST /v1/vector_stores/{id}/search` and `file_search` make it. */
export interface FileSearchRequest {
  /** Who searches: only its own stores are found (another caller's id: `404 vector_store_not_found`). */
  as: CallingAs;
  vectorStoreIds: readonly string[];
  /** One or several queries; each is embedded with each store's own model (through the embeddings pipeline). */
  queries: readonly string[];
  filters?: AttributeFilter | undefined;
  /** 1..50. */
  maxNumResults: number;
  rankingOptions?: RankingOptions | undefined;
}

/** One result, OpenAI's fields (the search page's `content` is `[{type: 'text', text}]`). */
export interface FileSearchHit {
  fileId: string;
  filename: string;
  /** In [0, 1]: the same meaning for every metric (store/vector-contract.ts `similarityScore`). */
  score: number;
  attributes: VectorAttributes;
  text: string;
}

export interface FileSearchResult {
  /** Best first, at most `maxNumResults`, each chunk once. */
  hits: FileSearchHit[];
  /** The queries as they were searched. */
  queries: string[];
  /** What embedding the queries cost (settled and recorded as embeddings calls of the caller). */
  usage: PricedUsage[];
}

/**
 * Searches the caller's stores (core/retrieval/search-service.ts). Throws a GatewayError a caller can read: an
 * unknown store (404), a store of another dimension than its model returned (400), a refused embedding call (its
 * own status and code: a spent budget, a rate limit).
 */
export type FileSearch = ((request: FileSearchRequest) => Promise<FileSearchResult>) & {
  /** Searches one `file_search` answer may run (`vector_stores.max_tool_searches`); absent: the loop's default. */
  readonly maxToolSearches?: number;
};
