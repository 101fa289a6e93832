import type { ToolCall, Usage, UsageAnomaly } from '../contract.js';
import { anthropicParts, saneTokens, usageFrom, withParts } from '../usage-figures.js';
import { chatUsageOf } from '../usage-shapes.js';
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

/** Anthropic usage (input and output tokens, cache reads and writes counted as input and kept as its parts) as the gateway's. */
export function usageOf(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const found: UsageAnomaly[] = [];
  const prompt = saneTokens(u.input_tokens, found) + saneTokens(u.cache_read_input_tokens, found) + saneTokens(u.cache_creation_input_tokens, found);
  return withParts(usageFrom(prompt, saneTokens(u.output_tokens, found), undefined, found), anthropicParts(u, found));
}

/** A field Anthropic sends as a string (an id, a name): '' for anything else, never String() of an upstream object. */
export const textField = (value: unknown): string => (typeof value === 'string' ? value : '');

export interface TranslatedCompletion {
  completion: ChatCompletion;
  usage: Usage | undefined;
}

/**
 * An Anthropic `message` as an OpenAI `chat.completion` (pure). Text blocks are joined into `content`, `tool_use`
 * blocks become `tool_calls` (input serialised as the arguments string: a non-object input is passed on as its
 * JSON text, which the Responses and Messages surfaces then refuse, src/surfaces/tool-arguments.ts). A block that
 * is not an object is skipped, and a field of the wrong type read as absent, as the OpenAI-compatible answers are
 * normalised (src/providers/openai-compatible/normalise-answer.ts). Returns undefined for a body that is not a
 * message (not an object of `type: "message"` with a `content` array): the upstream's failure.
 */
export function fromAnthropicMessage(message: unknown, upstreamModel: string, created: number): TranslatedCompletion | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const m = message as { id?: unknown; type?: unknown; model?: unknown; content?: unknown; stop_reason?: unknown; usage?: unknown };
  if (m.type !== 'message' || !Array.isArray(m.content)) return undefined;
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of m.content as unknown[]) {
    if (typeof block !== 'object' || block === null) continue;
    const b = block as Record<string, unknown>;
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') {
      toolCalls.push({ id: textField(b.id), type: 'function', function: { name: textField(b.name), arguments: JSON.stringify(b.input ?? {}) } });
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
  if (usage) completion.usage = chatUsageOf(usage);
  return { completion, usage };
}
