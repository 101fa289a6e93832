/**
 * The recorded traffic of real clients (test/fixtures/clients/<client>-<version>/<flow>.json, the format of
 * test/fixtures/clients/README.md): loading every fixture of the format, and reading what a replay needs from a
 * recorded request — the API it speaks, the turn the recording server answered, the tool results it carries.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptedReply } from './scripted-replies.js';
import { apiOf } from './scripted-upstream.js';

export const FIXTURE_FORMAT = 'llm-gateway/client-traffic@1';
export const FIXTURES_DIR = join(import.meta.dirname, '..', 'fixtures', 'clients');
/** The credential placeholder of a recording; a replay puts its own credential there. */
export const API_KEY_PLACEHOLDER = '<API_KEY>';

/** The APIs a caller speaks to the gateway. */
export type CallerApi = 'chat' | 'responses' | 'messages';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  volatile_headers: string[];
  body: Record<string, unknown> | null;
  shortened: string[];
  reply?: ScriptedReply;
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
  for (const folder of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
    for (const file of readdirSync(join(dir, folder)).filter((f) => f.endsWith('.json')).sort()) {
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
  if (typeof parsed.client?.name !== 'string' || typeof parsed.client.version !== 'string') return 'client.name and client.version';
  if (!Array.isArray(parsed.requests)) return 'requests[]';
  const bad = parsed.requests.findIndex((r) => typeof r.method !== 'string' || typeof r.path !== 'string' || typeof r.headers !== 'object' || r.headers === null || typeof r.query !== 'object' || r.query === null || r.body === undefined);
  return bad === -1 ? undefined : `requests[${bad}]: method, path, query, headers and body`;
}

/** The caller API of a recorded model call (undefined: a model list, a token count, anything the replay skips). */
export function callerApiOf(request: RecordedRequest): CallerApi | undefined {
  const api = apiOf(request.method, request.path);
  return api === 'gemini' ? undefined : api;
}

type Json = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part !== null && typeof part === 'object' ? String((part as Json).text ?? (part as Json).output ?? '') : '')).join('');
  return '';
}

/** The tool results a caller's request sends (the call id each answers, and its text), in its own API's terms. */
export function toolResultsOf(api: CallerApi, body: Json): Array<{ id: string; text: string }> {
  if (api === 'chat') {
    return ((body.messages ?? []) as Json[]).filter((m) => m.role === 'tool').map((m) => ({ id: String(m.tool_call_id), text: textOf(m.content) }));
  }
  if (api === 'responses') {
    const input = Array.isArray(body.input) ? (body.input as Json[]) : [];
    return input.filter((i) => i.type === 'function_call_output').map((i) => ({ id: String(i.call_id), text: textOf(i.output) }));
  }
  const blocks = ((body.messages ?? []) as Json[]).filter((m) => m.role === 'user' && Array.isArray(m.content)).flatMap((m) => m.content as Json[]);
  return blocks.filter((b) => b.type === 'tool_result').map((b) => ({ id: String(b.tool_use_id), text: textOf(b.content) }));
}

/** The tool calls a caller's request holds in its history (what each result answers: its name). */
export function toolCallsOf(api: CallerApi, body: Json): Array<{ id: string; name: string }> {
  if (api === 'chat') {
    return ((body.messages ?? []) as Json[]).flatMap((m) => ((m.tool_calls ?? []) as Json[]).map((c) => ({ id: String(c.id), name: String((c.function as Json).name) })));
  }
  if (api === 'responses') {
    const input = Array.isArray(body.input) ? (body.input as Json[]) : [];
    return input.filter((i) => i.type === 'function_call').map((i) => ({ id: String(i.call_id), name: String(i.name) }));
  }
  const blocks = ((body.messages ?? []) as Json[]).filter((m) => m.role === 'assistant' && Array.isArray(m.content)).flatMap((m) => m.content as Json[]);
  return blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: String(b.id), name: String(b.name) }));
}

/**
 * The turn to answer request `index` with: the recorded `reply`; for a fixture recorded without one, the tool call
 * the next model call's history shows answered (the first it holds that this request does not), else a text.
 */
export function replyFor(fixture: ClientFixture, index: number): ScriptedReply {
  const request = fixture.requests[index] as RecordedRequest;
  if (request.reply) return request.reply;
  const api = callerApiOf(request) as CallerApi;
  const known = new Set(toolCallsOf(api, request.body ?? {}).map((c) => c.id));
  for (const later of fixture.requests.slice(index + 1)) {
    if (callerApiOf(later) !== api || !later.body) continue;
    const fresh = toolCallsOf(api, later.body).find((c) => !known.has(c.id));
    if (!fresh) continue;
    return { type: 'tool_call', id: fresh.id, name: fresh.name, arguments: argumentsOf(api, later.body, fresh.id) };
  }
  return { type: 'text', text: 'Done.' };
}

function argumentsOf(api: CallerApi, body: Json, id: string): string {
  if (api === 'chat') {
    const call = ((body.messages ?? []) as Json[]).flatMap((m) => (m.tool_calls ?? []) as Json[]).find((c) => c.id === id);
    return String((call?.function as Json | undefined)?.arguments ?? '{}');
  }
  if (api === 'responses') return String(((body.input ?? []) as Json[]).find((i) => i.call_id === id && i.type === 'function_call')?.arguments ?? '{}');
  const use = ((body.messages ?? []) as Json[]).flatMap((m) => (Array.isArray(m.content) ? (m.content as Json[]) : [])).find((b) => b.type === 'tool_use' && b.id === id);
  return JSON.stringify(use?.input ?? {});
}
