// The mock's OpenAI Responses API: declared tools (function, custom, and the tools inside a `namespace` group; in
// `tools`, or in an `additional_tools` input item as Codex sends them on its default model), tool outputs in
// `input`, and the answer as a response object or its events with `sequence_number`s.
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

export function parseResponses(body: Record<string, unknown>): ParsedTurn {
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
    content: [{ type: 'output_text', text: reply.text, annotations: [] }],
  };
}

/** The events of one output item, from `output_item.added` to `output_item.done`. */
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
      { type: 'response.function_call_arguments.done', ...at, arguments: args },
      { type: 'response.output_item.done', output_index: 0, item },
    ];
  }
  const part = asRecord(asArray(item.content)[0]);
  const text = part.text as string;
  const where = { ...at, content_index: 0 };
  return [
    { type: 'response.output_item.added', output_index: 0, item: { ...item, content: [], status: 'in_progress' } },
    { type: 'response.content_part.added', ...where, part: { ...part, text: '' } },
    { type: 'response.output_text.delta', ...where, delta: text },
    { type: 'response.output_text.done', ...where, text },
    { type: 'response.content_part.done', ...where, part },
    { type: 'response.output_item.done', output_index: 0, item },
  ];
}

export function answerResponses(res: ServerResponse, turn: ParsedTurn, reply: Reply): void {
  const item = itemOf(reply);
  const base = {
    id: freshId('resp_'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: turn.model,
    status: 'in_progress',
    output: [] as unknown[],
  };
  const usage = {
    input_tokens: USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.input + USAGE.output,
  };
  const done = { ...base, status: 'completed', output: [item], usage };
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
