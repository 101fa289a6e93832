import { GatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ChatRequestBody, ToolCall } from '../../providers/contract.js';
import type { ResponsesRequest } from './responses-types.js';

/**
 * The fields of a Responses request that the translation honours or can safely leave out. Anything else is a
 * 400 naming it: a field that cannot reach the model must not be dropped in silence.
 */
const TRANSLATED_FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'temperature',
  'top_p',
  'max_output_tokens',
  'text',
  'reasoning',
  'metadata',
  'store',
  'previous_response_id',
  'stream',
  'stream_options',
  'user',
  'service_tier',
  'prompt_cache_key',
  'safety_identifier',
  'truncation',
  'include',
  'top_logprobs',
  'background',
]);

/** Chat fields with the same name and meaning in both APIs: copied as they are. */
const SAME_NAME_FIELDS = ['temperature', 'top_p', 'parallel_tool_calls', 'user', 'service_tier', 'prompt_cache_key', 'safety_identifier'] as const;

/**
 * A Responses request as the chat request every provider serves (pure: no I/O). `history` is the conversation of
 * the response named by `previous_response_id`, already loaded, as chat messages. Refuses, naming the field,
 * what the chat model cannot carry: built-in tools, items only OpenAI's own Responses API understands, options
 * without a chat equivalent.
 */
export function responsesToChat(body: ResponsesRequest, history: readonly ChatMessage[] = []): ChatRequestBody {
  const problems = new ProblemList();
  const unsupported = (field: string, problem: string) => problems.add({ field, problem });
  for (const field of Object.keys(body)) {
    if (!TRANSLATED_FIELDS.has(field)) unsupported(field, 'is not supported by this gateway on the Responses route');
  }
  if (body.background === true) unsupported('background', 'background responses are not supported; send the request without it');
  if (body.truncation !== undefined && body.truncation !== 'disabled' && body.truncation !== null) {
    unsupported('truncation', 'only "disabled" is supported (send X-Context-Overflow: truncate to drop the oldest turns)');
  }
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === 'string' && body.instructions !== '') messages.push({ role: 'system', content: body.instructions });
  messages.push(...history);
  inputMessages(body.input, messages, problems, new Set(callIdsOf(history)));
  if (messages.length === 0) problems.add({ field: 'input', problem: 'must hold at least one item' });

  const chat: ChatRequestBody = { model: body.model, messages };
  for (const field of SAME_NAME_FIELDS) if (body[field] !== undefined && body[field] !== null) (chat as Record<string, unknown>)[field] = body[field];
  if (typeof body.max_output_tokens === 'number') chat.max_tokens = body.max_output_tokens;
  if (body.stream === true) chat.stream = true;
  const effort = body.reasoning?.effort;
  if (typeof effort === 'string') chat.reasoning_effort = effort;
  if (body.top_logprobs !== undefined && body.top_logprobs !== null) unsupported('top_logprobs', 'log probabilities are not translated');
  const format = responseFormat(body.text?.format, problems);
  if (format) chat.response_format = format;
  if (body.tools !== undefined && body.tools.length > 0) chat.tools = body.tools.map((tool, i) => chatTool(tool, i, problems));
  if (body.tool_choice !== undefined) chat.tool_choice = toolChoice(body.tool_choice, problems);
  if (!problems.empty) throw unsupportedError(problems);
  return chat;
}

function unsupportedError(problems: ProblemList): GatewayError {
  const details = problems.details();
  const onlyUnsupported = details.errors.every((e) => e.problem.includes('not supported') || e.problem.includes('not translated'));
  return new GatewayError(onlyUnsupported ? 'capability_not_supported' : 'validation_failed', details);
}

/** The call ids the assistant turns of `messages` made (a function_call_output must answer one of them). */
function* callIdsOf(messages: readonly ChatMessage[]): Iterable<string> {
  for (const message of messages) for (const call of message.tool_calls ?? []) yield call.id;
}

function inputMessages(input: ResponsesRequest['input'], out: ChatMessage[], problems: ProblemList, calledIds: Set<string>): void {
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return;
  }
  let pendingCalls: ToolCall[] | undefined; // consecutive function_call items become one assistant turn
  input.forEach((item, i) => {
    const at = `input[${i}]`;
    const type = item.type ?? 'message';
    if (type === 'function_call') {
      const call = functionCall(item, at, problems);
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
    pendingCalls = undefined;
    if (type === 'function_call_output') {
      const callId = item.call_id;
      if (typeof callId !== 'string' || callId === '') problems.add({ field: `${at}.call_id`, problem: 'must be a non-empty string' });
      else if (!calledIds.has(callId)) problems.add({ field: `${at}.call_id`, problem: 'does not match the call_id of a function_call earlier in the conversation' });
      const output = outputText(item.output, `${at}.output`, problems);
      if (typeof callId === 'string' && output !== undefined) out.push({ role: 'tool', tool_call_id: callId, content: output });
      return;
    }
    if (type === 'message') {
      const message = inputMessage(item, at, problems);
      if (message) out.push(message);
      return;
    }
    problems.add({ field: `${at}.type`, problem: `items of type "${String(type).slice(0, 64)}" are not supported on a translated upstream`, allowed: ['message', 'function_call', 'function_call_output'] });
  });
}

const ROLES = new Set(['user', 'assistant', 'system', 'developer']);

function inputMessage(item: Record<string, unknown>, at: string, problems: ProblemList): ChatMessage | undefined {
  const role = item.role;
  if (typeof role !== 'string' || !ROLES.has(role)) {
    problems.add({ field: `${at}.role`, problem: 'must be one of the allowed values', allowed: [...ROLES] });
    return undefined;
  }
  const content = item.content;
  if (typeof content === 'string') return { role: role as ChatMessage['role'], content };
  if (!Array.isArray(content)) {
    problems.add({ field: `${at}.content`, problem: 'must be a string or a list of content parts' });
    return undefined;
  }
  if (role === 'assistant') {
    // Earlier answers come back as output_text (or refusal) parts: chat carries them as the turn's text.
    let text = '';
    content.forEach((part: unknown, j) => {
      const p = part as Record<string, unknown>;
      if ((p.type === 'output_text' || p.type === 'input_text') && typeof p.text === 'string') text += p.text;
      else if (p.type === 'refusal' && typeof p.refusal === 'string') text += p.refusal;
      else problems.add({ field: `${at}.content[${j}].type`, problem: 'must be output_text or refusal in an assistant message', allowed: ['output_text', 'refusal'] });
    });
    return { role: 'assistant', content: text };
  }
  const parts: Array<Record<string, unknown>> = [];
  content.forEach((part: unknown, j) => {
    const chatPart = contentPart(part as Record<string, unknown>, `${at}.content[${j}]`, problems);
    if (chatPart) parts.push(chatPart);
  });
  return { role: role as ChatMessage['role'], content: parts };
}

function contentPart(part: Record<string, unknown>, at: string, problems: ProblemList): Record<string, unknown> | undefined {
  if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string') return { type: 'text', text: part.text };
  if (part.type === 'input_image') {
    const url = part.image_url;
    if (typeof url !== 'string' || url === '') {
      problems.add({ field: `${at}.image_url`, problem: 'must be a URL or a data: URL (file_id images are not supported on a translated upstream)' });
      return undefined;
    }
    return { type: 'image_url', image_url: { url, ...(typeof part.detail === 'string' ? { detail: part.detail } : {}) } };
  }
  problems.add({ field: `${at}.type`, problem: `content parts of type "${String(part.type).slice(0, 64)}" are not supported on a translated upstream`, allowed: ['input_text', 'input_image'] });
  return undefined;
}

function functionCall(item: Record<string, unknown>, at: string, problems: ProblemList): ToolCall | undefined {
  const { call_id: id, name, arguments: args } = item;
  if (typeof id !== 'string' || id === '') problems.add({ field: `${at}.call_id`, problem: 'must be a non-empty string' });
  if (typeof name !== 'string' || name === '') problems.add({ field: `${at}.name`, problem: 'must be a non-empty string' });
  if (typeof args !== 'string') problems.add({ field: `${at}.arguments`, problem: 'must be a string (the JSON of the arguments)' });
  if (typeof id !== 'string' || id === '' || typeof name !== 'string' || name === '' || typeof args !== 'string') return undefined;
  return { id, type: 'function', function: { name, arguments: args } };
}

/** A function_call_output's output: a string, or a list of input_text parts (joined). */
function outputText(output: unknown, at: string, problems: ProblemList): string | undefined {
  if (typeof output === 'string') return output;
  if (Array.isArray(output) && output.every((p) => (p as Record<string, unknown>).type === 'input_text' && typeof (p as Record<string, unknown>).text === 'string')) {
    return output.map((p) => (p as { text: string }).text).join('');
  }
  problems.add({ field: at, problem: 'must be a string or a list of input_text parts' });
  return undefined;
}

function chatTool(tool: Record<string, unknown>, i: number, problems: ProblemList): Record<string, unknown> {
  if (tool.type !== 'function') {
    problems.add({ field: `tools[${i}].type`, problem: `built-in tools ("${String(tool.type).slice(0, 64)}") are not supported on a translated upstream`, allowed: ['function'] });
    return {};
  }
  if (typeof tool.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) {
    problems.add({ field: `tools[${i}].name`, problem: 'must be 1 to 64 letters, digits, underscores or dashes' });
  }
  const fn: Record<string, unknown> = { name: tool.name };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (tool.parameters !== undefined && tool.parameters !== null) fn.parameters = tool.parameters;
  if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

function toolChoice(choice: unknown, problems: ProblemList): unknown {
  if (choice === 'none' || choice === 'auto' || choice === 'required') return choice;
  const c = choice as Record<string, unknown> | null;
  if (c && c.type === 'function' && typeof c.name === 'string') return { type: 'function', function: { name: c.name } };
  problems.add({ field: 'tool_choice', problem: 'must be "none", "auto", "required" or {"type":"function","name":...} on a translated upstream' });
  return undefined;
}

/** `text.format` as chat's `response_format`. */
function responseFormat(format: unknown, problems: ProblemList): Record<string, unknown> | undefined {
  if (format === undefined || format === null) return undefined;
  const f = format as Record<string, unknown>;
  if (f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  if (f.type === 'json_schema') {
    if (typeof f.name !== 'string' || typeof f.schema !== 'object' || f.schema === null) {
      problems.add({ field: 'text.format', problem: 'a json_schema format needs a name and a schema object' });
      return undefined;
    }
    const schema: Record<string, unknown> = { name: f.name, schema: f.schema };
    if (typeof f.strict === 'boolean') schema.strict = f.strict;
    if (typeof f.description === 'string') schema.description = f.description;
    return { type: 'json_schema', json_schema: schema };
  }
  problems.add({ field: 'text.format.type', problem: 'must be one of the allowed values', allowed: ['text', 'json_object', 'json_schema'] });
  return undefined;
}
