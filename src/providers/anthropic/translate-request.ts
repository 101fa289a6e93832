import { GatewayError } from '../../errors/gateway-error.js';
import { imageSource, parseToolArguments, textOf } from '../chat-content.js';
import type { ChatMessage, ChatRequestBody } from '../contract.js';
import { callerMarked, isMark, markBreakpoints, type PromptCacheMode } from './cache-breakpoints.js';
import { thinkingFor } from './thinking.js';

/** Anthropic requires `max_tokens`; used when the caller sets none (configurable per upstream). */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

type Block = Record<string, unknown>;

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

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
): Record<string, unknown> {
  if (typeof body.n === 'number' && body.n !== 1) {
    throw new GatewayError('validation_failed', { errors: [{ field: 'n', problem: 'Anthropic answers one choice per call: n must be 1' }] });
  }
  const system: string[] = [];
  let systemMarked = false;
  const messages: AnthropicMessage[] = [];
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
  const out: Record<string, unknown> = {
    model: upstreamModel,
    messages,
    max_tokens: callerMaxTokens(body) ?? defaultMaxTokens,
  };
  // The caller's own breakpoints in the system prompt need its blocks; otherwise one string, as before.
  if (systemMarked) out.system = systemBlocks(body.messages);
  else if (system.length > 0) out.system = system.join('\n\n');
  if (body.temperature !== undefined) out.temperature = body.temperature;
  if (body.top_p !== undefined) out.top_p = body.top_p;
  if (body.stop !== undefined && body.stop !== null) out.stop_sequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  if (body.stream === true) out.stream = true;
  const tools = Array.isArray(body.tools) ? body.tools.map(toAnthropicTool) : [];
  const search = webSearchTool(body.web_search_options);
  if (search) tools.push(search);
  if (tools.length > 0) out.tools = tools;
  const choice = toAnthropicToolChoice(body.tool_choice, body.parallel_tool_calls);
  if (choice) out.tool_choice = choice;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  for (const key of SAME_NAME) if (body[key] !== undefined) out[key] = body[key];
  // reasoning_effort as thinking, unless the caller set Anthropic's own `thinking` (passed on above).
  if (out.thinking === undefined) {
    const target = { model: upstreamModel, maxTokens: callerMaxTokens(body), defaultMaxTokens, unsignedToolTurn: unsignedToolTurn(messages) };
    Object.assign(out, thinkingFor(body.reasoning_effort, target));
  }
  if (promptCache === 'auto' && !callerMarked(out)) markBreakpoints(out, messages);
  return out;
}

/** The system and developer messages as text blocks, each content part its own, with the caller's `cache_control`. */
function systemBlocks(messages: readonly ChatMessage[]): Block[] {
  const blocks: Block[] = [];
  for (const message of messages) {
    if (message.role !== 'system' && message.role !== 'developer') continue;
    if (typeof message.content === 'string') {
      if (message.content !== '') blocks.push({ type: 'text', text: message.content });
      continue;
    }
    for (const part of message.content ?? []) {
      if (part.type !== 'text' || typeof part.text !== 'string' || part.text === '') continue;
      blocks.push(isMark(part.cache_control) ? { type: 'text', text: part.text, cache_control: part.cache_control } : { type: 'text', text: part.text });
    }
  }
  return blocks;
}

/** Whether the last assistant turn called tools without a thinking block first (src/providers/anthropic/thinking.ts). */
function unsignedToolTurn(messages: AnthropicMessage[]): boolean {
  const last = messages.findLast((m) => m.role === 'assistant');
  const first = last?.content[0]?.type;
  return last !== undefined && first !== 'thinking' && first !== 'redacted_thinking' && last.content.some((b) => b.type === 'tool_use');
}

function callerMaxTokens(body: ChatRequestBody): number | undefined {
  return body.max_tokens ?? (typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : undefined);
}

function blocksOf(message: ChatMessage): Block[] {
  if (message.role === 'tool') {
    const result: Block = { type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: textOf(message.content) };
    // A breakpoint on a part of the result marks the result (its text is one block upstream).
    const mark = Array.isArray(message.content) ? message.content.findLast((part) => isMark(part.cache_control))?.cache_control : undefined;
    if (mark !== undefined) result.cache_control = mark;
    return [result];
  }
  const blocks: Block[] = [];
  if (typeof message.content === 'string') {
    if (message.content.length > 0) blocks.push({ type: 'text', text: message.content });
  } else if (Array.isArray(message.content)) {
    for (const part of message.content) blocks.push(toAnthropicPart(part));
  }
  for (const call of message.tool_calls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseToolArguments(call.function.arguments, call.id, 'Anthropic') });
  }
  // An assistant turn with neither text nor tool calls would be refused upstream; an empty text is not allowed.
  if (blocks.length === 0) blocks.push({ type: 'text', text: ' ' });
  return blocks;
}

/** OpenAI content parts: text as text; an image URL (data: or https:) as an Anthropic image source. */
function toAnthropicPart(part: Record<string, unknown>): Block {
  if (part.type === 'text') return withMark({ type: 'text', text: String(part.text ?? '') }, part);
  if (part.type === 'image_url') {
    const source = imageSource(part);
    if ('url' in source) return withMark({ type: 'image', source: { type: 'url', url: source.url } }, part);
    return withMark({ type: 'image', source: { type: 'base64', media_type: source.mediaType, data: source.data } }, part);
  }
  return part;
}

/** The caller's `cache_control` on a content part or a tool (the OpenAI-shaped form SDKs and routers use) kept on its block. */
function withMark(block: Block, from: Record<string, unknown>): Block {
  if (isMark(from.cache_control)) block.cache_control = from.cache_control;
  return block;
}



function toAnthropicTool(tool: unknown): Block {
  const fn = (tool as { function?: { name?: unknown; description?: unknown; parameters?: unknown } } | null)?.function;
  const out: Block = { name: String(fn?.name ?? ''), input_schema: fn?.parameters ?? { type: 'object', properties: {} } };
  if (typeof fn?.description === 'string') out.description = fn.description;
  return typeof tool === 'object' && tool !== null ? withMark(out, tool as Record<string, unknown>) : out;
}

/**
 * Chat's `web_search_options` (the gateway's representation of a built-in web search) as Anthropic's server-side
 * web search tool, with the caller's approximate location. `search_context_size` has no Anthropic equivalent: how
 * much it reads is Anthropic's choice.
 */
function webSearchTool(options: unknown): Block | undefined {
  if (typeof options !== 'object' || options === null) return undefined;
  const tool: Block = { type: 'web_search_20250305', name: 'web_search' };
  const approximate = ((options as { user_location?: { approximate?: unknown } }).user_location)?.approximate;
  if (typeof approximate === 'object' && approximate !== null) {
    const location: Block = { type: 'approximate' };
    for (const key of ['city', 'region', 'country', 'timezone']) {
      const value = (approximate as Record<string, unknown>)[key];
      if (typeof value === 'string') location[key] = value;
    }
    tool.user_location = location;
  }
  return tool;
}

function toAnthropicToolChoice(choice: unknown, parallel: unknown): Block | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined || choice === null) return parallel === false ? { type: 'auto', ...noParallel } : undefined;
  if (choice === 'auto') return { type: 'auto', ...noParallel };
  if (choice === 'required') return { type: 'any', ...noParallel };
  if (choice === 'none') return { type: 'none' };
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  if (typeof name === 'string') return { type: 'tool', name, ...noParallel };
  return undefined;
}
