/**
 * An upstream of every wire format whose usage object is whatever the test sets, cache and reasoning figures
 * included: a real node:http server. Paths by prefix as in mock-usage-upstream.ts: `/openai/v1` (chat JSON and
 * SSE, Responses JSON and SSE), `/anthropic/v1` (Messages JSON and SSE), `/gemini/v1beta` (generateContent and
 * streamGenerateContent). A Messages stream reports the usage object in `message_start` (its output_tokens
 * there 1, as Anthropic does) and the output tokens again in `message_delta` (or `messagesDelta`, when set: the
 * cumulative figures Anthropic sends there after server tools ran).
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './upstreams/recording-server.js';
import { json, sse } from './mock-usage-upstream.js';

/** The raw JSON of each wire format's usage object the next answers carry. */
export interface PartsUsage {
  chat: string;
  responses: string;
  messages: string;
  gemini: string;
  /** The usage object of a Messages stream's `message_delta` (default: `{"output_tokens": <messages' output_tokens>}`). */
  messagesDelta?: string;
}

export interface PartsUpstream {
  origin: string;
  usage: PartsUsage;
  requests: RecordedHttpRequest[];
  close(): Promise<void>;
}

export async function startPartsUpstream(usage: PartsUsage): Promise<PartsUpstream> {
  const state: PartsUpstream = { origin: '', usage, requests: [], close: async () => undefined };
  const server = await startRecordingServer((req, res) => {
    const u = state.usage;
    const stream = req.body?.stream === true;
    const path = req.url;
    if (path.startsWith('/openai/v1/chat/completions'))
      return stream ? chatStream(res, u.chat) : json(res, chatJson(u.chat));
    if (path.startsWith('/openai/v1/responses'))
      return stream ? responsesStream(res, u.responses) : json(res, responseObject(u.responses));
    if (path.startsWith('/anthropic/v1/messages'))
      return stream ? messagesStream(res, u.messages, u.messagesDelta) : json(res, messagesJson(u.messages));
    if (path.includes(':streamGenerateContent')) return sse(res, [`data: ${geminiJson(u.gemini)}\n\n`]);
    if (path.includes(':generateContent')) return json(res, geminiJson(u.gemini));
    if (path.endsWith('/models')) return json(res, '{"object":"list","data":[]}');
    res.writeHead(404).end();
  });
  state.origin = server.origin;
  state.requests = server.requests;
  state.close = () => server.close();
  return state;
}

const chatJson = (usage: string) =>
  `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":${usage}}`;

function chatStream(res: ServerResponse, usage: string): void {
  const chunk = (delta: string, finish: string) =>
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish}}]}\n\n`;
  sse(res, [
    chunk('{"role":"assistant","content":"Hi"}', 'null'),
    chunk('{}', '"stop"'),
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":${usage}}\n\n`,
    'data: [DONE]\n\n',
  ]);
}

const responseObject = (usage: string) =>
  `{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":${usage}}`;

function responsesStream(res: ServerResponse, usage: string): void {
  sse(res, [
    'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}\n\n',
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}\n\n',
    `event: response.completed\ndata: {"type":"response.completed","response":${responseObject(usage)}}\n\n`,
  ]);
}

const messagesJson = (usage: string) =>
  `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":${usage}}`;

function messagesStream(res: ServerResponse, usage: string, deltaUsage?: string): void {
  const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;
  const output = (JSON.parse(usage) as { output_tokens: number }).output_tokens;
  const start = JSON.stringify({ ...(JSON.parse(usage) as object), output_tokens: 1 });
  sse(res, [
    event(
      'message_start',
      `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":${start}}}`,
    ),
    event('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
    event('content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}'),
    event('content_block_stop', '{"type":"content_block_stop","index":0}'),
    event(
      'message_delta',
      `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":${deltaUsage ?? `{"output_tokens":${output}}`}}`,
    ),
    event('message_stop', '{"type":"message_stop"}'),
  ]);
}

const geminiJson = (usage: string) =>
  `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0,"finishReason":"STOP"}],"usageMetadata":${usage},"modelVersion":"m"}`;
