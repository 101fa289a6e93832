/**
 * Codex CLI's own recorded traffic (test/fixtures/clients/codex-<version>/, written by scripts/record-codex.mjs),
 * replayed through the gateway on every path a Responses request can take: forwarded natively to an OpenAI upstream,
 * and translated to a chat-completions, an Anthropic and a Gemini upstream, each a real server that plays the agent
 * task (one tool call, then the answer once the tool's result is in the conversation). Each flow is two turns: the
 * first asks for the call, the second carries its result back.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { namedEvents, readStream, type NamedEvent, type StreamAnswer } from '../helpers/sse-client.js';
import {
  FINAL_TEXT,
  startOneToolTask,
  UPSTREAM_USAGE,
  type OneToolRequest,
  type OneToolTask,
} from '../helpers/upstreams/scripted.js';
import { call } from '../helpers/http.js';
import { PROJECT_ROOT } from '../helpers/paths.js';

const FIXTURES = join(PROJECT_ROOT, 'test', 'fixtures', 'clients', 'codex-0.169.0');

type Item = Record<string, unknown>;

interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Item & { input: Item[]; tools?: Item[] };
}

/** A fixture of the shared client-traffic format (test/fixtures/clients/README.md). */
interface Fixture {
  client: { name: string; version: string };
  flow: string;
  requests: [RecordedRequest, RecordedRequest];
}

const load = (flow: string): Fixture => JSON.parse(readFileSync(join(FIXTURES, `${flow}.json`), 'utf8')) as Fixture;

/** A translated path: the model entry that reaches it, and how its upstream's requests are told apart. */
type PathName = 'chat' | 'anthropic' | 'gemini';
const PATHS: Record<PathName, { model: string; upstream: (url: string) => boolean }> = {
  chat: { model: 'codex-chat', upstream: (url) => url === '/v1/chat/completions' },
  anthropic: { model: 'codex-claude', upstream: (url) => url === '/v1/messages' },
  gemini: { model: 'codex-gemini', upstream: (url) => url.includes(':streamGenerateContent') },
};

/** What gpt-5.5's two flows leave out: the same tools and fields (its function call and its apply_patch call alike). */
const GPT_5_5_DROPPED: Record<PathName, [string[], string[]]> = {
  // tools[8] is tool_search; tools[9] web_search (no search on a chat server not known to have one); input[4] the reasoning item.
  chat: [
    ['client_metadata', 'tools[8]', 'tools[9]', 'include'],
    ['client_metadata', 'tools[8]', 'tools[9]', 'input[4]', 'include'],
  ],
  anthropic: [
    [
      'client_metadata',
      'tools[8]',
      'tools[9].external_web_access',
      'tools[9].search_content_types',
      'prompt_cache_key',
      'include',
      'text.verbosity',
    ],
    [
      'client_metadata',
      'tools[8]',
      'tools[9].external_web_access',
      'tools[9].search_content_types',
      'input[4]',
      'prompt_cache_key',
      'include',
      'text.verbosity',
    ],
  ],
  gemini: [
    [
      'client_metadata',
      'tools[8]',
      'tools[9].external_web_access',
      'tools[9].search_content_types',
      'prompt_cache_key',
      'include',
      'text.verbosity',
    ],
    [
      'client_metadata',
      'tools[8]',
      'tools[9].external_web_access',
      'tools[9].search_content_types',
      'input[4]',
      'prompt_cache_key',
      'include',
      'text.verbosity',
    ],
  ],
};

/**
 * Each recorded flow: the tool the model calls (its name upstream) and what each translated path leaves out of its
 * two turns, by name (X-Gateway-Dropped-Fields). Why each is left out: docs/responses.md.
 */
const FLOWS: Array<{ flow: string; chatName: string; dropped: Record<PathName, [string[], string[]]> }> = [
  {
    // The default model in code mode: its tools in an `additional_tools` item; `exec` (freeform) in `functions`.
    flow: 'default-exec',
    chatName: 'exec',
    dropped: {
      chat: [
        ['client_metadata', 'reasoning.context', 'include'],
        ['client_metadata', 'reasoning.context', 'include'],
      ],
      anthropic: [
        ['client_metadata', 'prompt_cache_key', 'reasoning.context', 'include', 'text.verbosity'],
        ['client_metadata', 'prompt_cache_key', 'reasoning.context', 'include', 'text.verbosity'],
      ],
      gemini: [
        [
          'client_metadata',
          'prompt_cache_key',
          'parallel_tool_calls',
          'reasoning.context',
          'include',
          'text.verbosity',
        ],
        [
          'client_metadata',
          'prompt_cache_key',
          'parallel_tool_calls',
          'reasoning.context',
          'include',
          'text.verbosity',
        ],
      ],
    },
  },
  {
    flow: 'gpt-5.5-function',
    chatName: 'exec_command',
    dropped: GPT_5_5_DROPPED,
  },
  {
    flow: 'gpt-5.5-apply-patch',
    chatName: 'apply_patch',
    dropped: GPT_5_5_DROPPED,
  },
  {
    // A model on Codex's fallback metadata: the multi_agent_v1 namespace, a reasoning summary, no verbosity; tools[8] is web_search.
    flow: 'gpt-5.4-namespace',
    chatName: 'multi_agent_v1__wait_agent',
    dropped: {
      chat: [
        ['client_metadata', 'tools[8]', 'reasoning.summary', 'include'],
        ['client_metadata', 'tools[8]', 'reasoning.summary', 'include'],
      ],
      anthropic: [
        ['client_metadata', 'tools[8].external_web_access', 'prompt_cache_key', 'reasoning.summary', 'include'],
        ['client_metadata', 'tools[8].external_web_access', 'prompt_cache_key', 'reasoning.summary', 'include'],
      ],
      gemini: [
        ['client_metadata', 'tools[8].external_web_access', 'prompt_cache_key', 'reasoning.summary', 'include'],
        ['client_metadata', 'tools[8].external_web_access', 'prompt_cache_key', 'reasoning.summary', 'include'],
      ],
    },
  },
];

/** The tool call Codex sent back in its second turn: what the first turn's answer must have held. */
function recordedCall(fixture: Fixture): Item {
  const item = fixture.requests[1].body.input.find((i) => i.type === 'function_call' || i.type === 'custom_tool_call');
  assert.ok(item, `${fixture.flow}: no call in the second turn`);
  return item;
}

/** The call's arguments as the chat function declared for its tool takes them (a custom tool's raw input as `input`). */
const chatArguments = (item: Item): Item =>
  item.type === 'custom_tool_call' ? { input: item.input } : (JSON.parse(String(item.arguments)) as Item);

/** The result Codex sent back for the call, as text (a list of input_text parts joined). */
function recordedOutput(fixture: Fixture): string {
  const output = fixture.requests[1].body.input.find(
    (i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output',
  )?.output;
  return typeof output === 'string' ? output : (output as Array<{ text: string }>).map((part) => part.text).join('');
}

const developerText = (fixture: Fixture): string => {
  const first = fixture.requests[0].body.input.find((i) => i.role === 'developer' && i.type === 'message') as {
    content: Array<{ text: string }>;
  };
  return first.content[0]?.text ?? '';
};

/** Codex's own headers, as it sent them (its key replaced by the gateway's). */
function codexHeaders(recorded: RecordedRequest): Record<string, string> {
  const { authorization: _key, ...headers } = recorded.headers;
  return { ...headers, ...authHeaders() };
}

describe('Codex CLI 0.169 recorded traffic, through every path of the Responses API', () => {
  let upstreams: OneToolTask;
  let gw: TestGateway;
  before(async () => {
    upstreams = await startOneToolTask();
    const base = upstreams.origin;
    gw = await startGateway({
      env: { CODEX_TEST_KEY: 'sk-upstream-codex-test-0123456789' },
      configFile: {
        name: 'codex.yaml',
        text: [
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${base}/v1", api_key_env: CODEX_TEST_KEY }`,
          `  - { name: compat, kind: openai-compatible, base_url: "${base}/v1", api_key_env: CODEX_TEST_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${base}/v1", api_key_env: CODEX_TEST_KEY }`,
          `  - { name: google, kind: gemini, base_url: "${base}/v1beta", api_key_env: CODEX_TEST_KEY }`,
          'models:',
          // Codex's own model names on OpenAI: forwarded natively, the body as Codex wrote it.
          ...['gpt-6.1-sol', 'gpt-5.5', 'gpt-5.4'].map((id) => `  - { id: ${id}, upstream: oai }`),
          '  - { id: codex-chat, upstream: compat, upstream_model: local-coder }',
          '  - { id: codex-claude, upstream: claude, upstream_model: claude-sonnet-5 }',
          '  - { id: codex-gemini, upstream: google, upstream_model: gemini-3-pro }',
          '  - { id: codex-strict, upstream: compat, upstream_model: local-coder, translation: strict }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstreams?.close();
  });

  const send = (recorded: RecordedRequest, body: string): Promise<StreamAnswer> =>
    readStream(`${gw.url}/v1/responses`, body, codexHeaders(recorded));
  const accessLine = (answer: StreamAnswer) =>
    gw.logLines
      .map((line) => JSON.parse(line) as Item)
      .find((line) => line.msg === 'request' && line.request_id === answer.headers['x-request-id']);
  const sentTo = (path: PathName, since: number): OneToolRequest => {
    const sent = upstreams.requests.slice(since).filter((r) => PATHS[path].upstream(r.url));
    assert.equal(sent.length, 1, `one request to the ${path} upstream`);
    return sent[0] as OneToolRequest;
  };

  for (const { flow, chatName, dropped } of FLOWS) {
    const fixture = load(flow);
    const called = recordedCall(fixture);

    test(`${flow}: forwarded natively to OpenAI, both turns byte for byte, the upstream's events passed back`, async () => {
      assert.equal(fixture.client.name, 'codex');
      for (const recorded of fixture.requests) {
        const since = upstreams.requests.length;
        const events = [
          {
            type: 'response.created',
            sequence_number: 0,
            response: { id: 'resp_up_1', object: 'response', status: 'in_progress', output: [] },
          },
          { type: 'response.output_item.done', sequence_number: 1, output_index: 0, item: called },
          {
            type: 'response.completed',
            sequence_number: 2,
            response: {
              id: 'resp_up_1',
              object: 'response',
              status: 'completed',
              output: [called],
              usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
            },
          },
        ];
        upstreams.nativeEvents = events;
        const body = JSON.stringify(recorded.body);
        const answer = await send(recorded, body);
        assert.equal(answer.status, 200, answer.text.slice(0, 500));
        const forwarded = upstreams.requests.slice(since);
        assert.deepEqual(
          forwarded.map((r) => r.url),
          ['/v1/responses'],
        );
        assert.equal(forwarded[0]?.raw, body, 'the caller bytes, untouched');
        assert.equal(answer.headers['x-gateway-dropped-fields'], undefined, 'nothing left out');
        assert.deepEqual(
          namedEvents(answer.text).map((e) => e.data),
          events,
        );
      }
    });

    for (const path of Object.keys(PATHS) as PathName[]) {
      test(`${flow}: translated to ${path}: the call comes back as Codex declared it, and its result reaches the upstream`, async () => {
        const model = PATHS[path].model;
        upstreams.call = { callId: String(called.call_id), name: chatName, arguments: chatArguments(called) };

        // Turn 1: the tools reach the upstream under their chat names; the call comes back under Codex's.
        let since = upstreams.requests.length;
        const first = await send(fixture.requests[0], JSON.stringify({ ...fixture.requests[0].body, model }));
        assert.equal(first.status, 200, first.text.slice(0, 800));
        assert.equal(first.headers['x-gateway-dropped-fields'], dropped[path][0].join(', '));
        assert.equal(accessLine(first)?.dropped_fields, dropped[path][0].join(','));
        assert.equal(accessLine(first)?.prompt_tokens, UPSTREAM_USAGE.prompt, 'the usage recorded (limits, cost)');
        checkFirstTurn(path, fixture, chatName, sentTo(path, since).body);
        const item = checkStream(namedEvents(first.text), 'call');
        assert.deepEqual(
          callFields(item),
          { ...callFields(called), status: 'completed' },
          'the item Codex runs, and sends back next turn',
        );

        // Turn 2: the call and its result reach the upstream as the upstream's own tool call and result.
        since = upstreams.requests.length;
        const second = await send(fixture.requests[1], JSON.stringify({ ...fixture.requests[1].body, model }));
        assert.equal(second.status, 200, second.text.slice(0, 800));
        assert.equal(second.headers['x-gateway-dropped-fields'], dropped[path][1].join(', '));
        checkSecondTurn(path, sentTo(path, since).body, {
          callId: String(called.call_id),
          chatName,
          args: chatArguments(called),
          output: recordedOutput(fixture),
        });
        const answer = checkStream(namedEvents(second.text), 'message');
        assert.deepEqual(answer.content, [{ type: 'output_text', text: FINAL_TEXT, annotations: [], logprobs: [] }]);
      });
    }
  }

  test('a model set to translation: strict refuses what it would leave out, naming it; nothing goes upstream', async () => {
    const fixture = load('default-exec');
    const since = upstreams.requests.length;
    const answer = await call(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: codexHeaders(fixture.requests[0]),
      body: JSON.stringify({ ...fixture.requests[0].body, model: 'codex-strict' }),
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'capability_not_supported');
    assert.equal((answer.json.details as { field: string }).field, 'client_metadata');
    assert.equal(upstreams.requests.length, since);
  });

  test('natively, a value the gateway does not read goes as it is in any shape: the upstream judges its own API', async () => {
    const fixture = load('gpt-5.5-function');
    const body = JSON.stringify({
      ...fixture.requests[0].body,
      temperature: 3,
      reasoning: { effort: 'medium', summary: { mode: 'auto' } },
    });
    upstreams.nativeEvents = [
      {
        type: 'response.completed',
        sequence_number: 0,
        response: { id: 'resp_up_2', object: 'response', status: 'completed', output: [] },
      },
    ];
    const since = upstreams.requests.length;
    const answer = await send(fixture.requests[0], body);
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    assert.equal(upstreams.requests[since]?.raw, body);
  });
});

/** What Codex reads of a call item (its id aside, which is ours). */
function callFields(item: Item): Item {
  const { id: _id, status, ...fields } = item;
  return { ...fields, status };
}

/**
 * A complete, valid Responses stream: created and in_progress first, each event named as its type and numbered in
 * order, one output item opened and closed at index 0 (a call with its argument or input events, or a message),
 * and `response.completed` last, its output that item and its usage the upstream's. Returns the item.
 */
function checkStream(events: NamedEvent[], kind: 'call' | 'message'): Item {
  events.forEach((e, i) => {
    assert.equal(e.event, e.data.type);
    assert.equal(e.data.sequence_number, i);
  });
  const types = events.map((e) => e.event);
  assert.deepEqual(types.slice(0, 3), ['response.created', 'response.in_progress', 'response.output_item.added']);
  assert.deepEqual(types.slice(-2), ['response.output_item.done', 'response.completed']);
  const done = events.at(-2)?.data as { output_index: number; item: Item };
  assert.equal(done.output_index, 0);
  const item = done.item;
  const middle = types.slice(3, -2);
  if (kind === 'message') {
    assert.equal(item.type, 'message');
  } else if (item.type === 'function_call') {
    assert.ok(
      middle.every(
        (t) => t === 'response.function_call_arguments.delta' || t === 'response.function_call_arguments.done',
      ),
      middle.join(),
    );
    assert.equal((events.at(-3)?.data as { arguments: string }).arguments, item.arguments);
  } else {
    assert.equal(item.type, 'custom_tool_call');
    assert.deepEqual(middle, ['response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done']);
    assert.equal((events.at(-3)?.data as { input: string }).input, item.input);
  }
  const completed = events.at(-1)?.data.response as { status: string; output: Item[]; usage: Item };
  assert.equal(completed.status, 'completed');
  assert.deepEqual(completed.output, [item]);
  assert.deepEqual(completed.usage, {
    input_tokens: UPSTREAM_USAGE.prompt,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: UPSTREAM_USAGE.completion,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: UPSTREAM_USAGE.prompt + UPSTREAM_USAGE.completion,
  });
  return item;
}

/** What the upstream got on the first turn: Codex's instructions as its system text, its tools under their chat names, its settings mapped. */
function checkFirstTurn(path: PathName, fixture: Fixture, chatName: string, sent: Item): void {
  const codex = fixture.requests[0].body;
  const custom = recordedCall(fixture).type === 'custom_tool_call';
  const searches = (codex.tools ?? []).some((t) => t.type === 'web_search');
  const instructions = developerText(fixture);
  const declared = (names: string[]) => assert.ok(names.includes(chatName), `${chatName} in ${names.join()}`);
  if (path === 'chat') {
    const messages = sent.messages as Array<{ role: string; content: Array<{ text: string }> }>;
    assert.equal(messages[0]?.role, 'developer');
    assert.equal(messages[0]?.content[0]?.text, instructions);
    const tools = sent.tools as Array<{ function: { name: string; parameters: { properties: Item } } }>;
    declared(tools.map((t) => t.function.name));
    if (custom)
      assert.deepEqual(
        Object.keys(tools.find((t) => t.function.name === chatName)?.function.parameters.properties ?? {}),
        ['input'],
      );
    assert.equal(sent.reasoning_effort, (codex.reasoning as { effort?: string }).effort);
    assert.equal(sent.prompt_cache_key, codex.prompt_cache_key);
    assert.equal(sent.verbosity, (codex.text as { verbosity?: string } | undefined)?.verbosity);
    assert.equal(sent.parallel_tool_calls, codex.parallel_tool_calls);
    assert.equal(sent.web_search_options, undefined, 'a chat server not known to search');
    for (const field of ['client_metadata', 'include', 'store', 'text', 'reasoning', 'input'])
      assert.equal(sent[field], undefined, field);
  } else if (path === 'anthropic') {
    // One system block, marked as a prompt-cache breakpoint with the last tool and the last turn (prompt_cache: auto).
    const system = sent.system as Array<{ type: string; text: string; cache_control?: unknown }>;
    assert.ok(
      system.length === 1 && system[0]?.text.includes(instructions),
      'Codex instructions (developer messages) in the top-level system',
    );
    assert.deepEqual(system[0]?.cache_control, { type: 'ephemeral' });
    assert.deepEqual((sent.tools as Array<{ cache_control?: unknown }>).at(-1)?.cache_control, { type: 'ephemeral' });
    assert.deepEqual(
      (sent.messages as Array<{ content: Array<{ cache_control?: unknown }> }>).at(-1)?.content.at(-1)?.cache_control,
      { type: 'ephemeral' },
    );
    assert.equal((sent.messages as Array<{ role: string }>)[0]?.role, 'user');
    const tools = sent.tools as Array<{ name: string; type?: string }>;
    declared(tools.map((t) => t.name));
    assert.equal(
      tools.some((t) => t.type === 'web_search_20250305' && t.name === 'web_search'),
      searches,
      "web search as Anthropic's own tool",
    );
    if (codex.parallel_tool_calls === false)
      assert.deepEqual(sent.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    for (const field of ['prompt_cache_key', 'client_metadata', 'verbosity', 'service_tier'])
      assert.equal(sent[field], undefined, field);
  } else {
    assert.ok(
      JSON.stringify(sent.systemInstruction).includes(JSON.stringify(instructions).slice(1, -1)),
      'Codex instructions in systemInstruction',
    );
    const tools = sent.tools as Array<{ functionDeclarations?: Array<{ name: string }>; googleSearch?: Item }>;
    declared(tools[0]?.functionDeclarations?.map((d) => d.name) ?? []);
    assert.equal(
      tools.some((t) => t.googleSearch !== undefined),
      searches,
      'web search as Google Search grounding',
    );
  }
}

/** What the upstream got on the second turn: the call under its chat name, then its result, in the upstream's own shapes. */
function checkSecondTurn(
  path: PathName,
  sent: Item,
  expected: { callId: string; chatName: string; args: Item; output: string },
): void {
  if (path === 'chat') {
    const messages = sent.messages as Array<{
      role: string;
      tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
      tool_call_id?: string;
      content?: unknown;
    }>;
    const turn = messages.find((m) => m.tool_calls !== undefined);
    assert.deepEqual(
      turn?.tool_calls?.map((c) => ({
        id: c.id,
        name: c.function.name,
        args: JSON.parse(c.function.arguments) as Item,
      })),
      [{ id: expected.callId, name: expected.chatName, args: expected.args }],
    );
    assert.deepEqual(messages.at(-1), { role: 'tool', tool_call_id: expected.callId, content: expected.output });
  } else if (path === 'anthropic') {
    const blocks = (sent.messages as Array<{ content: Item[] }>).flatMap((m) => m.content);
    assert.deepEqual(
      blocks.find((b) => b.type === 'tool_use'),
      { type: 'tool_use', id: expected.callId, name: expected.chatName, input: expected.args },
    );
    // The last turn is the prompt-cache breakpoint (prompt_cache: auto): the next call reads the conversation to here.
    assert.deepEqual(blocks.at(-1), {
      type: 'tool_result',
      tool_use_id: expected.callId,
      content: expected.output,
      cache_control: { type: 'ephemeral' },
    });
  } else {
    const parts = (sent.contents as Array<{ parts: Item[] }>).flatMap((c) => c.parts);
    assert.deepEqual(parts.find((p) => p.functionCall)?.functionCall, { name: expected.chatName, args: expected.args });
    assert.deepEqual(parts.at(-1), {
      functionResponse: { name: expected.chatName, response: { content: expected.output } },
    });
  }
}
