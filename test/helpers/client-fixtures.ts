/**
 * The recorded traffic of real clients (test/fixtures/clients/<client>-<version>/<flow>.json, the format of
 * test/fixtures/clients/README.md): loading every fixture of the format, and reading what a replay needs from a
 * recorded request — the API it speaks, the turn the recording server answered, the tool results it carries.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptedAnswer, ScriptedRefusal, ScriptedReply } from './upstreams/scripted.js';
import { apiOf } from './upstreams/scripted.js';

export const FIXTURE_FORMAT = 'llm-gateway/client-traffic@1';
export const FIXTURES_DIR = join(import.meta.dirname, '..', 'fixtures', 'clients');
/** The credential placeholder of a recording; a replay puts its own credential there. */
export const API_KEY_PLACEHOLDER = '<API_KEY>';

/** The APIs a caller speaks to the gateway. */
export type CallerApi = 'chat' | 'responses' | 'messages' | 'gemini';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  volatile_headers: string[];
  body: Record<string, unknown> | null;
  shortened: string[];
  /** The turn the recording server answered with, or its refusal (the call is then answered by no turn). */
  reply?: ScriptedAnswer;
}

export interface ClientFixture {
  format: string;
  client: { name: string; version: string; packages?: Record<string, string>; runtime?: string };
  flow: string;
  description?: string;
  requests: RecordedRequest[];
  /** `<client>-<version>/<flow>`, for test names. */
  name: string;
}

/**
 * Every fixture under FIXTURES_DIR (each `.json` of each client folder), and the files that are not fixtures of the
 * format (with why): the suite fails on those, so a recording is never skipped unnoticed.
 */
export function loadClientFixtures(dir = FIXTURES_DIR): { fixtures: ClientFixture[]; invalid: string[] } {
  const fixtures: ClientFixture[] = [];
  const invalid: string[] = [];
  for (const folder of readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()) {
    for (const file of readdirSync(join(dir, folder))
      .filter((f) => f.endsWith('.json'))
      .sort()) {
      const name = `${folder}/${file.slice(0, -'.json'.length)}`;
      let parsed: Omit<ClientFixture, 'name'>;
      try {
        parsed = JSON.parse(readFileSync(join(dir, folder, file), 'utf8')) as Omit<ClientFixture, 'name'>;
      } catch (error) {
        invalid.push(`${name}: not JSON (${String(error)})`);
        continue;
      }
      const problem = formatProblem(parsed);
      if (problem) invalid.push(`${name}: ${problem}`);
      else fixtures.push({ ...parsed, name });
    }
  }
  return { fixtures, invalid };
}

function formatProblem(parsed: Omit<ClientFixture, 'name'>): string | undefined {
  if (parsed.format !== FIXTURE_FORMAT) return `format is ${JSON.stringify(parsed.format)}, not ${FIXTURE_FORMAT}`;
  if (typeof parsed.client?.name !== 'string' || typeof parsed.client.version !== 'string')
    return 'client.name and client.version';
  if (!Array.isArray(parsed.requests)) return 'requests[]';
  const bad = parsed.requests.findIndex(
    (r) =>
      typeof r.method !== 'string' ||
      typeof r.path !== 'string' ||
      typeof r.headers !== 'object' ||
      r.headers === null ||
      typeof r.query !== 'object' ||
      r.query === null ||
      r.body === undefined,
  );
  return bad === -1 ? undefined : `requests[${bad}]: method, path, query, headers and body`;
}

/** The caller API of a recorded model call (undefined: a model list, a token count, anything the replay skips). */
export function callerApiOf(request: RecordedRequest): CallerApi | undefined {
  return apiOf(request.method, request.path);
}

type Json = Record<string, unknown>;

/**
 * How a recorded model call wants its answer: whole (`json`), or streamed — an event stream (`sse`: `stream: true`
 * in chat, Responses and Messages; Gemini's `:streamGenerateContent?alt=sse`) or Gemini's JSON array
 * (`:streamGenerateContent` without `alt`, or `alt=json`).
 */
export function answerFormOf(api: CallerApi, request: RecordedRequest): 'json' | 'sse' | 'json-array' {
  if (api !== 'gemini') return request.body?.stream === true ? 'sse' : 'json';
  if (!request.path.endsWith(':streamGenerateContent')) return 'json';
  return request.query.alt === 'sse' ? 'sse' : 'json-array';
}

/**
 * A Gemini fixture is a whole loop: a call answered with a function call, a later call sending a functionResponse of
 * that function (Gemini's calls carry no id of the server's: the client makes its own), then a final text.
 */
export function assertGeminiLoop(fixture: ClientFixture): void {
  const calls = fixture.requests
    .map((r, i) => ({ r, i }))
    .filter((c) => apiOf(c.r.method, c.r.path) === 'gemini' && c.r.body);
  const toolTurn = calls.find((c) => c.r.reply !== undefined && c.r.reply.type === 'tool_call');
  if (toolTurn === undefined) throw new Error(`${fixture.name}: a turn answered with a function call`);
  const name = (toolTurn.r.reply as { name: string }).name;
  const sendsResult = (body: Json): boolean =>
    ((body.contents ?? []) as Json[]).some((content) =>
      ((content.parts ?? []) as Json[]).some((part) => (part.functionResponse as Json | undefined)?.name === name),
    );
  const answered = calls.find((c) => c.i > toolTurn.i && sendsResult(c.r.body ?? {}));
  if (answered === undefined) throw new Error(`${fixture.name}: a later call sends the functionResponse of ${name}`);
  if (!calls.some((c) => c.i >= answered.i && c.r.reply?.type === 'text'))
    throw new Error(`${fixture.name}: a final text`);
}

/** A tool result's text: a string, or a list of parts (`input_text`, `text`, ...) joined. */
export function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) =>
        part !== null && typeof part === 'object' ? String((part as Json).text ?? (part as Json).output ?? '') : '',
      )
      .join('');
  return '';
}

/** The parts of a Gemini request's model turns, or of the others (the user's; a turn without a role is one). */
function geminiParts(body: Json, role: 'user' | 'model'): Json[] {
  return ((body.contents ?? []) as Json[])
    .filter((c) => (c.role === 'model') === (role === 'model') && Array.isArray(c.parts))
    .flatMap((c) => c.parts as Json[]);
}

/**
 * A functionResponse's text: its one string field when it has just one (Gemini CLI's `{output}`, or `{error}`),
 * else the whole response as JSON.
 */
function geminiResultText(response: unknown): string {
  if (response === null || typeof response !== 'object') return JSON.stringify(response ?? {});
  const values = Object.values(response);
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(response);
}

const RESPONSES_CALLS = new Set(['function_call', 'custom_tool_call']);
const RESPONSES_RESULTS = new Set(['function_call_output', 'custom_tool_call_output']);

const inputOf = (body: Json): Json[] => (Array.isArray(body.input) ? (body.input as Json[]) : []);

/** The tool results a caller's request sends (the call id each answers, and its text), in its own API's terms. */
export function toolResultsOf(api: CallerApi, body: Json): Array<{ id: string; text: string }> {
  if (api === 'gemini')
    return geminiParts(body, 'user')
      .map((p) => p.functionResponse as Json | undefined)
      .filter((r) => r !== undefined)
      .map((r) => ({ id: typeof r.id === 'string' ? r.id : '', text: geminiResultText(r.response) }));
  if (api === 'chat') {
    return ((body.messages ?? []) as Json[])
      .filter((m) => m.role === 'tool')
      .map((m) => ({ id: String(m.tool_call_id), text: resultText(m.content) }));
  }
  if (api === 'responses')
    return inputOf(body)
      .filter((i) => RESPONSES_RESULTS.has(String(i.type)))
      .map((i) => ({ id: String(i.call_id), text: resultText(i.output) }));
  const blocks = ((body.messages ?? []) as Json[])
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => m.content as Json[]);
  return blocks
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({ id: String(b.tool_use_id), text: resultText(b.content) }));
}

/**
 * The tool calls a caller's request holds in its history, each as the turn that made it: a function call (its name,
 * its arguments as JSON text; in the Responses API maybe in a `namespace`) or a Responses `custom_tool_call` (its
 * raw `input`).
 */
export function toolCallsOf(api: CallerApi, body: Json): Array<Exclude<ScriptedReply, { type: 'text' }>> {
  if (api === 'gemini')
    return geminiParts(body, 'model')
      .map((p) => p.functionCall as Json | undefined)
      .filter((c) => c !== undefined)
      .map((c) => ({
        type: 'tool_call' as const,
        id: typeof c.id === 'string' ? c.id : '',
        name: String(c.name),
        arguments: JSON.stringify(c.args ?? {}),
      }));
  if (api === 'chat') {
    return ((body.messages ?? []) as Json[]).flatMap((m) =>
      ((m.tool_calls ?? []) as Json[]).map((c) => ({
        type: 'tool_call' as const,
        id: String(c.id),
        name: String((c.function as Json).name),
        arguments: String((c.function as Json).arguments ?? '{}'),
      })),
    );
  }
  if (api === 'responses') {
    return inputOf(body)
      .filter((i) => RESPONSES_CALLS.has(String(i.type)))
      .map((i) => {
        const namespace = typeof i.namespace === 'string' ? { namespace: i.namespace } : {};
        const call = { id: String(i.call_id), name: String(i.name), ...namespace };
        return i.type === 'custom_tool_call'
          ? { type: 'custom_tool_call' as const, ...call, input: String(i.input ?? '') }
          : { type: 'tool_call' as const, ...call, arguments: String(i.arguments ?? '{}') };
      });
  }
  const blocks = ((body.messages ?? []) as Json[])
    .filter((m) => m.role === 'assistant' && Array.isArray(m.content))
    .flatMap((m) => m.content as Json[]);
  return blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      type: 'tool_call' as const,
      id: String(b.id),
      name: String(b.name),
      arguments: JSON.stringify(b.input ?? {}),
    }));
}

/** The refusal a recorded call was answered with (Anthropic's refusal of a message thread...), if it was refused. */
export function refusalOf(request: RecordedRequest): ScriptedRefusal | undefined {
  return request.reply?.type === 'refusal' ? request.reply : undefined;
}

/**
 * The turn to answer request `index` with: the recorded `reply`; for a fixture recorded without one, the tool call
 * the next model call's history shows answered (the first it holds that this request does not: as the client kept
 * it, so a replay checks the caller gets back exactly what it then sends), else a text. A refused call has none.
 */
export function replyFor(fixture: ClientFixture, index: number): ScriptedReply {
  const request = fixture.requests[index] as RecordedRequest;
  if (request.reply?.type === 'refusal') throw new Error(`${fixture.name} request ${index} was refused: no turn`);
  if (request.reply) return request.reply;
  const api = callerApiOf(request) as CallerApi;
  const known = new Set(toolCallsOf(api, request.body ?? {}).map((c) => c.id));
  for (const later of fixture.requests.slice(index + 1)) {
    if (callerApiOf(later) !== api || !later.body) continue;
    const fresh = toolCallsOf(api, later.body).find((c) => !known.has(c.id));
    if (fresh) return fresh;
  }
  return { type: 'text', text: 'Done.' };
}
