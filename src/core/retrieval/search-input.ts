import { filterProblemError, readAttributeFilter } from './attribute-filter.js';
import type { AttributeFilter, RankingOptions } from './file-search.js';
import { invalid, isObject } from './vector-store-input.js';

/** Queries of one search at most, and the characters of each. */
export const MAX_QUERIES = 10;
export const MAX_QUERY_CHARS = 4_096;
export const MAX_RESULTS = 50;
export const DEFAULT_RESULTS = 10;

export interface SearchInput {
  queries: string[];
  filters: AttributeFilter | undefined;
  maxNumResults: number;
  rankingOptions: RankingOptions | undefined;
}

/**
 * A search's body (`POST /v1/vector_stores/{id}/search`; the `file_search` tool's fields are the same but
 * `query`): `query` a string or up to ten, `filters`, `max_num_results` 1..50 (10), `ranking_options`.
 * `rewrite_query` is accepted and not acted on: the gateway searches the query as sent and says so in
 * `search_query` (docs/retrieval.md, "Search").
 */
export function searchInputOf(body: Record<string, unknown>): SearchInput {
  const raw = body.query;
  const queries = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw : undefined;
  if (!queries || queries.length === 0 || queries.length > MAX_QUERIES) {
    throw invalid('query', `required: a string or an array of 1 to ${MAX_QUERIES} strings`);
  }
  queries.forEach((q: unknown, i) => {
    if (typeof q !== 'string' || q.trim() === '' || q.length > MAX_QUERY_CHARS) {
      throw invalid(
        Array.isArray(raw) ? `query[${i}]` : 'query',
        `a non-empty string of at most ${MAX_QUERY_CHARS} characters`,
      );
    }
  });
  if (body.rewrite_query !== undefined && typeof body.rewrite_query !== 'boolean') {
    throw invalid('rewrite_query', 'must be a boolean');
  }
  return { queries: queries as string[], ...toolSearchFields(body, '') };
}

/** `filters`, `max_num_results` and `ranking_options` of a search body or a `file_search` tool (`at`: its path). */
export function toolSearchFields(body: Record<string, unknown>, at: string): Omit<SearchInput, 'queries'> {
  const field = (name: string): string => (at === '' ? name : `${at}.${name}`);
  let filters: AttributeFilter | undefined;
  if (body.filters !== undefined && body.filters !== null) {
    const reading = readAttributeFilter(body.filters, field('filters'));
    if (!reading.ok) throw filterProblemError(reading.problem);
    filters = reading.filter;
  }
  const max = body.max_num_results ?? DEFAULT_RESULTS;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_RESULTS) {
    throw invalid(field('max_num_results'), `a whole number from 1 to ${MAX_RESULTS}`);
  }
  return { filters, maxNumResults: max, rankingOptions: rankingOf(body.ranking_options, field('ranking_options')) };
}

function rankingOf(value: unknown, at: string): RankingOptions | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalid(at, 'must be an object');
  const out: RankingOptions = {};
  if (value.ranker !== undefined) {
    if (value.ranker !== 'none' && value.ranker !== 'auto' && value.ranker !== 'default-2024-11-15') {
      throw invalid(`${at}.ranker`, 'must be one of none, auto, default-2024-11-15');
    }
    out.ranker = value.ranker;
  }
  if (value.score_threshold !== undefined) {
    const t = value.score_threshold;
    if (typeof t !== 'number' || !(t >= 0 && t <= 1)) throw invalid(`${at}.score_threshold`, 'a number from 0 to 1');
    out.score_threshold = t;
  }
  if (value.hybrid_search !== undefined && value.hybrid_search !== null) {
    const h = value.hybrid_search;
    const weight = (w: unknown): w is number => typeof w === 'number' && w >= 0 && w <= 1_000 && Number.isFinite(w);
    if (
      !isObject(h) ||
      !weight(h.embedding_weight) ||
      !weight(h.text_weight) ||
      h.embedding_weight + h.text_weight <= 0
    ) {
      throw invalid(
        `${at}.hybrid_search`,
        'must be {embedding_weight, text_weight}: numbers from 0 to 1000, not both 0',
      );
    }
    out.hybrid_search = { embedding_weight: h.embedding_weight, text_weight: h.text_weight };
  }
  return out;
}
