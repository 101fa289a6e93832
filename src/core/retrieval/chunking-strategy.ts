import type { ChunkingRecord } from '../../store/vector-contract.js';

/** OpenAI's `{type: 'auto'}`: 800-token chunks overlapping by 400 (its documented defaults). */
export const AUTO_CHUNKING: ChunkingRecord = { maxTokens: 800, overlapTokens: 400 };
export const MIN_CHUNK_TOKENS = 100;
export const MAX_CHUNK_TOKENS = 4096;

/** A request field that cannot be taken, named as the caller wrote it (a route answers 400 with it). */
export interface ChunkingProblem {
  field: string;
  problem: string;
}

/** The `chunking_strategy` a vector store file shows: `auto` is shown as the static numbers it stands for. */
export interface ChunkingStrategyView {
  type: 'static';
  static: { max_chunk_size_tokens: number; chunk_overlap_tokens: number };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `inner` within the parameter at `at`: `static.max_chunk_size_tokens`, or `files[2].chunking_strategy.static`. */
const fieldName = (at: string, inner: string): string => (at && inner ? `${at}.${inner}` : at || inner);

/**
 * Reads OpenAI's `chunking_strategy` parameter (vector store create, file create, file batches): absent or
 * `{type: 'auto'}` is 800 / 400; `{type: 'static', static: {max_chunk_size_tokens, chunk_overlap_tokens}}` takes
 * a max of 100 to 4096 tokens and an overlap of 0 to half the max. A problem's `field` is within the parameter
 * (`static.max_chunk_size_tokens`; empty: the parameter itself) unless `at` says where the parameter sits in the
 * request (`chunking_strategy`, `files[2].chunking_strategy` in a batch): then it is the whole path.
 */
export function chunkingOf(strategy: unknown, at = ''): ChunkingRecord | ChunkingProblem {
  const problem = (inner: string, text: string): ChunkingProblem => ({ field: fieldName(at, inner), problem: text });
  if (strategy === undefined || strategy === null) return AUTO_CHUNKING;
  if (!isObject(strategy)) return problem('', 'must be an object: {"type": "auto"} or {"type": "static", ...}');
  if (strategy.type === 'auto') return AUTO_CHUNKING;
  if (strategy.type !== 'static') return problem('type', 'must be "auto" or "static"');
  const settings = strategy.static;
  if (!isObject(settings))
    return problem('static', 'must be an object with max_chunk_size_tokens and chunk_overlap_tokens');
  const max = settings.max_chunk_size_tokens;
  if (!Number.isInteger(max) || (max as number) < MIN_CHUNK_TOKENS || (max as number) > MAX_CHUNK_TOKENS)
    return problem(
      'static.max_chunk_size_tokens',
      `must be an integer from ${MIN_CHUNK_TOKENS} to ${MAX_CHUNK_TOKENS}`,
    );
  const overlap = settings.chunk_overlap_tokens;
  if (!Number.isInteger(overlap) || (overlap as number) < 0)
    return problem('static.chunk_overlap_tokens', 'must be an integer of 0 or more');
  if ((overlap as number) * 2 > (max as number))
    return problem(
      'static.chunk_overlap_tokens',
      `must not exceed half of max_chunk_size_tokens (${Math.floor((max as number) / 2)})`,
    );
  return { maxTokens: max as number, overlapTokens: overlap as number };
}

/** How a file's chunking is shown (OpenAI never shows `auto`: it shows the static numbers). */
export function chunkingView(record: ChunkingRecord): ChunkingStrategyView {
  return {
    type: 'static',
    static: { max_chunk_size_tokens: record.maxTokens, chunk_overlap_tokens: record.overlapTokens },
  };
}
