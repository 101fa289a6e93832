import type { ChatCompletionChunk, ChatMessage } from '../../providers/provider-contract.js';
import { MAX_CHOICES, MAX_REQUEST_TOKENS } from '../../providers/request-bounds.js';
import { MAX_USAGE_TOKENS } from '../../providers/usage-figures.js';
import { MAX_DEBT_WINDOWS } from '../../store/gcra.js';
import { estimatePromptTokens } from '../tokens/token-estimate.js';

/** A call's admission estimate: its prompt's tokens and the completion it may ask for. */
export interface TokenEstimate {
  prompt: number;
  /** The caller's `max_tokens`, or undefined when it sent none (then DEFAULT_COMPLETION_TOKENS is assumed). */
  maxTokens: number | undefined;
  /** Completions asked for (`n`, `candidateCount`); 1 when absent. */
  n?: number | undefined;
}

/** The completion assumed for a call without `max_tokens`: a guess of ours, not the caller's demand. */
export const DEFAULT_COMPLETION_TOKENS = 1024;

/**
 * The admission estimate of a call's tokens: the prompt by the one estimate (core/tokens/token-estimate.ts: messages,
 * tool calls and tool definitions), plus `max_tokens` (or DEFAULT_COMPLETION_TOKENS when the caller sets none) for
 * each of `n` choices. Corrected with the provider's reported usage when the call ends.
 */
export function estimateTokens(
  messages: readonly ChatMessage[],
  tools: unknown,
  maxTokens: number | undefined,
  n?: number,
): TokenEstimate {
  return { prompt: estimatePromptTokens(messages, tools), maxTokens, ...(n !== undefined ? { n } : {}) };
}

/** A count the estimate may use: a finite number from 0 to `max`, else `max` (never less than what was asked). */
function bounded(value: number, max: number): number {
  return Number.isFinite(value) && value >= 0 ? Math.min(Math.ceil(value), max) : max;
}

/** The estimate's numbers, bounded (see boundedTokens). */
export interface BoundedEstimate {
  prompt: number;
  /** The completion of every choice together. */
  completion: number;
  total: number;
  /** Whether the completion is the caller's own bound (`max_tokens` given) rather than our default guess. */
  callerMax: boolean;
}

/**
 * The estimate as admission charges it, bounded before it reaches a store: the prompt at most the usage
 * bound (MAX_USAGE_TOKENS); each choice's completion at most the model's context window (no answer is longer) and
 * the usage bound; choices at most MAX_CHOICES. So the largest estimate is about 1.3e10 tokens, whatever a caller
 * sends or a native body holds.
 */
export function boundedEstimate(estimate: TokenEstimate, contextWindow: number | undefined): BoundedEstimate {
  const ceiling = Math.min(MAX_REQUEST_TOKENS, bounded(contextWindow ?? MAX_REQUEST_TOKENS, MAX_REQUEST_TOKENS));
  const prompt = bounded(estimate.prompt, MAX_USAGE_TOKENS);
  const perChoice = bounded(estimate.maxTokens ?? DEFAULT_COMPLETION_TOKENS, ceiling);
  const choices = Math.max(1, bounded(estimate.n ?? 1, MAX_CHOICES));
  const completion = perChoice * choices;
  return { prompt, completion, total: prompt + completion, callerMax: estimate.maxTokens !== undefined };
}

/**
 * What one charge may put on a limit of `limit` units per window: at most MAX_DEBT_WINDOWS windows of it (gcra.ts,
 * "Bounds"), so a debt is repaid within that many windows whatever was charged.
 */
export function debtBound(units: number, limit: number): number {
  return Math.min(units, limit * MAX_DEBT_WINDOWS);
}

/**
 * What must be left of a token limit per window to admit a call (the whole estimate is charged either way). A
 * `max_tokens` the caller chose is the most the call may use: room for all of it is needed. Without one, the
 * completion part of the estimate is our own guess: room for the prompt is enough, the charge may overdraw the
 * window by that guess, and the real usage corrects it when the call ends. So a call is never refused forever,
 * or held back, because of our default.
 */
export function windowNeed(estimate: BoundedEstimate, cost: number): number {
  return estimate.callerMax ? cost : Math.max(1, Math.min(estimate.prompt, cost));
}

/**
 * The characters of completion one streamed chunk delivered to the caller: every choice's text, tool-call arguments
 * and other text fields of its delta (reasoning). Counted while a stream goes out, so a stream cut before its usage
 * arrived is charged at least what it delivered (deliveredTokens), not the default guess.
 */
export function deliveredChars(chunk: ChatCompletionChunk): number {
  let chars = 0;
  for (const choice of chunk.choices) {
    for (const [name, value] of Object.entries(choice.delta)) {
      if (typeof value === 'string' && name !== 'role') chars += value.length;
      else if (name === 'tool_calls' && Array.isArray(value)) {
        for (const call of value as Array<{ function?: { name?: unknown; arguments?: unknown } }>) {
          const fn = call?.function;
          if (typeof fn?.name === 'string') chars += fn.name.length;
          if (typeof fn?.arguments === 'string') chars += fn.arguments.length;
        }
      }
    }
  }
  return chars;
}

/** The tokens of delivered completion text, by the one estimate (four characters a token, core/tokens/token-estimate.ts). */
export function deliveredTokens(chars: number): number {
  return Math.ceil(Math.max(0, chars) / 4);
}
