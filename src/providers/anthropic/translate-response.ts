import type { ToolCall, Usage, UsageAnomaly } from '../contract.js';
import { saneTokens, usageFrom } from '../usage-figures.js';
import type { ChatCompletion } from '../completion-json.js';

/** Anthropic `stop_reason` in OpenAI `finish_reason` terms. */
export function finishReasonOf(stopReason: unknown): string | null {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    case null:
    case undefined:
      return null;
    default:
      return 'stop';
  }
}

/** Anthropic usage (input and output tokens, cache reads and writes counted as input) as OpenAI usage. */
export function usageOf(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const found: UsageAnomaly[] = [];
  const prompt = saneTokens(u.input_tokens, found) + saneTokens(u.cache_read_input_tokens, found) + saneTokens(u.cache_creation_input_tokens, found);
  return usageFrom(prompt, saneTokens(u.output_tokens, found), undefined, found);
}

export interface TranslatedCompletion {
  completion: ChatCompletion;
  usage: Usage | undefined;
}

/**
 * An Anthropic `message` as an OpenAI `chat.completion` (pure). Text blocks are joined into `content`, `tool_use`
 * blocks become `tool_calls` (input serialised as the arguments string). Returns undefined for a body that is not
 * a message.
 */
export function fromAnthropicMessage(message: unknown, upstreamModel: string, created: number): TranslatedCompletion | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const m = message as { id?: unknown; type?: unknown; model?: unknown; content?: unknown; stop_reason?: unknown; usage?: unknown };
  if (m.type !== 'message' || !Array.isArray(m.content)) return undefined;
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of m.content as Array<Record<string, unknown>>) {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: String(block.id ?? ''), type: 'function', function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const usage = usageOf(m.usage);
  const messageOut: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: toolCalls.length > 0 && text === '' ? null : text };
  if (toolCalls.length > 0) messageOut.tool_calls = toolCalls;
  const completion: ChatCompletion = {
    id: typeof m.id === 'string' ? m.id : 'msg',
    object: 'chat.completion',
    created,
    model: typeof m.model === 'string' ? m.model : upstreamModel,
    choices: [{ index: 0, message: messageOut, logprobs: null, finish_reason: finishReasonOf(m.stop_reason) }],
  };
  if (usage) completion.usage = usage;
  return { completion, usage };
}
