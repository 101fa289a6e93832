/**
 * `npm run record-traffic [-- <client> ...]`: runs each SDK client (scripts/record-traffic-clients.ts) through one
 * agent loop against a local server that plays the model provider (test/helpers/upstreams/scripted.ts: a tool call,
 * then the final answer), and writes what the client sent as fixtures,
 * test/fixtures/clients/<client>-<version>/<flow>.json, in the format test/fixtures/clients/README.md describes:
 * every request's method, path, query, headers (credentials replaced by placeholders; headers that differ from
 * machine to machine or run to run kept and named in `volatile_headers`), body (strings over 1,000 characters
 * shortened, nothing else touched) and the turn the server answered it with. Offline: nothing leaves 127.0.0.1.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptedUpstream, type ScriptedRequest } from '../test/helpers/upstreams/scripted.js';
import { agentLoop, withPreamble } from '../test/helpers/upstreams/scripted.js';
import { FLOWS, PROMPT, TOOL_RESULT, installedVersion, type ClientFlow } from './record-traffic-clients.js';
import { API_KEY_PLACEHOLDER, CREDENTIAL_HEADERS, FORMAT } from './client-traffic-format.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures', 'clients');
/** The key every client is given; replaced by API_KEY_PLACEHOLDER wherever it appears. */
const RECORDING_KEY = 'sk-recording-0123456789abcdefghijklmnop';
const VOLATILE_HEADERS = new Set([
  'host',
  'content-length',
  'user-agent',
  'x-stainless-os',
  'x-stainless-arch',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-retry-count',
  'x-stainless-timeout',
  'traceparent',
  'tracestate',
  'baggage',
]);
const LONG_TEXT = 1000;
const KEEP_TEXT = 200;

function shorten(value: unknown, path: string, shortened: string[]): unknown {
  if (typeof value === 'string') {
    const clean = value.split(RECORDING_KEY).join(API_KEY_PLACEHOLDER);
    if (clean.length <= LONG_TEXT) return clean;
    shortened.push(path);
    return `${clean.slice(0, KEEP_TEXT)}…[shortened from ${clean.length} characters]`;
  }
  if (Array.isArray(value)) return value.map((v, i) => shorten(v, `${path}[${i}]`, shortened));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, shorten(v, path === '' ? k : `${path}.${k}`, shortened)]),
    );
  }
  return value;
}

function headersOf(request: ScriptedRequest): { headers: Record<string, string>; volatile: string[] } {
  const headers: Record<string, string> = {};
  for (const [name, raw] of Object.entries(request.headers)) {
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (CREDENTIAL_HEADERS.has(name))
      headers[name] = /^bearer /i.test(value) ? `${value.slice(0, 7)}${API_KEY_PLACEHOLDER}` : API_KEY_PLACEHOLDER;
    else headers[name] = value.split(RECORDING_KEY).join(API_KEY_PLACEHOLDER);
  }
  return {
    headers,
    volatile: Object.keys(headers)
      .filter((h) => VOLATILE_HEADERS.has(h) || h.startsWith('x-stainless-helper'))
      .sort(),
  };
}

function fixtureRequest(request: ScriptedRequest): Record<string, unknown> {
  const url = new URL(request.url, 'http://recording');
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    query[key] = all.length === 1 ? (all[0] as string) : all;
  }
  const { headers, volatile } = headersOf(request);
  const shortened: string[] = [];
  const body = request.body === undefined ? null : shorten(request.body, '', shortened);
  return {
    method: request.method,
    path: url.pathname,
    query,
    headers,
    volatile_headers: volatile,
    body,
    shortened,
    ...(request.reply ? { reply: request.reply } : {}),
  };
}

async function record(flow: ClientFlow): Promise<string> {
  const server = await startScriptedUpstream(
    flow.preamble === undefined ? agentLoop : withPreamble(agentLoop, flow.preamble),
  );
  try {
    await flow.run(server.origin, RECORDING_KEY);
  } finally {
    await server.close();
  }
  if (server.modelCalls().length < 2)
    throw new Error(`${flow.client}/${flow.flow}: ${server.modelCalls().length} model call(s), not a whole loop`);
  const packages = Object.fromEntries(
    flow.packages.map((name) => [name, installedVersion(name, flow.installedIn?.())]),
  );
  const version = packages[flow.packages[0] as string] as string;
  const fixture = {
    format: FORMAT,
    client: { name: flow.client, version, packages, runtime: `node ${process.versions.node}` },
    flow: flow.flow,
    description: flow.description,
    recorded_with: `npm run record-traffic -- ${flow.client}`,
    script: { prompt: PROMPT, tool_result: TOOL_RESULT, ...(flow.preamble ? { preamble: flow.preamble } : {}) },
    requests: server.requests.map(fixtureRequest),
  };
  const dir = join(FIXTURES, `${flow.client}-${version}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${flow.flow}.json`);
  writeFileSync(file, `${JSON.stringify(fixture, null, 2)}\n`);
  return file;
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const known = new Set(FLOWS.map((f) => f.client));
  const unknown = wanted.filter((w) => !known.has(w));
  if (unknown.length > 0) throw new Error(`unknown client(s) ${unknown.join(', ')}; known: ${[...known].join(', ')}`);
  let failed = 0;
  for (const flow of FLOWS.filter((f) => wanted.length === 0 || wanted.includes(f.client))) {
    try {
      console.log(`recorded ${await record(flow)}`);
    } catch (error) {
      failed += 1;
      console.error(
        `FAILED ${flow.client}/${flow.flow}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    }
  }
  if (failed > 0) process.exitCode = 1;
}

await main();
