// `npm run conformance -- --record [client]`: the client's native path run as usual, and what the client sent the
// gateway (the tap's copy of each request) written as a fixture, test/fixtures/clients/<client>-<version>/
// conformance-tool-loop.json, in the format of test/fixtures/clients/README.md, each model call with the turn the
// mock answered it with. The native path passes every model call on as one upstream call in the same API, so the
// n-th model call the client sent is the n-th the mock answered; the tool results each carries are compared to be
// sure of it. Recording a new release is one command: `npm run conformance -- --record claude-code@<version>`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseMessages } from './api-anthropic.js';
import { parseChat } from './api-chat.js';
import { parseGemini } from './api-gemini.js';
import { parseResponses } from './api-responses.js';
import { GATEWAY_KEY, ROOT } from './gateway.js';
import type { Recorded } from './mock-upstream.js';
import type { PathSpec } from './paths.js';
import type { ClientPin } from './pins.js';
import type { SentRequest } from './tap.js';
import { asRecord, TASK_FILE, TASK_PROMPT } from './task.js';
import { API_KEY_PLACEHOLDER, CREDENTIAL_HEADERS, FORMAT } from '../client-traffic-format.js';

export const RECORDED_FLOW = 'conformance-tool-loop';
/** Headers that differ from machine to machine or run to run (kept as sent, named in `volatile_headers`). */
const VOLATILE_HEADERS = new Set([
  'host',
  'content-length',
  'user-agent',
  'traceparent',
  'tracestate',
  'baggage',
  'x-claude-code-session-id',
  'session_id',
  'session-id',
  'thread-id',
  'conversation_id',
  'x-client-request-id',
  'x-codex-turn-metadata',
  'x-codex-window-id',
]);
const LONG_TEXT = 1_000;
const KEEP_TEXT = 200;

type CallerApi = 'messages' | 'responses' | 'chat' | 'gemini';

function callerApiOf(method: string, path: string): CallerApi | undefined {
  if (method !== 'POST') return undefined;
  if (path.endsWith('/messages')) return 'messages';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/chat/completions')) return 'chat';
  if (/\/models\/[^/]+:(generateContent|streamGenerateContent)$/.test(path)) return 'gemini';
  return undefined;
}

function withoutKey(text: string): string {
  return text.split(GATEWAY_KEY).join(API_KEY_PLACEHOLDER);
}

/** Every string over LONG_TEXT characters cut to its first KEEP_TEXT and a note of its length; its path noted. */
function shorten(value: unknown, path: string, shortened: string[]): unknown {
  if (typeof value === 'string') {
    const clean = withoutKey(value);
    if (clean.length <= LONG_TEXT) return clean;
    shortened.push(path);
    return `${clean.slice(0, KEEP_TEXT)}…[shortened from ${clean.length} characters]`;
  }
  if (Array.isArray(value)) return value.map((item, i) => shorten(item, `${path}[${i}]`, shortened));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, shorten(item, path === '' ? key : `${path}.${key}`, shortened)]),
    );
  }
  return value;
}

function headersOf(sent: SentRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, raw] of Object.entries(sent.headers)) {
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (CREDENTIAL_HEADERS.has(name))
      headers[name] = /^bearer /i.test(value) ? `Bearer ${API_KEY_PLACEHOLDER}` : API_KEY_PLACEHOLDER;
    else headers[name] = withoutKey(value);
  }
  return headers;
}

function parsedBody(text: string | undefined): unknown {
  if (text === undefined || text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toolResultsOf(api: CallerApi, body: unknown, path: string): string[] {
  const record = asRecord(body);
  if (api === 'gemini') return parseGemini(record, path).toolResults;
  if (api === 'messages') return parseMessages(record).toolResults;
  if (api === 'responses') return parseResponses(record).toolResults;
  return parseChat(record).toolResults;
}

function fixtureRequest(sent: SentRequest, reply: Recorded['reply']): Record<string, unknown> {
  const url = new URL(sent.url, 'http://recording');
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    query[key] = all.length === 1 ? (all[0] as string) : all;
  }
  const headers = headersOf(sent);
  const shortened: string[] = [];
  const body = shorten(parsedBody(sent.body), '', shortened);
  const volatile = Object.keys(headers).filter((name) => VOLATILE_HEADERS.has(name) || name.startsWith('x-stainless-'));
  return {
    method: sent.method,
    path: url.pathname,
    query,
    headers,
    volatile_headers: volatile.sort(),
    body,
    shortened,
    ...(reply ? { reply } : {}),
  };
}

/** Pairs the client's model calls with the mock's answers, in order; throws when they do not match one to one. */
function requestsOf(sent: SentRequest[], upstream: Recorded[]): Array<Record<string, unknown>> {
  const answered = upstream.filter((request) => request.reply !== undefined);
  let next = 0;
  const requests = sent.map((request) => {
    const pathname = new URL(request.url, 'http://recording').pathname;
    const api = callerApiOf(request.method, pathname);
    if (api === undefined) return fixtureRequest(request, undefined);
    const match = answered[next];
    next += 1;
    const body = parsedBody(request.body);
    if (match === undefined) throw new Error(`model call ${next} of the client reached no upstream`);
    if (JSON.stringify(toolResultsOf(api, body, pathname)) !== JSON.stringify(toolResultsOf(api, match.body, pathname)))
      throw new Error(`model call ${next}: the upstream call in its place carries other tool results`);
    return fixtureRequest(request, match.reply);
  });
  if (next !== answered.length) throw new Error(`${next} model calls sent, ${answered.length} answered upstream`);
  if (next < 2) throw new Error(`${next} model call(s): not a whole loop`);
  return requests;
}

/** Writes the fixture of one native run; returns its path. */
export function writeFixture(pin: ClientPin, path: PathSpec, sent: SentRequest[], upstream: Recorded[]): string {
  const fixture = {
    format: FORMAT,
    client: {
      name: pin.id,
      version: pin.version,
      packages: { [pin.package]: pin.version },
      runtime: 'the CLI as npm installs it',
    },
    flow: RECORDED_FLOW,
    description: `npm run conformance's one-tool task (read ${TASK_FILE}, answer with what it says), on the client's default settings, ${path.via === 'gateway' ? `through the gateway's ${path.label}` : `on the ${path.label} (the gateway cannot serve its API yet)`}`,
    recorded_with: `npm run conformance -- --record ${pin.id}@${pin.version}`,
    edited:
      'credentials replaced by <API_KEY>; strings over 1,000 characters shortened (listed in `shortened`); everything else as the client sent it',
    script: { prompt: TASK_PROMPT, tool_result: 'the random token the task file holds' },
    requests: requestsOf(sent, upstream),
  };
  const dir = join(ROOT, 'test', 'fixtures', 'clients', `${pin.id}-${pin.version}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${RECORDED_FLOW}.json`);
  writeFileSync(file, `${JSON.stringify(fixture, null, 2)}\n`);
  return file;
}
