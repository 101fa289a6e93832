import type { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ToolCall } from '../../providers/provider-contract.js';
import { imageUrlOf, isTextBlock, type AnthropicBlockParam } from '../../wire/anthropic.js';
import { isJsonObject } from '../../wire/json.js';
import type { ChatImagePart, ChatTextPart } from '../../wire/openai-chat.js';
import type { TranslationNotes } from '../translation-notes.js';

type Block = AnthropicBlockParam;

/** What the block translations share: where problems go, and where left-out hints are named. */
export interface BlockContext {
  readonly problems: ProblemList;
  readonly notes: TranslationNotes | undefined;
  /**
   * Where the gateway runs the request's MCP servers: the function an MCP tool of an earlier turn is (by the server's
   * name as the caller gave it), so that its `mcp_tool_use` / `mcp_tool_result` blocks are the conversation's call
   * and result. Absent: such blocks are refused.
   */
  readonly mcp?: ((server: string, tool: string) => string) | undefined;
}

/**
 * A block's `cache_control` is a prompt-cache breakpoint: a hint that only Anthropic reads (other providers cache
 * a repeated prefix on their own). Left out, and named.
 */
export function noteCacheControl(block: Block, at: string, context: BlockContext): void {
  if (block.cache_control !== undefined && block.cache_control !== null) {
    context.notes?.drop(
      `${at}.cache_control`,
      "a prompt-cache breakpoint is Anthropic's only (other providers cache repeated prefixes on their own)",
    );
  }
}

/** System text (a string, or text blocks) as one string; `at` names it (`system`, or `messages[i].content`). */
export function systemText(system: string | Block[] | undefined, at: string, context: BlockContext): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system
    .map((block, i) => {
      noteCacheControl(block, `${at}[${i}]`, context);
      if (isTextBlock(block)) return block.text;
      context.problems.add({ field: `${at}[${i}].type`, problem: 'must be a text block' });
      return '';
    })
    .join('\n\n');
}

/** A user turn: its `tool_result` blocks as `tool` messages (first, as chat orders them), the rest as one user message. */
export function userMessages(content: string | Block[], at: string, context: BlockContext): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const results: ChatMessage[] = [];
  const parts: Array<ChatTextPart | ChatImagePart> = [];
  content.forEach((block, j) => {
    const where = `${at}.content[${j}]`;
    noteCacheControl(block, where, context);
    if (isTextBlock(block)) parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') {
      const image = imagePart(block.source, where, context.problems);
      if (image) parts.push(image);
    } else if (block.type === 'tool_result') results.push(toolResult(block, where, context.problems));
    else
      context.problems.add({
        field: `${where}.type`,
        problem: `blocks of type "${String(block.type).slice(0, 64)}" cannot be sent to a non-Anthropic upstream`,
        allowed: ['text', 'image', 'tool_result'],
      });
  });
  const only = parts.length === 1 ? parts[0] : undefined;
  if (parts.length > 0) results.push({ role: 'user', content: only?.type === 'text' ? only.text : parts });
  return results;
}

/** An image block as chat's image part (a base64 source as a `data:` URL, src/wire/anthropic.ts). */
function imagePart(source: unknown, at: string, problems: ProblemList): ChatImagePart | undefined {
  const url = imageUrlOf(source);
  if (url !== undefined) return { type: 'image_url', image_url: { url } };
  problems.add({ field: `${at}.source`, problem: 'must be a base64 image (media_type, data) or a URL image' });
  return undefined;
}

/** A tool result as a `tool` message; an error result says so in its text (chat has no is_error). */
function toolResult(block: Block, at: string, problems: ProblemList): ChatMessage {
  const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : '';
  if (id === '') problems.add({ field: `${at}.tool_use_id`, problem: 'must be the id of a tool_use block' });
  let text = '';
  if (typeof block.content === 'string') text = block.content;
  else if (Array.isArray(block.content)) {
    for (const [k, part] of block.content.entries()) {
      if (isJsonObject(part) && isTextBlock(part)) text += part.text;
      else
        problems.add({
          field: `${at}.content[${k}].type`,
          problem: 'only text is carried in a tool result to a non-Anthropic upstream',
        });
    }
  }
  return { role: 'tool', tool_call_id: id, content: block.is_error === true ? `Error: ${text}` : text };
}

/**
 * An assistant turn: text, and `tool_use` blocks as `tool_calls`. Its `thinking` / `redacted_thinking` blocks are the
 * earlier answer's own reasoning, signed for the Anthropic model that wrote it: no other provider can read them, and
 * nothing the caller asked for is in them, so they are left out (not named as dropped).
 */
export function assistantMessage(content: string | Block[], at: string, context: BlockContext): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text = '';
  const calls: ToolCall[] = [];
  content.forEach((block, j) => {
    noteCacheControl(block, `${at}.content[${j}]`, context);
    if (isTextBlock(block)) text += block.text;
    else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      context.problems.add({
        field: `${at}.content[${j}].type`,
        problem: `blocks of type "${String(block.type).slice(0, 64)}" cannot be sent to a non-Anthropic upstream`,
        allowed: ['text', 'tool_use', 'thinking'],
      });
    }
  });
  return {
    role: 'assistant',
    content: calls.length > 0 && text === '' ? null : text,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
}

/**
 * An assistant turn where the gateway runs MCP servers: its `mcp_tool_use` blocks are calls (named as the gateway
 * offers the tool) and its `mcp_tool_result` blocks their results, so the turn is split where a result ends a call:
 * the assistant's text and calls so far, then the results, then the rest of the turn.
 */
export function assistantTurn(content: string | Block[], at: string, context: BlockContext): ChatMessage[] {
  const mcp = context.mcp;
  if (typeof content === 'string' || !mcp || !content.some((b) => b.type.startsWith('mcp_tool_')))
    return [assistantMessage(content, at, context)];
  const out: ChatMessage[] = [];
  let segment: Block[] = [];
  let results: ChatMessage[] = [];
  const flush = (): void => {
    if (segment.length > 0) out.push(assistantMessage(segment, at, context));
    out.push(...results);
    segment = [];
    results = [];
  };
  content.forEach((block, j) => {
    const where = `${at}.content[${j}]`;
    if (block.type === 'mcp_tool_result') {
      results.push(toolResult({ ...block, type: 'tool_result' }, where, context.problems));
      return;
    }
    if (results.length > 0) flush();
    if (block.type !== 'mcp_tool_use') {
      segment.push(block);
      return;
    }
    const { id, name, server_name: server } = block;
    if (typeof id !== 'string' || typeof name !== 'string' || typeof server !== 'string') {
      context.problems.add({ field: where, problem: 'an mcp_tool_use block needs a string id, name and server_name' });
      return;
    }
    segment.push({ type: 'tool_use', id, name: mcp(server, name), input: block.input ?? {} });
  });
  flush();
  return out;
}
