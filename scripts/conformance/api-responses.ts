// The mock's OpenAI Responses API: declared tools (function, custom, and the tools inside a `namespace` group; in
// `tools`, or in an `additional_tools` input item as Codex sends them on its default model), tool outputs in
// `input`, and the answer as a response object with every field OpenAI's has, or its events with `sequence_number`s.
import type { ServerResponse } from 'node:http';
import {
  asArray,
  asRecord,
  isJsonFormat,
  stringParamsOf,
  textOf,
  type DeclaredTool,
  type ParsedTurn,
  type Reply,
} from './task.js';
import { imageOfUrl, joinTexts, type Conversation, type ImageSeen } from './conversation.js';
import { freshId, twoPieces, USAGE, writeJson, writeSse, type SseEvent } from './wire.js';

function declaredTools(tools: unknown, namespace?: string): DeclaredTool[] {
  const out: DeclaredTool[] = [];
  for (const tool of asArray(tools).map(asRecord)) {
    if (typeof tool.name !== 'string') continue;
    if (tool.type === 'namespace') out.push(...declaredTools(tool.tools, tool.name));
    else
      out.push({
        name: tool.name,
        ...(namespace ? { namespace } : {}),
        freeform: tool.type === 'custom',
        stringParams: stringParamsOf(tool.parameters),
      });
  }
  return out;
}

/** A message item's text parts joined, and its images (`input_image` parts). */
function contentOf(content: unknown): { text: string; images: ImageSeen[] } {
  if (typeof content === 'string') return { text: content, images: [] };
  const parts = asArray(content).map(asRecord);
  const images = parts
    .filter((part) => part.type === 'input_image' && typeof part.image_url === 'string')
    .map((part) => imageOfUrl(part.image_url as string));
  const texts = parts.filter((part) => typeof part.text === 'string').map((part) => part.text as string);
  return { text: joinTexts(texts), images };
}

/** The instructions, the system and developer messages, the user's messages (a string input is one). */
function conversationOf(body: Record<string, unknown>, items: Array<Record<string, unknown>>): Conversation {
  const system = typeof body.instructions === 'string' ? [body.instructions] : [];
  const userTexts = typeof body.input === 'string' ? [body.input] : [];
  const images: ImageSeen[] = [];
  for (const item of items) {
    if (item.type !== undefined && item.type !== 'message') continue;
    const { text, images: seen } = contentOf(item.content);
    if (item.role === 'system' || item.role === 'developer') system.push(text);
    else if (item.role === 'user') {
      if (text !== '') userTexts.push(text);
      images.push(...seen);
    }
  }
  return { system: joinTexts(system), userTexts, images };
}

export function parseResponses(body: Record<string, unknown>): ParsedTurn & { request: Record<string, unknown> } {
  const items = asArray(body.input).map(asRecord);
  const extra = items.filter((item) => item.type === 'additional_tools').flatMap((item) => declaredTools(item.tools));
  const toolResults = items
    .filter((item) => item.type === 'function_call_output' || item.type === 'custom_tool_call_output')
    .map((item) => textOf(item.output));
  return {
    model: typeof body.model === 'string' ? body.model : 'mock-model',
    stream: body.stream === true,
    tools: [...declaredTools(body.tools), ...extra],
    toolResults,
    jsonAsked: isJsonFormat(asRecord(asRecord(body.text).format).type),
    conversation: conversationOf(body, items),
    request: body,
  };
}

function itemOf(reply: Reply): Record<string, unknown> {
  if (reply.kind === 'tool') {
    const { name, namespace } = reply.tool;
    const call = {
      id: freshId('fc_'),
      call_id: reply.callId ?? freshId('call_'),
      name,
      ...(namespace ? { namespace } : {}),
      status: 'completed',
    };
    if (reply.input !== undefined) return { type: 'custom_tool_call', ...call, input: reply.input };
    return { type: 'function_call', ...call, arguments: JSON.stringify(reply.args) };
  }
  return {
    type: 'message',
    id: freshId('msg_'),
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: reply.text, annotations: [], logprobs: [] }],
  };
}

/** The events of one output item, from `output_item.added` to `output_item.done`, as OpenAI sends them. */
function itemEvents(item: Record<string, unknown>): Array<Record<string, unknown>> {
  const at = { output_index: 0, item_id: item.id };
  if (item.type === 'custom_tool_call') {
    const input = item.input as string;
    return [
      { type: 'response.output_item.added', output_index: 0, item: { ...item, input: '', status: 'in_progress' } },
      { type: 'response.custom_tool_call_input.delta', ...at, delta: input },
      { type: 'response.custom_tool_call_input.done', ...at, input },
      { type: 'response.output_item.done', output_index: 0, item },
    ];
  }
  if (item.type === 'function_call') {
    const args = item.arguments as string;
    return [
      { type: 'response.output_item.added', output_index: 0, item: { ...item, arguments: '', status: 'in_progress' } },
      ...twoPieces(args).map((delta) => ({ type: 'response.function_call_arguments.delta', ...at, delta })),
      { type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: args },
      { type: 'response.output_item.done', output_index: 0, item },
    ];
  }
  const part = asRecord(asArray(item.content)[0]);
  const text = part.text as string;
  const where = { ...at, content_index: 0 };
  return [
    { type: 'response.output_item.added', output_index: 0, item: { ...item, content: [], status: 'in_progress' } },
    { type: 'response.content_part.added', ...where, part: { ...part, text: '' } },
    { type: 'response.output_text.delta', ...where, delta: text, logprobs: [] },
    { type: 'response.output_text.done', ...where, text, logprobs: [] },
    { type: 'response.content_part.done', ...where, part },
    { type: 'response.output_item.done', output_index: 0, item },
  ];
}

/** The declared tools as the response echoes them: a function tool with every field, `strict` true unless sent. */
function echoedTools(tools: unknown): unknown[] {
  return asArray(tools).map((tool) => {
    const declared = asRecord(tool);
    if (declared.type !== 'function') return tool;
    return {
      ...declared,
      description: declared.description ?? null,
      parameters: declared.parameters ?? null,
      strict: declared.strict ?? true,
    };
  });
}

/**
 * The response object with every field OpenAI's carries, the request's settings echoed and OpenAI's defaults for
 * the rest (what the Open Responses specification's schema asks of a response).
 */
function responseObject(turn: ParsedTurn & { request: Record<string, unknown> }): Record<string, unknown> {
  const request = turn.request;
  const given = (key: string, fallback: unknown): unknown => request[key] ?? fallback;
  const reasoning = asRecord(request.reasoning);
  const tier = request.service_tier;
  return {
    id: freshId('resp_'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    background: false,
    completed_at: null,
    error: null,
    incomplete_details: null,
    instructions: given('instructions', null),
    max_output_tokens: given('max_output_tokens', null),
    max_tool_calls: given('max_tool_calls', null),
    model: turn.model,
    output: [] as unknown[],
    parallel_tool_calls: given('parallel_tool_calls', true),
    previous_response_id: given('previous_response_id', null),
    prompt_cache_key: given('prompt_cache_key', null),
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: given('safety_identifier', null),
    service_tier: typeof tier === 'string' && tier !== 'auto' ? tier : 'default',
    store: given('store', true),
    temperature: given('temperature', 1),
    text: { format: { type: 'text' }, verbosity: 'medium', ...asRecord(request.text) },
    tool_choice: given('tool_choice', 'auto'),
    tools: echoedTools(request.tools),
    top_logprobs: given('top_logprobs', 0),
    top_p: given('top_p', 1),
    presence_penalty: 0,
    frequency_penalty: 0,
    truncation: given('truncation', 'disabled'),
    usage: null,
    user: given('user', null),
    metadata: given('metadata', {}),
  };
}

export function answerResponses(
  res: ServerResponse,
  turn: ParsedTurn & { request: Record<string, unknown> },
  reply: Reply,
): void {
  const item = itemOf(reply);
  const base = responseObject(turn);
  const usage = {
    input_tokens: USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.input + USAGE.output,
  };
  const done = { ...base, status: 'completed', completed_at: Math.floor(Date.now() / 1000), output: [item], usage };
  if (!turn.stream) {
    writeJson(res, 200, done);
    return;
  }
  const payloads = [
    { type: 'response.created', response: base },
    { type: 'response.in_progress', response: base },
    ...itemEvents(item),
    { type: 'response.completed', response: done },
  ];
  const events: SseEvent[] = payloads.map((payload, sequence) => [
    payload.type as string,
    { ...payload, sequence_number: sequence },
  ]);
  writeSse(res, events);
}
