/**
 * The scripted upstreams: a script of model turns (a tool call, then the final text) played on every wire format at
 * once. They stay cross-format on purpose: the client replays (test/clients/) and scripts/record-traffic.ts run one
 * agent task through each SDK client, whatever API it speaks, and a later turn must refer to the ids the earlier
 * turn really answered, so the one script and its turn counter serve every format from one server. The script's
 * answers in each wire format are in scripted/replies.ts, Anthropic's message threads in scripted/threads.ts, and
 * a one-tool task for the Codex replay (its own ids and usage) in scripted/one-tool-task.ts (`startOneToolTask`).
 *
 * `startScriptedUpstream`: a real node:http server that plays a model provider in four wire formats at once, by path: OpenAI chat
 * completions (`POST .../chat/completions`), OpenAI's Responses API (`POST .../responses`), Anthropic's Messages API
 * (`POST .../messages`, with `count_tokens`), Gemini (`POST .../models/{m}:generateContent` and
 * `:streamGenerateContent`), plus the model lists. Each model call is answered with the turn `decide` picks for it
 * (`agentLoop`: a tool call, then once the tool's result is in the conversation, the final text), in that
 * provider's own format (scripted/replies.ts), or with the refusal it picks. A Messages call that asks for a message
 * thread (`thread`) is refused as Anthropic refuses a thread it cannot hold (THREAD_REFUSAL), unless the server is
 * started with `threads: 'hold'` (scripted/threads.ts: it holds them as Anthropic does). Every request is recorded
 * with the API it spoke and the turn it got.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';
import {
  chatAnswer,
  geminiAnswer,
  messageIdOf,
  messagesAnswer,
  refusalBody,
  responsesAnswer,
  responsesMessageId,
  THREAD_REFUSAL,
  type ScriptedAnswer,
  type WireAnswer,
} from './scripted/replies.js';
import { ScriptedThreads } from './scripted/threads.js';

export * from './scripted/replies.js';
export * from './scripted/one-tool-task.js';

export type WireApi = 'chat' | 'responses' | 'messages' | 'gemini';

export interface ScriptedRequest extends RecordedHttpRequest {
  /** The API of a model call (undefined for a model list, a token count, anything else). */
  api: WireApi | undefined;
  /** The turn the call was answered with, or its refusal. */
  reply: ScriptedAnswer | undefined;
}

/** How a model call is answered: `body` is the whole request (a continued thread's with what the thread holds). */
export type Decide = (api: WireApi, body: Record<string, unknown>) => ScriptedAnswer;

export interface ScriptedUpstream {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  requests: ScriptedRequest[];
  /** The model calls only. */
  modelCalls(): ScriptedRequest[];
  /** Replaces how the next calls are answered. */
  setDecide(decide: Decide): void;
  close(): Promise<void>;
}

/** The recorder's script: fixed ids per API (recordings do not change from run to run), one tool call, one answer. */
export const SCRIPT = {
  toolCallIds: {
    chat: 'call_Wq7nT2xKd9LmP4vR8sZb3HcY',
    responses: 'call_Jf5sV1pQk8RtN3wX6mLa2DzE',
    messages: 'toolu_01H3kP9vXq2mWn7tRb5sLc4Y',
    gemini: 'unused',
  } as Record<WireApi, string>,
  arguments: '{"location":"Paris"}',
  finalText: 'It is 21 degrees and sunny in Paris.',
} as const;

/** The agent loop every recording plays: a tool call while the conversation holds no tool result, then the answer. */
export const agentLoop: Decide = (api, body) => {
  const name = firstToolName(api, body);
  if (name === undefined || hasToolResult(api, body)) return { type: 'text', text: SCRIPT.finalText };
  return { type: 'tool_call', id: SCRIPT.toolCallIds[api], name, arguments: SCRIPT.arguments };
};

/**
 * `decide`, the model writing `text` before each tool call, in the same turn (as Claude usually does). On the
 * Responses API the text is an output message before the call, whose id the recording keeps (Preamble.id).
 */
export function withPreamble(decide: Decide, text: string): Decide {
  return (api, body) => {
    const reply = decide(api, body);
    return reply.type === 'tool_call' ? { ...reply, preamble: { text } } : reply;
  };
}

function firstToolName(api: WireApi, body: Record<string, unknown>): string | undefined {
  const tools = Array.isArray(body.tools) ? (body.tools as Array<Record<string, unknown>>) : [];
  for (const tool of tools) {
    const fn = tool.function as { name?: unknown } | undefined;
    if (api === 'chat' && typeof fn?.name === 'string') return fn.name;
    if (api === 'gemini' && Array.isArray(tool.functionDeclarations))
      return (tool.functionDeclarations as Array<{ name?: string }>)[0]?.name;
    if (
      (api === 'responses' || api === 'messages') &&
      typeof tool.name === 'string' &&
      (tool.type === undefined || tool.type === 'function' || tool.type === 'custom')
    )
      return tool.name;
  }
  return undefined;
}

function hasToolResult(api: WireApi, body: Record<string, unknown>): boolean {
  const text = JSON.stringify(
    api === 'responses' ? (body.input ?? []) : api === 'gemini' ? (body.contents ?? []) : (body.messages ?? []),
  );
  if (api === 'chat') return text.includes('"role":"tool"');
  if (api === 'responses')
    return text.includes('"type":"function_call_output"') || text.includes('"type":"custom_tool_call_output"');
  if (api === 'messages') return text.includes('"type":"tool_result"');
  return text.includes('"functionResponse"');
}

export function apiOf(method: string, url: string): WireApi | undefined {
  if (method !== 'POST') return undefined;
  const path = url.split('?')[0] ?? '';
  if (path.endsWith('/chat/completions')) return 'chat';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/messages')) return 'messages';
  if (/\/models\/[^/]+:(generateContent|streamGenerateContent)$/.test(path)) return 'gemini';
  return undefined;
}

export interface ScriptedUpstreamOptions {
  /** Message threads: refused (the default: THREAD_REFUSAL) or held as Anthropic holds them. */
  threads?: 'refuse' | 'hold';
}

export async function startScriptedUpstream(
  initial: Decide = agentLoop,
  options: ScriptedUpstreamOptions = {},
): Promise<ScriptedUpstream> {
  let decide = initial;
  const requests: ScriptedRequest[] = [];
  const threads = options.threads === 'hold' ? new ScriptedThreads() : undefined;
  let serial = 0;
  const server = await startRecordingServer((request, res) => {
    const api = apiOf(request.method, request.url);
    const recorded: ScriptedRequest = { ...request, api, reply: undefined };
    requests.push(recorded);
    if (api === undefined || request.body === undefined) return other(request, res);
    serial += 1;
    const threaded = api === 'messages' && request.body.thread !== undefined && request.body.thread !== null;
    const held = threaded ? (threads?.whole(request.body) ?? { refusal: THREAD_REFUSAL }) : { whole: request.body };
    const body = 'whole' in held ? held.whole : request.body;
    const reply = 'refusal' in held ? held.refusal : decide(api, body);
    // A preamble's output message on the Responses API: its id as this server gave it, which a later call may name.
    recorded.reply =
      api === 'responses' && reply.type === 'tool_call' && reply.preamble
        ? { ...reply, preamble: { ...reply.preamble, id: responsesMessageId(serial) } }
        : reply;
    if (reply.type === 'refusal') return jsonAnswer(res, reply.status, refusalBody(reply, api));
    if (threaded) threads?.hold(messageIdOf(serial), body, reply);
    const model = /\/models\/([^/:]+):/.exec(request.url)?.[1] ?? 'gemini';
    const stream = api === 'gemini' ? request.url.includes(':streamGenerateContent') : body.stream === true;
    const answer =
      api === 'chat'
        ? chatAnswer(reply, body, serial)
        : api === 'responses'
          ? responsesAnswer(reply, body, serial)
          : api === 'messages'
            ? messagesAnswer(reply, body, serial)
            : geminiAnswer(reply, body, stream, model);
    write(res, answer);
  });
  return {
    origin: server.origin,
    requests,
    modelCalls: () => requests.filter((r) => r.api !== undefined),
    setDecide(next) {
      decide = next;
    },
    close: () => server.close(),
  };
}

function write(res: ServerResponse, answer: WireAnswer): void {
  if ('json' in answer) {
    const text = JSON.stringify(answer.json);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const frame of answer.frames) res.write(frame);
  res.end();
}

function jsonAnswer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Model lists (OpenAI's shape; Anthropic's when asked with anthropic-version), token counts; 404 for the rest. */
function other(request: RecordedHttpRequest, res: ServerResponse): void {
  const path = request.url.split('?')[0] ?? '';
  const json = (status: number, body: unknown): void => jsonAnswer(res, status, body);
  if (request.method === 'POST' && path.endsWith('/messages/count_tokens')) return json(200, { input_tokens: 42 });
  if (request.method === 'GET' && path.endsWith('/models')) {
    if (request.headers['anthropic-version']) {
      const model = {
        type: 'model',
        id: 'claude-sonnet-4-5',
        display_name: 'Claude Sonnet 4.5',
        created_at: '2025-09-29T00:00:00Z',
      };
      return json(200, { data: [model], has_more: false, first_id: model.id, last_id: model.id });
    }
    return json(200, {
      object: 'list',
      data: [{ id: 'gpt-4o-mini', object: 'model', created: 1_721_260_800, owned_by: 'openai' }],
    });
  }
  json(404, { error: { message: `scripted upstream: no ${request.method} ${path}`, type: 'invalid_request_error' } });
}
