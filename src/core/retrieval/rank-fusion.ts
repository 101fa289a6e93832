import type { ChunkHit } from '../../store/vector-contract.js';
import type { RankingOptions } from './file-search.js';

/**
 * How a search's candidates are scored and kept (search-service.ts). Hybrid search (`ranking_options.hybrid_search`)
 * fuses the vector ranking with the full-text ranking by weighted reciprocal rank fusion (RRF, k = 60), normalized so
 * a chunk first in both lists scores 1: `(we / (60 + rv) + wt / (60 + rt)) / ((we + wt) / 61)`, a list a chunk is
 * not in adding 0. Ranks, not scores: the two full-text backends' scores (FTS5 bm25, ts_rank_cd) have no common
 * scale while ranks do, a chunk only one list found needs no invented score, and OpenAI describes its own hybrid
 * search as reciprocal rank fusion. Without hybrid, or with `ranker: 'none'` (the raw vector order), a candidate's
 * score is the backend's vector score (`similarityScore`, in [0, 1] for every metric).
 */

/** RRF's constant (Cormack, Clarke and Büttcher, 2009): damps the weight of the first few ranks. */
export const RRF_K = 60;

/** A chunk found, with the score it ranks by. */
export interface Candidate {
  hit: ChunkHit;
  score: number;
}

/** How a search ranks, from its `ranking_options`. */
export interface Ranking {
  /** Weights of the fusion; undefined: vector scores alone. */
  hybrid: { embedding: number; text: number } | undefined;
  threshold: number;
}

export function rankingOf(options: RankingOptions | undefined): Ranking {
  const threshold = options?.score_threshold ?? 0;
  const weights = options?.hybrid_search;
  if (!weights || options?.ranker === 'none') return { hybrid: undefined, threshold };
  const embedding = Math.max(0, weights.embedding_weight);
  const text = Math.max(0, weights.text_weight);
  // Weights that add to nothing would divide by zero: the vector scores alone.
  if (!(embedding + text > 0)) return { hybrid: undefined, threshold };
  return { hybrid: { embedding, text }, threshold };
}

/** Weighted reciprocal rank fusion of two ranked lists, normalized to [0, 1] (the first of both scores 1). */
export function fuseRanks(
  byVector: readonly ChunkHit[],
  byText: readonly ChunkHit[],
  weights: { embedding: number; text: number },
): Candidate[] {
  const top = (weights.embedding + weights.text) / (RRF_K + 1);
  const fused = new Map<string, Candidate>();
  const add = (hits: readonly ChunkHit[], weight: number) => {
    hits.forEach((hit, rank) => {
      const key = `${hit.fileId}\u0000${hit.seq}`;
      const share = weight / (RRF_K + rank + 1) / top;
      const seen = fused.get(key);
      if (seen) seen.score += share;
      else fused.set(key, { hit, score: share });
    });
  };
  add(byVector, weights.embedding);
  add(byText, weights.text);
  for (const candidate of fused.values()) candidate.score = Math.min(1, candidate.score);
  return [...fused.values()];
}

/** Keeps a candidate above the threshold when it is the passage's best so far. */
export function keepBest(best: Map<string, Candidate>, candidate: Candidate, threshold: number): void {
  if (candidate.score < threshold) return;
  const key = `${candidate.hit.fileId}\u0000${candidate.hit.text}`;
  const seen = best.get(key);
  if (!seen || candidate.score > seen.score || (candidate.score === seen.score && byPlace(candidate, seen) < 0))
    best.set(key, candidate);
}

export function byScoreThenPlace(a: Candidate, b: Candidate): number {
  return b.score - a.score || byPlace(a, b);
}

function byPlace(a: Candidate, b: Candidate): number {
  return compareText(a.hit.fileId, b.hit.fileId) || a.hit.seq - b.hit.seq || compareText(a.hit.storeId, b.hit.storeId);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
