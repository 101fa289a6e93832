#!/usr/bin/env node
// Records what Codex CLI sends on the Responses API, as test fixtures (test/fixtures/clients/codex-<version>/).
//
//   node scripts/record-codex.mjs [--codex <path to the codex command>]   (default: $CODEX_BIN, else `codex` on PATH)
//
// Codex runs offline, as configured by only a provider entry (wire_api = "responses", a base URL, a key variable)
// and the switches that keep it from the network, against a scripted Responses server on 127.0.0.1 that asks for
// one tool call and then answers "DONE". Each flow is a whole agent loop, two requests: the first turn, and the
// turn that carries the tool's result back.
//   default-exec        the default model (Codex 0.169: gpt-6.1-sol) in its code mode: no `tools`, an
//                       `additional_tools` input item of namespaces; the model calls `exec` (a freeform tool in the
//                       `functions` namespace) with JavaScript that runs exec_command
//   gpt-5.5-function    `-m gpt-5.5` (the catalog's classic tool set: functions, apply_patch, tool_search,
//                       web_search): exec_command, a function tool
//   gpt-5.5-apply-patch the same tools: apply_patch, Codex's freeform tool with a Lark grammar
//   gpt-5.4-namespace   `-m gpt-5.4`, a model the bundled catalog does not know (fallback metadata), for which Codex
//                       declares the `multi_agent_v1` namespace: its wait_agent
// Kept as Codex sent them: method, path, headers, body (every field and its structure). Changed: the API key
// (redacted), `host` and `content-length` (they describe this run; the shortened body has another length), and
// text longer than 1,000 characters (instructions, tool descriptions), shortened with a note of its length.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const codexFlag = process.argv.indexOf('--codex');
const codex = codexFlag > 0 ? process.argv[codexFlag + 1] : (process.env.CODEX_BIN ?? 'codex');
const KEY = 'sk-codex-recording-key';
const LONG = 1000;

const version = execFileSync(codex, ['--version'], { encoding: 'utf8' }).trim().split(/\s+/).at(-1);
const flows = [
  { flow: 'default-exec', prompt: 'RUNEXEC: run `echo hi-from-codex`', args: [] },
  { flow: 'gpt-5.5-function', prompt: 'RUNTOOL: run `echo hi-from-codex`', args: ['-m', 'gpt-5.5'] },
  { flow: 'gpt-5.5-apply-patch', prompt: 'RUNPATCH: add the file new.txt', args: ['-m', 'gpt-5.5'] },
  { flow: 'gpt-5.4-namespace', prompt: 'RUNNS: wait for the agents', args: ['-m', 'gpt-5.4'] },
];

/** The scripted model: one tool call for the flow's keyword, then (its result in the input) the final answer. */
function answer(body) {
  const input = JSON.stringify(body?.input ?? []);
  const base = {
    id: `resp_rec_${Math.random().toString(16).slice(2, 10)}`,
    object: 'response',
    created_at: 1,
    model: body?.model,
    status: 'in_progress',
    output: [],
  };
  const reasoning = {
    type: 'reasoning',
    id: 'rs_rec_1',
    summary: [{ type: 'summary_text', text: 'plan' }],
    encrypted_content: 'ENCRYPTED_REASONING_1',
  };
  let output;
  if (/_output"/.test(input))
    output = [
      {
        type: 'message',
        id: 'msg_rec_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'DONE', annotations: [] }],
      },
    ];
  else if (input.includes('RUNEXEC'))
    output = [
      {
        type: 'custom_tool_call',
        id: 'ctc_rec_exec',
        status: 'completed',
        call_id: 'call_rec_js',
        name: 'exec',
        namespace: 'functions',
        input: 'text(await tools.exec_command({ cmd: "echo hi-from-codex" }));',
      },
    ];
  else if (input.includes('RUNNS'))
    output = [
      {
        type: 'function_call',
        id: 'fc_rec_ns',
        status: 'completed',
        call_id: 'call_rec_ns',
        name: 'wait_agent',
        namespace: 'multi_agent_v1',
        arguments: '{"targets":["agent-1"],"timeout_ms":1000}',
      },
    ];
  else if (input.includes('RUNPATCH'))
    output = [
      reasoning,
      {
        type: 'custom_tool_call',
        id: 'ctc_rec_1',
        status: 'completed',
        call_id: 'call_rec_patch',
        name: 'apply_patch',
        input: '*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch\n',
      },
    ];
  else
    output = [
      reasoning,
      {
        type: 'function_call',
        id: 'fc_rec_1',
        status: 'completed',
        call_id: 'call_rec_exec',
        name: 'exec_command',
        arguments: '{"cmd":"echo hi-from-codex"}',
      },
    ];
  const events = [['response.created', { response: base }]];
  output.forEach((item, i) =>
    events.push(
      ['response.output_item.added', { output_index: i, item }],
      ['response.output_item.done', { output_index: i, item }],
    ),
  );
  events.push([
    'response.completed',
    {
      response: {
        ...base,
        status: 'completed',
        output,
        usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
      },
    },
  ]);
  return events
    .map(([type, data], i) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: i, ...data })}\n\n`)
    .join('');
}

/** Headers that differ from machine to machine or run to run (kept as sent, listed in `volatile_headers`). */
const VOLATILE = new Set([
  'user-agent',
  'session_id',
  'session-id',
  'conversation_id',
  'x-client-request-id',
  'x-codex-turn-metadata',
  'traceparent',
]);

/**
 * The body as Codex sent it, every string longer than LONG characters cut to its first 200 and a note of its length
 * (the format of test/fixtures/clients/README.md), each such path added to `shortened`; every other value kept.
 */
function sanitise(value, shortened, path = '') {
  if (typeof value === 'string') {
    if (value.length <= LONG) return value;
    shortened.push(path);
    return `${value.slice(0, 200)}…[shortened from ${value.length} characters]`;
  }
  if (Array.isArray(value)) return value.map((item, i) => sanitise(item, shortened, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, sanitise(item, shortened, path === '' ? key : `${path}.${key}`)]),
  );
}

async function record({ flow, prompt, args }) {
  const requests = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (part) => (raw += part));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : undefined;
      const { host: _host, 'content-length': _length, ...headers } = req.headers;
      if (headers.authorization) headers.authorization = headers.authorization.replace(KEY, '<API_KEY>');
      const [path, query = ''] = req.url.split('?');
      const shortened = [];
      requests.push({
        method: req.method,
        path,
        query: Object.fromEntries(new URLSearchParams(query)),
        headers,
        volatile_headers: Object.keys(headers).filter((name) => VOLATILE.has(name)),
        body: body && sanitise(body, shortened),
        shortened,
      });
      if (req.url !== '/v1/responses') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(answer(body));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  const work = mkdtempSync(join(tmpdir(), 'codex-work-'));
  writeFileSync(
    join(home, 'config.toml'),
    [
      'model_provider = "gw"',
      'check_for_update_on_startup = false',
      '[analytics]\nenabled = false',
      '[feedback]\nenabled = false',
      '[features]\nplugins = false', // no GitHub/ChatGPT lookups: the run stays offline
      '[model_providers.gw]',
      'name = "Gateway"',
      `base_url = "http://127.0.0.1:${server.address().port}/v1"`,
      'env_key = "GW_API_KEY"',
      'wire_api = "responses"',
    ].join('\n'),
  );
  try {
    await new Promise((resolve, reject) => {
      const child = spawn(codex, ['exec', '--skip-git-repo-check', ...args, prompt], {
        cwd: work,
        env: { ...process.env, CODEX_HOME: home, GW_API_KEY: KEY },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (part) => (stderr += part));
      child.on('error', reject);
      child.on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`codex exec (${flow}) exited ${code}: ${stderr.slice(-2000)}`)),
      );
    });
  } finally {
    server.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
  return {
    format: 'llm-gateway/client-traffic@1',
    client: { name: 'codex', version, packages: { '@openai/codex': version } },
    flow,
    description: `codex exec, default settings, wire_api = responses: ${flow}`,
    recorded_with: `node scripts/record-codex.mjs: codex exec --skip-git-repo-check ${[...args, JSON.stringify(prompt)].join(' ')} (default settings, wire_api = "responses")`,
    edited: 'authorization redacted; host and content-length removed; texts over 1,000 characters shortened',
    requests,
  };
}

const dir = join(root, 'test', 'fixtures', 'clients', `codex-${version}`);
mkdirSync(dir, { recursive: true });
for (const flow of flows) {
  const fixture = await record(flow);
  if (fixture.requests.length !== 2)
    throw new Error(`${flow.flow}: expected two turns, got ${fixture.requests.length} requests`);
  writeFileSync(join(dir, `${flow.flow}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
  console.log(`${join(dir, `${flow.flow}.json`)}: ${fixture.requests.length} requests`);
}
