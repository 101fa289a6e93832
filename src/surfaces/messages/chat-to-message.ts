import type { Usage } from '../../providers/provider-contract.js';
import { checkedUsage } from '../../providers/usage-figures.js';
import { messagesUsageOf } from '../../providers/usage-shapes.js';
import { stopReasonOf, type AnthropicMessage, type AnthropicUsage } from '../../wire/anthropic.js';
import type { JsonObject } from '../../wire/json.js';
import { parseCompletionAnswer } from '../../wire/openai-chat.js';
import { argumentsObject, completionToolCalls, cutShort, invalidArguments } from '../tool-arguments.js';

/**
 * Anthropic's usage of a chat usage (src/providers/usage-shapes.ts: `input_tokens` without the cache reads and
 * writes, which are `cache_read_input_tokens` and `cache_creation_input_tokens` when there were some).
 */
export function messageUsage(reported: Usage | null | undefined): AnthropicUsage {
  // Every figure shown is checked (an OpenAI usage's `*_details` become the usage's parts there).
  return messagesUsageOf(checkedUsage(reported ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }));
}

/**
 * A tool call's arguments as the `input` object Anthropic's `tool_use` blocks carry (src/surfaces/tool-arguments.ts:
 * not a JSON object is `upstream_invalid_response`; in an answer cut short, the cut call's input is `{}`).
 */
function toolInput(args: string, id: string, cut: boolean): JsonObject {
  const input = argumentsObject(args);
  if (input !== undefined) return input;
  if (cut) return {};
  throw invalidArguments(id);
}

/** A `chat.completion` (JSON text) as an Anthropic Messages object. */
export function completionToMessage(completionText: string, id: string, model: string): AnthropicMessage {
  const completion = parseCompletionAnswer(completionText);
  const choice = completion.choices?.[0];
  const content: AnthropicMessage['content'] = [];
  const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
  if (text !== '') content.push({ type: 'text', text });
  const cut = cutShort(choice?.finish_reason);
  completionToolCalls(choice?.message?.tool_calls).forEach((call, i) => {
    // The id a streamed call without one gets (message-stream.ts), by its place among the calls.
    const callId = call.id ?? `toolu_${id}_${i}`;
    content.push({
      type: 'tool_use',
      id: callId,
      name: call.name ?? '',
      input: toolInput(call.arguments ?? '', callId, cut),
    });
  });
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
