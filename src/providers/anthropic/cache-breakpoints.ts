/**
 * Prompt-cache breakpoints of a request translated for Anthropic (docs/usage.md, "Prompt caching"). Anthropic
 * caches a prompt's prefix only where a block carries `cache_control` (at most 4 per request); a prefix is the
 * tools, then the system prompt, then the messages, up to and including the marked block. OpenAI and Gemini cache
 * repeated prefixes on their own, so only this provider needs the gateway to mark them.
 */

import {
  hasCacheControl,
  isTextBlock,
  type AnthropicCacheControl,
  type AnthropicMessageParam,
  type AnthropicRequest,
} from '../../wire/anthropic.js';
import { isJsonObject } from '../../wire/json.js';

/**
 * Whether the gateway marks a translated request's prompt-cache breakpoints (a model's `prompt_cache`,
 * docs/usage.md "Prompt caching"): `auto` marks them unless the caller marked its own; `off` never does.
 */
export type PromptCacheMode = 'auto' | 'off';

/** A prompt-cache breakpoint with Anthropic's default lifetime (5 minutes, refreshed by every read). */
const BREAKPOINT: Readonly<AnthropicCacheControl> = Object.freeze({ type: 'ephemeral' });

/** A `cache_control` value worth forwarding: an object (Anthropic judges its fields). */
export function isMark(value: unknown): value is AnthropicCacheControl {
  return isJsonObject(value);
}

/** Whether the translated request already holds a breakpoint of the caller's (on a tool, a system block or a message block). */
export function callerMarked(out: AnthropicRequest): boolean {
  if (out.tools?.some(hasCacheControl)) return true;
  if (Array.isArray(out.system) && out.system.some(hasCacheControl)) return true;
  return out.messages.some((m) => m.content.some(hasCacheControl));
}

/**
 * The gateway's prompt-cache breakpoints, at most four (Anthropic's limit), where an agent loop or a chat resends
 * the same prefix: the last tool (the tools are the start of the prompt), the system prompt, the last block of the
 * last message (this call writes the whole conversation to the cache; the next call reads it), and the last block
 * of the user turn before it (the point the previous call wrote, so it is read even when this turn added more than
 * the 20 blocks Anthropic looks back from a breakpoint). A prefix below the model's minimum (1,024 or 2,048 tokens)
 * is simply not cached, at no charge. Only blocks the translation built are changed (a copy where the block is the
 * caller's own part: the body may be translated again for another target).
 */
export function markBreakpoints(out: AnthropicRequest, messages: AnthropicMessageParam[]): void {
  const tools = out.tools;
  const lastTool = tools?.[tools.length - 1];
  if (tools && lastTool) tools[tools.length - 1] = { ...lastTool, cache_control: BREAKPOINT };
  if (typeof out.system === 'string' && out.system.trim() !== '')
    out.system = [{ type: 'text', text: out.system, cache_control: BREAKPOINT }];
  const last = messages.length - 1;
  if (last < 0) return;
  const lastMessage = messages[last];
  if (lastMessage) markLastBlock(lastMessage);
  for (let i = last - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') {
      markLastBlock(message);
      return;
    }
  }
}

/** Marks a message's last block that may carry a breakpoint (not a thinking block, not a blank text). */
function markLastBlock(message: AnthropicMessageParam): void {
  for (let i = message.content.length - 1; i >= 0; i--) {
    const block = message.content[i];
    if (block === undefined || block.type === 'thinking' || block.type === 'redacted_thinking') continue;
    if (block.type === 'text' && !(isTextBlock(block) && block.text.trim() !== '')) continue;
    message.content[i] = { ...block, cache_control: BREAKPOINT };
    return;
  }
}
