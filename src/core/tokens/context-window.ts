import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatMessage, ChatRequestBody } from '../../providers/provider-contract.js';
import { messageText, toolsText } from './token-estimate.js';
import type { Encoding } from './token-count-lane.js';
import { countTexts, type CountClient } from './token-counter.js';

/** The BPE of OpenAI model families; undefined for models of other providers (estimated instead). */
export function encodingFor(upstreamModel: string): Encoding | undefined {
  const m = upstreamModel.toLowerCase();
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|gpt-oss)/.test(m)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5)/.test(m)) return 'cl100k_base';
  return undefined;
}

/**
 * A prompt's size, message by message, so that dropping turns costs a subtraction rather than a new count. `each[i]`
 * is message i's share; `total(sum, count)` the prompt's tokens for messages whose shares add up to `sum`.
 */
interface PromptSize {
  each: number[];
  total(sum: number, count: number): number;
}

/**
 * OpenAI families: their BPE (o200k_base or cl100k_base), counted off the event loop (token-counter.ts), plus
 * OpenAI's framing (3 tokens per message, 3 to prime the reply). Other models: a documented estimate, 1 token per 4
 * characters plus 4 per message (their tokenizers are not public; the provider's own count is what is billed).
 */
async function measurePrompt(
  messages: readonly ChatMessage[],
  upstreamModel: string,
  tools: unknown,
  client: CountClient | undefined,
): Promise<PromptSize> {
  const encoding = encodingFor(upstreamModel);
  const toolText = toolsText(tools);
  if (!encoding) {
    // The same figure as estimatePromptTokens, shared out by message.
    return {
      each: messages.map((m) => messageText(m).length),
      total: (sum, count) => Math.ceil((sum + toolText.length) / 4) + 4 * count,
    };
  }
  const counts = await countTexts(encoding, [...messages.map(messageText), toolText], client);
  const toolTokens = counts.pop() ?? 0;
  return { each: counts.map((n, i) => 3 + n + (messages[i]?.name ? 1 : 0)), total: (sum) => 3 + sum + toolTokens };
}

/** Prompt tokens of a conversation (see measurePrompt). */
export async function countPromptTokens(
  messages: readonly ChatMessage[],
  upstreamModel: string,
  tools: unknown,
  client?: CountClient,
): Promise<number> {
  const size = await measurePrompt(messages, upstreamModel, tools, client);
  return size.total(sum(size.each), messages.length);
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}

/** A certain upper bound without a tokenizer: no BPE token is shorter than one UTF-8 byte. */
function byteBound(messages: readonly ChatMessage[], tools: unknown): number {
  let bytes = Buffer.byteLength(toolsText(tools));
  for (const m of messages) bytes += Buffer.byteLength(messageText(m)) + 8;
  return bytes + 3;
}

export const CONTEXT_OVERFLOW_HEADER = 'x-context-overflow';

/**
 * Checks prompt + max_tokens against the model's context window before any upstream call. Cheap when the
 * prompt clearly fits (its byte length bounds its tokens); counts only near the limit, each message once. With
 * `X-Context-Overflow: truncate`, the oldest turns (a user message and the answers and tool results after it)
 * are dropped, system messages and the last turn kept, until it fits. Returns the body to send (the same object
 * when nothing changed). `client`: a count for a caller that has left is abandoned.
 */
export async function fitContextWindow(
  body: ChatRequestBody,
  model: { id: string; upstreamModel: string; contextWindow: number | undefined },
  overflow: string | undefined,
  client?: CountClient,
): Promise<ChatRequestBody> {
  const window = model.contextWindow;
  if (window === undefined) return body;
  const maxTokens =
    body.max_tokens ?? (typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : 0);
  if (byteBound(body.messages, body.tools) + maxTokens <= window) return body;
  const size = await measurePrompt(body.messages, model.upstreamModel, body.tools, client);
  let prompt = size.total(sum(size.each), body.messages.length);
  if (prompt + maxTokens <= window) return body;
  if (overflow === 'truncate') {
    const trimmed = dropOldestTurns(body.messages, size, window - maxTokens);
    if ('messages' in trimmed) return { ...body, messages: trimmed.messages };
    prompt = trimmed.prompt;
  }
  throw new GatewayError('context_length_exceeded', {
    model: model.id,
    context_window: window,
    prompt_tokens: prompt,
    max_tokens: maxTokens,
    ...(overflow === 'truncate'
      ? { truncated_to_last_turn: true }
      : { hint: `send ${CONTEXT_OVERFLOW_HEADER}: truncate to drop the oldest turns` }),
  });
}

/**
 * The conversation without as few of its oldest turns as make its prompt at most `room` tokens (non-system messages
 * from the first user message up to a later one are dropped), or, when even the last turn alone is too long, that
 * turn's prompt tokens. One pass: each dropped turn subtracts its messages' shares.
 */
function dropOldestTurns(
  messages: readonly ChatMessage[],
  size: PromptSize,
  room: number,
): { messages: ChatMessage[] } | { prompt: number } {
  const turnStarts: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'user') turnStarts.push(i);
  });
  const dropped = (m: ChatMessage) => m.role !== 'system' && m.role !== 'developer';
  let kept = sum(size.each);
  let count = messages.length;
  let prompt = size.total(kept, count);
  for (let turn = 1; turn < turnStarts.length; turn++) {
    for (let i = turnStarts[turn - 1] as number; i < (turnStarts[turn] as number); i++) {
      if (!dropped(messages[i] as ChatMessage)) continue;
      kept -= size.each[i] ?? 0;
      count--;
    }
    prompt = size.total(kept, count);
    if (prompt <= room) {
      const [first, cut] = [turnStarts[0] as number, turnStarts[turn] as number];
      return { messages: messages.filter((m, i) => !dropped(m) || i < first || i >= cut) };
    }
  }
  return { prompt };
}
