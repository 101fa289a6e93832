import type { Usage } from '../../providers/provider-contract.js';
import { saneTokens } from '../../providers/usage-figures.js';
import type { LineUsage } from '../../store/batch-contract.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null;

function detail(usage: Json, object: string, name: string): number {
  const inner = usage[object];
  return isObject(inner) ? saneTokens(inner[name]) : 0;
}

/** A line's tokens from the gateway's own usage (a forwarded batch's result, src/providers/provider-contract.ts). */
export function lineUsageOf(usage: Usage | undefined): LineUsage | undefined {
  if (!usage) return undefined;
  return {
    input: usage.prompt_tokens,
    cached: usage.cache_read_tokens ?? 0,
    output: usage.completion_tokens,
    reasoning: usage.reasoning_tokens ?? 0,
    total: usage.total_tokens,
  };
}

/**
 * A line's tokens from the answer the gateway gave it (JSON text in the line's endpoint's format, its usage object
 * as src/providers/usage-shapes.ts writes it), or undefined when the answer shows none. Chat and embeddings:
 * `prompt_tokens` (all input) / `completion_tokens`; Responses: `input_tokens` / `output_tokens` with their
 * details; Messages: `input_tokens` excludes the cache reads and writes, so they are added back.
 */
export function lineUsageOfAnswer(endpoint: string, body: string): LineUsage | undefined {
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    return undefined;
  }
  const usage = isObject(answer) ? answer.usage : undefined;
  if (!isObject(usage)) return undefined;
  let line: LineUsage;
  if (endpoint === '/v1/chat/completions' || endpoint === '/v1/embeddings') {
    line = {
      input: saneTokens(usage.prompt_tokens),
      cached: detail(usage, 'prompt_tokens_details', 'cached_tokens'),
      output: saneTokens(usage.completion_tokens),
      reasoning: detail(usage, 'completion_tokens_details', 'reasoning_tokens'),
      total: saneTokens(usage.total_tokens),
    };
  } else if (endpoint === '/v1/responses') {
    line = {
      input: saneTokens(usage.input_tokens),
      cached: detail(usage, 'input_tokens_details', 'cached_tokens'),
      output: saneTokens(usage.output_tokens),
      reasoning: detail(usage, 'output_tokens_details', 'reasoning_tokens'),
      total: saneTokens(usage.total_tokens),
    };
  } else if (endpoint === '/v1/messages') {
    const read = saneTokens(usage.cache_read_input_tokens);
    const input = saneTokens(usage.input_tokens) + read + saneTokens(usage.cache_creation_input_tokens);
    const output = saneTokens(usage.output_tokens);
    line = { input, cached: read, output, reasoning: 0, total: input + output };
  } else return undefined;
  // An answer without a total (embeddings of some upstreams): input and output are all there is.
  if (line.total < line.input + line.output) line.total = line.input + line.output;
  return line;
}
