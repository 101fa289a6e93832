import { finishReasonOf } from '../../wire/anthropic.js';
import { fieldsOf, isJsonObject, objectOf, textField } from '../../wire/json.js';
import type { ToolCall, Usage } from '../provider-contract.js';
import { anthropicUsage } from '../usage-figures.js';
import { chatUsageOf } from '../usage-shapes.js';
import type { ChatCompletion } from '../completion-json.js';

/** Anthropic usage (input and output tokens, cache reads and writes counted as input and kept as its parts) as the gateway's. */
export function usageOf(usage: unknown): Usage | undefined {
  const u = fieldsOf(usage);
  return u && anthropicUsage(u, []);
}

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
export function fromAnthropicMessage(
  message: unknown,
  upstreamModel: string,
  created: number,
): TranslatedCompletion | undefined {
  const m = objectOf(message);
  if (m?.type !== 'message' || !Array.isArray(m.content)) return undefined;
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of m.content) {
    if (!isJsonObject(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') {
      toolCalls.push({
        id: textField(block.id),
        type: 'function',
        function: { name: textField(block.name), arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  const usage = usageOf(m.usage);
  const messageOut: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: toolCalls.length > 0 && text === '' ? null : text,
  };
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
