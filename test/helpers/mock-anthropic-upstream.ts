/**
 * A real node:http server speaking Anthropic's Messages API on the wire: `POST /v1/messages` (JSON, or SSE with
 * `event:` lines when `stream: true`), `GET /v1/models`, Anthropic's error body, its required headers. Event
 * payloads follow the documented examples (https://docs.anthropic.com/en/api/messages-streaming), spacing
 * included, so the gateway's translation is tested against what the provider sends, not against our own idea.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';

/** A request as the mock received it (`url`: path and query). */
export type AnthropicRecorded = RecordedHttpRequest;

export type AnthropicBehavior =
  /**
   * A complete answer: text, or a tool_use block when the request has tools (unless `text` is given); with
   * `container`, the code-execution container it ran in (`container: {id, expires_at}`, as Anthropic answers).
   */
  | { kind: 'message'; text?: string; stopReason?: string; container?: string }
  /** A stream of `text` pieces (or a tool_use streamed as input_json_delta pieces when the request has tools); `container` in message_delta. */
  | { kind: 'stream'; text?: string[]; cutBeforeStop?: boolean; errorAfter?: number; container?: string }
  /** An HTTP error in Anthropic's `{type:"error", error:{type, message}}` shape. */
  | { kind: 'error'; status: number; type: string; message: string; headers?: Record<string, string> }
  /** A stream of exactly these SSE frames (each one write), then the end: for hostile streams. */
  | { kind: 'raw'; frames: string[] }
  /** A 200 JSON answer of exactly this body (JSON-encoded): for hostile answers. */
  | { kind: 'json'; body: unknown };

export interface MockAnthropic {
  baseUrl: string;
  requests: AnthropicRecorded[];
  messageRequests(): AnthropicRecorded[];
  enqueue(...behaviors: AnthropicBehavior[]): void;
  reset(): void;
  close(): Promise<void>;
}

export const ANTHROPIC_MOCK_ID = 'msg_013Zva2CMHLNnXjNJJKqJ2EF';
export const ANTHROPIC_TOOL_ID = 'toolu_01T1x1fJ34qAmk2tNTrN7Up6';

function sse(res: ServerResponse, event: string, data: string): void {
  res.write(`event: ${event}\ndata: ${data}\n\n`);
}

function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

export async function startMockAnthropic(options: { requiredKey?: string } = {}): Promise<MockAnthropic> {
  let queue: AnthropicBehavior[] = [];
  const server = await startRecordingServer((req, res) => {
    // The path without a query: Anthropic's SDK beta client adds `?beta=true`, which the API takes.
    const path = req.url.split('?')[0] ?? '';
    const body = req.body;
    if (options.requiredKey !== undefined && req.headers['x-api-key'] !== options.requiredKey) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(errorBody('authentication_error', 'invalid x-api-key'));
      return;
    }
    if (!req.headers['anthropic-version']) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(errorBody('invalid_request_error', 'anthropic-version: header is required'));
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          data: [
            {
              type: 'model',
              id: 'claude-haiku-4-5',
              display_name: 'Claude Haiku 4.5',
              created_at: '2025-10-01T00:00:00Z',
            },
          ],
          has_more: false,
          first_id: 'claude-haiku-4-5',
          last_id: 'claude-haiku-4-5',
        }),
      );
      return;
    }
    if (req.method === 'POST' && path === '/v1/messages/count_tokens' && body) {
      // Anthropic's count: a fixed 42 per message, so a test can tell it from the gateway's own estimate.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 42 * (Array.isArray(body.messages) ? body.messages.length : 0) }));
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages' || !body) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(errorBody('not_found_error', 'Not found'));
      return;
    }
    const behavior = queue.shift() ?? (body.stream === true ? { kind: 'stream' } : { kind: 'message' });
    answer(res, body, behavior);
  });
  return {
    baseUrl: `${server.origin}/v1`,
    requests: server.requests,
    messageRequests: () => server.requests.filter((r) => r.url.split('?')[0] === '/v1/messages'),
    enqueue: (...behaviors) => queue.push(...behaviors),
    reset() {
      server.requests.length = 0;
      queue = [];
    },
    close: () => server.close(),
  };
}

function answer(res: ServerResponse, body: Record<string, unknown>, behavior: AnthropicBehavior): void {
  const model = String(body.model ?? 'claude');
  const withTools = Array.isArray(body.tools) && body.tools.length > 0;
  if (behavior.kind === 'error') {
    res.writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers });
    res.end(errorBody(behavior.type, behavior.message));
    return;
  }
  if (behavior.kind === 'json') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(behavior.body));
    return;
  }
  if (behavior.kind === 'raw') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const frame of behavior.frames) res.write(frame);
    res.end();
    return;
  }
  if (behavior.kind === 'message') {
    const useTool = withTools && behavior.text === undefined;
    const content = useTool
      ? [
          { type: 'text', text: "I'll check the weather." },
          { type: 'tool_use', id: ANTHROPIC_TOOL_ID, name: 'get_weather', input: { location: 'Paris' } },
        ]
      : [{ type: 'text', text: behavior.text ?? 'Hello from Claude' }];
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_mock' });
    res.end(
      JSON.stringify({
        id: ANTHROPIC_MOCK_ID,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: behavior.stopReason ?? (useTool ? 'tool_use' : 'end_turn'),
        stop_sequence: null,
        usage: { input_tokens: 2095, output_tokens: 503 },
        ...(behavior.container ? { container: { id: behavior.container, expires_at: '2030-01-01T00:00:00Z' } } : {}),
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(
    res,
    'message_start',
    `{"type": "message_start", "message": {"id": "${ANTHROPIC_MOCK_ID}", "type": "message", "role": "assistant", "content": [], "model": "${model}", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}`,
  );
  const useTool = withTools && behavior.text === undefined;
  let sent = 0;
  const maybeFail = (): boolean => {
    sent += 1;
    if (behavior.errorAfter !== undefined && sent > behavior.errorAfter) {
      sse(res, 'error', '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}');
      res.end();
      return true;
    }
    return false;
  };
  if (useTool) {
    sse(
      res,
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    );
    sse(
      res,
      'content_block_delta',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}',
    );
    sse(res, 'content_block_stop', '{"type":"content_block_stop","index":0}');
    sse(
      res,
      'content_block_start',
      `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"${ANTHROPIC_TOOL_ID}","name":"get_weather","input":{}}}`,
    );
    for (const piece of ['', '{"location":', ' "Paris"}']) {
      if (maybeFail()) return;
      sse(
        res,
        'content_block_delta',
        JSON.stringify({
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: piece },
        }),
      );
    }
    sse(res, 'content_block_stop', '{"type":"content_block_stop","index":1}');
  } else {
    sse(
      res,
      'content_block_start',
      '{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}',
    );
    sse(res, 'ping', '{"type": "ping"}');
    for (const piece of behavior.text ?? ['Hello', ' from', ' Claude']) {
      if (maybeFail()) return;
      sse(
        res,
        'content_block_delta',
        JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }),
      );
    }
    sse(res, 'content_block_stop', '{"type": "content_block_stop", "index": 0}');
  }
  const container = behavior.container
    ? `, "container": {"id": "${behavior.container}", "expires_at": "2030-01-01T00:00:00Z"}`
    : '';
  sse(
    res,
    'message_delta',
    `{"type": "message_delta", "delta": {"stop_reason": "${useTool ? 'tool_use' : 'end_turn'}", "stop_sequence":null${container}}, "usage": {"output_tokens": 15}}`,
  );
  if (behavior.cutBeforeStop) {
    res.end();
    return;
  }
  sse(res, 'message_stop', '{"type": "message_stop"}');
  res.end();
}
