import { GatewayError } from '../../errors/gateway-error.js';
import type { ToolCall, Usage } from '../../providers/contract.js';
import { checkedUsage, saneTokens } from '../../providers/usage-figures.js';

/** Anthropic's usage: input and output tokens (cache reads when the upstream reported cached prompt tokens). */
export function messageUsage(reported: Usage | null | undefined): Record<string, number> {
  // Every figure shown is checked (the counts were by the provider; the details never were).
  const usage = checkedUsage(reported ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }) as Usage & Record<string, unknown>;
  const cached = saneTokens((usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined)?.cached_tokens);
  return {
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    ...(cached > 0 ? { cache_read_input_tokens: cached } : {}),
  };
}

/** A chat finish reason as Anthropic's stop reason. */
export function stopReasonOf(finishReason: string | null | undefined): string {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'tool_calls' || finishReason === 'function_call') return 'tool_use';
  if (finishReason === 'content_filter') return 'refusal';
  return 'end_turn';
}

/** A tool call's arguments as the `input` object Anthropic's `tool_use` blocks carry. */
export function toolInput(call: ToolCall, upstream: string | undefined): Record<string, unknown> {
  if (call.function.arguments.trim() === '') return {};
  try {
    const input = JSON.parse(call.function.arguments) as unknown;
    if (typeof input === 'object' && input !== null && !Array.isArray(input)) return input as Record<string, unknown>;
  } catch {
    // refused below
  }
  throw new GatewayError('upstream_invalid_response', { upstream, reason: `the arguments of tool call ${call.id.slice(0, 64)} are not a JSON object` });
}

interface ChatCompletionBody {
  id?: unknown;
  model?: unknown;
  choices?: Array<{ message?: { content?: unknown; tool_calls?: ToolCall[] }; finish_reason?: string | null }>;
  usage?: Usage | null;
}

/** A `chat.completion` (JSON text) as an Anthropic Messages object. */
export function completionToMessage(completionText: string, id: string, model: string): Record<string, unknown> {
  const completion = JSON.parse(completionText) as ChatCompletionBody;
  const choice = completion.choices?.[0];
  const content: Array<Record<string, unknown>> = [];
  const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
  if (text !== '') content.push({ type: 'text', text });
  for (const call of choice?.message?.tool_calls ?? []) content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInput(call, undefined) });
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: typeof completion.model === 'string' ? completion.model : model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: messageUsage(completion.usage),
  };
}
