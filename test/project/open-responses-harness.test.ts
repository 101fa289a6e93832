// The harness that runs the Open Responses compliance suite in `npm run conformance` (scripts/conformance/
// open-responses*.ts), without the suite itself (it lives outside the project): the mocks must play a model's part
// through the gateway on every path (a system prompt, a weather tool call, an answer after its result, an image, a
// conversation's history), the Responses mock must answer what the specification asks (the control row), the
// suite's output must become per-test results (failing a path that reached its upstream in another API), and the
// table must land in docs/compatibility.md and be read back for --regressions-only.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayConfig, type Mocks, type UpstreamName } from '../../scripts/conformance/gateway.js';
import { BEGIN, END, committedResults, writeSection } from '../../scripts/conformance/matrix.js';
import { startMockUpstream, type Recorded } from '../../scripts/conformance/mock-upstream.js';
import {
  SUITE_PATHS,
  SUITE_TESTS,
  suiteDir,
  suiteMissing,
  suiteRowOf,
  type SuitePath,
  type SuiteRow,
} from '../../scripts/conformance/open-responses.js';
import { suiteExitCode } from '../../scripts/conformance/open-responses-step.js';
import {
  SUITE_BEGIN,
  SUITE_END,
  committedSuiteResults,
  suiteMarkdown,
  suiteVerdict,
} from '../../scripts/conformance/open-responses-table.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG_BASE64, 'base64').length;
const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a location',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'The city and state' } },
    required: ['location'],
  },
};
const FORCE_NATIVE = { client_metadata: { harness: 'test' } };

interface Output {
  type: string;
  name?: string;
  arguments?: string;
  call_id?: string;
  content?: Array<{ type: string; text?: string; logprobs?: unknown }>;
}

interface ResponseJson {
  output: Output[];
  tools: Array<{ strict?: unknown }>;
  text: { format?: unknown };
  [key: string]: unknown;
}

/** The fields of a streamed event these tests read. */
interface StreamEvent {
  type: string;
  sequence_number: number;
  part?: { logprobs?: unknown };
  logprobs?: unknown;
  text?: string;
  arguments?: string;
  response?: { completed_at?: unknown };
}

function eventsOf(text: string): StreamEvent[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as StreamEvent);
}

async function respond(url: string, body: Record<string, unknown>): Promise<{ status: number; json: ResponseJson }> {
  const answer = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  return {
    status: answer.status,
    json: (text.startsWith('{') ? JSON.parse(text) : { output: [], text }) as ResponseJson,
  };
}

function outputText(response: { output: Output[] }): string {
  return response.output
    .flatMap((item) => item.content ?? [])
    .map((part) => part.text ?? '')
    .join('');
}

function modelCalls(requests: Recorded[], from: number): Recorded[] {
  return requests.slice(from).filter((request) => request.api !== 'other');
}

describe("the mocks play a model's part through the gateway, on every path of the suite", () => {
  let mocks: Mocks;
  const gateways = new Map<UpstreamName, TestGateway>();
  const TARGETS = [
    ['responses', 'responses'],
    ['chat', 'chat'],
    ['anthropic', 'messages'],
    ['gemini', 'gemini'],
  ] as const;
  before(async () => {
    mocks = {
      anthropic: await startMockUpstream('anthropic'),
      responses: await startMockUpstream('responses'),
      chat: await startMockUpstream('chat'),
      gemini: await startMockUpstream('gemini'),
    };
    for (const [target] of TARGETS) {
      const configFile = { name: 'gateway.json', text: JSON.stringify(gatewayConfig(mocks, target)) };
      gateways.set(
        target,
        await startGateway({
          env: { CONFORMANCE_UPSTREAM_KEY: 'upstream-key-for-the-suite-harness-test', LOG_LEVEL: 'warn' },
          configFile,
        }),
      );
    }
  });
  after(async () => {
    for (const gateway of gateways.values()) await gateway.close();
    for (const mock of Object.values(mocks)) await mock.close();
  });

  for (const [target, api] of TARGETS) {
    // The Responses upstream gets the requests natively (they carry a field only the Responses API keeps).
    const extra = target === 'responses' ? FORCE_NATIVE : {};
    const ask = async (body: Record<string, unknown>): Promise<{ json: ResponseJson; calls: Recorded[] }> => {
      const mock = mocks[target];
      const from = mock.requests.length;
      const gateway = gateways.get(target) as TestGateway;
      const answer = await respond(gateway.url, { model: 'mock-model', ...extra, ...body });
      assert.equal(answer.status, 200, JSON.stringify(answer.json));
      const calls = modelCalls(mock.requests, from);
      assert.deepEqual(
        calls.map((call) => call.api),
        [api],
      );
      return { json: answer.json, calls };
    };

    test(`${target}: a pirate system prompt reaches the upstream and the answer is in pirate speak`, async () => {
      const { json } = await ask({
        input: [
          { type: 'message', role: 'system', content: 'You are a pirate. Always respond in pirate speak.' },
          { type: 'message', role: 'user', content: 'Say hello.' },
        ],
      });
      assert.equal(outputText(json), 'Ahoy, matey! Hello there, friend. Arr!');
      const { json: plain } = await ask({ input: [{ type: 'message', role: 'user', content: 'Say hello.' }] });
      assert.equal(outputText(plain), 'Hello there, friend.', 'no system prompt, no pirate');
    });

    test(`${target}: asked about the weather with get_weather offered, the model calls it; after its result, it answers`, async () => {
      const question = { type: 'message', role: 'user', content: "What's the weather like in San Francisco?" };
      const { json, calls } = await ask({ input: [question], tools: [WEATHER_TOOL] });
      assert.equal(calls[0]?.answered, 'tool:get_weather');
      const call = (json.output as Output[]).find((item) => item.type === 'function_call');
      assert.equal(call?.name, 'get_weather', JSON.stringify(json.output));
      assert.deepEqual(JSON.parse(call?.arguments ?? '{}'), { location: 'San Francisco, CA' });
      const { json: final, calls: second } = await ask({
        tools: [WEATHER_TOOL],
        input: [
          question,
          { type: 'function_call', call_id: call?.call_id, name: 'get_weather', arguments: call?.arguments },
          { type: 'function_call_output', call_id: call?.call_id, output: '18 °C and foggy' },
        ],
      });
      assert.equal(second[0]?.answered, 'text');
      assert.equal(outputText(final), 'The tool said: 18 °C and foggy');
    });

    test(`${target}: the answer names the image's media type and size as the upstream received it`, async () => {
      const { json } = await ask({
        input: [
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'What do you see in this image?' },
              { type: 'input_image', image_url: `data:image/png;base64,${PNG_BASE64}` },
            ],
          },
        ],
      });
      assert.equal(outputText(json), `I see an image/png image of ${PNG_BYTES} bytes.`);
    });

    test(`${target}: the answer uses the conversation's history`, async () => {
      const { json } = await ask({
        input: [
          { type: 'message', role: 'user', content: 'My name is Alice.' },
          { type: 'message', role: 'assistant', content: 'Hello Alice! Nice to meet you.' },
          { type: 'message', role: 'user', content: 'What is my name?' },
        ],
      });
      assert.equal(outputText(json), 'Your name is Alice.');
    });
  }
});

describe('the Responses mock answers what the Open Responses specification asks (the control row)', () => {
  let mock: Awaited<ReturnType<typeof startMockUpstream>>;
  before(async () => {
    mock = await startMockUpstream('responses');
  });
  after(() => mock.close());

  test('the response object carries every field, with numbers where numbers are due, and echoes the tools with strict', async () => {
    const { json } = await respond(mock.origin, {
      model: 'mock-model',
      tools: [WEATHER_TOOL],
      input: [{ type: 'message', role: 'user', content: 'Hi' }],
    });
    for (const key of ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'top_logprobs', 'completed_at'])
      assert.equal(typeof json[key], 'number', key);
    for (const key of ['background', 'parallel_tool_calls', 'store']) assert.equal(typeof json[key], 'boolean', key);
    for (const key of ['max_tool_calls', 'safety_identifier', 'prompt_cache_key', 'previous_response_id', 'error'])
      assert.equal(json[key], null, key);
    assert.equal(json.service_tier, 'default');
    assert.equal(json.truncation, 'disabled');
    assert.deepEqual(json.text.format, { type: 'text' });
    assert.equal(json.tools[0]?.strict, true);
    assert.deepEqual(json.output[0]?.content?.[0]?.logprobs, []);
  });

  test('the events: text parts and deltas with logprobs, the function call arguments done, numbered in order', async () => {
    const answer = await fetch(`${mock.origin}/v1/responses`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'mock-model',
        stream: true,
        input: [{ type: 'message', role: 'user', content: 'Count from 1 to 3.' }],
      }),
    });
    const events = eventsOf(await answer.text());
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_, index) => index),
    );
    const byType = (type: string): StreamEvent =>
      events.find((event) => event.type === type) ?? { type, sequence_number: -1 };
    assert.deepEqual(byType('response.content_part.added').part?.logprobs, []);
    assert.deepEqual(byType('response.output_text.delta').logprobs, []);
    assert.equal(byType('response.output_text.done').text, '1, 2, 3');
    assert.equal(byType('response.created').response?.completed_at, null);
    assert.equal(typeof byType('response.completed').response?.completed_at, 'number');
    const called = await fetch(`${mock.origin}/v1/responses`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'mock-model',
        stream: true,
        tools: [WEATHER_TOOL],
        input: [{ type: 'message', role: 'user', content: 'What is the weather in San Francisco?' }],
      }),
    });
    const callEvents = eventsOf(await called.text());
    const done = callEvents.find((event) => event.type === 'response.function_call_arguments.done');
    assert.equal(done?.arguments, '{"location":"San Francisco, CA"}');
    assert.equal(callEvents.filter((event) => event.type === 'response.function_call_arguments.delta').length, 2);
  });
});

describe("the suite's output as per-test results", () => {
  const native = SUITE_PATHS.find((path) => path.id === 'native') as SuitePath;
  const chat = SUITE_PATHS.find((path) => path.id === 'chat') as SuitePath;
  const call = (api: Recorded['api']): Recorded => ({
    api,
    method: 'POST',
    url: '/v1/x',
    headers: {},
    body: {},
    toolResults: [],
    answered: 'text',
  });
  const results = SUITE_TESTS.map((id) => ({ id, status: 'passed', errors: [] as string[] }));
  const issues = JSON.stringify([{ path: ['part', 'logprobs'], message: 'Required' }]);
  (results[1] as { status: string; errors: string[] }).status = 'failed';
  (results[1] as { status: string; errors: string[] }).errors = [
    'completed_at: Invalid input',
    `Event validation failed for response.content_part.added: ${issues}`,
  ];
  const stdout = JSON.stringify({ summary: {}, results });

  test("each test passes or fails as the suite says; an event's schema issues become one line each", () => {
    const { tests, note } = suiteRowOf(chat, { code: 1, stdout, stderr: '' }, [call('other'), call('chat')], []);
    assert.deepEqual(
      tests.map((test) => test.passed),
      [true, false, true, true, true, true, true],
    );
    assert.deepEqual(tests[1]?.errors, [
      'completed_at: Invalid input',
      'event response.content_part.added: part.logprobs: Required',
    ]);
    assert.equal(note, 'upstream got chat ×1');
  });

  test('a native path whose upstream was called in chat fails every test, naming the API', () => {
    const { tests } = suiteRowOf(native, { code: 0, stdout, stderr: '' }, [call('chat')], []);
    assert.ok(tests.every((test) => !test.passed));
    assert.match(tests[0]?.errors.join() ?? '', /the path is not responses: upstreams got chat ×1/);
    const stray = suiteRowOf(chat, { code: 0, stdout, stderr: '' }, [call('chat')], [call('messages')]);
    assert.ok(
      stray.tests.every((test) => !test.passed),
      'another upstream was called',
    );
  });

  test('no JSON from the suite fails every test with its exit code and output; a test it did not report fails', () => {
    const crashed = suiteRowOf(chat, { code: 1, stdout: '', stderr: "error: Cannot find package 'zod'" }, [], []);
    assert.equal(crashed.tests.length, SUITE_TESTS.length);
    assert.ok(crashed.tests.every((test) => !test.passed));
    assert.match(crashed.tests[0]?.errors[0] ?? '', /printed no results \(exit 1\): error: Cannot find package 'zod'/);
    const partial = JSON.stringify({ results: results.slice(0, 6) });
    const missing = suiteRowOf(chat, { code: 0, stdout: partial, stderr: '' }, [call('chat')], []);
    assert.deepEqual(missing.tests[6], {
      id: 'multi-turn',
      passed: false,
      errors: ['the suite did not report this test'],
    });
  });
});

describe("the suite's table in docs/compatibility.md, and --regressions-only", () => {
  const dir = mkdtempSync(join(tmpdir(), 'open-responses-table-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const rowOf = (path: SuitePath, failing: string[], error = 'completed_at: Invalid input'): SuiteRow => ({
    path,
    tests: SUITE_TESTS.map((id) => ({
      id,
      passed: !failing.includes(id),
      errors: failing.includes(id) ? [error] : [],
    })),
    seconds: 1,
    note: 'upstream got chat ×7',
  });
  const meta = { date: '2026-01-01', totalSeconds: 8, node: 'v26', platform: 'linux-x64', runtime: 'bun 1.4.5' };
  const [control, native, chat] = SUITE_PATHS as [SuitePath, SuitePath, SuitePath];

  test('the table goes between its markers, leaves the CLI matrix alone, and reads back per path and test', () => {
    const file = join(dir, 'compatibility.md');
    const matrix = `${BEGIN}\n| client | version | path | result | seconds | notes |\n| x | 1 | p | ✅ pass | 1 | n |\n${END}`;
    writeFileSync(file, `# T\n\n${matrix}\n\n## Suite\n\n${SUITE_BEGIN}\nold\n${SUITE_END}\n\nAfter.\n`);
    const rows = [rowOf(control, []), rowOf(native, []), rowOf(chat, ['tool-calling', 'image-input'])];
    writeSection(file, suiteMarkdown(rows, meta), SUITE_BEGIN, SUITE_END);
    const text = readFileSync(file, 'utf8');
    assert.ok(text.startsWith(`# T\n\n${matrix}\n\n## Suite\n\n${SUITE_BEGIN}\n`));
    assert.ok(text.endsWith(`${SUITE_END}\n\nAfter.\n`));
    assert.ok(!text.includes('\nold\n'));
    assert.match(text, /19 of 21 tests passed/);
    assert.match(text, /\| 5\/7 \| upstream got chat ×7 \|/);
    assert.match(text, /- \*\*chat\*\*: `completed_at: Invalid input` \(tool-calling, image-input\)/);
    assert.equal(committedResults(file).get('x|p'), 'pass', 'the CLI matrix is still read');
    const committed = committedSuiteResults(file);
    assert.equal(committed.size, 21);
    assert.equal(committed.get(`${chat.label}|tool-calling`), 'fail');
    assert.equal(committed.get(`${chat.label}|basic-response`), 'pass');
    assert.equal(committed.get(`${native.label}|multi-turn`), 'pass');
  });

  test('a known failure is printed, a failing test shown passing or not listed is a regression, a fixed one is named', () => {
    const committed = new Map([
      [`${chat.label}|tool-calling`, 'fail'],
      [`${chat.label}|image-input`, 'fail'],
      [`${chat.label}|basic-response`, 'pass'],
    ]);
    const rows = [rowOf(chat, ['tool-calling', 'basic-response', 'multi-turn'], 'top_p: Required')];
    const { regressions, known, fixed } = suiteVerdict(rows, committed);
    assert.deepEqual(
      regressions.map((regression) => [regression.test, regression.error]),
      [
        ['basic-response', 'top_p: Required'],
        ['multi-turn', 'top_p: Required'],
      ],
    );
    assert.deepEqual(
      known.map((entry) => entry.tests),
      [['tool-calling']],
    );
    assert.deepEqual(
      fixed.map((entry) => entry.tests),
      [['image-input']],
    );
    const lines: string[] = [];
    const docs = join(dir, 'committed.md');
    writeFileSync(docs, `${SUITE_BEGIN}\n${suiteMarkdown([rowOf(chat, ['tool-calling'])], meta)}\n${SUITE_END}\n`);
    assert.equal(
      suiteExitCode({ rows, seconds: 1 }, true, docs, (line) => lines.push(line), false),
      1,
    );
    assert.ok(lines.some((line) => line.startsWith('REGRESSION: open-responses ') && line.includes('multi-turn')));
    assert.ok(lines.some((line) => line.startsWith('known failure (the committed table shows it): open-responses')));
    const knownOnly = [rowOf(chat, ['tool-calling'])];
    assert.equal(
      suiteExitCode({ rows: knownOnly, seconds: 1 }, true, docs, () => undefined, false),
      0,
    );
    assert.equal(
      suiteExitCode({ rows: knownOnly, seconds: 1 }, false, docs, () => undefined, false),
      1,
    );
  });

  test('the suite is looked for in $OPENRESPONSES_DIR, else beside the project; missing, it fails only in CI', () => {
    assert.equal(suiteDir({ OPENRESPONSES_DIR: '/somewhere/suite' }), '/somewhere/suite');
    assert.match(suiteDir({}), /[/\\]shared[/\\]openresponses$/);
    assert.match(
      suiteMissing(join(dir, 'nothing-here')) ?? '',
      /no Open Responses compliance suite at .*OPENRESPONSES_DIR/,
    );
    const lines: string[] = [];
    const notRun = { notRun: 'no suite', seconds: 0 };
    assert.equal(
      suiteExitCode(notRun, true, join(dir, 'none.md'), (line) => lines.push(line), false),
      0,
    );
    assert.equal(
      suiteExitCode(notRun, true, join(dir, 'none.md'), (line) => lines.push(line), true),
      1,
    );
    assert.deepEqual(lines, ['Open Responses compliance suite: FAILED: CI must run it (CI=true): no suite']);
  });
});
