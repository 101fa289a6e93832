import { GatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ChatRequestBody, ToolCall } from '../../providers/contract.js';

/** An Anthropic Messages request that passed `messagesBodySchema` (blocks are checked here, naming each one). */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: Array<{ role: 'user' | 'assistant'; content: string | Array<Record<string, unknown>> }>;
  system?: string | Array<Record<string, unknown>>;
  tools?: Array<Record<string, unknown>>;
  tool_choice?: { type: string; name?: string; disable_parallel_tool_use?: boolean };
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  thinking?: { type: string; budget_tokens?: number };
  metadata?: { user_id?: string };
  stream?: boolean;
  [field: string]: unknown;
}

/** Fields the translation honours or can leave out; any other is a 400 naming it. */
const TRANSLATED_FIELDS = new Set(['model', 'max_tokens', 'messages', 'system', 'tools', 'tool_choice', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'thinking', 'metadata', 'stream', 'service_tier']);

/**
 * A Messages request as the chat request every provider serves (pure). System text becomes the first message;
 * a user turn's `tool_result` blocks become `tool` messages (before the rest of that turn, as chat orders them);
 * an assistant's `tool_use` blocks its `tool_calls`. `thinking` blocks of earlier turns carry nothing a
 * non-Anthropic model can read and are left out; what cannot be expressed in chat at all (documents, server
 * tools) is refused naming the block.
 */
export function messagesToChat(body: MessagesRequest): ChatRequestBody {
  const problems = new ProblemList();
  for (const field of Object.keys(body)) if (!TRANSLATED_FIELDS.has(field)) problems.add({ field, problem: 'is not supported when the model is served by a non-Anthropic upstream' });
  const messages: ChatMessage[] = [];
  const system = systemText(body.system, problems);
  if (system !== '') messages.push({ role: 'system', content: system });
  body.messages.forEach((message, i) => {
    if (message.role === 'assistant') messages.push(assistantMessage(message.content, `messages[${i}]`, problems));
    else messages.push(...userMessages(message.content, `messages[${i}]`, problems));
  });
  const chat: ChatRequestBody = { model: body.model, messages, max_tokens: body.max_tokens };
  if (body.temperature !== undefined) chat.temperature = body.temperature;
  if (body.top_p !== undefined) chat.top_p = body.top_p;
  if (body.top_k !== undefined) chat.top_k = body.top_k; // passed on: servers that know it use it, others refuse it
  if (body.stop_sequences !== undefined && body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  if (body.stream === true) chat.stream = true;
  if (typeof body.metadata?.user_id === 'string') chat.user = body.metadata.user_id;
  if (body.thinking?.type === 'enabled') chat.reasoning_effort = effortOf(body.thinking.budget_tokens);
  if (body.tools !== undefined && body.tools.length > 0) chat.tools = body.tools.map((tool, i) => chatTool(tool, i, problems));
  if (body.tool_choice !== undefined) Object.assign(chat, toolChoice(body.tool_choice));
  if (!problems.empty) throw new GatewayError('capability_not_supported', problems.details());
  return chat;
}

/** Anthropic's thinking budget as a reasoning effort: under 4k tokens low, under 16k medium, else high. */
function effortOf(budget: number | undefined): string {
  if (budget === undefined || budget >= 16_384) return 'high';
  return budget < 4_096 ? 'low' : 'medium';
}

function systemText(system: MessagesRequest['system'], problems: ProblemList): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system
    .map((block, i) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text; // cache_control: Anthropic's only
      problems.add({ field: `system[${i}].type`, problem: 'must be a text block' });
      return '';
    })
    .join('\n\n');
}

function userMessages(content: string | Array<Record<string, unknown>>, at: string, problems: ProblemList): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const results: ChatMessage[] = [];
  const parts: Array<Record<string, unknown>> = [];
  content.forEach((block, j) => {
    const where = `${at}.content[${j}]`;
    if (block.type === 'text' && typeof block.text === 'string') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') {
      const image = imagePart(block.source, where, problems);
      if (image) parts.push(image);
    } else if (block.type === 'tool_result') results.push(toolResult(block, where, problems));
    else problems.add({ field: `${where}.type`, problem: `blocks of type "${String(block.type).slice(0, 64)}" cannot be sent to a non-Anthropic upstream`, allowed: ['text', 'image', 'tool_result'] });
  });
  if (parts.length > 0) results.push({ role: 'user', content: parts.length === 1 && parts[0]?.type === 'text' ? (parts[0].text as string) : parts });
  return results;
}

function imagePart(source: unknown, at: string, problems: ProblemList): Record<string, unknown> | undefined {
  const s = source as { type?: unknown; media_type?: unknown; data?: unknown; url?: unknown } | undefined;
  if (s?.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string') return { type: 'image_url', image_url: { url: `data:${s.media_type};base64,${s.data}` } };
  if (s?.type === 'url' && typeof s.url === 'string') return { type: 'image_url', image_url: { url: s.url } };
  problems.add({ field: `${at}.source`, problem: 'must be a base64 image (media_type, data) or a URL image' });
  return undefined;
}

/** A tool result as a `tool` message; an error result says so in its text (chat has no is_error). */
function toolResult(block: Record<string, unknown>, at: string, problems: ProblemList): ChatMessage {
  const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : '';
  if (id === '') problems.add({ field: `${at}.tool_use_id`, problem: 'must be the id of a tool_use block' });
  let text = '';
  if (typeof block.content === 'string') text = block.content;
  else if (Array.isArray(block.content)) {
    for (const [k, part] of (block.content as Array<Record<string, unknown>>).entries()) {
      if (part.type === 'text' && typeof part.text === 'string') text += part.text;
      else problems.add({ field: `${at}.content[${k}].type`, problem: 'only text is carried in a tool result to a non-Anthropic upstream' });
    }
  }
  return { role: 'tool', tool_call_id: id, content: block.is_error === true ? `Error: ${text}` : text };
}

function assistantMessage(content: string | Array<Record<string, unknown>>, at: string, problems: ProblemList): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text = '';
  const calls: ToolCall[] = [];
  content.forEach((block, j) => {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      problems.add({ field: `${at}.content[${j}].type`, problem: `blocks of type "${String(block.type).slice(0, 64)}" cannot be sent to a non-Anthropic upstream`, allowed: ['text', 'tool_use', 'thinking'] });
    }
  });
  return { role: 'assistant', content: calls.length > 0 && text === '' ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
}

function chatTool(tool: Record<string, unknown>, i: number, problems: ProblemList): Record<string, unknown> {
  if (tool.type !== undefined && tool.type !== 'custom') {
    problems.add({ field: `tools[${i}].type`, problem: `server tools ("${String(tool.type).slice(0, 64)}") run on Anthropic's side only` });
  }
  const fn: Record<string, unknown> = { name: tool.name, parameters: tool.input_schema ?? { type: 'object', properties: {} } };
  if (typeof tool.description === 'string') fn.description = tool.description;
  return { type: 'function', function: fn };
}

function toolChoice(choice: NonNullable<MessagesRequest['tool_choice']>): Record<string, unknown> {
  const parallel = choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  if (choice.type === 'any') return { tool_choice: 'required', ...parallel };
  if (choice.type === 'none') return { tool_choice: 'none' };
  if (choice.type === 'tool' && typeof choice.name === 'string') return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallel };
  return { tool_choice: 'auto', ...parallel };
}
