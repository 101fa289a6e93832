// The harness of `npm run conformance` (scripts/conformance/), without the CLIs: its mock upstreams must speak each
// API well enough for the gateway's own translators (a red cell must be the gateway's, not the mock's), its judge
// must tell a pass from each way of failing, and the matrix must land in docs/compatibility.md without touching the
// hand-written text around it, and be read back for --regressions-only.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayConfig, type Mocks, type UpstreamName } from '../../scripts/conformance/gateway.js';
import { judge, type CellResult } from '../../scripts/conformance/judge.js';
import {
  BEGIN,
  END,
  committedResults,
  matrixMarkdown,
  verdict,
  writeMatrix,
} from '../../scripts/conformance/matrix.js';
import { startMockUpstream, type Recorded } from '../../scripts/conformance/mock-upstream.js';
import { PATHS, type PathSpec } from '../../scripts/conformance/paths.js';
import { decideMcp } from '../../scripts/conformance/mcp-task.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';

const TASK = { workDir: '/work/task', token: 'conformance-ok-0123456789abcdef' };
const READ_TOOL = {
  name: 'Read',
  description: 'Read a file',
  input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
};
const READ_FILE_TOOL = {
  name: 'read_file',
  description: 'Read a file',
  parametersJsonSchema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
};
const EXEC_TOOL = {
  type: 'function',
  name: 'exec_command',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};

async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: answer.status, text: await answer.text() };
}

/** The id of the tool_use block of a Messages answer, JSON or streamed (its content_block_start). */
function toolUseId(text: string): string {
  const objects = text.startsWith('{')
    ? [JSON.parse(text) as Record<string, unknown>]
    : text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
  for (const object of objects) {
    const blocks = [
      ...((object.content as Array<Record<string, unknown>> | undefined) ?? []),
      (object.content_block as Record<string, unknown> | undefined) ?? {},
    ];
    const block = blocks.find((candidate) => candidate.type === 'tool_use');
    if (typeof block?.id === 'string') return block.id;
  }
  throw new Error(`no tool_use block in ${text.slice(0, 500)}`);
}

/** A Messages answer's tool input as text: the JSON answer's `input`, or the stream's input_json_delta pieces joined. */
function toolInputText(text: string): string {
  if (text.startsWith('{'))
    return JSON.stringify(
      (JSON.parse(text) as { content: Array<{ input?: unknown }> }).content.map((block) => block.input),
    );
  const deltas = text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as { delta?: { partial_json?: string } });
  return deltas.map((event) => event.delta?.partial_json ?? '').join('');
}

/** The function call of a Gemini `alt=sse` answer (the first `functionCall` part of its events). */
function geminiCall(text: string): { id?: string; name: string; args: unknown } {
  for (const line of text.split(/\r?\n/).filter((l) => l.startsWith('data: '))) {
    const response = JSON.parse(line.slice(6)) as {
      candidates?: Array<{
        content?: { parts?: Array<{ functionCall?: { id?: string; name: string; args: unknown } }> };
      }>;
    };
    const part = response.candidates?.[0]?.content?.parts?.find((p) => p.functionCall !== undefined);
    if (part?.functionCall) return part.functionCall;
  }
  throw new Error(`no functionCall in ${text.slice(0, 500)}`);
}

function apiCalls(requests: Recorded[]): Recorded[] {
  return requests.filter((request) => request.api !== 'other');
}

describe('conformance mocks through the gateway: one tool call, its result, the final answer', () => {
  let mocks: Mocks;
  const gateways = new Map<UpstreamName, TestGateway>();
  before(async () => {
    mocks = {
      anthropic: await startMockUpstream('anthropic'),
      responses: await startMockUpstream('responses'),
      chat: await startMockUpstream('chat'),
      gemini: await startMockUpstream('gemini'),
    };
    for (const mock of Object.values(mocks)) mock.setTask(TASK);
    for (const target of ['anthropic', 'responses', 'chat', 'gemini'] as const) {
      const configFile = { name: 'gateway.json', text: JSON.stringify(gatewayConfig(mocks, target)) };
      gateways.set(
        target,
        await startGateway({
          env: { CONFORMANCE_UPSTREAM_KEY: 'upstream-key-for-the-harness-test', LOG_LEVEL: 'warn' },
          configFile,
        }),
      );
    }
  });
  after(async () => {
    for (const gateway of gateways.values()) await gateway.close();
    for (const mock of Object.values(mocks)) await mock.close();
  });

  for (const target of ['anthropic', 'chat', 'gemini'] as const) {
    for (const stream of [true, false]) {
      test(`Messages API to the ${target} mock, stream ${String(stream)}: Read is asked for, its result reaches the mock, the answer quotes it`, async () => {
        const gateway = gateways.get(target) as TestGateway;
        const headers = { 'x-api-key': ADMIN_TOKEN, 'anthropic-version': '2023-06-01' };
        const first = {
          model: 'any-model',
          max_tokens: 256,
          stream,
          tools: [READ_TOOL],
          messages: [{ role: 'user', content: 'Read conformance.txt' }],
        };
        const mock = mocks[target];
        const from = mock.requests.length;
        const turn1 = await post(`${gateway.url}/v1/messages`, headers, first);
        assert.equal(turn1.status, 200, turn1.text);
        assert.match(turn1.text, /"type":"tool_use"/);
        assert.ok(turn1.text.includes('"name":"Read"'), turn1.text);
        assert.ok(toolInputText(turn1.text).includes('/work/task/conformance.txt'), 'the arguments name the task file');
        const id = toolUseId(turn1.text);
        const second = {
          ...first,
          messages: [
            ...first.messages,
            {
              role: 'assistant',
              content: [{ type: 'tool_use', id, name: 'Read', input: { file_path: '/work/task/conformance.txt' } }],
            },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: TASK.token }] },
          ],
        };
        const turn2 = await post(`${gateway.url}/v1/messages`, headers, second);
        assert.equal(turn2.status, 200, turn2.text);
        assert.ok(turn2.text.includes(`The tool said: ${TASK.token}`), turn2.text);
        const calls = apiCalls(mock.requests.slice(from));
        assert.deepEqual(
          calls.map((call) => call.answered),
          ['tool:Read', 'text'],
        );
        assert.ok(
          calls[1]?.toolResults.some((result) => result.includes(TASK.token)),
          'the mock read the tool result',
        );
      });
    }
  }

  for (const target of ['responses', 'chat', 'anthropic', 'gemini'] as const) {
    test(`Responses API to the ${target} mock: exec_command is asked for, its output reaches the mock, the answer quotes it`, async () => {
      const gateway = gateways.get(target) as TestGateway;
      const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const first = {
        model: 'any-model',
        stream: true,
        tools: [EXEC_TOOL],
        input: [{ type: 'message', role: 'user', content: 'Read conformance.txt' }],
      };
      const mock = mocks[target];
      const from = mock.requests.length;
      const turn1 = await post(`${gateway.url}/v1/responses`, headers, first);
      assert.equal(turn1.status, 200, turn1.text);
      assert.ok(turn1.text.includes('"name":"exec_command"') && turn1.text.includes('cat conformance.txt'), turn1.text);
      assert.match(turn1.text, /"type":"response\.completed"/);
      const callId = /"call_id":"([^"]+)"/.exec(turn1.text)?.[1] as string;
      const second = {
        ...first,
        input: [
          ...first.input,
          { type: 'function_call', call_id: callId, name: 'exec_command', arguments: '{"cmd":"cat conformance.txt"}' },
          { type: 'function_call_output', call_id: callId, output: TASK.token },
        ],
      };
      const turn2 = await post(`${gateway.url}/v1/responses`, headers, second);
      assert.equal(turn2.status, 200, turn2.text);
      assert.ok(turn2.text.includes(`The tool said: ${TASK.token}`), turn2.text);
      const calls = apiCalls(mock.requests.slice(from));
      // An OpenAI upstream (`responses`) gets a plain Responses call as it is (native by default); the others, translated.
      assert.deepEqual(
        calls.map((call) => call.api),
        target === 'anthropic'
          ? ['messages', 'messages']
          : target === 'gemini'
            ? ['gemini', 'gemini']
            : target === 'responses'
              ? ['responses', 'responses']
              : ['chat', 'chat'],
      );
      assert.ok(calls[1]?.toolResults.some((result) => result.includes(TASK.token)));
    });
  }

  for (const target of ['gemini', 'chat', 'anthropic'] as const) {
    test(`Gemini API to the ${target} mock, alt=sse: read_file is asked for, its result reaches the mock, the answer quotes it`, async () => {
      const gateway = gateways.get(target) as TestGateway;
      const url = `${gateway.url}/v1beta/models/gemini-any:streamGenerateContent?alt=sse`;
      const headers = { 'x-goog-api-key': ADMIN_TOKEN };
      const first = {
        contents: [{ role: 'user', parts: [{ text: 'Read conformance.txt' }] }],
        tools: [{ functionDeclarations: [READ_FILE_TOOL] }],
      };
      const mock = mocks[target];
      const from = mock.requests.length;
      const turn1 = await post(url, headers, first);
      assert.equal(turn1.status, 200, turn1.text);
      const call = geminiCall(turn1.text);
      assert.equal(call.name, 'read_file', turn1.text);
      assert.deepEqual(call.args, { file_path: '/work/task/conformance.txt' });
      // Gemini CLI's way: the answer's call id when it has one, else its own.
      const id = call.id ?? 'read_file_1_0';
      const second = {
        ...first,
        contents: [
          ...first.contents,
          { role: 'model', parts: [{ functionCall: { id, name: 'read_file', args: call.args } }] },
          { role: 'user', parts: [{ functionResponse: { id, name: 'read_file', response: { output: TASK.token } } }] },
        ],
      };
      const turn2 = await post(url, headers, second);
      assert.equal(turn2.status, 200, turn2.text);
      // Translated, the result is the `response` object as JSON text: the mock quotes it as it came.
      assert.ok(turn2.text.includes('The tool said: ') && turn2.text.includes(TASK.token), turn2.text);
      const calls = apiCalls(mock.requests.slice(from));
      const api = target === 'anthropic' ? 'messages' : target;
      assert.deepEqual(
        calls.map((c) => c.api),
        [api, api],
      );
      assert.ok(calls[1]?.toolResults.some((result) => result.includes(TASK.token)));
    });
  }

  test("the Responses mock plays Codex's code mode: tools in an additional_tools item, a custom exec call, an output of parts", async () => {
    const codeMode = {
      type: 'namespace',
      name: 'functions',
      description: '',
      tools: [
        {
          type: 'custom',
          name: 'exec',
          description: 'Run JavaScript',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' },
        },
      ],
    };
    const first = {
      model: 'gpt-6.1-sol',
      stream: true,
      input: [
        { type: 'additional_tools', id: 'at_1', role: 'developer', tools: [codeMode] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
      ],
    };
    const turn1 = await post(`${mocks.responses.origin}/v1/responses`, {}, first);
    const done = turn1.text.split('\n').filter((line) => line.includes('"response.output_item.done"'))[0] ?? '';
    const item = (JSON.parse(done.slice('data: '.length)) as { item: Record<string, unknown> }).item;
    assert.equal(item.type, 'custom_tool_call');
    assert.equal(item.name, 'exec');
    assert.equal(item.namespace, 'functions');
    assert.match(item.input as string, /await tools\.exec_command\(\{ cmd: "cat conformance\.txt" \}\)/);
    const output = [
      { type: 'input_text', text: 'Script completed\nOutput:\n' },
      { type: 'input_text', text: `${TASK.token}\n` },
    ];
    const second = {
      ...first,
      input: [...first.input, item, { type: 'custom_tool_call_output', call_id: item.call_id, output }],
    };
    const turn2 = await post(`${mocks.responses.origin}/v1/responses`, {}, second);
    assert.ok(turn2.text.includes(TASK.token), turn2.text);
  });
});

describe('conformance judge', () => {
  const path = PATHS.find(
    (candidate) => candidate.client === 'codex' && candidate.id === 'native-responses',
  ) as PathSpec;
  const call = (api: Recorded['api'], toolResults: string[] = []): Recorded => ({
    api,
    method: 'POST',
    url: '/v1/x',
    headers: {},
    body: {},
    toolResults,
    answered: toolResults.length > 0 ? 'text' : 'tool:exec',
  });
  const evidence = {
    output: { code: 0, stdout: `The tool said: ${TASK.token}`, stderr: '' },
    timedOutAfterS: undefined,
    expected: TASK.token,
    upstream: [call('responses'), call('responses', [TASK.token])],
    elsewhere: [],
    exchanges: [],
  };

  test('passes when the client exited 0, answered with the token, and the upstream got the tool result in the path API', () => {
    assert.deepEqual(judge(path, evidence), { outcome: 'pass', note: 'upstream got responses ×2' });
  });
  test('fails a native path that reached the upstream translated', () => {
    const verdictOf = judge(path, { ...evidence, upstream: [call('chat'), call('chat', [TASK.token])] });
    assert.equal(verdictOf.outcome, 'fail');
    assert.match(verdictOf.note, /called in chat, not responses/);
  });
  test("names the gateway's refusal with its fields, the exit code and what the upstream missed", () => {
    const errorBody = JSON.stringify({
      code: 'capability_not_supported',
      details: { errors: [{ field: 'client_metadata', problem: 'is not supported' }] },
    });
    const verdictOf = judge(path, {
      ...evidence,
      output: { code: 1, stdout: '', stderr: 'ERROR: boom' },
      upstream: [],
      exchanges: [{ method: 'POST', url: '/v1/responses', status: 400, droppedFields: undefined, errorBody }],
    });
    assert.equal(
      verdictOf.note,
      'exit 1; gateway 400 on POST /v1/responses: capability_not_supported: client_metadata is not supported; the upstream never asked for the tool; upstream got nothing',
    );
  });
  test('a timeout, and a final answer without the tool output, are failures', () => {
    assert.match(judge(path, { ...evidence, timedOutAfterS: 90 }).note, /^no exit within 90 s/);
    assert.match(
      judge(path, { ...evidence, output: { code: 0, stdout: 'I could not read it', stderr: '' } }).note,
      /the final answer lacks the tool output/,
    );
  });
});

describe('conformance MCP task: the mock calls the gateway tool under each client’s name for it', () => {
  const task = { ...TASK, mcp: true };
  const names = ['mcp__gw__everything__echo', 'mcp_gw_everything__echo'];
  for (const name of names)
    test(`${name} (among other tools) is called with the token as its message`, () => {
      const reply = decideMcp([{ name: 'Read' }, { name: 'mcp__gw__everything__get-sum' }, { name }], task);
      assert.deepEqual(reply, { kind: 'tool', tool: { name }, args: { message: TASK.token } });
    });
  test('a Responses namespace: the tool inside it', () => {
    const tool = { name: 'everything__echo', namespace: 'mcp__gw' };
    assert.deepEqual(decideMcp([tool], task), { kind: 'tool', tool, args: { message: TASK.token } });
  });
  test("Codex's code mode: JavaScript for its exec tool, calling the MCP tool as tools.mcp__gw__everything__echo", () => {
    const exec = { name: 'exec', namespace: 'functions', freeform: true };
    const reply = decideMcp([exec], task);
    assert.equal(reply.kind, 'tool');
    assert.match(
      reply.kind === 'tool' ? (reply.input ?? '') : '',
      new RegExp(`tools\\.mcp__gw__everything__echo\\(\\{ message: "${TASK.token}" \\}\\)`),
    );
  });
  test('no such tool: a text naming what was declared (the run then fails, saying so)', () => {
    const reply = decideMcp([{ name: 'Read' }], task);
    assert.deepEqual(reply.kind, 'text');
    assert.match(reply.kind === 'text' ? reply.text : '', /no tool named …everything__echo.*: Read$/);
  });
});

describe('conformance judge of an MCP-only client', () => {
  const call = PATHS.find((path) => path.client === 'mcp-inspector' && path.mcp === 'call') as PathSpec;
  const list = PATHS.find((path) => path.client === 'mcp-inspector' && path.mcp === 'list') as PathSpec;
  const expected = `Echo: ${TASK.token}`;
  const evidence = {
    output: { code: 0, stdout: `{"content":[{"type":"text","text":"${expected}"}]}`, stderr: '' },
    timedOutAfterS: undefined,
    expected,
    credential: 'admin token',
    upstream: [],
    elsewhere: [],
    exchanges: [],
  };
  test("passes on the real server's answer", () => {
    assert.deepEqual(judge(call, evidence), { outcome: 'pass', note: 'admin token; got "Echo: <token>"' });
  });
  test('fails without it (another text, or the token alone), naming what was missing', () => {
    for (const stdout of ['{"content":[]}', TASK.token]) {
      const verdictOf = judge(call, { ...evidence, output: { code: 0, stdout, stderr: '' } });
      assert.equal(verdictOf.outcome, 'fail');
      assert.match(verdictOf.note, /its output lacks "Echo: <token>"$/);
    }
  });
  test('tools/list passes when the listing names the tool, fails on an exit code', () => {
    const listed = { ...evidence, output: { code: 0, stdout: '{"tools":[{"name":"everything__echo"}]}', stderr: '' } };
    assert.equal(judge(list, listed).outcome, 'pass');
    assert.equal(judge(list, { ...listed, output: { ...listed.output, code: 1 } }).outcome, 'fail');
  });
});

describe('conformance matrix in docs/compatibility.md', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-matrix-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const cell = (index: number, outcome: CellResult['outcome']): CellResult => ({
    path: PATHS[index] as PathSpec,
    version: '1.0.0',
    outcome,
    seconds: 1.25,
    note: 'a | note',
  });
  const meta = { date: '2026-01-01', totalSeconds: 30, node: 'v26', platform: 'linux-x64', network: 'loopback only' };

  test('replaces only the marked section and reads the results back', () => {
    const file = join(dir, 'compatibility.md');
    writeFileSync(
      file,
      `# Title\n\nHand-written intro.\n\n${BEGIN}\nold matrix\n${END}\n\n## Why\n\nHand-written reasons.\n`,
    );
    writeMatrix(file, matrixMarkdown([cell(0, 'pass'), cell(1, 'fail'), cell(10, 'not-yet')], meta));
    const text = readFileSync(file, 'utf8');
    assert.ok(text.startsWith('# Title\n\nHand-written intro.\n\n'));
    assert.ok(text.endsWith(`${END}\n\n## Why\n\nHand-written reasons.\n`));
    assert.ok(!text.includes('old matrix'));
    assert.ok(text.includes('| a \\| note |'), 'a pipe in a note is escaped');
    const committed = committedResults(file);
    assert.equal(committed.get(`claude-code|${PATHS[0]?.label ?? ''}`), 'pass');
    assert.equal(committed.get(`claude-code|${PATHS[1]?.label ?? ''}`), 'fail');
    assert.equal(committed.get(`gemini-cli|${PATHS[10]?.label ?? ''}`), 'not yet');
  });

  test('--regressions-only: a known failure is not a regression, a failing cell shown passing or missing is, a fixed one is named', () => {
    const committed = new Map([
      [`claude-code|${PATHS[1]?.label ?? ''}`, 'fail'],
      [`claude-code|${PATHS[2]?.label ?? ''}`, 'pass'],
      [`claude-code|${PATHS[3]?.label ?? ''}`, 'fail'],
    ]);
    const { regressions, known, fixed } = verdict(
      [cell(1, 'fail'), cell(2, 'fail'), cell(3, 'pass'), cell(4, 'fail')],
      committed,
    );
    assert.deepEqual(
      known.map((result) => result.path),
      [PATHS[1]],
    );
    assert.deepEqual(
      regressions.map((result) => result.path),
      [PATHS[2], PATHS[4]],
    );
    assert.deepEqual(
      fixed.map((result) => result.path),
      [PATHS[3]],
    );
  });
});
