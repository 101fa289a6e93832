import { GatewayError } from '../../errors/gateway-error.js';
import {
  anthropicToolChoiceOf,
  anthropicToolOf,
  anthropicWebSearchTool,
  imageSourceOf,
  type AnthropicContentBlock,
  type AnthropicImageBlock,
  type AnthropicMessageParam,
  type AnthropicRequest,
  type AnthropicTextBlock,
  type AnthropicTool,
  type AnthropicToolResultBlock,
} from '../../wire/anthropic.js';
import { objectOf, type JsonObject } from '../../wire/json.js';
import { imageUrlOfPart, parseToolArguments, textOf } from '../chat-content.js';
import type { ChatMessage, ChatRequestBody } from '../provider-contract.js';
import { callerMarked, isMark, markBreakpoints, type PromptCacheMode } from './cache-breakpoints.js';
import { fileBlockOf } from './file-blocks.js';
import { thinkingFor } from './thinking.js';
import { anthropicFormatOf } from './structured-output.js';

/** Anthropic requires `max_tokens`; used when the caller sets none (configurable per upstream). */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

/** Chat fields Anthropic has under the same name and meaning, passed through as they are; other fields are not sent. */
const SAME_NAME = ['top_k', 'metadata', 'thinking', 'service_tier'] as const;

/**
 * The chat body in Anthropic Messages form (pure; no I/O). System and developer messages become `system`; tool
 * calls become `tool_use` blocks and tool results `tool_result` blocks in a user turn; consecutive turns of one
 * role are merged (Anthropic wants user and assistant to alternate). Fields with no Anthropic meaning are dropped,
 * not forwarded: a provider that rejects unknown fields would fail on them. A `cache_control` the caller put on a
 * content part or a tool is kept; with `promptCache: 'auto'` and no such mark, the gateway marks its own
 * breakpoints (markBreakpoints).
 */
export function toAnthropicRequest(
  body: ChatRequestBody,
  upstreamModel: string,
  defaultMaxTokens = DEFAULT_ANTHROPIC_MAX_TOKENS,
  promptCache: PromptCacheMode = 'off',
): AnthropicRequest {
  if (typeof body.n === 'number' && body.n !== 1) {
    throw new GatewayError('validation_failed', {
      errors: [{ field: 'n', problem: 'Anthropic answers one choice per call: n must be 1' }],
    });
  }
  const system: string[] = [];
  let systemMarked = false;
  const messages: AnthropicMessageParam[] = [];
  for (const message of body.messages) {
    if (message.role === 'system' || message.role === 'developer') {
      system.push(textOf(message.content));
      systemMarked ||= Array.isArray(message.content) && message.content.some((part) => isMark(part.cache_control));
      continue;
    }
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks = blocksOf(message);
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  }
  const out: AnthropicRequest = {
    model: upstreamModel,
    messages,
    max_tokens: callerMaxTokens(body) ?? defaultMaxTokens,
  };
  // The caller's own breakpoints in the system prompt need its blocks; otherwise one string, as before.
  if (systemMarked) out.system = systemBlocks(body.messages);
  else if (system.length > 0) out.system = system.join('\n\n');
  if (body.temperature !== undefined) out.temperature = body.temperature;
  if (body.top_p !== undefined) out.top_p = body.top_p;
  if (body.stop !== undefined && body.stop !== null)
    out.stop_sequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  if (body.stream === true) out.stream = true;
  const tools: AnthropicTool[] = Array.isArray(body.tools) ? body.tools.map(toAnthropicTool) : [];
  const search = anthropicWebSearchTool(body.web_search_options);
  if (search) tools.push(search);
  if (tools.length > 0) out.tools = tools;
  const choice = anthropicToolChoiceOf(body.tool_choice, body.parallel_tool_calls);
  if (choice) out.tool_choice = choice;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  for (const key of SAME_NAME) if (body[key] !== undefined) out[key] = body[key];
  // reasoning_effort as thinking, unless the caller set Anthropic's own `thinking` (passed on above).
  if (out.thinking === undefined) {
    const target = {
      model: upstreamModel,
      maxTokens: callerMaxTokens(body),
      defaultMaxTokens,
      unsignedToolTurn: unsignedToolTurn(messages),
    };
    Object.assign(out, thinkingFor(body.reasoning_effort, target));
  }
  // Structured output (JSON Schema) as Anthropic's own, beside any effort the thinking settings put there.
  const format = anthropicFormatOf(body.response_format, upstreamModel);
  if (format) out.output_config = { ...out.output_config, format };
  if (promptCache === 'auto' && !callerMarked(out)) markBreakpoints(out, messages);
  return out;
}

/** The system and developer messages as text blocks, each content part its own, with the caller's `cache_control`. */
function systemBlocks(messages: readonly ChatMessage[]): AnthropicTextBlock[] {
  const blocks: AnthropicTextBlock[] = [];
  for (const message of messages) {
    if (message.role !== 'system' && message.role !== 'developer') continue;
    if (typeof message.content === 'string') {
      if (message.content !== '') blocks.push({ type: 'text', text: message.content });
      continue;
    }
    for (const part of message.content ?? []) {
      if (part.type !== 'text' || typeof part.text !== 'string' || part.text === '') continue;
      blocks.push(
        isMark(part.cache_control)
          ? { type: 'text', text: part.text, cache_control: part.cache_control }
          : { type: 'text', text: part.text },
      );
    }
  }
  return blocks;
}

/** Whether the last assistant turn called tools without a thinking block first (src/providers/anthropic/thinking.ts). */
function unsignedToolTurn(messages: AnthropicMessageParam[]): boolean {
  const last = messages.findLast((m) => m.role === 'assistant');
  const first = last?.content[0]?.type;
  return (
    last !== undefined &&
    first !== 'thinking' &&
    first !== 'redacted_thinking' &&
    last.content.some((b) => b.type === 'tool_use')
  );
}

function callerMaxTokens(body: ChatRequestBody): number | undefined {
  return body.max_tokens ?? (typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : undefined);
}

function blocksOf(message: ChatMessage): AnthropicContentBlock[] {
  if (message.role === 'tool') {
    const result: AnthropicToolResultBlock = {
      type: 'tool_result',
      tool_use_id: message.tool_call_id ?? '',
      content: textOf(message.content),
    };
    // A breakpoint on a part of the result marks the result (its text is one block upstream).
    const mark = Array.isArray(message.content)
      ? message.content.findLast((part) => isMark(part.cache_control))?.cache_control
      : undefined;
    if (mark !== undefined) result.cache_control = mark;
    return [result];
  }
  const blocks: AnthropicContentBlock[] = [];
  if (typeof message.content === 'string') {
    if (message.content.length > 0) blocks.push({ type: 'text', text: message.content });
  } else if (Array.isArray(message.content)) {
    for (const part of message.content) blocks.push(toAnthropicPart(part));
  }
  for (const call of message.tool_calls ?? []) {
    blocks.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parseToolArguments(call.function.arguments, call.id, 'Anthropic'),
    });
  }
  // An assistant turn with neither text nor tool calls would be refused upstream; an empty text is not allowed.
  if (blocks.length === 0) blocks.push({ type: 'text', text: ' ' });
  return blocks;
}

/**
 * OpenAI content parts: text as text; an image URL (data: or https:) as an Anthropic image source; a file with its
 * bytes as a document (file-blocks.ts); any other part (a `document`...) as it is.
 */
function toAnthropicPart(part: JsonObject): AnthropicContentBlock {
  if (part.type === 'text') return withMark({ type: 'text', text: String(part.text ?? '') }, part);
  if (part.type === 'image_url') return withMark({ type: 'image', source: imageSourceOf(imageUrlOfPart(part)) }, part);
  if (part.type === 'file') {
    const block = fileBlockOf(part);
    if (block && isMark(part.cache_control)) block.cache_control = part.cache_control;
    return block ?? part;
  }
  return part;
}

/** The caller's `cache_control` on a content part or a tool (the OpenAI-shaped form SDKs and routers use) kept on its block. */
function withMark<T extends AnthropicTextBlock | AnthropicImageBlock | AnthropicTool>(block: T, from: JsonObject): T {
  if (isMark(from.cache_control)) block.cache_control = from.cache_control;
  return block;
}

/** A chat function tool as Anthropic's, with the caller's `cache_control` on the tool kept. */
function toAnthropicTool(tool: unknown): AnthropicTool {
  const out = anthropicToolOf(tool);
  const from = objectOf(tool);
  return from ? withMark(out, from) : out;
}
