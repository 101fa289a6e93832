import { isJsonObject, type JsonObject } from '../../wire/json.js';
import type {
  ApproximateLocation,
  ChatFunctionTool,
  ChatToolChoice,
  ChatWebSearchOptions,
} from '../../wire/openai-chat.js';
import { leaveOut, tolerantOnly, type TranslationContext } from './request-fields.js';
import { CHAT_NAME, type CallerTool, type ToolNames } from './tool-names.js';
import { FILE_SEARCH_FUNCTION_NAME } from '../file-search/tool-spec.js';
import { modelFunctionName } from '../../mcp/tool-names.js';

type Tool = JsonObject;

/** The one parameter of the function a freeform (`custom`) tool is declared as upstream: its raw text. */
export const CUSTOM_INPUT = 'input';

/** Built-in web search, under each name OpenAI has given it. */
const WEB_SEARCH = new Set([
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
]);

/** A tool of the request and where it is: `tools[3]`, or `input[0].tools[1]` in an `additional_tools` item. */
export interface ToolEntry {
  at: string;
  tool: unknown;
}

/**
 * The caller's tools as chat tools, and the names they have upstream (`names`, for the way back). Function tools
 * are declared as they are; a `namespace` tool's functions flattened (`<namespace>__<name>`, tool-names.ts); a
 * freeform `custom` tool (Codex's apply_patch) as a function of one string parameter, `input`, its grammar told to
 * the model in the parameter's description (no upstream but OpenAI can hold the model to a grammar); web search
 * as the chat body's `web_search_options`, which each provider turns into its own search tool (where none of the
 * model's upstreams has one, it is left out by name). `tool_search` is left out by name: the tools it finds are the
 * client's, and come back to a model that asked for them only through OpenAI's API. Other built-in tools are refused.
 */
export function chatTools(
  entries: readonly ToolEntry[],
  cx: TranslationContext,
  names: ToolNames,
): { tools: ChatFunctionTool[]; webSearch: ChatWebSearchOptions | undefined } {
  // Tools outside a namespace keep their own names: declared first, so a flattened name never takes one of theirs.
  for (const { tool } of entries) {
    if (
      isJsonObject(tool) &&
      (tool.type === 'function' || tool.type === 'custom') &&
      typeof tool.name === 'string' &&
      CHAT_NAME.test(tool.name)
    ) {
      names.declare({ kind: tool.type, name: tool.name }); // its problems, if any, are named below
    }
  }
  const out: ChatFunctionTool[] = [];
  let search: ChatWebSearchOptions | undefined;
  for (const { at, tool } of entries) {
    if (!isJsonObject(tool) || typeof tool.type !== 'string') {
      cx.problems.add({ field: `${at}.type`, problem: 'a tool must be an object with a string type' });
      continue;
    }
    if (tool.type === 'function' || tool.type === 'custom') {
      const fn = chatFunction(tool, at, undefined, cx, names);
      if (fn) out.push(fn);
    } else if (tool.type === 'namespace') {
      out.push(...namespaceFunctions(tool, at, cx, names));
    } else if (WEB_SEARCH.has(tool.type)) {
      search ??= webSearch(tool, at, cx);
    } else if (tool.type === 'file_search' && cx.fileSearch === true) {
      // Run by the gateway (surfaces/file-search/): the loop declares the function the model calls.
    } else if (tool.type === 'mcp' && cx.mcp === true) {
      // Run by the gateway (surfaces/mcp-tools/): the loop declares a function per tool of the server.
    } else if (tool.type === 'tool_search') {
      if (tolerantOnly(cx, `${at}.type`, 'tool_search tools'))
        leaveOut(
          cx,
          at,
          "the tools it finds are the client's own, which only OpenAI's Responses API hands to the model",
        );
    } else {
      cx.problems.add({
        field: `${at}.type`,
        problem: `built-in tools ("${tool.type.slice(0, 64)}") are not supported on a translated upstream`,
        allowed: ['function', 'custom', 'namespace', 'web_search'],
      });
    }
  }
  return { tools: out, webSearch: search };
}

/** Declares a tool's name in `names`; undefined (and a problem) when it is not one chat can take or is ambiguous. */
function declare(
  tool: Tool,
  at: string,
  namespace: string | undefined,
  cx: TranslationContext,
  names: ToolNames,
): string | undefined {
  const kind = tool.type === 'custom' ? 'custom' : 'function';
  const name = tool.name;
  if (
    typeof name !== 'string' ||
    name === '' ||
    (namespace === undefined && !CHAT_NAME.test(name)) ||
    name.length > 256
  ) {
    cx.problems.add({
      field: `${at}.name`,
      problem:
        namespace === undefined
          ? 'must be 1 to 64 letters, digits, underscores or dashes'
          : 'must be a string of 1 to 256 characters',
    });
    return undefined;
  }
  const caller: CallerTool = namespace === undefined ? { kind, name } : { kind, name, namespace };
  const chatName = names.declare(caller);
  if (chatName === undefined)
    cx.problems.add({
      field: `${at}.name`,
      problem: 'another tool of another type has this name; chat cannot tell their calls apart',
    });
  return chatName;
}

function chatFunction(
  tool: Tool,
  at: string,
  namespace: { name: string; description: unknown } | undefined,
  cx: TranslationContext,
  names: ToolNames,
): ChatFunctionTool | undefined {
  if (tool.type === 'custom' && !tolerantOnly(cx, `${at}.type`, 'freeform (custom) tools')) return undefined;
  const name = declare(tool, at, namespace?.name, cx, names);
  if (name === undefined) return undefined;
  const fn: ChatFunctionTool['function'] = { name };
  const description = [
    typeof namespace?.description === 'string' ? `(${namespace.name}: ${namespace.description})` : '',
    typeof tool.description === 'string' ? tool.description : '',
  ]
    .filter((text) => text !== '')
    .join('\n\n');
  if (description !== '') fn.description = description;
  if (tool.type === 'custom') {
    fn.parameters = {
      type: 'object',
      properties: { [CUSTOM_INPUT]: { type: 'string', description: inputDescription(tool.format) } },
      required: [CUSTOM_INPUT],
      additionalProperties: false,
    };
  } else {
    if (tool.parameters !== undefined && tool.parameters !== null) fn.parameters = tool.parameters;
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  }
  return { type: 'function', function: fn };
}

/** What the model is told of a freeform tool's input: raw text, and the grammar it must follow when there is one. */
function inputDescription(format: unknown): string {
  const plain = 'The raw text input of this tool, exactly as the tool takes it (not JSON).';
  if (!isJsonObject(format) || format.type !== 'grammar' || typeof format.definition !== 'string') return plain;
  const syntax = typeof format.syntax === 'string' ? format.syntax : 'grammar';
  return `${plain} It must match this ${syntax} grammar:\n${format.definition}`;
}

function namespaceFunctions(tool: Tool, at: string, cx: TranslationContext, names: ToolNames): ChatFunctionTool[] {
  if (!tolerantOnly(cx, `${at}.type`, 'namespace tools')) return [];
  if (typeof tool.name !== 'string' || tool.name === '' || tool.name.length > 256) {
    cx.problems.add({ field: `${at}.name`, problem: 'must be a string of 1 to 256 characters' });
    return [];
  }
  if (!Array.isArray(tool.tools)) {
    cx.problems.add({ field: `${at}.tools`, problem: 'must be a list of function or custom tools' });
    return [];
  }
  const namespace = { name: tool.name, description: tool.description };
  const out: ChatFunctionTool[] = [];
  tool.tools.forEach((inner: unknown, j) => {
    const innerAt = `${at}.tools[${j}]`;
    if (!isJsonObject(inner) || (inner.type !== 'function' && inner.type !== 'custom')) {
      cx.problems.add({
        field: `${innerAt}.type`,
        problem: 'a namespace holds function or custom tools',
        allowed: ['function', 'custom'],
      });
      return;
    }
    const fn = chatFunction(inner, innerAt, namespace, cx, names);
    if (fn) out.push(fn);
  });
  return out;
}

/** The parts of a web search's approximate location, in the order they are copied. */
const LOCATION_KEYS: ReadonlyArray<keyof ApproximateLocation> = ['city', 'country', 'region', 'timezone'];

/**
 * A web search tool as chat's `web_search_options` (its context size and approximate location carried; what chat
 * has no field for left out by name), or, where no upstream of the model searches, the whole tool left out by name.
 */
function webSearch(tool: Tool, at: string, cx: TranslationContext): ChatWebSearchOptions | undefined {
  if (!tolerantOnly(cx, `${at}.type`, 'web search tools')) return undefined;
  if (!cx.carries('web_search_options')) {
    leaveOut(cx, at, 'no upstream of this model can search the web');
    return undefined;
  }
  const options: ChatWebSearchOptions = {};
  if (typeof tool.search_context_size === 'string') options.search_context_size = tool.search_context_size;
  const location = tool.user_location;
  if (isJsonObject(location)) {
    const approximate: ApproximateLocation = {};
    for (const key of LOCATION_KEYS) if (typeof location[key] === 'string') approximate[key] = location[key];
    options.user_location = { type: 'approximate', approximate };
  }
  if (isJsonObject(tool.filters)) leaveOut(cx, `${at}.filters`, 'chat web search has no domain filters');
  if (tool.external_web_access === false)
    leaveOut(cx, `${at}.external_web_access`, "the upstream's search reaches the live web");
  const types = tool.search_content_types;
  if (Array.isArray(types) && types.some((type) => type !== 'text'))
    leaveOut(cx, `${at}.search_content_types`, 'a translated search returns text only');
  return options;
}

/** `tool_choice` as chat's, a named tool by its name upstream. */
export function chatToolChoice(choice: unknown, cx: TranslationContext, names: ToolNames): ChatToolChoice | undefined {
  if (choice === 'none' || choice === 'auto' || choice === 'required') return choice;
  const c = isJsonObject(choice) ? choice : undefined;
  if (c?.type === 'file_search' && cx.fileSearch === true)
    return { type: 'function', function: { name: FILE_SEARCH_FUNCTION_NAME } };
  // An MCP server's tool (`{type: "mcp", server_label, name}`) is its function; a whole server, any tool at all.
  if (c?.type === 'mcp' && cx.mcp === true && typeof c.server_label === 'string')
    return typeof c.name === 'string'
      ? { type: 'function', function: { name: modelFunctionName(c.server_label, c.name) } }
      : 'required';
  const namespace = typeof c?.namespace === 'string' ? c.namespace : undefined;
  if (c && (c.type === 'function' || c.type === 'custom') && typeof c.name === 'string') {
    if (
      (c.type === 'custom' || namespace !== undefined) &&
      !tolerantOnly(cx, 'tool_choice', 'choices of a custom or namespaced tool')
    )
      return undefined;
    return { type: 'function', function: { name: names.chatName(c.name, namespace) } };
  }
  cx.problems.add({
    field: 'tool_choice',
    problem: 'must be "none", "auto", "required" or {"type":"function","name":...} on a translated upstream',
  });
  return undefined;
}
