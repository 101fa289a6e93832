// One mock upstream on 127.0.0.1: a node:http server that answers every API a gateway upstream may be asked in
// (Anthropic Messages, OpenAI Responses, chat completions, Gemini), plays the one-tool task (task.ts), or a model's
// part when no task is set (model-part.ts), and records every request, so a run can be judged on what the upstream
// actually received.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerMessages, parseMessages } from './api-anthropic.js';
import { answerChat, parseChat } from './api-chat.js';
import { answerGemini, parseGemini } from './api-gemini.js';
import { answerResponses, parseResponses } from './api-responses.js';
import { playModel } from './model-part.js';
import { asRecord, decide, jsonReply, type ParsedTurn, type Reply, type Task } from './task.js';
import { freshId, writeJson } from './wire.js';

export type Api = 'messages' | 'responses' | 'chat' | 'gemini';

/** One request as the mock received it, and what it answered. */
export interface Recorded {
  api: Api | 'other';
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  toolResults: string[];
  /** `tool:<name>` or `text`, or an HTTP status for what it refused. */
  answered: string;
  /** The turn a model call was answered with, as a fixture names it (test/fixtures/clients/README.md). */
  reply?: PlayedReply;
}

export type PlayedReply =
  | { type: 'tool_call'; id: string; name: string; arguments: string; namespace?: string }
  | { type: 'custom_tool_call'; id: string; name: string; input: string; namespace?: string }
  | { type: 'text'; text: string };

/** A tool call's id as the API spells one (Gemini has none: the gateway makes its own). */
const CALL_ID_PREFIX: Record<Api, string> = { messages: 'toolu_', responses: 'call_', chat: 'call_', gemini: 'call_' };

function playedReply(reply: Reply): PlayedReply {
  if (reply.kind === 'text') return { type: 'text', text: reply.text };
  const namespace = reply.tool.namespace === undefined ? {} : { namespace: reply.tool.namespace };
  // A freeform (custom) tool's call carries raw text, not JSON arguments (the fixture format's custom_tool_call).
  if (reply.input !== undefined)
    return {
      type: 'custom_tool_call',
      id: reply.callId ?? '',
      name: reply.tool.name,
      input: reply.input,
      ...namespace,
    };
  return {
    type: 'tool_call',
    id: reply.callId ?? '',
    name: reply.tool.name,
    arguments: JSON.stringify(reply.args),
    ...namespace,
  };
}

export interface MockUpstream {
  label: string;
  origin: string;
  requests: Recorded[];
  /** The task the next requests play (the run's directory and token); undefined: the model's part (model-part.ts). */
  setTask(task: Task | undefined): void;
  close(): Promise<void>;
}

/** A larger body is refused (413): the clients' requests are tens of kB. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'x-goog-api-key', 'api-key']);

function apiOf(method: string, path: string): Api | undefined {
  if (method !== 'POST') return undefined;
  if (path.endsWith('/messages')) return 'messages';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/chat/completions')) return 'chat';
  if (path.endsWith(':generateContent') || path.endsWith(':streamGenerateContent')) return 'gemini';
  return undefined;
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Requests that are not a turn of the loop: readiness and side lookups the gateway or a client may make. */
function answerOther(res: ServerResponse, method: string, path: string): string {
  if (path.endsWith('/count_tokens')) return (writeJson(res, 200, { input_tokens: 42 }), '200');
  if (path.endsWith(':countTokens')) return (writeJson(res, 200, { totalTokens: 42 }), '200');
  if (method === 'GET' && path.endsWith('/models')) {
    return (
      writeJson(res, 200, {
        object: 'list',
        data: [{ id: 'mock-model', object: 'model', created: 0, owned_by: 'mock' }],
        models: [],
      }),
      '200'
    );
  }
  if ((method === 'HEAD' || method === 'GET') && path === '/') return (writeJson(res, 200, {}), '200');
  writeJson(res, 404, { error: { type: 'not_found_error', message: `mock: no ${method} ${path}` } });
  return '404';
}

function play(
  api: Api,
  res: ServerResponse,
  body: Record<string, unknown>,
  path: string,
  task: Task | undefined,
): { turn: ParsedTurn; reply: Reply } {
  const answerWith = <T extends ParsedTurn>(
    turn: T,
    answer: (res: ServerResponse, turn: T, reply: Reply) => void,
  ): { turn: ParsedTurn; reply: Reply } => {
    // The reply is the text the client really got (a recording holds it): the JSON, when JSON was asked for.
    const played = task === undefined ? playModel(turn) : decide(turn.tools, turn.toolResults, task);
    const reply = jsonReply(played, turn);
    if (reply.kind === 'tool') reply.callId = freshId(CALL_ID_PREFIX[api]);
    answer(res, turn, reply);
    return { turn, reply };
  };
  if (api === 'messages') return answerWith(parseMessages(body), answerMessages);
  if (api === 'responses') return answerWith(parseResponses(body), answerResponses);
  if (api === 'chat') return answerWith(parseChat(body), answerChat);
  return answerWith(parseGemini(body, path), answerGemini);
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  state: { task: Task | undefined; requests: Recorded[] },
): Promise<void> {
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const path = new URL(url, 'http://mock').pathname;
  const headers = { ...req.headers };
  for (const name of SECRET_HEADERS) if (headers[name] !== undefined) headers[name] = '<redacted>';
  const text = await readBody(req);
  const record: Recorded = { api: 'other', method, url, headers, body: undefined, toolResults: [], answered: '' };
  state.requests.push(record);
  if (text === undefined) {
    record.answered = '413';
    writeJson(res, 413, { error: { type: 'invalid_request_error', message: 'mock: body too large' } });
    return;
  }
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text.slice(0, 1_000);
  }
  record.body = body;
  const api = apiOf(method, path);
  if (api === undefined || path.endsWith('/count_tokens')) {
    record.answered = answerOther(res, method, path);
    return;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    record.answered = '400';
    writeJson(res, 400, { error: { type: 'invalid_request_error', message: 'mock: the body is not a JSON object' } });
    return;
  }
  record.api = api;
  const { turn, reply } = play(api, res, asRecord(body), path, state.task);
  record.toolResults = turn.toolResults;
  record.answered = reply.kind === 'tool' ? `tool:${reply.tool.name}` : 'text';
  record.reply = playedReply(reply);
}

export async function startMockUpstream(label: string): Promise<MockUpstream> {
  const state: { task: Task | undefined; requests: Recorded[] } = { task: undefined, requests: [] };
  const server: Server = createServer((req, res) => {
    handle(req, res, state).catch((error: unknown) => {
      if (!res.headersSent) writeJson(res, 500, { error: { type: 'api_error', message: `mock: ${String(error)}` } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    label,
    origin: `http://127.0.0.1:${port}`,
    requests: state.requests,
    setTask(task) {
      state.task = task;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
