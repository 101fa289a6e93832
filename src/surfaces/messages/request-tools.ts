import type { ChatRequestBody } from '../../providers/provider-contract.js';
import { chatFunctionOf, chatUserLocationOf, type AnthropicToolParam } from '../../wire/anthropic.js';
import type { ChatFunctionTool, ChatWebSearchOptions } from '../../wire/openai-chat.js';
import type { BlockContext } from './message-blocks.js';

type Tool = AnthropicToolParam;

/** Keys of a client tool that only hint (how it streams, who calls it, examples): left out, named. */
const HINT_KEYS: ReadonlySet<string> = new Set([
  'cache_control',
  'input_examples',
  'eager_input_streaming',
  'allowed_callers',
]);

/**
 * `tools` as chat function tools. A client tool (no `type`, or `custom`) is a function with its `input_schema` as
 * parameters (and `strict`); one marked `defer_loading: true` stays out of the model's view on Anthropic until a
 * tool search loads it, so it is left out here too (named: `tools[i]`). Anthropic's web search server tool
 * (`web_search_*`) is the chat body's `web_search_options`, the one built-in web search every provider maps to its
 * own; other server tools run on Anthropic's side only and are refused.
 */
export function mapTools(tools: Tool[], chat: ChatRequestBody, context: BlockContext): void {
  const functions: ChatFunctionTool[] = [];
  tools.forEach((tool, i) => {
    const at = `tools[${i}]`;
    const type = tool.type;
    if (type === undefined || type === null || type === 'custom') {
      if (tool.defer_loading === true)
        context.notes?.drop(
          at,
          "a deferred tool (defer_loading) is loaded by a tool search on Anthropic's side only; the model does not see it until then",
        );
      else functions.push(functionTool(tool, at, context));
    } else if (typeof type === 'string' && type.startsWith('web_search_')) {
      if (chat.web_search_options === undefined) chat.web_search_options = webSearchOptions(tool, at, context);
      else context.notes?.drop(at, 'a second web search tool: the first one is the search');
    } else {
      context.problems.add({
        field: `${at}.type`,
        problem: `server tools ("${String(type).slice(0, 64)}") run on Anthropic's side only`,
      });
    }
  });
  if (functions.length > 0) chat.tools = functions;
}

/** A client tool as a chat function (src/wire/anthropic.ts); the keys that mapping does not read are named as left out. */
function functionTool(tool: Tool, at: string, context: BlockContext): ChatFunctionTool {
  for (const [key, value] of Object.entries(tool)) {
    if (
      value === null ||
      value === undefined ||
      key === 'name' ||
      key === 'description' ||
      key === 'input_schema' ||
      key === 'type' ||
      key === 'strict' ||
      key === 'defer_loading'
    )
      continue;
    context.notes?.drop(
      `${at}.${key.slice(0, 64)}`,
      HINT_KEYS.has(key) ? "Anthropic's only" : 'has no equivalent for a non-Anthropic upstream',
    );
  }
  return chatFunctionOf(tool);
}

/**
 * Anthropic's web search tool as chat's `web_search_options`: `user_location` ({type: "approximate", city, region,
 * country, timezone}) is OpenAI's `{type: "approximate", approximate: {...}}`; the domain filters and `max_uses`
 * have no chat equivalent and are left out, named.
 */
function webSearchOptions(tool: Tool, at: string, context: BlockContext): ChatWebSearchOptions {
  const options: ChatWebSearchOptions = {};
  for (const [key, value] of Object.entries(tool)) {
    if (value === null || value === undefined || key === 'type' || key === 'name') continue;
    if (key === 'user_location' && typeof value === 'object') options.user_location = chatUserLocationOf(value);
    else
      context.notes?.drop(
        `${at}.${key.slice(0, 64)}`,
        'the web search of a non-Anthropic upstream takes no such setting',
      );
  }
  return options;
}
