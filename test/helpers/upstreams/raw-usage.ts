/**
 * Answers whose usage figures are raw JSON text, for the per-format mocks' `respond` hook: `1e300`, `-1000000`,
 * `12.5`, `"abc"` and `1e400` (which JSON.parse reads as Infinity) reach the gateway exactly as a hostile upstream
 * sends them, which a JSON-encoded body cannot do. Two shapes of script:
 * - `answerWithFigures`: the figures (prompt, completion, total, other) of chat completions JSON and SSE, the
 *   Responses API JSON and SSE, embeddings, Messages JSON and SSE (other: cache reads in JSON, the output tokens of
 *   `message_start` in a stream), count_tokens, Gemini generateContent and streamGenerateContent;
 * - `answerWithParts`: the whole usage object of each format (cache and reasoning parts included); a Messages stream
 *   reports it in `message_start` (its output_tokens there 1, as Anthropic does) and the output tokens again in
 *   `message_delta` (or `messagesDelta`, when set: the cumulative figures Anthropic sends there after server tools).
 * Each is read again at every call, so a test changes what the next answers report by changing what it returns.
 */
import type { Behavior, OpenAiUpstream } from './openai.js';
import type { AnthropicBehavior, AnthropicUpstream } from './anthropic.js';
import type { GeminiBehavior, GeminiUpstream } from './gemini.js';

/** The mocks to script: one per wire format a test speaks. */
export interface RawUsageMocks {
  openai?: OpenAiUpstream;
  anthropic?: AnthropicUpstream;
  gemini?: GeminiUpstream;
}

/** The raw JSON text of each figure reported: prompt (input), completion (output), total, and any other (cache reads). */
export interface Figures {
  prompt: string;
  completion: string;
  total: string;
  other: string;
}

export const SANE_FIGURES: Figures = { prompt: '7', completion: '3', total: '10', other: '0' };

/** Every figure the same raw text (`1e300`...), or SANE_FIGURES with `null`. */
export function allFigures(figure: string | null): Figures {
  return figure === null ? { ...SANE_FIGURES } : { prompt: figure, completion: figure, total: figure, other: figure };
}

/** The raw JSON of each wire format's usage object the next answers carry. */
export interface PartsUsage {
  chat: string;
  responses: string;
  messages: string;
  gemini: string;
  /** The usage object of a Messages stream's `message_delta` (default: `{"output_tokens": <messages' output_tokens>}`). */
  messagesDelta?: string;
}

const streamed = (body: unknown) => (body as { stream?: unknown } | undefined)?.stream === true;
const json = (text: string) => ({ kind: 'json', body: text }) as const;

/** The mocks answer with `figures()` (see the file's comment). */
export function answerWithFigures(mocks: RawUsageMocks, figures: () => Figures): void {
  if (mocks.openai)
    mocks.openai.respond = (path, body): Behavior => {
      const f = figures();
      if (path === '/v1/chat/completions')
        return streamed(body) ? { kind: 'stream', chunks: chatStream(f) } : json(chatJson(f));
      if (path === '/v1/responses')
        return streamed(body) ? { kind: 'stream', chunks: responsesStream(f) } : json(responsesJson(f));
      return json(
        `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"e","usage":{"prompt_tokens":${f.prompt},"total_tokens":${f.prompt}}}`,
      );
    };
  if (mocks.anthropic)
    mocks.anthropic.respond = (path, body): AnthropicBehavior => {
      const f = figures();
      if (path === '/v1/messages/count_tokens') return json(`{"input_tokens":${f.prompt}}`);
      return streamed(body) ? { kind: 'raw', frames: messagesStream(f) } : json(messagesJson(f));
    };
  if (mocks.gemini)
    mocks.gemini.respond = (path): GeminiBehavior => {
      const f = figures();
      return path.includes(':streamGenerateContent')
        ? { kind: 'raw-stream', data: [geminiJson(f, 'STOP')] }
        : json(geminiJson(f, 'STOP'));
    };
}

/** The mocks answer with the usage objects `usage()` (see the file's comment). */
export function answerWithParts(mocks: RawUsageMocks, usage: () => PartsUsage): void {
  if (mocks.openai)
    mocks.openai.respond = (path, body): Behavior | undefined => {
      const u = usage();
      if (path === '/v1/chat/completions')
        return streamed(body) ? { kind: 'stream', chunks: partsChatStream(u.chat) } : json(partsChatJson(u.chat));
      if (path === '/v1/responses')
        return streamed(body)
          ? { kind: 'stream', chunks: partsResponsesStream(u.responses) }
          : json(partsResponseObject(u.responses));
      return undefined;
    };
  if (mocks.anthropic)
    mocks.anthropic.respond = (path, body): AnthropicBehavior | undefined => {
      const u = usage();
      if (path !== '/v1/messages') return undefined;
      return streamed(body)
        ? { kind: 'raw', frames: partsMessagesStream(u.messages, u.messagesDelta) }
        : json(partsMessagesJson(u.messages));
    };
  if (mocks.gemini)
    mocks.gemini.respond = (path): GeminiBehavior => {
      const u = usage();
      return path.includes(':streamGenerateContent')
        ? { kind: 'raw-stream', data: [partsGeminiJson(u.gemini)] }
        : json(partsGeminiJson(u.gemini));
    };
}

const chatJson = (f: Figures) =>
  `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":${f.prompt},"completion_tokens":${f.completion},"total_tokens":${f.total}}}`;

function chatStream(f: Figures): string[] {
  const chunk = (delta: string, finish: string | null) =>
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
  return [
    chunk('{"role":"assistant","content":"Hi"}', null),
    chunk('{}', 'stop'),
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":${f.prompt},"completion_tokens":${f.completion},"total_tokens":${f.total}}}\n\n`,
    'data: [DONE]\n\n',
  ];
}

const responseObject = (f: Figures) =>
  `{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":${f.prompt},"output_tokens":${f.completion},"total_tokens":${f.total}}}`;
const responsesJson = responseObject;

function responsesStream(f: Figures): string[] {
  return [
    'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}\n\n',
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}\n\n',
    `event: response.completed\ndata: {"type":"response.completed","response":${responseObject(f)}}\n\n`,
  ];
}

const messagesJson = (f: Figures) =>
  `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":${f.prompt},"cache_read_input_tokens":${f.other},"output_tokens":${f.completion}}}`;

function messagesStream(f: Figures): string[] {
  const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;
  return [
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
  ];
}

const geminiJson = (f: Figures, finish: string | null) =>
  `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0${finish ? `,"finishReason":"${finish}"` : ''}}],"usageMetadata":{"promptTokenCount":${f.prompt},"candidatesTokenCount":${f.completion},"totalTokenCount":${f.total}},"modelVersion":"m"}`;

const partsChatJson = (usage: string) =>
  `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":${usage}}`;

function partsChatStream(usage: string): string[] {
  const chunk = (delta: string, finish: string) =>
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish}}]}\n\n`;
  return [
    chunk('{"role":"assistant","content":"Hi"}', 'null'),
    chunk('{}', '"stop"'),
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":${usage}}\n\n`,
    'data: [DONE]\n\n',
  ];
}

const partsResponseObject = (usage: string) =>
  `{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":${usage}}`;

function partsResponsesStream(usage: string): string[] {
  return [
    'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}\n\n',
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}\n\n',
    `event: response.completed\ndata: {"type":"response.completed","response":${partsResponseObject(usage)}}\n\n`,
  ];
}

const partsMessagesJson = (usage: string) =>
  `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":${usage}}`;

function partsMessagesStream(usage: string, deltaUsage?: string): string[] {
  const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;
  const output = (JSON.parse(usage) as { output_tokens: number }).output_tokens;
  const start = JSON.stringify({ ...(JSON.parse(usage) as object), output_tokens: 1 });
  return [
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
  ];
}

const partsGeminiJson = (usage: string) =>
  `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0,"finishReason":"STOP"}],"usageMetadata":${usage},"modelVersion":"m"}`;
