import { GatewayError } from '../errors/gateway-error.js';
import type { ChatMessage, ChatRequestBody } from '../providers/contract.js';
import { estimatePromptTokens, messageText, toolsText } from './token-estimate.js';

type Encoder = { countTokens(text: string): number };

/** BPE encoders are large (~2 MB of ranks): loaded on first need, once. */
const encoders = new Map<string, Promise<Encoder>>();

function encoder(name: 'o200k_base' | 'cl100k_base'): Promise<Encoder> {
  let loading = encoders.get(name);
  if (!loading) {
    loading = name === 'o200k_base' ? import('gpt-tokenizer/encoding/o200k_base') : import('gpt-tokenizer/encoding/cl100k_base');
    encoders.set(name, loading);
  }
  return loading;
}

/** The BPE of OpenAI model families; undefined for models of other providers (estimated instead). */
export function encodingFor(upstreamModel: string): 'o200k_base' | 'cl100k_base' | undefined {
  const m = upstreamModel.toLowerCase();
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|gpt-oss)/.test(m)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5)/.test(m)) return 'cl100k_base';
  return undefined;
}

/**
 * Prompt tokens of a conversation. OpenAI families: their BPE (o200k_base or cl100k_base) plus OpenAI's framing
 * (3 tokens per message, 3 to prime the reply). Other models: a documented estimate, 1 token per 4 characters
 * plus 4 per message (their tokenizers are not public; the provider's own count is what is billed).
 */
export async function countPromptTokens(messages: readonly ChatMessage[], upstreamModel: string, tools: unknown): Promise<number> {
  const encoding = encodingFor(upstreamModel);
  if (!encoding) return estimatePromptTokens(messages, tools);
  const toolText = toolsText(tools);
  const bpe = await encoder(encoding);
  let tokens = 3;
  for (const message of messages) tokens += 3 + bpe.countTokens(messageText(message)) + (message.name ? 1 : 0);
  return tokens + (toolText ? bpe.countTokens(toolText) : 0);
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
 * prompt clearly fits (its byte length bounds its tokens); counts only near the limit. With
 * `X-Context-Overflow: truncate`, the oldest turns (a user message and the answers and tool results after it)
 * are dropped, system messages and the last turn kept, until it fits. Returns the body to send (the same object
 * when nothing changed).
 */
export async function fitContextWindow(
  body: ChatRequestBody,
  model: { id: string; upstreamModel: string; contextWindow: number | undefined },
  overflow: string | undefined,
): Promise<ChatRequestBody> {
  const window = model.contextWindow;
  if (window === undefined) return body;
  const maxTokens = body.max_tokens ?? (typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : 0);
  if (byteBound(body.messages, body.tools) + maxTokens <= window) return body;
  let messages = body.messages;
  let prompt = await countPromptTokens(messages, model.upstreamModel, body.tools);
  if (prompt + maxTokens <= window) return body;
  if (overflow === 'truncate') {
    for (let trimmed = dropOldestTurn(messages); trimmed; trimmed = dropOldestTurn(messages)) {
      messages = trimmed;
      prompt = await countPromptTokens(messages, model.upstreamModel, body.tools);
      if (prompt + maxTokens <= window) return { ...body, messages };
    }
  }
  throw new GatewayError('context_length_exceeded', {
    model: model.id,
    context_window: window,
    prompt_tokens: prompt,
    max_tokens: maxTokens,
    ...(overflow === 'truncate' ? { truncated_to_last_turn: true } : { hint: `send ${CONTEXT_OVERFLOW_HEADER}: truncate to drop the oldest turns` }),
  });
}

/** The conversation without its oldest non-system turn, or undefined when only one turn is left. */
function dropOldestTurn(messages: readonly ChatMessage[]): ChatMessage[] | undefined {
  const turnStarts = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
  if (turnStarts.length < 2) return undefined;
  const [first, second] = turnStarts as [number, number];
  return messages.filter((m, i) => m.role === 'system' || m.role === 'developer' || i < first || i >= second);
}
