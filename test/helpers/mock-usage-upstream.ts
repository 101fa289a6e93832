/**
 * An upstream of every wire format the gateway speaks whose usage figures are whatever the test says: a real
 * node:http server. Paths by prefix: `/openai/v1` (chat completions JSON and SSE, the Responses API JSON and SSE,
 * embeddings), `/anthropic/v1` (Messages JSON and SSE, count_tokens), `/gemini/v1beta` (generateContent,
 * streamGenerateContent). The figures are written into the JSON as raw text, so `1e300`, `-1000000`, `12.5`,
 * `"abc"` and `1e400` (which JSON.parse reads as Infinity) reach the gateway exactly as a hostile upstream sends them.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './upstreams/recording-server.js';

/** The raw JSON text of each figure reported: prompt (input), completion (output), total, and any other (cache reads). */
export interface Figures {
  prompt: string;
  completion: string;
  total: string;
  other: string;
}

export const SANE_FIGURES: Figures = { prompt: '7', completion: '3', total: '10', other: '0' };

export interface UsageUpstream {
  origin: string;
  /** What the next answers report (SANE_FIGURES at first). */
  figures: Figures;
  /** Every figure the same raw text (`1e300`...), or back to SANE_FIGURES with `null`. */
  setAll(figure: string | null): void;
  requests: RecordedHttpRequest[];
  close(): Promise<void>;
}

export async function startUsageUpstream(): Promise<UsageUpstream> {
  let figures: Figures = { ...SANE_FIGURES };
  const server = await startRecordingServer((req, res) => {
    const f = figures;
    const body = req.body ?? {};
    const stream = body.stream === true;
    const path = req.url;
    if (path.startsWith('/openai/v1/chat/completions')) return stream ? chatStream(res, f) : json(res, chatJson(f));
    if (path.startsWith('/openai/v1/responses')) return stream ? responsesStream(res, f) : json(res, responsesJson(f));
    if (path.startsWith('/openai/v1/embeddings'))
      return json(
        res,
        `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"e","usage":{"prompt_tokens":${f.prompt},"total_tokens":${f.prompt}}}`,
      );
    if (path.startsWith('/anthropic/v1/messages/count_tokens')) return json(res, `{"input_tokens":${f.prompt}}`);
    if (path.startsWith('/anthropic/v1/messages')) return stream ? messagesStream(res, f) : json(res, messagesJson(f));
    if (path.includes(':streamGenerateContent')) return geminiStream(res, f);
    if (path.includes(':generateContent')) return json(res, geminiJson(f, 'STOP'));
    if (path.endsWith('/models')) return json(res, '{"object":"list","data":[]}');
    res.writeHead(404).end();
  });
  return {
    origin: server.origin,
    get figures() {
      return figures;
    },
    set figures(value) {
      figures = value;
    },
    setAll(figure) {
      figures =
        figure === null ? { ...SANE_FIGURES } : { prompt: figure, completion: figure, total: figure, other: figure };
    },
    requests: server.requests,
    close: () => server.close(),
  };
}

/** A 200 JSON answer (shared with mock-token-parts-upstream.ts). */
export function json(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(text);
}

/** A 200 event stream of the given frames, then the end (shared with mock-token-parts-upstream.ts). */
export function sse(res: ServerResponse, events: string[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) res.write(event);
  res.end();
}

const chatJson = (f: Figures) =>
  `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":${f.prompt},"completion_tokens":${f.completion},"total_tokens":${f.total}}}`;

function chatStream(res: ServerResponse, f: Figures): void {
  const chunk = (delta: string, finish: string | null) =>
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
  sse(res, [
    chunk('{"role":"assistant","content":"Hi"}', null),
    chunk('{}', 'stop'),
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":${f.prompt},"completion_tokens":${f.completion},"total_tokens":${f.total}}}\n\n`,
    'data: [DONE]\n\n',
  ]);
}

const responseObject = (f: Figures) =>
  `{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":${f.prompt},"output_tokens":${f.completion},"total_tokens":${f.total}}}`;
const responsesJson = responseObject;

function responsesStream(res: ServerResponse, f: Figures): void {
  sse(res, [
    'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}\n\n',
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}\n\n',
    `event: response.completed\ndata: {"type":"response.completed","response":${responseObject(f)}}\n\n`,
  ]);
}

const messagesJson = (f: Figures) =>
  `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":${f.prompt},"cache_read_input_tokens":${f.other},"output_tokens":${f.completion}}}`;

function messagesStream(res: ServerResponse, f: Figures): void {
  const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;
  sse(res, [
    event(
      'message_start',
      `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${f.prompt},"output_tokens":${f.other}}}}`,
    ),
    event('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
    event('content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}'),
    event('content_block_stop', '{"type":"content_block_stop","index":0}'),
    event(
      'message_delta',
      `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${f.completion}}}`,
    ),
    event('message_stop', '{"type":"message_stop"}'),
  ]);
}

const geminiJson = (f: Figures, finish: string | null) =>
  `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0${finish ? `,"finishReason":"${finish}"` : ''}}],"usageMetadata":{"promptTokenCount":${f.prompt},"candidatesTokenCount":${f.completion},"totalTokenCount":${f.total}},"modelVersion":"m"}`;

function geminiStream(res: ServerResponse, f: Figures): void {
  sse(res, [`data: ${geminiJson(f, 'STOP')}\n\n`]);
}
