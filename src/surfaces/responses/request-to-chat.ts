import { GatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ChatRequestBody, ToolCall } from '../../providers/provider-contract.js';
import { checkFields, chatSettings, leaveOut, tolerantOnly, type TranslationContext } from './request-fields.js';
import { chatToolChoice, chatTools, CUSTOM_INPUT, type ToolEntry } from './request-tools.js';
import { isJsonObject, type JsonObject } from '../../wire/json.js';
import type { ChatFilePart, ChatImagePart, ChatTextPart } from '../../wire/openai-chat.js';
import {
  chatFilePartOf,
  chatImagePartOf,
  chatTextPartOf,
  type ResponsesInputItem,
  type ResponsesRequest,
} from '../../wire/openai-responses.js';
import { ToolNames } from './tool-names.js';
import { MCP_TYPES, mcpInputItem } from './mcp-input.js';

/** How a translation is made: tolerant (naming what it leaves out in `notes`) or exact (`notes` absent). */
export interface TranslationOptions {
  notes?: TranslationContext['notes'];
  /** Whether every upstream of the model carries a chat field; absent: all do. */
  carries?: TranslationContext['carries'];
  /** Whether the gateway runs the request's `file_search` tool (TranslationContext.fileSearch). */
  fileSearch?: boolean;
  /** Whether the gateway runs the request's `mcp` tools (TranslationContext.mcp). */
  mcp?: boolean;
}

/** What the translation of one request produced: the chat request, and the names its tools have upstream. */
export interface TranslatedRequest {
  chat: ChatRequestBody;
  names: ToolNames;
}

/**
 * A Responses request as the chat request every provider serves (pure: no I/O). `history` is the conversation of
 * the response named by `previous_response_id`, already loaded, as chat messages. Maps what has a chat
 * equivalent (request-tools.ts: namespace, custom and web search tools), leaves out by name what only tags or hints
 * (request-fields.ts), and refuses, naming the field, what would change the answer and has no mapping: other
 * built-in tools, items only OpenAI's own Responses API understands, unknown fields. The exact translation
 * (`notes` absent) maps nothing and leaves nothing out: such a request is refused, to go natively where it can.
 */
export function responsesToChat(
  body: ResponsesRequest,
  history: readonly ChatMessage[] = [],
  options: TranslationOptions = {},
): TranslatedRequest {
  const problems = new ProblemList();
  const cx: TranslationContext = {
    problems,
    notes: options.notes,
    carries: options.carries ?? (() => true),
    fileSearch: options.fileSearch === true,
    mcp: options.mcp === true,
  };
  const names = new ToolNames();
  checkFields(body, cx);
  // Tools first: the calls in `input` are named by the names their tools have upstream.
  const entries = toolEntries(body, cx);
  const tools = entries.length > 0 ? chatTools(entries, cx, names) : undefined;
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === 'string' && body.instructions !== '')
    messages.push({ role: 'system', content: body.instructions });
  messages.push(...history);
  inputMessages(body.input, messages, { cx, names, calledIds: new Set(callIdsOf(history)) });
  if (messages.length === 0) problems.add({ field: 'input', problem: 'must hold at least one item' });
  const chat: ChatRequestBody = { model: body.model, messages };
  chatSettings(body, chat, cx);
  const format = responseFormat(body.text?.format, problems);
  if (format) chat.response_format = format;
  if (tools && tools.tools.length > 0) chat.tools = tools.tools;
  if (tools?.webSearch) chat.web_search_options = tools.webSearch;
  if (body.tool_choice !== undefined && body.tool_choice !== null)
    chat.tool_choice = chatToolChoice(body.tool_choice, cx, names);
  if (!problems.empty) throw unsupportedError(problems);
  return { chat, names };
}

/**
 * The request's tools: its `tools`, and those of `additional_tools` input items (how Codex declares its code-mode
 * tools: in the conversation, not in `tools`), which chat can only declare with the others, for the whole request.
 */
function toolEntries(body: ResponsesRequest, cx: TranslationContext): ToolEntry[] {
  const entries: ToolEntry[] = Array.isArray(body.tools)
    ? body.tools.map((tool, i) => ({ at: `tools[${i}]`, tool }))
    : [];
  if (typeof body.input === 'string') return entries;
  body.input.forEach((item, i) => {
    if (item.type !== 'additional_tools' || !tolerantOnly(cx, `input[${i}].type`, 'items of type "additional_tools"'))
      return;
    if (!Array.isArray(item.tools)) cx.problems.add({ field: `input[${i}].tools`, problem: 'must be a list of tools' });
    else item.tools.forEach((tool: unknown, j) => entries.push({ at: `input[${i}].tools[${j}]`, tool }));
  });
  return entries;
}

function unsupportedError(problems: ProblemList): GatewayError {
  const details = problems.details();
  const onlyUnsupported = details.errors.every(
    (e) => e.problem.includes('not supported') || e.problem.includes('not translated'),
  );
  return new GatewayError(onlyUnsupported ? 'capability_not_supported' : 'validation_failed', details);
}

/** The call ids the assistant turns of `messages` made (a function_call_output must answer one of them). */
function* callIdsOf(messages: readonly ChatMessage[]): Iterable<string> {
  for (const message of messages) for (const call of message.tool_calls ?? []) yield call.id;
}

/** What reading the input items needs: the context, the tools' names upstream, the call ids made so far. */
interface InputScope {
  cx: TranslationContext;
  names: ToolNames;
  calledIds: Set<string>;
}

const CALL_TYPES = new Set(['function_call', 'custom_tool_call']);
const OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output']);

function inputMessages(input: ResponsesRequest['input'], out: ChatMessage[], scope: InputScope): void {
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return;
  }
  const { cx, calledIds } = scope;
  const problems = cx.problems;
  let pendingCalls: ToolCall[] | undefined; // consecutive calls become one assistant turn
  input.forEach((item, i) => {
    const at = `input[${i}]`;
    const type = item.type ?? 'message';
    if (CALL_TYPES.has(type)) {
      const call = toolCall(item, at, scope);
      if (!call) return;
      calledIds.add(call.id);
      const last = out[out.length - 1];
      if (pendingCalls && last?.tool_calls === pendingCalls) pendingCalls.push(call);
      else if (last?.role === 'assistant' && last.tool_calls === undefined && pendingCalls === undefined) {
        pendingCalls = [call];
        last.tool_calls = pendingCalls; // text then calls in one assistant turn, as chat has them
      } else {
        pendingCalls = [call];
        out.push({ role: 'assistant', content: null, tool_calls: pendingCalls });
      }
      return;
    }
    if (type === 'additional_tools') return; // declared with the request's tools (toolEntries)
    if (cx.mcp === true && MCP_TYPES.has(type)) {
      // The MCP items of earlier turns, where the gateway runs the request's MCP tools (mcp-input.ts).
      const read = mcpInputItem(item, at, problems);
      if (read?.call) {
        calledIds.add(read.call.id);
        const last = out[out.length - 1];
        if (pendingCalls && last?.tool_calls === pendingCalls) pendingCalls.push(read.call);
        else {
          pendingCalls = [read.call];
          out.push({ role: 'assistant', content: null, tool_calls: pendingCalls });
        }
      } else if (read?.messages) {
        pendingCalls = undefined;
        out.push(...read.messages);
      }
      return;
    }
    // An earlier search the gateway ran (the agents SDK replays them): its passages went into that answer already.
    if (type === 'file_search_call' && (cx.fileSearch === true || cx.notes !== undefined)) return;
    if (type === 'reasoning') {
      // The upstream's own (encrypted) state of an earlier answer: nothing another provider can read.
      if (tolerantOnly(cx, `${at}.type`, 'items of type "reasoning"'))
        leaveOut(cx, at, "a reasoning item is an OpenAI model's own state; a translated upstream cannot read it");
      return;
    }
    pendingCalls = undefined;
    if (OUTPUT_TYPES.has(type)) {
      if (
        type === 'custom_tool_call_output' &&
        !tolerantOnly(cx, `${at}.type`, 'items of type "custom_tool_call_output"')
      )
        return;
      const callId = item.call_id;
      if (typeof callId !== 'string' || callId === '')
        problems.add({ field: `${at}.call_id`, problem: 'must be a non-empty string' });
      else if (!calledIds.has(callId))
        problems.add({
          field: `${at}.call_id`,
          problem: 'does not match the call_id of a function_call earlier in the conversation',
        });
      const output = outputText(item.output, `${at}.output`, problems);
      if (typeof callId === 'string' && output !== undefined)
        out.push({ role: 'tool', tool_call_id: callId, content: output });
      return;
    }
    if (type === 'message') {
      const message = inputMessage(item, at, problems);
      if (message) out.push(message);
      return;
    }
    problems.add({
      field: `${at}.type`,
      problem: `items of type "${String(type).slice(0, 64)}" are not supported on a translated upstream`,
      allowed: [
        'message',
        'function_call',
        'function_call_output',
        'custom_tool_call',
        'custom_tool_call_output',
        'reasoning',
      ],
    });
  });
}

const ROLES: ReadonlySet<unknown> = new Set(['user', 'assistant', 'system', 'developer']);
const isRole = (role: unknown): role is 'user' | 'assistant' | 'system' | 'developer' => ROLES.has(role);

function inputMessage(item: ResponsesInputItem, at: string, problems: ProblemList): ChatMessage | undefined {
  const role = item.role;
  if (!isRole(role)) {
    problems.add({ field: `${at}.role`, problem: 'must be one of the allowed values', allowed: [...ROLES] });
    return undefined;
  }
  const content = item.content;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content)) {
    problems.add({ field: `${at}.content`, problem: 'must be a string or a list of content parts' });
    return undefined;
  }
  if (role === 'assistant') {
    // Earlier answers come back as output_text (or refusal) parts: chat carries them as the turn's text.
    let text = '';
    content.forEach((part: unknown, j) => {
      const p: JsonObject = isJsonObject(part) ? part : {};
      if ((p.type === 'output_text' || p.type === 'input_text') && typeof p.text === 'string') text += p.text;
      else if (p.type === 'refusal' && typeof p.refusal === 'string') text += p.refusal;
      else
        problems.add({
          field: `${at}.content[${j}].type`,
          problem: 'must be output_text or refusal in an assistant message',
          allowed: ['output_text', 'refusal'],
        });
    });
    return { role: 'assistant', content: text };
  }
  const parts: Array<ChatTextPart | ChatImagePart | ChatFilePart> = [];
  content.forEach((part: unknown, j) => {
    const chatPart = contentPart(isJsonObject(part) ? part : {}, `${at}.content[${j}]`, problems);
    if (chatPart) parts.push(chatPart);
  });
  return { role, content: parts };
}

/** An input part as chat's (src/wire/openai-responses.ts): text, or an image by its URL. */
function contentPart(
  part: JsonObject,
  at: string,
  problems: ProblemList,
): ChatTextPart | ChatImagePart | ChatFilePart | undefined {
  const text = chatTextPartOf(part);
  if (text) return text;
  if (part.type === 'input_file') {
    // By id (a gateway file goes inline upstream: core/files/file-forwarding.ts) or inline data; a URL has no chat form.
    const file = chatFilePartOf(part);
    if (!file)
      problems.add({
        field: `${at}.file_id`,
        problem: 'must have a file_id or file_data (file_url is not supported on a translated upstream)',
      });
    return file;
  }
  if (part.type === 'input_image') {
    const image = chatImagePartOf(part);
    if (!image)
      problems.add({
        field: `${at}.image_url`,
        problem: 'must be a URL or a data: URL (file_id images are not supported on a translated upstream)',
      });
    return image;
  }
  problems.add({
    field: `${at}.type`,
    problem: `content parts of type "${String(part.type).slice(0, 64)}" are not supported on a translated upstream`,
    allowed: ['input_text', 'input_image', 'input_file'],
  });
  return undefined;
}

/**
 * A `function_call` or `custom_tool_call` item as a chat tool call, named as its tool is upstream (a namespaced
 * function by its flat name; a custom tool's raw input as the arguments `{"input": ...}`).
 */
function toolCall(item: ResponsesInputItem, at: string, { cx, names }: InputScope): ToolCall | undefined {
  const problems = cx.problems;
  const custom = item.type === 'custom_tool_call';
  const { call_id: id, name } = item;
  const namespace = item.namespace ?? undefined;
  if (custom && !tolerantOnly(cx, `${at}.type`, 'items of type "custom_tool_call"')) return undefined;
  if (namespace !== undefined && !tolerantOnly(cx, `${at}.namespace`, 'calls of namespaced tools')) return undefined;
  const args = custom ? item.input : item.arguments;
  if (typeof id !== 'string' || id === '')
    problems.add({ field: `${at}.call_id`, problem: 'must be a non-empty string' });
  if (typeof name !== 'string' || name === '')
    problems.add({ field: `${at}.name`, problem: 'must be a non-empty string' });
  if (namespace !== undefined && typeof namespace !== 'string')
    problems.add({ field: `${at}.namespace`, problem: 'must be a string' });
  if (typeof args !== 'string')
    problems.add({
      field: custom ? `${at}.input` : `${at}.arguments`,
      problem: custom ? 'must be a string' : 'must be a string (the JSON of the arguments)',
    });
  if (typeof id !== 'string' || id === '' || typeof name !== 'string' || name === '' || typeof args !== 'string')
    return undefined;
  const chatName = names.chatName(name, typeof namespace === 'string' ? namespace : undefined);
  return {
    id,
    type: 'function',
    function: { name: chatName, arguments: custom ? JSON.stringify({ [CUSTOM_INPUT]: args }) : args },
  };
}

/** A function_call_output's output: a string, or a list of input_text parts (joined). */
function outputText(output: unknown, at: string, problems: ProblemList): string | undefined {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) {
    const texts = output.map((part: unknown) =>
      isJsonObject(part) && part.type === 'input_text' && typeof part.text === 'string' ? part.text : undefined,
    );
    if (texts.every((text) => text !== undefined)) return texts.join('');
  }
  problems.add({ field: at, problem: 'must be a string or a list of input_text parts' });
  return undefined;
}

/** `text.format` as chat's `response_format`. */
function responseFormat(format: unknown, problems: ProblemList): JsonObject | undefined {
  if (format === undefined || format === null) return undefined;
  const f: JsonObject = isJsonObject(format) ? format : {};
  if (f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  if (f.type === 'json_schema') {
    if (typeof f.name !== 'string' || typeof f.schema !== 'object' || f.schema === null) {
      problems.add({ field: 'text.format', problem: 'a json_schema format needs a name and a schema object' });
      return undefined;
    }
    const schema: JsonObject = { name: f.name, schema: f.schema };
    if (typeof f.strict === 'boolean') schema.strict = f.strict;
    if (typeof f.description === 'string') schema.description = f.description;
    return { type: 'json_schema', json_schema: schema };
  }
  problems.add({
    field: 'text.format.type',
    problem: 'must be one of the allowed values',
    allowed: ['text', 'json_object', 'json_schema'],
  });
  return undefined;
}
