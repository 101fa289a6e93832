/**
 * One real node:http server that plays a one-tool agent task on every wire the gateway speaks upstream: OpenAI's
 * Responses API (`POST /v1/responses`, for the native path), chat completions (`/v1/chat/completions`), Anthropic's
 * Messages API (`/v1/messages`) and Gemini (`/v1beta/models/{m}:streamGenerateContent?alt=sse`). On a first turn
 * it asks for the scripted tool call; once the conversation holds a tool result, it answers "DONE". Every request
 * is recorded with its raw body, so a test can compare bytes.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface OneToolRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
}

/** The tool call the model makes on a first turn, by its name upstream (chat's), with its JSON arguments. */
export interface ScriptedCall {
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface OneToolTask {
  origin: string;
  requests: OneToolRequest[];
  /** The call of the next first turn (translated paths). */
  call: ScriptedCall;
  /** What the native Responses API answers: its events' data, in order (each with its own `type`). */
  nativeEvents: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

export const FINAL_TEXT = 'DONE';
export const UPSTREAM_USAGE = { prompt: 1200, completion: 30 };

function sse(res: ServerResponse, frames: string[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(frames.join(''));
}

const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
const named = (event: string, value: unknown) => `event: ${event}\ndata: ${JSON.stringify(value)}\n\n`;

function chat(res: ServerResponse, body: Record<string, unknown>, call: ScriptedCall): void {
  const messages = body.messages as Array<{ role: string }>;
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: String(body.model) };
  const chunk = (delta: unknown, finish: string | null = null) =>
    data({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const usage = data({
    ...base,
    choices: [],
    usage: {
      prompt_tokens: UPSTREAM_USAGE.prompt,
      completion_tokens: UPSTREAM_USAGE.completion,
      total_tokens: UPSTREAM_USAGE.prompt + UPSTREAM_USAGE.completion,
    },
  });
  if (messages.at(-1)?.role === 'tool')
    return sse(res, [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: FINAL_TEXT }),
      chunk({}, 'stop'),
      usage,
      'data: [DONE]\n\n',
    ]);
  const args = JSON.stringify(call.arguments);
  sse(res, [
    chunk({
      role: 'assistant',
      content: null,
      tool_calls: [{ index: 0, id: call.callId, type: 'function', function: { name: call.name, arguments: '' } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, 10) } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(10) } }] }),
    chunk({}, 'tool_calls'),
    usage,
    'data: [DONE]\n\n',
  ]);
}

function anthropic(res: ServerResponse, body: Record<string, unknown>, call: ScriptedCall): void {
  const last = (body.messages as Array<{ content: Array<{ type: string }> }>).at(-1);
  const answered = last?.content.some((block) => block.type === 'tool_result') === true;
  const start = named('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [],
      model: String(body.model),
      stop_reason: null,
      usage: { input_tokens: UPSTREAM_USAGE.prompt, output_tokens: 1 },
    },
  });
  const end = (reason: string) => [
    named('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: reason, stop_sequence: null },
      usage: { output_tokens: UPSTREAM_USAGE.completion },
    }),
    named('message_stop', { type: 'message_stop' }),
  ];
  if (answered) {
    return sse(res, [
      start,
      named('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }),
      named('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: FINAL_TEXT },
      }),
      named('content_block_stop', { type: 'content_block_stop', index: 0 }),
      ...end('end_turn'),
    ]);
  }
  const args = JSON.stringify(call.arguments);
  sse(res, [
    start,
    named('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: call.callId, name: call.name, input: {} },
    }),
    named('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: args.slice(0, 10) },
    }),
    named('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: args.slice(10) },
    }),
    named('content_block_stop', { type: 'content_block_stop', index: 0 }),
    ...end('tool_use'),
  ]);
}

function gemini(res: ServerResponse, body: Record<string, unknown>, call: ScriptedCall): void {
  const answered = JSON.stringify(body.contents).includes('"functionResponse"');
  const usageMetadata = {
    promptTokenCount: UPSTREAM_USAGE.prompt,
    candidatesTokenCount: UPSTREAM_USAGE.completion,
    totalTokenCount: UPSTREAM_USAGE.prompt + UPSTREAM_USAGE.completion,
  };
  const part = answered
    ? { text: FINAL_TEXT }
    : { functionCall: { id: call.callId, name: call.name, args: call.arguments } };
  sse(res, [
    data({
      candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
      usageMetadata,
    }),
  ]);
}

export async function startOneToolTask(): Promise<OneToolTask> {
  const requests: OneToolRequest[] = [];
  const sockets = new Set<Socket>();
  const state = {
    call: { callId: 'call_1', name: 'tool', arguments: {} } as ScriptedCall,
    nativeEvents: [] as Array<Record<string, unknown>>,
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (part: string) => (raw += part));
    req.on('end', () => {
      const body = (raw === '' ? {} : JSON.parse(raw)) as Record<string, unknown>;
      const url = req.url ?? '/';
      requests.push({ method: req.method ?? 'GET', url, headers: req.headers, raw, body });
      if (url === '/v1/responses')
        return sse(
          res,
          state.nativeEvents.map((event) => named(String(event.type), event)),
        );
      if (url === '/v1/chat/completions') return chat(res, body, state.call);
      if (url === '/v1/messages') return anthropic(res, body, state.call);
      if (/^\/v1beta\/models\/[^:]+:streamGenerateContent\?alt=sse$/.test(url)) return gemini(res, body, state.call);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get call() {
      return state.call;
    },
    set call(call: ScriptedCall) {
      state.call = call;
    },
    get nativeEvents() {
      return state.nativeEvents;
    },
    set nativeEvents(events: Array<Record<string, unknown>>) {
      state.nativeEvents = events;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
